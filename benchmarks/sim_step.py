"""Simulated phone speed: one observation (screenshot + UI tree) and one step, on one core.

    python benchmarks/sim_step.py [--n 300]

Each timing starts from a changed screen (the previous frame is invalid), so nothing is served
from the frame cache; text glyphs stay cached across frames, as a real renderer's do.
Targets (issue: foundation): observation median <= 10 ms, tree alone <= 2 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from rich.console import Console
from rich.table import Table

from coadapt.android_env.observation import Observation
from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps

NOTES = "com.example.notes"


def typical_device() -> SimDevice:
    """Notes list with ten notes: toolbar, list rows with two lines each, a FAB."""
    d = SimDevice(make_apps())
    d.write_app_state(NOTES, {"notes": [{"id": i, "title": f"Shopping list {i}", "body": "milk, eggs, bread and coffee"}
                                        for i in range(1, 11)]})
    d.launch(NOTES)
    return d


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="repetitions per measurement")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    d = typical_device()
    d.screenshot(), d.ui_tree()  # warm the glyph cache

    def observe_fresh():
        d.wait(0.001)  # invalidates the frame, as any input does
        Observation.build(d.screenshot(), d.ui_tree(), d.current_package(), 0)

    def tree_fresh():
        d.wait(0.001)
        d.ui_tree()

    def screenshot_fresh():
        d.wait(0.001)
        d.screenshot()

    def observe_cached():
        Observation.build(d.screenshot(), d.ui_tree(), d.current_package(), 0)

    toggle = [0]

    def step():
        # Scroll the list down and back: input dispatch, re-layout, render, dump.
        toggle[0] ^= 1
        y1, y2 = (1200, 600) if toggle[0] else (600, 1200)
        d.swipe(360, y1, 360, y2)
        Observation.build(d.screenshot(), d.ui_tree(), d.current_package(), 0)

    def dump_xml():
        d.wait(0.001)
        d.dump_xml("u2")

    rows = [
        ("observation (screenshot + tree)", timed(observe_fresh, args.n), 10.0),
        ("tree alone", timed(tree_fresh, args.n), 2.0),
        ("screenshot alone", timed(screenshot_fresh, args.n), None),
        ("step (swipe + observation)", timed(step, args.n), None),
        ("uiautomator XML dump", timed(dump_xml, args.n), None),
        ("observation, unchanged screen (cached)", timed(observe_cached, args.n), None),
    ]
    tree = d.ui_tree()
    table = Table(title=f"SimDevice, {d.width}x{d.height} px, {len(tree)} nodes, 1 core, n={args.n}")
    for col in ("measurement", "median ms", "p95 ms", "target ms", "ok"):
        table.add_column(col, justify="right" if col != "measurement" else "left")
    for name, ms, target in rows:
        med = statistics.median(ms)
        p95 = statistics.quantiles(ms, n=20)[18]
        ok = "" if target is None else ("yes" if med <= target else "NO")
        table.add_row(name, f"{med:.2f}", f"{p95:.2f}", "" if target is None else f"{target:.0f}", ok)
    Console().print(table)


if __name__ == "__main__":
    main()
