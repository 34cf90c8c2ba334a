"""AdbDevice: parsing units, then the conformance check and fault handling through a real adb
server (the binary bundled with adbutils, on a private port) talking to virtual devices."""

from __future__ import annotations

import threading
import time

import pytest

from coadapt.android_env.adb import (
    AdbConfig, AdbDevice, Focus, decode_raw_screencap, find_system_dialog, input_text_arg, parse_focus, parse_wm_size,
)
from coadapt.android_env.check import check_device
from coadapt.android_env.device import Device
from coadapt.android_env.errors import AppError, ConfigError, DeviceError, DeviceOfflineError
from coadapt.android_env.sim import SimConfig
from coadapt.android_env.uitree import parse_xml
from coadapt.emulator.adb_server import AdbServer
from coadapt.emulator.virtual import VirtualDevice

NOTES = "com.example.notes"
APPS = [NOTES]  # check_device needs only Notes; fewer launcher icons keep the tests quick

# --------------------------------------------------------------------------- parsing (no device)


@pytest.mark.parametrize("text, expected", [
    # Android 10..14 `dumpsys window`
    ("  mCurrentFocus=Window{5e1a2b3 u0 com.example.notes/com.example.notes.MainActivity}\n"
     "  mFocusedApp=ActivityRecord{7c2d4e5 u0 com.example.notes/.MainActivity t12}\n",
     Focus("com.example.notes", "com.example.notes.MainActivity")),
    # Android 9: AppWindowToken wrapping the ActivityRecord; focus on a non-app window
    ("  mCurrentFocus=Window{41b37570 u0 StatusBar}\n"
     "  mFocusedApp=AppWindowToken{422df168 token=Token{422def98 ActivityRecord{422dee38 u0 com.example/.UI.PlayActivity t14}}}\n",
     Focus("com.example", ".UI.PlayActivity")),
    # no focus at all: fall back to the focused app
    ("  mCurrentFocus=null\n  mFocusedApp=ActivityRecord{1 u0 org.app/.Main t3}\n", Focus("org.app", ".Main")),
    # an exiting window, as seen during transitions
    ("mCurrentFocus=Window{ab u0 com.a.b/com.a.b.X EXITING}\n", Focus("com.a.b", "com.a.b.X")),
    # system dialogs
    ("mCurrentFocus=Window{7a5e0c9 u0 Application Not Responding: com.example.notes}\n", Focus("com.example.notes", None, "anr")),
    ("mCurrentFocus=Window{7a5e0c9 u0 Application Error: com.example.notes}\n", Focus("com.example.notes", None, "crash")),
    # a popup window titled by its package
    ("mCurrentFocus=Window{1 u0 com.android.permissioncontroller}\n", Focus("com.android.permissioncontroller")),
    # `dumpsys activity activities` lines (Android 8, 10+, 14)
    ("    mResumedActivity: ActivityRecord{9 u0 com.x/.A t5}\n", Focus("com.x", ".A")),
    ("  topResumedActivity=ActivityRecord{9 u0 com.y/com.y.B t7}\n", Focus("com.y", "com.y.B")),
    ("  ResumedActivity: ActivityRecord{9 u0 com.z/.C t9}\n", Focus("com.z", ".C")),
    ("nothing useful\n", None),
])
def test_parse_focus_variants(text, expected):
    assert parse_focus(text) == expected


def test_parse_wm_size_prefers_override():
    assert parse_wm_size("Physical size: 1080x2400\nOverride size: 720x1600\n") == (720, 1600)
    assert parse_wm_size("Physical size: 1080x2400\n") == (1080, 2400)
    with pytest.raises(DeviceError, match="wm size"):
        parse_wm_size("error: no display")


def test_input_text_arg_quotes_for_the_shell():
    assert input_text_arg("hello world") == "hello%sworld"
    assert input_text_arg("it's") == "'it'\"'\"'s'"


