"""Rollout throughput against the number of Ray device-host actors, next to the in-process pool.

    python benchmarks/scale.py [--hosts 1,2,4] [--policy both|oracle|default] [--k 2] [--json out.json]

Plays the smoke suite (12 instances, `--k` attempts each) with ground-truth scoring into a scratch
run folder, as `coadapt eval` does: first in-process over a pool of N simulated phones (one worker
thread each), then on a local Ray with N device-host actors of one phone each (and, for the model,
one policy server batching every host's requests). The oracle measures the device side (episode
loop, scoring, shipping episodes to the driver, storing them); the bundled model adds generation.
Set-up (starting Ray, the hosts, the policy server) and a warm-up run are not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from coadapt.config import DeviceSettings, ModelSettings
from coadapt.evaluation import evaluate_cards, suite_tasks
from coadapt.runs import RunStore
from coadapt.tasks.suite import Suite
from coadapt.wiring import build_policy


def play(policy, cards, templates, k: int, folder: Path, *, pool=None, hosts=None) -> dict[str, Any]:
    """One timed evaluation; episodes/s and actions/s over its wall time."""
    store = RunStore(folder)
    t0 = time.perf_counter()
    report = evaluate_cards(cards, templates, policy, pool, store, k=k, hosts=hosts)
    wall = time.perf_counter() - t0
    store.close()
    return {"episodes": report["n_episodes"], "actions": report["env_steps"], "wall_s": round(wall, 2),
            "episodes_per_s": round(report["n_episodes"] / wall, 3), "actions_per_s": round(report["env_steps"] / wall, 2),
            "infra_errors": report["infra_errors"], "success_rate": round(report["success_rate"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="1,2,4", help="device-host counts to measure (and pool sizes in-process)")
    ap.add_argument("--policy", default="both", choices=("both", "oracle", "default"))
    ap.add_argument("--k", type=int, default=2, help="attempts per smoke instance (12 instances)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the model (driver or policy server)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    import ray

    from coadapt.devices import sim_pool
    from coadapt.scale import RaySettings, ray_hosts
    from coadapt.scale.cluster import DEVICE_RESOURCE

    counts = [int(x) for x in args.hosts.split(",")]
    suite = Suite.load("smoke")
    cards, templates = suite_tasks(suite)
    policies = ["oracle", "default"] if args.policy == "both" else [args.policy]
    rows: list[dict[str, Any]] = []
    console = Console(width=110)  # the full table when piped to a file
    ray.init(num_cpus=os.cpu_count() or 1, resources={DEVICE_RESOURCE: max(counts)}, include_dashboard=False,
             logging_level="WARNING", log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        for name in policies:
            model = ModelSettings(model=name, threads=args.threads)
            policy = build_policy(model, templates)
            for n in counts:
                pool = sim_pool(n)
                play(policy, cards[:2], templates, 1, Path(tmp) / f"warm-{name}-{n}", pool=pool)
                row = play(policy, cards, templates, args.k, Path(tmp) / f"local-{name}-{n}", pool=pool)
                rows.append({"policy": name, "setup": "in-process", "devices": n, **row})
                console.print(f"{name} {rows[-1]['setup']} x{n}: {rows[-1]['actions_per_s']} actions/s")
            for n in counts:
                with ray_hosts(RaySettings(), DeviceSettings(workers=n), model) as hosts:
                    play(policy, cards[:2], templates, 1, Path(tmp) / f"rwarm-{name}-{n}", hosts=hosts)
                    row = play(policy, cards, templates, args.k, Path(tmp) / f"ray-{name}-{n}", hosts=hosts)
                rows.append({"policy": name, "setup": "ray hosts", "devices": n, **row})
                console.print(f"{name} {rows[-1]['setup']} x{n}: {rows[-1]['actions_per_s']} actions/s")
    ray.shutdown()
    table = Table(title=f"smoke suite x{args.k}: rollout throughput on {os.cpu_count()} CPU cores")
    for col in ("policy", "setup", "devices / hosts", "episodes", "actions", "wall s", "episodes/s", "actions/s"):
        table.add_column(col, justify="left" if col in ("policy", "setup") else "right", no_wrap=True)
    for r in rows:
        table.add_row(r["policy"], r["setup"], str(r["devices"]), str(r["episodes"]), str(r["actions"]),
                      f"{r['wall_s']:.1f}", f"{r['episodes_per_s']:.2f}", f"{r['actions_per_s']:.1f}")
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
