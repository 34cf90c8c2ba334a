"""A pure-Python adbd transport: accepts the adb server over TCP and multiplexes service streams.

The adb server connects, sends CNXN, and we answer with our own CNXN (no AUTH: the device is
"authorized", like `ro.adb.secure=0`). Each OPEN names a service; `opener(name)` returns the
coroutine that serves it (or None to refuse with CLSE). Streams use classic stop-and-wait flow
control: every WRTE we send waits for the host's OKAY before the next one. Protocol facts:
shared/notes/adb-protocol.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Awaitable, Callable

from .protocol import (
    A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_STLS, A_VERSION, A_WRTE, HEADER, MAX_PAYLOAD, Message,
    ProtocolError, unpack_header,
)

log = logging.getLogger(__name__)

ACK_TIMEOUT_S = 120.0
"""How long a stream waits for the host to acknowledge one WRTE before giving up on it."""


class StreamClosed(Exception):
    """The host closed the stream (or the whole transport) while we were using it."""


class Stream:
    """One service stream inside a transport connection, seen from the device side."""

    def __init__(self, conn: "_Connection", local_id: int, remote_id: int, service: str):
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._readable = asyncio.Event()
        self._acked = asyncio.Event()
        self._acked.set()
        self.peer_closed = False
        self.closed = False

    # ---------------------------------------------------------------- fed by the connection

    def _feed(self, data: bytes) -> None:
        if data:
            self._chunks.append(data)
            self._buffered += len(data)
        self._readable.set()

    def _peer_close(self) -> None:
        self.peer_closed = True
        self._readable.set()
        self._acked.set()

    def _ack(self) -> None:
        self._acked.set()

    # ---------------------------------------------------------------- used by services

    async def read(self) -> bytes:
        """The next bytes the host sent; b"" once the host closed the stream."""
        while not self._chunks:
            if self.peer_closed or self.closed:
                return b""
            self._readable.clear()
            await self._readable.wait()
        chunk = self._chunks.popleft()
        self._buffered -= len(chunk)
        return chunk

    async def read_exact(self, n: int) -> bytes:
        """Exactly `n` bytes; EOFError if the host closes first."""
        out = bytearray()
        while len(out) < n:
            if not self._chunks:
                chunk = await self.read()
                if not chunk:
                    raise EOFError(f"stream {self.service!r} closed after {len(out)} of {n} bytes")
                self._chunks.appendleft(chunk)
                self._buffered += len(chunk)
            chunk = self._chunks.popleft()
            take = min(n - len(out), len(chunk))
            out += chunk[:take]
            if take < len(chunk):
                self._chunks.appendleft(chunk[take:])
            self._buffered -= take
        return bytes(out)

    async def write(self, data: bytes) -> None:
        """Send `data` as WRTE messages of at most the negotiated payload size."""
        view = memoryview(data)
        step = self.conn.max_payload
        for start in range(0, len(view), step):
            if self.peer_closed or self.closed:
                raise StreamClosed(self.service)
            self._acked.clear()
            self.conn.send(Message(A_WRTE, self.local_id, self.remote_id, bytes(view[start : start + step])))
            try:
                await asyncio.wait_for(self._acked.wait(), ACK_TIMEOUT_S)
            except asyncio.TimeoutError as e:
                raise StreamClosed(f"{self.service}: host never acknowledged a write") from e
            if self.peer_closed:
                raise StreamClosed(self.service)

    def close(self) -> None:
        """Close our side (CLSE); idempotent."""
        if self.closed:
            return
        self.closed = True
        if not self.peer_closed:
            self.conn.send(Message(A_CLSE, self.local_id, self.remote_id))
        self.conn.streams.pop(self.local_id, None)
        self._readable.set()


Service = Callable[[Stream], Awaitable[None]]
Opener = Callable[[str], "Service | None"]


class _Connection:
    """One TCP connection from an adb server (one transport)."""

    def __init__(self, server: "AdbdServer", reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.server = server
        self.reader = reader
        self.writer = writer
        self.max_payload = 4096
        self.streams: dict[int, Stream] = {}
        self.tasks: set[asyncio.Task] = set()
        self._next_id = 1

    def send(self, msg: Message) -> None:
        if not self.writer.is_closing():
            self.writer.write(msg.pack())

    async def run(self) -> None:
        peer = self.writer.get_extra_info("peername")
        log.debug("transport from %s", peer)
        try:
            while True:
                header = await self.reader.readexactly(HEADER.size)
                command, arg0, arg1, length = unpack_header(header)
                data = await self.reader.readexactly(length) if length else b""
                await self._handle(Message(command, arg0, arg1, data))
                await self.writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except ProtocolError as e:
            log.warning("dropping transport from %s: %s", peer, e)
        finally:
            self.abort()

    async def _handle(self, msg: Message) -> None:
        cmd = msg.command
        if cmd == A_CNXN:
            # Keep the smaller payload limit; a reconnecting host may send CNXN again.
            self.max_payload = max(4096, min(msg.arg1, MAX_PAYLOAD))
            self.send(Message(A_CNXN, min(msg.arg0, A_VERSION) or A_VERSION, MAX_PAYLOAD, self.server.banner()))
        elif cmd == A_OPEN:
            self._open(msg.arg0, msg.data.rstrip(b"\0").decode("utf-8", errors="replace"))
        elif cmd == A_WRTE:
            stream = self.streams.get(msg.arg1)
            if stream is None:
                self.send(Message(A_CLSE, 0, msg.arg0))
                return
            stream._feed(msg.data)
            self.send(Message(A_OKAY, stream.local_id, stream.remote_id))
        elif cmd == A_OKAY:
            stream = self.streams.get(msg.arg1)
            if stream is not None:
                stream._ack()
        elif cmd == A_CLSE:
            stream = self.streams.pop(msg.arg1, None)
            if stream is not None:
                stream._peer_close()
        elif cmd in (A_AUTH, A_STLS):
            log.debug("ignoring %s from host (we never ask for auth or TLS)", msg)
        else:
            log.debug("ignoring unknown message %s", msg)

    def _open(self, remote_id: int, name: str) -> None:
        service = self.server.opener(name)
        if service is None:
            log.debug("refusing service %r", name)
            self.send(Message(A_CLSE, 0, remote_id))
            return
        local_id = self._next_id
        self._next_id += 1
        stream = Stream(self, local_id, remote_id, name)
        self.streams[local_id] = stream
        self.send(Message(A_OKAY, local_id, remote_id))
        task = asyncio.get_running_loop().create_task(self._serve(stream, service))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _serve(self, stream: Stream, service: Service) -> None:
        try:
            await service(stream)
        except (StreamClosed, EOFError, ConnectionError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken service must not take the transport down
            log.exception("service %r failed", stream.service)
        finally:
            stream.close()
            if not self.writer.is_closing():
                try:
                    await self.writer.drain()
                except ConnectionError:
                    pass

    def abort(self) -> None:
        for stream in list(self.streams.values()):
            stream._peer_close()
        self.streams.clear()
        for task in list(self.tasks):
            task.cancel()
        self.writer.transport.abort()
        self.server.connections.discard(self)


class AdbdServer:
    """Listens on `host:port` and serves each adb server that connects.

    `banner` is called at every CNXN so the advertised state stays current; `opener` maps a
    service name to its coroutine (None refuses it).
    """

    def __init__(self, opener: Opener, banner: Callable[[], bytes], host: str = "127.0.0.1", port: int = 0):
        self.opener = opener
        self.banner = banner
        self.host = host
        self.port = port
        self.connections: set[_Connection] = set()
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> int:
        """Start listening; returns the bound port."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(self, reader, writer)
        self.connections.add(conn)
        await conn.run()

    async def stop(self) -> None:
        """Stop listening and drop every transport (the host sees the device go away)."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.abort()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            except asyncio.TimeoutError:
                pass
            self._server = None
