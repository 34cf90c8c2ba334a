"""The run store: every public method, v1 migration, read-only opens, the writer lock, bad files."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PIL import Image

import coadapt.runs as runs
from coadapt.android_env.actions import Back, Done, Tap, Type
from coadapt.android_env.observation import Observation
from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.evaluation import build_report
from coadapt.runs import (GATES, SCHEMA_VERSION, SCREENS, EpisodeRow, RoundRow, RunStore, RunStoreError, is_locked, list_runs,
                          lock_holder)
from coadapt.tasks.suite import Suite

V1 = Path(__file__).parent / "fixtures" / "run_v1"
EP = dict(task="NotesAddNote", app="com.example.notes", goal="Add a note called Milk", seed=7, policy="tiny",
          device="sim-0")


@pytest.fixture(scope="module")
def obs() -> Observation:
    """A real observation of the notes app."""
    dev = SimDevice(make_apps())
    dev.reset(0)
    dev.launch("com.example.notes")
    return Observation.build(dev.screenshot(), dev.ui_tree(), dev.current_package(), 0)


@pytest.fixture
def v1(tmp_path) -> Path:
    """A copy of the version-1 run folder (written by the store before versioning)."""
    return Path(shutil.copytree(V1, tmp_path / "v1"))


def _episode(store: RunStore, key: str = "NotesAddNote#0", attempt: int = 0, **kw) -> int:
    return store.start_episode(key=key, attempt=attempt, **{**EP, **kw})


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted(folder.rglob("*"))}


def _columns(db: Path) -> dict[str, list[str]]:
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")] for t in tables}
    finally:
        con.close()


def _finished_run(folder: Path, obs: Observation) -> None:
    """A small finished run with every kind of row, closed."""
    with RunStore(folder) as store:
        store.set_meta("eval", {"suite": "small"})
        store.write_json("config.json", {"kind": "adapt"})
        store.start_round("adapt", 0)
        e = _episode(store, phase="adapt", round=0, adapter="adapters/r0", source="suite")
        store.add_step(e, 0, action=Tap(index=1), screenshot=obs.screenshot, package=obs.package,
                       elements=obs.describe_elements(), tree_xml=obs.tree.to_xml(), history=[], token_ids=[1, 2],
                       logprobs=[-0.5, -0.25])
        store.finish_episode(e, status="finished", steps=1, declared="done")
        store.add_verdicts(e, [("vlm", 0, 1.0, "looks done")])
        store.log_metric("loss", 0, 1.0)
        store.finish_round("adapt", 0, status="finished", adapter=folder / "adapters" / "r0", metrics={"loss": 1.0},
                           kept=True)


# ------------------------------------------------------------------ a fresh store, method by method


def test_fresh_store_meta_json_and_list_runs(tmp_path):
    store = RunStore(tmp_path / "a" / "run")
    assert store.schema_version == SCHEMA_VERSION and store.get_meta("schema_version") == SCHEMA_VERSION
    assert store.get_meta("missing", 42) == 42
    store.set_meta("eval", {"suite": "small", "k": 2})
    assert store.get_meta("eval") == {"suite": "small", "k": 2}
    path = store.write_json("report.json", {"rate": 0.5, "when": Path("x")})
    assert json.loads(path.read_text()) == {"rate": 0.5, "when": "x"}
    assert not list((tmp_path / "a" / "run").glob("*.tmp"))
    assert list_runs(tmp_path) == [tmp_path / "a" / "run"] and list_runs(tmp_path / "nowhere") == []
    store.close()
    store.close()  # twice is fine


def test_episode_lifecycle_and_new_columns(tmp_path, obs):
    store = RunStore(tmp_path / "run")
    e = _episode(store, phase="adapt", round=2, adapter=Path("adapters/r1"), source="proposed")
    xml = obs.tree.to_xml()
    store.add_step(e, 0, action=Tap(index=1), screenshot=obs.screenshot, package=obs.package,
                   elements=obs.describe_elements(), element=obs.elements[1], raw_output='tap "Add"',
                   history=[], tree_xml=xml, token_ids=[5, 9, 2], logprobs=[-0.1, -2.5, -0.01], seconds=0.5)
    store.add_step(e, 1, action=Done(), screenshot=None, package=obs.package, elements=[], history=['tap "Add"'])
    store.finish_episode(e, status="finished", steps=2, declared="done", verifier_score=0.9, gate="accepted_positive",
                         verifier_detail={"votes": [1, 1, 0]})
    (row,) = store.episodes()
    assert isinstance(row, EpisodeRow) and store.episode(e) == row
    with pytest.raises(RunStoreError, match="no episode 99"):
        store.episode(99)
    assert (row.round, row.adapter, row.source, row.gate) == (2, "adapters/r1", "proposed", "accepted_positive")
    assert row.verifier_detail == {"votes": [1, 1, 0]} and row.verifier_score == 0.9 and row.ended >= row.started

    store.update_episode(e, advantage=0.75, reward=1.0, curiosity=0.1, success=None, gate="dropped_uncertain",
                         verifier_detail=None, verifier_score=0.5)
    store.update_episode(e)  # nothing to set
    row = store.episodes()[0]
    assert (row.advantage, row.reward, row.gate, row.verifier_detail, row.verifier_score) == \
        (0.75, 1.0, "dropped_uncertain", None, 0.5)
    with pytest.raises(RunStoreError, match="updatable"):
        store.update_episode(e, goal="other")
    with pytest.raises(RunStoreError, match="accepted_positive"):
        store.update_episode(e, gate="maybe")
    with pytest.raises(RunStoreError, match="extra columns"):
        store.finish_episode(e, status="finished", steps=2, round=3)
    with pytest.raises(RunStoreError, match="finished or infra_error"):
        store.finish_episode(e, status="running", steps=2)

    s0, s1 = store.steps(e)
    assert s0["action"] == {"action_type": "click", "index": 1} and s0["action_text"] == "tap(1)"
    assert s0["history"] == [] and s1["history"] == ['tap "Add"']
    assert s0["tree_xml"] == xml and s1["tree_xml"] is None
    assert s0["token_ids"] == [5, 9, 2] and s0["logprobs"] == [-0.1, -2.5, -0.01]
    assert s0["screen_size"] == list(obs.size) and s1["screen_size"] is None
    assert s0["element"]["bounds"] and s0["elements"].splitlines() == obs.describe_elements()
    assert (tmp_path / "run" / s0["screen"]).exists() and "tree_z" not in s0
    assert store.step_record(e, 1) == s1
    with pytest.raises(RunStoreError, match="no step 5"):
        store.step_record(e, 5)

    store.set_step_scores(e, 1, reward=0.5, curiosity=-0.1)
    assert (store.step_record(e, 1)["reward"], store.step_record(e, 1)["curiosity"]) == (0.5, -0.1)
    store.set_step_advantages(e, [0.25, -1.0], "accepted_negative")
    assert [(s["advantage"], s["gate"]) for s in store.steps(e)] == [(0.25, "accepted_negative"), (-1.0, "accepted_negative")]
    assert store.episodes()[0].gate == "accepted_negative"
    with pytest.raises(RunStoreError, match="2 stored steps, got 3"):
        store.set_step_advantages(e, [0.0, 0.0, 0.0], None)
    with pytest.raises(RunStoreError, match="gate must be one of"):
        store.set_step_advantages(e, [0.0, 0.0], "kept")
    assert set(GATES) >= {"accepted_positive", "dropped_flat_group"}
    store.close()


def test_episode_filters(tmp_path):
    store = RunStore(tmp_path / "run", screens="none")
    a = _episode(store)
    b = _episode(store, phase="adapt", round=1)
    store.finish_episode(b, status="infra_error", steps=0, error="offline")
    assert [r.id for r in store.episodes(phase="eval")] == [a]
    assert [r.id for r in store.episodes(round=1)] == [b]
    assert [r.id for r in store.episodes(status="infra_error")] == [b]
    assert [r.id for r in store.episodes()] == [a, b]
    store.close()


def test_load_observation_rebuilds_what_the_agent_saw(tmp_path, obs):
    store = RunStore(tmp_path / "run")
    e = _episode(store)
    store.add_step(e, 0, action=Tap(index=0), screenshot=obs.screenshot, package=obs.package,
                   elements=obs.describe_elements(), tree_xml=obs.tree.to_xml())
    store.add_step(e, 1, action=Back(), screenshot=obs.screenshot, package=obs.package, elements=[])
    back = store.load_observation(e, 0)
    assert back.describe_elements() == obs.describe_elements()
    assert back.size == obs.size and back.package == obs.package and back.step == 0
    with pytest.raises(RunStoreError, match="without its UI tree"):
        store.load_observation(e, 1)
    unsaved = RunStore(tmp_path / "noscreens", screens="none")
    e2 = _episode(unsaved)
    unsaved.add_step(e2, 0, action=Back(), screenshot=obs.screenshot, package=obs.package, elements=[],
                     tree_xml=obs.tree.to_xml())
    with pytest.raises(RunStoreError, match="without its screenshot"):
        unsaved.load_observation(e2, 0)
    (tmp_path / "run" / store.step_record(e, 0)["screen"]).unlink()
    with pytest.raises(RunStoreError, match="cannot rebuild"):
        store.load_observation(e, 0)
    store.close()
    unsaved.close()


def test_verdicts_replace_earlier_ones(tmp_path):
    store = RunStore(tmp_path / "run")
    e = _episode(store)
    store.add_verdicts(e, [("vlm", 0, 1.0, "done"), ("vlm", 1, 0.0, None)])
    store.add_verdicts(e, [("entities", 0, 0.5), ("vlm", 0, 1.0, "yes")])
    assert store.verdicts(e) == [{"judge": "entities", "sample": 0, "vote": 0.5, "detail": None},
                                 {"judge": "vlm", "sample": 0, "vote": 1.0, "detail": "yes"}]
    assert store.verdicts(e + 1) == []
    store.close()


def test_rounds(tmp_path):
    folder = tmp_path / "run"
    store = RunStore(folder)
    assert store.rounds() == [] and store.last_finished_round("adapt") is None
    store.start_round("adapt", 0)
    store.finish_round("adapt", 0, status="finished", adapter=folder.absolute() / "adapters" / "r0",
                       metrics={"loss": 0.5}, kept=True)
    store.start_round("adapt", 1)
    store.finish_round("adapt", 1, status="rolled_back", adapter="adapters/r1", kept=False)
    store.start_round("adapt", 2)
    store.start_round("explore", 0)
    r0, r1, r2 = store.rounds("adapt")
    assert isinstance(r0, RoundRow)
    assert (r0.status, r0.adapter, r0.metrics, r0.kept) == ("finished", "adapters/r0", {"loss": 0.5}, True)
    assert (r1.status, r1.adapter, r1.kept, r1.metrics) == ("rolled_back", "adapters/r1", False, None)
    assert (r2.status, r2.ended, r2.kept) == ("running", None, None)
    assert [(r.phase, r.round) for r in store.rounds()] == [("adapt", 0), ("adapt", 1), ("adapt", 2), ("explore", 0)]
    assert store.last_finished_round("adapt") == 1 and store.last_finished_round("explore") is None
    with pytest.raises(RunStoreError, match="never started"):
        store.finish_round("adapt", 7, status="finished")
    with pytest.raises(RunStoreError, match="finished or rolled_back"):
        store.finish_round("adapt", 2, status="running")
    store.close()


def test_metrics(tmp_path):
    store = RunStore(tmp_path / "run")
    store.log_metric("loss", 1, 0.5)
    store.log_metric("loss", 0, 1)
    store.log_metric("kl", 0, 0.01)
    assert list(store.metrics()) == [("kl", 0, 0.01), ("loss", 0, 1.0), ("loss", 1, 0.5)]
    assert list(store.metrics("loss")) == [("loss", 0, 1.0), ("loss", 1, 0.5)]
    store.close()


# ------------------------------------------------------------------ resume


def test_resume_is_keyed_by_phase_round_key_attempt(tmp_path):
    store = RunStore(tmp_path / "run", screens="none")
    ids = {}
    for phase, rnd in (("eval", None), ("adapt", 0), ("adapt", 1)):
        done = _episode(store, phase=phase, round=rnd)
        store.add_step(done, 0, action=Back(), screenshot=None, package="p", elements=[])
        store.finish_episode(done, status="finished", steps=1)
        running = _episode(store, attempt=1, phase=phase, round=rnd)
        store.add_step(running, 0, action=Back(), screenshot=None, package="p", elements=[])
        store.add_verdicts(running, [("vlm", 0, 1.0, None)])
        ids[phase, rnd] = done, running
    assert store.finished_keys() == {("NotesAddNote#0", 0): ids["eval", None][0]}
    assert store.finished_keys("eval") == store.finished_keys(phase="eval", round=None)
    assert store.finished_keys("adapt", 1) == {("NotesAddNote#0", 0): ids["adapt", 1][0]}
    assert store.finished_keys("adapt") == {}  # round None matches only episodes without a round

    assert store.discard_unfinished("adapt", round=1) == 1
    assert store.discard_unfinished("eval") == 1  # the old call form: eval episodes have no round
    assert {r.id for r in store.episodes(status="running")} == {ids["adapt", 0][1]}
    assert store.steps(ids["adapt", 1][1]) == [] and store.verdicts(ids["adapt", 1][1]) == []
    assert store.discard_unfinished(round=0) == 1
    again = _episode(store, phase="explore", round=3)
    assert store.discard_unfinished() == 1 and again not in {r.id for r in store.episodes()}
    store.close()


# ------------------------------------------------------------------ versions and migration


def test_v1_folder_is_migrated_in_place_and_resumes(v1):
    before = _columns(v1 / "run.db")
    assert "adapter" not in before["episodes"] and "rounds" not in before  # really a version-1 folder
    with RunStore(v1) as store:
        assert store.get_meta("schema_version") == SCHEMA_VERSION == store.schema_version == 4
        assert store.episodes()[0].wandering is None  # a column of version 3, empty for old episodes
        assert store.get_meta("eval")["suite"] == "small"
        assert store.discard_unfinished("eval") == 1
        assert store.finished_keys("eval") == {("NotesAddNote#0", 0): 1, ("NotesAddNote#1", 0): 2}
        assert [s["action_text"] for s in store.steps(1)] == ["tap(1)", "done()"]
        assert store.steps(1)[0]["history"] is None and store.episodes()[0].adapter is None
        e = _episode(store, key="NotesAddNote#1", attempt=1, source="suite")
        store.add_step(e, 0, action=Back(), screenshot=None, package="p", elements=[], token_ids=[1])
        store.finish_episode(e, status="finished", steps=1, success=1.0)
        store.start_round("eval", 0)
        suite = Suite.from_dict({"name": "small", "seed": 5, "instances_per_task": 2, "tasks": ["NotesAddNote"]})
        report = build_report(store, [spec.key for spec in suite.instances()], "oracle", k=2)
        assert report["n_episodes"] == 2 and report["success_rate"] == 0.5
    fresh = RunStore(v1.parent / "fresh")
    fresh.close()
    migrated, created = _columns(v1 / "run.db"), _columns(v1.parent / "fresh" / "run.db")
    assert migrated == created  # a migrated folder is laid out exactly like a new one
    with RunStore(v1) as again:  # already at the current version: opens without migrating
        assert list(again.metrics("loss")) == [("loss", 0, 1.5), ("loss", 1, 1.25)]


def test_failed_migration_leaves_the_folder_at_version_1(v1, monkeypatch):
    bad = (*runs.MIGRATIONS[2], "ALTER TABLE nowhere ADD COLUMN x TEXT")
    monkeypatch.setitem(runs.MIGRATIONS, 2, bad)
    with pytest.raises(RunStoreError, match=f"cannot migrate .* from version 1 to {SCHEMA_VERSION}"):
        RunStore(v1)
    assert "adapter" not in _columns(v1 / "run.db")["episodes"]
    monkeypatch.undo()
    with RunStore(v1) as store:  # the lock was released; a good migration now succeeds
        assert store.schema_version == SCHEMA_VERSION


def test_newer_schema_is_refused(tmp_path):
    RunStore(tmp_path / "run").close()
    con = sqlite3.connect(tmp_path / "run" / "run.db")
    con.execute(f"UPDATE meta SET value='{SCHEMA_VERSION + 1}' WHERE key='schema_version'")
    con.commit()
    con.close()
    with pytest.raises(RunStoreError, match=f"version {SCHEMA_VERSION + 1}, newer than"):
        RunStore(tmp_path / "run")
    with pytest.raises(RunStoreError, match="upgrade coadapt"):
        RunStore.open_readonly(tmp_path / "run")
    con = sqlite3.connect(tmp_path / "run" / "run.db")
    con.execute(f"UPDATE meta SET value='{SCHEMA_VERSION}' WHERE key='schema_version'")
    con.commit()
    con.close()
    RunStore(tmp_path / "run").close()


def test_rows_are_read_by_column_name(tmp_path):
    store = RunStore(tmp_path / "run", screens="none")
    e = _episode(store)
    store.add_step(e, 0, action=Back(), screenshot=None, package="p", elements=[])
    con = sqlite3.connect(tmp_path / "run" / "run.db")
    con.execute("ALTER TABLE episodes ADD COLUMN future TEXT")  # a later version's column
    con.execute("ALTER TABLE steps ADD COLUMN future TEXT")
    con.commit()
    con.close()
    assert store.episodes()[0].key == "NotesAddNote#0" and store.steps(e)[0]["action_text"] == "back()"
    store.close()


# ------------------------------------------------------------------ read-only


def test_read_only_v1_folder_reads_without_migrating(v1):
    before = _snapshot(v1)
    with RunStore.open_readonly(v1) as store:
        assert store.readonly and store.schema_version == 1
        rows = store.episodes()
        assert [r.status for r in rows] == ["finished", "finished", "running"]
        assert (rows[0].adapter, rows[0].gate, rows[0].verifier_detail) == (None, None, None)
        step = store.step_record(1, 0)
        assert step["tree_xml"] is None and step["token_ids"] is None and step["screen"] == "screens/1/000.png"
        assert store.rounds() == [] and store.verdicts(1) == [] and store.last_finished_round("adapt") is None
        assert store.finished_keys() == {("NotesAddNote#0", 0): 1, ("NotesAddNote#1", 0): 2}
        assert store.get_meta("schema_version") is None
    assert _snapshot(v1) == before


def test_read_only_writes_nothing(tmp_path, obs):
    folder = tmp_path / "run"
    _finished_run(folder, obs)
    before = _snapshot(folder)
    modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")]}
    for p in modes:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        store = RunStore.open_readonly(folder)
        (e,) = store.episodes()
        assert (e.adapter, e.source, e.round) == ("adapters/r0", "suite", 0)
        assert store.steps(e.id)[0]["logprobs"] == [-0.5, -0.25]
        assert store.load_observation(e.id, 0).describe_elements() == obs.describe_elements()
        assert list(store.metrics()) == [("loss", 0, 1.0)]
        assert [(r.round, r.adapter, r.kept) for r in store.rounds()] == [(0, "adapters/r0", True)]
        assert store.last_finished_round("adapt") == 0 and store.verdicts(e.id)[0]["detail"] == "looks done"
        assert store.get_meta("eval") == {"suite": "small"}
        writes = [
            lambda: store.set_meta("x", 1),
            lambda: store.write_json("x.json", {}),
            lambda: _episode(store),
            lambda: store.add_step(e.id, 1, action=Back(), screenshot=obs.screenshot, package="p", elements=[]),
            lambda: store.finish_episode(e.id, status="finished", steps=1),
            lambda: store.update_episode(e.id, reward=1.0),
            lambda: store.set_step_scores(e.id, 0, reward=1.0, curiosity=None),
            lambda: store.set_step_advantages(e.id, [1.0], None),
            lambda: store.discard_unfinished(),
            lambda: store.add_verdicts(e.id, []),
            lambda: store.start_round("adapt", 1),
            lambda: store.finish_round("adapt", 0, status="finished"),
            lambda: store.log_metric("loss", 1, 0.0),
        ]
        for write in writes:
            with pytest.raises(RunStoreError, match="read-only"):
                write()
        store.close()
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert _snapshot(folder) == before
    assert not list(folder.glob("run.db-*")) and not (folder / "x.json").exists()


def test_read_only_open_of_a_live_run_sees_new_rows(tmp_path):
    folder = tmp_path / "run"
    writer = RunStore(folder, screens="none")
    first = _episode(writer)
    viewer = RunStore(folder, readonly=True)  # a live writer: mode=ro through its WAL
    assert [r.id for r in viewer.episodes()] == [first]
    second = _episode(writer, attempt=1)
    writer.add_step(second, 0, action=Back(), screenshot=None, package="p", elements=[])
    assert [r.id for r in viewer.episodes()] == [first, second] and len(viewer.steps(second)) == 1
    writer.close()
    viewer.close()


def test_viewer_opened_before_a_resume_sees_its_rows(tmp_path):
    folder = tmp_path / "run"
    RunStore(folder).close()
    viewer = RunStore.open_readonly(folder)  # nobody writing: immutable
    assert viewer.episodes() == []
    with RunStore(folder, screens="none") as writer:
        _episode(writer)
        assert len(viewer.episodes()) == 1
        _episode(writer, attempt=1)
        assert len(viewer.episodes()) == 2
    viewer.close()
    RunStore(folder).close()  # the last connection to close checkpoints and removes the WAL
    viewer = RunStore.open_readonly(folder)
    with RunStore(folder, screens="none") as writer:  # a whole session while the viewer looks away
        _episode(writer, attempt=2)
    assert not list(folder.glob("run.db-*"))
    assert len(viewer.episodes()) == 3
    viewer.close()


def test_read_only_falls_back_to_immutable_when_mode_ro_fails(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    writer = RunStore(folder, screens="none")
    _episode(writer)
    writer._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    real = sqlite3.connect

    def connect(target, *a, **kw):  # as in a read-only folder whose -shm cannot be opened
        if "mode=ro" in str(target):
            raise sqlite3.OperationalError("unable to open database file")
        return real(target, *a, **kw)

    monkeypatch.setattr(runs.sqlite3, "connect", connect)
    viewer = RunStore.open_readonly(folder)
    assert len(viewer.episodes()) == 1
    viewer.close()
    writer.close()


def test_read_only_needs_an_existing_run(tmp_path):
    with pytest.raises(RunStoreError, match="no run.db"):
        RunStore.open_readonly(tmp_path / "nothing")
    with pytest.raises(RunStoreError, match="no run.db"):
        RunStore(tmp_path / "nothing", create=False)
    assert not (tmp_path / "nothing").exists()


# ------------------------------------------------------------------ one writer, bad files, bad text


def test_one_writer_per_folder(tmp_path):
    folder = tmp_path / "run"
    store = RunStore(folder)
    with pytest.raises(RunStoreError, match=f"process {os.getpid()} on .* is writing {folder}"):
        RunStore(folder)
    assert is_locked(folder) is True and lock_holder(folder)["pid"] == os.getpid()
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            RunStore(folder)
        except RunStoreError as e:
            errors.append(e)

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert len(errors) == 1 and str(folder) in str(errors[0])
    RunStore.open_readonly(folder).close()  # viewers take no lock
    code = f"from coadapt.runs import RunStore; RunStore({str(folder)!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and f"process {os.getpid()} on" in proc.stderr and "is writing" in proc.stderr
    store.close()
    assert is_locked(folder) is False  # released; the record of the last holder stays
    with RunStore(folder):
        pass
    RunStore(folder).close()  # __exit__ released it


def test_corrupt_database_is_a_one_line_error(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.db").write_bytes(b"this is not sqlite at all\n" * 200)
    for open_ in (RunStore, RunStore.open_readonly):
        with pytest.raises(RunStoreError) as info:
            open_(folder)
        msg = str(info.value)
        assert str(folder / "run.db") in msg and "\n" not in msg and isinstance(info.value.__cause__, sqlite3.DatabaseError)
    (folder / "run.db").unlink()
    RunStore(folder).close()  # the failed open released the lock


def test_a_file_is_not_a_run_folder(tmp_path):
    path = tmp_path / "report.txt"
    path.write_text("hello")
    for open_ in (RunStore, RunStore.open_readonly):
        with pytest.raises(RunStoreError, match="is a file, not a run folder"):
            open_(path)


def test_lone_surrogates_are_stored_replaced(tmp_path, obs):
    bad = "caf\ud83d"
    store = RunStore(tmp_path / "run", screens="none")
    e = _episode(store, goal=bad, source=bad)
    store.add_step(e, 0, action=Type(text=bad), screenshot=None, package="p", elements=[bad], raw_output=bad,
                   history=[bad], tree_xml=obs.tree.to_xml().replace("Notes", bad, 1), error=bad)
    store.finish_episode(e, status="finished", steps=1, answer=bad, verifier_detail={"why": bad})
    store.add_verdicts(e, [(bad, 0, 1.0, bad)])
    store.set_meta(bad, bad)
    store.write_json("report.json", {"answer": bad})
    row = store.episodes()[0]
    step = store.steps(e)[0]
    assert row.goal == row.answer == row.source == "caf?" and row.verifier_detail == {"why": "caf?"}
    assert step["raw_output"] == step["elements"] == step["error"] == "caf?" and step["history"] == ["caf?"]
    assert step["action"]["text"] == "caf?" and step["action_text"].count("caf?") == 1
    assert store.verdicts(e)[0]["detail"] == "caf?" and store.get_meta("caf?") == "caf?"
    assert "caf?" in (tmp_path / "run" / "report.json").read_text()
    store.close()


def test_fresh_folder_is_readable_without_coadapt(tmp_path):
    with RunStore(tmp_path / "run", screens="none") as store:
        e = _episode(store)
        store.add_step(e, 0, action=Back(), screenshot=None, package="p", elements=[], tree_xml="<hierarchy/>")
    con = sqlite3.connect(tmp_path / "run" / "run.db")
    (blob,) = con.execute("SELECT tree_z FROM steps").fetchone()
    con.close()
    import zlib

    assert zlib.decompress(blob).decode() == "<hierarchy/>"
    assert os.path.exists(tmp_path / "run" / ".lock")


def test_identical_screens_are_stored_once_and_every_step_still_reads_its_own(tmp_path):
    red, blue = Image.new("RGB", (40, 80), (200, 0, 0)), Image.new("RGB", (40, 80), (0, 0, 200))
    files = {}
    for mode in SCREENS:
        store = RunStore(tmp_path / mode, screens=mode)
        a, b = _episode(store), _episode(store)
        for e in (a, b):  # two attempts that saw the same screens
            store.add_step(e, 0, action=Tap(index=0), screenshot=red, package="p", elements=[])
            store.add_step(e, 1, action=Back(), screenshot=blue, package="p", elements=[])
        store.add_step(a, 2, action=Back(), screenshot=red, package="p", elements=[])  # back where it started
        files[mode] = sorted(p.relative_to(tmp_path / mode).as_posix() for p in (tmp_path / mode).glob("screens/**/*.png"))
        for e, step, colour in ((a, 0, red), (b, 0, red), (a, 1, blue), (b, 1, blue), (a, 2, red)):
            rec = store.step_record(e, step)
            assert rec["screen_size"] == [40, 80]
            if mode != "none":
                assert Image.open(tmp_path / mode / rec["screen"]).convert("RGB").tobytes() == colour.tobytes()
        store.close()
    assert files["all"] == ["screens/1/000.png", "screens/1/001.png", "screens/1/002.png", "screens/2/000.png",
                            "screens/2/001.png"]
    assert files["changed"] == ["screens/1/000.png", "screens/1/001.png"]
    assert files["none"] == []
    with pytest.raises(RunStoreError, match="screens must be one of"):
        RunStore(tmp_path / "bad", screens="some")


def test_a_step_written_again_never_changes_a_file_another_step_refers_to(tmp_path):
    red, blue = Image.new("RGB", (40, 80), (200, 0, 0)), Image.new("RGB", (40, 80), (0, 0, 200))
    store = RunStore(tmp_path / "run")
    a, b = _episode(store), _episode(store)
    store.add_step(a, 0, action=Back(), screenshot=red, package="p", elements=[])
    store.add_step(b, 0, action=Back(), screenshot=red, package="p", elements=[])  # refers to a's file
    store.add_step(a, 0, action=Back(), screenshot=blue, package="p", elements=[])  # a's step 0 rewritten
    colour = lambda e: Image.open(tmp_path / "run" / store.step_record(e, 0)["screen"]).getpixel((0, 0))  # noqa: E731
    assert colour(a) == (0, 0, 200) and colour(b) == (200, 0, 0)
    store.close()


def test_workers_showing_the_same_screen_at_once_write_it_once(tmp_path):
    shot = Image.new("RGB", (200, 400), (10, 120, 30))
    store = RunStore(tmp_path / "run")
    episodes = [_episode(store) for _ in range(8)]
    barrier = threading.Barrier(len(episodes))

    def worker(e: int) -> None:
        barrier.wait()
        store.add_step(e, 0, action=Back(), screenshot=shot, package="p", elements=[])

    threads = [threading.Thread(target=worker, args=(e,)) for e in episodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(list((tmp_path / "run").glob("screens/**/*.png"))) == 1
    assert len({store.step_record(e, 0)["screen"] for e in episodes}) == 1
    assert store.disk_bytes() > (tmp_path / "run" / "run.db").stat().st_size
    store.close()


def test_a_folder_holds_one_kind_of_run_and_says_what_differs(tmp_path):
    store = RunStore(tmp_path / "run")
    store.claim("eval", {"suite": "smoke", "k": 2, "policy": "oracle"})
    store.claim("eval", {"suite": "smoke", "k": 2, "policy": "oracle"})  # the same run resumes
    with pytest.raises(RunStoreError, match=r"different eval run \(k: 2 there, 3 now\)"):
        store.claim("eval", {"suite": "smoke", "k": 3, "policy": "oracle"})
    with pytest.raises(RunStoreError, match="holds an eval run, not an adapt run"):
        store.claim("adapt", {"app": "com.example.todo"})
    store.close()
    adapt = RunStore(tmp_path / "adapt")
    settings = {"rounds": 2, "lr": 0.002, **{f"knob{i}": i for i in range(40)}}
    adapt.claim("adapt", {"app": "com.example.todo", "adapt": settings})
    with pytest.raises(RunStoreError) as refused:  # one nested setting differs: named, not both dicts
        adapt.claim("adapt", {"app": "com.example.todo", "adapt": {**settings, "rounds": 3}})
    assert "(adapt.rounds: 2 there, 3 now)" in str(refused.value) and "knob" not in str(refused.value)
    adapt.close()


def test_a_killed_jobs_time_never_falls_below_its_adaptation_time(tmp_path, monkeypatch):
    """The job's totals and the adaptation clock are saved at the same tick: after a kill, what the
    run folder keeps of the job's wall-clock is never less than what it keeps of its adaptation.
    Saved on separate ticks (before), a kill just after a clock save lost up to 5 s more of the job."""
    from coadapt import totals as totals_mod
    from coadapt.totals import AdaptClock, JobTotals

    now = [100.0]
    monkeypatch.setattr(totals_mod.time, "monotonic", lambda: now[0])
    store = RunStore(tmp_path / "run")
    for process in range(3):  # the first process and two resumed ones, each killed mid-way
        job = JobTotals(store, "adapt_job_totals")
        say = job.ticking(lambda e, d: None)
        now[0] += 1.5  # model loading before the adaptation starts
        clock = AdaptClock(store)
        job.also(clock)
        for _ in range(17 + 4 * process):
            now[0] += 1.3
            say("episode", {})
        # killed here: only what was saved survives
        wall, adapt = store.get_meta("adapt_job_totals")["wall_s"], store.get_meta(AdaptClock.KEY)
        assert adapt > 0 and wall >= adapt + 1.5 * (process + 1) - 1e-6, (process, wall, adapt)
    store.close()


def test_totals_are_saved_when_a_job_ends_by_an_exception(tmp_path, monkeypatch):
    """`saved_on_error`: an exception inside the block saves the totals and their riders at once
    (3 s, below the 5 s tick) and goes on unchanged; a store that cannot save does not hide it."""
    from coadapt import totals as totals_mod
    from coadapt.totals import AdaptClock, JobTotals

    now = [50.0]
    monkeypatch.setattr(totals_mod.time, "monotonic", lambda: now[0])
    store = RunStore(tmp_path / "run")
    job = JobTotals(store, "job")
    clock = AdaptClock(store)
    job.also(clock)
    with pytest.raises(KeyboardInterrupt):
        with job.saved_on_error():
            now[0] += 3.0
            job.ticking(lambda e, d: None)("episode", {})  # no tick yet: 3 s < 5 s
            assert store.get_meta("job") is None
            raise KeyboardInterrupt
    assert store.get_meta("job")["wall_s"] == 3.0 and store.get_meta(AdaptClock.KEY) == 3.0

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(store, "set_meta", broken)
    with pytest.raises(ValueError, match="the job's own error"):
        with job.saved_on_error():
            raise ValueError("the job's own error")
    with job.saved_on_error():  # a block that ends normally saves nothing here (its caller does)
        now[0] += 1.0
    store.close()
