"""`coadapt eval --model PATH [--adapter DIR]`: the same loading path as the bundled model."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from coadapt.policy.tiny import build_tiny_policy  # noqa: E402


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory, one_thread):
    policy = build_tiny_policy(["Create a note titled milk", 'tap "New note"', 'type "milk" into "Title"', "done()"])
    model = tmp_path_factory.mktemp("model")
    policy.save(model)
    policy.add_adapter()
    torch.manual_seed(0)
    with torch.no_grad():  # a fresh LoRA adapter is zero (B = 0) and would change nothing
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn_like(p) * 0.5)
    adapter = tmp_path_factory.mktemp("adapter")
    policy.save_adapter(adapter)
    return model, adapter


def _eval(model, out, adapter=None) -> tuple[dict, list[str]]:
    args = [sys.executable, "-m", "coadapt.cli", "eval", "--suite", "smoke", "--model", str(model), "--workers", "1",
            "--threads", "1", "--out", str(out), "--screens", "none"]
    if adapter is not None:
        args += ["--adapter", str(adapter)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    con = sqlite3.connect(out / "run.db")
    try:
        raw = [r[0] for r in con.execute("SELECT raw_output FROM steps ORDER BY episode_id, step")]
    finally:
        con.close()
    return json.loads((out / "report.json").read_text()), raw


@pytest.mark.slow
def test_eval_with_a_model_folder_and_an_adapter(model_dirs, tmp_path):
    model, adapter = model_dirs
    report, raw = _eval(model, tmp_path / "base")
    assert report["n_episodes"] == 12 and 0.0 <= report["success_rate"] <= 1.0
    assert raw and all(r is not None for r in raw), "the model's raw output is stored with every step"
    adapted, raw_adapted = _eval(model, tmp_path / "adapted", adapter)
    assert adapted["n_episodes"] == 12 and adapted["policy"].endswith("+" + adapter.name)
    assert adapted["adapter"] == str(adapter) and adapted["model"] == str(model) and report["adapter"] is None
    assert raw_adapted != raw, "the adapter was loaded and changes what the model writes"
