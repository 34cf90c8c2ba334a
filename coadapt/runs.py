"""The run store: one folder per run, with an SQLite index of episodes and steps.

Layout of a run folder (readable without coadapt: SQLite + PNG + JSON):

    <run>/config.json           what was run (no machine-specific values)
    <run>/run.db                SQLite, schema below
    <run>/screens/<episode>/<step>.png   the screen the agent saw before each step
    <run>/report.json           the final report (eval / adapt)

Schema (see SCHEMA): `episodes` has one row per attempt at a task instance (`key` identifies
the instance, `attempt` the try), `steps` one row per action, `metrics` one row per logged
scalar (training curves), `meta` key/value pairs. Ground-truth `success` is written only by
evaluation; adaptation writes `verifier_score`, `reward` and `curiosity` instead.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from PIL import Image

from coadapt.android_env.actions import Action, describe, to_dict
from coadapt.android_env.errors import CoadaptError
from coadapt.android_env.uitree import UiElement

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,              -- task instance id, e.g. "NotesAddNote#3"
    attempt INTEGER NOT NULL,       -- 0-based try at this instance (pass@k, reruns)
    task TEXT NOT NULL,             -- template name
    app TEXT NOT NULL,              -- package
    goal TEXT NOT NULL,
    seed INTEGER NOT NULL,          -- instance seed
    policy TEXT NOT NULL,
    device TEXT,                    -- serial the episode ran on
    phase TEXT NOT NULL DEFAULT 'eval',  -- eval | explore | adapt | baseline
    round INTEGER,                  -- adaptation round, when adapting
    status TEXT NOT NULL,           -- running | finished | infra_error
    steps INTEGER NOT NULL DEFAULT 0,
    invalid_steps INTEGER NOT NULL DEFAULT 0,
    declared TEXT,                  -- done | infeasible | NULL (step limit)
    answer TEXT,
    success REAL,                   -- ground truth, evaluation only
    verifier_score REAL,            -- p(success) from the verifier, adaptation only
    reward REAL,
    curiosity REAL,
    error TEXT,
    started REAL NOT NULL,          -- unix time
    ended REAL
);
CREATE INDEX IF NOT EXISTS episodes_key ON episodes(key, status);
CREATE TABLE IF NOT EXISTS steps (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    step INTEGER NOT NULL,          -- 0-based; the observation before the action
    action TEXT NOT NULL,           -- AndroidWorld-style JSON
    action_text TEXT NOT NULL,      -- short form, e.g. tap(3)
    raw_output TEXT,                -- what the model generated, when a model acted
    element TEXT,                   -- JSON of the element an index referred to
    invalid INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    package TEXT,                   -- foreground app of the observation
    screen TEXT,                    -- screenshot path relative to the run folder
    n_elements INTEGER,
    elements TEXT,                  -- the indexed element list the agent saw (one per line)
    reward REAL,
    curiosity REAL,
    seconds REAL,
    PRIMARY KEY (episode_id, step)
);
CREATE TABLE IF NOT EXISTS metrics (
    name TEXT NOT NULL,
    step INTEGER NOT NULL,
    value REAL NOT NULL,
    time REAL NOT NULL
);
"""


class RunStoreError(CoadaptError):
    """A run folder is missing, unreadable, or belongs to a different job."""


def element_json(e: UiElement | None) -> str | None:
    if e is None:
        return None
    return json.dumps({"text": e.text, "content_desc": e.content_desc, "resource_id": e.resource_id,
                       "class": e.class_name, "bounds": [e.bounds.left, e.bounds.top, e.bounds.right, e.bounds.bottom]},
                      ensure_ascii=False)


@dataclass(frozen=True)
class EpisodeRow:
    """An episode as stored."""

    id: int
    key: str
    attempt: int
    task: str
    app: str
    goal: str
    seed: int
    policy: str
    device: str | None
    phase: str
    round: int | None
    status: str
    steps: int
    invalid_steps: int
    declared: str | None
    answer: str | None
    success: float | None
    verifier_score: float | None
    reward: float | None
    curiosity: float | None
    error: str | None
    started: float
    ended: float | None


