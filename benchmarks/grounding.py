"""Step-level grounding: along the oracle's own path, how often does the policy choose the oracle's action?

    python benchmarks/grounding.py                               # every app, base policy
    python benchmarks/grounding.py --apps com.example.expenses --adapter runs/adapt-expenses-.../adapter

Episode success hides where a chain breaks: one wrong step sinks it. This replays each eval
instance's oracle solution (eval seed space, `--instances` per template) and, at every state on
that path, asks the greedy policy for its action given the oracle's history so far (teacher
forcing). A step counts when the policy writes exactly the oracle's action in the policy's own
format. Per app: accuracy overall, on the first step, and per action kind (tap, type, scroll,
done ...). Seen apps show what pretraining taught; unseen apps what an adapter has to teach.
Ground truth (the oracle) is used here, so this is a report-side measurement, never part of
adaptation. Prints one table; --json writes the numbers too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coadapt.adaptation import instances
from coadapt.android_env.sim import SimDevice
from coadapt.apps import UNSEEN_APPS, make_apps
from coadapt.config import ModelSettings
from coadapt.grounding import KINDS, step_grounding
from coadapt.tasks.registry import ALL_APPS
from coadapt.wiring import build_policy


def grounding(agents, app: str, per_template: int, seed: int) -> dict:
    """Teacher-forced accuracy of `agents`' greedy policy on `app`'s eval instances."""
    return {"app": app, **step_grounding(agents, SimDevice(make_apps()), instances(app, "eval", seed, per_template))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(ALL_APPS), help="comma-separated packages (default: all 12)")
    ap.add_argument("--model", default="default", help="default (the bundled tiny VLM) or a model folder")
    ap.add_argument("--adapter", default=None, help="a LoRA adapter folder (e.g. <adapt run>/adapter)")
    ap.add_argument("--instances", type=int, default=2, help="eval instances per template")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args()
    agents = build_policy(ModelSettings(model=args.model, adapter=args.adapter, threads=args.threads))
    rows = []
    t0 = time.perf_counter()
    for app in args.apps.split(","):
        rows.append(grounding(agents, app, args.instances, 0))
        print(f"{app}: {rows[-1]['accuracy']:.2f} of {rows[-1]['steps']} steps", file=sys.stderr, flush=True)
    table = Table(title=f"teacher-forced action accuracy on oracle paths ({args.model}"
                        f"{' + ' + args.adapter if args.adapter else ''}, {time.perf_counter() - t0:.0f} s)")
    for col in ("app", "seen", "steps", "accuracy", "first step", *KINDS):
        table.add_column(col, justify="left" if col == "app" else "right")
    for r in rows:
        table.add_row(r["app"].removeprefix("com.example."), "no" if r["app"] in UNSEEN_APPS else "yes", str(r["steps"]),
                      f"{r['accuracy']:.2f}", f"{r['first_step']:.2f}",
                      *[f"{r['by_kind'][k][0]}/{r['by_kind'][k][1]}" if k in r["by_kind"] else "-" for k in KINDS])
    Console(width=max(120, Console().width)).print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
