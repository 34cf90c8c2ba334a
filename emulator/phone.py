"""The phone a virtual device serves: a SimDevice plus a file table, a clipboard, and faults.

Faults are what real devices do to ADB clients and what AdbDevice must survive: ANR ("isn't
responding") and crash ("keeps stopping") system dialogs, `uiautomator dump` refusing with
"could not get idle state" or "null root node", uiautomator2 returning an empty hierarchy, and
a device that is still booting. Tests inject them directly or over ADB with
`cmd coadapt fault ...`.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from PIL import Image

from coadapt.android_env.errors import UiTreeError
from coadapt.android_env.sim import SimDevice
from coadapt.android_env.sim.canvas import TEXT, TEXT_2, WHITE, Canvas
from coadapt.android_env.uitree import Bounds, UiElement, element_attrs

from .protocol import S_IFDIR, S_IFREG

DialogKind = Literal["anr", "crash"]
DUMP_FAULTS = {
    "idle": "could not get idle state.",
    "null_root": "null root node returned by UiTestAutomationBridge.",
}
U2_DUMP_FAULTS = ("empty", "no_children", "malformed")
MAX_QUEUED_FAULTS = 10_000
"""Dump faults one queue may hold; `fault dump idle N` asking for more is refused, so a client
cannot grow the daemon's memory with one command."""
MAX_STORAGE_BYTES = 256 * 1024 * 1024
"""Bytes all files pushed to the phone may take together; a push beyond it fails with ENOSPC."""
_DIRS = ("/", "/data", "/data/local", "/data/local/tmp", "/sdcard", "/storage", "/storage/emulated", "/storage/emulated/0")


@dataclass(frozen=True)
class SystemDialog:
    """An Android system dialog over an app: ANR or crash, with the stock buttons and ids."""

    kind: DialogKind
    package: str
    label: str

    @property
    def title(self) -> str:
        return f"{self.label} isn't responding" if self.kind == "anr" else f"{self.label} keeps stopping"

    @property
    def window_title(self) -> str:
        """The window name `dumpsys window` shows as mCurrentFocus."""
        return ("Application Not Responding: " if self.kind == "anr" else "Application Error: ") + self.package

    @property
    def buttons(self) -> tuple[tuple[str, str], ...]:
        """(label, resource-id) of each button, top to bottom."""
        if self.kind == "anr":
            return (("Close app", "android:id/aerr_close"), ("Wait", "android:id/aerr_wait"))
        return (("App info", "android:id/aerr_app_info"), ("Close app", "android:id/aerr_close"))


