"""Evaluation: reports, pass@k, infra errors rerun, and a killed run that resumes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from coadapt.policy.baselines import OraclePolicy, RandomPolicy
from coadapt.rollout import TaskCard
from coadapt.android_env.errors import DeviceError, TaskError
from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.evaluation import run_suite, suite_tasks
from coadapt.runs import RunStore, list_runs
from coadapt.tasks.suite import Suite

SMALL = Suite.from_dict({"name": "small", "seed": 5, "instances_per_task": 2,
                         "tasks": ["NotesAddNote", "NotesDeleteNote", "NotesCountLabel"]})


def oracle(suite: Suite = SMALL) -> OraclePolicy:
    return OraclePolicy(suite_tasks(suite)[1])


def test_oracle_report(tmp_path):
    store = RunStore(tmp_path / "run")
    report = run_suite(SMALL, oracle(), [SimDevice(make_apps())], store)
    assert report["success_rate"] == 1.0
    assert report["n_instances"] == 6 and report["n_episodes"] == 6
    assert set(report["per_task"]) == set(SMALL.tasks)
    assert report["per_app"]["com.example.notes"]["success_rate"] == 1.0
    assert report["invalid_action_rate"] == 0.0 and report["infra_errors"] == 0
    assert report["mean_steps"] > 1
    ep = store.episodes()[0]
    steps = store.steps(ep.id)
    assert len(steps) == ep.steps
    assert all((tmp_path / "run" / s["screen"]).exists() for s in steps)
    assert steps[0]["action"]["action_type"]
    assert list_runs(tmp_path) == [tmp_path / "run"]


def test_pass_at_k_and_two_devices(tmp_path):
    store = RunStore(tmp_path / "run", screens="none")
    devices = [SimDevice(make_apps()), SimDevice(make_apps())]
    report = run_suite(SMALL, RandomPolicy(), devices, store, k=3)
    assert report["n_episodes"] == 18 and report["k"] == 3
    by_key: dict[str, list[float]] = {}
    for r in store.episodes():
        by_key.setdefault(r.key, []).append(r.success)
    assert all(len(v) == 3 for v in by_key.values())
    assert report["pass_at_k"] == sum(max(v) >= 1.0 for v in by_key.values()) / len(by_key)
    assert report["success_rate"] == sum(sum(v) for v in by_key.values()) / 18
    assert {r.device for r in store.episodes()} == {"sim-0"}  # both sims are called sim-0 by default


class FlakyDevice(SimDevice):
    """Loses its connection once, in the middle of the third episode."""

    def __init__(self):
        super().__init__(make_apps())
        self.resets = 0
        self.failed = False

    def reset(self, seed=None):
        self.resets = getattr(self, "resets", 0) + 1
        super().reset(seed)

    def tap(self, x, y):
        if self.resets == 3 and not self.failed:
            self.failed = True
            raise DeviceError("device offline", command="input tap", serial=self.serial)
        super().tap(x, y)


def test_infra_error_is_rerun_and_counted(tmp_path):
    store = RunStore(tmp_path / "run", screens="none")
    report = run_suite(SMALL, oracle(), [FlakyDevice()], store)
    assert report["success_rate"] == 1.0 and report["n_episodes"] == 6
    assert report["infra_errors"] == 1 and not report["lost_instances"]
    statuses = [r.status for r in store.episodes()]
    assert statuses.count("infra_error") == 1 and statuses.count("finished") == 6


def test_policy_bug_is_raised_not_swallowed(tmp_path):
    class Broken:
        name = "broken"

        def start(self, card, seed):
            raise RuntimeError("bug in policy")

    with pytest.raises(RuntimeError, match="bug in policy"):
        run_suite(SMALL, Broken(), [SimDevice(make_apps())], RunStore(tmp_path / "r"))


def test_oracle_needs_the_task():
    card = TaskCard(key="x#0", goal="a goal", app="com.example.notes", max_steps=3, seed=1)
    with pytest.raises(TaskError):
        oracle().start(card, 0)


def _finished(db) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT id, key, attempt, started FROM episodes WHERE status='finished' ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_killed_eval_resumes_without_redoing_finished(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "coadapt.cli", "eval", "--suite", "seen", "--policy", "oracle", "--workers", "1",
           "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    db = out / "run.db"
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            if db.exists():
                try:
                    if len(_finished(db)) >= 3:
                        break
                except sqlite3.OperationalError:
                    pass
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    before = _finished(db)
    total = len(Suite.load("seen").instances())
    assert 3 <= len(before) < total, "the run should have been killed midway"
    assert not (out / "report.json").exists()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    after = _finished(db)
    assert after[: len(before)] == before  # finished episodes were kept, not replayed
    assert len(after) == total and len({(k, a) for _, k, a, _ in after}) == total
    report = json.loads((out / "report.json").read_text())
    assert report["success_rate"] == 1.0 and report["n_episodes"] == total


def test_resume_refuses_a_different_run(tmp_path):
    out = tmp_path / "run"
    base = [sys.executable, "-m", "coadapt.cli", "eval", "--suite", "smoke", "--workers", "1", "--out", str(out)]
    assert subprocess.run(base + ["--policy", "oracle"], capture_output=True, text=True).returncode == 0
    other = subprocess.run(base + ["--policy", "random"], capture_output=True, text=True)
    assert other.returncode == 2 and "different eval run" in other.stdout


def test_report_counts_each_attempt_once_despite_duplicate_rows(tmp_path):
    """A store written before the one-writer lock may hold two finished rows for one
    (phase, round, key, attempt); the report counts the newest (highest id) only."""
    from coadapt.evaluation import build_report
    store = RunStore(tmp_path / "run", screens="none")
    db = sqlite3.connect(store.db_path)
    cols = ("key, attempt, task, app, goal, seed, policy, phase, round, status, steps, invalid_steps, declared,"
            " success, started, ended")

    def add(key, attempt, success, steps, phase="eval", round=None, status="finished"):
        db.execute(f"INSERT INTO episodes({cols}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (key, attempt, "NotesAddNote", "com.example.notes", "g", 1, "p", phase, round, status, steps, 0,
                    "done", success, 1.0, 2.0))

    add("A#0", 0, 1.0, 3)
    add("A#0", 0, 0.0, 9)             # duplicate, newer: it is the one counted
    add("A#0", 0, 0.0, 9)             # and a third copy of it
    add("A#1", 0, 1.0, 4)
    add("A#1", 1, 0.0, 5)             # attempt 1 is another attempt, not a duplicate
    add("A#1", 0, 0.0, 7, phase="adapt")           # other phase: not this report's
    add("A#1", 0, 0.0, 7, round=2)                 # other round: not this report's
    db.commit()
    db.close()
    report = build_report(store, ["A#0", "A#1"], "p", k=2)
    assert report["n_episodes"] == 3
    assert report["success_rate"] == 1 / 3          # A#0: 0.0 (newest), A#1/0: 1.0, A#1/1: 0.0
    assert report["env_steps"] == 9 + 4 + 5
    assert report["pass_at_k"] == 0.5
    assert report["per_task"]["NotesAddNote"]["n"] == 3
    assert build_report(store, ["A#0", "A#1"], "p", k=1)["n_episodes"] == 2
