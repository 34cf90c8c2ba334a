"""The run store: one folder per run, with a versioned SQLite index of episodes, steps and rounds.

Layout of a run folder (readable without coadapt: SQLite + PNG + JSON + zlib):

    <run>/config.json           what was run (no machine-specific values)
    <run>/run.db                SQLite, schema below (version in meta 'schema_version')
    <run>/.lock                 held (flock) by the one process writing the folder
    <run>/screens/<episode>/<step>.png   the screen the agent saw before each step (and the final one)
    <run>/report.json           the final report (eval / adapt)

Schema version 4 (docs/runs.md has every column):

* `episodes`: one row per attempt at a task instance (`key` the instance, `attempt` the try),
  with the adaptation `round`, the `adapter` the policy used, where the task card came from
  (`source`), and the adapt loop's `gate`, `advantage` and `verifier_detail` (JSON).
* `steps`: one row per action, with everything needed to rebuild the training prompt and
  re-score it after a kill: `history` (JSON), the UI tree as zlib-compressed uiautomator XML
  (`tree_z`), `screen_size` (JSON [w, h]), sampled `token_ids` and behaviour `logprobs` (JSON),
  and the per-step `advantage` / `gate`.
* `finals` (version 4): the screen after each finished episode's last action.
* `rounds`: one row per (phase, round) of the adapt loop; `verdicts`: the verifier's votes;
  `metrics`: logged scalars (training curves); `meta`: key/value JSON.

Ground-truth `success` is written only by evaluation; adaptation writes `verifier_score`,
`reward`, `curiosity`, `gate` and `advantage` instead.

A writable open takes an exclusive flock on `<run>/.lock` (one writer per folder) and migrates
an older folder in place (version 1 = no 'schema_version' in meta). `RunStore.open_readonly`
writes nothing at all and reads older folders through a compatibility path (missing columns
read as None); see `RunStore.__init__` for how it opens the database.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import socket
import sqlite3
import threading
import time
import weakref
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from PIL import Image

from coadapt.android_env.actions import Action, describe, to_dict
from coadapt.android_env.errors import CoadaptError, UiTreeError
from coadapt.android_env.observation import Observation, png_screenshot
from coadapt.android_env.uitree import UiElement, parse_xml

SCHEMA_VERSION = 4
"""The schema this code writes; folders with a lower version are migrated when opened for writing."""

RUN_KINDS = ("eval", "adapt")
"""What a run folder can hold; one kind per folder (RunStore.claim)."""

GATES = ("accepted_positive", "accepted_negative", "dropped_uncertain", "dropped_infra", "dropped_flat_group")
"""What the adapt loop's gate decided about an episode (NULL: not gated)."""

# Version 1: the schema before versioning (no 'schema_version' in meta). Kept verbatim: a fresh
# folder is created as version 1 and then migrated, so fresh and migrated folders are identical.
SCHEMA_V1 = (
    """CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS episodes (
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
)""",
    "CREATE INDEX IF NOT EXISTS episodes_key ON episodes(key, status)",
    """CREATE TABLE IF NOT EXISTS steps (
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
)""",
    """CREATE TABLE IF NOT EXISTS metrics (
    name TEXT NOT NULL,
    step INTEGER NOT NULL,
    value REAL NOT NULL,
    time REAL NOT NULL
)""",
)

# MIGRATIONS[v] takes a version v-1 database to version v; run in one transaction.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    4: (
        # The screen after an episode's last action (a step row holds the screen *before* its
        # action): what the verifier judges, so a resumed run rebuilds attempts exactly as played.
        """CREATE TABLE IF NOT EXISTS finals (
    episode_id INTEGER PRIMARY KEY REFERENCES episodes(id),
    package TEXT,
    screen TEXT,                    -- PNG path relative to the run folder, NULL with screens=none
    screen_size TEXT,               -- JSON [width, height] in pixels
    tree_z BLOB                     -- zlib(uiautomator XML, utf-8), NULL when trees are not stored
)""",
    ),
    3: (
        "ALTER TABLE episodes ADD COLUMN wandering REAL",        # share of steps that revealed nothing and changed nothing
        "ALTER TABLE episodes ADD COLUMN informative REAL",      # share of steps whose findings a later step used
    ),
    2: (
        "ALTER TABLE episodes ADD COLUMN adapter TEXT",          # adapter path/tag the policy used
        "ALTER TABLE episodes ADD COLUMN source TEXT",           # task card origin: suite | relabel | proposed | ...
        "ALTER TABLE episodes ADD COLUMN gate TEXT",             # one of GATES, or NULL
        "ALTER TABLE episodes ADD COLUMN advantage REAL",
        "ALTER TABLE episodes ADD COLUMN verifier_detail TEXT",  # JSON
        "CREATE INDEX IF NOT EXISTS episodes_resume ON episodes(phase, round, status)",
        "ALTER TABLE steps ADD COLUMN history TEXT",             # JSON list of earlier actions as the model wrote them
        "ALTER TABLE steps ADD COLUMN tree_z BLOB",              # zlib(uiautomator XML, utf-8)
        "ALTER TABLE steps ADD COLUMN screen_size TEXT",         # JSON [width, height] in pixels
        "ALTER TABLE steps ADD COLUMN token_ids TEXT",           # JSON list of sampled answer token ids
        "ALTER TABLE steps ADD COLUMN logprobs TEXT",            # JSON list: behaviour log-prob per sampled token
        "ALTER TABLE steps ADD COLUMN advantage REAL",
        "ALTER TABLE steps ADD COLUMN gate TEXT",
        """CREATE TABLE IF NOT EXISTS rounds (
    phase TEXT NOT NULL,
    round INTEGER NOT NULL,
    status TEXT NOT NULL,           -- running | finished | rolled_back
    adapter TEXT,                   -- adapter checkpoint, relative to the run folder
    metrics TEXT,                   -- JSON
    kept INTEGER,                   -- 1: the update was kept, 0: rolled back
    started REAL NOT NULL,
    ended REAL,
    PRIMARY KEY (phase, round)
)""",
        """CREATE TABLE IF NOT EXISTS verdicts (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    judge TEXT NOT NULL,            -- which check or judge voted
    sample INTEGER NOT NULL,        -- 0-based sample of that judge
    vote REAL NOT NULL,             -- p(success) in [0, 1]
    detail TEXT                     -- free text (the judge's reasoning), may be NULL
)""",
        "CREATE INDEX IF NOT EXISTS verdicts_episode ON verdicts(episode_id)",
    ),
}

