"""Policy speed: actions per second at batch 1 and 8, a training step, and peak memory.

    python benchmarks/policy_step.py [--model PATH|fresh] [--steps 5] [--max-new-tokens 16] [--json out.json]

Without --model it measures the bundled tiny VLM (the default policy), with its decoding
constraints. `--model fresh` builds a fresh tiny VLM (random weights, default TinyVLMConfig) in a
temporary folder and loads it back through the public loading path; a random model never writes
the end token, so every answer runs to --max-new-tokens: 16 is about the length of a real action
(`type "milk" into "Title"` is ~9 tokens plus the end token).
Observations are Notes screens of a simulated phone (list with ten notes, editor).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from coadapt.android_env.observation import Observation
from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.policy.agent import BUNDLED_MODEL
from coadapt.policy.model import VLMPolicy
from coadapt.policy.prompt import PolicyInput
from coadapt.policy.tiny import build_tiny_policy, count_parameters

NOTES = "com.example.notes"


def screens() -> list[Observation]:
    d = SimDevice(make_apps([NOTES]))
    d.write_app_state(NOTES, {"notes": [{"id": i, "title": f"Shopping list {i}", "body": "milk, eggs, bread"}
                                        for i in range(1, 11)]})
    d.launch(NOTES)
    listing = Observation.build(d.screenshot(), d.ui_tree(), d.current_package(), 0)
    fab = next(e for e in listing.elements if e.content_desc == "New note")
    d.tap(*fab.bounds.center)
    editor = Observation.build(d.screenshot(), d.ui_tree(), d.current_package(), 1)
    return [listing, editor]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="model folder, hub id, or 'fresh' (default: the bundled tiny VLM)")
    ap.add_argument("--steps", type=int, default=5, help="timed repetitions per measurement")
    ap.add_argument("--max-new-tokens", type=int, default=16, help="answer length cap, in tokens")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    obs = screens()
    corpus = ["add a note titled milk"] + [n for o in obs for e in o.elements for n in (e.text, e.content_desc, e.hint) if n]

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        if args.model == "fresh":
            build_tiny_policy(corpus).save(tmp)
            path, label = tmp, "fresh tiny VLM"
        else:
            path, label = args.model or BUNDLED_MODEL, args.model or "bundled tiny VLM"
        policy = VLMPolicy.load(path)
        load_s = time.perf_counter() - t0
    policy.config = replace(policy.config, max_new_tokens=args.max_new_tokens)
    rss_after_load = peak_rss_mb()

    rows = []
    for batch in (1, 8):
        inputs = [PolicyInput(obs[i % 2], "add a note titled milk", ('open_app "Notes"',)) for i in range(batch)]
        policy.generate(inputs)  # warm-up
        times = []
        for _ in range(args.steps):
            t = time.perf_counter()
            policy.generate(inputs)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        rows.append({"measure": f"act, batch {batch}", "median_s": med, "actions_per_s": batch / med})

    inputs = [PolicyInput(obs[i % 2], "add a note titled milk") for i in range(8)]
    targets = ['tap "New note"', 'type "milk" into "Title"'] * 4
    policy.model.train()
    policy.sft_loss(inputs, targets).backward()  # warm-up
    times = []
    for _ in range(args.steps):
        t = time.perf_counter()
        policy.sft_loss(inputs, targets).backward()
        times.append(time.perf_counter() - t)
    policy.model.zero_grad(set_to_none=True)
    med = statistics.median(times)
    rows.append({"measure": "train fwd+bwd, batch 8", "median_s": med, "actions_per_s": 8 / med})

    t = time.perf_counter()
    encoded = policy.encode(inputs)
    encode_s = (time.perf_counter() - t) / 8
    info = {
        "model": label, "parameters": count_parameters(policy.model),
        "tokens_per_prompt": int(encoded["attention_mask"].sum(1).float().mean()),
        "image_tokens": int(encoded["mm_token_type_ids"][0].sum()), "load_s": load_s,
        "encode_ms_per_sample": encode_s * 1000, "max_new_tokens": args.max_new_tokens,
        "torch_threads": torch.get_num_threads(), "peak_rss_mb_after_load": rss_after_load,
        "peak_rss_mb": peak_rss_mb(), "rows": rows,
    }

    table = Table(title=f"policy step — {info['model']}, {info['parameters'] / 1e6:.2f} M params, "
                        f"{info['tokens_per_prompt']} tokens/prompt ({info['image_tokens']} image)")
    table.add_column("measure")
    table.add_column("median s", justify="right")
    table.add_column("actions/s", justify="right")
    for r in rows:
        table.add_row(r["measure"], f"{r['median_s']:.3f}", f"{r['actions_per_s']:.1f}")
    console = Console()
    console.print(table)
    console.print(f"load {load_s:.2f} s · encode {info['encode_ms_per_sample']:.1f} ms/sample · "
                  f"{info['torch_threads']} threads · peak RSS {info['peak_rss_mb']:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(info, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