_ANR_XML = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">
<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="android" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[57,650][663,950]">
<node index="0" text="Notes isn’t responding" resource-id="android:id/alertTitle" class="android.widget.TextView" package="android" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[105,698][615,778]" />
<node index="1" text="Close app" resource-id="android:id/aerr_close" class="android.widget.Button" package="android" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[57,794][663,890]" />
<node index="2" text="Wait" resource-id="android:id/aerr_wait" class="android.widget.Button" package="android" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[57,890][663,950]" />
</node></hierarchy>"""


def test_find_system_dialog_picks_wait_for_anr_and_close_for_crash():
    kind, button = find_system_dialog(parse_xml(_ANR_XML))
    assert (kind, button.resource_id) == ("anr", "android:id/aerr_wait")
    crash = _ANR_XML.replace("Notes isn’t responding", "Notes keeps stopping")
    kind, button = find_system_dialog(parse_xml(crash))
    assert (kind, button.text) == ("crash", "Close app")
    assert find_system_dialog(parse_xml(_ANR_XML.replace("isn’t responding", "notes"))) is None


@pytest.mark.parametrize("fmt, pixel, header", [
    (1, bytes([10, 20, 30, 255]), 16),  # RGBA_8888, Android 12+ header with dataspace
    (1, bytes([10, 20, 30, 255]), 12),  # older 12-byte header
    (2, bytes([10, 20, 30, 0]), 16),  # RGBX_8888
    (5, bytes([30, 20, 10, 255]), 16),  # BGRA_8888
    (3, bytes([10, 20, 30]), 16),  # RGB_888
])
def test_decode_raw_screencap_formats(fmt, pixel, header):
    import struct

    head = struct.pack("<4I", 3, 2, fmt, 0)[:header]
    img = decode_raw_screencap(head + pixel * 6)
    assert img.mode == "RGB" and img.size == (3, 2) and img.getpixel((2, 1)) == (10, 20, 30)


def test_decode_raw_screencap_rejects_what_it_does_not_know():
    import struct

    assert decode_raw_screencap(b"\x89PNG\r\n\x1a\n" + bytes(100)) is None
    assert decode_raw_screencap(struct.pack("<4I", 3, 2, 99, 0) + bytes(24)) is None  # unknown format
    assert decode_raw_screencap(struct.pack("<4I", 3, 2, 1, 0) + bytes(5)) is None  # truncated


def test_config_validation_names_the_fix():
    with pytest.raises(ConfigError, match="auto, u2, uiautomator"):
        AdbConfig(ui_backend="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="timeout_s"):
        AdbConfig(timeout_s=0)
    with pytest.raises(ConfigError, match="raw or png"):
        AdbConfig(screencap="jpeg")  # type: ignore[arg-type]
    assert AdbConfig(adb_port=1234).server_port == 1234


# --------------------------------------------------------------------------- through a real adb server


@pytest.fixture(scope="module")
def adb_server():
    with AdbServer() as server:
        yield server


@pytest.fixture
def vdev(adb_server):
    """A virtual device reached with `adb connect` (a free port, never the emulator range)."""
    with VirtualDevice(SimConfig(serial="vd-test"), apps=APPS) as vd:
        assert "connected" in adb_server.connect(vd.address)
        adb_server.wait_for(vd.adb_serial)
        yield vd
        adb_server.disconnect(vd.address)


class Sleeps(list):
    """A stand-in for time.sleep that records the delays asked for."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_device(adb_server, vd, backend="auto", **kw) -> AdbDevice:
    return AdbDevice(vd.adb_serial, AdbConfig(adb_port=adb_server.port, ui_backend=backend, **kw), sleep=Sleeps())


@pytest.mark.parametrize("backend, screencap", [("u2", "raw"), ("uiautomator", "png")])
def test_conformance_through_real_adb(adb_server, vdev, backend, screencap):
    dev = make_device(adb_server, vdev, backend, screencap=screencap)
    assert isinstance(dev, Device)
    check_device(dev).raise_if_failed()
    assert dev.ui_backend_in_use == backend
    if backend == "uiautomator":
        assert not vdev.phone.u2_servers, "the plain dump path must not start uiautomator2"
    dev.close()
    with pytest.raises(DeviceError, match="closed"):
        dev.tap(1, 1)


def test_app_state_reset_and_virtual_wait(adb_server, vdev):
    dev = make_device(adb_server, vdev, "uiautomator")
    notes = {"notes": [{"id": 1, "title": "Ünïcode — ok", "body": "x"}]}
    dev.write_app_state(NOTES, notes)
    assert dev.read_app_state(NOTES)["notes"][0]["title"] == "Ünïcode — ok"
    t0 = vdev.sim.now()
    dev.wait(30)
    assert (vdev.sim.now() - t0).total_seconds() >= 30, "wait must advance the virtual clock"
    dev.reset(seed=3)
    assert dev.read_app_state(NOTES).get("notes") in (None, [])
    with pytest.raises(AppError):
        dev.launch("com.example.nosuchapp")
    with pytest.raises(AppError):
        dev.read_app_state("com.example.nosuchapp")