_STEP_COLUMNS = ("episode_id", "step", "action", "action_text", "raw_output", "element", "invalid", "error", "package",
                 "screen", "n_elements", "elements", "reward", "curiosity", "seconds", "history", "tree_z",
                 "screen_size", "token_ids", "logprobs", "advantage", "gate")
_STEP_WRITTEN = _STEP_COLUMNS[:-2]  # by add_step; advantage and gate come later (set_step_advantages)
_STEP_JSON = ("action", "element", "history", "screen_size", "token_ids", "logprobs")
_EPISODE_EXTRA = ("adapter", "source", "gate", "advantage", "verifier_detail", "wandering", "informative")
_ROUND_STATUS = ("running", "finished", "rolled_back")


PNG_LEVEL = 4
"""zlib level of saved screenshots: on the simulated apps' screens, 15 % smaller than level 1 for
about 15 ms more per saved screen (levels above 4 gain under 2 % more)."""
SCREENS = ("all", "changed", "none")
"""Which screenshots a run saves: every step's, only new ones (the rest are references), none."""


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (`adapt.rounds`), so a refusal names the one setting that differs."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


class RunStoreError(CoadaptError):
    """A run folder is missing, unreadable, locked, read-only, or belongs to a different job."""


def _clean(s: Any) -> Any:
    """`s` with code points SQLite cannot store (lone surrogates) replaced by '?'; non-strings pass."""
    if not isinstance(s, str):
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", errors="replace").decode("utf-8")


def _dumps(v: Any) -> str | None:
    return None if v is None else json.dumps(v, ensure_ascii=False)


def _loads(s: str | None) -> Any:
    return None if s is None else json.loads(s)


def element_json(e: UiElement | None) -> str | None:
    """JSON of the element an action referred to (text, description, id, class, bounds), or None."""
    if e is None:
        return None
    return json.dumps({"text": e.text, "content_desc": e.content_desc, "resource_id": e.resource_id,
                       "class": e.class_name, "bounds": [e.bounds.left, e.bounds.top, e.bounds.right, e.bounds.bottom]},
                      ensure_ascii=False)


@dataclass(frozen=True)
class EpisodeRow:
    """An episode as stored (times are unix seconds)."""

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
    adapter: str | None = None
    """Adapter path or tag the policy used (None: base model)."""
    source: str | None = None
    """Where the task card came from: suite | relabel | proposed | ..."""
    gate: str | None = None
    """One of GATES, or None when the episode was not gated."""
    advantage: float | None = None
    verifier_detail: Any = None
    """The verifier's detail, decoded from JSON."""
    wandering: float | None = None
    """Share of the episode's steps that revealed nothing new and made no progress (curiosity)."""
    informative: float | None = None
    """Share of the episode's steps whose findings a later step used (curiosity)."""


@dataclass(frozen=True)
class RoundRow:
    """One round of a phase of the adapt loop (times are unix seconds)."""

    phase: str
    round: int
    status: str
    """running | finished | rolled_back"""
    adapter: str | None
    """Adapter checkpoint, relative to the run folder."""
    metrics: Any
    """Round metrics, decoded from JSON."""
    kept: bool | None
    started: float
    ended: float | None


_EPISODE_COLUMNS = tuple(f.name for f in fields(EpisodeRow))
_ROUND_COLUMNS = tuple(f.name for f in fields(RoundRow))


class RunStore:
    """A run folder. Thread-safe: rollout workers write episodes concurrently."""

    def __init__(self, folder: str | Path, *, create: bool = True, screens: str = "changed", readonly: bool = False):
        """Open (and unless `readonly`, create, lock and migrate) the run folder `folder`.

        Read-only opens write nothing and take no lock. The database is opened with SQLite's
        `mode=ro` when a `run.db-wal` exists (a writer is live, or was killed: its newest rows are
        only in the WAL, and the -shm it shares is already there), and `immutable=1` otherwise
        (nobody is writing; `mode=ro` would leave new -wal/-shm files behind, and would fail in a
        folder that is not writable). An immutable reader reopens (with `mode=ro` once a WAL
        exists) as soon as run.db or its WAL changes, so a viewer opened before a resume still
        sees the new rows.

        `screens` says which screenshots are saved as PNG files (SCREENS): `all`, one file per
        step; `changed` (the default), a screen identical to one this store already saved is a
        reference to that file, not a copy (repeated attempts and unchanged screens cost nothing);
        `none`, no files (the screen size and UI tree are still stored).
        """
        if screens not in SCREENS:
            raise RunStoreError(f"screens must be one of {', '.join(SCREENS)}, got {screens!r}")
        self.folder = Path(folder)
        self.db_path = self.folder / "run.db"
        self.screens = screens
        self._saved: dict[bytes, str] = {}
        """Digest of a screenshot's pixels -> the file it was saved to (in this session)."""
        self._digests: dict[str, bytes] = {}
        """Saved file -> the digest of what it holds."""
        self.readonly = readonly
        self._lock = threading.RLock()
        self._release_flock: weakref.finalize | None = None
        self._immutable_stamp: tuple[bool, int, int] | None = None
        if self.folder.exists() and not self.folder.is_dir():
            raise RunStoreError(f"{self.folder} is a file, not a run folder")
        if (readonly or not create) and not self.db_path.is_file():
            raise RunStoreError(f"{self.folder} is not a run folder (no run.db)")
        if not readonly and not self.db_path.is_file() and self.folder.is_dir() \
                and any(p.name != ".lock" for p in self.folder.iterdir()):
            raise RunStoreError(f"{self.folder} holds files but no run (no run.db); give an empty or new folder as "
                                f"--out, so nothing of yours is overwritten")
        if readonly:
            self._db = self._connect_readonly()
        else:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._take_flock()
            try:
                self._db = self._connect_writable()
            except BaseException:
                self._release_flock()
                raise
        self._cols = self._columns()

    @classmethod
    def open_readonly(cls, folder: str | Path) -> RunStore:
        """Open an existing run folder for reading only (see `__init__`)."""
        return cls(folder, readonly=True)

    # ------------------------------------------------------------------ opening

    def _take_flock(self) -> None:
        path = self.folder / ".lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise RunStoreError(f"cannot lock {path} for writing ({e}); open the run read-only to view it") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            os.close(fd)
            holder = lock_holder(self.folder)
            who = f"process {holder['pid']} on {holder['host']}" if holder else "another coadapt process"
            raise RunStoreError(f"{who} is writing {self.folder} (it holds {path}); "
                                "wait for it to finish, or use another --out") from e
        # Who holds it, for the refusal message and for viewers telling a running run from a killed one.
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}).encode(), 0)
        # Released by close(), or when the store is garbage-collected, or when the process dies.
        self._release_flock = weakref.finalize(self, os.close, fd)

    def _connect_writable(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.db_path, check_same_thread=False, isolation_level=None)
        except sqlite3.DatabaseError as e:
            raise RunStoreError(f"cannot open {self.db_path}: {e}") from e
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._migrate(db)
        except sqlite3.DatabaseError as e:
            db.close()
            raise RunStoreError(f"{self.db_path} is not a usable coadapt run database: {e}") from e
        except BaseException:
            db.close()
            raise
        return db

    def _wal_exists(self) -> bool:
        return self.db_path.with_name(self.db_path.name + "-wal").exists()

    def _stamp(self) -> tuple[bool, int, int]:
        """What tells an immutable reader that the database changed under it."""
        st = self.db_path.stat()
        return self._wal_exists(), st.st_mtime_ns, st.st_size

    def _connect_readonly(self) -> sqlite3.Connection:
        wal = self._wal_exists()
        # With a WAL, mode=ro reads its rows; if that fails (a read-only folder without the -shm),
        # immutable=1 still reads what was checkpointed into run.db.
        modes = ["mode=ro", "immutable=1"] if wal else ["immutable=1"]
        err: sqlite3.DatabaseError | None = None
        for mode in modes:
            try:
                db = sqlite3.connect(f"{self.db_path.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False,
                                     isolation_level=None)
            except sqlite3.DatabaseError as e:
                err = e
                continue
            try:
                version = self._version(db)
            except sqlite3.DatabaseError as e:
                db.close()
                err = e
                continue
            if not version:
                db.close()
                raise RunStoreError(f"{self.db_path} is not a coadapt run database (no episodes table)")
            try:
                self._check_version(version)
            except RunStoreError:
                db.close()
                raise
            self._immutable_stamp = self._stamp() if mode == "immutable=1" else None
            self.schema_version = version
            return db
        raise RunStoreError(f"{self.db_path} is not a usable coadapt run database: {err}") from err

    def _version(self, db: sqlite3.Connection) -> int | None:
        """Schema version of `db`: 0 empty, 1 before versioning, None not a run database."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return 0
        if "episodes" not in tables:
            return None
        if "meta" in tables:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is not None:
                return int(json.loads(row[0]))
        return 1

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise RunStoreError(f"{self.folder} has run store schema version {version}, newer than this coadapt "
                                f"knows ({SCHEMA_VERSION}); upgrade coadapt to open it")

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = self._version(db)
        if version is None:
            raise RunStoreError(f"{self.db_path} is not a coadapt run database (it has tables but no episodes)")
        self._check_version(version)
        if version < SCHEMA_VERSION:
            # One transaction: a kill mid-migration leaves the folder at its old version.
            db.execute("BEGIN IMMEDIATE")
            try:
                if version == 0:  # a new folder: create version 1, then migrate like any other
                    for stmt in SCHEMA_V1:
                        db.execute(stmt)
                for v in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
                    for stmt in MIGRATIONS[v]:
                        db.execute(stmt)
                db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
                           (json.dumps(SCHEMA_VERSION),))
                db.execute("COMMIT")
            except sqlite3.DatabaseError as e:
                db.execute("ROLLBACK")
                raise RunStoreError(f"cannot migrate {self.db_path} from version {version} to {SCHEMA_VERSION}: {e}") from e
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self.schema_version = SCHEMA_VERSION

    def _columns(self) -> dict[str, set[str]]:
        with self._lock:
            tables = [r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return {t: {r[1] for r in self._db.execute(f"PRAGMA table_info({t})")} for t in tables}

    _OWN_FILES = ("run.db", "run.db-wal", "run.db-shm", "config.json", ".lock")

    def holds_nothing(self) -> bool:
        """True while the folder holds no episode, no round and no file but the store's own and
        config.json: a job that failed this early can `remove` it without losing anything."""
        episodes = self._read("SELECT COUNT(*) FROM episodes")[0][0]
        return episodes == 0 and not self.rounds() and all(p.name in self._OWN_FILES for p in self.folder.iterdir())

    def remove(self, *, folder_too: bool) -> None:
        """Delete a closed store's own files (and the folder, if `folder_too` and then empty)."""
        for name in self._OWN_FILES:
            (self.folder / name).unlink(missing_ok=True)
        if folder_too and not any(self.folder.iterdir()):
            self.folder.rmdir()

    def close(self) -> None:
        """Close the database and release the folder's write lock; safe to call twice."""
        with self._lock:
            self._db.close()
            if self._release_flock is not None:
                self._release_flock()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing

    def _writable(self) -> None:
        if self.readonly:
            raise RunStoreError(f"{self.folder} is open read-only; writing needs RunStore({str(self.folder)!r})")

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one write statement with every text parameter cleaned (see `_clean`)."""
        self._writable()
        with self._lock:
            return self._db.execute(sql, [_clean(p) for p in params])

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._writable()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            if self._immutable_stamp is not None and self._stamp() != self._immutable_stamp:
                # A writer came after we opened: an immutable connection would miss (or tear) its rows.
                self._db.close()
                self._db = self._connect_readonly()
                self._cols = self._columns()
            return self._db.execute(sql, params).fetchall()

    def _select(self, table: str, columns: Sequence[str]) -> str:
        """Explicit column list; columns an older folder lacks (read-only) read as NULL."""
        have = self._cols.get(table, set())
        return ", ".join(c if c in have else f"NULL AS {c}" for c in columns)

    # ------------------------------------------------------------------ meta / config

    def set_meta(self, key: str, value: Any) -> None:
        """Store `value` (JSON-able) under `key`."""
        self._write("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, json.dumps(value, ensure_ascii=False)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        """The value stored under `key`, or `default`."""
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def claim(self, kind: str, identity: Mapping[str, Any]) -> None:
        """Mark the folder as a `kind` run ("eval", "adapt") of `identity`, or refuse with
        RunStoreError when it holds a run of another kind or another identity (naming what differs),
        so that a resumed run only ever continues itself."""
        identity = json.loads(json.dumps(identity, ensure_ascii=False))  # as stored: tuples read back as lists
        for other in RUN_KINDS:
            if other != kind and self.get_meta(other) is not None:
                raise RunStoreError(f"{self.folder} holds {'an' if other[0] in 'aeiou' else 'a'} {other} run, not "
                                    f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} run; use another --out")
        previous = self.get_meta(kind)
        if previous is not None and previous != identity:
            there, now = _flat(previous), _flat(identity)
            differ = sorted(k for k in set(there) | set(now) if there.get(k) != now.get(k))
            said = ", ".join(f"{k}: {there.get(k)!r} there, {now.get(k)!r} now" for k in differ[:4])
            said += f" and {len(differ) - 4} more" if len(differ) > 4 else ""
            raise RunStoreError(f"{self.folder} holds a different {kind} run ({said}); resume it with the same "
                                f"options or use another --out")
        self.set_meta(kind, identity)

    def write_json(self, name: str, data: Any) -> Path:
        """Write `data` as `<run>/<name>` atomically (a killed run never leaves half a file)."""
        self._writable()
        path = self.folder / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8", errors="replace")
        tmp.replace(path)
        return path

    # ------------------------------------------------------------------ episodes

    def start_episode(self, *, key: str, attempt: int, task: str, app: str, goal: str, seed: int, policy: str,
                      device: str | None, phase: str = "eval", round: int | None = None,
                      adapter: str | Path | None = None, source: str | None = None) -> int:
        """Record a new running episode and return its id."""
        cur = self._write(
            "INSERT INTO episodes(key, attempt, task, app, goal, seed, policy, device, phase, round, status, started,"
            " adapter, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
            (key, attempt, task, app, goal, seed, policy, device, phase, round, time.time(),
             None if adapter is None else str(adapter), source),
        )
        return int(cur.lastrowid)

    def add_step(self, episode_id: int, step: int, *, action: Action, screenshot: Image.Image | None, package: str,
                 elements: list[str], element: UiElement | None = None, invalid: bool = False, error: str | None = None,
                 raw_output: str | None = None, seconds: float = 0.0, reward: float | None = None,
                 curiosity: float | None = None, history: Sequence[str] | None = None, tree_xml: str | None = None,
                 token_ids: Sequence[int] | None = None, logprobs: Sequence[float] | None = None) -> None:
        """Record step `step` (0-based) of an episode: the observation before `action`, and the action.

        `history` is the earlier actions as the model wrote them, `tree_xml` the UI tree as
        uiautomator XML (`obs.tree.to_xml()`, stored zlib-compressed), `token_ids` the sampled
        answer tokens and `logprobs` their behaviour log-probs (natural log, one per token).
        """
        self._writable()
        screen = None
        size = None
        if screenshot is not None:
            size = list(screenshot.size)
            if self.screens != "none":
                screen = self._save_screen(screenshot, episode_id, step)
        tree_z = None if tree_xml is None else zlib.compress(_clean(tree_xml).encode("utf-8"))
        self._write(
            f"INSERT OR REPLACE INTO steps({', '.join(_STEP_WRITTEN)}) VALUES ({', '.join('?' * len(_STEP_WRITTEN))})",
            (episode_id, step, json.dumps(to_dict(action), ensure_ascii=False), describe(action), raw_output,
             element_json(element), int(invalid), error, package, screen, len(elements), "\n".join(elements),
             reward, curiosity, seconds, _dumps(None if history is None else list(history)), tree_z, _dumps(size),
             _dumps(None if token_ids is None else [int(t) for t in token_ids]),
             _dumps(None if logprobs is None else [float(x) for x in logprobs])),
        )

    def _save_screen(self, screenshot: Image.Image, episode_id: int, step: int) -> str:
        """Save a step's screenshot (or, with screens="changed", find the same pixels already saved)
        and return its path relative to the run folder."""
        digest = hashlib.blake2b(screenshot.tobytes(), digest_size=16,
                                 person=f"{screenshot.mode}{screenshot.size}"[:16].encode()).digest()
        rel = f"screens/{episode_id}/{step:03d}.png"
        with self._lock:
            # Claimed before the file is written, so workers showing the same screen at the same
            # moment (attempts of one task in lockstep) write it once.
            if self.screens == "changed" and digest in self._saved:
                return self._saved[digest]
            if self._digests.get(rel, digest) != digest:
                # The same step written again with other pixels: never change a file others refer to.
                rel = f"screens/{episode_id}/{step:03d}-{digest.hex()[:8]}.png"
            self._saved.setdefault(digest, rel)
            self._digests[rel] = digest
        path = self.folder / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            screenshot.save(path, format="PNG", compress_level=PNG_LEVEL)
        except BaseException:
            with self._lock:
                if self._saved.get(digest) == rel:
                    del self._saved[digest]
            raise
        return rel

    def disk_bytes(self) -> int:
        """Bytes the run folder holds on disk (database, screenshots, adapters, reports)."""
        total = 0
        for dirpath, _, files in os.walk(self.folder):
            for name in files:
                try:
                    total += os.stat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
        return total

    def add_final(self, episode_id: int, step: int, *, screenshot: Image.Image | None, package: str,
                  tree_xml: str | None = None) -> None:
        """Record the screen after an episode's last action (`step`: the number of steps it took),
        which no step row holds; the same pixels as an earlier screen are stored once, as for steps."""
        self._writable()
        screen = size = None
        if screenshot is not None:
            size = list(screenshot.size)
            if self.screens != "none":
                screen = self._save_screen(screenshot, episode_id, step)
        tree_z = None if tree_xml is None else zlib.compress(_clean(tree_xml).encode("utf-8"))
        self._write("INSERT OR REPLACE INTO finals(episode_id, package, screen, screen_size, tree_z) VALUES (?, ?, ?, ?, ?)",
                    (episode_id, package, screen, _dumps(size), tree_z))

    def load_final(self, episode_id: int, *, compressed: bool = False) -> Observation | None:
        """The screen after the episode's last action, rebuilt like `load_observation`; None where it
        was not stored (a folder written before schema version 4, an unfinished or failed episode)."""
        if self.schema_version < 4:
            return None
        rows = self._read("SELECT package, screen, tree_z FROM finals WHERE episode_id=?", (episode_id,))
        if not rows:
            return None
        package, screen, tree_z = rows[0]
        step = self._read("SELECT steps FROM episodes WHERE id=?", (episode_id,))[0][0] or 0
        return self._rebuild(episode_id, f"the final screen (after step {step - 1})", screen,
                             None if tree_z is None else zlib.decompress(tree_z).decode("utf-8"), package, step,
                             compressed)

    def finish_episode(self, episode_id: int, *, status: str, steps: int, invalid_steps: int = 0,
                       declared: str | None = None, answer: str | None = None, success: float | None = None,
                       verifier_score: float | None = None, reward: float | None = None,
                       curiosity: float | None = None, error: str | None = None, **extra: Any) -> None:
        """Mark an episode finished or infra_error; `extra` may set adapter, source, gate, advantage, verifier_detail."""
        if status not in ("finished", "infra_error"):
            raise RunStoreError(f"episode status must be finished or infra_error, got {status!r}")
        bad = set(extra) - set(_EPISODE_EXTRA)
        if bad:
            raise RunStoreError(f"finish_episode cannot set {sorted(bad)}; extra columns: {list(_EPISODE_EXTRA)}")
        extra = self._episode_values(extra)
        sets = "".join(f", {k}=?" for k in extra)
        self._write(
            "UPDATE episodes SET status=?, steps=?, invalid_steps=?, declared=?, answer=?, success=?, verifier_score=?,"
            f" reward=?, curiosity=?, error=?, ended=?{sets} WHERE id=?",
            (status, steps, invalid_steps, declared, answer, success, verifier_score, reward, curiosity, error,
             time.time(), *extra.values(), episode_id),
        )

    @staticmethod
    def _episode_values(values: dict[str, Any]) -> dict[str, Any]:
        out = dict(values)
        if out.get("gate") is not None and out["gate"] not in GATES:
            raise RunStoreError(f"gate must be one of {', '.join(GATES)} or None, got {out['gate']!r}")
        if "verifier_detail" in out:
            out["verifier_detail"] = _dumps(out["verifier_detail"])
        if out.get("adapter") is not None:
            out["adapter"] = str(out["adapter"])
        return out

    def update_episode(self, episode_id: int, **fields: Any) -> None:
        """Set scores of a stored episode: verifier_score, reward, curiosity, success, gate, advantage, verifier_detail."""
        allowed = {"verifier_score", "reward", "curiosity", "success", "gate", "advantage", "verifier_detail"}
        bad = set(fields) - allowed
        if bad:
            raise RunStoreError(f"cannot update {sorted(bad)}; updatable: {sorted(allowed)}")
        if not fields:
            return
        fields = self._episode_values(fields)
        sets = ", ".join(f"{k}=?" for k in fields)
        self._write(f"UPDATE episodes SET {sets} WHERE id=?", (*fields.values(), episode_id))

    def set_step_scores(self, episode_id: int, step: int, *, reward: float | None, curiosity: float | None) -> None:
        """Set the per-step reward and curiosity of one step."""
        self._write("UPDATE steps SET reward=?, curiosity=? WHERE episode_id=? AND step=?",
                    (reward, curiosity, episode_id, step))

    def set_step_advantages(self, episode_id: int, advantages: Sequence[float], gate: str | None) -> None:
        """Set the advantage of every step of an episode (`advantages[i]` for step i) and the gate,
        on its steps and on the episode; one call per episode, in one transaction."""
        if gate is not None and gate not in GATES:
            raise RunStoreError(f"gate must be one of {', '.join(GATES)} or None, got {gate!r}")
        with self._transaction() as db:
            stored = [r[0] for r in db.execute("SELECT step FROM steps WHERE episode_id=? ORDER BY step", (episode_id,))]
            if stored != list(range(len(advantages))):
                raise RunStoreError(f"episode {episode_id} has {len(stored)} stored steps, got {len(advantages)} "
                                    "advantages (one per step, steps 0..n-1)")
            db.executemany("UPDATE steps SET advantage=?, gate=? WHERE episode_id=? AND step=?",
                           [(float(a), gate, episode_id, i) for i, a in enumerate(advantages)])
            db.execute("UPDATE episodes SET gate=? WHERE id=?", (gate, episode_id))

    def episode(self, episode_id: int) -> EpisodeRow:
        """One stored episode; raises RunStoreError when there is none with this id."""
        rows = self._episode_rows(" AND id = ?", [episode_id])
        if not rows:
            raise RunStoreError(f"{self.folder} has no episode {episode_id}")
        return rows[0]

    def episodes(self, *, phase: str | None = None, status: str | None = None, round: int | None = None) -> list[EpisodeRow]:
        """Stored episodes in id order; each given filter must match (None: any)."""
        q = ""
        args: list[Any] = []
        for col, v in (("phase", phase), ("status", status), ("round", round)):
            if v is not None:
                q += f" AND {col} = ?"
                args.append(v)
        return self._episode_rows(q, args)

    def _episode_rows(self, where: str, args: Sequence[Any]) -> list[EpisodeRow]:
        q = f"SELECT {self._select('episodes', _EPISODE_COLUMNS)} FROM episodes WHERE 1=1{where} ORDER BY id"
        rows = self._read(q, args)
        out = []
        for r in rows:
            values = dict(zip(_EPISODE_COLUMNS, r))
            values["verifier_detail"] = _loads(values["verifier_detail"])
            out.append(EpisodeRow(**values))
        return out

    def finished_keys(self, phase: str = "eval", round: int | None = None) -> dict[tuple[str, int], int]:
        """(instance key, attempt) -> episode id, for finished episodes of `phase` and `round`
        (round None: episodes without a round, as evaluation writes them); to resume."""
        rows = self._read("SELECT key, attempt, id FROM episodes WHERE status='finished' AND phase=? AND round IS ?",
                          (phase, round))
        return {(k, a): i for k, a, i in rows}

    def discard_unfinished(self, phase: str | None = None, round: int | None = None) -> int:
        """Drop episodes left 'running' by a killed run (they are rerun), with their steps and
        verdicts; returns how many. With a phase, only that phase and exactly `round` (None:
        episodes without a round); without one, `round` None means every round."""
        q = "SELECT id FROM episodes WHERE status='running'"
        args: list[Any] = []
        if phase is not None:
            q += " AND phase=? AND round IS ?"
            args += [phase, round]
        elif round is not None:
            q += " AND round=?"
            args.append(round)
        with self._transaction() as db:
            ids = [r[0] for r in db.execute(q, args).fetchall()]
            for i in ids:
                db.execute("DELETE FROM steps WHERE episode_id=?", (i,))
                db.execute("DELETE FROM verdicts WHERE episode_id=?", (i,))
                db.execute("DELETE FROM finals WHERE episode_id=?", (i,))
                db.execute("DELETE FROM episodes WHERE id=?", (i,))
        return len(ids)

    def overview(self) -> dict[str, Any]:
        """Counts and times without reading every row: episodes by phase and status, mean success
        of scored episodes per phase, first start and last end (unix seconds)."""
        rows = self._read("SELECT phase, status, COUNT(*), AVG(success), COUNT(success), MIN(started), "
                          "MAX(COALESCE(ended, started)) FROM episodes GROUP BY phase, status")
        out: dict[str, Any] = {"episodes": 0, "by_phase": {}, "started": None, "ended": None}
        for phase, status, n, mean, scored, started, ended in rows:
            ph = out["by_phase"].setdefault(phase, {"episodes": 0, "running": 0, "scored": 0, "success_sum": 0.0})
            ph["episodes"] += n
            ph["running"] += n if status == "running" else 0
            ph["scored"] += scored
            ph["success_sum"] += (mean or 0.0) * scored
            out["episodes"] += n
            out["started"] = started if out["started"] is None else min(out["started"], started)
            out["ended"] = ended if out["ended"] is None else max(out["ended"], ended)
        for ph in out["by_phase"].values():
            ph["success_rate"] = ph["success_sum"] / ph["scored"] if ph["scored"] else None
            del ph["success_sum"]
        return out

    # ------------------------------------------------------------------ steps

    def last_step(self, episode_id: int) -> dict[str, Any] | None:
        """The latest stored step of an episode, decoded as in `steps`, or None before its first."""
        rows = self._read(f"SELECT {self._select('steps', _STEP_COLUMNS)} FROM steps WHERE episode_id=? "
                          "ORDER BY step DESC LIMIT 1", (episode_id,))
        return self._decode_step(rows[0]) if rows else None


    def steps(self, episode_id: int) -> list[dict[str, Any]]:
        """The steps of an episode in order, one dict per step, column name -> value.

        JSON columns are decoded (`action` and `element` dicts, `history`, `screen_size`,
        `token_ids`, `logprobs` lists), `elements` is the newline-joined element list, and
        `tree_z` is replaced by `tree_xml` (the decompressed XML, or None).
        """
        rows = self._read(f"SELECT {self._select('steps', _STEP_COLUMNS)} FROM steps WHERE episode_id=? ORDER BY step",
                          (episode_id,))
        return [self._decode_step(r) for r in rows]

    def step_record(self, episode_id: int, step: int) -> dict[str, Any]:
        """One step, decoded as in `steps`; raises RunStoreError when it is not stored."""
        rows = self._read(f"SELECT {self._select('steps', _STEP_COLUMNS)} FROM steps WHERE episode_id=? AND step=?",
                          (episode_id, step))
        if not rows:
            raise RunStoreError(f"{self.folder}: episode {episode_id} has no step {step}")
        return self._decode_step(rows[0])

    @staticmethod
    def _decode_step(row: tuple) -> dict[str, Any]:
        rec = dict(zip(_STEP_COLUMNS, row))
        for k in _STEP_JSON:
            rec[k] = _loads(rec[k])
        tree_z = rec.pop("tree_z")
        rec["tree_xml"] = None if tree_z is None else zlib.decompress(tree_z).decode("utf-8")
        return rec

    def load_observation(self, episode_id: int, step: int, *, compressed: bool = False) -> Observation:
        """Rebuild the observation the agent saw before `step` from the saved screenshot and UI tree;
        `compressed` keeps the screenshot as the stored PNG, decoded only when pixels are asked for."""
        rec = self.step_record(episode_id, step)
        return self._rebuild(episode_id, f"step {step}", rec["screen"], rec["tree_xml"], rec["package"], step, compressed)

    def _rebuild(self, episode_id: int, what: str, screen: str | None, tree_xml: str | None, package: str | None,
                 step: int, compressed: bool) -> Observation:
        if screen is None or tree_xml is None:
            missing = " and ".join(n for n, v in (("screenshot", screen), ("UI tree", tree_xml)) if v is None)
            raise RunStoreError(f"{self.folder}: episode {episode_id} {what} was stored without its {missing}")
        path = self.folder / screen
        try:
            data = path.read_bytes()
            image = png_screenshot(data) if compressed else None
            if image is None or image.mode != "RGB":
                with Image.open(io.BytesIO(data)) as im:
                    image = im.convert("RGB")
            tree = parse_xml(tree_xml)
        except (OSError, UiTreeError) as e:
            raise RunStoreError(f"cannot rebuild episode {episode_id} {what} from {path}: {e}") from e
        return Observation.build(image, tree, package or "", step)

    # ------------------------------------------------------------------ verdicts

    def add_verdicts(self, episode_id: int,
                     votes: Sequence[tuple[str, int, float, str | None] | tuple[str, int, float]]) -> None:
        """Store the verifier's votes (judge, sample, vote in [0, 1], detail) for an episode,
        replacing any stored before; the detail may be left off (None)."""
        rows = []
        for vote in votes:
            judge, sample, p, *detail = vote
            rows.append((episode_id, _clean(judge), int(sample), float(p), _clean(detail[0] if detail else None)))
        with self._transaction() as db:
            db.execute("DELETE FROM verdicts WHERE episode_id=?", (episode_id,))
            db.executemany("INSERT INTO verdicts(episode_id, judge, sample, vote, detail) VALUES (?,?,?,?,?)", rows)

    def verdicts(self, episode_id: int) -> list[dict[str, Any]]:
        """The votes stored for an episode, in the order given: dicts with judge, sample, vote, detail."""
        if "verdicts" not in self._cols:
            return []
        rows = self._read("SELECT judge, sample, vote, detail FROM verdicts WHERE episode_id=? ORDER BY rowid",
                          (episode_id,))
        return [{"judge": j, "sample": s, "vote": v, "detail": d} for j, s, v, d in rows]

    # ------------------------------------------------------------------ rounds

    def start_round(self, phase: str, round: int) -> None:
        """Mark a round of `phase` running (again, if a killed run had started it)."""
        self._write("INSERT OR REPLACE INTO rounds(phase, round, status, started) VALUES (?, ?, 'running', ?)",
                    (phase, round, time.time()))

    def finish_round(self, phase: str, round: int, *, status: str, adapter: str | Path | None = None,
                     metrics: dict[str, Any] | None = None, kept: bool | None = None) -> None:
        """End a started round as finished or rolled_back, with its adapter checkpoint (stored
        relative to the run folder), metrics (JSON-able) and whether the update was kept."""
        if status not in _ROUND_STATUS[1:]:
            raise RunStoreError(f"round status must be finished or rolled_back, got {status!r}")
        rel = None if adapter is None else self._relative(Path(adapter)).as_posix()
        cur = self._write("UPDATE rounds SET status=?, adapter=?, metrics=?, kept=?, ended=? WHERE phase=? AND round=?",
                          (status, rel, _dumps(metrics), None if kept is None else int(kept), time.time(), phase, round))
        if cur.rowcount == 0:
            raise RunStoreError(f"{self.folder}: round {round} of {phase} was never started (call start_round first)")

    def _relative(self, p: Path) -> Path:
        """`p` relative to the run folder when it lies inside it (as given, absolute or resolved), else `p`."""
        for base in (self.folder, self.folder.absolute(), self.folder.resolve()):
            if p.is_absolute() == base.is_absolute() and p.is_relative_to(base):
                return p.relative_to(base)
        return p

    def rounds(self, phase: str | None = None) -> list[RoundRow]:
        """Stored rounds, by phase then round number."""
        if "rounds" not in self._cols:
            return []
        q = f"SELECT {self._select('rounds', _ROUND_COLUMNS)} FROM rounds"
        if phase is not None:
            q += " WHERE phase=?"
        rows = self._read(q + " ORDER BY phase, round", () if phase is None else (phase,))
        out = []
        for r in rows:
            values = dict(zip(_ROUND_COLUMNS, r))
            values["metrics"] = _loads(values["metrics"])
            values["kept"] = None if values["kept"] is None else bool(values["kept"])
            out.append(RoundRow(**values))
        return out

    def last_finished_round(self, phase: str) -> int | None:
        """The highest round of `phase` that ended (finished or rolled back), or None; resume after it."""
        if "rounds" not in self._cols:
            return None
        rows = self._read("SELECT MAX(round) FROM rounds WHERE phase=? AND status IN ('finished', 'rolled_back')",
                          (phase,))
        return rows[0][0]

    # ------------------------------------------------------------------ metrics

    def log_metric(self, name: str, step: int, value: float) -> None:
        """Log one scalar of a training curve."""
        self._write("INSERT INTO metrics(name, step, value, time) VALUES (?,?,?,?)", (name, step, float(value), time.time()))

    def metrics(self, name: str | None = None) -> Iterator[tuple[str, int, float]]:
        """(name, step, value) rows, by name then step; only `name`'s when given."""
        if name is None:
            rows = self._read("SELECT name, step, value FROM metrics ORDER BY name, step")
        else:
            rows = self._read("SELECT name, step, value FROM metrics WHERE name=? ORDER BY step", (name,))
        return iter(rows)


