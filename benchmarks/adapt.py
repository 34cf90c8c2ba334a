"""Adapt to every unseen app with the default config and print one table.

    python benchmarks/adapt.py                 # all five unseen apps, default config
    python benchmarks/adapt.py --apps com.example.todo --out runs/bench-adapt

Per app: base and adapted ground-truth success on fresh eval instances (never adapted on), the
gain, teacher-forced step accuracy along the oracle's paths (coadapt.grounding), the verifier's
precision on accepted positives (measured after the fact by replay), adaptation wall-clock, env
steps and peak RSS; then the mean. Results also go to
<out>/summary.json. Each app runs in its own process (peak RSS is per app).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coadapt.apps import UNSEEN_APPS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(sorted(UNSEEN_APPS)), help="comma-separated packages")
    ap.add_argument("--out", type=Path, default=Path("runs") / f"bench-adapt-{time.strftime('%Y%m%d-%H%M%S')}")
    ap.add_argument("--threads", type=int, default=2, help="torch threads per app run")
    ap.add_argument("--ceiling", action="store_true", help="also the oracle-imitation ceiling per app (reference only)")
    args = ap.parse_args()
    rows = []
    for app in args.apps.split(","):
        folder = args.out / app.split(".")[-1]
        cmd = [sys.executable, "-m", "coadapt.cli", "adapt", "--app", app, "--out", str(folder),
               "--threads", str(args.threads)] + (["--ceiling"] if args.ceiling else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            continue
        rows.append(json.loads((folder / "report.json").read_text()))
        print(f"{app}: base {rows[-1]['base']['success_rate']:.3f} adapted {rows[-1]['adapted']['success_rate']:.3f}",
              flush=True)
    table = Table(title="coadapt adapt, default config, unseen apps")
    def steps(r: dict, which: str) -> str:
        g = (r.get(which) or {}).get("grounding") or {}
        return "-" if g.get("accuracy") is None else f"{g['accuracy']:.2f}"

    def ends(r: dict, which: str) -> str:
        d = r[which].get("declared") or {}
        return "/".join(str(d.get(k, 0)) for k in ("done", "infeasible", "step_limit"))

    for col in ("app", "base", "adapted", "gain", "ceiling", "step acc. base → adapted",
                "done/infeasible/limit base → adapted", "verifier precision",
                "accepted +", "adapt s", "env steps", "peak RSS MB"):
        table.add_column(col, justify="left" if col == "app" else "right")
    for r in rows:
        v = r["verifier"]
        table.add_row(r["app"].removeprefix("com.example."), f"{r['base']['success_rate']:.3f}", f"{r['adapted']['success_rate']:.3f}",
                      f"{r['gain']:+.3f}", f"{r['ceiling']['success_rate']:.3f}" if "ceiling" in r else "-",
                      f"{steps(r, 'base')} → {steps(r, 'adapted')}", f"{ends(r, 'base')} → {ends(r, 'adapted')}",
                      "-" if v["precision"] is None else f"{v['precision']:.2f}",
                      str(v["accepted_positive"]), f"{r['adapt_wall_clock_s']:.0f}", str(r["env_steps"]),
                      f"{r['peak_rss_mb']:.0f}")
    if rows:
        mean = lambda k: sum(k(r) for r in rows) / len(rows)  # noqa: E731
        table.add_section()
        table.add_row("mean", f"{mean(lambda r: r['base']['success_rate']):.3f}",
                      f"{mean(lambda r: r['adapted']['success_rate']):.3f}", f"{mean(lambda r: r['gain']):+.3f}",
                      f"{mean(lambda r: r['ceiling']['success_rate']):.3f}" if all("ceiling" in r for r in rows) else "-",
                      "", "", "", "", f"{mean(lambda r: r['adapt_wall_clock_s']):.0f}", f"{mean(lambda r: r['env_steps']):.0f}",
                      f"{max(r['peak_rss_mb'] for r in rows):.0f}")
    Console(width=max(120, Console().width)).print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