class RunStore:
    """A run folder. Thread-safe: rollout workers write episodes concurrently."""

    def __init__(self, folder: str | Path, *, create: bool = True, save_screens: bool = True):
        self.folder = Path(folder)
        if not create and not (self.folder / "run.db").exists():
            raise RunStoreError(f"{self.folder} is not a run folder (no run.db)")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.save_screens = save_screens
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.folder / "run.db", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ meta / config

    def set_meta(self, key: str, value: Any) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def write_json(self, name: str, data: Any) -> Path:
        path = self.folder / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        tmp.replace(path)  # atomic: a killed run never leaves half a report
        return path

    # ------------------------------------------------------------------ episodes

    def start_episode(self, *, key: str, attempt: int, task: str, app: str, goal: str, seed: int, policy: str,
                      device: str | None, phase: str = "eval", round: int | None = None) -> int:
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO episodes(key, attempt, task, app, goal, seed, policy, device, phase, round, status, started)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                (key, attempt, task, app, goal, seed, policy, device, phase, round, time.time()),
            )
            return int(cur.lastrowid)

    def add_step(self, episode_id: int, step: int, *, action: Action, screenshot: Image.Image | None, package: str,
                 elements: list[str], element: UiElement | None = None, invalid: bool = False, error: str | None = None,
                 raw_output: str | None = None, seconds: float = 0.0, reward: float | None = None,
                 curiosity: float | None = None) -> None:
        screen = None
        if screenshot is not None and self.save_screens:
            rel = Path("screens") / str(episode_id) / f"{step:03d}.png"
            path = self.folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            screenshot.save(path, format="PNG", compress_level=1)
            screen = rel.as_posix()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO steps(episode_id, step, action, action_text, raw_output, element, invalid, error,"
                " package, screen, n_elements, elements, reward, curiosity, seconds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (episode_id, step, json.dumps(to_dict(action), ensure_ascii=False), describe(action), raw_output,
                 element_json(element), int(invalid), error, package, screen, len(elements), "\n".join(elements),
                 reward, curiosity, seconds),
            )

    def finish_episode(self, episode_id: int, *, status: str, steps: int, invalid_steps: int = 0,
                       declared: str | None = None, answer: str | None = None, success: float | None = None,
                       verifier_score: float | None = None, reward: float | None = None,
                       curiosity: float | None = None, error: str | None = None) -> None:
        if status not in ("finished", "infra_error"):
            raise RunStoreError(f"episode status must be finished or infra_error, got {status!r}")
        with self._lock:
            self._db.execute(
                "UPDATE episodes SET status=?, steps=?, invalid_steps=?, declared=?, answer=?, success=?, verifier_score=?,"
                " reward=?, curiosity=?, error=?, ended=? WHERE id=?",
                (status, steps, invalid_steps, declared, answer, success, verifier_score, reward, curiosity, error,
                 time.time(), episode_id),
            )

    def update_episode(self, episode_id: int, **fields: Any) -> None:
        allowed = {"verifier_score", "reward", "curiosity", "success"}
        bad = set(fields) - allowed
        if bad:
            raise RunStoreError(f"cannot update {sorted(bad)}; updatable: {sorted(allowed)}")
        sets = ", ".join(f"{k}=?" for k in fields)
        with self._lock:
            self._db.execute(f"UPDATE episodes SET {sets} WHERE id=?", (*fields.values(), episode_id))

    def set_step_scores(self, episode_id: int, step: int, *, reward: float | None, curiosity: float | None) -> None:
        with self._lock:
            self._db.execute("UPDATE steps SET reward=?, curiosity=? WHERE episode_id=? AND step=?",
                             (reward, curiosity, episode_id, step))

    def episodes(self, *, phase: str | None = None, status: str | None = None, round: int | None = None) -> list[EpisodeRow]:
        q = "SELECT * FROM episodes WHERE 1=1"
        args: list[Any] = []
        for col, v in (("phase", phase), ("status", status), ("round", round)):
            if v is not None:
                q += f" AND {col} = ?"
                args.append(v)
        with self._lock:
            rows = self._db.execute(q + " ORDER BY id", args).fetchall()
        return [EpisodeRow(*r) for r in rows]

    def finished_keys(self, phase: str = "eval") -> dict[tuple[str, int], int]:
        """(instance key, attempt) -> episode id, for episodes that finished (to resume)."""
        with self._lock:
            rows = self._db.execute("SELECT key, attempt, id FROM episodes WHERE status='finished' AND phase=?", (phase,)).fetchall()
        return {(k, a): i for k, a, i in rows}

    def steps(self, episode_id: int) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._db.execute("SELECT * FROM steps WHERE episode_id=? ORDER BY step", (episode_id,))
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def discard_unfinished(self, phase: str | None = None) -> int:
        """Drop episodes left 'running' by a killed run (they are rerun); returns how many."""
        with self._lock:
            q = "SELECT id FROM episodes WHERE status='running'" + (" AND phase=?" if phase else "")
            ids = [r[0] for r in self._db.execute(q, (phase,) if phase else ()).fetchall()]
            for i in ids:
                self._db.execute("DELETE FROM steps WHERE episode_id=?", (i,))
                self._db.execute("DELETE FROM episodes WHERE id=?", (i,))
        return len(ids)

    # ------------------------------------------------------------------ metrics

    def log_metric(self, name: str, step: int, value: float) -> None:
        with self._lock:
            self._db.execute("INSERT INTO metrics(name, step, value, time) VALUES (?,?,?,?)", (name, step, float(value), time.time()))

    def metrics(self, name: str | None = None) -> Iterator[tuple[str, int, float]]:
        with self._lock:
            if name is None:
                rows = self._db.execute("SELECT name, step, value FROM metrics ORDER BY name, step").fetchall()
            else:
                rows = self._db.execute("SELECT name, step, value FROM metrics WHERE name=? ORDER BY step", (name,)).fetchall()
        return iter(rows)


def list_runs(root: str | Path) -> list[Path]:
    """Run folders under `root` (any depth up to 2), newest first."""
    root = Path(root)
    if not root.exists():
        return []
    found = {p.parent for p in root.glob("run.db")} | {p.parent for p in root.glob("*/run.db")} | {p.parent for p in root.glob("*/*/run.db")}
    return sorted(found, key=lambda p: (p / "run.db").stat().st_mtime, reverse=True)
