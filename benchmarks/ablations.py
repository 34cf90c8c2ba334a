"""Ablations beside finished default runs: each variant adapted from scratch, paired with its run.

    python benchmarks/adapt.py --seeds 2 --jobs 2 --threads 1 --out runs/bench-s2
    python benchmarks/ablations.py runs/bench-s2 --variants no_gate,no_turn_credit --jobs 2 --threads 1

For every finished default run in the folder (each subfolder with a report.json, as
benchmarks/adapt.py writes them), each variant (a name in coadapt.adaptation.ABLATIONS) adapts from
scratch with that run's own config and the one change, in <run>/ablations/<variant>, and is
evaluated on the run's eval instances (its base is the run's). Per run and variant: the default's
adapted success, the variant's, and the default's gain over the variant paired on the same
instances (instances won and lost, 95 % template-cluster interval, coadapt.stats); then per variant
the mean over runs with its interval. A gain > 0 means the default beats the variant. The budget is
wall-clock, so run the variants side by side as the defaults were (the same --jobs and --threads).
A variant folder that already holds a report is read, not run again; a killed one resumes.
Results also go to <folder>/ablations.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coadapt.adaptation import ABLATIONS, ablation_config, ablation_folder, default_gain, run_adapt_job
from coadapt.config import CoadaptConfig, from_mapping
from coadapt.runs import RunStore
from coadapt.stats import mean_interval


def variant_config(run: Path, variant: str, threads: int | None) -> CoadaptConfig:
    """The default run's own config (config.json) with the variant's one change."""
    cfg = from_mapping(CoadaptConfig, json.loads((run / "config.json").read_text())["config"], str(run))
    if threads is not None:
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, threads=threads))
    return ablation_config(cfg, variant)


def run_variant(run: Path, variant: str, threads: int | None) -> dict | None:
    """Adapt one variant beside `run` in its own process (peak RSS per run); its report, or None."""
    folder = ablation_folder(run, variant)
    report = folder / "report.json"
    if not report.is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        log = folder.parent / f"{variant}.log"
        cmd = [sys.executable, __file__, "--one", str(run), variant]
        cmd += [] if threads is None else ["--threads", str(threads)]
        with log.open("w") as fh:
            code = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
        if code != 0 or not report.is_file():
            print(f"{run.name} {variant}: failed (exit {code}); the end of {log}:\n{log.read_text()[-2000:]}",
                  file=sys.stderr)
            return None
    return json.loads(report.read_text())


def pair(run: Path, variant: str, seed: int) -> dict:
    """The default's adapted eval against the variant's, on the instances both evaluated."""
    with RunStore(run, readonly=True) as default:
        return default_gain(default, ablation_folder(run, variant), seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, nargs="?", help="a benchmarks/adapt.py output folder (or one run folder)")
    ap.add_argument("--variants", default="no_gate,no_turn_credit", help=f"comma-separated, of {', '.join(ABLATIONS)}")
    ap.add_argument("--threads", type=int, help="torch threads per run (default: each run's own)")
    ap.add_argument("--jobs", type=int, default=1, help="variants side by side")
    ap.add_argument("--one", nargs=2, metavar=("RUN", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        run, variant = Path(args.one[0]), args.one[1]
        cfg = variant_config(run, variant, args.threads)
        run_adapt_job(json.loads((run / "report.json").read_text())["app"], cfg, ablation_folder(run, variant),
                      base=False)
        return
    if args.folder is None:
        ap.error("the folder of finished runs is required")
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in ABLATIONS]
    if unknown:
        ap.error(f"unknown variant(s) {unknown}; known: {', '.join(ABLATIONS)}")
    runs = sorted(p.parent for p in [args.folder / "report.json", *args.folder.glob("*/report.json")]
                  if p.is_file() and (p.parent / "config.json").is_file() and "adapted" in json.loads(p.read_text()))
    if not runs:
        ap.error(f"{args.folder}: no finished adapt run (a folder with report.json and config.json)")
    jobs = [(run, v) for run in runs for v in variants]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        reports = list(pool.map(lambda job: run_variant(*job, args.threads), jobs))
    rows = []
    for (run, variant), rep in zip(jobs, reports):
        if rep is None:
            continue
        default = json.loads((run / "report.json").read_text())
        seed = int(default["config"]["seed"])
        rows.append({"run": run.name, "variant": variant, "default": default["adapted"]["success_rate"],
                     "adapted": rep["adapted"]["success_rate"], "adapt_wall_clock_s": rep["adapt_wall_clock_s"],
                     "verifier_precision": rep["verifier"]["precision"], "default_gain": pair(run, variant, seed)})
    table = Table(title=f"ablations beside {args.folder} ({len(rows)} runs)")
    for col in ("run", "variant", "default", "variant adapted", "default - variant", "95% CI", "won/lost",
                "verifier precision", "adapt s"):
        table.add_column(col, justify="left" if col in ("run", "variant") else "right", no_wrap=True)

    def ci(lo_hi: list[float] | None) -> str:
        return "-" if not lo_hi else f"[{lo_hi[0]:+.3f}, {lo_hi[1]:+.3f}]"

    for r in rows:
        c = r["default_gain"]
        table.add_row(r["run"], r["variant"], f"{r['default']:.3f}", f"{r['adapted']:.3f}", f"{c.get('gain', 0):+.3f}",
                      ci(c.get("ci95")), f"{c['wins']}/{c['losses']}",
                      "-" if r["verifier_precision"] is None else f"{r['verifier_precision']:.2f}",
                      f"{r['adapt_wall_clock_s']:.0f}")
    for variant in variants:
        mine = [r for r in rows if r["variant"] == variant]
        if not mine:
            continue
        gains = [r["default_gain"] for r in mine]
        table.add_section()
        table.add_row("mean", variant, f"{sum(r['default'] for r in mine) / len(mine):.3f}",
                      f"{sum(r['adapted'] for r in mine) / len(mine):.3f}",
                      f"{sum(g.get('gain', 0) for g in gains) / len(gains):+.3f}", ci(mean_interval(gains)),
                      f"{sum(g['wins'] for g in gains)}/{sum(g['losses'] for g in gains)}", "", "")
    Console(width=max(150, Console().width)).print(table)
    (args.folder / "ablations.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