def test_refused_dumps_are_retried_with_backoff(adb_server, vdev):
    sleeps = Sleeps()
    dev = AdbDevice(vdev.adb_serial, AdbConfig(adb_port=adb_server.port, ui_backend="uiautomator", backoff_s=0.1), sleep=sleeps)
    vdev.run(vdev.phone.fail_dumps, "null_root", 1)
    vdev.run(vdev.phone.fail_dumps, "idle", 1)
    tree = dev.ui_tree()
    assert tree.screen_bounds.right == vdev.sim.width
    assert sleeps == [0.1, 0.2]
    vdev.run(vdev.phone.fail_dumps, "idle", 10)
    with pytest.raises(DeviceError, match="could not get idle state") as e:
        dev.ui_tree()
    assert e.value.command and "uiautomator dump" in e.value.command
    vdev.run(vdev.phone.dump_faults.clear)


def test_screenshots_match_the_device_pixel_for_pixel(adb_server, vdev):
    dev = make_device(adb_server, vdev, "uiautomator")
    expected = vdev.run(vdev.sim.screenshot)
    for fmt in ("raw", "png"):
        shot = make_device(adb_server, vdev, "uiautomator", screencap=fmt).screenshot()
        assert shot.mode == "RGB" and shot.tobytes() == expected.tobytes(), fmt
    assert dev.screen_size() == expected.size


def test_stale_dump_file_is_never_read(adb_server, vdev):
    dev = make_device(adb_server, vdev, "uiautomator", dump_retries=0)
    dev.ui_tree()  # leaves a dump file of the home screen behind
    vdev.run(vdev.phone.fail_dumps, "idle", 1)
    with pytest.raises(DeviceError, match="idle"):
        dev.ui_tree()


def test_empty_u2_dumps_are_retried(adb_server, vdev):
    sleeps = Sleeps()
    dev = AdbDevice(vdev.adb_serial, AdbConfig(adb_port=adb_server.port, ui_backend="u2", backoff_s=0.05), sleep=sleeps)
    vdev.run(vdev.phone.fail_u2_dumps, "empty", 1)
    vdev.run(vdev.phone.fail_u2_dumps, "no_children", 1)
    assert len(dev.ui_tree()) > 5
    assert sleeps == [0.05, 0.1]
    dev.close()


def test_u2_server_death_is_survived(adb_server, vdev):
    dev = make_device(adb_server, vdev, "auto")
    dev.launch(NOTES)
    assert dev.ui_backend_in_use == "u2"
    assert vdev.kill_u2_server() == 1
    time.sleep(0.1)
    # uiautomator2 relaunches its server once; the call still succeeds.
    assert NOTES in dev.ui_tree().packages
    dev.close()


@pytest.mark.parametrize("kind, button", [("anr", "Wait"), ("crash", "Close app")])
def test_system_dialogs_are_dismissed(adb_server, vdev, kind, button):
    dev = make_device(adb_server, vdev, "uiautomator")
    dev.launch(NOTES)
    vdev.run(vdev.phone.show_dialog, kind, NOTES)
    assert dev.shell(f"cmd coadapt fault {kind} {NOTES}").strip()  # also injectable over adb
    tree = dev.ui_tree()
    assert "android" not in tree.packages
    assert dev.dialogs_dismissed == 1
    # ANR: "Wait" keeps the app; crash: "Close app" kills it and the launcher shows.
    assert dev.current_package() == (NOTES if kind == "anr" else "com.android.launcher3")


def test_dialog_seen_by_current_package_first(adb_server, vdev):
    dev = make_device(adb_server, vdev, "u2")
    dev.launch(NOTES)
    vdev.run(vdev.phone.show_dialog, "anr", NOTES)
    assert dev.current_package() == NOTES
    assert dev.dialogs_dismissed == 1
    dev.close()


