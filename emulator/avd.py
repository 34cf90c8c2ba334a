"""Real Android emulators (AVDs): the launch command line, boot wait, and post-boot setup.

Flags follow what android_env, android_world and Chromium's avd.py use for headless, parallel,
reproducible runs: no window/audio/boot animation, software GPU, `-read-only` so several
instances share one AVD, `-no-snapshot-save` so every boot starts from the same state, one
`-port` per instance (console port N, adb port N+1, serial emulator-N).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from coadapt.android_env.errors import ConfigError, DeviceError, DeviceTimeoutError

from .adb_server import adb_binary, send_host_request, server_running

log = logging.getLogger(__name__)

GPU_MODES = ("swiftshader_indirect", "swangle_indirect", "host", "guest", "auto", "off")
ANIMATION_SETTINGS = ("window_animation_scale", "transition_animation_scale", "animator_duration_scale")


@dataclass(frozen=True)
class AvdConfig:
    """How to launch one emulator instance."""

    avd: str
    """Name of the AVD (as `emulator -list-avds` prints it)."""
    port: int = 5554
    """Console port, even, 5554..5584; the adb port is port+1 and the serial emulator-<port>."""
    snapshot: str | None = None
    """Snapshot to boot from (`-snapshot NAME`); None boots cold unless the AVD has a quickboot."""
    gpu: str = "swiftshader_indirect"
    """GPU mode; software rendering works on machines without a GPU."""
    headless: bool = True
    """Run with -no-window."""
    read_only: bool = True
    """Share the AVD between instances (-read-only); needed to run one AVD several times."""
    memory_mb: int | None = None
    """Guest RAM (-memory); None keeps the AVD's setting (android_world uses 2048)."""
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    """Anything else for the emulator command line, appended verbatim."""

    def __post_init__(self) -> None:
        if not self.avd:
            raise ConfigError("avd must name an AVD; list them with `emulator -list-avds`")
        if not (5554 <= self.port <= 5584 and self.port % 2 == 0):
            raise ConfigError(f"port {self.port}: use an even console port in 5554..5584 (adb uses port+1)")
        if self.gpu not in GPU_MODES:
            raise ConfigError(f"gpu {self.gpu!r}; valid: {', '.join(GPU_MODES)}")

    @property
    def serial(self) -> str:
        return f"emulator-{self.port}"


def find_emulator() -> str:
    """The emulator binary: $ANDROID_EMULATOR, $ANDROID_SDK_ROOT|$ANDROID_HOME/emulator/emulator,
    else `emulator` on PATH; ConfigError when there is none."""
    env = os.environ.get("ANDROID_EMULATOR")
    if env:
        return env
    for var in ("ANDROID_SDK_ROOT", "ANDROID_HOME"):
        root = os.environ.get(var)
        if root and (Path(root) / "emulator" / "emulator").is_file():
            return str(Path(root) / "emulator" / "emulator")
    found = shutil.which("emulator")
    if found:
        return found
    raise ConfigError("no Android emulator found: install the SDK emulator package and set ANDROID_SDK_ROOT "
                      "(or ANDROID_EMULATOR to the binary); `coadapt emulator start --virtual N` needs none")


def emulator_command(config: AvdConfig, emulator: str = "emulator", adb: str | None = None) -> list[str]:
    """The command line that launches `config` (no shell quoting needed: it is an argv)."""
    cmd = [emulator, "-avd", config.avd, "-port", str(config.port)]
    if config.headless:
        cmd.append("-no-window")
    cmd += ["-no-audio", "-no-boot-anim", "-gpu", config.gpu]
    if config.read_only:
        cmd.append("-read-only")
    cmd.append("-no-snapshot-save")
    if config.snapshot:
        cmd += ["-snapshot", config.snapshot]
    if config.memory_mb:
        cmd += ["-memory", str(config.memory_mb)]
    if adb:
        cmd += ["-adb-path", adb]
    cmd += list(config.extra_args)
    return cmd


