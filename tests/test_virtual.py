"""Virtual devices speak the real ADB device protocol: the adb CLI, adbutils and uiautomator2
drive them through a real adb server (bundled with adbutils, on a private port)."""

from __future__ import annotations

import hashlib
import io
import struct
import time

import pytest
from PIL import Image

from coadapt.android_env.sim import SimConfig
from coadapt.android_env.uitree import parse_xml
from coadapt.emulator import protocol as p
from coadapt.emulator.adb_server import AdbServer
from coadapt.emulator.manager import pick_ports, probe
from coadapt.emulator.virtual import FEATURES, VirtualDevice, adb_serial_for

NOTES = "com.example.notes"
APPS = [NOTES]

# --------------------------------------------------------------------------- wire formats


def test_message_round_trip_and_magic():
    msg = p.Message(p.A_OPEN, 13, 0, b"shell:echo hi\0")
    raw = msg.pack()
    assert len(raw) == 24 + len(msg.data)
    assert p.unpack_header(raw[:24]) == (p.A_OPEN, 13, 0, len(msg.data))
    bad = raw[:20] + b"\0\0\0\0"
    with pytest.raises(p.ProtocolError, match="magic"):
        p.unpack_header(bad)
    huge = p.HEADER.pack(p.A_WRTE, 1, 1, p.MAX_PAYLOAD + 1, 0, p.A_WRTE ^ 0xFFFFFFFF)
    with pytest.raises(p.ProtocolError, match="exceeds"):
        p.unpack_header(huge)


@pytest.mark.parametrize("name, parsed", [
    ("shell,v2,TERM=xterm,raw:echo hello\0", ("shell", ["v2", "TERM=xterm", "raw"], "echo hello")),
    ("shell:ls -l", ("shell", [], "ls -l")),
    ("exec:screencap '-p'", ("exec", [], "screencap '-p'")),
    ("sync:", ("sync", [], "")),
    ("tcp:9008", ("tcp", [], "9008")),
])
def test_parse_service(name, parsed):
    assert p.parse_service(name) == parsed


def test_shell_v2_exit_packet_is_never_empty():
    assert p.shell_exit(3) == b"\x03\x01\x00\x00\x00\x03"
    assert p.shell_packet(p.SHELL_STDOUT, b"hi") == b"\x01\x02\x00\x00\x00hi"


def test_banner_lists_only_implemented_features():
    banner = p.device_banner({"ro.product.model": "m"}, FEATURES)
    assert banner == b"device::ro.product.model=m;features=shell_v2"


def test_serial_naming():
    assert adb_serial_for("127.0.0.1", 5557) == "emulator-5556"
    assert adb_serial_for("127.0.0.1", 5556) == "127.0.0.1:5556"
    assert adb_serial_for("127.0.0.1", 40000) == "127.0.0.1:40000"


# --------------------------------------------------------------------------- through the adb server


@pytest.fixture(scope="module")
def adb_server():
    with AdbServer() as server:
        yield server


@pytest.fixture(scope="module")
def vd(adb_server):
    with VirtualDevice(SimConfig(serial="vd-cli"), apps=APPS) as dev:
        assert "connected" in adb_server.connect(dev.address)
        adb_server.wait_for(dev.adb_serial)
        yield dev
        adb_server.disconnect(dev.address)


def adb(server: AdbServer, serial: str, *args: str):
    return server.run("-s", serial, *args)


def test_probe_handshake(vd):
    assert probe(vd.host, vd.port)
    assert not probe("127.0.0.1", pick_ports(1, taken={vd.port})[0])


def test_adb_devices_lists_connected_and_emulator_style(adb_server, vd):
    port = pick_ports(1)[0]
    with VirtualDevice(port=port, apps=APPS) as emu:
        adb_server.notify_emulator(port)
        adb_server.wait_for(emu.adb_serial)
        out = adb_server.run("devices", "-l", text=True).stdout
        lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line.strip()}
        assert lines[vd.adb_serial][0] == "device"
        assert lines[f"emulator-{port - 1}"][0] == "device"
        assert "model:coadapt_virtual" in lines[vd.adb_serial]
    deadline = time.monotonic() + 5
    while adb_server.devices().get(f"emulator-{port - 1}") == "device" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert adb_server.devices().get(f"emulator-{port - 1}") != "device"  # offline, then gone


def test_shell_exit_codes_and_output(adb_server, vd):
    r = adb(adb_server, vd.adb_serial, "shell", "echo", "hello")
    assert (r.returncode, r.stdout) == (0, b"hello\n")
    assert adb(adb_server, vd.adb_serial, "shell", "false").returncode == 1
    r = adb(adb_server, vd.adb_serial, "shell", "nosuchcommand")
    assert r.returncode == 127 and b"not found" in r.stdout
    d = adb_server.client().device(vd.adb_serial)
    assert d.shell2("getprop ro.build.version.sdk").output.strip() == "34"  # v1 + X4EXIT marker
    r2 = d.shell2("echo v2; false", v2=True)
    assert (r2.output.strip(), r2.returncode) == ("v2", 1)


def test_exec_out_screencap_is_a_png_of_the_screen(adb_server, vd):
    r = adb(adb_server, vd.adb_serial, "exec-out", "screencap", "-p")
    assert r.returncode == 0 and r.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    img = Image.open(io.BytesIO(r.stdout))
    assert img.size == (vd.sim.width, vd.sim.height)