def test_non_ascii_text_without_u2_uses_adb_keyboard(adb_server, vdev):
    dev = make_device(adb_server, vdev, "uiautomator")
    dev.launch(NOTES)
    fab = dev.ui_tree().find(content_desc="New note")[0]
    dev.tap(*fab.bounds.center)
    dev.input_text("plain ascii, ")
    dev.input_text("ünïcode ✓ 漢字")
    focused = [e for e in dev.ui_tree() if e.focused and e.editable]
    assert focused[0].text == "plain ascii, ünïcode ✓ 漢字"
    assert dev.shell("settings get secure default_input_method").strip() == "com.android.adbkeyboard/.AdbIME"
    dev.close()  # restores the keyboard it replaced
    assert vdev.sim.settings[("secure", "default_input_method")] != "com.android.adbkeyboard/.AdbIME"


def test_health_and_reconnect(adb_server):
    vd = VirtualDevice(apps=APPS).start()
    port = vd.port
    adb_server.connect(vd.address)
    adb_server.wait_for(vd.adb_serial)
    dev = AdbDevice(vd.adb_serial, AdbConfig(adb_port=adb_server.port), sleep=Sleeps())
    assert dev.ping() and dev.state() == "device"
    vd.stop()
    assert not dev.ping()
    vd2 = VirtualDevice(port=port, apps=APPS).start()
    try:
        assert AdbDevice(vd.adb_serial, AdbConfig(adb_port=adb_server.port)).reconnect(timeout_s=10)
    finally:
        vd2.stop()
        adb_server.disconnect(vd.address)


def test_killed_device_raises_offline_not_hang(adb_server):
    vd = VirtualDevice(apps=APPS).start()
    adb_server.connect(vd.address)
    adb_server.wait_for(vd.adb_serial)
    dev = AdbDevice(vd.adb_serial, AdbConfig(adb_port=adb_server.port, ui_backend="uiautomator", timeout_s=10), sleep=Sleeps())
    dev.screenshot()
    killer = threading.Timer(0.3, vd.kill)
    killer.start()
    t0 = time.monotonic()
    with pytest.raises(DeviceError) as e:
        while time.monotonic() - t0 < 20:
            dev.screenshot()
            dev.ui_tree()
    assert time.monotonic() - t0 < 15, "a dead device must fail fast, not hang"
    # Once the server has noticed, every call says the device is gone.
    with pytest.raises(DeviceOfflineError) as e2:
        dev.tap(1, 1)
    assert e2.value.serial == vd.adb_serial and e2.value.command
    assert isinstance(e.value, DeviceError)
    adb_server.disconnect(vd.address)


def test_emulator_style_device_is_auto_named(adb_server):
    from coadapt.emulator.manager import pick_ports

    port = pick_ports(1)[0]
    with VirtualDevice(port=port, apps=APPS) as vd:
        adb_server.notify_emulator(port)
        adb_server.wait_for(f"emulator-{port - 1}")
        dev = AdbDevice(f"emulator-{port - 1}", AdbConfig(adb_port=adb_server.port, ui_backend="uiautomator"))
        assert dev.shell("echo hi").strip() == "hi"
        vd.kill()
        with pytest.raises(DeviceOfflineError):
            dev.shell("echo hi")


def test_missing_adb_server_is_reported_not_started(tmp_path):
    from coadapt.emulator.adb_server import free_port

    port = free_port()
    dev = AdbDevice("emulator-5554", AdbConfig(adb_port=port), sleep=Sleeps())
    with pytest.raises(DeviceOfflineError, match=f"adb -P {port} start-server"):
        dev.shell("echo hi")
    assert dev.state() == "absent" and not dev.ping()


# --------------------------------------------------------------------------- hostile text and bad dumps


@pytest.mark.parametrize("backend", ["auto", "uiautomator"])
def test_control_characters_typed_keep_the_dump_valid_xml(adb_server, vdev, backend):
    """Typed control characters must not break the dump: uiautomator writes each character XML
    1.0 forbids as '.', so the dump stays parseable and u2 stays in use."""
    dev = make_device(adb_server, vdev, backend)
    dev.launch(NOTES)
    fab = dev.ui_tree().find(content_desc="New note")[0]
    dev.tap(*fab.bounds.center)
    dev.input_text("a\u0001b\x0bc\x00d\ufffee\ttab")  # u2's clipboard, or the ADB keyboard
    for dialect in ("u2", "stock"):
        parse_xml(vdev.run(vdev.phone.dump_xml, dialect))
    focused = [e for e in dev.ui_tree() if e.focused and e.editable]
    assert focused[0].text == "a.b.c.d.e\ttab"
    assert dev.ui_backend_in_use == ("u2" if backend == "auto" else "uiautomator")
    dev.close()


