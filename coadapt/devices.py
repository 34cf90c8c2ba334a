"""Where a job's devices come from: simulated phones, or ADB serials, wrapped in a DevicePool."""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from coadapt.android_env.adb import AdbConfig, AdbDevice
from coadapt.android_env.pool import DevicePool, DeviceSlot
from coadapt.android_env.sim import SimConfig, SimDevice
from coadapt.apps import make_apps

log = logging.getLogger(__name__)


def sim_slot(i: int, seed: int = 0, *, popups: bool = False) -> DeviceSlot:
    """Simulated phone number `i` of a pool (seeded seed + i, serial sim-i); a dead one is
    replaced by a fresh phone."""
    cfg = SimConfig(seed=seed + i, serial=f"sim-{i}", popups=popups)
    box: dict[str, SimDevice] = {}

    def connect() -> SimDevice:
        if "device" not in box:
            box["device"] = SimDevice(make_apps(), cfg)
        return box["device"]

    def restart() -> None:
        box.pop("device", None)

    return DeviceSlot(cfg.serial, connect=connect, restart=restart)


def sim_pool(n: int, seed: int = 0, *, popups: bool = False) -> DevicePool:
    """`n` simulated phones; a dead one is replaced by a fresh phone."""
    return DevicePool([sim_slot(i, seed, popups=popups) for i in range(n)])


def adb_pool(serials: list[str], config: AdbConfig | None = None) -> DevicePool:
    """Devices reached through the adb server. Recovery reconnects; devices started by
    `coadapt emulator start --virtual` are also restarted as a fresh phone."""
    from coadapt.emulator.manager import read_records, restart_virtual_device

    cfg = config or AdbConfig()
    virtual = {r.serial for r in read_records()}

    def slot(serial: str) -> DeviceSlot:
        restart = None
        if serial in virtual:
            def restart(serial: str = serial) -> None:
                restart_virtual_device(serial, adb_port=cfg.adb_port)

        def healthy(device) -> bool:
            return isinstance(device, AdbDevice) and device.ping()

        return DeviceSlot(serial, connect=lambda: AdbDevice(serial, cfg), restart=restart, health=healthy)

    return DevicePool([slot(s) for s in serials])


def make_pool(devices: str | None, workers: int, seed: int = 0, *, popups: bool = False) -> DevicePool:
    """ADB devices from a comma-separated serial list, else `workers` simulated phones."""
    if devices:
        serials = [s.strip() for s in devices.split(",") if s.strip()]
        return adb_pool(serials)
    return sim_pool(workers, seed, popups=popups)


def adb_server_port() -> int:
    """The adb server's port: $ANDROID_ADB_SERVER_PORT (what `--adb-port` sets), else 5037."""
    return int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))


def _check_listed(serials: list[str], port: int) -> None:
    """ConfigError naming the serials the adb server does not list at all (a typo, a phone not
    plugged in, an emulator not started): before, each was played, failed its health check and
    retired, and the job ended asking for a resume that could not help. Network serials
    (host:port) are left to connect on demand; listed but offline devices to the pool's recovery."""
    from coadapt.android_env.errors import ConfigError, DeviceError
    from coadapt.emulator.adb_server import listed_devices

    try:
        listed = listed_devices(port)
    except (OSError, DeviceError):
        return  # the server does not answer: the pool's health checks say so per device
    missing = [s for s in serials if s not in listed and ":" not in s]
    if missing:
        shown = ", ".join(f"{s} ({state})" for s, state in listed.items()) or "none"
        raise ConfigError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not listed by the adb server "
                          f"on port {port} (it lists: {shown}); start it (`coadapt emulator start`), plug it in, "
                          f"or check the serial with `adb -P {port} devices`")


@contextmanager
def adb_server_for(serials: list[str], *, keep: bool = False,
                   say: Callable[[str], None] = log.info) -> Iterator[int]:
    """An adb server for the job's devices, yielding its port. One already running is used and left
    alone; otherwise one is started, the virtual devices `coadapt emulator start` recorded are
    registered with it, and it is stopped when the job ends, unless `keep`."""
    from coadapt.emulator.adb_server import AdbServer, server_running
    from coadapt.emulator.manager import read_records, register

    port = adb_server_port()
    if server_running(port):
        _check_listed(serials, port)
        yield port
        return
    server = AdbServer(port).start()
    say(f"started an adb server on port {port} for this run")
    try:
        for record in read_records():
            if record.serial in serials:
                register(record, port)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not set(serials) <= {
                s for s, state in server.devices().items() if state == "device"}:
            time.sleep(0.2)
        _check_listed(serials, port)
        yield port
    finally:
        if keep:
            server.detach()
            say(f"left the adb server on port {port} running (--keep-adb-server); "
                f"stop it with: adb -P {port} kill-server")
        else:
            server.stop()
            say(f"stopped the adb server this run started on port {port}")
