"""Every action an agent can take, as frozen dataclasses with AndroidWorld-compatible JSON.

This is the single place actions are defined. Each class validates itself on construction and
raises ActionError naming the bad field. Coordinates are physical screen pixels; an element
`index` refers to `Observation.elements` of the observation the agent saw.

JSON follows AndroidWorld's `JSONAction` keys (`action_type`, `index`, `x`, `y`, `text`,
`direction`, `app_name`, `goal_status`), so trajectories are readable by tools built for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal, Union

from .errors import ActionError

Direction = Literal["up", "down", "left", "right"]
DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")


def _check_index(index: object) -> None:
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        raise ActionError(f"index must be a non-negative integer, got {index!r}")


def _check_point(x: object, y: object) -> None:
    for name, v in (("x", x), ("y", y)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ActionError(f"{name} must be a non-negative integer pixel, got {v!r}")
    if (x is None) != (y is None):
        raise ActionError(f"x and y go together, got x={x!r} y={y!r}")


def _check_target(index: int | None, x: int | None, y: int | None, *, required: bool) -> None:
    _check_index(index)
    _check_point(x, y)
    if index is not None and x is not None:
        raise ActionError("give an element index or x,y, not both")
    if required and index is None and x is None:
        raise ActionError("needs a target: an element index or x,y")


def _check_direction(direction: object) -> None:
    if direction not in DIRECTIONS:
        raise ActionError(f"direction must be one of {', '.join(DIRECTIONS)}; got {direction!r}")


@dataclass(frozen=True)
class Tap:
    """Tap an element (by index) or a point (x, y in pixels)."""

    index: int | None = None
    x: int | None = None
    y: int | None = None
    action_type: ClassVar[str] = "click"

    def __post_init__(self) -> None:
        _check_target(self.index, self.x, self.y, required=True)


@dataclass(frozen=True)
class LongPress:
    """Press and hold an element (by index) or a point (x, y in pixels)."""

    index: int | None = None
    x: int | None = None
    y: int | None = None
    action_type: ClassVar[str] = "long_press"

    def __post_init__(self) -> None:
        _check_target(self.index, self.x, self.y, required=True)


@dataclass(frozen=True)
class Scroll:
    """Scroll to reveal content in `direction` ("down" shows what is below; the finger moves up).

    Scrolls the element `index` when given, else the screen's main scrollable area.
    """

    direction: Direction
    index: int | None = None
    action_type: ClassVar[str] = "scroll"

    def __post_init__(self) -> None:
        _check_direction(self.direction)
        _check_index(self.index)


@dataclass(frozen=True)
class Swipe:
    """Move a finger in `direction`, starting on element `index`, at (x, y), or mid-screen."""

    direction: Direction
    index: int | None = None
    x: int | None = None
    y: int | None = None
    action_type: ClassVar[str] = "swipe"

    def __post_init__(self) -> None:
        _check_direction(self.direction)
        _check_target(self.index, self.x, self.y, required=False)


@dataclass(frozen=True)
class Type:
    """Type `text` into element `index` (tapped first to focus it) or the focused field.

    With `clear`, the field's current text is deleted first.
    """

    text: str
    index: int | None = None
    clear: bool = False
    action_type: ClassVar[str] = "input_text"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise ActionError(f"text must be a non-empty string, got {self.text!r}")
        _check_index(self.index)
        if not isinstance(self.clear, bool):
            raise ActionError(f"clear must be true or false, got {self.clear!r}")


@dataclass(frozen=True)
class Back:
    """Press the system back button."""

    action_type: ClassVar[str] = "navigate_back"


@dataclass(frozen=True)
class Home:
    """Press the system home button."""

    action_type: ClassVar[str] = "navigate_home"


@dataclass(frozen=True)
class Enter:
    """Press the keyboard's enter key."""

    action_type: ClassVar[str] = "keyboard_enter"


@dataclass(frozen=True)
class OpenApp:
    """Open an app by its launcher label ("Notes") or package ("com.example.notes")."""

    app_name: str
    action_type: ClassVar[str] = "open_app"

    def __post_init__(self) -> None:
        if not isinstance(self.app_name, str) or not self.app_name.strip():
            raise ActionError(f"app_name must be a non-empty string, got {self.app_name!r}")


@dataclass(frozen=True)
class Wait:
    """Do nothing for `seconds` and look again (for loading screens)."""

    seconds: float = 1.0
    action_type: ClassVar[str] = "wait"

    def __post_init__(self) -> None:
        if not isinstance(self.seconds, (int, float)) or not 0 < self.seconds <= 60:
            raise ActionError(f"seconds must be in (0, 60], got {self.seconds!r}")


@dataclass(frozen=True)
class Done:
    """Declare the goal achieved, with an `answer` for information-retrieval goals."""

    answer: str | None = None
    action_type: ClassVar[str] = "status"

    def __post_init__(self) -> None:
        if self.answer is not None and not isinstance(self.answer, str):
            raise ActionError(f"answer must be a string or absent, got {self.answer!r}")


@dataclass(frozen=True)
class Infeasible:
    """Declare the goal impossible in this app."""

    reason: str | None = None
    action_type: ClassVar[str] = "status"