def test_pull_a_dump_file_and_push_back(adb_server, vd, tmp_path):
    r = adb(adb_server, vd.adb_serial, "shell", "uiautomator", "dump", "/sdcard/window_dump.xml")
    assert b"UI hierchary dumped to: /sdcard/window_dump.xml" in r.stdout
    r = adb(adb_server, vd.adb_serial, "pull", "/sdcard/window_dump.xml", str(tmp_path / "dump.xml"))
    assert r.returncode == 0, r.stderr
    tree = parse_xml((tmp_path / "dump.xml").read_bytes())
    assert tree.screen_bounds.right == vd.sim.width
    r = adb(adb_server, vd.adb_serial, "push", str(tmp_path / "dump.xml"), "/data/local/tmp/copy.xml")
    assert r.returncode == 0, r.stderr
    assert vd.sim.files["/data/local/tmp/copy.xml"] == (tmp_path / "dump.xml").read_bytes()
    r = adb(adb_server, vd.adb_serial, "pull", "/sdcard/nope.xml", str(tmp_path / "nope.xml"))
    assert r.returncode != 0 and b"does not exist" in r.stderr


def test_adbutils_sync_stat_list_push_read(adb_server, vd):
    d = adb_server.client().device(vd.adb_serial)
    blob = bytes(range(256)) * 1000  # several DATA chunks, binary-safe
    assert d.sync.push(blob, "/data/local/tmp/blob.bin", check=True) == len(blob)
    st = d.sync.stat("/data/local/tmp/blob.bin")
    assert st.size == len(blob) and st.mode & 0o777 == 0o755
    assert d.sync.read_bytes("/data/local/tmp/blob.bin") == blob
    assert "blob.bin" in [f.path for f in d.sync.list("/data/local/tmp")]
    assert not d.sync.exists("/data/local/tmp/missing")
    assert d.shell("toybox md5sum /data/local/tmp/blob.bin").split()[0] == hashlib.md5(blob).hexdigest()


def test_adbutils_high_level_calls(adb_server, vd):
    d = adb_server.client().device(vd.adb_serial)
    assert tuple(d.window_size()) == (vd.sim.width, vd.sim.height)
    assert d.screenshot().size == (vd.sim.width, vd.sim.height)
    d.app_start(NOTES)
    assert d.app_current().package == NOTES
    d.keyevent("HOME")
    assert vd.sim.current_package() == "com.android.launcher3"
    assert d.prop.model == "coadapt-sim"
    assert parse_xml(d.dump_hierarchy()).screen_bounds.right == vd.sim.width


def test_uiautomator2_connects_and_drives(adb_server, vd):
    u2 = pytest.importorskip("uiautomator2")
    d = u2.connect(adb_server.client().device(vd.adb_serial))  # pushes u2.jar, launches the server
    assert vd.sim.files["/data/local/tmp/u2.jar"]
    assert d.info["displayWidth"] == vd.sim.width
    d.app_start(NOTES)
    tree = parse_xml(d.dump_hierarchy())
    assert NOTES in tree.packages
    d(description="New note").click()
    d.send_keys("héllo ✓")
    assert any(e.text == "héllo ✓" and e.focused for e in parse_xml(d.dump_hierarchy()))
    d.press("back")
    d.press("back")
    assert d.xpath('//*[@text="héllo ✓"]').exists
    assert d.screenshot().size == (vd.sim.width, vd.sim.height)
    d.stop_uiautomator()
    assert not vd.phone.u2_servers


def test_fault_injection_over_adb(adb_server, vd):
    d = adb_server.client().device(vd.adb_serial)
    assert d.shell("cmd coadapt fault dump idle 1") == ""
    assert d.shell("uiautomator dump /sdcard/x.xml").strip() == "ERROR: could not get idle state."
    assert "UI hierchary dumped" in d.shell("uiautomator dump /sdcard/x.xml")
    assert "isn't responding" in d.shell(f"cmd coadapt fault anr {NOTES}")
    assert "Application Not Responding: com.example.notes" in d.shell("dumpsys window | grep mCurrentFocus")
    d.shell("cmd coadapt fault clear")
    assert "Application Not Responding" not in d.shell("dumpsys window")


def test_boot_delay_reports_unfinished_boot():
    dev = VirtualDevice(apps=APPS, boot_delay_s=60)
    assert dev.phone.extra_props["sys.boot_completed"] == ""
    from coadapt.android_env.sim.shell import run_shell

    assert run_shell(dev.phone, "getprop sys.boot_completed")[0].strip() == b""


def test_sync_send_rejects_oversize_chunks():
    # A unit test of the sync SEND parser through a raw transport, no adb server involved.
    import socket

    with VirtualDevice(apps=APPS) as dev, socket.create_connection((dev.host, dev.port), timeout=5) as s:
        def send(msg: p.Message) -> None:
            s.sendall(msg.pack())

        def recv() -> p.Message:
            h = _recv(s, 24)
            cmd, a0, a1, n = p.unpack_header(h)
            return p.Message(cmd, a0, a1, _recv(s, n))

        send(p.Message(p.A_CNXN, p.A_VERSION, p.MAX_PAYLOAD, b"host::\0"))
        assert recv().data.startswith(b"device::")
        send(p.Message(p.A_OPEN, 7, 0, b"sync:\0"))
        okay = recv()
        assert okay.command == p.A_OKAY and okay.arg1 == 7
        path = b"/data/local/tmp/x,33188"
        send(p.Message(p.A_WRTE, 7, okay.arg0, b"SEND" + struct.pack("<I", len(path)) + path + b"DATA" + struct.pack("<I", 10**6)))
        assert recv().command == p.A_OKAY  # our WRTE acknowledged
        reply = recv()
        assert reply.command == p.A_WRTE and reply.data.startswith(b"FAIL")
        send(p.Message(p.A_OKAY, 7, okay.arg0))
        assert recv().command == p.A_CLSE


def _recv(s, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf
