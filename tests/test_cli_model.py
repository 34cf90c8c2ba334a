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
    adapter = tmp_path_factory.mktemp("adapter")
    policy.save_adapter(adapter)
    return model, adapter


@pytest.mark.slow
@pytest.mark.parametrize("with_adapter", [False, True])
def test_eval_with_a_model_folder(model_dirs, tmp_path, with_adapter):
    model, adapter = model_dirs
    out = tmp_path / "run"
    args = [sys.executable, "-m", "coadapt.cli", "eval", "--suite", "smoke", "--model", str(model), "--workers", "1",
            "--threads", "1", "--out", str(out), "--no-screenshots"]
    if with_adapter:
        args += ["--adapter", str(adapter)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["n_episodes"] == 12 and 0.0 <= report["success_rate"] <= 1.0
    con = sqlite3.connect(out / "run.db")
    try:
        raw = [r[0] for r in con.execute("SELECT raw_output FROM steps")]
    finally:
        con.close()
    assert raw and all(r is not None for r in raw), "the model's raw output is stored with every step"
