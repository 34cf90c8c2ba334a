"""`coadapt adapt` through the real adb server: virtual devices, one of them killed in the middle of
a rollout round, and the round still plays every attempt with nothing left running."""

from __future__ import annotations

import pytest

from coadapt.adapt.config import AdaptConfig
from coadapt.adaptation import run_adapt_job
from coadapt.config import CoadaptConfig, DeviceSettings
from coadapt.emulator import manager
from coadapt.emulator.adb_server import free_port
from coadapt.runs import RunStore

pytestmark = pytest.mark.slow

TINY = AdaptConfig(rounds=1, instances_per_template=1, group_size=2, horizon=(3,), epochs=1, batch_size=8,
                   max_minutes=600, explore_steps=20, explore_runs=1, proposals=2, consolidate=0)


@pytest.fixture
def adb_devices(adb_env, one_thread):
    """Two virtual devices behind the private adb server of `adb_env`."""
    recs = manager.start_virtual_devices(2, seed=5, ports=[free_port(), free_port()], adb_port=adb_env.port)
    for r in recs:
        adb_env.wait_for(r.serial)
    return recs


def test_adapt_over_adb_survives_a_device_killed_mid_round(adb_devices, tmp_path, kill_when):
    out = tmp_path / "run"
    victim = adb_devices[0]

    def mid_attempt() -> bool:  # a rollout attempt on the victim has steps written
        if not (out / "run.db").is_file():
            return False
        try:
            store = RunStore.open_readonly(out)
        except Exception:  # the database is still being created
            return False
        try:
            return any(store.steps(e.id) for e in store.episodes(phase="adapt", status="running")
                       if e.device == victim.serial)
        finally:
            store.close()

    killer = kill_when(mid_attempt, victim.pid, every=0.1)
    cfg = CoadaptConfig(adapt=TINY, devices=DeviceSettings(devices=",".join(r.serial for r in adb_devices)))
    summary = run_adapt_job("com.example.todo", cfg, out, report=False)
    assert killer.join(), "the victim was never caught mid-attempt"
    store = RunStore.open_readonly(out)
    try:
        episodes = store.episodes(phase="adapt")
        assert not [e for e in episodes if e.status == "running"], "an attempt was left running"
        cut = [e for e in episodes if e.status == "infra_error"]
        assert cut and all(e.device == victim.serial for e in cut)
        # every cut attempt was played again to the end, and every card got its group of attempts
        finished = {(e.key, e.attempt) for e in episodes if e.status == "finished"}
        assert {(e.key, e.attempt) for e in cut} <= finished
        assert len(finished) == TINY.group_size * len({e.key for e in episodes})
        assert all(e.verifier_score is not None for e in episodes if e.status == "finished")
        assert [r.status for r in store.rounds("adapt")][0] in ("finished", "rolled_back")
    finally:
        store.close()
    assert summary["rounds"] and summary["rounds"][0]["kind"] == "rollouts"
    assert (out / "adapter" / "adapter_config.json").is_file()
