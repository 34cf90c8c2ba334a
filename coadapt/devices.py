"""Where a job's devices come from: simulated phones, or ADB serials, wrapped in a DevicePool."""

from __future__ import annotations

from coadapt.android_env.adb import AdbConfig, AdbDevice
from coadapt.android_env.pool import DevicePool, DeviceSlot
from coadapt.android_env.sim import SimConfig, SimDevice
from coadapt.apps import make_apps


def sim_pool(n: int, seed: int = 0, *, popups: bool = False) -> DevicePool:
    """`n` simulated phones; a dead one is replaced by a fresh phone."""

    def slot(i: int) -> DeviceSlot:
        cfg = SimConfig(seed=seed + i, serial=f"sim-{i}", popups=popups)
        box: dict[str, SimDevice] = {}

        def connect() -> SimDevice:
            if "device" not in box:
                box["device"] = SimDevice(make_apps(), cfg)
            return box["device"]

        def restart() -> None:
            box.pop("device", None)

        return DeviceSlot(cfg.serial, connect=connect, restart=restart)

    return DevicePool([slot(i) for i in range(n)])


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
