"""DevicePool: leasing, health checks, escalating recovery, retirement."""

from __future__ import annotations

import pytest

from coadapt.android_env.errors import DeviceError
from coadapt.android_env.pool import DevicePool, DeviceSlot, NoDeviceError
from coadapt.android_env.sim import SimConfig, SimDevice
from coadapt.apps import make_apps


class Phone(SimDevice):
    """A sim that can be made to stop answering."""

    def __init__(self, serial: str, dead: bool = False):
        super().__init__(make_apps(), SimConfig(serial=serial))
        self.dead = dead

    def shell(self, cmd: str) -> str:
        if self.dead:
            raise DeviceError("device offline", command=cmd, serial=self.serial)
        return super().shell(cmd)


def test_lease_and_release():
    pool = DevicePool.of([Phone("a"), Phone("b")])
    s1, s2 = pool.acquire(), pool.acquire()
    assert {s1.serial, s2.serial} == {"a", "b"}
    with pytest.raises(DeviceError, match="in time"):
        pool.acquire(timeout_s=0.05)
    pool.release(s1)
    assert pool.acquire(timeout_s=1).serial == s1.serial


def test_healthy_device_comes_back_without_recovery():
    pool = DevicePool.of([Phone("a")])
    slot = pool.acquire()
    pool.release(slot, faulty=True)
    assert slot.recoveries == 0 and not slot.retired and slot.history == ["health check: ok"]


def test_escalates_reconnect_then_restart():
    state = {"restarted": False}
    phones = []

    def connect():
        phones.append(Phone("v", dead=not state["restarted"]))
        return phones[-1]

    def restart():
        state["restarted"] = True

    pool = DevicePool([DeviceSlot("v", connect=connect, restart=restart)], sleep=lambda s: None)
    slot = pool.acquire()
    slot.device.dead = True
    pool.release(slot, faulty=True)
    assert [h.split(":")[0] for h in slot.history] == ["health check", "reconnect", "restart"]
    assert slot.history[-1] == "restart: ok" and slot.recoveries == 1
    assert pool.acquire(timeout_s=1).device is phones[-1]


def test_unrecoverable_device_is_retired_and_others_continue():
    dead = Phone("dead", dead=True)
    pool = DevicePool([DeviceSlot("dead", connect=lambda: dead), DeviceSlot("ok", connect=lambda: Phone("ok"))])
    first = pool.acquire()
    other = pool.acquire()
    bad = first if first.serial == "dead" else other
    good = other if bad is first else first
    pool.release(bad, faulty=True)
    pool.release(good)
    assert pool.retired == ["dead"] and len(pool) == 1
    assert pool.acquire(timeout_s=1).serial == "ok"


def test_all_retired_raises():
    dead = Phone("dead", dead=True)
    pool = DevicePool([DeviceSlot("dead", connect=lambda: dead)])
    pool.release(pool.acquire(), faulty=True)
    with pytest.raises(NoDeviceError, match="dead"):
        pool.acquire()


def test_lease_context_marks_faulty_on_device_error():
    p = Phone("a")
    pool = DevicePool.of([p])
    with pytest.raises(DeviceError):
        with pool.lease() as slot:
            p.dead = True
            slot.device.shell("echo hi")
    assert pool.retired == ["a"]


def test_default_health_check_pings_with_a_short_timeout():
    """A device with ping(timeout_s) is pinged for ~5 s, never asked a shell command that would
    wait its full command timeout (with retries) on a frozen device."""
    from coadapt.android_env.pool import HEALTH_TIMEOUT_S, shell_health

    class Pingable(Phone):
        def __init__(self, answer: bool):
            super().__init__("p")
            self.answer, self.asked = answer, []

        def ping(self, timeout_s: float = 30.0) -> bool:
            self.asked.append(timeout_s)
            return self.answer

        def shell(self, cmd: str) -> str:
            raise AssertionError("the health check must not use shell() when ping() exists")

    for answer in (True, False):
        dev = Pingable(answer)
        assert shell_health(dev) is answer
        assert dev.asked == [HEALTH_TIMEOUT_S] and HEALTH_TIMEOUT_S <= 5.0
    assert shell_health(Phone("s")) and not shell_health(Phone("d", dead=True))
