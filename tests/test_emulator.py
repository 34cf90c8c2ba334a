"""Device pools' process side: the AVD command line and boot wait (with a fake `emulator`
executable that serves a slow-booting virtual device), and the detached virtual-device manager."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coadapt.android_env.adb import AdbConfig, AdbDevice
from coadapt.android_env.errors import ConfigError, DeviceError, DeviceTimeoutError
from coadapt.emulator import avd, manager
from coadapt.emulator.adb_server import AdbServer, free_port

NOTES = "com.example.notes"

# --------------------------------------------------------------------------- AVD command line


def test_emulator_command_has_the_headless_parallel_flags():
    cmd = avd.emulator_command(avd.AvdConfig("Pixel_6_API_33", port=5556, snapshot="clean"), "emu", "/x/adb")
    assert cmd[:5] == ["emu", "-avd", "Pixel_6_API_33", "-port", "5556"]
    for flag in ("-no-window", "-no-audio", "-no-boot-anim", "-read-only", "-no-snapshot-save"):
        assert flag in cmd
    assert cmd[cmd.index("-gpu") + 1] == "swiftshader_indirect"
    assert cmd[cmd.index("-snapshot") + 1] == "clean"
    assert cmd[cmd.index("-adb-path") + 1] == "/x/adb"
    windowed = avd.emulator_command(avd.AvdConfig("a", headless=False, read_only=False, memory_mb=2048, extra_args=("-wipe-data",)))
    assert "-no-window" not in windowed and "-read-only" not in windowed and "-snapshot" not in windowed
    assert windowed[-3:] == ["-memory", "2048", "-wipe-data"]


@pytest.mark.parametrize("kwargs, match", [
    ({"avd": ""}, "emulator -list-avds"),
    ({"avd": "a", "port": 5555}, "even console port"),
    ({"avd": "a", "port": 5600}, "even console port"),
    ({"avd": "a", "gpu": "fast"}, "swiftshader_indirect"),
])
def test_avd_config_errors_name_the_fix(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        avd.AvdConfig(**kwargs)


def test_find_emulator_explains_what_to_install(monkeypatch, tmp_path):
    for var in ("ANDROID_EMULATOR", "ANDROID_SDK_ROOT", "ANDROID_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="ANDROID_SDK_ROOT"):
        avd.find_emulator()
    sdk = tmp_path / "sdk" / "emulator"
    sdk.mkdir(parents=True)
    (sdk / "emulator").write_text("")
    monkeypatch.setenv("ANDROID_SDK_ROOT", str(tmp_path / "sdk"))
    assert avd.find_emulator() == str(sdk / "emulator")


def test_wait_for_boot_times_out_on_a_fake_clock(monkeypatch):
    now = [0.0]
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    # No adb server listens on this port: every poll fails, so only the clock ends the wait.
    with pytest.raises(DeviceTimeoutError, match="boot did not complete within 10s"):
        avd.wait_for_boot("emulator-5554", adb_port=1, timeout_s=10, poll_s=2, sleep=sleep, clock=lambda: now[0])
    assert sleeps == [2, 2, 2, 2, 2]


def test_wait_for_boot_stops_when_the_emulator_dies():
    with pytest.raises(DeviceError, match="exited before boot"):
        avd.wait_for_boot("emulator-5554", adb_port=1, timeout_s=10, alive=lambda: False, sleep=lambda s: None)


FAKE_EMULATOR = """\
#!{python}
# A stand-in for the SDK emulator: records its argv, then serves a virtual device on the adb
# port (-port N -> N+1) that reports sys.boot_completed only after a boot delay.
import json, os, sys
argv = sys.argv[1:]
with open(os.environ["FAKE_EMULATOR_ARGS"], "w") as f:
    json.dump(argv, f)
port = int(argv[argv.index("-port") + 1])
os.execv(sys.executable, [sys.executable, "-m", "coadapt.emulator.daemon", "--port", str(port + 1),
         "--serial", f"emulator-{{port}}", "--apps", "{notes}", "--boot-delay", "1.5"])
