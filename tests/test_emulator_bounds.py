"""Virtual devices under hostile or old clients: protocol version negotiation and resource limits.

The client here is written from shared/notes/adb-protocol.md alone (24-byte header of six
little-endian u32, checksum = byte sum of the payload, stop-and-wait WRTE/OKAY, sync and shell v2
records), not from coadapt.emulator.protocol, so a shared misreading of the notes cannot hide.
"""

from __future__ import annotations

import os
import socket
import struct
import time

import pytest

from coadapt.android_env.sim import SimConfig
from coadapt.emulator import adbd, manager, virtual
from coadapt.emulator.adb_server import AdbServer, free_port
from coadapt.emulator.phone import MAX_QUEUED_FAULTS
from coadapt.emulator.virtual import VirtualDevice

APPS = ["com.example.notes"]
HEADER = struct.Struct("<6I")


def _cmd(name: bytes) -> int:
    return struct.unpack("<I", name)[0]


CNXN, OPEN, OKAY, WRTE, CLSE = (_cmd(n) for n in (b"CNXN", b"OPEN", b"OKAY", b"WRTE", b"CLSE"))
V1, V_SKIP_CHECKSUM = 0x01000000, 0x01000001


class RawClient:
    """A host talking to a device port directly: packs and checks every packet itself."""

    def __init__(self, port: int, version: int = V1, maxdata: int = 4096, timeout_s: float = 5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.version, self.maxdata = version, maxdata
        self.received = 0
        self._next = 100
        self.send(CNXN, version, maxdata, b"host::features=shell_v2\0")
        cmd, self.peer_version, self.peer_maxdata, self.banner = self.recv()
        assert cmd == CNXN and self.banner.startswith(b"device::")

    def close(self) -> None:
        self.sock.close()

    def send(self, cmd: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        check = sum(data) & 0xFFFFFFFF if self.version < V_SKIP_CHECKSUM else 0
        self.sock.sendall(HEADER.pack(cmd, arg0, arg1, len(data), check, cmd ^ 0xFFFFFFFF) + data)

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("device closed the transport")
            buf += chunk
        return buf

    def recv(self) -> tuple[int, int, int, bytes]:
        """One packet; asserts magic, the negotiated size limit and (below skip-checksum) the checksum."""
        cmd, arg0, arg1, length, check, magic = HEADER.unpack(self._exact(24))
        assert magic == cmd ^ 0xFFFFFFFF
        assert length <= self.maxdata, f"{length}-byte payload beyond the {self.maxdata} we announced"
        data = self._exact(length) if length else b""
        if self.version < V_SKIP_CHECKSUM:
            assert check == sum(data) & 0xFFFFFFFF, f"bad checksum {check} for {data[:16]!r}"
        else:
            assert check == 0
        self.received += 1
        return cmd, arg0, arg1, data

    def open(self, service: str) -> tuple[int, int]:
        """(our id, device id) of a new stream; device id 0 when the device refused it."""
        local = self._next
        self._next += 1
        self.send(OPEN, local, 0, service.encode() + b"\0")
        cmd, arg0, arg1, _ = self.recv()
        assert arg1 == local
        return local, (arg0 if cmd == OKAY else 0)

    def write(self, ids: tuple[int, int], data: bytes) -> None:
        """Send `data` in WRTEs of at most maxdata, each acknowledged before the next."""
        for i in range(0, len(data), self.maxdata):
            self.send(WRTE, ids[0], ids[1], data[i : i + self.maxdata])
            cmd, _, _, _ = self.recv()
            assert cmd == OKAY

    def read_until_close(self, ids: tuple[int, int], until: bytes | None = None) -> bytes:
        """Everything the device writes on the stream until it closes it (or output ends with `until`)."""
        out = b""
        while True:
            cmd, _arg0, arg1, data = self.recv()
            assert arg1 == ids[0]
            if cmd == WRTE:
                out += data
                self.send(OKAY, ids[0], ids[1])
                if until is not None and out.endswith(until):
                    return out
            elif cmd == CLSE:
                self.send(CLSE, ids[0], ids[1])
                return out

    def run(self, service: str) -> bytes:
        ids = self.open(service)
        assert ids[1], f"device refused {service!r}"
        return self.read_until_close(ids)


def _sync_request(ident: bytes, path: str) -> bytes:
    raw = path.encode()
    return ident + struct.pack("<I", len(raw)) + raw


@pytest.fixture
def vd():
    with VirtualDevice(SimConfig(serial="vd-bounds"), apps=APPS) as dev:
        yield dev


def _rss_mb() -> float:
    for line in open(f"/proc/{os.getpid()}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


# --------------------------------------------------------------------------- version negotiation


def test_v1_client_with_checksums_and_4k_payload_does_shell_exec_push_pull_list(vd):
    c = RawClient(vd.port, version=V1, maxdata=4096)
    try:
        assert (c.peer_version, c.peer_maxdata) == (V1, 4096)  # the device answers at the negotiated values
        assert c.run("shell:echo hello") == b"hello\n"
        assert c.run("exec:getprop ro.serialno").strip() == b"vd-bounds"

        blob = bytes(range(256)) * 600  # 150 KiB: several 64 KiB DATA records, dozens of WRTEs
        sync = c.open("sync:")
        request = _sync_request(b"SEND", "/data/local/tmp/old.bin,33188")
        for i in range(0, len(blob), 65536):
            chunk = blob[i : i + 65536]
            request += b"DATA" + struct.pack("<I", len(chunk)) + chunk
        c.write(sync, request + b"DONE" + struct.pack("<I", 1_700_000_000))
        assert c.read_until_close(sync, until=b"OKAY\0\0\0\0").endswith(b"OKAY\0\0\0\0")

        c.write(sync, _sync_request(b"RECV", "/data/local/tmp/old.bin"))
        raw = c.read_until_close(sync, until=b"DONE\0\0\0\0")
        pulled, pos = b"", 0
        while raw[pos : pos + 4] == b"DATA":
            (n,) = struct.unpack_from("<I", raw, pos + 4)
            pulled += raw[pos + 8 : pos + 8 + n]
            pos += 8 + n
        assert raw[pos:] == b"DONE\0\0\0\0" and pulled == blob

        c.write(sync, _sync_request(b"LIST", "/data/local/tmp"))
        raw = c.read_until_close(sync, until=b"DONE" + bytes(16))
        names, pos = {}, 0
        while raw[pos : pos + 4] == b"DENT":
            mode, size, _mtime, n = struct.unpack_from("<4I", raw, pos + 4)
            names[raw[pos + 20 : pos + 20 + n].decode()] = size
            pos += 20 + n
        assert names["old.bin"] == len(blob)
        c.write(sync, _sync_request(b"QUIT", ""))
        assert c.read_until_close(sync) == b""
        assert c.received > 40  # every one of them checksum-verified
    finally:
        c.close()


def test_current_client_gets_unchecksummed_packets_and_the_smaller_payload(vd):
    c = RawClient(vd.port, version=V_SKIP_CHECKSUM, maxdata=256 * 1024)
    try:
        assert (c.peer_version, c.peer_maxdata) == (V_SKIP_CHECKSUM, 256 * 1024)
        png = c.run("exec:screencap -p")
        assert png.startswith(b"\x89PNG")
    finally:
        c.close()


# --------------------------------------------------------------------------- resource limits


def test_a_huge_fault_count_is_refused_without_queuing(vd):
    c = RawClient(vd.port)
    try:
        out = c.run("shell:cmd coadapt fault dump idle 999999999")
        assert b"Error" in out and b"fault count" in out
        assert len(vd.phone.dump_faults) == 0
        assert c.run(f"shell:cmd coadapt fault dump idle {MAX_QUEUED_FAULTS}") == b""
        assert b"Error" in c.run("shell:cmd coadapt fault u2dump empty -1")
        assert b"Error" in c.run("shell:cmd coadapt fault dump null_root 1")  # the queue is full
        assert len(vd.phone.dump_faults) == MAX_QUEUED_FAULTS
    finally:
        c.close()


def test_stream_flood_is_refused_and_another_client_still_gets_answers(vd, monkeypatch):
    monkeypatch.setattr(adbd, "MAX_STREAMS_PER_CONNECTION", 12)
    flood = RawClient(vd.port, version=V_SKIP_CHECKSUM, maxdata=1024 * 1024)
    other = RawClient(vd.port)
    try:
        opened = []
        for _ in range(12):
            flood.send(OPEN, len(opened) + 1000, 0, b"exec:screencap\0")  # raw frames, never acknowledged
            opened.append(len(opened) + 1000)
        # The device opened up to the cap; every further OPEN is refused with CLSE(0, id) right away.
        refused = []
        for extra in range(20):
            flood.send(OPEN, 5000 + extra, 0, b"shell:echo more\0")
        deadline = time.monotonic() + 10
        while len(refused) < 20 and time.monotonic() < deadline:
            cmd, arg0, arg1, _ = flood.recv()
            if cmd == CLSE and arg0 == 0 and arg1 >= 5000:
                refused.append(arg1)
        assert sorted(refused) == list(range(5000, 5020))
        t0 = time.monotonic()
        assert other.run("shell:echo still here") == b"still here\n"
        assert time.monotonic() - t0 < 5.0
    finally:
        flood.close()
        other.close()


def test_a_reply_over_the_pending_limit_closes_its_stream(vd, monkeypatch):
    monkeypatch.setattr(adbd, "MAX_PENDING_PER_STREAM", 1000)
    c = RawClient(vd.port)
    try:
        assert c.run("exec:screencap -p") == b""  # refused: CLSE without data
        assert c.run("shell:echo small") == b"small\n"
    finally:
        c.close()


@pytest.mark.parametrize("v2", [False, True])
def test_a_long_line_without_newline_ends_the_shell_with_an_error(vd, monkeypatch, v2):
    cap = 256 * 1024
    monkeypatch.setattr(virtual, "MAX_SHELL_LINE", cap)
    c = RawClient(vd.port)
    before = _rss_mb()
    try:
        ids = c.open("shell,v2:" if v2 else "shell:")
        line = b"x" * (cap + 1)
        data = struct.pack("<BI", 0, len(line)) + line if v2 else line
        replied = b""
        for i in range(0, len(data), c.maxdata):  # the device answers with an error before we are done
            c.send(WRTE, ids[0], ids[1], data[i : i + c.maxdata])
            cmd, _, _, payload = c.recv()
            if cmd == WRTE:
                replied = payload
                break
            assert cmd == OKAY
        replied += c.read_until_close(ids)
        assert b"longer than" in replied
        if v2:
            assert replied.endswith(b"\x03\x01\x00\x00\x00\x01")  # exit code 1
        assert _rss_mb() - before < 64
    finally:
        c.close()


def test_a_v2_packet_header_claiming_gigabytes_is_refused(vd):
    c = RawClient(vd.port)
    try:
        ids = c.open("shell,v2:")
        c.send(WRTE, ids[0], ids[1], struct.pack("<BI", 0, 2**31))
        assert c.recv()[0] == OKAY
        out = c.read_until_close(ids)
        assert b"exceeds" in out and out.endswith(b"\x03\x01\x00\x00\x00\x01")
    finally:
        c.close()


def test_a_push_over_the_size_limit_fails_and_stores_nothing(vd, monkeypatch):
    monkeypatch.setattr(virtual, "MAX_PUSH_BYTES", 1024 * 1024)
    c = RawClient(vd.port, version=V_SKIP_CHECKSUM, maxdata=1024 * 1024)
    try:
        sync = c.open("sync:")
        blob = b"\0" * (1024 * 1024 + 1)
        request = _sync_request(b"SEND", "/data/local/tmp/big.bin,33188")
        for i in range(0, len(blob), 65536):
            chunk = blob[i : i + 65536]
            request += b"DATA" + struct.pack("<I", len(chunk)) + chunk
        reply = b""
        for i in range(0, len(request), c.maxdata):
            c.send(WRTE, sync[0], sync[1], request[i : i + c.maxdata])
            cmd, _, _, payload = c.recv()
            if cmd == WRTE:
                reply = payload
                c.send(OKAY, sync[0], sync[1])
                break
        reply += c.read_until_close(sync)
        assert reply.startswith(b"FAIL") and b"too large" in reply
        assert "/data/local/tmp/big.bin" not in vd.sim.files
    finally:
        c.close()


def test_unread_input_holds_back_the_acknowledgement(vd, monkeypatch):
    monkeypatch.setattr(adbd, "MAX_INBOX_PER_STREAM", 8192)
    c = RawClient(vd.port)
    try:
        # A service that reads no input: screencap, blocked on our acknowledgement of its first WRTE.
        ids = c.open("exec:screencap")
        assert c.recv()[0] == WRTE
        for _ in range(3):
            c.send(WRTE, ids[0], ids[1], b"y" * 4096)
        c.sock.settimeout(1.0)

        def replies() -> list[int]:
            got = []
            try:
                while True:
                    got.append(c.recv()[0])
            except (TimeoutError, socket.timeout):
                return got

        assert replies() == [OKAY, OKAY]  # the bytes beyond the inbox limit are not acknowledged
        c.send(WRTE, ids[0], ids[1], b"y" * 4096)  # writing on regardless of flow control
        assert replies() == [CLSE]
    finally:
        c.close()


def test_oversize_http_requests_to_the_u2_server_are_refused(vd):
    vd.run(vd.phone.write_file, virtual.U2_JAR, b"jar", 0o644, 0)
    c = RawClient(vd.port, version=V_SKIP_CHECKSUM, maxdata=1024 * 1024)
    try:
        server = c.open("shell:CLASSPATH=/data/local/tmp/u2.jar app_process / com.wetest.uia2.Main")
        assert b"Starting Server" in c.read_until_close(server, until=b"Starting Server\n")
        for head, status in ((b"POST /jsonrpc/0 HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", b"413"),
                             (b"GET / HTTP/1.1\r\nX: " + b"h" * (virtual.MAX_HTTP_HEAD + 10), b"431")):
            http = c.open("tcp:9008")
            assert http[1]
            c.write(http, head)
            assert c.read_until_close(http).startswith(b"HTTP/1.1 " + status)
    finally:
        c.close()


def test_connections_beyond_the_limit_are_closed(vd, monkeypatch):
    monkeypatch.setattr(adbd, "MAX_CONNECTIONS", 2)
    a, b = RawClient(vd.port), RawClient(vd.port)
    try:
        with pytest.raises((EOFError, ConnectionError, AssertionError)):
            RawClient(vd.port)
        assert a.run("shell:echo a") == b"a\n"
    finally:
        a.close()
        b.close()


# --------------------------------------------------------------------------- restart


@pytest.mark.slow
def test_a_restarted_connect_style_device_is_listed_at_once(tmp_path):
    with AdbServer() as server:
        rec = manager.start_virtual_devices(1, ports=[free_port()], adb_port=server.port, runtime=tmp_path, apps=tuple(APPS))[0]
        try:
            server.wait_for(rec.serial)
            os.kill(rec.pid, 9)
            new = manager.restart_virtual_device(rec.serial, runtime=tmp_path, adb_port=server.port)
            assert new.pid != rec.pid
            assert server.devices().get(rec.serial) == "device"  # not "offline" until the server's 10 s retry
        finally:
            manager.stop_virtual_devices(runtime=tmp_path, adb_port=server.port)
