"""Finding run folders under the dashboard's root, telling their kind and status, and keeping every
path the dashboard reads inside that root."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coadapt.android_env.errors import CoadaptError
from coadapt.runs import RunStore, RunStoreError, is_locked


class DashboardError(CoadaptError):
    """A request the dashboard refuses or cannot answer (a path outside the runs folder, a run that
    is not there)."""


def inside(root: Path, rel: str | Path) -> Path:
    """`root / rel`, resolved; refused (DashboardError) when it leaves `root` by `..`, an absolute
    path or a symbolic link. Every file the dashboard opens goes through here."""
    base = root.resolve()
    path = (base / rel).resolve()
    if path != base and not path.is_relative_to(base):
        raise DashboardError(f"refused: {rel} is outside the runs folder {base}")
    return path


@dataclass(frozen=True)
class RunInfo:
    """One row of the runs view."""

    rel: str
    """The folder, relative to the runs root: what the views pass around."""
    kind: str
    """eval | adapt | explore | unknown"""
    app: str
    status: str
    """running | finished | killed"""
    success: str
    """What the run scored: `0.620` (eval), `0.067 → 0.092` (adapt), `15 screens` (explore)."""
    episodes: int
    rounds: int
    started: float | None
    seconds: float | None


def discover(root: Path, depth: int = 3) -> list[Path]:
    """Run folders (a run.db, or an exploration's utg.json) under `root`, to `depth` levels, newest
    first. An adapt run's own exploration (`<run>/explore`) is listed as part of the run, not apart."""
    root = root.resolve()
    found: set[Path] = set()
    for level in range(depth + 1):
        pattern = "/".join(["*"] * level)
        for name in ("run.db", "utg.json"):
            for p in root.glob(f"{pattern}/{name}" if pattern else name):
                found.add(p.parent)
    runs = {p for p in found if not (p.name == "explore" and (p.parent / "run.db").is_file())}

    def mtime(p: Path) -> float:
        return max(((p / n).stat().st_mtime for n in ("run.db-wal", "run.db", "utg.json") if (p / n).exists()),
                   default=0.0)

    return sorted(runs, key=mtime, reverse=True)


def read_json(path: Path) -> Any:
    """A JSON file's content, or None when it is missing or torn (a writer mid-way)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def run_info(root: Path, folder: Path) -> RunInfo:
    """The runs-view row of one folder, from its config, report and a few aggregate queries."""
    rel = folder.resolve().relative_to(root.resolve()).as_posix() or "."
    config = read_json(folder / "config.json") or {}
    report = read_json(folder / "report.json")
    if not (folder / "run.db").is_file():
        utg = read_json(folder / "utg.json") or {}
        nodes = len(utg.get("nodes", []))
        return RunInfo(rel, "explore", str(utg.get("app") or (report or {}).get("app", "?")),
                       "finished" if report is not None else "killed", f"{nodes} screens", 0, 0,
                       (folder / "utg.json").stat().st_mtime if (folder / "utg.json").exists() else None,
                       (report or {}).get("wall_clock_s"))
    kind = str(config.get("kind", "unknown"))
    try:
        with RunStore.open_readonly(folder) as store:
            view = store.overview()
            rounds = len({r.round for r in store.rounds() if r.phase == "adapt"})
    except RunStoreError:
        return RunInfo(rel, kind, str(config.get("app", "?")), "unreadable", "", 0, 0, None, None)
    locked = is_locked(folder)
    if locked:
        status = "running"
    elif report is not None:
        status = "finished"
    else:
        status = "killed" if locked is False else "unknown"
    success = ""
    if kind == "adapt":
        base = (report or {}).get("base", {}).get("success_rate")
        adapted = (report or {}).get("adapted", {}).get("success_rate")
        success = (f"{_fmt(base) if base is not None else _partial(view, 'eval_base')} → "
                   f"{_fmt(adapted) if adapted is not None else _partial(view, 'eval_adapted')}")
    else:
        rate = (report or {}).get("success_rate")
        success = _fmt(rate) if rate is not None else _partial(view, "eval")
    app = config.get("app") or _apps(report)
    seconds = None if view["started"] is None else (
        (time.time() if status == "running" else view["ended"]) - view["started"])
    return RunInfo(rel, kind, str(app or "?"), status, success, view["episodes"], rounds, view["started"], seconds)


def _partial(view: dict[str, Any], phase: str) -> str:
    """The success so far of a phase without a report (running, or killed): the rate over the
    episodes scored, and how many, so a stopped run's few episodes do not pass for its result."""
    ph = view["by_phase"].get(phase, {})
    return "–" if ph.get("success_rate") is None else f"{ph['success_rate']:.3f} on {ph['scored']} so far"


def _fmt(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.3f}"


def _apps(report: dict[str, Any] | None) -> str:
    per_app = (report or {}).get("per_app") or {}
    if len(per_app) > 3:
        return f"{len(per_app)} apps"
    return ", ".join(a.removeprefix("com.example.") for a in sorted(per_app))


def list_run_infos(root: Path) -> list[RunInfo]:
    """Every run under `root`, newest first."""
    return [run_info(root, f) for f in discover(root)]


def open_run(root: Path, rel: str) -> RunStore:
    """The run folder `rel` under `root`, opened read-only."""
    folder = inside(root, rel)
    try:
        return RunStore.open_readonly(folder)
    except RunStoreError as e:
        raise DashboardError(str(e)) from e