class Phone:
    """What the ADB services of one virtual device talk to.

    Attribute access falls through to the SimDevice, so the sim shell interpreter runs on a
    Phone unchanged; input, dumps, screenshots and the focused package pass through the fault
    layer first. Not thread-safe: the virtual device calls it from one worker thread.
    """

    def __init__(self, device: SimDevice, *, boot_delay_s: float = 0.0, clock=time.monotonic):
        self.device = device
        self.clipboard: str | None = None
        self.dialog: SystemDialog | None = None
        self.dump_faults: deque[str] = deque()
        self.u2_dump_faults: deque[str] = deque()
        self.u2_servers: dict[int, int] = {}
        """Device TCP port -> number of running uiautomator2 server processes on it."""
        self._meta: dict[str, tuple[int, int]] = {}
        self._clock = clock
        self._booted_at = clock() + boot_delay_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self.device, name)

    # ------------------------------------------------------------------ boot

    @property
    def booted(self) -> bool:
        return self._clock() >= self._booted_at

    @property
    def extra_props(self) -> dict[str, str]:
        if self.booted:
            return {}
        return {"sys.boot_completed": "", "init.svc.bootanim": "running", "dev.bootcomplete": ""}

    # ------------------------------------------------------------------ faults

    def show_dialog(self, kind: DialogKind, package: str | None = None) -> SystemDialog:
        """Put an ANR or crash dialog for `package` (default: the app in front) over the screen."""
        if kind not in ("anr", "crash"):
            raise ValueError(f"dialog kind {kind!r}; valid: anr, crash")
        pkg = package or self.device.current_package()
        label = next((a.label for a in self.device.apps if a.package == pkg), pkg)
        self.dialog = SystemDialog(kind, pkg, label)
        return self.dialog

    def fail_dumps(self, kind: str, count: int = 1) -> None:
        """Make the next `count` `uiautomator dump` runs fail with `kind` (idle, null_root)."""
        if kind not in DUMP_FAULTS:
            raise ValueError(f"dump fault {kind!r}; valid: {', '.join(DUMP_FAULTS)}")
        _check_count(count, len(self.dump_faults))
        self.dump_faults.extend([kind] * count)

    def fail_u2_dumps(self, kind: str, count: int = 1) -> None:
        """Make the next `count` uiautomator2 dumps come back empty (empty, no_children) or as
        XML no parser accepts (malformed: a raw control character, as old u2 servers wrote)."""
        if kind not in U2_DUMP_FAULTS:
            raise ValueError(f"u2 dump fault {kind!r}; valid: {', '.join(U2_DUMP_FAULTS)}")
        _check_count(count, len(self.u2_dump_faults))
        self.u2_dump_faults.extend([kind] * count)

    def inject_fault(self, args: list[str]) -> tuple[bytes, int]:
        """`cmd coadapt fault anr|crash [PKG] | dump idle|null_root [N] | u2dump empty|no_children|malformed [N] | clear`."""
        try:
            if args[:1] in (["anr"], ["crash"]):
                d = self.show_dialog(args[0], args[1] if len(args) > 1 else None)  # type: ignore[arg-type]
                return f"{d.title}\n".encode(), 0
            if args[:1] == ["dump"] and len(args) >= 2:
                self.fail_dumps(args[1], int(args[2]) if len(args) > 2 else 1)
                return b"", 0
            if args[:1] == ["u2dump"] and len(args) >= 2:
                self.fail_u2_dumps(args[1], int(args[2]) if len(args) > 2 else 1)
                return b"", 0
            if args[:1] == ["clear"]:
                self.dialog = None
                self.dump_faults.clear()
                self.u2_dump_faults.clear()
                return b"", 0
        except ValueError as e:
            return f"Error: {e}\n".encode(), 1
        return b"usage: cmd coadapt fault anr|crash [PKG] | dump idle|null_root [N] | u2dump empty|no_children [N] | clear\n", 1

    @property
    def focused_window_title(self) -> str | None:
        return self.dialog.window_title if self.dialog is not None else None

    # ------------------------------------------------------------------ device, through the faults

    def current_package(self) -> str:
        return "android" if self.dialog is not None else self.device.current_package()

    def tap(self, x: int, y: int) -> None:
        if self.dialog is not None:
            self._dialog_tap(x, y)
            return
        self.device.tap(x, y)

    def long_press(self, x: int, y: int, duration_ms: int = 600) -> None:
        if self.dialog is None:
            self.device.long_press(x, y, duration_ms)

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        if self.dialog is None:
            self.device.swipe(x1, y1, x2, y2, duration_ms)

    def input_text(self, text: str) -> None:
        if self.dialog is None:
            self.device.input_text(text)

    def key(self, name: str) -> None:
        # The system dialog is modal and not cancelable; keys reach nothing behind it.
        if self.dialog is None or name not in ("back", "enter", "delete", "tab", "move_end"):
            self.device.key(name)

    def launch(self, package: str) -> None:
        self.device.launch(package)

    def reset(self, seed: int | None = None) -> None:
        self.dialog = None
        self.device.reset(seed)

    def dump_xml(self, dialect: Literal["stock", "u2"] = "u2") -> str:
        if dialect == "stock" and self.dump_faults:
            raise UiTreeError(DUMP_FAULTS[self.dump_faults.popleft()])
        if self.dialog is not None:
            return self._dialog_xml(dialect)
        return self.device.dump_xml(dialect)

    def u2_dump(self, root_in_active: bool = False) -> str:
        """What uiautomator2's dumpWindowHierarchy returns (all windows unless `root_in_active`)."""
        if self.u2_dump_faults:
            kind = self.u2_dump_faults.popleft()
            if kind == "empty":
                return ""
            if kind == "malformed":
                return self.dump_xml("u2").replace('text="', 'text="\x01', 1)
            return "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n<hierarchy rotation=\"0\" />"
        return self.dump_xml("stock" if root_in_active else "u2")

    def screenshot(self) -> Image.Image:
        img = self.device.screenshot()
        if self.dialog is not None:
            self._paint_dialog(img)
        return img

    # ------------------------------------------------------------------ the dialog

    def _dialog_layout(self) -> tuple[Bounds, Bounds, list[tuple[str, str, Bounds]]]:
        w, h = self.device.width, self.device.height
        dp = self.device.density
        row = round(48 * dp)
        n = len(self.dialog.buttons)  # type: ignore[union-attr]
        box_h = round(80 * dp) + n * row
        left, right = round(w * 0.08), w - round(w * 0.08)
        top = (h - box_h) // 2
        box = Bounds(left, top, right, top + box_h)
        title = Bounds(left + round(24 * dp), top + round(24 * dp), right - round(24 * dp), top + round(64 * dp))
        buttons = []
        y = top + round(72 * dp)
        for label, rid in self.dialog.buttons:  # type: ignore[union-attr]
            buttons.append((label, rid, Bounds(left, y, right, y + row)))
            y += row
        return box, title, buttons

    def _dialog_tap(self, x: int, y: int) -> None:
        assert self.dialog is not None
        _box, _title, buttons = self._dialog_layout()
        for label, _rid, b in buttons:
            if b.contains(x, y):
                dialog, self.dialog = self.dialog, None
                if label == "Close app" and self.device.current_package() == dialog.package:
                    self.device.key("home")  # the app process is killed; the launcher shows
                return

    def _dialog_xml(self, dialect: Literal["stock", "u2"]) -> str:
        assert self.dialog is not None
        box, title, buttons = self._dialog_layout()
        idx = iter(range(10_000))

        def el(cls: str, b: Bounds, *, text: str = "", rid: str = "", clickable: bool = False, sib: int = 0, depth: int = 0) -> UiElement:
            return UiElement(index=next(idx), text=text, content_desc="", resource_id=rid, class_name=cls, package="android",
                             bounds=b, clickable=clickable, focusable=clickable, sibling_index=sib, depth=depth)

        nodes = [(el("android.widget.FrameLayout", box), 0, [
            (el("android.widget.TextView", title, text=self.dialog.title, rid="android:id/alertTitle", depth=1), 1, []),
            *((el("android.widget.Button", b, text=label, rid=rid, clickable=True, sib=i + 1, depth=1), 1, [])
              for i, (label, rid, b) in enumerate(buttons)),
        ])]
        pretty = dialect == "u2"
        out: list[str] = []

        def emit(node, level):
            e, _, kids = node
            pad, nl = ("  " * (level + 1), "\n") if pretty else ("", "")
            if kids:
                out.append(f"{pad}<node {element_attrs(e, dialect)}>{nl}")
                for k in kids:
                    emit(k, level + 1)
                out.append(f"{pad}</node>{nl}")
            else:
                out.append(f"{pad}<node {element_attrs(e, dialect)} />{nl}")

        for n in nodes:
            emit(n, 0)
        window_xml = "".join(out)
        if dialect == "stock":
            # The stock tool dumps only the active window, which is now the dialog.
            return f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{window_xml}</hierarchy>"
        base = self.device.dump_xml("u2")
        end = base.rfind("</hierarchy>")
        return base[:end] + window_xml + base[end:]

    def _paint_dialog(self, img: Image.Image) -> None:
        box, title, buttons = self._dialog_layout()
        dp = self.device.density
        scrim = Image.new("RGB", img.size, (0, 0, 0))
        img.paste(Image.blend(img, scrim, 0.4))
        c = Canvas(box.width, box.height, dp, WHITE, origin=(box.left, box.top))
        c.text_in((title.left, title.top, title.right, title.bottom), self.dialog.title, round(20 * dp), TEXT, "medium")  # type: ignore[union-attr]
        for label, _rid, b in buttons:
            c.text_in((b.left, b.top, b.right, b.bottom), label, round(16 * dp), TEXT_2, pad=round(24 * dp))
        img.paste(c.image, (box.left, box.top))

    # ------------------------------------------------------------------ files (for sync)

    def stat(self, path: str) -> tuple[int, int, int]:
        """(mode, size, mtime) of `path`, all zero when it does not exist (sync STAT)."""
        path = _norm(path)
        data = self.device.files.get(path)
        if data is not None:
            mode, mtime = self._meta.get(path, (S_IFREG | 0o644, int(time.time())))
            return mode, len(data), mtime
        if self._is_dir(path):
            return S_IFDIR | 0o771, 4096, int(time.time())
        return 0, 0, 0

    def list_dir(self, path: str) -> list[tuple[str, int, int, int]]:
        """(name, mode, size, mtime) of each entry under the directory `path`."""
        path = _norm(path)
        prefix = path.rstrip("/") + "/"
        names = {k[len(prefix):].split("/", 1)[0] for k in self.device.files if k.startswith(prefix)}
        names |= {d[len(prefix):].split("/", 1)[0] for d in _DIRS if d.startswith(prefix) and d != path}
        return [(n, *self.stat(prefix + n)) for n in sorted(names) if n]

    def read_file(self, path: str) -> bytes | None:
        return self.device.files.get(_norm(path))

    def write_file(self, path: str, data: bytes, mode: int, mtime: int) -> None:
        """Store a pushed file; OSError (ENOSPC) if all files would exceed MAX_STORAGE_BYTES."""
        path = _norm(path)
        files = self.device.files
        used = sum(len(v) for k, v in files.items() if k != path)
        if used + len(data) > MAX_STORAGE_BYTES:
            raise OSError(28, f"No space left on device ({used + len(data)} of {MAX_STORAGE_BYTES} bytes)")
        files[path] = data
        self._meta[path] = (S_IFREG | (mode & 0o7777), mtime)

    def _is_dir(self, path: str) -> bool:
        if path in _DIRS:
            return True
        prefix = path.rstrip("/") + "/"
        return any(k.startswith(prefix) for k in self.device.files)


def _check_count(count: int, queued: int) -> None:
    if count < 0 or queued + count > MAX_QUEUED_FAULTS:
        raise ValueError(f"fault count {count} with {queued} queued is outside 0..{MAX_QUEUED_FAULTS}; "
                         "use `cmd coadapt fault clear` first or ask for fewer")


def _norm(path: str) -> str:
    if path.startswith("/storage/emulated/0/") or path == "/storage/emulated/0":
        path = "/sdcard" + path[len("/storage/emulated/0"):]
    if len(path) > 1:
        path = path.rstrip("/")
    return path
