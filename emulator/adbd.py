"""A pure-Python adbd transport: accepts the adb server over TCP and multiplexes service streams.

The adb server connects, sends CNXN, and we answer with our own CNXN: without allowed keys the
device is "authorized", like `ro.adb.secure=0`. With allowed keys (`auth_keys`) we first ask for
AUTH as a phone does (see auth.py) and serve nothing until the host proves it holds one of them;
until then the host lists the device as "unauthorized". Each OPEN names a service;
`opener(name)` returns the coroutine that serves it (or None to refuse with CLSE). Streams use
classic stop-and-wait flow control: every WRTE we send waits for the host's OKAY before the next
one, and the host's WRTEs are acknowledged only while the service keeps up reading them. The
transport runs at the version and payload size the host's CNXN negotiates (checksummed packets
for peers older than A_VERSION_SKIP_CHECKSUM). Every buffer is bounded (see the limits below):
what would exceed a limit is refused, never queued. Protocol facts:
shared/notes/adb-protocol.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from typing import AsyncIterator, Awaitable, Callable, Sequence

from . import auth
from .protocol import (
    A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_STLS, A_VERSION, A_VERSION_SKIP_CHECKSUM, A_WRTE, HEADER, MAX_PAYLOAD_V1,
    Message, ProtocolError, negotiate, unpack_header,
)

log = logging.getLogger(__name__)

ACK_TIMEOUT_S = 120.0
"""How long a stream waits for the host to acknowledge one WRTE before giving up on it."""

# Resource limits. A client on loopback must not be able to grow the daemon's memory without
# bound nor starve the other clients of the device; beyond a limit the request is refused.
MAX_CONNECTIONS = 32
"""Transports served at once; a further TCP connection is closed at once."""
MAX_STREAMS_PER_CONNECTION = 128
"""Open streams per transport; a further OPEN is refused with CLSE (the client sees "closed")."""
MAX_BUSY_PER_CONNECTION = 8
"""Streams of one transport computing or sending a reply at once; the rest wait their turn, so a
client that floods OPENs queues behind itself while other transports keep their own turns."""
MAX_PENDING_PER_STREAM = 32 * 1024 * 1024
"""Bytes one reply may hold before the host acknowledged them (a raw 1080x2400 screencap is 10 MB);
a larger reply closes the stream instead."""
MAX_PENDING_PER_CONNECTION = 64 * 1024 * 1024
"""Unacknowledged reply bytes of all streams of one transport; a reply beyond it closes its stream."""
MAX_AUTH_ATTEMPTS = 64
"""Signatures and public keys one transport may offer; past it the transport is dropped."""
MAX_INBOX_PER_STREAM = 1024 * 1024
"""Bytes the host may send that the service has not read yet; past it our OKAY is held back, so
the host (stop-and-wait) sends nothing more until the service reads."""


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
        self._ack_owed = False
        self.peer_closed = False
        self.closed = False

    # ---------------------------------------------------------------- fed by the connection

    def _feed(self, data: bytes) -> None:
        """Queue a WRTE's payload; acknowledge it now, or once the service has read enough."""
        if self._ack_owed:
            # The host sent again before we acknowledged: it ignores flow control, so it could
            # fill any buffer. Drop the stream instead.
            log.warning("closing %r: the host wrote past an unacknowledged WRTE", self.service)
            self._chunks.clear()
            self._buffered = 0
            self.close()
            return
        if data:
            self._chunks.append(data)
            self._buffered += len(data)
        self._readable.set()
        if self._buffered <= MAX_INBOX_PER_STREAM:
            self.conn.send(Message(A_OKAY, self.local_id, self.remote_id))
        else:
            self._ack_owed = True

    def _consumed(self) -> None:
        if self._ack_owed and self._buffered <= MAX_INBOX_PER_STREAM and not (self.closed or self.peer_closed):
            self._ack_owed = False
            self.conn.send(Message(A_OKAY, self.local_id, self.remote_id))

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
        self._consumed()
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
        self._consumed()
        return bytes(out)

    async def write(self, data: bytes) -> None:
        """Send `data` as WRTE messages of at most the negotiated payload size. StreamClosed if
        the host goes away, or if `data` would exceed the unacknowledged-bytes limits."""
        conn = self.conn
        if len(data) > MAX_PENDING_PER_STREAM or conn.pending + len(data) > MAX_PENDING_PER_CONNECTION:
            log.warning("closing %r: a reply of %d bytes with %d unacknowledged on the transport exceeds the limit",
                        self.service, len(data), conn.pending)
            raise StreamClosed(f"{self.service}: reply of {len(data)} bytes over the pending limit")
        view = memoryview(data)
        step = conn.max_payload
        conn.pending += len(data)
        try:
            for start in range(0, len(view), step):
                if self.peer_closed or self.closed:
                    raise StreamClosed(self.service)
                self._acked.clear()
                conn.send(Message(A_WRTE, self.local_id, self.remote_id, bytes(view[start : start + step])))
                try:
                    await asyncio.wait_for(self._acked.wait(), ACK_TIMEOUT_S)
                except asyncio.TimeoutError as e:
                    raise StreamClosed(f"{self.service}: host never acknowledged a write") from e
                if self.peer_closed or self.closed:
                    raise StreamClosed(self.service)
        finally:
            conn.pending -= len(data)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold one of the transport's busy slots while computing and sending a reply."""
        async with self.conn.busy:
            yield

    def close(self) -> None:
        """Close our side (CLSE); idempotent."""
        if self.closed:
            return
        self.closed = True
        if not self.peer_closed:
            self.conn.send(Message(A_CLSE, self.local_id, self.remote_id))
        self.conn.streams.pop(self.local_id, None)
        self._readable.set()
        self._acked.set()


