"""Model output -> Action: a forgiving parser for JSON, function-call, text and UI-TARS formats.

`parse_action(text, obs)` reads one action out of whatever a model wrote and never raises:
anything it cannot read or resolve on the screen the model saw becomes `Invalid(raw, reason)`.
`format_action(action, obs)` writes the canonical string a model is trained to emit; parsing it
against the same observation gives the same action back.

Accepted formats (verbs are case-insensitive; prose, "Action:" prefixes, code fences and
trailing junk around the action are ignored; the first action found wins):

* AndroidWorld JSON: `{"action_type": "click", "index": 3}` (see `actions.from_dict`); unknown
  keys are dropped, integral floats are accepted as integers.
* Function calls: `tap(5)`, `tap(120, 540)` (screen pixels), `tap("Save")`, `long_press(4)`,
  `type("milk", 2)`, `type("milk", "Title", clear=true)`, `scroll(down)`, `scroll(down, 3)`,
  `swipe(left, 3)`, `swipe(left, 120, 540)`, `back()`, `home()`, `enter()`, `open_app("Notes")`,
  `wait()`, `wait(2)`, `done()`, `done("42")`, `infeasible()`, `infeasible("why")`.
  This covers every string `actions.describe` writes.
* Text style (the tiny model's format): `tap "Save"`, `long_press "Note A"`,
  `type "milk" into "Title"`, `type "milk"`, `scroll down`, `scroll down "Notes"`,
  `swipe left "Note A"`, `open_app "Notes"`, `back`, `done "42"`. Numbers stand for an element
  index (`tap 3`) or, two in a row, a screen pixel (`tap 120 540`).
* UI-TARS: `click(start_box='(x,y)')`, `long_press(start_box=...)`, `type(content='...')`,
  `scroll(start_box='(x,y)', direction='down')`, `drag(start_box=..., end_box=...)`,
  `press_back()`, `press_home()`, `press_enter()`, `open_app(app_name='...')`, `wait()`,
  `finished(content='...')`. A box may be `(x,y)`, `(x1,y1,x2,y2)` (its centre is used),
  `<|box_start|>(x,y)<|box_end|>`, `[x, y]` or `<point>x y</point>`.

Coordinates. Plain numbers and JSON `x`/`y` are physical screen pixels. UI-TARS box
coordinates are in the model's frame and are scaled to the screen: with `image_size=(w, h)` they
are pixels of the (resized) image the model saw (Qwen2.5-VL / UI-TARS-1.5 convention); without
it they are relative, 0-1000 on each axis (Qwen2-VL / UI-TARS convention). A point on the
screen's far edge is clamped inside it; a point beyond it is invalid.

Element names. A quoted name (`tap "Save"`) is resolved against `obs.elements`, matching an
element's text, content description or hint: exact match first, then case-insensitive, then a
unique case-insensitive substring. Among several equal matches the one the action can use is
preferred (clickable for taps, editable for typing, scrollable for scrolls), then the first in
document order.

Text. Every string an action carries is valid Unicode: a lone surrogate (half a UTF-16 pair, which
JSON escapes such as `"\\ud83d"` and Python escapes can spell) is replaced with U+FFFD, the way a
UTF-8 decoder treats a broken sequence; a split pair is joined. The action stays usable (a typed
answer keeps its other characters) and can be logged, stored, and sent over ADB.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
import warnings
from dataclasses import dataclass, fields, replace
from typing import Callable, Literal

from coadapt.android_env.actions import (
    Action, Back, Done, Enter, Home, Infeasible, Invalid, LongPress, OpenApp, Scroll, Swipe, Tap, Type, Wait,
    describe, from_dict, to_json,
)
from coadapt.android_env.errors import ActionError
from coadapt.android_env.observation import Observation
from coadapt.android_env.uitree import UiElement

from .elements import editable, element_at, element_names, looks_like_point, resolve_element, scrollable, tappable
from .lexer import (
    CALL_RE, INT_RE, LINE_VERB_RE, NUMBER_RE, QUOTED_VERB_RE, VERBS, Call, LexError, Token, read_call_args,
    read_text_args,
)

log = logging.getLogger(__name__)

FormatStyle = Literal["text", "call", "json"]
FORMAT_STYLES: tuple[str, ...] = ("text", "call", "json")
MAX_INPUT_CHARS = 20_000
"""Longer model outputs are cut to this many characters before parsing."""
_MAX_CANDIDATES = 50  # places tried per text: keeps junk full of "tap(" from costing quadratic time
_DIRECTIONS = ("up", "down", "left", "right")
_FILLERS = frozenset({"into", "in", "on", "at", "to", "the", "field", "element"})
_TRUE = frozenset({"true", "yes", "1"})

_FENCE_RE = re.compile(r"```[ \t]*[\w-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_ACTION_MARK_RE = re.compile(r"\baction[ \t]*:", re.IGNORECASE)


# --------------------------------------------------------------------------- finding the action


def _focus(text: str) -> str:
    """The part of the output that holds the action: a code fence's body, text after "Action:"."""
    m = _FENCE_RE.search(text)
    if m and m.group(1).strip():
        text = m.group(1)
    m = _ACTION_MARK_RE.search(text)
    if m:
        text = text[m.end() :]
    return text.strip()


