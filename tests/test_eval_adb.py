"""Evaluation through the real adb server: virtual devices started by the CLI, and a device
killed in the middle of a suite."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coadapt.policy.baselines import OraclePolicy
from coadapt.devices import adb_pool
from coadapt.android_env.adb import AdbConfig
from coadapt.emulator import manager
from coadapt.emulator.adb_server import AdbServer, free_port
from coadapt.evaluation import run_suite, suite_tasks
from coadapt.runs import RunStore
from coadapt.tasks.suite import Suite


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coadapt.cli", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_cli_virtual_devices_and_eval_through_adb(adb_env, tmp_path):
    started = cli("emulator", "start", "--virtual", "2")
    assert started.returncode == 0, started.stdout + started.stderr
    serials = [r.serial for r in manager.read_records()]
    assert len(serials) == 2
    for s in serials:
        adb_env.wait_for(s)
    assert {adb_env.devices()[s] for s in serials} == {"device"}
    listed = cli("emulator", "list")
    assert all(s in listed.stdout for s in serials) and "alive" in listed.stdout

    out = tmp_path / "run"
    ev = cli("eval", "--suite", "smoke", "--policy", "oracle", "--devices", ",".join(serials), "--out", str(out))
    assert ev.returncode == 0, ev.stdout + ev.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["success_rate"] == 1.0 and report["infra_errors"] == 0
    assert {r["device"] for r in _episodes(out)} <= set(serials)

    stopped = cli("emulator", "stop", "--all")
    assert stopped.returncode == 0 and all(s in stopped.stdout for s in serials)

    # a serial the adb server does not list (a typo): one line naming it and what is listed, nothing played
    typo = cli("eval", "--suite", "smoke", "--policy", "oracle", "--devices", "emulator-5999", "--out", str(tmp_path / "t"))
    assert typo.returncode == 2 and "emulator-5999 is not listed by the adb server" in typo.stdout, typo.stdout
    assert not (tmp_path / "t" / "report.json").exists()
    assert manager.read_records() == []


def _episodes(folder) -> list[dict]:
    import sqlite3

    con = sqlite3.connect(folder / "run.db")
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM episodes")]
    finally:
        con.close()


@pytest.mark.slow
def test_killing_a_device_mid_suite_loses_no_instance(adb_env, tmp_path, kill_when):
    recs = manager.start_virtual_devices(2, seed=3, ports=[free_port(), free_port()], adb_port=adb_env.port)
    for r in recs:
        adb_env.wait_for(r.serial)
    suite = Suite.from_dict({"name": "fault", "seed": 2, "instances_per_task": 2,
                             "tasks": ["NotesAddNote", "NotesDeleteNote", "NotesPinNote", "NotesCountLabel"]})
    store = RunStore(tmp_path / "run", screens="none")
    pool = adb_pool([r.serial for r in recs], AdbConfig(adb_port=adb_env.port, ui_backend="uiautomator", retries=1,
                                                       backoff_s=0.1, timeout_s=10))
    victim = recs[0]

    def mid_episode() -> bool:  # the victim is in the middle of an episode: its steps are being written
        running = [e for e in store.episodes() if e.status == "running" and e.device == victim.serial]
        return bool(running and store.steps(running[0].id))

    killer = kill_when(mid_episode, victim.pid, timeout=120)
    report = run_suite(suite, OraclePolicy(suite_tasks(suite)[1]), pool, store)
    assert killer.join(), "the victim was never caught mid-episode"
    assert report["n_instances"] == 8 and report["n_episodes"] == 8 and not report["lost_instances"]
    assert report["success_rate"] == 1.0
    assert report["infra_errors"] >= 1
    cut = [e for e in store.episodes() if e.status == "infra_error"]
    assert cut and all(e.device == victim.serial for e in cut)
    finished_keys = {e.key for e in store.episodes() if e.status == "finished"}
    assert {e.key for e in cut} <= finished_keys, "every cut episode was replayed to the end"
    assert report["device_recoveries"] >= 1 or report["devices_retired"] == [victim.serial]


@pytest.mark.slow
def test_eval_devices_stops_the_adb_server_it_started(tmp_path, monkeypatch):
    from coadapt.emulator.adb_server import server_running

    port = free_port()
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(port))
    monkeypatch.setenv("COADAPT_RUNTIME_DIR", str(tmp_path / "runtime"))
    try:
        started = cli("emulator", "start", "--virtual", "1")
        assert started.returncode == 0, started.stdout + started.stderr
        serial = manager.read_records()[0].serial
        assert not server_running(port)
        args = ("eval", "--suite", "smoke", "--policy", "oracle", "--devices", serial, "--adb-port", str(port))
        ev = cli(*args, "--out", str(tmp_path / "a"))
        assert ev.returncode == 0, ev.stdout + ev.stderr
        assert f"started an adb server on port {port}" in ev.stdout and "stopped the adb server" in ev.stdout
        assert json.loads((tmp_path / "a" / "report.json").read_text())["success_rate"] == 1.0
        assert not server_running(port), "eval left its adb server behind"
        kept = cli(*args, "--keep-adb-server", "--out", str(tmp_path / "b"))
        assert kept.returncode == 0 and "left the adb server" in kept.stdout, kept.stdout + kept.stderr
        assert server_running(port)
    finally:
        manager.stop_virtual_devices(adb_port=port)
        subprocess.run([AdbServer(port).adb, "-P", str(port), "kill-server"], capture_output=True, timeout=30)
