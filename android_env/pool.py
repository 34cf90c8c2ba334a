"""DevicePool: leases devices to rollout workers, checks their health, and recovers dead ones.

A pool holds slots; a slot knows how to (re)connect to its device and, optionally, how to
restart it (virtual device or emulator process) and how to load a fresh snapshot. When a
worker returns a device as faulty, the pool escalates: health check -> reconnect -> restart
-> fresh snapshot; a device that survives none of them is retired and the others carry on.
Recovery is the one place where retries happen above the device backends.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from .device import Device
from .errors import CoadaptError, DeviceError

log = logging.getLogger(__name__)


class NoDeviceError(DeviceError):
    """Every device of the pool was retired (none could be recovered)."""


HEALTH_TIMEOUT_S = 5.0
"""How long the default health check waits for a device's answer, in seconds."""


def shell_health(device: Device) -> bool:
    """Default health check: the device answers a shell command within HEALTH_TIMEOUT_S.

    A device with a `ping(timeout_s)` (AdbDevice) is pinged: its `shell` would wait its full
    command timeout, with retries, on a frozen device."""
    try:
        ping = getattr(device, "ping", None)
        if callable(ping):
            return bool(ping(timeout_s=HEALTH_TIMEOUT_S))
        return device.shell("echo ok").strip() == "ok"
    except (CoadaptError, OSError):
        return False


@dataclass
class DeviceSlot:
    """One device of a pool and the ways to bring it back."""

    serial: str
    connect: Callable[[], Device]
    """Make a fresh connection (a new Device object) to this device."""
    restart: Callable[[], None] | None = None
    """Restart the device itself (virtual device or emulator process); None if impossible."""
    snapshot: Callable[[], None] | None = None
    """Load a fresh snapshot (emulators); None if there is none."""
    health: Callable[[Device], bool] = shell_health
    device: Device | None = None
    recoveries: int = 0
    retired: bool = False
    history: list[str] = field(default_factory=list)


class DevicePool:
    """Hands out healthy devices; see the module docstring for recovery."""

    def __init__(self, slots: Sequence[DeviceSlot], *, sleep: Callable[[float], None] = time.sleep,
                 settle_seconds: float = 1.0):
        if not slots:
            raise CoadaptError("a device pool needs at least one device")
        self.slots = list(slots)
        self._sleep = sleep
        self._settle = settle_seconds
        self._free: queue.Queue[DeviceSlot] = queue.Queue()
        self._lock = threading.Lock()
        for s in self.slots:
            if s.device is None:
                s.device = s.connect()
            self._free.put(s)

    @classmethod
    def of(cls, devices: Sequence[Device]) -> "DevicePool":
        """A pool over ready devices that can only be health-checked, not recovered."""
        return cls([DeviceSlot(d.serial, connect=(lambda d=d: d), device=d) for d in devices])

    def __len__(self) -> int:
        return sum(1 for s in self.slots if not s.retired)

    @property
    def retired(self) -> list[str]:
        return [s.serial for s in self.slots if s.retired]

    @property
    def recoveries(self) -> int:
        return sum(s.recoveries for s in self.slots)

    def acquire(self, timeout_s: float | None = None) -> DeviceSlot:
        """A free slot with a live device; blocks until one is free. NoDeviceError when all are retired."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if len(self) == 0:
                raise NoDeviceError("every device of the pool failed and could not be recovered: "
                                    + ", ".join(self.retired))
            wait = 0.2 if deadline is None else min(0.2, max(0.0, deadline - time.monotonic()))
            try:
                slot = self._free.get(timeout=wait)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise DeviceError("no device became free in time") from None
                continue
            if not slot.retired:
                return slot

    def release(self, slot: DeviceSlot, *, faulty: bool = False) -> None:
        """Give a slot back; a faulty one is recovered first (or retired)."""
        if faulty and not self._recover(slot):
            return
        self._free.put(slot)

    @contextmanager
    def lease(self) -> Iterator[DeviceSlot]:
        """`with pool.lease() as slot:` use `slot.device`; an escaping DeviceError marks it faulty."""
        slot = self.acquire()
        try:
            yield slot
        except DeviceError:
            self.release(slot, faulty=True)
            raise
        else:
            self.release(slot)

    def _recover(self, slot: DeviceSlot) -> bool:
        steps: list[tuple[str, Callable[[], None] | None]] = [
            ("health check", None),
            ("reconnect", lambda: None),
            ("restart", slot.restart),
            ("fresh snapshot", slot.snapshot),
        ]
        for name, action in steps:
            if name != "health check" and action is None:
                continue
            try:
                if action is not None:
                    action()
                    if name != "reconnect":
                        self._sleep(self._settle)
                    old = slot.device
                    slot.device = slot.connect()
                    if old is not None and old is not slot.device:
                        try:
                            old.close()
                        except (CoadaptError, OSError):
                            pass
                assert slot.device is not None
                if slot.health(slot.device):
                    if name != "health check":
                        slot.recoveries += 1
                    slot.history.append(f"{name}: ok")
                    log.info("device %s recovered by %s", slot.serial, name)
                    return True
                slot.history.append(f"{name}: unhealthy")
            except (CoadaptError, OSError) as e:
                slot.history.append(f"{name}: {e}")
                log.warning("device %s: %s failed: %s", slot.serial, name, e)
        slot.retired = True
        log.error("device %s retired after: %s", slot.serial, "; ".join(slot.history[-4:]))
        return False
