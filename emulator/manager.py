"""Virtual devices that outlive the command that started them: detached processes + a state file.

`start_virtual_devices(n)` spawns one `python -m coadapt.emulator.daemon` process per device,
in its own session so it survives the CLI, waits until each answers the ADB handshake, tells
the adb server about it, and records it in `<runtime dir>/virtual-devices.json`. `list_...`
reads that file and health-checks each entry; `stop_...` and `restart_virtual_device` act on
entries by serial. Devices listen on free odd ports in 5555..5585 (adb lists them as
`emulator-(port-1)`); when those run out, on other free ports reached with `adb connect`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from coadapt.android_env.errors import ConfigError, DeviceError

from . import protocol as p
from .adb_server import free_port, send_host_request, server_running
from .auth import AUTH_TOKEN
from .virtual import EMULATOR_PORTS, adb_serial_for

log = logging.getLogger(__name__)

STATE_FILE = "virtual-devices.json"
REGISTER_TIMEOUT_S = 10.0
"""How long a restart waits for the adb server to list the new daemon as a device (seconds)."""


@dataclass(frozen=True)
class VirtualDeviceRecord:
    """One started virtual device, as the state file stores it."""

    serial: str
    """adb serial: `emulator-N` (auto-detected) or `HOST:PORT` (needs `adb connect`)."""
    host: str
    port: int
    """TCP port of the ADB transport."""
    pid: int
    """Process serving the device."""
    seed: int
    log_path: str
    started_at: float
    """Unix time the process was started."""
    apps: tuple[str, ...] = ()
    """Installed packages (empty: all)."""
    auth_keys: str | None = None
    """File of the ADB keys the device allows (None: no authentication)."""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def emulator_style(self) -> bool:
        return self.serial.startswith("emulator-")


@dataclass(frozen=True)
class VirtualDeviceStatus:
    """A record plus what a health check found."""

    record: VirtualDeviceRecord
    process_alive: bool
    answering: bool
    """The port completed an ADB CNXN handshake."""
    adb_state: str | None = None
    """How the adb server lists it ("device", "offline", "absent"), None if no server runs."""

    @property
    def healthy(self) -> bool:
        return self.process_alive and self.answering


def runtime_dir() -> Path:
    """Where state files live: $COADAPT_RUNTIME_DIR, else $XDG_RUNTIME_DIR/coadapt, else
    ~/.cache/coadapt/run."""
    env = os.environ.get("COADAPT_RUNTIME_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "coadapt"
    return Path.home() / ".cache" / "coadapt" / "run"


# --------------------------------------------------------------------------- health


def probe(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """True when host:port answers an ADB CNXN with a `device::` banner, or with the AUTH token
    a device that requires authentication sends first."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.settimeout(timeout_s)
            s.sendall(p.Message(p.A_CNXN, p.A_VERSION, p.MAX_PAYLOAD, b"host::features=shell_v2\0").pack())
            msg = p.read_message(s)
            if msg.command == p.A_AUTH:
                return msg.arg0 == AUTH_TOKEN
            return msg.command == p.A_CNXN and msg.data.startswith(b"device:")
    except (OSError, p.ProtocolError, EOFError):
        return False


def _pid_alive(pid: int) -> bool:
    """True while `pid` runs a virtual-device daemon (a reused pid of another program is not)."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    if Path("/proc/self").exists():
        try:
            if b"coadapt.emulator.daemon" not in cmdline.read_bytes():
                return False
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process still "exists"; reap it if so.
    with contextlib.suppress(ChildProcessError):
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def pick_ports(n: int, host: str = "127.0.0.1", taken: set[int] = frozenset()) -> list[int]:  # type: ignore[assignment]
    """`n` free ports: odd emulator ports (whose console port below is free too) first."""
    ports: list[int] = []
    if host in ("127.0.0.1", "localhost"):
        for port in EMULATOR_PORTS:
            if len(ports) == n:
                break
            if port not in taken and _port_free(host, port) and _port_free(host, port - 1):
                ports.append(port)
    while len(ports) < n:
        port = free_port(host)
        if port not in ports and port not in taken:
            ports.append(port)
    return ports


# --------------------------------------------------------------------------- state file


@contextlib.contextmanager
def _locked_state(runtime: Path) -> Iterator[list[VirtualDeviceRecord]]:
    """The state file's records, locked for read-modify-write; changes to the list are saved."""
    runtime.mkdir(parents=True, exist_ok=True)
    lock_path = runtime / (STATE_FILE + ".lock")
    with open(lock_path, "a+") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # no advisory locks on this platform; single-user use is still fine
            pass
        records = read_records(runtime)
        before = list(records)
        yield records
        if records != before:
            _write_records(runtime, records)


def read_records(runtime: Path | None = None) -> list[VirtualDeviceRecord]:
    """Every record in the state file (no health check)."""
    path = (runtime or runtime_dir()) / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (json.JSONDecodeError, OSError) as e:
        raise ConfigError(f"state file {path} is unreadable ({e}); delete it after stopping its devices") from e
    return [VirtualDeviceRecord(**{**r, "apps": tuple(r.get("apps", ()))}) for r in data.get("devices", [])]


