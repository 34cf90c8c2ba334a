"""AdbDevice: the Device protocol for any emulator, phone or virtual device, through an adb server.

Screens come from `exec:screencap -p`; the UI tree from uiautomator2's on-device server when it
is reachable, else from `uiautomator dump` (stale file removed first; "could not get idle state"
and "null root node" refusals retried). Touches and keys go through uiautomator2's JSON-RPC when
it runs (one HTTP round trip) or `input`. Text: uiautomator2's clipboard paste, else `input text`
for plain ASCII, else the ADBKeyboard IME broadcast (`ADB_INPUT_B64`), as agents in the field do.
ANR ("isn't responding") and crash ("keeps stopping") dialogs are detected and dismissed before
an observation is returned. App state, reset and virtual time use `cmd coadapt ...`, which only
coadapt's simulated and virtual devices answer.

Failures raise DeviceError carrying the command; a device that is gone raises
DeviceOfflineError; a command that does not answer raises DeviceTimeoutError. Transient faults
are retried here, a bounded number of times with exponential backoff, and nowhere else.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import os
import re
import shlex
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal, TypeVar

from PIL import Image, UnidentifiedImageError

from .device import KEY_NAMES
from .errors import AppError, ConfigError, DeviceError, DeviceOfflineError, DeviceTimeoutError, UiTreeError
from .uitree import UiElement, UiTree, parse_xml

log = logging.getLogger(__name__)

T = TypeVar("T")
UiBackend = Literal["auto", "u2", "uiautomator"]
DialogKind = Literal["anr", "crash"]

ADB_KEYBOARD_IME = "com.android.adbkeyboard/.AdbIME"
"""ADBKeyboard (github.com/senzhk/ADBKeyBoard): types any Unicode text sent by broadcast."""
DUMP_PATH = "/data/local/tmp/coadapt_window_dump.xml"
"""Where `uiautomator dump` writes; /data/local/tmp is writable by the shell user everywhere."""
STATE_PATH = "/data/local/tmp/coadapt_state_{package}.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class AdbConfig:
    """How an AdbDevice reaches its device and how hard it tries."""

    adb_host: str = "127.0.0.1"
    """Host of the adb server (not of the device)."""
    adb_port: int | None = None
    """Port of the adb server; None means $ANDROID_ADB_SERVER_PORT, else 5037."""
    ui_backend: UiBackend = "auto"
    """Where the UI tree comes from: "u2" (uiautomator2 server), "uiautomator" (`uiautomator
    dump`, no on-device server), or "auto" (uiautomator2, falling back to the dump)."""
    timeout_s: float = 30.0
    """Longest one adb command may take, in seconds, before DeviceTimeoutError."""
    retries: int = 2
    """Extra attempts after a transient failure (not after the device went offline)."""
    backoff_s: float = 0.5
    """Wait before the first retry, in seconds; doubles on each further retry."""
    dump_retries: int = 3
    """Extra attempts when a UI dump is refused (idle state, null root, empty hierarchy)."""
    screencap: Literal["raw", "png"] = "raw"
    """Screenshot transfer: "raw" frame buffer (no PNG encoding on the device; several MB over
    the wire, fast on emulators and virtual devices) or "png" (small, slow to encode on a phone).
    Raw falls back to PNG for pixel formats it does not know."""
    launch_timeout_s: float = 10.0
    """How long `launch` waits for the app to take the focus, in seconds."""
    dismiss_system_dialogs: bool = True
    """Dismiss ANR and crash dialogs before returning a UI tree or the current package."""

    def __post_init__(self) -> None:
        if self.screencap not in ("raw", "png"):
            raise ConfigError(f"screencap {self.screencap!r}; use raw or png")
        if self.ui_backend not in ("auto", "u2", "uiautomator"):
            raise ConfigError(f"ui_backend {self.ui_backend!r}; use one of auto, u2, uiautomator")
        if self.timeout_s <= 0 or self.launch_timeout_s < 0:
            raise ConfigError("timeout_s must be > 0 and launch_timeout_s >= 0 seconds")
        if self.retries < 0 or self.dump_retries < 0 or self.backoff_s < 0:
            raise ConfigError("retries, dump_retries and backoff_s must be >= 0")

    @property
    def server_port(self) -> int:
        """The adb server port this config resolves to."""
        if self.adb_port is not None:
            return self.adb_port
        return int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))


# --------------------------------------------------------------------------- parsing (pure)


@dataclass(frozen=True)
class Focus:
    """What `dumpsys window` says has the focus."""

    package: str | None
    """Package of the focused window (None when nothing focusable is in front)."""
    activity: str | None = None
    dialog: DialogKind | None = None
    """Set when the focus is a system ANR or crash dialog about `package`."""


_FOCUS_RE = re.compile(r"mCurrentFocus=(?:null|Window\{[0-9a-f]+ (?:u\d+ )?(?P<title>[^}]*?)(?: EXITING)?\})")
_RECORD_RE = re.compile(
    r"(?:mFocusedApp|mResumedActivity|topResumedActivity|ResumedActivity|mFocusedActivity)[=:]\s*"
    r"[^\n]*?ActivityRecord\{[0-9a-f]+ (?:u\d+ )?(?P<pkg>[\w.]+)/(?P<act>[\w.$]+)"
)
_PACKAGE_RE = re.compile(r"[A-Za-z][\w]*(?:\.[A-Za-z_][\w]*)+")
_DIALOG_TITLES = {"Application Not Responding: ": "anr", "Application Error: ": "crash"}


def parse_focus(dumpsys: str) -> Focus | None:
    """The focused package from `dumpsys window` (or `dumpsys activity activities`) output.

    Handles the format variants across Android 5..15: `mCurrentFocus=Window{id u0 pkg/act}`,
    `mCurrentFocus=null` or a non-app window (status bar, popup) with the app in `mFocusedApp`
    (`ActivityRecord{...}` directly or inside `AppWindowToken{... token=Token{...}}`), the
    `mResumedActivity` / `topResumedActivity` lines of the activity dump, and the system dialogs
    `Application Not Responding: pkg` / `Application Error: pkg`. None when nothing matches.
    """
    m = _FOCUS_RE.search(dumpsys)
    if m and m.group("title"):
        title = m.group("title").strip()
        for prefix, kind in _DIALOG_TITLES.items():
            if title.startswith(prefix):
                return Focus(title[len(prefix):].strip(), None, kind)  # type: ignore[arg-type]
        pkg, sep, act = title.partition("/")
        if sep and _PACKAGE_RE.fullmatch(pkg):
            return Focus(pkg, act.split()[0] if act else None)
        if not sep and _PACKAGE_RE.fullmatch(title):
            return Focus(title)  # a dialog or popup window titled by its package
    r = _RECORD_RE.search(dumpsys)
    if r:
        return Focus(r.group("pkg"), r.group("act"))
    return None


def parse_wm_size(output: str) -> tuple[int, int]:
    """(width, height) from `wm size`, preferring the override size; DeviceError if absent."""
    for label in ("Override size", "Physical size"):
        m = re.search(label + r":\s*(\d+)x(\d+)", output)
        if m:
            return int(m.group(1)), int(m.group(2))
    raise DeviceError(f"unexpected `wm size` output {output.strip()[:80]!r}", command="wm size")


_DIALOG_TEXT = re.compile(r"isn['’]t responding|keeps stopping|has stopped|is not responding", re.IGNORECASE)
# Which button dismisses each kind of dialog, best first: wait out an ANR (the app may recover
# mid-task), close a crashed app.
_DISMISS_IDS = {
    "anr": ("android:id/aerr_wait", "android:id/aerr_close", "android:id/button1"),
    "crash": ("android:id/aerr_close", "android:id/aerr_restart", "android:id/button1"),
}
_DISMISS_TEXTS = {"anr": ("Wait", "Close app", "OK"), "crash": ("Close app", "Close", "OK")}


def find_system_dialog(tree: UiTree) -> tuple[DialogKind, UiElement] | None:
    """An ANR or crash dialog in `tree` and the button that dismisses it, if one shows."""
    for e in tree:
        if not _DIALOG_TEXT.search(e.text):
            continue
        kind: DialogKind = "anr" if "respond" in e.text.lower() else "crash"
        window = [x for x in tree if x.window == e.window and x.clickable and x.enabled]
        for rid in _DISMISS_IDS[kind]:
            for b in window:
                if b.resource_id == rid:
                    return kind, b
        for text in _DISMISS_TEXTS[kind]:
            for b in window:
                if b.text.strip().lower() == text.lower():
                    return kind, b
    return None


# screencap raw pixel formats (android.graphics.PixelFormat / HAL): bytes per pixel, PIL raw mode.
# The alpha byte is dropped while unpacking (RGBX, BGRX): the screen is opaque.
_RAW_FORMATS = {1: (4, "RGBX"), 2: (4, "RGBX"), 3: (3, "RGB"), 4: (2, "BGR;16"), 5: (4, "BGRX")}


def decode_raw_screencap(data: bytes) -> Image.Image | None:
    """An RGB image from `screencap` raw output, or None if the format is not recognised.

    The header is width, height, format (u32 LE), plus a dataspace u32 since Android 12; which
    one a device writes is told by the total size.
    """
    if len(data) < 12:
        return None
    w, h, fmt = struct.unpack_from("<3I", data)
    spec = _RAW_FORMATS.get(fmt)
    if spec is None or not (0 < w <= 16384 and 0 < h <= 16384):
        return None
    bpp, rawmode = spec
    header = len(data) - w * h * bpp
    if header not in (12, 16):
        return None
    # frombytes, not frombuffer: frombuffer maps RGBX data as an RGBX image instead of decoding.
    return Image.frombytes("RGB", (w, h), data[header:], "raw", rawmode)


def input_text_arg(text: str) -> str:
    """`text` as one shell word for `input text`: spaces become %s, the rest is shell-quoted."""
    return shlex.quote(text.replace(" ", "%s"))


def _is_plain_ascii(text: str) -> bool:
    return all(32 <= ord(c) < 127 for c in text)


# --------------------------------------------------------------------------- the device


class AdbDevice:
    """One Android device reached through an adb server (see module docstring).

    `serial` is the adb serial (`emulator-5554`, `127.0.0.1:5555`, a USB serial). Nothing is
    contacted until the first call. `sleep` is what waits use (patch it in tests). One object
    serves one user at a time (a pool leases it to one worker); it is not thread-safe.
    """

    def __init__(self, serial: str, config: AdbConfig | None = None, *, sleep: Callable[[float], None] = time.sleep):
        self.serial = serial
        self.config = config or AdbConfig()
        self._sleep = sleep
        self._client, self._adb = _adbutils_device(self.config, serial)
        self._v2: bool | None = None
        self._u2: Any = None
        self._u2_broken = self.config.ui_backend == "uiautomator"
        self._size: tuple[int, int] | None = None
        self._raw_screencap: bool | None = None
        self._coadapt: bool | None = None
        self._ime_before: str | None = None
        self._ime_ready = False
        self._closed = False
        self._server_checked = False
        self.dialogs_dismissed = 0
        """How many ANR/crash dialogs this object has dismissed (for logs and health reports)."""

    def __repr__(self) -> str:
        return f"AdbDevice({self.serial!r}, adb={self.config.adb_host}:{self.config.server_port})"

    # ================================================================== Device protocol

    def screen_size(self) -> tuple[int, int]:
        if self._size is None:
            w, h = parse_wm_size(self._shell_checked("wm size"))
            rot = re.search(r"SurfaceOrientation:\s*(\d)", self._shell_out("dumpsys input | grep SurfaceOrientation"))
            if rot and int(rot.group(1)) % 2 == 1:
                w, h = h, w
            self._size = (w, h)
        return self._size

    def screenshot(self) -> Image.Image:
        if self.config.screencap == "raw" and self._raw_screencap is not False:
            img = self._retry("screencap", self._screenshot_raw)
            if img is not None:
                self._size = img.size
                return img
            self._raw_screencap = False  # this device's raw format is unknown to us: use PNG
        cmd = "screencap -p"

        def grab() -> Image.Image:
            data = self._exec(cmd)
            start = data.find(PNG_MAGIC)  # some devices print a warning line before the PNG
            if start < 0:
                raise DeviceError(f"screencap returned no PNG ({len(data)} bytes: {data[:60]!r})", command=cmd, serial=self.serial)
            try:
                img = Image.open(io.BytesIO(data[start:]))
                img.load()
            except (UnidentifiedImageError, OSError) as e:
                raise DeviceError(f"screencap PNG is unreadable: {e}", command=cmd, serial=self.serial) from e
            return img.convert("RGB")

        img = self._retry(cmd, grab)
        self._size = img.size
        return img

    def _screenshot_raw(self) -> Image.Image | None:
        data = self._exec("screencap")
        img = decode_raw_screencap(data)
        if img is None:
            fmt = struct.unpack_from("<3I", data)[2] if len(data) >= 12 else None
            if fmt in _RAW_FORMATS:
                # A format we know with the wrong length: the transfer was cut; retry it.
                raise DeviceError(f"raw screencap truncated ({len(data)} bytes)", command="screencap", serial=self.serial)
            log.info("%s: raw screencap format %s not understood; switching to PNG", self.serial, fmt)
        return img

    def ui_tree(self) -> UiTree:
        tree = self._dump()
        if self.config.dismiss_system_dialogs:
            for _ in range(3):
                found = find_system_dialog(tree)
                if found is None:
                    break
                self._dismiss(*found)
                tree = self._dump()
        return tree

    def tap(self, x: int, y: int) -> None:
        self._touch(lambda u: u.click(int(x), int(y)), f"input tap {int(x)} {int(y)}")

    def long_press(self, x: int, y: int, duration_ms: int = 600) -> None:
        x, y, ms = int(x), int(y), max(int(duration_ms), 500)
        self._touch(lambda u: u.click(x, y, ms), f"input swipe {x} {y} {x} {y} {ms}")

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        x1, y1, x2, y2, ms = int(x1), int(y1), int(x2), int(y2), int(duration_ms)
        # uiautomator2 moves the finger in steps of 5 ms.
        self._touch(lambda u: u.swipe(x1, y1, x2, y2, max(2, ms // 5)), f"input swipe {x1} {y1} {x2} {y2} {ms}")

    def input_text(self, text: str) -> None:
        if not text:
            return
        u2 = self._u2_client()
        if u2 is not None:
            try:
                self._u2_call(u2, "setClipboard", [None, text])
                self._u2_call(u2, "pasteClipboard", {})
                return
            except (DeviceOfflineError, _Unresponsive):
                raise
            except DeviceError as e:
                self._u2_failed(e)
        if _is_plain_ascii(text):
            self._shell_checked(f"input text {input_text_arg(text)}")
            return
        self._adb_keyboard_type(text)

    def key(self, name: str) -> None:
        if name not in KEY_NAMES:
            raise DeviceError(f"unknown key {name!r}; valid: {', '.join(sorted(KEY_NAMES))}", command=f"key {name}", serial=self.serial)
        code = KEY_NAMES[name]
        self._touch(lambda u: u.key(code), f"input keyevent {code}")

    def launch(self, package: str) -> None:
        cmd = f"monkey -p {shlex.quote(package)} -c android.intent.category.LAUNCHER 1"
        out, _code = self._shell(cmd)
        if "No activities found" in out or "monkey aborted" in out:
            raise AppError(f"package {package!r} has no launcher activity on {self.serial} (is it installed?)")
        deadline = time.monotonic() + self.config.launch_timeout_s
        while True:
            if self.current_package() == package:
                return
            if time.monotonic() >= deadline:
                log.warning("%s: %s launched but %s still has the focus after %.1fs", self.serial, package,
                            self.current_package(), self.config.launch_timeout_s)
                return
            self._sleep(0.25)

    def current_package(self) -> str:
        for _ in range(3):
            focus = self._focus()
            if focus.dialog is None or not self.config.dismiss_system_dialogs:
                return "android" if focus.dialog else (focus.package or "")
            found = find_system_dialog(self._dump())
            if found is None:
                return "android"  # the dialog shows but has no button we know; report it
            self._dismiss(*found)
        return self._focus().package or ""

    def shell(self, cmd: str) -> str:
        out, _code = self._shell(cmd)
        return out

    def read_app_state(self, package: str) -> dict[str, Any]:
        cmd = f"cmd coadapt state get {shlex.quote(package)}"
        out = self._coadapt_cmd(cmd)
        try:
            state = json.loads(out)
        except json.JSONDecodeError as e:
            raise DeviceError(f"app state is not JSON: {out[:120]!r}", command=cmd, serial=self.serial) from e
        if not isinstance(state, dict):
            raise DeviceError(f"app state is a {type(state).__name__}, not an object", command=cmd, serial=self.serial)
        return state

    def write_app_state(self, package: str, state: dict[str, Any]) -> None:
        path = STATE_PATH.format(package=package)
        data = json.dumps(state, ensure_ascii=False).encode("utf-8")
        self._retry(f"push {path}", lambda: self._adb.sync.push(data, path, mode=0o644))
        self._coadapt_cmd(f"cmd coadapt state put {shlex.quote(package)} {path}; rm -f {path}")

    def reset(self, seed: int | None = None) -> None:
        self._coadapt_cmd("cmd coadapt reset" + ("" if seed is None else f" {int(seed)}"))
        self._ime_ready = False  # a reset restores the device's settings, the IME among them

    def wait(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self._has_coadapt():
            # A virtual device keeps virtual time: advance its clock instead of sleeping.
            self._coadapt_cmd(f"cmd coadapt wait {float(seconds)}")
        else:
            self._sleep(seconds)

    def close(self) -> None:
        if self._closed:
            return
        try:
            if self._ime_before and self._ime_ready:
                self._shell(f"ime set {shlex.quote(self._ime_before)}")
        except DeviceError as e:
            log.debug("%s: could not restore the IME: %s", self.serial, e)
        if self._u2 is not None:
            try:
                self._u2.stop_uiautomator(wait=False)
            except Exception as e:  # closing must not fail on a device that is already gone
                log.debug("%s: stopping uiautomator2 failed: %s", self.serial, e)
            self._u2 = None
        self._closed = True

    # ================================================================== for pools

    def state(self) -> str:
        """The adb server's view of the device: "device", "offline", "unauthorized", or "absent".
        Cheap (answered by the server, no device traffic); never raises."""
        import adbutils

        try:
            if not self._server_checked:
                self._check_server()
            return self._adb.get_state()
        except (adbutils.AdbError, OSError, EOFError, DeviceOfflineError):
            return "absent"

    def ping(self, timeout_s: float = 5.0) -> bool:
        """True when the device is online and runs a shell command within `timeout_s` (every
        socket wait of the check is capped at it: a frozen device reads as dead in seconds)."""
        with self._adb.capped(timeout_s):
            if self.state() != "device":
                return False
            try:
                r = self._adb.shell2("echo ping", timeout=timeout_s, v2=False)
                return r.returncode == 0 and r.output.strip() == "ping"
            except Exception:  # any failure is "unhealthy"; the caller decides what to do
                return False

    healthy = ping

    def reconnect(self, timeout_s: float = 10.0) -> bool:
        """Ask the adb server to reconnect the device (`adb connect` for host:port serials,
        `host:emulator:PORT` for emulator-N), forget the uiautomator2 session, and report
        whether the device answers again within `timeout_s`."""
        import adbutils

        self._u2 = None
        self._u2_broken = self.config.ui_backend == "uiautomator"
        self._v2 = None
        self._ime_ready = False
        try:
            self._check_server()
            if re.fullmatch(r"[\w.\-]+:\d+", self.serial):
                self._client.disconnect(self.serial)
                self._client.connect(self.serial, timeout=timeout_s)
            elif m := re.fullmatch(r"emulator-(\d+)", self.serial):
                with self._client.make_connection(timeout=timeout_s) as c:
                    c.send_command(f"host:emulator:{int(m.group(1)) + 1}")
            else:
                with self._client.make_connection(timeout=timeout_s) as c:
                    c.send_command("host:reconnect-offline")
                    c.check_okay()
        except DeviceOfflineError as e:
            log.info("%s: cannot reconnect: %s", self.serial, e)
            return False
        except (adbutils.AdbError, OSError) as e:
            log.info("%s: reconnect request failed: %s", self.serial, e)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.ping(timeout_s=min(5.0, timeout_s)):
                return True
            self._sleep(0.2)
        return False

    def dismiss_system_dialogs(self) -> int:
        """Dismiss every ANR/crash dialog showing now; returns how many were dismissed."""
        before = self.dialogs_dismissed
        for _ in range(3):
            found = find_system_dialog(self._dump())
            if found is None:
                break
            self._dismiss(*found)
        return self.dialogs_dismissed - before

    @property
    def ui_backend_in_use(self) -> Literal["u2", "uiautomator"]:
        """Where the next UI tree will come from."""
        return "u2" if self._u2_client() is not None else "uiautomator"

    # ================================================================== internals: adb

    def _check_open(self) -> None:
        if self._closed:
            raise DeviceError("device is closed", serial=self.serial)
        if not self._server_checked:
            self._check_server()

    def _check_server(self) -> None:
        """adbutils starts a missing server by itself, but always on the default port; with a
        custom port that would start a stray server and still fail, so say so instead."""
        default = int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
        if self.config.server_port != default:
            try:
                socket.create_connection((self.config.adb_host, self.config.server_port), timeout=2).close()
            except OSError as e:
                raise DeviceOfflineError(f"no adb server at {self.config.adb_host}:{self.config.server_port} ({e}); "
                                         f"start one with `adb -P {self.config.server_port} start-server`",
                                         serial=self.serial) from e
        self._server_checked = True

    def _retry(self, what: str, fn: Callable[[], T]) -> T:
        """Run `fn`; on a transient failure wait and try again (bounded, exponential backoff).
        An offline device is not retried: it needs recovery, which is the pool's job."""
        self._check_open()
        delay = self.config.backoff_s
        for attempt in range(self.config.retries + 1):
            try:
                return fn()
            except (DeviceOfflineError, _Unresponsive):
                raise
            except Exception as e:
                err = self._translate(what, e)
                if err is None:
                    raise
                if isinstance(err, DeviceOfflineError) or attempt == self.config.retries:
                    raise err from e
                if isinstance(err, DeviceTimeoutError) and not self.ping(timeout_s=min(_FROZEN_PING_S, self.config.timeout_s)):
                    # Timed out and cannot echo either: the device is frozen, not busy. Retrying
                    # (and falling back to another UI backend) would only multiply the wait.
                    raise _Unresponsive(f"no answer within {self.config.timeout_s:g}s, nor to a ping (device frozen?)",
                                        command=err.command, serial=self.serial) from e
                log.info("%s: %s failed (%s); retry %d/%d in %.2fs", self.serial, what, err, attempt + 1,
                         self.config.retries, delay)
                self._sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _translate(self, what: str, e: BaseException) -> DeviceError | None:
        """The typed error for an exception from adbutils/uiautomator2/sockets (None: not ours)."""
        import adbutils
        from adbutils.errors import AdbConnectionError

        if isinstance(e, DeviceError):
            err: DeviceError = e
        elif isinstance(e, (adbutils.AdbTimeout, socket.timeout, TimeoutError)):
            err = DeviceTimeoutError(f"no answer within {self.config.timeout_s:.0f}s", command=what, serial=self.serial)
        elif isinstance(e, (AdbConnectionError, ConnectionRefusedError)):
            return DeviceOfflineError(f"adb server at {self.config.adb_host}:{self.config.server_port} is unreachable: {e}",
                                      command=what, serial=self.serial)
        elif isinstance(e, (adbutils.AdbError, EOFError, OSError)) or _is_u2_error(e):
            err = DeviceError(f"{type(e).__name__}: {e}", command=what, serial=self.serial)
        else:
            return None
        msg = str(e).lower()
        state = "offline" if "offline" in msg else "absent" if "not found" in msg else self.state()
        if state != "device":
            return DeviceOfflineError(f"device is {state} ({type(e).__name__}: {e})", command=what, serial=self.serial)
        return err

    def _shell(self, cmd: str) -> tuple[str, int]:
        """(output, exit code) of `cmd`; stdout and stderr together."""
        raw, code = self._retry(cmd, lambda: self._shell_raw(cmd))
        return raw.decode("utf-8", errors="replace"), code

    def _shell_raw(self, cmd: str) -> tuple[bytes, int]:
        if self._v2 is None:
            self._v2 = "shell_v2" in self._adb.get_features().split(",")
        r = self._adb.shell2(cmd, timeout=self.config.timeout_s, encoding=None, v2=self._v2)
        return r.output, r.returncode

    def _shell_out(self, cmd: str) -> str:
        return self._shell(cmd)[0]

    def _shell_checked(self, cmd: str) -> str:
        out, code = self._shell(cmd)
        if code != 0:
            raise DeviceError(f"exit code {code}: {out.strip()[:200]}", command=cmd, serial=self.serial)
        return out

    def _exec(self, cmd: str) -> bytes:
        """Raw stdout of `exec:cmd` (binary-safe: no pty, no line-ending mangling)."""
        with self._adb.open_transport(timeout=self.config.timeout_s) as c:
            c.send_command("exec:" + cmd)
            c.check_okay()
            # Not c.read_until_close(): it grows one bytes object 4 KiB at a time (quadratic).
            chunks = []
            while chunk := c.conn.recv(1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)

    def _focus(self) -> Focus:
        cmd = "dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'"
        focus = parse_focus(self._shell_out(cmd))
        if focus is None or focus.package is None:
            focus = parse_focus(self._shell_out("dumpsys activity activities | grep -E 'ResumedActivity'")) or focus
        return focus or Focus(None)

    def _has_coadapt(self) -> bool:
        if self._coadapt is None:
            out, _code = self._shell("cmd coadapt")
            self._coadapt = "cmd coadapt" in out
        return self._coadapt

    def _coadapt_cmd(self, cmd: str) -> str:
        out, code = self._shell(cmd)
        if code == 0:
            self._coadapt = True
            return out
        if "Can't find service" in out:
            self._coadapt = False
            raise DeviceError("this device has no coadapt service: app state, reset and virtual time need a coadapt "
                              "simulated or virtual device (restore an emulator snapshot instead)", command=cmd, serial=self.serial)
        if "is not installed" in out:
            raise AppError(out.strip().removeprefix("Error: "))
        raise DeviceError(f"exit code {code}: {out.strip()[:200]}", command=cmd, serial=self.serial)

    # ================================================================== internals: UI tree

    def _dump(self) -> UiTree:
        """One UI tree, retrying refused dumps; uiautomator2 first when it is usable."""
        u2 = self._u2_client()
        if u2 is not None:
            try:
                return self._dump_u2(u2)
            except (DeviceOfflineError, _Unresponsive):
                raise
            except _BadU2Dump as e:
                # uiautomator2 answered, with a dump we cannot read: this screen's problem, not
                # the session's. Read this one with `uiautomator dump`; keep u2 for the next.
                if self.config.ui_backend == "u2":
                    raise
                log.info("%s: %s; reading this screen with `uiautomator dump`", self.serial, e)
                return self._dump_uiautomator()
            except DeviceError as e:
                if self.config.ui_backend == "u2":
                    raise
                self._u2_failed(e)
        return self._dump_uiautomator()

    def _dump_u2(self, u2: Any) -> UiTree:
        what = "uiautomator2 dumpWindowHierarchy"
        delay = self.config.backoff_s
        problem = ""
        for attempt in range(self.config.dump_retries + 1):
            xml = self._u2_call(u2, "dumpWindowHierarchy", [False, 50])
            if xml and "<node" in xml:
                try:
                    return parse_xml(xml)
                except UiTreeError as e:
                    problem = str(e)
            else:
                problem = "empty hierarchy"
            if attempt < self.config.dump_retries:
                log.info("%s: %s: %s; retry in %.2fs", self.serial, what, problem, delay)
                self._sleep(delay)
                delay *= 2
        raise _BadU2Dump(f"UI dump failed {self.config.dump_retries + 1} times: {problem}", command=what, serial=self.serial)

    def _dump_uiautomator(self) -> UiTree:
        # Remove the old file first: a refused dump leaves the previous screen's file behind.
        cmd = f"rm -f {DUMP_PATH}; uiautomator dump {DUMP_PATH}; cat {DUMP_PATH}"
        delay = self.config.backoff_s
        problem = ""
        for attempt in range(self.config.dump_retries + 1):
            out, _code = self._shell(cmd)
            try:
                return parse_xml(out)
            except UiTreeError as e:
                problem = str(e)
                if "ERROR" in out:
                    problem = out[out.index("ERROR"):].splitlines()[0]
            if attempt < self.config.dump_retries:
                log.info("%s: uiautomator dump refused (%s); retry in %.2fs", self.serial, problem, delay)
                self._sleep(delay)
                delay *= 2
        raise DeviceError(f"UI dump failed {self.config.dump_retries + 1} times: {problem}", command=cmd, serial=self.serial)

    def _dismiss(self, kind: DialogKind, button: UiElement) -> None:
        log.warning("%s: dismissing a system %s dialog with %r", self.serial, "ANR" if kind == "anr" else "crash",
                    button.text or button.resource_id)
        self.tap(*button.bounds.center)
        self.dialogs_dismissed += 1

    # ================================================================== internals: uiautomator2

    def _u2_client(self) -> Any:
        """The uiautomator2 session, connecting on first use; None when it is not to be used."""
        if self._u2 is not None or self._u2_broken:
            return self._u2
        self._check_open()
        try:
            import uiautomator2

            self._u2 = self._retry("uiautomator2 connect", lambda: uiautomator2.connect(self._adb))
        except (DeviceOfflineError, _Unresponsive):
            raise
        except (DeviceError, ImportError) as e:
            if self.config.ui_backend == "u2":
                raise DeviceError(f"uiautomator2 server unavailable: {e}", command="uiautomator2 connect", serial=self.serial) from e
            log.warning("%s: uiautomator2 unavailable (%s); using `uiautomator dump` and `input`", self.serial, e)
            self._u2_broken = True
        return self._u2

    def _u2_failed(self, e: DeviceError) -> None:
        log.warning("%s: uiautomator2 failed (%s); falling back to `uiautomator dump` and `input`", self.serial, e)
        if self.config.ui_backend == "auto":
            try:
                self._u2.stop_uiautomator(wait=False)
            except Exception as stop_error:  # the session is being abandoned either way
                log.debug("%s: stopping uiautomator2 failed: %s", self.serial, stop_error)
            self._u2 = None
            self._u2_broken = True

    def _u2_call(self, u2: Any, method: str, params: Any) -> Any:
        return self._retry(f"uiautomator2 {method}", lambda: u2.jsonrpc_call(method, params, timeout=self.config.timeout_s))

    def _touch(self, via_u2: Callable[["_U2Input"], Any], shell_cmd: str) -> None:
        u2 = self._u2_client()
        if u2 is not None:
            try:
                via_u2(_U2Input(self, u2))
                return
            except (DeviceOfflineError, _Unresponsive):
                raise
            except DeviceError as e:
                self._u2_failed(e)
        self._shell_checked(shell_cmd)

    # ================================================================== internals: text

    def _adb_keyboard_type(self, text: str) -> None:
        if not self._ime_ready:
            ime_list = self._shell_out("ime list -s -a")
            if ADB_KEYBOARD_IME not in ime_list.split():
                raise DeviceError(
                    f"cannot type non-ASCII text {text[:20]!r}: `input text` is ASCII-only, uiautomator2 is not in use, "
                    f"and the ADBKeyboard IME ({ADB_KEYBOARD_IME}) is not installed; install ADBKeyboard or use ui_backend='auto'",
                    command="ime list -s -a", serial=self.serial)
            current = self._shell_out("settings get secure default_input_method").strip()
            if current != ADB_KEYBOARD_IME:
                if current not in ("", "null"):
                    self._ime_before = self._ime_before or current
                self._shell_checked(f"ime enable {ADB_KEYBOARD_IME}")
                self._shell_checked(f"ime set {ADB_KEYBOARD_IME}")
            self._ime_ready = True
        b64 = base64.b64encode(text.encode("utf-8")).decode()
        self._shell_checked(f"am broadcast -a ADB_INPUT_B64 --es msg {b64}")


