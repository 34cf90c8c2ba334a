"""A private adb server on its own port, run from the adb binary bundled with adbutils.

Tests, benchmarks and pools start one so they never disturb (or depend on) a user's server on
5037. The adb server also learns about emulators from us: `notify_emulator(port)` sends the
`host:emulator:PORT` request a booting emulator sends, so a device listening on an odd port in
5555..5585 shows up as `emulator-(port-1)` at once instead of at the server's next start.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

from coadapt.android_env.errors import DeviceError

log = logging.getLogger(__name__)


def adb_binary() -> str:
    """The adb to run: $ADBUTILS_ADB_PATH, else the one in adbutils' wheel, else `adb` on PATH.

    The bundled binary comes first (unlike adbutils' own lookup) so a fresh machine with only
    Python and pip behaves like one with Android SDK tools installed.
    """
    env = os.environ.get("ADBUTILS_ADB_PATH")
    if env:
        return env
    try:
        import adbutils

        bundled = Path(adbutils.__file__).parent / "binaries" / "adb"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
        from adbutils._utils import adb_path

        return adb_path()
    except ImportError:
        return "adb"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def server_running(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts connections on the adb server port."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def send_host_request(port: int, request: str, *, host: str = "127.0.0.1", timeout_s: float = 5.0) -> str:
    """Send one smart-socket request (`host:...`) to an adb server; returns its reply string
    (empty for requests that send none). DeviceError on FAIL."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        raw = request.encode()
        s.sendall(b"%04x" % len(raw) + raw)
        status = s.recv(4)
        if status == b"FAIL":
            n = int(s.recv(4) or b"0", 16)
            raise DeviceError(f"adb server refused: {s.recv(n).decode(errors='replace')}", command=request)
        if status != b"OKAY":
            return ""
        try:
            n = s.recv(4)
            return s.recv(int(n, 16)).decode(errors="replace") if n else ""
        except (socket.timeout, ValueError):
            return ""


def listed_devices(port: int, host: str = "127.0.0.1") -> dict[str, str]:
    """serial -> state ("device", "offline", ...) as the adb server on `port` lists them."""
    out = send_host_request(port, "host:devices", host=host)
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


class AdbServer:
    """An adb server this process starts on `port` and kills on `stop()` (context manager)."""

    def __init__(self, port: int | None = None, *, adb: str | None = None, host: str = "127.0.0.1"):
        self.port = port or free_port(host)
        self.host = host
        self.adb = adb or adb_binary()
        self._started = False

    @property
    def env(self) -> dict[str, str]:
        """Environment that points adb CLIs and adbutils at this server."""
        return dict(os.environ, ANDROID_ADB_SERVER_PORT=str(self.port))

    def start(self, timeout_s: float = 20.0) -> "AdbServer":
        """Start the server (no-op if one already answers on the port)."""
        if server_running(self.port, self.host):
            return self
        r = subprocess.run([self.adb, "-P", str(self.port), "start-server"], env=self.env, capture_output=True,
                           text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
        if r.returncode != 0 or not server_running(self.port, self.host):
            raise DeviceError(f"adb server did not start: {(r.stderr or r.stdout).strip()[:300]}",
                              command=f"{self.adb} -P {self.port} start-server")
        self._started = True
        log.info("adb server on %s:%d (%s)", self.host, self.port, self.adb)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Kill the server if this object started it."""
        if not self._started:
            return
        try:
            subprocess.run([self.adb, "-P", str(self.port), "kill-server"], env=self.env, capture_output=True,
                           timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            log.warning("adb kill-server on port %d timed out", self.port)
        self._started = False

    def detach(self) -> None:
        """Hand the server over: it keeps running after this object's `stop()` and exit."""
        self._started = False

    def __enter__(self) -> "AdbServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self, *args: str, timeout_s: float = 30.0, text: bool = False) -> subprocess.CompletedProcess:
        """Run the adb CLI against this server: `run("-s", serial, "shell", "echo", "hi")`."""
        return subprocess.run([self.adb, "-P", str(self.port), *args], env=self.env, capture_output=True, text=text,
                              timeout=timeout_s, stdin=subprocess.DEVNULL)

    def client(self, timeout_s: float | None = None):
        """An adbutils AdbClient bound to this server."""
        import adbutils

        return adbutils.AdbClient(host=self.host, port=self.port, socket_timeout=timeout_s)

    def devices(self) -> dict[str, str]:
        """serial -> state ("device", "offline", ...) as the server lists them."""
        return listed_devices(self.port, self.host)

    def notify_emulator(self, device_port: int) -> None:
        """Tell the server an emulator listens on `device_port` (it connects at once)."""
        send_host_request(self.port, f"host:emulator:{device_port}", host=self.host)

    def connect(self, address: str) -> str:
        """`adb connect address`; returns the server's message."""
        return send_host_request(self.port, f"host:connect:{address}", host=self.host, timeout_s=15)

    def disconnect(self, address: str) -> str:
        try:
            return send_host_request(self.port, f"host:disconnect:{address}", host=self.host)
        except DeviceError as e:
            return str(e)

    def wait_for(self, serial: str, state: str = "device", timeout_s: float = 10.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        """Wait until the server lists `serial` in `state`; DeviceError on timeout."""
        deadline = time.monotonic() + timeout_s
        seen = None
        while time.monotonic() < deadline:
            seen = self.devices().get(serial)
            if seen == state:
                return
            sleep(0.05)
        raise DeviceError(f"{serial} not {state} after {timeout_s:.0f}s (state: {seen or 'absent'})", command="host:devices")