@dataclass
class AvdProcess:
    """A launched emulator: its process, serial and log file."""

    config: AvdConfig
    process: subprocess.Popen
    log_path: Path

    @property
    def serial(self) -> str:
        return self.config.serial

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self, timeout_s: float = 20.0, adb_port: int | None = None) -> None:
        """Ask the emulator to quit (`adb emu kill`), then terminate the process."""
        if not self.alive():
            return
        try:
            subprocess.run([adb_binary(), *(["-P", str(adb_port)] if adb_port else []), "-s", self.serial, "emu", "kill"],
                           capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()


def launch_avd(config: AvdConfig, *, log_dir: Path, emulator: str | None = None, adb_port: int | None = None) -> AvdProcess:
    """Start the emulator in its own session (it survives the caller) with output to a log."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{config.serial}.log"
    cmd = emulator_command(config, emulator or find_emulator(), adb_binary())
    env = dict(os.environ)
    if adb_port is not None:
        env["ANDROID_ADB_SERVER_PORT"] = str(adb_port)
    log.info("launching %s: %s", config.serial, " ".join(cmd))
    with open(log_path, "ab") as logf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    return AvdProcess(config, proc, log_path)


def wait_for_boot(
    serial: str,
    *,
    adb_port: int | None = None,
    timeout_s: float = 300.0,
    poll_s: float = 2.0,
    alive: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """Wait until `getprop sys.boot_completed` is 1 on `serial`; returns the seconds waited.

    Until the adb server lists the emulator, each poll sends it `host:emulator:PORT` (as the
    emulator itself does) so the server need not wait for its next scan. `alive` (e.g.
    AvdProcess.alive) ends the wait early with DeviceError when the emulator process died.
    Raises DeviceTimeoutError after `timeout_s` seconds.
    """
    import adbutils

    port = adb_port if adb_port is not None else int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    client = adbutils.AdbClient(port=port, socket_timeout=10)
    start = clock()
    while True:
        if alive is not None and not alive():
            raise DeviceError("the emulator process exited before boot completed", command="emulator", serial=serial)
        try:
            if not server_running(port):
                # adbutils would start a server on the default port by itself; never do that here.
                raise DeviceError(f"no adb server on port {port}", command="adb start-server")
            if serial.startswith("emulator-") and serial not in {d.serial for d in client.device_list()}:
                # What a booting emulator sends itself; repeated because the server tries once.
                send_host_request(port, f"host:emulator:{int(serial.split('-')[1]) + 1}")
            value = client.device(serial).shell("getprop sys.boot_completed", timeout=10).strip()
            if value == "1":
                waited = clock() - start
                log.info("%s booted after %.1fs", serial, waited)
                return waited
        except (adbutils.AdbError, OSError, DeviceError) as e:
            log.debug("%s not ready: %s", serial, e)
        if clock() - start >= timeout_s:
            raise DeviceTimeoutError(f"boot did not complete within {timeout_s:.0f}s", command="getprop sys.boot_completed",
                                     serial=serial)
        sleep(poll_s)


def prepare_device(serial: str, *, adb_port: int | None = None) -> None:
    """Post-boot setup every run wants: animations off (stable screenshots and dumps), screen
    awake and unlocked, the stay-awake setting on."""
    import adbutils

    port = adb_port if adb_port is not None else int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    dev = adbutils.AdbClient(port=port, socket_timeout=30).device(serial)
    cmds = [f"settings put global {name} 0" for name in ANIMATION_SETTINGS]
    cmds += ["settings put global stay_on_while_plugged_in 7", "input keyevent 224", "input keyevent 82", "wm dismiss-keyguard"]
    for cmd in cmds:
        try:
            dev.shell(cmd, timeout=30)
        except adbutils.AdbError as e:
            raise DeviceError(f"setup step failed: {e}", command=cmd, serial=serial) from e


def start_avd(config: AvdConfig, *, log_dir: Path, adb_port: int | None = None, boot_timeout_s: float = 300.0,
              emulator: str | None = None, sleep: Callable[[float], None] = time.sleep) -> AvdProcess:
    """Launch, wait for boot, disable animations; kills the emulator if any step fails."""
    proc = launch_avd(config, log_dir=log_dir, emulator=emulator, adb_port=adb_port)
    try:
        wait_for_boot(config.serial, adb_port=adb_port, timeout_s=boot_timeout_s, alive=proc.alive, sleep=sleep)
        prepare_device(config.serial, adb_port=adb_port)
    except BaseException:
        proc.kill(adb_port=adb_port)
        raise
    return proc
