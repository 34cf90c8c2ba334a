"""ADB authentication as a phone does it: which computers (RSA public keys) may use the device.

With auth on, a device answers the host's CNXN with AUTH(TOKEN, 20 random bytes). The host
answers AUTH(SIGNATURE): the token signed with its private key by RSA PKCS#1 v1.5, the token
standing in for a SHA-1 digest. The device checks the signature against every allowed key; if
none verifies it sends a new token, and the host finally offers AUTH(RSAPUBLICKEY). A phone would
then ask its user; a virtual device accepts the key only if it is already allowed.

Keys use Android's format (`~/.android/adbkey.pub`, adbd's `adb_keys`): one per line, the base64
of the RSAPublicKey struct (uint32 modulus words, uint32 n0inv, uint32 n[words] little-endian,
uint32 rr[words] = R^2 mod n, uint32 exponent) then " user@host". Pure Python: int.from_bytes
and pow, no crypto package.
"""

from __future__ import annotations

import base64
import binascii
import logging
import struct
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

AUTH_TOKEN = 1
"""AUTH arg0 of the device's challenge (payload: the token)."""
AUTH_SIGNATURE = 2
"""AUTH arg0 of the host's signed token."""
AUTH_RSAPUBLICKEY = 3
"""AUTH arg0 of the host's public key (Android format, NUL-terminated)."""
TOKEN_SIZE = 20
"""Bytes of random challenge: the size of a SHA-1 digest, as adbd sends."""
MODULUS_WORDS = 64
"""uint32 words of the modulus in Android's struct (a 2048-bit key)."""
WORD = struct.Struct("<I")
SHA1_DIGEST_INFO = bytes.fromhex("3021300906052b0e03021a05000414")
"""DER DigestInfo prefix of a SHA-1 digest (RFC 8017 section 9.2, note 1)."""
MIN_PADDING = 8
"""PKCS#1 v1.5 type 1 padding has at least this many 0xFF bytes."""


class KeyFormatError(ValueError):
    """Bytes or text that are not an Android RSA public key."""


@dataclass(frozen=True)
class RsaPublicKey:
    """An RSA public key: modulus `n` and public exponent `e`."""

    n: int
    e: int

    @property
    def size(self) -> int:
        """Bytes of the modulus, the length of every signature."""
        return (self.n.bit_length() + 7) // 8


# --------------------------------------------------------------------------- Android's key struct


def encode_key(key: RsaPublicKey, words: int = MODULUS_WORDS) -> bytes:
    """Android's RSAPublicKey struct of `key` (the bytes adbkey.pub holds in base64)."""
    if key.n % 2 == 0 or key.n.bit_length() > 32 * words:
        raise KeyFormatError(f"modulus must be odd and fit in {words} words")
    n0inv = (-pow(key.n, -1, 1 << 32)) % (1 << 32)
    rr = pow(2, 64 * words, key.n)
    size = 4 * words
    return (WORD.pack(words) + WORD.pack(n0inv) + key.n.to_bytes(size, "little") + rr.to_bytes(size, "little")
            + WORD.pack(key.e))


def decode_key(raw: bytes) -> RsaPublicKey:
    """The key in Android's RSAPublicKey struct; KeyFormatError if it is malformed."""
    if len(raw) < 2 * WORD.size:
        raise KeyFormatError(f"{len(raw)} bytes is too short for a key")
    words = WORD.unpack_from(raw, 0)[0]
    size = 4 * words
    if words == 0 or len(raw) != 3 * WORD.size + 2 * size:
        raise KeyFormatError(f"{len(raw)} bytes do not hold a key of {words} words")
    n0inv = WORD.unpack_from(raw, WORD.size)[0]
    n = int.from_bytes(raw[8 : 8 + size], "little")
    e = WORD.unpack_from(raw, 8 + 2 * size)[0]
    if n % 2 == 0 or (n * n0inv) % (1 << 32) != (1 << 32) - 1:
        raise KeyFormatError("modulus and n0inv disagree")
    if e < 3:
        raise KeyFormatError(f"public exponent {e} is invalid")
    return RsaPublicKey(n, e)


def format_key_line(key: RsaPublicKey, comment: str = "coadapt@localhost") -> str:
    """One adbkey.pub line: the base64 struct, a space, `user@host`."""
    return base64.b64encode(encode_key(key)).decode() + " " + comment


def parse_key_line(line: str | bytes) -> RsaPublicKey:
    """The key of one adbkey.pub line (or an AUTH(RSAPUBLICKEY) payload); KeyFormatError if bad."""
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    fields = text.strip("\0 \t\r\n").split()
    if not fields:
        raise KeyFormatError("empty key line")
    try:
        raw = base64.b64decode(fields[0], validate=True)
    except (binascii.Error, ValueError) as e:
        raise KeyFormatError(f"key is not base64: {e}") from e
    return decode_key(raw)


def load_keys(path: Path) -> list[RsaPublicKey]:
    """The allowed keys listed in `path`; malformed lines are skipped with a warning, as adbd
    does. OSError if the file cannot be read."""
    keys = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            keys.append(parse_key_line(line))
        except KeyFormatError as e:
            log.warning("%s:%d: skipping a line that is not an ADB key (%s)", path, number, e)
    return keys


# --------------------------------------------------------------------------- signatures


def expected_block(token: bytes, size: int) -> bytes:
    """The PKCS#1 v1.5 block a signature of `token` (taken as a SHA-1 digest) decrypts to."""
    payload = SHA1_DIGEST_INFO + token
    padding = size - len(payload) - 3
    if padding < MIN_PADDING:
        raise KeyFormatError(f"a {size}-byte modulus is too small to sign {len(token)} bytes")
    return b"\x00\x01" + b"\xff" * padding + b"\x00" + payload


def verify(key: RsaPublicKey, token: bytes, signature: bytes) -> bool:
    """True when `signature` is `token` signed with the private half of `key`."""
    if len(signature) != key.size:
        return False
    s = int.from_bytes(signature, "big")
    if s >= key.n:
        return False
    try:
        block = expected_block(token, key.size)
    except KeyFormatError:
        return False
    return pow(s, key.e, key.n).to_bytes(key.size, "big") == block


def sign(token: bytes, n: int, d: int) -> bytes:
    """`token` signed with the private key (n, d), as the adb host signs a challenge (for tests
    and tools; the device only verifies)."""
    size = (n.bit_length() + 7) // 8
    m = int.from_bytes(expected_block(token, size), "big")
    return pow(m, d, n).to_bytes(size, "big")
