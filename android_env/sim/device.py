"""SimDevice: a simulated Android phone, the embedded default Device.

It has a launcher, status and navigation bars, recents, an on-screen keyboard, toasts and
snackbars, optional system popups, and runs the simulated apps it is given. Each frame is
built from the apps' state into windows of Nodes, which are painted (screenshot), dumped
(uiautomator XML) and hit-tested (input) from the same layout. Time is virtual: every input
advances the clock one second and `wait` advances it by the seconds asked, so a run is a pure
function of the seed and the inputs.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from PIL import Image

from ..device import KEY_NAMES
from ..errors import AppError, ConfigError, DeviceError
from ..uitree import UiTree, XmlDialect, write_xml
from . import keyboard as kb
from .app import Route, SimApp, find_app
from .canvas import DIVIDER, SCRIM, SURFACE, SURFACE_2, TEXT, TEXT_2, WHITE, Canvas, hex_rgb, mix, text_width
from .node import Node, ScrollBinding, Window, build_tree, paint, touch_target
from .shell import run_shell
from .widgets import (
    BottomSheet, Dialog, Drawer, LayoutCtx, ListView, ProgressBar, Screen, Text, Theme, View,
    _shift,
)

log = logging.getLogger(__name__)

# Pillow frees every image's memory at once by default, so each frame's fresh canvas costs
# page faults (~8 ms here for 720x1600). Keeping a few freed blocks makes frames reuse them.
if Image.core.get_blocks_max() < 16:
    Image.core.set_blocks_max(16)

LAUNCHER = "com.android.launcher3"
SYSTEMUI = "com.android.systemui"
PERMISSION = "com.google.android.permissioncontroller"
STATUS_DP, NAV_DP, KEYBOARD_DP = 24, 48, 260


@dataclass(frozen=True)
class SimConfig:
    """Settings of a simulated phone."""

    width: int = 720
    """Screen width in physical pixels."""
    height: int = 1600
    """Screen height in physical pixels."""
    density: float = 2.0
    """Pixels per dp (2.0 is Android's xhdpi, 320 dpi)."""
    seed: int = 0
    """Seeds the system popups; the same seed and inputs give the same screens."""
    popups: bool = False
    """Show random system popups (permission dialog, "rate this app", a loading spinner)."""
    popup_rate: float = 0.08
    """Chance per input, while an app is in front, that a popup appears (when `popups`)."""
    start_time: str = "2026-10-15T09:00:00"
    """The virtual clock's time after reset (ISO 8601)."""
    serial: str = "sim-0"
    """The name the device reports."""

    def __post_init__(self) -> None:
        if not (240 <= self.width <= 4096 and 320 <= self.height <= 8192):
            raise ConfigError(f"screen {self.width}x{self.height} px is outside 240..4096 x 320..8192")
        if not 0.75 <= self.density <= 6:
            raise ConfigError(f"density {self.density} is outside 0.75..6 px per dp")
        if not 0 <= self.popup_rate <= 1:
            raise ConfigError(f"popup_rate {self.popup_rate} must be a probability in [0, 1]")
        try:
            dt.datetime.fromisoformat(self.start_time)
        except ValueError as e:
            raise ConfigError(f"start_time {self.start_time!r} is not ISO 8601 (e.g. 2026-10-15T09:00:00)") from e


@dataclass(eq=False)
class _Frame:
    windows: list[Window]
    tree: UiTree | None = None
    image: Image.Image | None = None
    edits: dict[str, Node] = field(default_factory=dict)


@dataclass(eq=False)
class _Transient:
    text: str
    until: dt.datetime
    action: str | None = None
    on_action: Callable[[], None] | None = None


class SimDevice:
    """A simulated Android phone running simulated apps (see module docstring)."""

    def __init__(self, apps: Iterable[SimApp], config: SimConfig | None = None):
        self.config = config or SimConfig()
        self.apps: list[SimApp] = list(apps)
        seen: set[str] = set()
        for a in self.apps:
            if a.package in seen:
                raise ConfigError(f"two apps share the package {a.package!r}")
            seen.add(a.package)
            a.system = self
        self.width, self.height, self.density = self.config.width, self.config.height, self.config.density
        self.serial = self.config.serial
        self._closed = False
        self.reset()

    # ================================================================== Device protocol

    def screen_size(self) -> tuple[int, int]:
        return self.width, self.height

    def screenshot(self) -> Image.Image:
        frame = self._current_frame()
        if frame.image is None:
            frame.image = self._render(frame)
        # A new image object over the same pixels, read-only: a caller that draws on it gets
        # its own copy first (Pillow copies on write), so the cached frame stays intact.
        shared = frame.image._new(frame.image.im)
        shared.readonly = 1
        return shared

    def ui_tree(self) -> UiTree:
        frame = self._current_frame()
        if frame.tree is None:
            frame.tree = build_tree(frame.windows, self.width, self.height)
        return frame.tree

    def dump_xml(self, dialect: XmlDialect = "u2") -> str:
        """The hierarchy as uiautomator writes it: all windows ("u2") or the active one ("stock")."""
        tree = self.ui_tree()
        if dialect == "u2":
            return write_xml(tree, "u2")
        windows = self._current_frame().windows
        active = max(i for i, w in enumerate(windows) if w.touchable and w.package not in (SYSTEMUI, kb.KEYBOARD_PACKAGE))
        return write_xml(tree, "stock", windows=[active])

    def tap(self, x: int, y: int) -> None:
        self._input()
        if self._blocked():
            return
        frame = self._current_frame()
        win, path = touch_target(frame.windows, x, y)
        if win is None:
            return
        if not path:
            if win.on_outside is not None:
                win.on_outside()
            self._changed()
            return
        for node in reversed(path):
            if not node.enabled and node.takes_touch():
                break
            if node.on_tap_at is not None:
                node.on_tap_at(x, y)
                break
            if node.on_click is not None:
                if node.edit is not None:
                    self._keyboard_hidden = False
                node.on_click()
                break
            if node.clickable:
                break
        self._after_input()

    def long_press(self, x: int, y: int, duration_ms: int = 600) -> None:
        self._input()
        if self._blocked():
            return
        frame = self._current_frame()
        win, path = touch_target(frame.windows, x, y)
        if not path:
            if win is not None and win.on_outside is not None:
                win.on_outside()
        else:
            for node in reversed(path):
                if node.on_long_click is not None:
                    node.on_long_click()
                    break
                if node.takes_touch():
                    break
        self._after_input()

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        dx, dy = x2 - x1, y2 - y1
        if abs(dx) < self._dp(8) and abs(dy) < self._dp(8):
            self.tap(x1, y1)
            return
        self._input()
        if self._blocked():
            return
        frame = self._current_frame()
        win, path = touch_target(frame.windows, x1, y1)
        if abs(dx) > abs(dy):
            direction = "right" if dx > 0 else "left"
            app = self._front_app()
            if direction == "right" and x1 < self._dp(24) and app is not None and self._screen is not None and self._screen.drawer and not app.route.has_overlay():
                app.route.drawer_open = True
            else:
                for node in reversed(path):
                    if node.on_swipe is not None and node.on_swipe(direction):
                        break
        else:
            for node in reversed(path):
                if node.scroll is not None and not node.scroll.horizontal:
                    s = node.scroll
                    s.set_offset(min(s.max_offset, max(0, s.offset - dy)))
                    break
        self._after_input()

    def input_text(self, text: str) -> None:
        self._input()
        if self._blocked():
            return
        node = self._focused_edit()
        if node is not None and node.edit is not None:
            value = node.edit.value
            for ch in text:
                if ch == "\n" and not node.edit.multiline:
                    continue
                value += ch
            node.edit.on_change(value)
        self._after_input()

    def key(self, name: str) -> None:
        if name not in KEY_NAMES:
            raise DeviceError(f"unknown key {name!r}; valid: {', '.join(sorted(KEY_NAMES))}", command=f"key {name}", serial=self.serial)
        self._input()
        if name == "home":
            self._popup = None
            self._go(LAUNCHER)
        elif name == "recents":
            self._popup = None
            if self._foreground != "recents":
                self._before_recents = self._foreground
                self._go("recents")
        elif self._blocked():
            return
        elif name == "back":
            self._back()
        elif name in ("enter", "delete"):
            node = self._focused_edit()
            if node is not None and node.edit is not None:
                if name == "delete":
                    node.edit.on_change(node.edit.value[:-1])
                elif node.edit.multiline:
                    node.edit.on_change(node.edit.value + "\n")
                elif node.edit.on_submit is not None:
                    node.edit.on_submit()
        self._after_input()

    def launch(self, package: str) -> None:
        if package == LAUNCHER:
            self.key("home")
            return
        app = self._app(package)
        self._input()
        self._go(package)
        app.on_launch()
        self._after_input(launched=True)

    def current_package(self) -> str:
        if self._popup is not None and self._popup.kind == "permission":
            return PERMISSION
        return LAUNCHER if self._foreground in (LAUNCHER, "recents") else self._foreground

    def shell(self, cmd: str) -> str:
        out, _code = run_shell(self, cmd)
        return out.decode("utf-8", errors="replace")

    def read_app_state(self, package: str) -> dict[str, Any]:
        return self._app(package).state_dict()

    def write_app_state(self, package: str, state: dict[str, Any]) -> None:
        self._app(package).load_state(state)
        self._changed()

    def reset(self, seed: int | None = None) -> None:
        for a in self.apps:
            a.reset()
        self._rng = random.Random(self.config.seed if seed is None else seed)
        self._clock = dt.datetime.fromisoformat(self.config.start_time)
        self._foreground = LAUNCHER
        self._before_recents = LAUNCHER
        self._recents: list[str] = []
        self._keyboard_hidden = False
        self._shifted = False
        self._toast: _Transient | None = None
        self._snack: _Transient | None = None
        self._popup: _Popup | None = None
        self._screen: Screen | None = None
        self._frame: _Frame | None = None
        self._closed = False
        self.inputs = 0
        self.files: dict[str, bytes] = {}
        self.settings: dict[tuple[str, str], str] = {}

    def wait(self, seconds: float) -> None:
        self._clock += dt.timedelta(seconds=seconds)
        self._expire()
        self._changed()

    def close(self) -> None:
        self._closed = True

    # ================================================================== services apps use

    def now(self) -> dt.datetime:
        return self._clock

    def toast(self, text: str) -> None:
        self._toast = _Transient(text, self._clock + dt.timedelta(seconds=3.5))

    def snackbar(self, text: str, action: str | None = None, on_action: Callable[[], None] | None = None) -> None:
        self._snack = _Transient(text, self._clock + dt.timedelta(seconds=6), action, on_action)

    # ================================================================== extras for the sim

    def app(self, package: str) -> SimApp:
        """The installed app object (for tests and task setup on simulated devices)."""
        return self._app(package)

    @property
    def installed(self) -> dict[str, str]:
        """Launcher label -> package of every installed app."""
        return {a.label: a.package for a in self.apps}

    @property
    def keyboard_visible(self) -> bool:
        return self._keyboard_shown(self._current_frame())

    def show_popup(self, kind: str) -> None:
        """Show a system popup now ("permission", "rate" or "loading"), as `popups` does at random."""
        if kind not in _POPUP_KINDS:
            raise ConfigError(f"popup kind {kind!r}; valid: {', '.join(_POPUP_KINDS)}")
        secs = 2.5 if kind == "loading" else 3600.0
        self._popup = _Popup(kind, self._clock + dt.timedelta(seconds=secs), self._foreground)
        self._changed()

    # ================================================================== internals

    def _dp(self, v: float) -> int:
        return round(v * self.density)

    def _app(self, package: str) -> SimApp:
        for a in self.apps:
            if a.package == package:
                return a
        raise AppError(f"package {package!r} is not installed on {self.serial}; installed: {', '.join(a.package for a in self.apps)}")

    def _front_app(self) -> SimApp | None:
        if self._foreground in (LAUNCHER, "recents"):
            return None
        return self._app(self._foreground)

    def _go(self, target: str) -> None:
        self._foreground = target
        self._keyboard_hidden = False
        self._toast = None
        self._snack = None
        if target not in (LAUNCHER, "recents"):
            if target in self._recents:
                self._recents.remove(target)
            self._recents.insert(0, target)

    def _back(self) -> None:
        if self._popup is not None:
            self._popup = None
            return
        if self._foreground == "recents":
            self._go(self._before_recents)
            return
        frame = self._current_frame()
        if self._keyboard_shown(frame):
            self._keyboard_hidden = True
            return
        app = self._front_app()
        if app is None:
            return
        if not app.on_back():
            self._go(LAUNCHER)

    def _input(self) -> None:
        if self._closed:
            raise DeviceError("device is closed", serial=self.serial)
        self.inputs += 1
        self._clock += dt.timedelta(seconds=1)
        self._expire()

    def _blocked(self) -> bool:
        """True while a loading spinner swallows input."""
        if self._popup is not None and self._popup.kind == "loading":
            self._changed()
            return True
        return False

    def _after_input(self, launched: bool = False) -> None:
        if self.config.popups and self._popup is None and self._front_app() is not None:
            if self._rng.random() < self.config.popup_rate * (3 if launched else 1):
                self.show_popup(self._rng.choice(_POPUP_KINDS))
        self._changed()

    def _expire(self) -> None:
        if self._toast is not None and self._clock >= self._toast.until:
            self._toast = None
        if self._snack is not None and self._clock >= self._snack.until:
            self._snack = None
        if self._popup is not None and (self._clock >= self._popup.until or self._popup.package != self._foreground):
            self._popup = None

    def _changed(self) -> None:
        self._frame = None

    def _current_frame(self) -> _Frame:
        if self._frame is None:
            self._frame = self._compose()
        return self._frame

    def _focused_edit(self) -> Node | None:
        app = self._front_app()
        if app is None or app.route.focus is None:
            return None
        return self._current_frame().edits.get(app.route.focus)

    def _keyboard_shown(self, frame: _Frame) -> bool:
        return any(w.package == kb.KEYBOARD_PACKAGE for w in frame.windows)

    # ------------------------------------------------------------------ composition

    def _compose(self) -> _Frame:
        H = self.height
        status_h, nav_h = self._dp(STATUS_DP), self._dp(NAV_DP)
        windows: list[Window] = [self._status_bar(status_h)]
        edits: dict[str, Node] = {}
        app = self._front_app()
        self._screen = None
        keyboard = False
        if app is not None:
            route = app.route
            keyboard = route.focus is not None and not self._keyboard_hidden
            bottom = H - nav_h - (self._dp(KEYBOARD_DP) if keyboard else 0)
            app_windows = self._app_windows(app, status_h, bottom)
            for w in app_windows:
                for n in w.root.walk():
                    if n.edit is not None:
                        edits[n.edit.field_id] = n
            if route.focus is not None and route.focus not in edits:
                route.focus = None  # the field left the screen
                if keyboard:
                    return self._compose()
            windows.extend(app_windows)
        elif self._foreground == "recents":
            windows.append(self._recents_window(status_h, H - nav_h))
        else:
            windows.append(self._launcher_window(status_h, H - nav_h))
        if self._toast is not None:
            windows.append(self._toast_window(H - nav_h - (self._dp(KEYBOARD_DP) if keyboard else 0)))
        if self._popup is not None and app is not None:
            windows.append(self._popup_window(app, status_h, H - nav_h))
        if keyboard:
            windows.append(self._keyboard_window(H - nav_h - self._dp(KEYBOARD_DP), H - nav_h))
        windows.append(self._nav_bar(H - nav_h, H))
        return _Frame(windows, edits=edits)

    def _ctx(self, app: SimApp) -> LayoutCtx:
        return LayoutCtx(app, app.route, self.density, self.width, self.height, Theme.from_hex(app.color), app.package)

    def _app_windows(self, app: SimApp, top: int, bottom: int) -> list[Window]:
        W = self.width
        route = app.route
        ctx = self._ctx(app)
        screen = app.build(ctx)
        self._screen = screen
        bg = hex_rgb(screen.bg) if screen.bg else WHITE
        root = Node("android.widget.FrameLayout", (0, 0, W, self.height),
                    paint=None if bg == WHITE else (lambda c: c.rect((0, top, W, bottom), fill=bg)))
        content = Node("android.widget.LinearLayout", (0, top, W, bottom), rid="android:id/content")
        root.children.append(content)
        y = top
        if screen.toolbar is not None:
            n = screen.toolbar.layout(ctx, 0, y, W)
            content.children.append(n)
            y = n.box[3]
        if screen.tabs is not None:
            n = screen.tabs.layout(ctx, 0, y, W)
            content.children.append(n)
            y = n.box[3]
        body_bottom = bottom
        tail: list[Node] = []
        if screen.bottom_nav is not None:
            h = self._dp(80)
            tail.append(screen.bottom_nav.layout(ctx, 0, body_bottom - h, W))
            body_bottom -= h
        if screen.bottom_bar is not None:
            probe = screen.bottom_bar.layout(ctx, 0, 0, W)
            n = screen.bottom_bar.layout(ctx, 0, body_bottom - probe.height, W)
            tail.append(n)
            body_bottom = n.box[1]
        content.children.append(self._body(ctx, screen.body, y, body_bottom, bg))
        content.children.extend(reversed(tail))
        if screen.fab is not None and not (screen.drawer is not None and route.drawer_open):
            root.children.append(screen.fab.layout(ctx, W - self._dp(16), body_bottom - self._dp(16), 0))
        if self._snack is not None:
            root.children.append(self._snackbar(ctx, body_bottom))
        if screen.drawer is not None and route.drawer_open:
            root.children.extend(self._drawer(ctx, screen.drawer, top, bottom))
        windows = [Window(root, app.package)]
        if route.sheet is not None:
            windows.append(self._sheet_window(ctx, route.sheet(), top, bottom))
        if route.dialog is not None:
            windows.append(self._dialog_window(ctx, route.dialog(), top, bottom))
        if route.popup is not None:
            windows.append(self._popup_menu_window(ctx, top, bottom))
        return windows

    def _body(self, ctx: LayoutCtx, views: Sequence[View], top: int, bottom: int, bg) -> Node:
        W = self.width
        lists = [i for i, v in enumerate(views) if isinstance(v, ListView)]
        if lists:
            i = lists[0]
            node = Node("android.widget.FrameLayout", (0, top, W, bottom), rid="body")
            y = top
            for v in views[:i]:
                n = v.layout(ctx, 0, y, W)
                node.children.append(n)
                y = n.box[3]
            after = [v.layout(ctx, 0, 0, W) for v in views[i + 1 :]]
            after_h = sum(n.height for n in after)
            lv = views[i]
            assert isinstance(lv, ListView)
            node.children.append(lv.layout_in(ctx, 0, y, W, max(0, bottom - after_h - y)))
            y2 = bottom - after_h
            for v in views[i + 1 :]:
                n = v.layout(ctx, 0, y2, W)
                node.children.append(n)
                y2 = n.box[3]
            return node
        key = "_body"
        offset = ctx.scroll_offset(key)
        col = Node("android.widget.LinearLayout", (0, top - offset, W, top - offset))
        y = top - offset
        for v in views:
            n = v.layout(ctx, 0, y, W)
            col.children.append(n)
            y = n.box[3]
        content_h = y - (top - offset)
        max_off = max(0, content_h - (bottom - top))
        clamped = min(max(0, offset), max_off)
        if clamped != offset:
            _shift(col, offset - clamped)
            ctx.route.scroll[key] = clamped
        col.box = (0, top - clamped, W, top - clamped + content_h)
        return Node("android.widget.ScrollView", (0, top, W, bottom), rid="scroll", scrollable=max_off > 0,
                    children=[col], clip_bg=bg, scroll=ScrollBinding(key, clamped, max_off, ctx.scroll_setter(key)))

    def _snackbar(self, ctx: LayoutCtx, bottom: int) -> Node:
        snack = self._snack
        assert snack is not None
        m = self._dp(8)
        h = self._dp(48)
        box = (m, bottom - m - h, self.width - m, bottom - m)
        bar = Node("android.widget.LinearLayout", box, rid="snackbar",
                   paint=lambda c: c.rect(box, fill=(50, 48, 53), radius=self._dp(4)))
        aw = 0
        if snack.action:
            aw = text_width(snack.action.upper(), self._dp(14), "medium") + self._dp(32)
        tb = (box[0] + self._dp(16), box[1], box[2] - aw - self._dp(8), box[3])
        bar.children.append(Node("android.widget.TextView", tb, text=snack.text, rid="snackbar_text",
                                 paint=lambda c: c.text_in(tb, snack.text, self._dp(14), (244, 239, 244))))
        if snack.action:
            ab = (box[2] - aw, box[1], box[2], box[3])
            on_action = snack.on_action

            def act() -> None:
                self._snack = None
                if on_action is not None:
                    on_action()

            col = mix(ctx.theme.primary, WHITE, 0.55)
            bar.children.append(Node("android.widget.Button", ab, text=snack.action.upper(), rid="snackbar_action", clickable=True,
                                     on_click=act, paint=lambda c: c.text_in(ab, snack.action.upper(), self._dp(14), col, "medium", "center")))
        return bar

    def _drawer(self, ctx: LayoutCtx, drawer: Drawer, top: int, bottom: int) -> list[Node]:
        route = ctx.route
        W = self.width
        pw = min(self._dp(300), W - self._dp(56))

        def close() -> None:
            route.drawer_open = False

        scrim = Node("android.view.View", (pw, top, W, bottom), desc="Close navigation drawer", on_click=close,
                     paint=lambda c: c.rect((0, top, W, bottom), fill=None))
        panel_box = (0, top, pw, bottom)
        panel = Node("com.google.android.material.navigation.NavigationView", panel_box, rid="nav_view",
                     paint=lambda c: c.rect(panel_box, fill=SURFACE))
        hb = (self._dp(28), top + self._dp(16), pw - self._dp(16), top + self._dp(72))
        panel.children.append(Node("android.widget.TextView", hb, text=drawer.title, rid="drawer_title",
                                   paint=lambda c: c.text_in(hb, drawer.title, self._dp(20), TEXT, "medium")))
        y = top + self._dp(80)
        for item in drawer.items:
            box = (self._dp(12), y, pw - self._dp(12), y + self._dp(56))

            def click(item=item) -> None:
                route.drawer_open = False
                item.on_click()

            def paint_item(c: Canvas, box=box, item=item) -> None:
                if item.selected:
                    c.rect(box, fill=ctx.theme.container, radius=self._dp(28))
                x0 = box[0] + self._dp(16)
                if item.icon:
                    c.icon(item.icon, x0 + self._dp(12), (box[1] + box[3]) // 2, self._dp(24), TEXT_2)
                    x0 += self._dp(40)
                c.text_in((x0, box[1], box[2] - self._dp(16), box[3]), item.label, self._dp(14), TEXT, "medium")

            panel.children.append(Node("android.widget.CheckedTextView", box, text=item.label, clickable=True, checkable=True,
                                       checked=item.selected, on_click=click, paint=paint_item))
            y += self._dp(56)
        scrim.paint = _scrim_paint(0, top, W, bottom)
        return [scrim, panel]

    def _dialog_window(self, ctx: LayoutCtx, dialog: Dialog, top: int, bottom: int) -> Window:
        route = ctx.route
        W = self.width
        dw = min(W - self._dp(48), self._dp(560))
        x0 = (W - dw) // 2
        pkg = dialog.package or ctx.package
        card = Node("android.widget.LinearLayout", (x0, 0, x0 + dw, 0), rid="parentPanel")
        y = self._dp(24)
        title = Text(dialog.title, "headline", max_lines=3, id="android:id/alertTitle", pad=24, vpad=0).layout(ctx, x0, y, dw)
        card.children.append(title)
        y = title.box[3] + self._dp(16)
        if dialog.message:
            msg = Text(dialog.message, "body2", max_lines=12, id="android:id/message", pad=24, vpad=0).layout(ctx, x0, y, dw)
            card.children.append(msg)
            y = msg.box[3] + self._dp(8)
        for v in dialog.body:
            n = v.layout(ctx, x0 + self._dp(8), y, dw - self._dp(16))
            card.children.append(n)
            y = n.box[3]
        y += self._dp(8)
        bx = x0 + dw - self._dp(16)
        for i, (label, handler) in enumerate(dialog.buttons):
            bw = text_width(label, self._dp(14), "medium") + self._dp(24)
            box = (bx - bw, y, bx, y + self._dp(40))

            def click(handler=handler) -> None:
                current = route.dialog
                route.dialog = None
                handler()
                if route.dialog is current:
                    route.dialog = None

            card.children.append(Node("android.widget.Button", box, text=label, rid=f"android:id/button{i + 1}", clickable=True,
                                      focusable=True, on_click=click,
                                      paint=lambda c, box=box, label=label: c.text_in(box, label, self._dp(14), ctx.theme.primary, "medium", "center")))
            bx -= bw + self._dp(8)
        h = y + self._dp(40) + self._dp(16)
        oy = top + max(self._dp(16), (bottom - top - h) // 2)
        for n in card.children:
            _shift(n, oy)
        box = (x0, oy, x0 + dw, oy + h)
        card.box = box
        card.paint = lambda c: c.rect(box, fill=SURFACE, radius=self._dp(28))
        root = Node("android.widget.FrameLayout", box, children=[card])
        root.paint = _scrim_paint(0, 0, W, self.height)

        def outside() -> None:
            if dialog.cancelable:
                route.dialog = None
                if dialog.on_cancel is not None:
                    dialog.on_cancel()

        return Window(root, pkg, modal=True, on_outside=outside)

    def _sheet_window(self, ctx: LayoutCtx, sheet: BottomSheet, top: int, bottom: int) -> Window:
        route = ctx.route
        W = self.width
        ih = self._dp(56)
        h = len(sheet.items) * ih + self._dp(32) + (self._dp(48) if sheet.title else 0)
        box = (0, bottom - h, W, bottom)
        root = Node("android.widget.FrameLayout", box, rid="design_bottom_sheet")
        y = box[1] + self._dp(24)
        if sheet.title:
            root.children.append(Text(sheet.title, "subtitle", id="sheet_title").layout(ctx, 0, y, W))
            y += self._dp(48)
        for item in sheet.items:
            ib = (0, y, W, y + ih)

            def click(item=item) -> None:
                route.sheet = None
                if item.on_click is not None:
                    item.on_click()

            def paint_item(c: Canvas, ib=ib, item=item) -> None:
                x = self._dp(24)
                if item.icon:
                    c.icon(item.icon, x + self._dp(12), (ib[1] + ib[3]) // 2, self._dp(24), TEXT_2)
                    x += self._dp(48)
                c.text_in((x, ib[1], ib[2] - self._dp(48), ib[3]), item.label, self._dp(16), TEXT if item.enabled else TEXT_2)
                if item.checked:
                    c.icon("check", ib[2] - self._dp(32), (ib[1] + ib[3]) // 2, self._dp(22), ctx.theme.primary)

            root.children.append(Node("android.widget.LinearLayout", ib, desc=item.label, clickable=True, enabled=item.enabled,
                                      checked=item.checked,
                                      on_click=click if item.enabled else None, paint=paint_item,
                                      children=[Node("android.widget.TextView", ib, text=item.label)]))
            y += ih

        def paint_sheet(c: Canvas) -> None:
            _scrim_paint(0, 0, W, self.height)(c)
            c.rect((0, box[1], W, box[3] + self._dp(28)), fill=SURFACE, radius=self._dp(28))
            c.rect((W // 2 - self._dp(16), box[1] + self._dp(10), W // 2 + self._dp(16), box[1] + self._dp(14)), fill=DIVIDER, radius=self._dp(2))

        root.paint = paint_sheet

        def outside() -> None:
            route.sheet = None

        return Window(root, ctx.package, modal=True, on_outside=outside)

    def _popup_menu_window(self, ctx: LayoutCtx, top: int, bottom: int) -> Window:
        route = ctx.route
        popup = route.popup
        assert popup is not None
        ih = self._dp(48)
        w = max(self._dp(180), max((text_width(i.label, self._dp(16)) for i in popup.items), default=0) + self._dp(56))
        w = min(w, self.width - self._dp(16))
        l, t, r, b = popup.anchor
        if popup.align == "right":
            x0 = max(self._dp(8), r - w)
        else:
            x0 = l
            w = max(w, r - l)
        h = len(popup.items) * ih + self._dp(16)
        y0 = t if popup.align == "right" else b
        if y0 + h > bottom:
            y0 = max(top, bottom - h)
        box = (x0, y0, x0 + w, y0 + h)

        def paint_box(c: Canvas) -> None:
            c.rect((box[0] + 2, box[1] + 3, box[2] + 2, box[3] + 3), fill=DIVIDER, radius=self._dp(4))
            c.rect(box, fill=SURFACE_2, radius=self._dp(4))

        lst = Node("android.widget.ListView", box, paint=paint_box)
        y = y0 + self._dp(8)
        for item in popup.items:
            ib = (x0, y, x0 + w, y + ih)

            def click(item=item) -> None:
                route.popup = None
                if item.on_click is not None:
                    item.on_click()

            def paint_item(c: Canvas, ib=ib, item=item) -> None:
                c.text_in(ib, item.label, self._dp(16), TEXT if item.enabled else TEXT_2, pad=self._dp(16))
                if item.checked:
                    c.icon("check", ib[2] - self._dp(24), (ib[1] + ib[3]) // 2, self._dp(20), ctx.theme.primary)

            lst.children.append(Node("android.widget.LinearLayout", ib, clickable=True, enabled=item.enabled, checked=item.checked,
                                     on_click=click if item.enabled else None, paint=paint_item,
                                     children=[Node("android.widget.TextView", ib, text=item.label, rid="android:id/title")]))
            y += ih

        def outside() -> None:
            route.popup = None

        return Window(Node("android.widget.FrameLayout", box, children=[lst]), ctx.package, modal=True, on_outside=outside)

    def _popup_window(self, app: SimApp, top: int, bottom: int) -> Window:
        popup = self._popup
        assert popup is not None
        W = self.width
        ctx = self._ctx(app)
        if popup.kind == "loading":
            box = (0, top, W, bottom)
            root = Node("android.widget.FrameLayout", box, paint=lambda c: c.rect(box, fill=WHITE))
            root.children.append(ProgressBar("Loading").layout(ctx, 0, (top + bottom) // 2 - self._dp(48), W))
            root.children.append(Text("Loading…", "body2", align="center").layout(ctx, 0, (top + bottom) // 2 + self._dp(48), W))
            return Window(root, app.package, modal=True)

        def close() -> None:
            self._popup = None

        if popup.kind == "permission":
            dialog = Dialog(
                title=f"Allow {app.label} to send you notifications?",
                buttons=[("Allow", close), ("Don't allow", close)],
                cancelable=False,
                package=PERMISSION,
            )
        else:
            dialog = Dialog(
                title=f"Enjoying {app.label}?",
                message="Tap a star to rate it on the Play Store.",
                buttons=[("Rate now", close), ("Not now", close)],
                cancelable=True,
            )
        tmp = Route("popup")
        tmp.dialog = lambda: dialog
        pctx = LayoutCtx(app, tmp, self.density, W, self.height, ctx.theme, ctx.package)
        win = self._dialog_window(pctx, dialog, top, bottom)
        inner_outside = win.on_outside

        def outside() -> None:
            if dialog.cancelable:
                self._popup = None
            if inner_outside is not None:
                inner_outside()

        win.on_outside = outside
        # Buttons call `close` through the route's dialog handler wrapper; keep that wrapper's
        # route private so app routes are untouched.
        return win

    def _toast_window(self, bottom: int) -> Window:
        toast = self._toast
        assert toast is not None
        tw = min(self.width - self._dp(48), text_width(toast.text, self._dp(14)) + self._dp(32))
        x0 = (self.width - tw) // 2
        box = (x0, bottom - self._dp(96), x0 + tw, bottom - self._dp(56))
        node = Node("android.widget.TextView", box, text=toast.text, rid="android:id/message",
                    paint=lambda c: (c.rect(box, fill=(60, 60, 64), radius=self._dp(20)),
                                     c.text_in(box, toast.text, self._dp(14), WHITE, "regular", "center")))
        return Window(Node("android.widget.LinearLayout", box, children=[node]), "android", touchable=False)

    def _keyboard_window(self, top: int, bottom: int) -> Window:
        W = self.width
        h = bottom - top
        density = self.density
        shifted = self._shifted

        def paint_kb(c: Canvas) -> None:
            c.image.paste(kb.keyboard_image(W, h, density, shifted), (0 - c.ox, top - c.oy))

        def tap_at(x: int, y: int) -> None:
            k = kb.key_at(W, h, density, x, y - top)
            if k is None:
                return
            if k.value == "shift":
                self._shifted = not self._shifted
            elif k.value == "delete":
                self.key_unlocked("delete")
            elif k.value == "enter":
                self.key_unlocked("enter")
            elif k.value == "symbols":
                return
            else:
                ch = k.value.upper() if self._shifted else k.value
                self._shifted = False
                node = self._focused_edit()
                if node is not None and node.edit is not None:
                    node.edit.on_change(node.edit.value + ch)

        root = Node("android.widget.FrameLayout", (0, top, W, bottom), paint=paint_kb, on_tap_at=tap_at)
        return Window(root, kb.KEYBOARD_PACKAGE)

    def key_unlocked(self, name: str) -> None:
        """Apply delete/enter to the focused field without counting a new input (keyboard keys)."""
        node = self._focused_edit()
        if node is None or node.edit is None:
            return
        if name == "delete":
            node.edit.on_change(node.edit.value[:-1])
        elif node.edit.multiline:
            node.edit.on_change(node.edit.value + "\n")
        elif node.edit.on_submit is not None:
            node.edit.on_submit()

    def _status_bar(self, h: int) -> Window:
        W = self.width
        time_text = self._clock.strftime("%H:%M")
        box = (0, 0, W, h)
        dark = self._foreground in (LAUNCHER, "recents")
        app = self._front_app()
        bg = mix(hex_rgb(app.color), (0, 0, 0), 0.15) if app is not None else None

        def paint_bar(c: Canvas) -> None:
            if bg is not None:
                c.rect(box, fill=bg)
            col = WHITE if (bg is not None and sum(bg) < 450) or dark else TEXT
            c.text_in((self._dp(16), 0, self._dp(80), h), time_text, self._dp(14), col, "medium")
            x = W - self._dp(16)
            for icon in ("battery", "signal", "wifi"):
                c.icon(icon, x - self._dp(8), h // 2, self._dp(16), col)
                x -= self._dp(22)

        clock = Node("android.widget.TextView", (self._dp(16), 0, self._dp(64), h), text=time_text, desc=time_text, rid="com.android.systemui:id/clock")
        root = Node("android.widget.FrameLayout", box, rid="com.android.systemui:id/status_bar", paint=paint_bar, children=[clock])
        return Window(root, SYSTEMUI)

    def _nav_bar(self, top: int, bottom: int) -> Window:
        W = self.width
        box = (0, top, W, bottom)
        root = Node("android.widget.FrameLayout", box, rid="com.android.systemui:id/navigation_bar_frame",
                    paint=lambda c: c.rect(box, fill=(20, 20, 22) if self._foreground == LAUNCHER else (245, 243, 247)))
        col = WHITE if self._foreground == LAUNCHER else TEXT_2
        third = W // 3
        for i, (key, icon, desc) in enumerate((("back", "nav_back", "Back"), ("home", "nav_home", "Home"), ("recents", "nav_recents", "Overview"))):
            b = (i * third, top, (i + 1) * third, bottom)
            root.children.append(Node("android.widget.ImageView", b, desc=desc, rid=f"com.android.systemui:id/{key}", clickable=True,
                                      on_click=lambda key=key: self._nav_key(key),
                                      paint=lambda c, b=b, icon=icon: c.icon(icon, (b[0] + b[2]) // 2, (b[1] + b[3]) // 2, self._dp(20), col)))
        return Window(root, SYSTEMUI)

    def _nav_key(self, name: str) -> None:
        # A tap already counted as an input; apply the key without counting another.
        if name == "home":
            self._popup = None
            self._go(LAUNCHER)
        elif name == "recents":
            if self._foreground != "recents":
                self._before_recents = self._foreground
                self._go("recents")
        else:
            self._back()

    def _launcher_window(self, top: int, bottom: int) -> Window:
        W = self.width
        box = (0, 0, W, self.height)
        wall_top, wall_bottom = (38, 50, 86), (92, 76, 128)
        root = Node("android.widget.FrameLayout", box, package=LAUNCHER, paint=lambda c: _paint_wallpaper(c, W, self.height, wall_top, wall_bottom))
        date_text = self._clock.strftime("%A, %b %-d")
        db = (self._dp(24), top + self._dp(24), W - self._dp(24), top + self._dp(64))
        root.children.append(Node("android.widget.TextView", db, text=date_text, rid="date",
                                  paint=lambda c: c.text_in(db, date_text, self._dp(22), WHITE)))
        cols = 4
        cw = W // cols
        ch = self._dp(104)
        y0 = top + self._dp(96)
        grid = Node("android.view.ViewGroup", (0, y0, W, bottom), rid="workspace")
        for i, app in enumerate(self.apps):
            r, c_ = divmod(i, cols)
            b = (c_ * cw, y0 + r * ch, (c_ + 1) * cw, y0 + (r + 1) * ch)
            color = hex_rgb(app.color)
            theme = Theme.from_hex(app.color)

            def paint_icon(c: Canvas, b=b, app=app, color=color, theme=theme) -> None:
                cx = (b[0] + b[2]) // 2
                c.circle(cx, b[1] + self._dp(36), self._dp(28), fill=color)
                c.icon(app.icon, cx, b[1] + self._dp(36), self._dp(30), theme.on_primary)
                c.text_in((b[0] + 2, b[1] + self._dp(70), b[2] - 2, b[1] + self._dp(96)), app.label, self._dp(13), WHITE, "regular", "center")

            grid.children.append(Node("android.widget.TextView", b, text=app.label, desc=app.label, clickable=True, long_clickable=True,
                                      on_click=lambda p=app.package: self._open_from_launcher(p), paint=paint_icon))
        root.children.append(grid)
        return Window(root, LAUNCHER)

    def _open_from_launcher(self, package: str) -> None:
        self._go(package)
        self._app(package).on_launch()

    def _recents_window(self, top: int, bottom: int) -> Window:
        W = self.width
        box = (0, 0, W, self.height)
        root = Node("android.widget.FrameLayout", box, paint=lambda c: c.rect(box, fill=(60, 60, 66)))
        y = top + self._dp(24)
        if not self._recents:
            eb = (0, (top + bottom) // 2 - self._dp(24), W, (top + bottom) // 2 + self._dp(24))
            root.children.append(Node("android.widget.TextView", eb, text="No recent items",
                                      paint=lambda c: c.text_in(eb, "No recent items", self._dp(16), WHITE, "regular", "center")))
        for pkg in self._recents[:6]:
            app = self._app(pkg)
            b = (self._dp(32), y, W - self._dp(32), y + self._dp(120))
            color = hex_rgb(app.color)

            def paint_card(c: Canvas, b=b, app=app, color=color) -> None:
                c.rect(b, fill=WHITE, radius=self._dp(16))
                c.rect((b[0], b[1], b[2], b[1] + self._dp(40)), fill=color, radius=self._dp(16))
                c.text_in((b[0] + self._dp(16), b[1], b[2], b[1] + self._dp(40)), app.label, self._dp(16), Theme.from_hex(app.color).on_primary, "medium")

            root.children.append(Node("android.widget.FrameLayout", b, desc=app.label, clickable=True, rid="snapshot",
                                      on_click=lambda p=pkg: self._go(p), paint=paint_card))
            y += self._dp(136)
        if self._recents:
            cb = (W // 2 - self._dp(64), bottom - self._dp(64), W // 2 + self._dp(64), bottom - self._dp(24))

            def clear_all() -> None:
                self._recents.clear()
                self._go(LAUNCHER)

            root.children.append(Node("android.widget.Button", cb, text="Clear all", rid="clear_all", clickable=True, on_click=clear_all,
                                      paint=lambda c: (c.rect(cb, fill=(90, 90, 96), radius=self._dp(20)),
                                                       c.text_in(cb, "Clear all", self._dp(14), WHITE, "medium", "center"))))
        return Window(root, LAUNCHER)

    # ------------------------------------------------------------------ rendering

    def _render(self, frame: _Frame) -> Image.Image:
        canvas = Canvas(self.width, self.height, self.density, WHITE)
        for win in frame.windows:
            paint(win.root, canvas)
        return canvas.image


_POPUP_KINDS = ("permission", "rate", "loading")


@dataclass(eq=False)
class _Popup:
    kind: str
    until: dt.datetime
    package: str


def _scrim_paint(l: int, t: int, r: int, b: int) -> Callable[[Canvas], None]:
    def paint_scrim(c: Canvas) -> None:
        region = (l - c.ox, t - c.oy, r - c.ox, b - c.oy)
        part = c.image.crop(region)
        c.image.paste(Image.blend(part, Image.new("RGB", part.size, SCRIM), 0.5), region[:2])

    return paint_scrim


def _paint_wallpaper(c: Canvas, w: int, h: int, top, bottom) -> None:
    band = max(1, h // 16)
    for i in range(16):
        c.rect((0, i * band, w, (i + 1) * band if i < 15 else h), fill=mix(top, bottom, i / 15))


__all__ = ["SimConfig", "SimDevice", "LAUNCHER", "SYSTEMUI", "PERMISSION", "find_app"]