def test_unparseable_u2_dump_falls_back_for_that_call_only(adb_server, vdev):
    dev = make_device(adb_server, vdev, "auto", dump_retries=1)
    dev.launch(NOTES)
    assert dev.ui_backend_in_use == "u2"
    vdev.run(vdev.phone.fail_u2_dumps, "malformed", 2)
    assert NOTES in dev.ui_tree().packages          # this call: read with `uiautomator dump`
    assert dev.ui_backend_in_use == "u2", "one bad dump must not switch uiautomator2 off for the run"
    assert not vdev.phone.u2_dump_faults
    vdev.run(vdev.phone.fail_u2_dumps, "malformed", 1)
    assert NOTES in dev.ui_tree().packages          # u2's retry reads the good dump
    assert not vdev.phone.u2_dump_faults and dev.ui_backend_in_use == "u2"
    dev.close()


# --------------------------------------------------------------------------- frozen devices


def _timed(fn, limit_s: float = 90.0):
    """(result or exception, seconds) of `fn()`, run in a thread so a hang fails the test."""
    box: list = []

    def run() -> None:
        try:
            box.append(fn())
        except Exception as e:  # the test inspects it
            box.append(e)

    t0 = time.monotonic()
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(limit_s)
    assert box, f"still blocked after {limit_s:.0f}s (adbutils' 600 s default timeout?)"
    return box[0], time.monotonic() - t0


def test_frozen_device_is_declared_dead_within_seconds(adb_server, tmp_path):
    """A device daemon stopped with SIGSTOP keeps its TCP connection open and answers nothing:
    every call must give up on our timeout, never adbutils' 600 s default."""
    import os
    import signal

    from coadapt.android_env.errors import DeviceTimeoutError
    from coadapt.android_env.pool import shell_health
    from coadapt.emulator import manager
    from coadapt.emulator.adb_server import free_port

    rec = manager.start_virtual_devices(1, runtime=tmp_path, adb_port=adb_server.port, apps=(NOTES,),
                                        ports=[free_port()])[0]
    try:
        adb_server.wait_for(rec.serial)
        cfg = AdbConfig(adb_port=adb_server.port, timeout_s=3, retries=1, backoff_s=0.1)
        dev = AdbDevice(rec.serial, cfg, sleep=Sleeps())
        assert dev.ping() and NOTES in (dev.launch(NOTES) or dev.ui_tree().packages)
        assert dev.ui_backend_in_use == "u2"
        os.kill(rec.pid, signal.SIGSTOP)
        try:
            # Health checks (ping, the pool's default) take ~5 s whatever the command timeout.
            slow = AdbDevice(rec.serial, AdbConfig(adb_port=adb_server.port), sleep=Sleeps())  # timeout_s 30
            for name, check in (("ping", dev.ping), ("ping, 30 s config", slow.ping),
                                ("pool shell_health, 30 s config", lambda: shell_health(slow))):
                alive, took = _timed(check)
                print(f"frozen device: {name}: {alive} after {took:.1f}s")
                assert alive is False and took < 10, (name, alive, took)
            for name, call in (("shell", lambda: dev.shell("echo hi")), ("ui_tree (u2)", dev.ui_tree),
                               ("screenshot", dev.screenshot), ("tap", lambda: dev.tap(5, 5))):
                err, took = _timed(call)
                print(f"frozen device: {name}: {type(err).__name__} after {took:.1f}s")
                assert isinstance(err, DeviceError), err
                # u2's own restart-and-retry (~3 x timeout_s), then one ping: no retry, no fallback
                assert took < 3 * 4 + 5 + 3, (name, err, took)
            assert isinstance(_timed(lambda: dev.shell("echo hi"))[0], DeviceTimeoutError)
        finally:
            os.kill(rec.pid, signal.SIGCONT)
        fresh = AdbDevice(rec.serial, cfg, sleep=Sleeps())
        assert _timed(fresh.ping)[0] is True
    finally:
        manager.stop_virtual_devices(runtime=tmp_path, adb_port=adb_server.port)