def _write_records(runtime: Path, records: list[VirtualDeviceRecord]) -> None:
    path = runtime / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"devices": [asdict(r) for r in records]}, indent=2))
    tmp.replace(path)


# --------------------------------------------------------------------------- adb server


def register(record: VirtualDeviceRecord, adb_port: int, adb_host: str = "127.0.0.1") -> bool:
    """Make a running adb server see the device now; False when no server runs there (an
    emulator-style device is then found when the server starts; others need `adb connect`)."""
    if not server_running(adb_port, adb_host):
        return False
    try:
        if record.emulator_style:
            send_host_request(adb_port, f"host:emulator:{record.port}", host=adb_host)
        else:
            reply = send_host_request(adb_port, f"host:connect:{record.address}", host=adb_host, timeout_s=15)
            if "connected" not in reply:
                log.warning("adb connect %s: %s", record.address, reply)
                return False
    except (OSError, DeviceError) as e:
        log.warning("could not register %s with the adb server on %d: %s", record.serial, adb_port, e)
        return False
    return True


def _unregister(record: VirtualDeviceRecord, adb_port: int, adb_host: str = "127.0.0.1") -> None:
    # A connected device that vanishes is retried by the server for a minute; say goodbye.
    if not record.emulator_style and server_running(adb_port, adb_host):
        with contextlib.suppress(OSError, DeviceError):
            send_host_request(adb_port, f"host:disconnect:{record.address}", host=adb_host)


def _adb_port(adb_port: int | None) -> int:
    return adb_port if adb_port is not None else int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))


# --------------------------------------------------------------------------- start / list / stop


def _spawn(serial: str, host: str, port: int, seed: int, apps: tuple[str, ...], runtime: Path,
           extra_args: tuple[str, ...] = (),
           auth_keys: str | None = None) -> tuple[VirtualDeviceRecord, subprocess.Popen]:
    log_path = runtime / f"{serial.replace(':', '_')}.log"
    cmd = [sys.executable, "-m", "coadapt.emulator.daemon", "--port", str(port), "--host", host, "--serial", serial,
           "--seed", str(seed), *(["--apps", ",".join(apps)] if apps else []),
           *(["--auth-keys", auth_keys] if auth_keys else []), *extra_args]
    with open(log_path, "ab") as logf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    return VirtualDeviceRecord(serial, host, port, proc.pid, seed, str(log_path), time.time(), apps, auth_keys), proc


def _wait_ready(rec: VirtualDeviceRecord, proc: subprocess.Popen, timeout_s: float, sleep: Callable[[float], None]) -> None:
    # proc.poll(), not _pid_alive(): right after the fork the child still shows our cmdline.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if probe(rec.host, rec.port, timeout_s=1.0):
            return
        if proc.poll() is not None:
            break
        sleep(0.05)
    why = f"exited with code {proc.returncode}" if proc.poll() is not None else f"did not answer within {timeout_s:.0f}s"
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
    tail = ""
    with contextlib.suppress(OSError):
        tail = Path(rec.log_path).read_text(errors="replace")[-500:]
    raise DeviceError(f"virtual device {rec.serial} on {rec.address} {why}; log tail:\n{tail}",
                      command=f"python -m coadapt.emulator.daemon --port {rec.port}", serial=rec.serial)


