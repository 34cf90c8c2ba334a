"""The base of every simulated app: state, a back stack of routes, and overlay helpers.

An app is a plain class: it owns its state (dataclasses), builds a `Screen` from that state on
every frame, and changes the state in event handlers. The system (SimDevice) does the rest:
layout, drawing, the uiautomator dump, touch dispatch, focus, keyboard and scrolling.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol, Sequence

from ..errors import AppError

if TYPE_CHECKING:
    from .widgets import BottomSheet, Dialog, MenuItem, Screen


class System(Protocol):
    """What an app may ask of the phone it runs on."""

    def now(self) -> dt.datetime: ...

    def toast(self, text: str) -> None: ...

    def snackbar(self, text: str, action: str | None = None, on_action: Callable[[], None] | None = None) -> None: ...


@dataclass(eq=False)
class Popup:
    """An open dropdown or overflow menu, anchored at a pixel box."""

    items: Sequence["MenuItem"]
    anchor: tuple[int, int, int, int]
    align: str = "right"


@dataclass(eq=False)
class Route:
    """One entry of an app's back stack: a screen name, its parameters and its view state."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    scroll: dict[str, int] = field(default_factory=dict)
    focus: str | None = None
    dialog: Callable[[], "Dialog"] | None = None
    sheet: Callable[[], "BottomSheet"] | None = None
    popup: Popup | None = None
    drawer_open: bool = False

    def has_overlay(self) -> bool:
        return self.dialog is not None or self.sheet is not None or self.popup is not None or self.drawer_open

    def close_overlay(self) -> bool:
        """Close the topmost overlay; False when none was open."""
        if self.popup is not None:
            self.popup = None
        elif self.dialog is not None:
            self.dialog = None
        elif self.sheet is not None:
            self.sheet = None
        elif self.drawer_open:
            self.drawer_open = False
        else:
            return False
        return True


class SimApp:
    """Base class of simulated apps. Subclasses set the class attributes and implement
    `reset_state`, `build`, `state_dict` and `load_state`."""

    package: ClassVar[str]
    label: ClassVar[str]
    icon: ClassVar[str] = "note"
    color: ClassVar[str] = "#6750A4"

    def __init__(self) -> None:
        self.system: System | None = None
        self.stack: list[Route] = [Route("main")]
        self.reset_state()

    # ------------------------------------------------------------------ lifecycle

    def reset(self) -> None:
        """Back to a fresh install: default state, first screen."""
        self.stack = [Route("main")]
        self.reset_state()

    def reset_state(self) -> None:
        raise NotImplementedError

    def build(self, ctx: Any) -> "Screen":
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """The app's data as JSON-able values (what tasks check, like an app database)."""
        raise NotImplementedError

    def load_state(self, data: dict[str, Any]) -> None:
        """Replace the app's data with `data` (the shape `state_dict` returns)."""
        raise NotImplementedError

    def on_launch(self) -> None:
        """Called when the app is brought to the foreground by the launcher or `am start`."""

    # ------------------------------------------------------------------ navigation

    @property
    def route(self) -> Route:
        return self.stack[-1]

    def push(self, name: str, **params: Any) -> None:
        self.stack.append(Route(name, dict(params)))

    def pop(self) -> bool:
        """Leave the current screen; False at the first screen."""
        if len(self.stack) > 1:
            self.stack.pop()
            return True
        return False

    def replace(self, name: str, **params: Any) -> None:
        self.stack[-1] = Route(name, dict(params))

    def home_screen(self) -> None:
        """Drop the back stack to the first screen."""
        del self.stack[1:]
        self.stack[0] = Route(self.stack[0].name, self.stack[0].params)

    def on_back(self) -> bool:
        """The back key: close an overlay, else leave the screen. False means "leave the app"."""
        if self.route.close_overlay():
            return True
        return self.pop()

    # ------------------------------------------------------------------ overlays

    def dialog(self, builder: Callable[[], "Dialog"]) -> None:
        """Show a dialog built by `builder` (called every frame, so it reflects live state)."""
        self.route.dialog = builder

    def sheet(self, builder: Callable[[], "BottomSheet"]) -> None:
        self.route.sheet = builder

    def menu(self, items: Sequence["MenuItem"], anchor: tuple[int, int, int, int], align: str = "right") -> None:
        self.route.popup = Popup(items, anchor, align)

    def close_overlays(self) -> None:
        r = self.route
        r.dialog = r.sheet = r.popup = None
        r.drawer_open = False

    def focus(self, field_id: str | None) -> None:
        self.route.focus = field_id

    def toast(self, text: str) -> None:
        if self.system is not None:
            self.system.toast(text)

    def snackbar(self, text: str, action: str | None = None, on_action: Callable[[], None] | None = None) -> None:
        if self.system is not None:
            self.system.snackbar(text, action, on_action)

    def now(self) -> dt.datetime:
        if self.system is None:
            return dt.datetime(2026, 10, 15, 9, 0)
        return self.system.now()


def find_app(apps: Sequence[SimApp], name: str) -> SimApp:
    """The installed app with this package or launcher label; AppError listing them if none."""
    for a in apps:
        if name == a.package or name.lower() == a.label.lower():
            return a
    known = ", ".join(f"{a.label} ({a.package})" for a in apps)
    raise AppError(f"no app {name!r} is installed; installed: {known}")
