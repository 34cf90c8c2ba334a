"""ADB wire formats a device speaks: transport messages, shell v2 packets and sync records."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

# Transport commands (adb.h): four ASCII letters read as a little-endian uint32.
A_CNXN = 0x4E584E43
A_AUTH = 0x48545541
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_WRTE = 0x45545257
A_CLSE = 0x45534C43
A_STLS = 0x534C5453

A_VERSION_MIN = 0x01000000
"""Oldest protocol version: every packet carries the byte sum of its payload in data_check."""
A_VERSION_SKIP_CHECKSUM = 0x01000001
"""From this version on both sides send data_check 0 and never verify it."""
A_VERSION = A_VERSION_SKIP_CHECKSUM
"""Newest protocol version we speak; a transport runs at min(ours, the peer's)."""
MAX_PAYLOAD_V1 = 4096
"""Payload limit of peers older than 1 MiB payloads, and of every CNXN/AUTH banner."""
MAX_PAYLOAD = 1024 * 1024
"""Largest WRTE payload we accept (bytes); a transport runs at min(ours, the peer's)."""
MAX_BANNER = 4096
"""CNXN/AUTH payloads must fit in this many bytes."""

HEADER = struct.Struct("<6I")

NAMES = {A_CNXN: "CNXN", A_AUTH: "AUTH", A_OPEN: "OPEN", A_OKAY: "OKAY", A_WRTE: "WRTE", A_CLSE: "CLSE", A_STLS: "STLS"}


class ProtocolError(Exception):
    """The peer sent bytes that are not an ADB message (bad magic, oversize payload)."""


@dataclass(frozen=True)
class Message:
    """One transport message: a 24-byte header plus `data`."""

    command: int
    arg0: int
    arg1: int
    data: bytes = b""

    def pack(self, checksum: bool = False) -> bytes:
        """Header plus data; data_check is the payload's byte sum when `checksum` (a transport
        below A_VERSION_SKIP_CHECKSUM), else 0 as modern adbd sends."""
        check = checksum_of(self.data) if checksum else 0
        return HEADER.pack(self.command, self.arg0, self.arg1, len(self.data), check, self.command ^ 0xFFFFFFFF) + self.data

    def __str__(self) -> str:
        name = NAMES.get(self.command, hex(self.command))
        return f"{name}({self.arg0:#x}, {self.arg1:#x}, {len(self.data)} bytes)"


def checksum_of(data: bytes) -> int:
    """ADB's data_check: the unsigned sum of the payload bytes (not a CRC), modulo 2**32."""
    return sum(data) & 0xFFFFFFFF


def negotiate(peer_version: int, peer_max_payload: int) -> tuple[int, int]:
    """(version, max payload) of a transport whose peer sent CNXN(peer_version, peer_max_payload):
    the smaller of each side's, as adbd's update_version keeps them."""
    version = min(max(peer_version, A_VERSION_MIN), A_VERSION)
    return version, max(MAX_PAYLOAD_V1, min(peer_max_payload, MAX_PAYLOAD))


def unpack_header(raw: bytes, max_payload: int = MAX_PAYLOAD) -> tuple[int, int, int, int]:
    """(command, arg0, arg1, data_length) of a 24-byte header; ProtocolError if malformed."""
    command, arg0, arg1, length, _check, magic = HEADER.unpack(raw)
    if magic != command ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic {magic:#x} for command {command:#x}")
    if length > max_payload:
        raise ProtocolError(f"payload of {length} bytes exceeds {max_payload}")
    return command, arg0, arg1, length


def read_message(sock: socket.socket) -> Message:
    """One whole message from a blocking socket (a client's side of the transport); EOFError when
    the peer closes first, ProtocolError when the header is malformed."""
    command, arg0, arg1, length = unpack_header(_read_exact(sock, HEADER.size))
    return Message(command, arg0, arg1, _read_exact(sock, length))


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("the device closed the transport")
        buf += chunk
    return buf


def device_banner(props: dict[str, str], features: tuple[str, ...]) -> bytes:
    """The CNXN payload adbd sends: `device::key=value;...;features=a,b`."""
    parts = [f"{k}={v}" for k, v in props.items()]
    parts.append("features=" + ",".join(features))
    banner = ("device::" + ";".join(parts)).encode()
    if len(banner) > MAX_BANNER:
        raise ValueError(f"banner of {len(banner)} bytes exceeds {MAX_BANNER}")
    return banner


def parse_service(name: str) -> tuple[str, list[str], str]:
    """Split an OPEN destination such as `shell,v2,TERM=xterm,raw:ls -l` into
    (service, options, argument): ("shell", ["v2", "TERM=xterm", "raw"], "ls -l")."""
    name = name.rstrip("\0")
    head, sep, arg = name.partition(":")
    if not sep:
        return name, [], ""
    service, *options = head.split(",")
    return service, options, arg


# --------------------------------------------------------------------------- shell v2

SHELL_STDIN, SHELL_STDOUT, SHELL_STDERR, SHELL_EXIT, SHELL_CLOSE_STDIN, SHELL_WINDOW_SIZE = 0, 1, 2, 3, 4, 5
SHELL_HEADER = struct.Struct("<BI")


def shell_packet(kind: int, data: bytes) -> bytes:
    """One shell-protocol packet: id (u8), length (u32 LE), data."""
    return SHELL_HEADER.pack(kind, len(data)) + data


def shell_exit(code: int) -> bytes:
    """The exit packet; always one byte long (adbutils skips zero-length packets)."""
    return shell_packet(SHELL_EXIT, bytes([code & 0xFF]))


# --------------------------------------------------------------------------- sync

SYNC_REQUEST = struct.Struct("<4sI")
SYNC_MAX_PATH = 1024
SYNC_DATA_MAX = 64 * 1024
S_IFREG = 0o100000
S_IFDIR = 0o040000


def sync_stat(mode: int, size: int, mtime: int) -> bytes:
    return b"STAT" + struct.pack("<III", mode, size & 0xFFFFFFFF, mtime)


def sync_dent(mode: int, size: int, mtime: int, name: str) -> bytes:
    raw = name.encode()
    return b"DENT" + struct.pack("<IIII", mode, size & 0xFFFFFFFF, mtime, len(raw)) + raw


def sync_done_dent() -> bytes:
    return b"DONE" + bytes(16)


def sync_status(ident: bytes, value: int = 0) -> bytes:
    return ident + struct.pack("<I", value)


def sync_fail(message: str) -> bytes:
    raw = message.encode()
    return b"FAIL" + struct.pack("<I", len(raw)) + raw


def sync_data(chunk: bytes) -> bytes:
    return b"DATA" + struct.pack("<I", len(chunk)) + chunk
