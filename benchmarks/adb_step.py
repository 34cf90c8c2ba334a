"""ADB path speed: observation and tap latency through a real adb server, against the in-process sim.

    python benchmarks/adb_step.py [--n 40] [--json out.json]

A private adb server (the binary bundled with adbutils, on a free port) talks to a virtual
device running in its own process, so client and device do not share a GIL. Observations are
screenshot (raw `exec:screencap`, the default; PNG is timed alone too) + UI tree, once with the tree from uiautomator2's JSON-RPC and
once from `uiautomator dump`; taps go through uiautomator2 `click` or `input tap`. Each
observation starts from a changed screen (the virtual clock is nudged, untimed, before it), as
in sim_step.py. The screen is the Notes list with ten notes. The last column divides each
median by the in-process SimDevice median of the same operation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.table import Table

from coadapt.android_env.adb import AdbConfig, AdbDevice
from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.emulator import manager
from coadapt.emulator.adb_server import AdbServer, free_port

NOTES = "com.example.notes"
NOTES_STATE = {"notes": [{"id": i, "title": f"Shopping list {i}", "body": "milk, eggs, bread and coffee"} for i in range(1, 11)]}


def timed(fn: Callable[[], object], n: int, before: Callable[[], object] | None = None) -> list[float]:
    """Milliseconds of each of `n` calls of `fn` (after one untimed warm-up call); `before`
    runs untimed ahead of each."""
    if before is not None:
        before()
    fn()
    out = []
    for _ in range(n):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def summary(ms: list[float]) -> tuple[float, float]:
    return statistics.median(ms), statistics.quantiles(ms, n=20)[18] if len(ms) >= 2 else ms[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="repetitions per measurement")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()

    # ------------------------------------------------------------ in-process baseline
    sim = SimDevice(make_apps([NOTES]))
    sim.write_app_state(NOTES, NOTES_STATE)
    sim.launch(NOTES)
    sim.screenshot(), sim.ui_tree()
    nudge_sim = lambda: sim.wait(0.001)  # noqa: E731 - invalidates the frame, as any input does
    base = {
        "observation": timed(lambda: (sim.screenshot(), sim.ui_tree()), args.n, nudge_sim),
        "tap": timed(lambda: sim.tap(360, 30), args.n),
    }

    # ------------------------------------------------------------ through adb
    rows: list[tuple[str, str, list[float]]] = []
    with AdbServer() as server, tempfile.TemporaryDirectory() as tmp:
        rec = manager.start_virtual_devices(1, runtime=Path(tmp), adb_port=server.port, apps=(NOTES,), ports=[free_port()])[0]
        try:
            server.wait_for(rec.serial)
            for backend, label in (("u2", "uiautomator2"), ("uiautomator", "uiautomator dump + input")):
                dev = AdbDevice(rec.serial, AdbConfig(adb_port=server.port, ui_backend=backend))  # type: ignore[arg-type]
                dev.write_app_state(NOTES, NOTES_STATE)
                dev.launch(NOTES)
                dev.screenshot(), dev.ui_tree()  # connect uiautomator2, warm caches
                nudge = lambda d=dev: d.wait(0.001)  # noqa: E731 - advances the virtual clock
                rows.append((f"observation via {label}", "observation",
                             timed(lambda d=dev: (d.screenshot(), d.ui_tree()), args.n, nudge)))
                rows.append((f"  tree alone via {label}", "",
                             timed(lambda d=dev: d.ui_tree(), args.n, nudge)))
                rows.append((f"tap via {label}", "tap", timed(lambda d=dev: d.tap(360, 30), args.n)))
                dev.close()
            for i, fmt in enumerate(("raw", "png")):
                dev = AdbDevice(rec.serial, AdbConfig(adb_port=server.port, ui_backend="uiautomator", screencap=fmt))
                rows.insert(i, (f"screenshot, {fmt} screencap", "", timed(dev.screenshot, args.n, lambda d=dev: d.wait(0.001))))
            rows.insert(2, ("shell round trip (echo)", "", timed(lambda: dev.shell("echo hi"), args.n)))
        finally:
            manager.stop_virtual_devices(runtime=Path(tmp), adb_port=server.port)

    table = Table(title=f"ADB step latency through a real adb server (virtual device, n={args.n})")
    for col in ("measurement", "median ms", "p95 ms", "x in-process sim"):
        table.add_column(col, justify="left" if col == "measurement" else "right")
    report = {}
    for name, kind in (("in-process SimDevice observation", "observation"), ("in-process SimDevice tap", "tap")):
        med, p95 = summary(base[kind])
        table.add_row(name, f"{med:.1f}", f"{p95:.1f}", "1.0")
        report[name] = {"median_ms": med, "p95_ms": p95}
    for name, kind, ms in rows:
        med, p95 = summary(ms)
        ratio = f"{med / statistics.median(base[kind]):.1f}" if kind else ""
        table.add_row(name, f"{med:.1f}", f"{p95:.1f}", ratio)
        report[name.strip()] = {"median_ms": med, "p95_ms": p95}
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps({"n": args.n, "results": report}, indent=2))


if __name__ == "__main__":
    main()