"""


@pytest.fixture(scope="module")
def adb_server():
    with AdbServer() as server:
        yield server


def test_start_avd_with_a_fake_emulator(adb_server, tmp_path, monkeypatch):
    console = manager.pick_ports(1)[0] - 1
    script = tmp_path / "emulator"
    script.write_text(FAKE_EMULATOR.format(python=sys.executable, notes=NOTES))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("FAKE_EMULATOR_ARGS", str(tmp_path / "argv.json"))
    config = avd.AvdConfig("Fake_AVD", port=console, snapshot="clean")
    t0 = time.monotonic()
    proc = avd.start_avd(config, log_dir=tmp_path / "logs", adb_port=adb_server.port, emulator=str(script), boot_timeout_s=30,
                         sleep=lambda s: time.sleep(min(s, 0.1)))
    try:
        assert time.monotonic() - t0 >= 1.5, "start_avd returned before the boot completed"
        argv = json.loads((tmp_path / "argv.json").read_text())
        assert argv == avd.emulator_command(config, str(script), argv[argv.index("-adb-path") + 1])[1:]
        dev = AdbDevice(config.serial, AdbConfig(adb_port=adb_server.port, ui_backend="uiautomator"))
        for name in avd.ANIMATION_SETTINGS:
            assert dev.shell(f"settings get global {name}").strip() == "0"
        assert proc.alive()
    finally:
        proc.kill(timeout_s=5, adb_port=adb_server.port)
    assert not proc.alive()


# --------------------------------------------------------------------------- detached virtual devices


@pytest.mark.slow
def test_manager_start_list_restart_stop(adb_server, tmp_path):
    rt = tmp_path / "run"
    # OS-assigned ports (reached with `adb connect`): concurrent test runs never race for them.
    ports = [free_port(), free_port()]
    recs = manager.start_virtual_devices(2, seed=7, runtime=rt, adb_port=adb_server.port, apps=(NOTES,), ports=ports)
    try:
        assert [r.seed for r in recs] == [7, 8]
        assert json.loads((rt / manager.STATE_FILE).read_text())["devices"][0]["serial"] == recs[0].serial
        for r in recs:
            adb_server.wait_for(r.serial)
        statuses = manager.list_virtual_devices(runtime=rt, adb_port=adb_server.port)
        assert [s.healthy for s in statuses] == [True, True]
        assert {s.adb_state for s in statuses} == {"device"}

        dev = AdbDevice(recs[0].serial, AdbConfig(adb_port=adb_server.port, ui_backend="uiautomator"))
        dev.launch(NOTES)
        assert dev.current_package() == NOTES

        with pytest.raises(ConfigError, match="running: "):
            manager.stop_virtual_devices(["emulator-1"], runtime=rt)

        new = manager.restart_virtual_device(recs[0].serial, runtime=rt, adb_port=adb_server.port)
        assert new.pid != recs[0].pid and new.port == recs[0].port
        adb_server.wait_for(new.serial)
        assert dev.current_package() == "com.android.launcher3", "a restarted device is a fresh phone"
    finally:
        stopped = manager.stop_virtual_devices(runtime=rt, adb_port=adb_server.port)
    assert sorted(stopped) == sorted(r.serial for r in recs)
    assert manager.read_records(rt) == []
    for pid in (recs[1].pid, new.pid):
        assert not Path(f"/proc/{pid}").exists() or b"coadapt" not in Path(f"/proc/{pid}/cmdline").read_bytes()


def test_manager_reports_a_dead_device(tmp_path):
    rt = tmp_path / "run"
    rec = manager.start_virtual_devices(1, runtime=rt, adb_port=1, apps=(NOTES,), ports=[free_port()])[0]
    try:
        os.kill(rec.pid, 9)
        time.sleep(0.2)
        (status,) = manager.list_virtual_devices(runtime=rt, adb_port=1)
        assert not status.process_alive and not status.healthy
    finally:
        assert manager.stop_virtual_devices(runtime=rt, adb_port=1) == [rec.serial]


def test_runtime_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("COADAPT_RUNTIME_DIR", str(tmp_path))
    assert manager.runtime_dir() == tmp_path
    monkeypatch.delenv("COADAPT_RUNTIME_DIR")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    assert manager.runtime_dir() == tmp_path / "xdg" / "coadapt"


def test_start_rejects_bad_counts(tmp_path):
    with pytest.raises(ConfigError, match="n must be >= 1"):
        manager.start_virtual_devices(0, runtime=tmp_path)
    with pytest.raises(ConfigError, match="one per device"):
        manager.start_virtual_devices(2, ports=[40000], runtime=tmp_path)
