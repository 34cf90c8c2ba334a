"""Soak: an oracle eval over virtual devices for N minutes while their daemons are killed and frozen.

    python benchmarks/soak.py [--minutes 20] [--every 120] [--freeze 30] [--trace MINUTE] [--json out.json]

A private adb server (the binary bundled with adbutils, on a free port) serves two virtual
devices, each a detached daemon process started by coadapt.emulator.manager. The oracle policy
plays the smoke suite round after round (one run store, round r = the r-th pass) until the time
is up. Every `--every` seconds one daemon is hit, alternating fault and device: SIGKILL, or
SIGSTOP followed `--freeze` seconds later by SIGCONT (the pool usually restarts a frozen device
before then). Once a minute the driver's RSS (this process), each daemon's RSS and the episode
count are sampled. At the end every (phase, round, key, attempt) the rounds asked for is looked
up in the run store: missing ones are lost, ones finished more than once are duplicated.
`--trace` compares the driver's Python allocations between a minute and the end, which tells
growth of Python objects from growth of native memory (docs/reliability.md, "Soak").
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coadapt.android_env.adb import AdbConfig
from coadapt.devices import adb_pool
from coadapt.emulator import manager
from coadapt.emulator.adb_server import AdbServer, free_port
from coadapt.evaluation import evaluate_cards, suite_tasks
from coadapt.malloc import tune_glibc_malloc
from coadapt.policy.baselines import OraclePolicy
from coadapt.runs import RunStore
from coadapt.tasks.suite import Suite

PHASE = "eval"


def rss_mb(pid: int) -> float | None:
    """Resident set size of `pid` in MB (None if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@dataclass
class Sample:
    """One row of the RSS table."""

    minute: float
    driver_mb: float | None
    daemons: list[tuple[str, int, float | None]]
    """(serial, pid, RSS in MB) of each recorded daemon."""
    episodes: int
    faults: int


@dataclass
class Soak:
    """Shared state of the eval loop, the fault thread and the sampler."""

    runtime: Path
    store: RunStore
    t0: float = field(default_factory=time.monotonic)
    stop: threading.Event = field(default_factory=threading.Event)
    faults: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    baseline: tracemalloc.Snapshot | None = None
    """Python allocations at the trace minute (with --trace), compared with the end."""

    def minute(self) -> float:
        return (time.monotonic() - self.t0) / 60

    def finished(self) -> int:
        """Finished episodes so far, counted in SQL (loading every row would grow the driver)."""
        con = sqlite3.connect(f"file:{self.store.db_path}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute("SELECT COUNT(*) FROM episodes WHERE phase = ? AND status = 'finished'",
                               (PHASE,)).fetchone()[0]
        finally:
            con.close()

    def sample(self) -> Sample:
        recs = manager.read_records(self.runtime)
        s = Sample(self.minute(), rss_mb(os.getpid()), [(r.serial, r.pid, rss_mb(r.pid)) for r in recs],
                   self.finished(), len(self.faults))
        self.samples.append(s)
        daemons = ", ".join(f"{serial} pid {pid} {mb if mb is None else round(mb, 1)} MB" for serial, pid, mb in s.daemons)
        print(f"[{s.minute:5.1f} min] driver {s.driver_mb:.1f} MB; {daemons}; {s.episodes} episodes; "
              f"{s.faults} faults", flush=True)
        return s


def sampler(soak: Soak, every_s: float, trace_at_min: float | None) -> None:
    while not soak.stop.wait(every_s):
        soak.sample()
        if trace_at_min is not None and soak.baseline is None and soak.minute() >= trace_at_min:
            soak.baseline = tracemalloc.take_snapshot()


def faulter(soak: Soak, every_s: float, freeze_s: float) -> None:
    """Alternate SIGKILL and SIGSTOP/SIGCONT, and alternate the device, every `every_s` seconds."""
    n = 0
    while not soak.stop.wait(every_s):
        recs = manager.read_records(soak.runtime)
        if not recs:
            continue
        rec = recs[(n // 2) % len(recs)]  # kill and freeze each device in turn
        kind = "kill" if n % 2 == 0 else "freeze"
        n += 1
        try:
            if kind == "kill":
                os.kill(rec.pid, signal.SIGKILL)
            else:
                os.kill(rec.pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        soak.faults.append(f"{soak.minute():.1f} min {kind} {rec.serial} pid {rec.pid}")
        print(f"[{soak.minute():5.1f} min] {kind} {rec.serial} (pid {rec.pid})", flush=True)
        if kind == "freeze":
            soak.stop.wait(freeze_s)
            # The pool may have replaced the frozen daemon already; only wake one still recorded.
            if any(r.pid == rec.pid for r in manager.read_records(soak.runtime)):
                try:
                    os.kill(rec.pid, signal.SIGCONT)
                    print(f"[{soak.minute():5.1f} min] thaw {rec.serial} (pid {rec.pid})", flush=True)
                except ProcessLookupError:
                    pass


def audit(store: RunStore, keys: list[str], rounds: int) -> tuple[int, list[tuple], list[tuple]]:
    """(finished episodes, lost (phase, round, key, attempt), duplicated ones) over `rounds` rounds."""
    seen = Counter((e.phase, e.round, e.key, e.attempt) for e in store.episodes(phase=PHASE, status="finished"))
    expected = {(PHASE, r, k, 0) for r in range(rounds) for k in keys}
    lost = sorted(expected - set(seen))
    duplicated = sorted(k for k, c in seen.items() if c > 1)
    return sum(seen.values()), lost, duplicated


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=20.0, help="how long to keep starting rounds (minutes)")
    ap.add_argument("--every", type=float, default=120.0, help="seconds between two faults")
    ap.add_argument("--freeze", type=float, default=30.0, help="seconds a frozen daemon stays stopped")
    ap.add_argument("--sample", type=float, default=60.0, help="seconds between two RSS samples")
    ap.add_argument("--suite", default="smoke", help="suite played each round")
    ap.add_argument("--trace", type=float, metavar="MINUTE",
                    help="trace the driver's Python allocations and print what grew from MINUTE to the end")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    ap.add_argument("--default-malloc", action="store_true",
                    help="leave glibc's allocator as it is instead of tuning it as the coadapt command does")
    args = ap.parse_args()
    if not args.default_malloc:
        tune_glibc_malloc()  # the driver here stands for the coadapt command, which does this first
    if args.trace is not None:
        tracemalloc.start(8)

    suite = Suite.load(args.suite)
    cards, templates = suite_tasks(suite)
    with AdbServer() as server, tempfile.TemporaryDirectory() as tmp:
        runtime = Path(tmp) / "runtime"
        os.environ["COADAPT_RUNTIME_DIR"] = str(runtime)  # adb_pool finds the daemons to restart here
        recs = manager.start_virtual_devices(2, seed=3, ports=[free_port(), free_port()], adb_port=server.port,
                                             runtime=runtime)
        for r in recs:
            server.wait_for(r.serial)
        store = RunStore(Path(tmp) / "run", screens="none")
        soak = Soak(runtime, store)
        pool = adb_pool([r.serial for r in recs], AdbConfig(adb_port=server.port))
        policy = OraclePolicy(templates)
        soak.sample()
        threads = [threading.Thread(target=sampler, args=(soak, args.sample, args.trace), daemon=True),
                   threading.Thread(target=faulter, args=(soak, args.every, args.freeze), daemon=True)]
        for t in threads:
            t.start()
        rounds, lost_reported = 0, 0
        try:
            while soak.minute() < args.minutes:
                report = evaluate_cards(cards, templates, policy, pool, store, round=rounds)
                lost_reported += len(report.get("lost_instances") or [])
                rounds += 1
        finally:
            soak.stop.set()
            for t in threads:
                t.join(args.freeze + 5)
            end = soak.sample()
            if soak.baseline is not None:
                grown = tracemalloc.take_snapshot().compare_to(soak.baseline, "traceback")
                print(f"driver Python allocations grown since minute {args.trace:g}:")
                for stat in grown[:12]:
                    print(f"  {stat.size_diff / 2**20:+.2f} MB in {stat.count_diff:+d} blocks")
                    for line in stat.traceback.format()[-6:]:
                        print(f"      {line}")
            episodes, lost, duplicated = audit(store, [c.key for c in cards], rounds)
            cut = len(store.episodes(phase=PHASE, status="infra_error"))
            manager.stop_virtual_devices(runtime=runtime, adb_port=server.port)

    table = Table(title=f"Soak: {args.minutes:g} min of oracle eval ({suite.name}) on 2 virtual devices, "
                        f"a fault every {args.every:g} s")
    table.add_column("minute", justify="right")
    table.add_column("driver MB", justify="right")
    for i in range(len(end.daemons)):
        table.add_column(f"daemon {i} MB (pid)", justify="right")
    table.add_column("episodes", justify="right")
    table.add_column("faults", justify="right")
    for s in soak.samples:
        cells = [f"{mb:.1f} ({pid})" if mb is not None else f"- ({pid})" for _serial, pid, mb in s.daemons]
        cells += [""] * (len(end.daemons) - len(cells))
        table.add_row(f"{s.minute:.1f}", f"{s.driver_mb:.1f}", *cells, str(s.episodes), str(s.faults))
    Console().print(table)
    print(f"rounds {rounds}, episodes finished {episodes} (expected {rounds * len(cards)}), lost {len(lost)}, "
          f"duplicated {len(duplicated)}, lost per reports {lost_reported}, faults {len(soak.faults)}, "
          f"episodes cut by a fault and replayed {cut}")
    for what, rows in (("lost", lost), ("duplicated", duplicated)):
        for row in rows[:20]:
            print(f"  {what}: {row}")
    if args.json:
        args.json.write_text(json.dumps({
            "minutes": args.minutes, "every_s": args.every, "rounds": rounds, "episodes": episodes,
            "cut": cut, "lost": [list(x) for x in lost], "duplicated": [list(x) for x in duplicated], "faults": soak.faults,
            "samples": [{"minute": s.minute, "driver_mb": s.driver_mb, "daemons": s.daemons, "episodes": s.episodes}
                        for s in soak.samples],
        }, indent=2))


if __name__ == "__main__":
    main()