def _json_candidates(text: str) -> list[tuple[int, dict]]:
    out = []
    starts = [m.start() for m in re.finditer(r"\{", text)][:20]
    decoder = json.JSONDecoder()
    for start in starts:
        obj = None
        try:
            obj, _ = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            chunk = _balanced(text, start)
            if chunk is not None and len(chunk) <= 4000:
                try:
                    # Model text such as '\\d' is an invalid escape to Python's compiler, which
                    # warns on stderr (SyntaxWarning from 3.12, DeprecationWarning before).
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        obj = ast.literal_eval(chunk)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    obj = None
        if isinstance(obj, dict) and isinstance(obj.get("action_type"), str):
            out.append((start, obj))
    return out


def _balanced(text: str, start: int) -> str | None:
    depth = 0
    for j in range(start, min(len(text), start + 4000)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[start : j + 1]
    return None


def _candidates(text: str) -> list[tuple[int, str, object]]:
    """(position, kind, payload) of every place an action may start, earliest first."""
    found: list[tuple[int, str, object]] = [(pos, "json", obj) for pos, obj in _json_candidates(text)]
    for m in CALL_RE.finditer(text):
        found.append((m.start(1), "call", m))
    for regex in (LINE_VERB_RE, QUOTED_VERB_RE):
        for m in regex.finditer(text):
            found.append((m.start(1), "text", m))
    # At one position a call beats the text reading of the same verb.
    order = {"json": 0, "call": 1, "text": 2}
    found.sort(key=lambda c: (c[0], order[c[1]]))
    return found[:_MAX_CANDIDATES]


# --------------------------------------------------------------------------- public API


def parse_action(text: str, obs: Observation, *, image_size: tuple[int, int] | None = None) -> Action:
    """Read one action from model output `text`, resolved against `obs` (the screen the model saw).

    `image_size` is the (width, height) of the image the model saw, for UI-TARS coordinates in
    that image's pixels; None reads them as 0-1000 relative (see the module docstring).
    Never raises: unparseable or unresolvable output gives `Invalid(text, reason)`.
    """
    raw = _valid_unicode(text if isinstance(text, str) else str(text))
    try:
        return _with_valid_unicode(_parse(raw, obs, image_size))
    except Exception as e:  # the contract is "never raises": a parser bug must not end an episode
        log.warning("parser failed on %r: %s: %s", raw[:200], type(e).__name__, e)
        return Invalid(raw, _valid_unicode(f"parser error: {type(e).__name__}: {e}"))


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _valid_unicode(s: str) -> str:
    """`s` with each lone surrogate replaced by U+FFFD (a split surrogate pair is joined)."""
    if not _SURROGATE_RE.search(s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _with_valid_unicode(action: Action) -> Action:
    """The one exit of parsing: no string field of the action may hold a lone surrogate.

    Escapes decoded on the way (JSON, Python literals, quoted strings) can make surrogates the
    raw text did not hold, so the finished action is checked, whichever format it came from.
    """
    changes = {f.name: _valid_unicode(v) for f in fields(action)  # type: ignore[arg-type]
               if isinstance(v := getattr(action, f.name), str) and _SURROGATE_RE.search(v)}
    return replace(action, **changes) if changes else action  # type: ignore[type-var]


def _parse(raw: str, obs: Observation, image_size: tuple[int, int] | None) -> Action:
    text = raw[:MAX_INPUT_CHARS].strip()
    if not text:
        return Invalid(raw, "empty output")
    # Canonical output opens with its action; reading it whole keeps an "Action:" or a fence
    # inside a quoted text from being taken as a marker.
    found = _search(text, obs, image_size, raw, at_start=True)
    if isinstance(found, str):
        focused = _focus(text)
        found = _search(focused, obs, image_size, raw)
        if isinstance(found, str) and focused != text:
            found = _search(text, obs, image_size, raw)
    return Invalid(raw, found) if isinstance(found, str) else found


def _search(text: str, obs: Observation, image_size: tuple[int, int] | None, raw: str,
            at_start: bool = False) -> Action | str:
    """The first action in `text`, or why there is none (a str)."""
    first_error: str | None = None
    for pos, kind, payload in _candidates(text):
        if at_start and pos > 0:
            break
        try:
            if kind == "json":
                action = _from_json_dict(payload)  # type: ignore[arg-type]
            else:
                m: re.Match = payload  # type: ignore[assignment]
                call = Call(VERBS[m.group(1).lower()])
                if kind == "call":
                    read_call_args(text, m.end(), call)
                else:
                    read_text_args(text, m.end(1), call)
                action = _from_call(call, obs, image_size)
        except LexError as e:
            first_error = first_error or f"bad syntax near {text[pos:pos + 40]!r}: {e}"
            continue
        except ActionError as e:
            return Invalid(raw, str(e))
        return _check_on_screen(action, obs, raw)
    return first_error or "no action found"


def _check_on_screen(action: Action, obs: Observation, raw: str) -> Action:
    index = getattr(action, "index", None)
    if index is not None and not 0 <= index < len(obs.elements):
        return Invalid(raw, f"no element {index} (the screen had {len(obs.elements)})")
    x, y = getattr(action, "x", None), getattr(action, "y", None)
    w, h = obs.size
    if x is not None and y is not None and not (0 <= x < w and 0 <= y < h):
        return Invalid(raw, f"point ({x}, {y}) is off the {w}x{h} screen")
    return action


def _from_json_dict(d: dict) -> Action:
    kind = d.get("action_type")
    rest = {k: v for k, v in d.items() if v is not None}
    cls = {c.action_type: c for c in (Tap, LongPress, Scroll, Swipe, Type, Back, Home, Enter, OpenApp, Wait)}.get(kind)
    if cls is not None:
        names = {f.name for f in fields(cls)}
        rest = {k: v for k, v in rest.items() if k in names or k == "action_type"}
    for key in ("index", "x", "y"):
        v = rest.get(key)
        if isinstance(v, str) and re.fullmatch(r"\s*\d+\s*", v):
            rest[key] = int(v)
        elif isinstance(v, float) and math.isfinite(v):
            rest[key] = round(v)
    return from_dict(rest)


# --------------------------------------------------------------------------- call -> action


def _as_int(tok: Token, what: str) -> int:
    value = tok.numbers[0] if tok.numbers else None
    if tok.kind != "num" or value is None or not math.isfinite(value) or value != int(value):
        raise ActionError(f"{what} must be a whole number, got {tok.text!r}")
    return int(value)


def _to_screen(x: float, y: float, obs: Observation, image_size: tuple[int, int] | None) -> tuple[int, int]:
    """Model-frame coordinates (image pixels, or 0-1000 relative) -> screen pixels."""
    w, h = obs.size
    if image_size is not None:
        iw, ih = image_size
        if iw <= 0 or ih <= 0:
            raise ActionError(f"image_size must be positive, got {image_size!r}")
        sx, sy = x * w / iw, y * h / ih
    else:
        sx, sy = x * w / 1000.0, y * h / 1000.0
    return _clamp(sx, sy, obs)


def _clamp(sx: float, sy: float, obs: Observation) -> tuple[int, int]:
    w, h = obs.size
    if not (math.isfinite(sx) and math.isfinite(sy)) or sx < 0 or sy < 0 or sx > w or sy > h:
        raise ActionError(f"point ({sx:g}, {sy:g}) is off the {w}x{h} screen")
    return min(w - 1, round(sx)), min(h - 1, round(sy))


def _box_numbers(tok: Token) -> tuple[float, ...]:
    if tok.kind == "group":
        return tok.numbers
    if tok.kind == "str":
        return tuple(float(n) for n in NUMBER_RE.findall(tok.text))
    return tok.numbers


def _box_point(tok: Token, obs: Observation, image_size: tuple[int, int] | None) -> tuple[int, int]:
    nums = _box_numbers(tok)
    if len(nums) == 2:
        x, y = nums
    elif len(nums) == 4:
        x, y = (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2
    else:
        raise ActionError(f"a box is (x, y) or (x1, y1, x2, y2), got {tok.text[:60]!r}")
    return _to_screen(x, y, obs, image_size)


_BOX_KEYS = ("start_box", "point", "start_point", "box", "coordinate", "coordinates", "position")


@dataclass(frozen=True)
class _Target:
    index: int | None = None
    point: tuple[int, int] | None = None


def _target(call: Call, obs: Observation, image_size: tuple[int, int] | None, prefer: Callable[[UiElement], bool],
            skip_strings: int = 0) -> _Target | None:
    """Where an action points: an element index or a screen pixel (None when nothing is given).

    `skip_strings` positional strings are the action's own (type's text), not a target.
    """
    kw = call.kwargs
    for key in _BOX_KEYS:
        if key in kw:
            return _Target(point=_box_point(kw[key], obs, image_size))
    if "x" in kw and "y" in kw:
        return _Target(point=_clamp(kw["x"].numbers[0] if kw["x"].numbers else math.nan,
                                    kw["y"].numbers[0] if kw["y"].numbers else math.nan, obs))
    for key in ("index", "element_index", "element", "target", "name", "into", "field"):
        if key in kw:
            return _named_or_index(kw[key], obs, prefer)
    strings_seen = 0
    args = call.args
    for k, tok in enumerate(args):
        if tok.kind == "str":
            if strings_seen < skip_strings:
                strings_seen += 1
                continue
            if looks_like_point(tok.text):
                return _Target(point=_box_point(tok, obs, image_size))
            return _Target(index=resolve_element(tok.text, obs, prefer))
        if tok.kind == "num":
            if k + 1 < len(args) and args[k + 1].kind == "num":
                return _Target(point=_clamp(tok.numbers[0], args[k + 1].numbers[0], obs))
            return _Target(index=_as_int(tok, "an element index"))
        if tok.kind == "group":
            nums = tok.numbers
            if len(nums) == 4:
                return _Target(point=_clamp((nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2, obs))
            if len(nums) == 2:
                return _Target(point=_clamp(nums[0], nums[1], obs))
            raise ActionError(f"a point is (x, y), got ({tok.text[:40]})")
    return None


def _named_or_index(tok: Token, obs: Observation, prefer: Callable[[UiElement], bool]) -> _Target:
    if tok.kind == "num":
        return _Target(index=_as_int(tok, "an element index"))
    if tok.kind in ("str", "word"):
        return _Target(index=resolve_element(tok.text, obs, prefer))
    raise ActionError(f"an element is an index or a name, got {tok.text[:40]!r}")


def _direction(call: Call) -> str:
    tok = call.kwargs.get("direction")
    if tok is not None:
        d = tok.text.strip().lower()
        if d in _DIRECTIONS:
            return d
        raise ActionError(f"direction must be one of {', '.join(_DIRECTIONS)}; got {tok.text[:20]!r}")
    for tok in call.args:
        if tok.kind in ("word", "str") and tok.text.strip().lower() in _DIRECTIONS:
            return tok.text.strip().lower()
    raise ActionError(f"{call.verb} needs a direction: {', '.join(_DIRECTIONS)}")


def _without_direction(call: Call) -> Call:
    """`call` less the token `_direction` read (an element may be named "Down" too)."""
    if "direction" in call.kwargs:
        return Call(call.verb, list(call.args), {k: v for k, v in call.kwargs.items() if k != "direction"})
    args = list(call.args)
    for k, t in enumerate(args):
        if t.kind in ("word", "str") and t.text.strip().lower() in _DIRECTIONS:
            del args[k]
            break
    return Call(call.verb, args, dict(call.kwargs))


def _first_text(call: Call, keys: tuple[str, ...], *, words: bool = False) -> str | None:
    for key in keys:
        if key in call.kwargs:
            return call.kwargs[key].text
    for tok in call.args:
        if tok.kind == "str":
            return tok.text
    if words:
        for tok in call.args:
            if tok.kind == "word" and tok.text.lower() not in _FILLERS:
                return tok.text
    return None


def _flag(call: Call, name: str) -> bool:
    if name in call.kwargs:
        return call.kwargs[name].text.strip().lower() in _TRUE
    return any(t.kind == "word" and t.text.lower() == name for t in call.args)


def _from_call(call: Call, obs: Observation, image_size: tuple[int, int] | None) -> Action:
    verb = call.verb
    if verb in ("tap", "long_press"):
        t = _target(call, obs, image_size, tappable)
        if t is None:
            raise ActionError(f"{verb} needs an element (name or index) or a point")
        cls = Tap if verb == "tap" else LongPress
        return cls(index=t.index) if t.point is None else cls(x=t.point[0], y=t.point[1])
    if verb == "type":
        text = _first_text(call, ("content", "text", "value"))
        if text is None:
            raise ActionError("type needs the text to type, in quotes")
        from_kw = any(k in call.kwargs for k in ("content", "text", "value"))
        t = _target(call, obs, image_size, editable, skip_strings=0 if from_kw else 1)
        index = None
        if t is not None:
            index = t.index if t.point is None else element_at(obs, *t.point, prefer=editable)
        return Type(text, index=index, clear=_flag(call, "clear"))
    if verb in ("scroll", "swipe"):
        direction = _direction(call)
        t = _target(_without_direction(call), obs, image_size, scrollable if verb == "scroll" else tappable)
        if verb == "scroll":
            if t is None:
                return Scroll(direction)  # type: ignore[arg-type]
            # No scrollable element under a UI-TARS point: scroll the main area, as the env does.
            index = t.index if t.point is None else element_at(obs, *t.point, prefer=scrollable)
            return Scroll(direction, index=index)  # type: ignore[arg-type]
        if t is None:
            return Swipe(direction)  # type: ignore[arg-type]
        if t.point is None:
            return Swipe(direction, index=t.index)  # type: ignore[arg-type]
        return Swipe(direction, x=t.point[0], y=t.point[1])  # type: ignore[arg-type]
    if verb == "drag":
        start, end = call.kwargs.get("start_box"), call.kwargs.get("end_box")
        if start is None or end is None:
            raise ActionError("drag needs start_box and end_box")
        (x1, y1), (x2, y2) = _box_point(start, obs, image_size), _box_point(end, obs, image_size)
        dx, dy = x2 - x1, y2 - y1
        if dx == 0 and dy == 0:
            raise ActionError("drag from a point to itself")
        direction = ("right" if dx > 0 else "left") if abs(dx) > abs(dy) else ("down" if dy > 0 else "up")
        return Swipe(direction, x=x1, y=y1)  # type: ignore[arg-type]
    if verb == "back":
        return Back()
    if verb == "home":
        return Home()
    if verb == "enter":
        return Enter()
    if verb == "open_app":
        name = _first_text(call, ("app_name", "app", "name", "package"), words=True)
        if name is None or not name.strip():
            raise ActionError("open_app needs an app name")
        return OpenApp(name)
    if verb == "wait":
        tok = next((call.kwargs[k] for k in ("seconds", "time", "duration") if k in call.kwargs), None)
        tok = tok or next((t for t in call.args if t.kind == "num"), None)
        if tok is None or not tok.numbers:
            return Wait()
        return Wait(int(tok.text) if INT_RE.fullmatch(tok.text) else tok.numbers[0])
    if verb == "done":
        answer = _first_text(call, ("content", "answer", "text", "result"))
        if answer is None:
            num = next((t for t in call.args if t.kind == "num"), None)
            answer = num.text if num is not None else None
        return Done(answer)
    if verb == "infeasible":
        return Infeasible(_first_text(call, ("reason", "content", "text")))
    raise ActionError(f"unknown verb {verb!r}")  # unreachable: VERBS maps onto the branches above


# --------------------------------------------------------------------------- formatting


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _ref(index: int, obs: Observation, prefer: Callable[[UiElement], bool]) -> str:
    """An element by name when the name resolves back to it on `obs`, else by index."""
    if not 0 <= index < len(obs.elements):
        raise ActionError(f"no element {index} (the screen had {len(obs.elements)})")
    e = obs.elements[index]
    # A text field is best called by its hint ("Title"): its text changes as one types.
    names = element_names(e) if not e.editable else tuple(dict.fromkeys(n for n in (e.hint, e.content_desc, e.text) if n))
    for name in names:
        if looks_like_point(name):
            continue
        try:
            if resolve_element(name, obs, prefer) == index:
                return _q(name)
        except ActionError:
            continue
    return str(index)


_PREFER: dict[type, Callable[[UiElement], bool]] = {
    Tap: tappable, LongPress: tappable, Type: editable, Scroll: scrollable, Swipe: tappable,
}


def format_action(action: Action, obs: Observation, style: FormatStyle = "text") -> str:
    """The canonical string for `action` on `obs`; `parse_action` maps it back to `action`.

    "text" is the tiny model's format: elements by name (`tap "Save"`), by index only when no
    name of theirs resolves back to them. "call" is `actions.describe`'s function-call form
    (`tap(3)`), "json" AndroidWorld JSON. Raises ActionError for Invalid (not an action one can
    train towards), an index not on `obs`, or an unknown style.
    """
    if isinstance(action, Invalid):
        raise ActionError("an invalid action has no canonical form")
    if style == "json":
        return to_json(action)
    if style == "call":
        if isinstance(action, Infeasible) and action.reason is not None:
            return f"infeasible({_q(action.reason)})"
        if isinstance(action, Wait):
            return "wait()" if action.seconds == 1.0 else f"wait({action.seconds!r})"
        return describe(action)
    if style != "text":
        raise ActionError(f"unknown format style {style!r}; valid: {', '.join(FORMAT_STYLES)}")
    prefer = _PREFER.get(type(action), tappable)
    match action:
        case Tap(index=i, x=x, y=y) | LongPress(index=i, x=x, y=y):
            verb = "tap" if isinstance(action, Tap) else "long_press"
            return f"{verb} {_ref(i, obs, prefer)}" if i is not None else f"{verb} {x} {y}"
        case Type(text=t, index=i, clear=c):
            out = f"type {_q(t)}"
            if i is not None:
                out += f" into {_ref(i, obs, prefer)}"
            return out + (" clear" if c else "")
        case Scroll(direction=d, index=i):
            return f"scroll {d}" + (f" {_ref(i, obs, prefer)}" if i is not None else "")
        case Swipe(direction=d, index=i, x=x, y=y):
            if i is not None:
                return f"swipe {d} {_ref(i, obs, prefer)}"
            return f"swipe {d}" + (f" {x} {y}" if x is not None else "")
        case Back():
            return "back"
        case Home():
            return "home"
        case Enter():
            return "enter"
        case OpenApp(app_name=a):
            return f"open_app {_q(a)}"
        case Wait(seconds=s):
            return "wait" if s == 1.0 else f"wait {s!r}"
        case Done(answer=a):
            return "done" if a is None else f"done {_q(a)}"
        case Infeasible(reason=r):
            return "infeasible" if r is None else f"infeasible {_q(r)}"
    raise ActionError(f"not an action: {action!r}")