Service = Callable[[Stream], Awaitable[None]]
Opener = Callable[[str], "Service | None"]


class _Connection:
    """One TCP connection from an adb server (one transport)."""

    def __init__(self, server: "AdbdServer", reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.server = server
        self.reader = reader
        self.writer = writer
        self.version = A_VERSION
        self.max_payload = MAX_PAYLOAD_V1
        self.streams: dict[int, Stream] = {}
        self.tasks: set[asyncio.Task] = set()
        self.pending = 0
        """Bytes of replies being sent and not yet acknowledged, over all streams."""
        self.busy = asyncio.Semaphore(MAX_BUSY_PER_CONNECTION)
        self._next_id = 1
        self.authorized = server.auth_keys is None
        """Whether the host may open streams (always, unless the server checks keys)."""
        self._token = b""
        self._auth_attempts = 0

    @property
    def checksummed(self) -> bool:
        """Whether packets carry data_check (a peer older than A_VERSION_SKIP_CHECKSUM)."""
        return self.version < A_VERSION_SKIP_CHECKSUM

    def send(self, msg: Message) -> None:
        if not self.writer.is_closing():
            self.writer.write(msg.pack(self.checksummed))

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
            # Like adbd: the transport runs at the smaller version and payload of both sides, and
            # our CNXN states them (a peer that sizes its packets from it stays within its own).
            self.version, self.max_payload = negotiate(msg.arg0, msg.arg1)
            if self.authorized:
                self._send_connect()
            else:
                self._challenge()
        elif cmd == A_AUTH and self.server.auth_keys is not None:
            self._authenticate(msg)
        elif not self.authorized:
            log.debug("ignoring %s from an unauthorized host", msg)  # adbd serves nothing yet
        elif cmd == A_OPEN:
            self._open(msg.arg0, msg.data.rstrip(b"\0").decode("utf-8", errors="replace"))
        elif cmd == A_WRTE:
            stream = self.streams.get(msg.arg1)
            if stream is None:
                self.send(Message(A_CLSE, 0, msg.arg0))
                return
            stream._feed(msg.data)
        elif cmd == A_OKAY:
            stream = self.streams.get(msg.arg1)
            if stream is not None:
                stream._ack()
        elif cmd == A_CLSE:
            stream = self.streams.pop(msg.arg1, None)
            if stream is not None:
                stream._peer_close()
        elif cmd in (A_AUTH, A_STLS):
            log.debug("ignoring %s from host (we asked for neither auth nor TLS)", msg)
        else:
            log.debug("ignoring unknown message %s", msg)

    def _send_connect(self) -> None:
        """Our CNXN: the device is online for this host."""
        self.send(Message(A_CNXN, self.version, self.max_payload, self.server.banner()))

    def _challenge(self) -> None:
        """Send a fresh AUTH(TOKEN)."""
        self._token = os.urandom(auth.TOKEN_SIZE)
        self.send(Message(A_AUTH, auth.AUTH_TOKEN, 0, self._token))

    def _authenticate(self, msg: Message) -> None:
        """Handle the host's AUTH: go online if it proves an allowed key, else challenge again;
        drop the transport after too many attempts."""
        if self.authorized:
            return
        self._auth_attempts += 1
        if self._auth_attempts > MAX_AUTH_ATTEMPTS:
            raise ProtocolError(f"{MAX_AUTH_ATTEMPTS} failed authentication attempts")
        if msg.arg0 == auth.AUTH_SIGNATURE and self._token and self._signed_by_allowed_key(msg.data):
            self._go_online()
        elif msg.arg0 == auth.AUTH_RSAPUBLICKEY and self._key_allowed(msg.data):
            self._go_online()
        elif msg.arg0 == auth.AUTH_SIGNATURE:
            self._challenge()
        else:
            # A phone would now ask its user; ours refuses an unknown key and stays unauthorized.
            log.info("refusing an unknown ADB key from %s", self.writer.get_extra_info("peername"))

    def _signed_by_allowed_key(self, signature: bytes) -> bool:
        return any(auth.verify(key, self._token, signature) for key in self.server.auth_keys or ())

    def _key_allowed(self, payload: bytes) -> bool:
        try:
            return auth.parse_key_line(payload) in (self.server.auth_keys or ())
        except auth.KeyFormatError as e:
            log.debug("host offered a malformed key: %s", e)
            return False

    def _go_online(self) -> None:
        self.authorized = True
        self._token = b""
        log.debug("host %s authenticated", self.writer.get_extra_info("peername"))
        self._send_connect()

    def _open(self, remote_id: int, name: str) -> None:
        if len(self.streams) >= MAX_STREAMS_PER_CONNECTION:
            log.warning("refusing %r: %d streams already open on this transport", name, len(self.streams))
            self.send(Message(A_CLSE, 0, remote_id))
            return
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
    service name to its coroutine (None refuses it). `auth_keys` turns authentication on: only
    hosts holding one of these keys are served (None: every host, the default).
    """

    def __init__(self, opener: Opener, banner: Callable[[], bytes], host: str = "127.0.0.1", port: int = 0,
                 auth_keys: Sequence[auth.RsaPublicKey] | None = None):
        self.opener = opener
        self.banner = banner
        self.auth_keys = tuple(auth_keys) if auth_keys is not None else None
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
        if len(self.connections) >= MAX_CONNECTIONS:
            log.warning("refusing a transport from %s: %d already served", writer.get_extra_info("peername"),
                        len(self.connections))
            writer.transport.abort()
            return
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