def start_virtual_devices(
    n: int,
    *,
    seed: int = 0,
    host: str = "127.0.0.1",
    ports: list[int] | None = None,
    apps: tuple[str, ...] = (),
    adb_port: int | None = None,
    runtime: Path | None = None,
    timeout_s: float = 20.0,
    extra_args: tuple[str, ...] = (),
    auth_keys: Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[VirtualDeviceRecord]:
    """Start `n` detached virtual devices and return their records once all answer.

    Device i gets seed `seed + i`. `ports` fixes the ports (default: free emulator ports, then
    any free ports). Each is registered with the adb server on `adb_port` (default
    $ANDROID_ADB_SERVER_PORT or 5037) if one runs. `extra_args` go to the daemon (e.g.
    ("--boot-delay", "5")). `auth_keys` (an adbkey.pub-style file) makes every device require ADB
    authentication and allow only those keys; restarts keep it. Raises DeviceError (after
    stopping what it started) on failure.
    """
    if n < 1:
        raise ConfigError(f"start {n} virtual devices? n must be >= 1")
    if ports is not None and len(ports) != n:
        raise ConfigError(f"{len(ports)} ports given for {n} devices; give one per device or none")
    runtime = runtime or runtime_dir()
    keys_file = _auth_keys_file(auth_keys)
    spawned: list[tuple[VirtualDeviceRecord, subprocess.Popen]] = []
    with _locked_state(runtime) as records:
        taken = {r.port for r in records}
        chosen = ports or pick_ports(n, host, taken)
        try:
            for i, port in enumerate(chosen):
                serial = adb_serial_for(host, port)
                if any(r.serial == serial for r in records):
                    raise ConfigError(f"{serial} is already in {runtime / STATE_FILE}; stop it first")
                spawned.append(_spawn(serial, host, port, seed + i, apps, runtime, extra_args, keys_file))
            for rec, proc in spawned:
                _wait_ready(rec, proc, timeout_s, sleep)
        except BaseException:
            for _rec, proc in spawned:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(5)
            raise
        started = [rec for rec, _proc in spawned]
        records.extend(started)
    for rec in started:
        register(rec, _adb_port(adb_port))
    log.info("started %s", ", ".join(f"{r.serial} (pid {r.pid})" for r in started))
    return started


def _auth_keys_file(auth_keys: Path | None) -> str | None:
    """The absolute path of the allowed-keys file; ConfigError if it is not a readable file."""
    if auth_keys is None:
        return None
    path = Path(auth_keys).expanduser().resolve()
    if not path.is_file() or not os.access(path, os.R_OK):
        raise ConfigError(f"ADB keys file {path} is not a readable file (an adb server writes ~/.android/adbkey.pub "
                          "on its first start)")
    return str(path)


def list_virtual_devices(*, runtime: Path | None = None, adb_port: int | None = None) -> list[VirtualDeviceStatus]:
    """Every recorded device with its health: process alive, port answering the ADB handshake,
    and (when an adb server runs on `adb_port`) the state the server lists it in. Use
    `read_records` for the bare records without checks."""
    records = read_records(runtime)
    adb_states: dict[str, str] | None = None
    port = _adb_port(adb_port)
    if server_running(port):
        with contextlib.suppress(OSError, DeviceError):
            out = send_host_request(port, "host:devices")
            adb_states = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    statuses = []
    for r in records:
        alive = _pid_alive(r.pid)
        answering = alive and probe(r.host, r.port)
        state = None if adb_states is None else adb_states.get(r.serial, "absent")
        statuses.append(VirtualDeviceStatus(r, alive, answering, state))
    return statuses


def stop_virtual_devices(serials: list[str] | None = None, *, runtime: Path | None = None, adb_port: int | None = None,
                         timeout_s: float = 5.0, sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """Stop the named devices (None: all) and drop them from the state file; returns the
    serials stopped. Unknown serials raise ConfigError naming the known ones."""
    runtime = runtime or runtime_dir()
    with _locked_state(runtime) as records:
        if serials is None:
            targets = list(records)
        else:
            known = {r.serial: r for r in records}
            missing = [s for s in serials if s not in known]
            if missing:
                raise ConfigError(f"no virtual device {', '.join(missing)}; running: {', '.join(known) or 'none'}")
            targets = [known[s] for s in serials]
        for rec in targets:
            _terminate(rec.pid, timeout_s, sleep)
            _unregister(rec, _adb_port(adb_port))
            records.remove(rec)
    return [r.serial for r in targets]


def restart_virtual_device(serial: str, *, runtime: Path | None = None, adb_port: int | None = None,
                           timeout_s: float = 20.0, sleep: Callable[[float], None] = time.sleep) -> VirtualDeviceRecord:
    """Kill and restart the device `serial` on the same port with the same seed (a fresh phone)."""
    runtime = runtime or runtime_dir()
    with _locked_state(runtime) as records:
        rec = next((r for r in records if r.serial == serial), None)
        if rec is None:
            raise ConfigError(f"no virtual device {serial}; running: {', '.join(r.serial for r in records) or 'none'}")
        _terminate(rec.pid, 5.0, sleep)
        # The server would keep the dead transport "offline" and retry it only 10 s later, while
        # a new connect is answered "already connected": drop it so the restart is seen at once.
        _unregister(rec, _adb_port(adb_port))
        new, proc = _spawn(rec.serial, rec.host, rec.port, rec.seed, rec.apps, runtime, auth_keys=rec.auth_keys)
        _wait_ready(new, proc, timeout_s, sleep)
        records[records.index(rec)] = new
    if register(new, _adb_port(adb_port)):
        _wait_listed(new.serial, _adb_port(adb_port), REGISTER_TIMEOUT_S, sleep)
    return new


def _wait_listed(serial: str, adb_port: int, timeout_s: float, sleep: Callable[[float], None]) -> bool:
    """Wait until the adb server lists `serial` as `device`; False after `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, DeviceError):
            out = send_host_request(adb_port, "host:devices")
            if f"{serial}\tdevice" in out.splitlines():
                return True
        sleep(0.1)
    log.warning("%s is not listed as a device by the adb server on %d after %.0f s", serial, adb_port, timeout_s)
    return False


def _terminate(pid: int, timeout_s: float, sleep: Callable[[float], None]) -> None:
    """SIGTERM, then SIGKILL after `timeout_s` seconds (only if `pid` is still our daemon)."""
    if not _pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for _ in range(40):
        if not _pid_alive(pid):
            return
        sleep(0.05)
