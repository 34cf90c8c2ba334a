"""Adapt to every unseen app with the default config and print one table.

    python benchmarks/adapt.py                 # all five unseen apps, default config
    python benchmarks/adapt.py --apps com.example.todo --out runs/bench-adapt
    python benchmarks/adapt.py --config variant.yaml --jobs 2 --threads 1   # a variant, two apps at a time
    python benchmarks/adapt.py --seeds 0,1 --jobs 2                         # every app at two seeds

Per app (and seed): base and adapted ground-truth success on fresh eval instances (never adapted
on), the gain with its 95 % interval (instances resampled by template, coadapt.stats),
teacher-forced step accuracy along the oracle's paths (coadapt.grounding), the verifier's
precision on accepted positives (measured after the fact by replay), adaptation wall-clock, env
steps and peak RSS; then the mean, its gain's interval resampling templates within each run. That
interval covers which eval instances were drawn; the spread between seeds (`--seeds`, each seed
draws other adapt and eval instances and samples) is the adaptation's own, and is often wider.
Results also go to <out>/summary.json. Each run has its own process (peak RSS is per run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coadapt.apps import UNSEEN_APPS
from coadapt.stats import mean_interval


def adapt_app(app: str, seed: int | None, args: argparse.Namespace) -> dict | None:
    """Adapt one app at one seed in its own process (its log in the output folder); its report,
    or None where the run failed. Seed None: the config's."""
    name = app.split(".")[-1] + ("" if seed is None else f"-s{seed}")
    folder, log = args.out / name, args.out / f"{name}.log"
    cmd = [sys.executable, "-m", "coadapt.cli", "adapt", "--app", app, "--out", str(folder),
           "--threads", str(args.threads)] + ([] if seed is None else ["--seed", str(seed)]) \
        + (["--ceiling"] if args.ceiling else []) \
        + (["--config", str(args.config)] if args.config else [])
    with log.open("w") as fh:
        code = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
    report = folder / "report.json"
    if code != 0 or not report.is_file():
        print(f"{app}: failed (exit {code}); the end of {log}:\n{log.read_text()[-2000:]}", file=sys.stderr)
        return None
    r = json.loads(report.read_text())
    print(f"{name}: base {r['base']['success_rate']:.3f} adapted {r['adapted']['success_rate']:.3f}", flush=True)
    return {**r, "seed": seed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(sorted(UNSEEN_APPS)), help="comma-separated packages")
    ap.add_argument("--out", type=Path, default=Path("runs") / f"bench-adapt-{time.strftime('%Y%m%d-%H%M%S')}")
    ap.add_argument("--threads", type=int, default=2, help="torch threads per app run")
    ap.add_argument("--ceiling", action="store_true", help="also the oracle-imitation ceiling per app (reference only)")
    ap.add_argument("--config", type=Path, help="root config for every app (a variant: e.g. `adapt: {proposals: 0}`)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="runs side by side (they share the cores, so wall-clock and rounds reached change)")
    ap.add_argument("--seeds", help="comma-separated run seeds (adapt.seed), each app run at each; default: the config's")
    args = ap.parse_args()
    try:
        seeds = [None] if args.seeds is None else [int(x) for x in args.seeds.split(",")]
    except ValueError:
        ap.error(f"--seeds {args.seeds}: expected comma-separated integers, e.g. 0,1")
    if args.config is not None and not args.config.is_file():
        ap.error(f"--config {args.config}: no such file")
    args.out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        runs = [(app, seed) for seed in seeds for app in args.apps.split(",")]
        rows = [r for r in pool.map(lambda run: adapt_app(*run, args), runs) if r is not None]
    table = Table(title=f"coadapt adapt, {args.config or 'default config'}, {len(rows)} runs")
    def steps(r: dict, which: str) -> str:
        g = (r.get(which) or {}).get("grounding") or {}
        return "-" if g.get("accuracy") is None else f"{g['accuracy']:.2f}"

    def ends(r: dict, which: str) -> str:
        d = r[which].get("declared") or {}
        return "/".join(str(d.get(k, 0)) for k in ("done", "infeasible", "step_limit"))

    def ci(c: dict | None) -> str:
        return "-" if not c or "ci95" not in c else f"[{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]"

    for col in ("app", "base", "adapted", "gain", "gain 95% CI", "ceiling", "step acc.",
                "ended done/inf./limit", "verifier precision",
                "accepted +", "adapt s", "env steps", "peak RSS MB"):
        table.add_column(col, justify="left" if col == "app" else "right", no_wrap=col in ("app", "gain 95% CI", "step acc.", "ended done/inf./limit"))
    for r in rows:
        v = r["verifier"]
        name = r["app"].removeprefix("com.example.") + ("" if r["seed"] is None else f" s{r['seed']}")
        table.add_row(name, f"{r['base']['success_rate']:.3f}", f"{r['adapted']['success_rate']:.3f}",
                      f"{r['gain']:+.3f}", ci((r.get("comparison") or {}).get("adapted")),
                      f"{r['ceiling']['success_rate']:.3f}" if "ceiling" in r else "-",
                      f"{steps(r, 'base')} → {steps(r, 'adapted')}", f"{ends(r, 'base')} → {ends(r, 'adapted')}",
                      "-" if v["precision"] is None else f"{v['precision']:.2f}",
                      str(v["accepted_positive"]), f"{r['adapt_wall_clock_s']:.0f}", str(r["env_steps"]),
                      f"{r['peak_rss_mb']:.0f}")
    if rows:
        mean = lambda k: sum(k(r) for r in rows) / len(rows)  # noqa: E731
        both = mean_interval([(r.get("comparison") or {}).get("adapted") or {} for r in rows])
        table.add_section()
        table.add_row("mean", f"{mean(lambda r: r['base']['success_rate']):.3f}",
                      f"{mean(lambda r: r['adapted']['success_rate']):.3f}", f"{mean(lambda r: r['gain']):+.3f}",
                      ci({"ci95": both} if both else None),
                      f"{mean(lambda r: r['ceiling']['success_rate']):.3f}" if all("ceiling" in r for r in rows) else "-",
                      "", "", "", "", f"{mean(lambda r: r['adapt_wall_clock_s']):.0f}", f"{mean(lambda r: r['env_steps']):.0f}",
                      f"{max(r['peak_rss_mb'] for r in rows):.0f}")
    Console(width=max(170, Console().width)).print(table)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
