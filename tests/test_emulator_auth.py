"""ADB authentication on virtual devices: only adb servers whose key is allowed may use them,
like a phone that has allowed some computers; the others list it as "unauthorized"."""

from __future__ import annotations

import base64
import socket
import time
from pathlib import Path

import pytest

from coadapt.android_env.errors import ConfigError
from coadapt.emulator import auth, manager
from coadapt.emulator import protocol as p
from coadapt.emulator.adb_server import AdbServer, free_port
from coadapt.emulator.adbd import MAX_AUTH_ATTEMPTS
from coadapt.emulator.manager import probe
from coadapt.emulator.virtual import VirtualDevice

NOTES = "com.example.notes"
KEY_WAIT_S = 10.0
"""How long the adb server may take to write its key pair on first start."""

# A test key from two Mersenne primes (2**521 - 1, 2**607 - 1): a 1128-bit modulus, big enough for
# a PKCS#1 v1.5 SHA-1 signature and instant to build (no prime search).
_P, _Q = 2**521 - 1, 2**607 - 1
TEST_KEY = auth.RsaPublicKey(_P * _Q, 65537)
TEST_D = pow(TEST_KEY.e, -1, (_P - 1) * (_Q - 1))


def _write_keys(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


# --------------------------------------------------------------------------- key format and signatures


def test_key_struct_round_trip():
    raw = auth.encode_key(TEST_KEY)
    assert len(raw) == 3 * 4 + 2 * 4 * auth.MODULUS_WORDS  # 524 bytes, as Android's struct
    assert auth.decode_key(raw) == TEST_KEY
    assert auth.parse_key_line(auth.format_key_line(TEST_KEY, "me@box")) == TEST_KEY
    assert auth.parse_key_line(auth.format_key_line(TEST_KEY).encode() + b"\0") == TEST_KEY  # an AUTH payload


@pytest.mark.parametrize("line", ["", "not-base64!", base64.b64encode(b"short").decode(),
                                  base64.b64encode(auth.encode_key(TEST_KEY)[:-4]).decode()])
def test_malformed_keys_are_refused(line):
    with pytest.raises(auth.KeyFormatError):
        auth.parse_key_line(line)


def test_corrupt_n0inv_is_refused():
    raw = bytearray(auth.encode_key(TEST_KEY))
    raw[4] ^= 1
    with pytest.raises(auth.KeyFormatError, match="n0inv"):
        auth.decode_key(bytes(raw))


def test_signature_check():
    token = bytes(range(auth.TOKEN_SIZE))
    signature = auth.sign(token, TEST_KEY.n, TEST_D)
    assert auth.verify(TEST_KEY, token, signature)
    assert not auth.verify(TEST_KEY, bytes(auth.TOKEN_SIZE), signature)  # another token
    assert not auth.verify(TEST_KEY, token, bytes([signature[0] ^ 1]) + signature[1:])
    assert not auth.verify(TEST_KEY, token, signature[1:])
    assert not auth.verify(auth.RsaPublicKey(TEST_KEY.n, 3), token, signature)  # another key


def test_load_keys_skips_malformed_lines(tmp_path):
    path = _write_keys(tmp_path / "keys", "garbage user@host", "", auth.format_key_line(TEST_KEY))
    assert auth.load_keys(path) == [TEST_KEY]


# --------------------------------------------------------------------------- the handshake on the wire


def _connect(dev: VirtualDevice) -> tuple[socket.socket, bytes]:
    """A raw transport to `dev` after CNXN; returns it with the device's first AUTH token."""
    s = socket.create_connection((dev.host, dev.port), timeout=5)
    s.sendall(p.Message(p.A_CNXN, p.A_VERSION, p.MAX_PAYLOAD, b"host::features=shell_v2\0").pack())
    msg = p.read_message(s)
    assert (msg.command, msg.arg0, len(msg.data)) == (p.A_AUTH, auth.AUTH_TOKEN, auth.TOKEN_SIZE)
    return s, msg.data


def test_handshake_signature_and_public_key(tmp_path):
    keys = _write_keys(tmp_path / "adbkey.pub", auth.format_key_line(TEST_KEY))
    with VirtualDevice(apps=[NOTES], auth_keys=keys) as dev:
        assert probe(dev.host, dev.port)  # the manager sees an auth device as answering
        s, token = _connect(dev)
        with s:
            s.sendall(p.Message(p.A_OPEN, 1, 0, b"shell:echo hi\0").pack())  # ignored before auth
            s.sendall(p.Message(p.A_AUTH, auth.AUTH_SIGNATURE, 0, bytes(TEST_KEY.size)).pack())
            again = p.read_message(s)
            assert (again.command, again.arg0) == (p.A_AUTH, auth.AUTH_TOKEN) and again.data != token
            s.sendall(p.Message(p.A_AUTH, auth.AUTH_SIGNATURE, 0, auth.sign(again.data, TEST_KEY.n, TEST_D)).pack())
            online = p.read_message(s)
            assert online.command == p.A_CNXN and online.data.startswith(b"device::")
        s, _token = _connect(dev)
        with s:  # an allowed public key is accepted without a signature, as after "always allow"
            offer = auth.format_key_line(TEST_KEY).encode() + b"\0"
            s.sendall(p.Message(p.A_AUTH, auth.AUTH_RSAPUBLICKEY, 0, offer).pack())
            assert p.read_message(s).command == p.A_CNXN


def test_unknown_public_key_stays_unauthorized(tmp_path):
    keys = _write_keys(tmp_path / "adbkey.pub", auth.format_key_line(TEST_KEY))
    other = auth.RsaPublicKey(TEST_KEY.n + 2, 65537)
    with VirtualDevice(apps=[NOTES], auth_keys=keys) as dev:
        s, _token = _connect(dev)
        with s:
            offer = auth.format_key_line(other).encode() + b"\0"
            s.sendall(p.Message(p.A_AUTH, auth.AUTH_RSAPUBLICKEY, 0, offer).pack())
            s.sendall(p.Message(p.A_OPEN, 1, 0, b"shell:echo hi\0").pack())
            s.settimeout(0.5)
            with pytest.raises(socket.timeout):
                p.read_message(s)


# --------------------------------------------------------------------------- through a real adb server


@pytest.fixture(scope="module")
def adb_home(tmp_path_factory):
    """A HOME of its own for the adb server, so it makes (and signs with) a key pair of its own."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("ANDROID_USER_HOME", str(home / ".android"))
        mp.delenv("ADB_VENDOR_KEYS", raising=False)
        yield home


@pytest.fixture(scope="module")
def adb_server(adb_home):
    with AdbServer() as server:
        yield server


@pytest.fixture(scope="module")
def server_key(adb_server, adb_home) -> str:
    """The adb server's public key line (its ~/.android/adbkey.pub)."""
    path = adb_home / ".android" / "adbkey.pub"
    deadline = time.monotonic() + KEY_WAIT_S
    while not path.is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    line = path.read_text().strip()
    key = auth.parse_key_line(line)
    assert auth.format_key_line(key, line.split(" ", 1)[1]) == line  # our encoder writes what adb writes
    return line


def test_allowed_adb_server_gets_a_device(adb_server, server_key, tmp_path):
    keys = _write_keys(tmp_path / "adb_keys", auth.format_key_line(TEST_KEY), server_key)
    with VirtualDevice(apps=[NOTES], auth_keys=keys) as dev:
        assert "connected" in adb_server.connect(dev.address)
        try:
            adb_server.wait_for(dev.adb_serial, "device")
            r = adb_server.run("-s", dev.adb_serial, "shell", "echo", "hello", text=True)
            assert r.returncode == 0 and r.stdout.strip() == "hello"
        finally:
            adb_server.disconnect(dev.address)


def test_unknown_adb_server_is_unauthorized(adb_server, server_key, tmp_path):
    keys = _write_keys(tmp_path / "adb_keys", auth.format_key_line(TEST_KEY))
    with VirtualDevice(apps=[NOTES], auth_keys=keys) as dev:
        adb_server.connect(dev.address)  # "failed to authenticate": the server keeps it listed
        try:
            adb_server.wait_for(dev.adb_serial, "unauthorized")
            r = adb_server.run("-s", dev.adb_serial, "shell", "echo", "hello", text=True)
            assert r.returncode != 0 and "unauthorized" in r.stderr
            assert adb_server.devices()[dev.adb_serial] == "unauthorized"
        finally:
            adb_server.disconnect(dev.address)


def test_manager_devices_keep_auth_across_a_restart(adb_server, server_key, tmp_path):
    keys = _write_keys(tmp_path / "adb_keys", server_key)
    rt = tmp_path / "run"
    with pytest.raises(ConfigError, match="not a readable file"):
        manager.start_virtual_devices(1, runtime=rt, auth_keys=tmp_path / "missing.pub")
    (rec,) = manager.start_virtual_devices(1, runtime=rt, adb_port=adb_server.port, apps=(NOTES,),
                                           ports=[free_port()], auth_keys=keys)
    try:
        assert rec.auth_keys == str(keys.resolve())
        adb_server.wait_for(rec.serial, "device")
        new = manager.restart_virtual_device(rec.serial, runtime=rt, adb_port=adb_server.port)
        assert new.auth_keys == rec.auth_keys
        s = socket.create_connection((new.host, new.port), timeout=5)
        with s:
            s.sendall(p.Message(p.A_CNXN, p.A_VERSION, p.MAX_PAYLOAD, b"host::\0").pack())
            assert p.read_message(s).command == p.A_AUTH  # the restarted daemon still asks
        adb_server.wait_for(new.serial, "device")
    finally:
        manager.stop_virtual_devices(runtime=rt, adb_port=adb_server.port)


def test_a_host_that_keeps_guessing_is_dropped(tmp_path):
    keys = _write_keys(tmp_path / "adbkey.pub", auth.format_key_line(TEST_KEY))
    with VirtualDevice(apps=[NOTES], auth_keys=keys) as dev:
        s, _token = _connect(dev)
        with s:
            bad = p.Message(p.A_AUTH, auth.AUTH_SIGNATURE, 0, bytes(TEST_KEY.size)).pack()
            for _ in range(MAX_AUTH_ATTEMPTS):
                s.sendall(bad)
                assert p.read_message(s).arg0 == auth.AUTH_TOKEN
            s.sendall(bad)
            with pytest.raises((EOFError, ConnectionResetError)):
                p.read_message(s)  # the transport is closed
