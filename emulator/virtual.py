"""VirtualDevice: a simulated phone served over the ADB device transport on a TCP port.

The real adb server, adbutils and uiautomator2 drive it exactly like an emulator: shell (v1 and
v2, with exit codes), exec, sync (STAT/LIST/SEND/RECV) and `tcp:9008` to a uiautomator2 server
that runs while its `app_process` shell stream stays open, as on a real device. Listening on an
odd port in 5555..5585 makes adb servers auto-detect it as `emulator-(port-1)`; any other port
is reached with `adb connect 127.0.0.1:PORT`. The server runs on its own event-loop thread, and
the phone is touched from one worker thread, so calls never interleave.
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, TypeVar

from coadapt.android_env.sim import SimConfig, SimDevice
from coadapt.android_env.sim.shell import run_shell
from coadapt.apps import make_apps

from . import protocol as p
from .adbd import AdbdServer, Service, Stream
from .auth import load_keys
from .phone import Phone
from .u2server import U2Rpc, handle_http, parse_request

log = logging.getLogger(__name__)

T = TypeVar("T")

FEATURES: tuple[str, ...] = ("shell_v2",)
"""What the CNXN banner advertises: only what is implemented (no stat_v2/ls_v2/sendrecv_v2,
so clients stay on sync v1; no delayed_ack, so flow control stays stop-and-wait)."""
EMULATOR_PORTS = range(5555, 5586, 2)
"""Odd ports adb servers scan for emulators; a device on port p is `emulator-(p-1)`."""
MAX_SHELL_LINE = 1024 * 1024
"""Bytes an interactive shell buffers while waiting for a newline; a longer line ends the shell
with an error."""
MAX_SHELL_PACKET = 1024 * 1024
"""Largest shell-v2 packet an interactive shell accepts from the host (adbd's buffer is 1 MiB)."""
MAX_HTTP_HEAD = 64 * 1024
"""Bytes of HTTP request line and headers the uiautomator2 server reads before refusing (431)."""
MAX_HTTP_BODY = 16 * 1024 * 1024
"""Largest JSON-RPC request body the uiautomator2 server accepts (413 beyond)."""
MAX_PUSH_BYTES = 64 * 1024 * 1024
"""Largest file one sync SEND may carry (the u2.jar is 3.7 MB); beyond it the push FAILs."""
_U2_LAUNCH = re.compile(r"app_process\b.*\bcom\.wetest\.uia2\.Main\b(?:.*?-p\s+(\d+))?")
U2_JAR = "/data/local/tmp/u2.jar"


def _http_refusal(code: int, reason: str) -> bytes:
    body = f'{{"error": "{reason}"}}'.encode()
    return (f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


def adb_serial_for(host: str, port: int) -> str:
    """The serial an adb server on this machine lists for a device listening on host:port."""
    if host in ("127.0.0.1", "localhost") and port in EMULATOR_PORTS:
        return f"emulator-{port - 1}"
    return f"{host}:{port}"


class VirtualDevice:
    """One simulated phone behind an ADB transport listener (see module docstring).

    `start()` binds and serves in a background thread; `stop()` (or `kill()`) drops every
    connection, so the adb server sees the device vanish. Use as a context manager in tests.
    `auth_keys` (an adbkey.pub-style file) turns ADB authentication on: only adb servers holding
    one of its keys may use the device; the others list it as "unauthorized".
    """

    def __init__(
        self,
        config: SimConfig | None = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        apps: list[str] | None = None,
        boot_delay_s: float = 0.0,
        auth_keys: Path | None = None,
    ):
        self.sim = SimDevice(make_apps(apps), config or SimConfig())
        self.phone = Phone(self.sim, boot_delay_s=boot_delay_s)
        self.rpc = U2Rpc(self.phone)
        self.host = host
        keys = load_keys(auth_keys) if auth_keys is not None else None
        self._server = AdbdServer(self._open, self._banner, host, port, auth_keys=keys)
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"vd-{self.sim.serial}")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._u2_streams: set[Stream] = set()

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def adb_serial(self) -> str:
        """How an adb server on this machine names the device (auto-detected or connected)."""
        return adb_serial_for(self.host, self.port)

    @property
    def address(self) -> str:
        """host:port for `adb connect`."""
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout_s: float = 10.0) -> "VirtualDevice":
        """Bind the port and serve in a background thread; returns self once listening."""
        if self.running:
            return self
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"adbd-{self.sim.serial}", daemon=True)
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._server.start(), self._loop).result(timeout_s)
        except BaseException:
            self.stop()
            raise
        log.info("virtual device %s listening on %s", self.sim.serial, self.address)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close the listener and every transport; the device vanishes from adb at once."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._server.stop(), loop).result(timeout_s)
            except Exception:  # stopping must not fail on a half-dead loop
                log.debug("server stop on %s raised", self.address, exc_info=True)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"vd-{self.sim.serial}")

    kill = stop

    def __enter__(self) -> "VirtualDevice":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self, fn: Callable[..., T], *args: Any, timeout_s: float = 30.0) -> T:
        """Call `fn(*args)` on the phone's worker thread (thread-safe access for tests)."""
        return self._executor.submit(fn, *args).result(timeout_s)

    def kill_u2_server(self) -> int:
        """End every running uiautomator2 server (their launch streams close); returns how many."""
        streams = list(self._u2_streams)
        if self._loop is not None:
            for s in streams:
                self._loop.call_soon_threadsafe(s.close)
        return len(streams)

    # ------------------------------------------------------------------ transport hooks

    def _banner(self) -> bytes:
        props = {"ro.product.name": "sim", "ro.product.model": "coadapt_virtual", "ro.product.device": "sim"}
        return p.device_banner(props, FEATURES)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _open(self, name: str) -> Service | None:
        service, options, arg = p.parse_service(name)
        if service == "shell":
            m = _U2_LAUNCH.search(arg)
            if m:
                return lambda s: self._u2_process(s, int(m.group(1) or 9008), "v2" in options)
            if not arg:
                return lambda s: self._interactive(s, "v2" in options)
            return lambda s: self._shell(s, arg, "v2" in options)
        if service == "exec":
            return lambda s: self._shell(s, arg, False)
        if service == "sync":
            return self._sync
        if service == "tcp":
            try:
                port = int(arg.rsplit(":", 1)[-1])
            except ValueError:
                return None
            if self.phone.u2_servers.get(port):
                return self._http
            return None  # nothing listens there: adbd refuses, the client sees "closed"
        if service == "root":
            return lambda s: s.write(b"adbd cannot run as root in production builds\n")
        log.debug("unsupported service %r", name)
        return None

    # ------------------------------------------------------------------ services

    async def _shell(self, stream: Stream, cmd: str, v2: bool) -> None:
        async with stream.turn():
            out, code = await self._call(run_shell, self.phone, cmd)
            if v2:
                await stream.write(p.shell_packet(p.SHELL_STDOUT, out) + p.shell_exit(code) if out else p.shell_exit(code))
            elif out:
                await stream.write(out)

    async def _interactive(self, stream: Stream, v2: bool) -> None:
        """`adb shell` with no command: run each line the host types, until `exit` or EOF.
        A line or v2 packet over its limit ends the shell with an error instead of growing."""
        raw, text = bytearray(), bytearray()
        stdin_closed = False
        while not stdin_closed:
            chunk = await stream.read()
            if not chunk:
                return
            if v2:
                raw += chunk
                while len(raw) >= p.SHELL_HEADER.size:
                    kind, length = p.SHELL_HEADER.unpack_from(raw)
                    if length > MAX_SHELL_PACKET:
                        await self._shell_error(stream, v2, f"shell packet of {length} bytes exceeds {MAX_SHELL_PACKET}")
                        return
                    end = p.SHELL_HEADER.size + length
                    if len(raw) < end:
                        break
                    if kind == p.SHELL_STDIN:
                        text += raw[p.SHELL_HEADER.size : end]
                    elif kind == p.SHELL_CLOSE_STDIN:
                        stdin_closed = True
                    del raw[:end]
            else:
                text += chunk
            lines: list[bytes] = []
            if b"\n" in text:
                *lines, rest = bytes(text).split(b"\n")
                text = bytearray(rest)
            if len(text) > MAX_SHELL_LINE:
                await self._shell_error(stream, v2, f"input line longer than {MAX_SHELL_LINE} bytes")
                return
            for line in lines:
                cmd = line.decode(errors="replace").strip()
                if cmd == "exit":
                    stdin_closed = True
                    break
                async with stream.turn():
                    out, _code = await self._call(run_shell, self.phone, cmd)
                    await stream.write(p.shell_packet(p.SHELL_STDOUT, out) if v2 else out)
        if v2:
            await stream.write(p.shell_exit(0))

    @staticmethod
    async def _shell_error(stream: Stream, v2: bool, why: str) -> None:
        msg = f"/system/bin/sh: {why}\n".encode()
        await stream.write(p.shell_packet(p.SHELL_STDERR, msg) + p.shell_exit(1) if v2 else msg)

    async def _u2_process(self, stream: Stream, port: int, v2: bool) -> None:
        """`app_process ... com.wetest.uia2.Main`: the server lives while this stream is open."""
        jar = await self._call(self.phone.read_file, U2_JAR)
        if not jar:
            msg = b"Error: Could not find or load main class com.wetest.uia2.Main\n"
            await stream.write(p.shell_packet(p.SHELL_STDERR, msg) + p.shell_exit(1) if v2 else msg)
            return
        servers = self.phone.u2_servers
        servers[port] = servers.get(port, 0) + 1
        self._u2_streams.add(stream)
        try:
            banner = b"[server] INFO: [UiAutomator2Server] Starting Server\n"
            await stream.write(p.shell_packet(p.SHELL_STDOUT, banner) if v2 else banner)
            while await stream.read():
                pass
        finally:
            self._u2_streams.discard(stream)
            servers[port] -= 1
            if not servers[port]:
                del servers[port]

    async def _http(self, stream: Stream) -> None:
        raw = bytearray()
        while b"\r\n\r\n" not in raw:
            if len(raw) > MAX_HTTP_HEAD:
                await stream.write(_http_refusal(431, "Request Header Fields Too Large"))
                return
            chunk = await stream.read()
            if not chunk:
                return
            raw += chunk
        method, path, headers, head_len = parse_request(bytes(raw))
        body = raw[head_len:]
        length = headers.get("content-length", "0") or "0"
        want = int(length) if length.isdigit() else -1
        if not 0 <= want <= MAX_HTTP_BODY:
            await stream.write(_http_refusal(413, "Payload Too Large"))
            return
        while len(body) < want:
            chunk = await stream.read()
            if not chunk:
                return
            body += chunk
        async with stream.turn():
            reply = await self._call(handle_http, self.rpc, method, path, bytes(body[:want]))
            await stream.write(reply)

    async def _sync(self, stream: Stream) -> None:
        while True:
            try:
                head = await stream.read_exact(8)
            except EOFError:
                return
            ident, length = p.SYNC_REQUEST.unpack(head)
            if length > p.SYNC_MAX_PATH:
                await stream.write(p.sync_fail(f"path too long: {length}"))
                return
            path = (await stream.read_exact(length)).decode("utf-8", errors="replace") if length else ""
            if ident == b"STAT":
                async with stream.turn():
                    mode, size, mtime = await self._call(self.phone.stat, path)
                    await stream.write(p.sync_stat(mode, size, mtime))
            elif ident == b"LIST":
                async with stream.turn():
                    entries = await self._call(self.phone.list_dir, path)
                    await stream.write(b"".join(p.sync_dent(m, s, t, n) for n, m, s, t in entries) + p.sync_done_dent())
            elif ident == b"SEND":
                if not await self._sync_send(stream, path):
                    return  # like adbd: after a failed transfer the sync service ends
            elif ident == b"RECV":
                async with stream.turn():
                    await self._sync_recv(stream, path)
            elif ident == b"QUIT":
                return
            else:
                await stream.write(p.sync_fail(f"unsupported sync request {ident!r}"))
                return

    async def _sync_recv(self, stream: Stream, path: str) -> None:
        """Send a file as DATA records, one transport payload's worth of them per write."""
        data = await self._call(self.phone.read_file, path)
        if data is None:
            await stream.write(p.sync_fail("No such file or directory"))
            return
        step, batch = p.SYNC_DATA_MAX, bytearray()
        for i in range(0, len(data), step):
            batch += p.sync_data(data[i : i + step])
            if len(batch) >= stream.conn.max_payload:
                await stream.write(bytes(batch))
                batch.clear()
        await stream.write(bytes(batch + p.sync_status(b"DONE")))

    async def _sync_send(self, stream: Stream, spec: str) -> bool:
        path, _, mode_text = spec.rpartition(",")
        if not path:
            path, mode_text = spec, "33188"
        mode = int(mode_text) if mode_text.isdigit() else 0o100644
        parts: list[bytes] = []
        size = 0
        while True:
            ident, value = struct.unpack("<4sI", await stream.read_exact(8))
            if ident == b"DATA":
                if value > p.SYNC_DATA_MAX:
                    await stream.write(p.sync_fail(f"data chunk of {value} bytes exceeds {p.SYNC_DATA_MAX}"))
                    return False
                size += value
                if size > MAX_PUSH_BYTES:
                    await stream.write(p.sync_fail(f"file too large: over {MAX_PUSH_BYTES} bytes"))
                    return False
                parts.append(await stream.read_exact(value))
            elif ident == b"DONE":
                mtime = value or int(time.time())
                async with stream.turn():
                    try:
                        await self._call(self.phone.write_file, path, b"".join(parts), mode, mtime)
                    except OSError as e:
                        await stream.write(p.sync_fail(e.strerror or str(e)))
                        return False
                    await stream.write(p.sync_status(b"OKAY"))
                return True
            else:
                await stream.write(p.sync_fail(f"unexpected {ident!r} during SEND"))
                return False
