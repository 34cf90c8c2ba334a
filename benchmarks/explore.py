"""Exploration coverage: unique screens found within N actions by each explorer, per app.

    python benchmarks/explore.py                 # every app, 200 actions, seeds 0-2
    python benchmarks/explore.py --steps 100 --apps com.example.todo

Strategies on the same phone set-up and seeds: ours (greedy, unexplored event first with graph
walks), Monkey-like random (random points), random element events (DroidBot's random policy)
and DroidBot-style naive DFS. Screens are counted by the scroll-proof screen key of
coadapt.explore.screens, in the app only. Prints one table; --json writes the numbers too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coadapt.adaptation import explore_card
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.sim import SimDevice
from coadapt.apps import label_map, make_apps
from coadapt.explore.explorer import Explorer
from coadapt.tasks.registry import ALL_APPS

STRATEGIES = ("greedy", "random", "events", "dfs")


def coverage(app: str, strategy: str, steps: int, seed: int) -> dict[str, float]:
    env = AndroidEnv(SimDevice(make_apps()), label_map())
    return Explorer(env, explore_card(app, 0), strategy=strategy, seed=seed).run(steps).coverage()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(sorted(ALL_APPS)), help="comma-separated packages")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, averaged")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args()
    apps = [a for a in args.apps.split(",") if a]
    rows: dict[str, dict[str, float]] = {}
    t0 = time.monotonic()
    for app in apps:
        rows[app] = {s: statistics.mean(coverage(app, s, args.steps, seed)["screens"] for seed in range(args.seeds))
                     for s in STRATEGIES}
        print(f"{app}: " + ", ".join(f"{s} {v:.1f}" for s, v in rows[app].items()), file=sys.stderr, flush=True)
    table = Table(title=f"unique screens within {args.steps} actions (mean of {args.seeds} seeds)", width=110)
    table.add_column("app")
    for s in STRATEGIES:
        table.add_column({"greedy": "ours", "random": "Monkey-like", "events": "random events", "dfs": "DFS"}[s],
                         justify="right")
    table.add_column("ours / Monkey", justify="right")
    table.add_column("ours / DFS", justify="right")
    for app, r in rows.items():
        table.add_row(app.split(".")[-1], *(f"{r[s]:.1f}" for s in STRATEGIES), f"{r['greedy'] / r['random']:.2f}",
                      f"{r['greedy'] / r['dfs']:.2f}")
    mean = {s: statistics.mean(r[s] for r in rows.values()) for s in STRATEGIES}
    ratio_m = statistics.mean(r["greedy"] / r["random"] for r in rows.values())
    ratio_d = statistics.mean(r["greedy"] / r["dfs"] for r in rows.values())
    ratio_e = statistics.mean(r["greedy"] / r["events"] for r in rows.values())
    table.add_section()
    table.add_row("mean", *(f"{mean[s]:.1f}" for s in STRATEGIES), f"{ratio_m:.2f}", f"{ratio_d:.2f}")
    Console(width=110).print(table)
    print(f"ours / random events: {ratio_e:.2f} (mean of per-app ratios); {time.monotonic() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"steps": args.steps, "seeds": args.seeds, "screens": rows,
                                         "ours_over_monkey": ratio_m, "ours_over_dfs": ratio_d,
                                         "ours_over_events": ratio_e}, indent=1))


if __name__ == "__main__":
    main()