def lock_holder(folder: str | Path) -> dict[str, Any] | None:
    """Who last took the folder's write lock ({pid, host, started}), as written in `.lock`; None
    when unknown. It says nothing about whether that process still holds it: see `is_locked`."""
    try:
        holder = json.loads((Path(folder) / ".lock").read_text())
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) and "pid" in holder else None


def is_locked(folder: str | Path) -> bool | None:
    """Whether a live process holds the folder's write lock, found without taking it (a viewer must
    never block a writer): from /proc/locks where the OS has it, else whether the recorded holder's
    process is alive on this host. None when it cannot be told (holder on another host)."""
    path = Path(folder) / ".lock"
    try:
        st = path.stat()
    except OSError:
        return False
    try:
        locks = Path("/proc/locks").read_text()
    except OSError:
        locks = None
    if locks is not None:
        dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        return any(dev in line.split() for line in locks.splitlines())
    holder = lock_holder(folder)
    if holder is None:
        return False
    if holder.get("host") != socket.gethostname():
        return None
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError):
        return True
    return True


def list_runs(root: str | Path) -> list[Path]:
    """Run folders under `root` (any depth up to 2), newest first."""
    root = Path(root)
    if not root.exists():
        return []
    found = {p.parent for p in root.glob("run.db")} | {p.parent for p in root.glob("*/run.db")} | {p.parent for p in root.glob("*/*/run.db")}
    return sorted(found, key=lambda p: (p / "run.db").stat().st_mtime, reverse=True)
