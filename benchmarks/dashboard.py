"""How fast the dashboard opens a big run: list the runs folder, list a run's episodes, show a step.

    python benchmarks/dashboard.py                  # one run of 1,000 episodes x 8 steps
    python benchmarks/dashboard.py --episodes 5000

Builds the run with the real run store (screenshots, UI trees, verdicts), then times the data
functions each dashboard view calls, cold (a fresh read-only open each time, as the app does per
request). Target: a 1,000-episode run is listed, and its episode table filled, in under 2 s.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from PIL import Image
from rich.console import Console
from rich.table import Table

from coadapt.android_env.actions import Back, Tap
from coadapt.dashboard import episodes, folders
from coadapt.runs import RunStore

TARGET_S = 2.0


def build(folder: Path, n: int, steps: int) -> None:
    """A finished eval-like run of `n` episodes with `steps` steps each."""
    shot = Image.new("RGB", (360, 800), (240, 240, 250))
    elements = [f"[{i}] TextView 'row {i}'" for i in range(30)]
    tree = "<hierarchy rotation='0'>" + "".join(
        f"<node index='{i}' text='row {i}' bounds='[0,{i * 20}][360,{i * 20 + 20}]'/>" for i in range(30)) + "</hierarchy>"
    with RunStore(folder) as store:
        store.write_json("config.json", {"kind": "eval", "suite": "bench"})
        for e in range(n):
            eid = store.start_episode(key=f"Task{e % 50}#{e}", attempt=0, task=f"Task{e % 50}", app="com.example.notes",
                                      goal=f"Goal {e}", seed=e, policy="bench", device=f"sim-{e % 4}")
            for s in range(steps):
                store.add_step(eid, s, action=Tap(index=s) if s % 2 else Back(), screenshot=shot if s == 0 else None,
                               package="com.example.notes", elements=elements, tree_xml=tree)
            store.add_verdicts(eid, [("features", 0, 0.4, None)])
            store.finish_episode(eid, status="finished", steps=steps, success=float(e % 3 == 0))
        store.write_json("report.json", {"success_rate": 1 / 3})


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def in_browser(root: Path, n: int) -> list[tuple[str, float, str]]:
    """The same two views through the served app in headless Chromium, when one is installed."""
    import shutil
    import socket

    chromium = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p and Path(p).is_file()), None)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        return [("in a browser", float("nan"), "skipped: no playwright or Chromium")]
    from coadapt.dashboard.app import serve

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    demo, url = serve(root, port=port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            t = time.perf_counter()
            page.goto(url)
            page.locator("#runs-table [role=gridcell]", has_text="big-run").first.wait_for(timeout=60_000)
            t_runs = time.perf_counter() - t
            t = time.perf_counter()
            page.locator("#runs-table [role=gridcell]", has_text="big-run").first.click()
            page.locator("#episodes-caption", has_text=f"{n} episodes").wait_for(timeout=60_000)
            page.locator("#episodes-table [data-testid=cell-0-0]").wait_for(timeout=60_000)
            t_open = time.perf_counter() - t
            browser.close()
    finally:
        demo.close()
    return [("browser: page load to runs listed", t_runs, "headless Chromium"),
            ("browser: click to episode table", t_open, f"{n} rows; target < {TARGET_S:.1f} s")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t_build, _ = timed(lambda: build(root / "big-run", args.episodes, args.steps))

        def episode_table():
            with folders.open_run(root, "big-run") as store:
                return episodes.episode_rows(store)

        def first_step():
            with folders.open_run(root, "big-run") as store:
                return episodes.step_view(store, root, args.episodes, 1)

        rows = []
        t_list, infos = timed(lambda: folders.list_run_infos(root))
        rows.append(("runs view: list the folder", t_list, f"{infos[0].episodes} episodes, status {infos[0].status}"))
        t_eps, eps = timed(episode_table)
        rows.append(("episode table of the run", t_eps, f"{len(eps)} rows"))
        rows.append(("runs view + episode table", t_list + t_eps, "target < %.1f s" % TARGET_S))
        t_step, view = timed(first_step)
        rows.append(("one step (drawn)", t_step, f"step {view.step + 1} of {view.n_steps}"))
        rows.extend(in_browser(root, args.episodes))
    table = Table(title=f"dashboard on a run of {args.episodes:,} episodes x {args.steps} steps "
                        f"(built in {t_build:.1f} s)")
    for col in ("view", "seconds", "note"):
        table.add_column(col, justify="right" if col == "seconds" else "left")
    for name, s, note in rows:
        table.add_row(name, f"{s:.3f}", note)
    Console(width=max(100, Console().width)).print(table)
    for name, s, _ in rows:
        if name.startswith(("runs view + episode table", "browser: click")) and s == s:
            print(f"{name}: {s:.2f} s, {'meets' if s < TARGET_S else 'MISSES'} the target (< {TARGET_S} s)")


if __name__ == "__main__":
    main()