_FROZEN_PING_S = 5.0
"""After a timeout, a device that cannot echo within this many seconds is taken as frozen."""


class _Unresponsive(DeviceTimeoutError):
    """A call timed out and the device failed a ping too: no retry, no fallback backend."""


class _BadU2Dump(DeviceError):
    """uiautomator2 answered every try with an empty or unparseable hierarchy (a per-call
    problem: the session works, so it is kept)."""


def _adbutils_device(config: AdbConfig, serial: str) -> tuple[Any, Any]:
    """An adbutils (client, device) pair tuned for many small requests.

    adbutils asks the server for its version before every device command (one more connection
    each time) and leaves Nagle's algorithm on, so uiautomator2's HTTP requests, written as
    headers then body, stall ~40 ms on delayed ACKs. The client here asks once and sets
    TCP_NODELAY on its connections, and the device caps every socket wait at `config.timeout_s`.
    """
    import adbutils  # local: adbutils is only needed once an ADB device is used

    class Client(adbutils.AdbClient):
        _version: int | None = None

        def server_version(self) -> int:
            if self._version is None:
                self._version = super().server_version()
            return self._version

        def make_connection(self, timeout: float | None = None):
            conn = super().make_connection(timeout)
            conn.conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return conn

    class CappedAdbDevice(adbutils.AdbDevice):
        """An adbutils device whose every socket wait is capped at our timeout.

        adbutils defaults each call to 600 s, and uiautomator2 and adbutils' own helpers
        (open_shell, get_state, create_connection, ...) call without a timeout; a frozen device
        (its TCP connection open, nothing answering) would block them for ten minutes. All of
        them open their connection through `open_transport` and `shell`, so capping those two
        caps everything this device object does. `capped(s)` lowers the cap for one block.
        """

        def __init__(self, client: Any, serial: str, timeout_s: float):
            super().__init__(client, serial=serial)
            self.cap_s = timeout_s

        def _cap(self, timeout: float | None) -> float:
            return self.cap_s if timeout is None or timeout <= 0 or timeout > self.cap_s else timeout

        def open_transport(self, command: str | None = None, timeout: float | None = None):  # type: ignore[override]
            return super().open_transport(command, timeout=self._cap(timeout))

        def shell(self, cmdargs, stream=False, timeout=None, encoding="utf-8", rstrip=True):  # type: ignore[override]
            out = super().shell(cmdargs, stream=stream, timeout=self._cap(timeout), encoding=encoding, rstrip=rstrip)
            if stream:
                # Opening was capped; the stream itself lives as long as its process (uiautomator2
                # launches its server this way and reads until it exits), so it may be silent.
                out.conn.settimeout(None)
            return out

        def shell2(self, cmdargs, timeout=None, encoding="utf-8", rstrip=False, v2=False):  # type: ignore[override]
            return super().shell2(cmdargs, timeout=self._cap(timeout), encoding=encoding, rstrip=rstrip, v2=v2)

        @contextlib.contextmanager
        def capped(self, timeout_s: float) -> Iterator[None]:
            before = self.cap_s
            self.cap_s = min(before, timeout_s)
            try:
                yield
            finally:
                self.cap_s = before

    client = Client(host=config.adb_host, port=config.server_port, socket_timeout=config.timeout_s)
    return client, CappedAdbDevice(client, serial=serial, timeout_s=config.timeout_s)


class _U2Input:
    """Touches and keys over uiautomator2 JSON-RPC, one HTTP round trip each."""

    def __init__(self, dev: AdbDevice, u2: Any):
        self._dev, self._u2 = dev, u2

    def click(self, x: int, y: int, duration_ms: int | None = None) -> None:
        self._dev._u2_call(self._u2, "click", [x, y] if duration_ms is None else [x, y, duration_ms])

    def swipe(self, x1: int, y1: int, x2: int, y2: int, steps: int) -> None:
        self._dev._u2_call(self._u2, "swipe", [x1, y1, x2, y2, steps])

    def key(self, code: int) -> None:
        self._dev._u2_call(self._u2, "pressKeyCode", [code])


def _is_u2_error(e: BaseException) -> bool:
    try:
        import uiautomator2.exceptions as u2e
    except ImportError:
        return False
    return isinstance(e, (u2e.BaseException, ConnectionError))


__all__ = [
    "AdbConfig", "AdbDevice", "Focus", "decode_raw_screencap", "find_system_dialog", "input_text_arg", "parse_focus",
    "parse_wm_size",
]
