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
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
from dataclasses import dataclass, field, fields
from typing import Callable, Literal

from coadapt.android_env.actions import (
    Action, Back, Done, Enter, Home, Infeasible, Invalid, LongPress, OpenApp, Scroll, Swipe, Tap, Type, Wait,
    describe, from_dict, to_json,
)
from coadapt.android_env.errors import ActionError
from coadapt.android_env.observation import Observation
from coadapt.android_env.uitree import UiElement

log = logging.getLogger(__name__)

FormatStyle = Literal["text", "call", "json"]
FORMAT_STYLES: tuple[str, ...] = ("text", "call", "json")
MAX_INPUT_CHARS = 20_000
"""Longer model outputs are cut to this many characters before parsing."""
_MAX_CANDIDATES = 50  # places tried per text: keeps junk full of "tap(" from costing quadratic time

# alias -> canonical verb
_VERBS: dict[str, str] = {
    **dict.fromkeys(("tap", "click", "left_single", "left_click", "touch"), "tap"),
    **dict.fromkeys(("long_press", "longpress", "long_click", "long_tap"), "long_press"),
    **dict.fromkeys(("type", "input_text", "type_text", "input", "write"), "type"),
    **dict.fromkeys(("scroll",), "scroll"),
    **dict.fromkeys(("swipe",), "swipe"),
    **dict.fromkeys(("drag", "left_drag"), "drag"),
    **dict.fromkeys(("back", "press_back", "navigate_back", "go_back"), "back"),
    **dict.fromkeys(("home", "press_home", "navigate_home", "go_home"), "home"),
    **dict.fromkeys(("enter", "press_enter", "keyboard_enter"), "enter"),
    **dict.fromkeys(("open_app", "launch_app", "open", "launch"), "open_app"),
    **dict.fromkeys(("wait", "sleep"), "wait"),
    **dict.fromkeys(("done", "finished", "finish", "complete", "answer"), "done"),
    **dict.fromkeys(("infeasible", "impossible"), "infeasible"),
}
_DIRECTIONS = ("up", "down", "left", "right")
_FILLERS = frozenset({"into", "in", "on", "at", "to", "the", "field", "element"})
_TRUE = frozenset({"true", "yes", "1"})

# Aliases that are everyday English words ("Open the app...", "Complete the form") would read
# prose as actions, so a line opening with one of them is not taken as a text-style action.
_PROSE_WORDS = frozenset({"open", "launch", "input", "write", "complete", "answer", "touch", "finish", "sleep", "impossible"})


def _alternation(words: object) -> str:
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))  # type: ignore[arg-type]


_VERB_ALT = _alternation(_VERBS)
_CALL_RE = re.compile(rf"(?<![\w.])({_VERB_ALT})[ \t]*\(", re.IGNORECASE)
# Text style: a verb opening a line (after bullets or numbering), or a verb followed by a quote.
_LINE_VERB_RE = re.compile(rf"^[ \t>*\-#`\d.)]*({_alternation(set(_VERBS) - _PROSE_WORDS)})(?![\w(])",
                           re.IGNORECASE | re.MULTILINE)