@dataclass(frozen=True)
class Invalid:
    """Model output that parsed to no action. It costs a step and touches nothing."""

    raw: str
    reason: str = "unparseable"
    action_type: ClassVar[str] = "unknown"


Action = Union[Tap, LongPress, Scroll, Swipe, Type, Back, Home, Enter, OpenApp, Wait, Done, Infeasible, Invalid]
ACTION_CLASSES: tuple[type, ...] = (
    Tap, LongPress, Scroll, Swipe, Type, Back, Home, Enter, OpenApp, Wait, Done, Infeasible, Invalid
)
TERMINAL_ACTIONS: tuple[type, ...] = (Done, Infeasible)

_BY_TYPE: dict[str, type] = {
    c.action_type: c for c in ACTION_CLASSES if c.action_type not in ("status",)
}


def to_dict(action: Action) -> dict[str, Any]:
    """AndroidWorld-style JSON dict; fields at their default are left out."""
    if isinstance(action, Done):
        d: dict[str, Any] = {"action_type": "status", "goal_status": "complete"}
        if action.answer is not None:
            d["text"] = action.answer
        return d
    if isinstance(action, Infeasible):
        d = {"action_type": "status", "goal_status": "infeasible"}
        if action.reason is not None:
            d["text"] = action.reason
        return d
    if isinstance(action, Invalid):
        return {"action_type": "unknown", "text": action.raw, "reason": action.reason}
    d = {"action_type": action.action_type}
    for f in fields(action):
        value = getattr(action, f.name)
        if value != f.default:
            d[f.name] = value
    return d


def to_json(action: Action) -> str:
    """`to_dict` as a compact JSON string."""
    return json.dumps(to_dict(action), ensure_ascii=False, separators=(",", ":"))


def from_dict(d: dict[str, Any]) -> Action:
    """Build an action from an AndroidWorld-style dict; raises ActionError naming the problem."""
    if not isinstance(d, dict):
        raise ActionError(f"an action is a JSON object, got {type(d).__name__}")
    kind = d.get("action_type")
    if not isinstance(kind, str):
        raise ActionError(f"missing or non-string 'action_type' in {d!r}")
    rest = {k: v for k, v in d.items() if k != "action_type" and v is not None}
    if kind == "status":
        status = rest.get("goal_status")
        if status == "complete":
            return Done(answer=rest.get("text"))
        if status == "infeasible":
            return Infeasible(reason=rest.get("text"))
        raise ActionError(f"goal_status must be 'complete' or 'infeasible', got {status!r}")
    if kind == "answer":
        return Done(answer=rest.get("text"))
    if kind == "unknown":
        return Invalid(raw=str(rest.get("text", "")), reason=str(rest.get("reason", "unparseable")))
    cls = _BY_TYPE.get(kind)
    if cls is None:
        valid = sorted([*_BY_TYPE, "status", "answer"])
        raise ActionError(f"unknown action_type {kind!r}; valid: {', '.join(valid)}")
    names = {f.name for f in fields(cls)}
    unknown = set(rest) - names
    if unknown:
        raise ActionError(f"{kind} takes {sorted(names) or 'no fields'}; unexpected {sorted(unknown)}")
    try:
        return cls(**rest)
    except TypeError as e:
        raise ActionError(f"{kind}: {e}") from e


def from_json(text: str) -> Action:
    """Parse a JSON string made by `to_json` (or AndroidWorld); raises ActionError."""
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ActionError(f"not valid JSON: {e.msg} at position {e.pos}") from e
    return from_dict(d)


def describe(action: Action) -> str:
    """A short function-call form for logs and prompts, e.g. `tap(3)` or `type("milk", 2)`."""
    match action:
        case Tap(index=i, x=x, y=y) | LongPress(index=i, x=x, y=y):
            name = "tap" if isinstance(action, Tap) else "long_press"
            return f"{name}({i})" if i is not None else f"{name}({x}, {y})"
        case Scroll(direction=dr, index=i):
            return f"scroll({dr})" if i is None else f"scroll({dr}, {i})"
        case Swipe(direction=dr, index=i, x=x, y=y):
            if i is not None:
                return f"swipe({dr}, {i})"
            return f"swipe({dr})" if x is None else f"swipe({dr}, {x}, {y})"
        case Type(text=t, index=i, clear=c):
            args = [json.dumps(t, ensure_ascii=False)]
            if i is not None:
                args.append(str(i))
            if c:
                args.append("clear=true")
            return f"type({', '.join(args)})"
        case Back():
            return "back()"
        case Home():
            return "home()"
        case Enter():
            return "enter()"
        case OpenApp(app_name=a):
            return f"open_app({json.dumps(a, ensure_ascii=False)})"
        case Wait(seconds=s):
            return "wait()" if s == 1.0 else f"wait({s:g})"
        case Done(answer=a):
            return "done()" if a is None else f"done({json.dumps(a, ensure_ascii=False)})"
        case Infeasible():
            return "infeasible()"
        case Invalid(raw=r):
            return f"invalid({json.dumps(r[:60], ensure_ascii=False)})"
    raise ActionError(f"not an action: {action!r}")