_QUOTED_VERB_RE = re.compile(rf"(?<![\w.])({_VERB_ALT})[ \t]+(?=[\"'\u201c])", re.IGNORECASE)
_FENCE_RE = re.compile(r"```[ \t]*[\w-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_ACTION_MARK_RE = re.compile(r"\baction[ \t]*:", re.IGNORECASE)
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_INT_RE = re.compile(r"-?\d+")
# Separators between numbers are explicit (a comma or blanks) so that no regex here can split a
# run of digits in many ways and backtrack for ever on junk.
_SEP = r"(?:[ \t]*,[ \t]*|[ \t]+)"
_NUM = r"-?\d+(?:\.\d+)?"
_GROUP_RE = re.compile(rf"[ \t]*{_NUM}(?:{_SEP}{_NUM})*[ \t]*")
_COORD_STR_RE = re.compile(rf"[ \t]*(?:<\|box_start\|>|<point>|<bbox>|[(\[])?[ \t]*{_NUM}(?:{_SEP}{_NUM}){{1,3}}"
                           rf"[ \t]*(?:<\|box_end\|>|</point>|</bbox>|[)\]])?[ \t]*")


# --------------------------------------------------------------------------- lexing


@dataclass(frozen=True)
class _Tok:
    kind: Literal["str", "num", "word", "group"]
    text: str
    """The value: decoded string, number text, word, or for a group the numbers' source text."""
    numbers: tuple[float, ...] = ()
    """The number(s) of a num or group token."""


@dataclass
class _Call:
    verb: str
    args: list[_Tok] = field(default_factory=list)
    kwargs: dict[str, _Tok] = field(default_factory=dict)


class _SyntaxError(Exception):
    """Internal: this candidate is not an action; try the next one."""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0", "/": "/"}
_OPEN_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019"}
_WORD_RE = re.compile(r"[A-Za-z_][\w.\-]*")


def _read_string(s: str, i: int) -> tuple[str, int]:
    """Decode the quoted string starting at s[i]; returns (value, index after the closing quote)."""
    close = _OPEN_QUOTES[s[i]]
    out: list[str] = []
    j = i + 1
    n = len(s)
    while j < n:
        c = s[j]
        if c == close:
            return "".join(out), j + 1
        if c == "\\" and j + 1 < n:
            e = s[j + 1]
            if e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[j + 2 : j + 6]):
                code = int(s[j + 2 : j + 6], 16)
                j += 6
                # A JSON surrogate pair spells one character outside the BMP.
                if 0xD800 <= code < 0xDC00 and s[j : j + 2] == "\\u" and re.fullmatch(r"[dD][c-fC-F][0-9a-fA-F]{2}", s[j + 2 : j + 6]):
                    low = int(s[j + 2 : j + 6], 16)
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    j += 6
                # A lone surrogate cannot be encoded (tokenizer, device, logs): replace it.
                out.append("\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code))
                continue
            out.append(_ESCAPES.get(e, e))
            j += 2
            continue
        out.append(c)
        j += 1
    raise _SyntaxError("unterminated string")


def _read_group(s: str, i: int) -> tuple[_Tok, int]:
    """A bracketed tuple of numbers such as `(120, 540)` or `[1, 2, 3, 4]`."""
    close = ")" if s[i] == "(" else "]"
    end = s.find(close, i + 1)
    if end < 0:
        raise _SyntaxError(f"unclosed {s[i]!r}")
    inner = s[i + 1 : end]
    if not _GROUP_RE.fullmatch(inner):
        raise _SyntaxError(f"not a group of numbers: {inner[:40]!r}")
    nums = tuple(float(m) for m in _NUMBER_RE.findall(inner))
    return _Tok("group", inner, nums), end + 1


def _read_value(s: str, i: int) -> tuple[_Tok, int]:
    c = s[i]
    if c in _OPEN_QUOTES:
        value, j = _read_string(s, i)
        return _Tok("str", value), j
    if c in "([":
        return _read_group(s, i)
    m = _NUMBER_RE.match(s, i)
    if m and not (m.end() < len(s) and (s[m.end()].isalpha() or s[m.end()] == "_")):
        return _Tok("num", m.group(), (float(m.group()),)), m.end()
    m = _WORD_RE.match(s, i)
    if m:
        return _Tok("word", m.group()), m.end()
    raise _SyntaxError(f"unexpected {c!r}")


def _skip_space(s: str, i: int, newlines: bool) -> int:
    while i < len(s) and (s[i] in " \t" or (newlines and s[i] in "\r\n")):
        i += 1
    return i


def _parse_call_args(s: str, i: int, call: _Call) -> None:
    """Arguments after `verb(`; a missing `)` at the end of the text is forgiven."""
    while True:
        i = _skip_space(s, i, newlines=True)
        if i >= len(s) or s[i] == ")":
            return
        if s[i] == ",":
            i += 1
            continue
        m = _WORD_RE.match(s, i)
        if m:
            after = _skip_space(s, m.end(), newlines=True)
            if after < len(s) and s[after] in "=:":
                value_at = _skip_space(s, after + 1, newlines=True)
                if value_at >= len(s):
                    raise _SyntaxError(f"no value for {m.group()!r}")
                tok, i = _read_value(s, value_at)
                call.kwargs[m.group().lower()] = tok
                continue
        tok, i = _read_value(s, i)
        call.args.append(tok)


def _parse_text_args(s: str, i: int, call: _Call) -> None:
    """Arguments of the text style, up to the end of the line or the first thing that is not one."""
    while True:
        i = _skip_space(s, i, newlines=False)
        if i >= len(s) or s[i] in "\r\n":
            return
        if s[i] == ",":
            i += 1
            continue
        m = _WORD_RE.match(s, i)
        if m and s[m.end() : m.end() + 1] == "=":
            try:
                tok, i = _read_value(s, m.end() + 1)
            except (_SyntaxError, IndexError):
                return
            call.kwargs[m.group().lower()] = tok
            continue
        try:
            tok, i = _read_value(s, i)
        except _SyntaxError:
            if s[i] in _OPEN_QUOTES:
                raise  # an unterminated string is an error, not trailing junk
            return
        call.args.append(tok)


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
    for m in _CALL_RE.finditer(text):
        found.append((m.start(1), "call", m))
    for regex in (_LINE_VERB_RE, _QUOTED_VERB_RE):
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
    raw = text if isinstance(text, str) else str(text)
    try:
        return _parse(raw, obs, image_size)
    except Exception as e:  # the contract is "never raises": a parser bug must not end an episode
        log.warning("parser failed on %r: %s: %s", raw[:200], type(e).__name__, e)
        return Invalid(raw, f"parser error: {type(e).__name__}: {e}")


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
                call = _Call(_VERBS[m.group(1).lower()])
                if kind == "call":
                    _parse_call_args(text, m.end(), call)
                else:
                    _parse_text_args(text, m.end(1), call)
                action = _from_call(call, obs, image_size)
        except _SyntaxError as e:
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


def _as_int(tok: _Tok, what: str) -> int:
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


def _box_numbers(tok: _Tok) -> tuple[float, ...]:
    if tok.kind == "group":
        return tok.numbers
    if tok.kind == "str":
        return tuple(float(n) for n in _NUMBER_RE.findall(tok.text))
    return tok.numbers


def _box_point(tok: _Tok, obs: Observation, image_size: tuple[int, int] | None) -> tuple[int, int]:
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


def _target(call: _Call, obs: Observation, image_size: tuple[int, int] | None, prefer: Callable[[UiElement], bool],
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
            if _looks_like_point(tok.text):
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


def _looks_like_point(s: str) -> bool:
    """A quoted UI-TARS box such as '(120,540)' rather than an element name (a lone number is a name)."""
    return bool(_COORD_STR_RE.fullmatch(s)) and not re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", s)


def _named_or_index(tok: _Tok, obs: Observation, prefer: Callable[[UiElement], bool]) -> _Target:
    if tok.kind == "num":
        return _Target(index=_as_int(tok, "an element index"))
    if tok.kind in ("str", "word"):
        return _Target(index=resolve_element(tok.text, obs, prefer))
    raise ActionError(f"an element is an index or a name, got {tok.text[:40]!r}")


def _direction(call: _Call) -> str:
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


def _without_direction(call: _Call) -> _Call:
    """`call` less the token `_direction` read (an element may be named "Down" too)."""
    if "direction" in call.kwargs:
        return _Call(call.verb, list(call.args), {k: v for k, v in call.kwargs.items() if k != "direction"})
    args = list(call.args)
    for k, t in enumerate(args):
        if t.kind in ("word", "str") and t.text.strip().lower() in _DIRECTIONS:
            del args[k]
            break
    return _Call(call.verb, args, dict(call.kwargs))


def _first_text(call: _Call, keys: tuple[str, ...], *, words: bool = False) -> str | None:
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


def _flag(call: _Call, name: str) -> bool:
    if name in call.kwargs:
        return call.kwargs[name].text.strip().lower() in _TRUE
    return any(t.kind == "word" and t.text.lower() == name for t in call.args)


def _from_call(call: _Call, obs: Observation, image_size: tuple[int, int] | None) -> Action:
    verb = call.verb
    if verb in ("tap", "long_press"):
        t = _target(call, obs, image_size, _tappable)
        if t is None:
            raise ActionError(f"{verb} needs an element (name or index) or a point")
        cls = Tap if verb == "tap" else LongPress
        return cls(index=t.index) if t.point is None else cls(x=t.point[0], y=t.point[1])
    if verb == "type":
        text = _first_text(call, ("content", "text", "value"))
        if text is None:
            raise ActionError("type needs the text to type, in quotes")
        from_kw = any(k in call.kwargs for k in ("content", "text", "value"))
        t = _target(call, obs, image_size, _editable, skip_strings=0 if from_kw else 1)
        index = None
        if t is not None:
            index = t.index if t.point is None else element_at(obs, *t.point, prefer=_editable)
        return Type(text, index=index, clear=_flag(call, "clear"))
    if verb in ("scroll", "swipe"):
        direction = _direction(call)
        t = _target(_without_direction(call), obs, image_size, _scrollable if verb == "scroll" else _tappable)
        if verb == "scroll":
            if t is None:
                return Scroll(direction)  # type: ignore[arg-type]
            # No scrollable element under a UI-TARS point: scroll the main area, as the env does.
            index = t.index if t.point is None else element_at(obs, *t.point, prefer=_scrollable)
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
        return Wait(int(tok.text) if _INT_RE.fullmatch(tok.text) else tok.numbers[0])
    if verb == "done":
        answer = _first_text(call, ("content", "answer", "text", "result"))
        if answer is None:
            num = next((t for t in call.args if t.kind == "num"), None)
            answer = num.text if num is not None else None
        return Done(answer)
    if verb == "infeasible":
        return Infeasible(_first_text(call, ("reason", "content", "text")))
    raise ActionError(f"unknown verb {verb!r}")  # unreachable: _VERBS maps onto the branches above


# --------------------------------------------------------------------------- element names


def _tappable(e: UiElement) -> bool:
    return e.clickable or e.long_clickable or e.checkable or e.editable


def _editable(e: UiElement) -> bool:
    return e.editable


def _scrollable(e: UiElement) -> bool:
    return e.scrollable


_PREFER: dict[type, Callable[[UiElement], bool]] = {
    Tap: _tappable, LongPress: _tappable, Type: _editable, Scroll: _scrollable, Swipe: _tappable,
}


def element_names(e: UiElement) -> tuple[str, ...]:
    """The names an action may call `e` by, most preferred first: text, description, hint."""
    return tuple(dict.fromkeys(n for n in (e.text, e.content_desc, e.hint) if n))


def resolve_element(name: str, obs: Observation, prefer: Callable[[UiElement], bool] = _tappable) -> int:
    """The index in `obs.elements` of the element called `name` (see the module docstring).

    Raises ActionError when nothing matches or a substring matches several elements.
    """
    if not name.strip():
        raise ActionError("an element name is empty")
    elems = obs.elements

    def pick(hits: list[int]) -> int:
        preferred = [i for i in hits if prefer(elems[i])]
        return (preferred or hits)[0]

    exact = [i for i, e in enumerate(elems) if name in element_names(e)]
    if exact:
        return pick(exact)
    folded = name.casefold()
    caseless = [i for i, e in enumerate(elems) if any(folded == n.casefold() for n in element_names(e))]
    if caseless:
        return pick(caseless)
    partial = [i for i, e in enumerate(elems) if any(folded.strip() in n.casefold() for n in element_names(e))]
    if len(partial) == 1:
        return partial[0]
    preferred = [i for i in partial if prefer(elems[i])]
    if len(preferred) == 1:
        return preferred[0]
    if partial:
        shown = ", ".join(repr(elems[i].label) for i in partial[:5])
        raise ActionError(f"{name!r} is ambiguous on this screen: {shown}")
    raise ActionError(f"no element named {name!r} on this screen")


def element_at(obs: Observation, x: int, y: int, *, prefer: Callable[[UiElement], bool], require: bool = False) -> int | None:
    """Index of the smallest preferred element containing pixel (x, y); None (or ActionError) if none."""
    hits = [i for i, e in enumerate(obs.elements) if prefer(e) and e.bounds.contains(x, y)]
    if not hits:
        if require:
            raise ActionError(f"nothing there to act on at ({x}, {y})")
        return None
    return min(hits, key=lambda i: obs.elements[i].bounds.area)


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
        if _looks_like_point(name):
            continue
        try:
            if resolve_element(name, obs, prefer) == index:
                return _q(name)
        except ActionError:
            continue
    return str(index)


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
    prefer = _PREFER.get(type(action), _tappable)
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
