"""Tokens of model output for the action parser: verbs, quoted strings, numbers, argument lists.

Internal to `parser`: it reads the arguments after a verb, in call style (`tap("Save", 2)`,
`click(start_box='(1,2)')`) or text style (`type "milk" into "Title"`), into a `Call`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# alias -> canonical verb
VERBS: dict[str, str] = {
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
# Aliases that are everyday English words ("Open the app...", "Complete the form") would read
# prose as actions, so a line opening with one of them is not taken as a text-style action.
PROSE_WORDS = frozenset({"open", "launch", "input", "write", "complete", "answer", "touch", "finish", "sleep", "impossible"})


def _alternation(words: object) -> str:
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))  # type: ignore[arg-type]


VERB_ALT = _alternation(VERBS)
CALL_RE = re.compile(rf"(?<![\w.])({VERB_ALT})[ \t]*\(", re.IGNORECASE)
# Text style: a verb opening a line (after bullets or numbering), or a verb followed by a quote.
LINE_VERB_RE = re.compile(rf"^[ \t>*\-#`\d.)]*({_alternation(set(VERBS) - PROSE_WORDS)})(?![\w(])",
                           re.IGNORECASE | re.MULTILINE)
QUOTED_VERB_RE = re.compile(rf"(?<![\w.])({VERB_ALT})[ \t]+(?=[\"'\u201c])", re.IGNORECASE)
NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
INT_RE = re.compile(r"-?\d+")
# Separators between numbers are explicit (a comma or blanks) so that no regex here can split a
# run of digits in many ways and backtrack for ever on junk.
_SEP = r"(?:[ \t]*,[ \t]*|[ \t]+)"
_NUM = r"-?\d+(?:\.\d+)?"
_GROUP_RE = re.compile(rf"[ \t]*{_NUM}(?:{_SEP}{_NUM})*[ \t]*")
COORD_STR_RE = re.compile(rf"[ \t]*(?:<\|box_start\|>|<point>|<bbox>|[(\[])?[ \t]*{_NUM}(?:{_SEP}{_NUM}){{1,3}}"
                           rf"[ \t]*(?:<\|box_end\|>|</point>|</bbox>|[)\]])?[ \t]*")


@dataclass(frozen=True)
class Token:
    kind: Literal["str", "num", "word", "group"]
    text: str
    """The value: decoded string, number text, word, or for a group the numbers' source text."""
    numbers: tuple[float, ...] = ()
    """The number(s) of a num or group token."""


@dataclass
class Call:
    verb: str
    args: list[Token] = field(default_factory=list)
    kwargs: dict[str, Token] = field(default_factory=dict)


class LexError(Exception):
    """This place in the text is not an action after all; the parser tries the next one."""


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
    raise LexError("unterminated string")


def _read_group(s: str, i: int) -> tuple[Token, int]:
    """A bracketed tuple of numbers such as `(120, 540)` or `[1, 2, 3, 4]`."""
    close = ")" if s[i] == "(" else "]"
    end = s.find(close, i + 1)
    if end < 0:
        raise LexError(f"unclosed {s[i]!r}")
    inner = s[i + 1 : end]
    if not _GROUP_RE.fullmatch(inner):
        raise LexError(f"not a group of numbers: {inner[:40]!r}")
    nums = tuple(float(m) for m in NUMBER_RE.findall(inner))
    return Token("group", inner, nums), end + 1


def _read_value(s: str, i: int) -> tuple[Token, int]:
    c = s[i]
    if c in _OPEN_QUOTES:
        value, j = _read_string(s, i)
        return Token("str", value), j
    if c in "([":
        return _read_group(s, i)
    m = NUMBER_RE.match(s, i)
    if m and not (m.end() < len(s) and (s[m.end()].isalpha() or s[m.end()] == "_")):
        return Token("num", m.group(), (float(m.group()),)), m.end()
    m = _WORD_RE.match(s, i)
    if m:
        return Token("word", m.group()), m.end()
    raise LexError(f"unexpected {c!r}")


def _skip_space(s: str, i: int, newlines: bool) -> int:
    while i < len(s) and (s[i] in " \t" or (newlines and s[i] in "\r\n")):
        i += 1
    return i


def read_call_args(s: str, i: int, call: Call) -> None:
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
                    raise LexError(f"no value for {m.group()!r}")
                tok, i = _read_value(s, value_at)
                call.kwargs[m.group().lower()] = tok
                continue
        tok, i = _read_value(s, i)
        call.args.append(tok)


def read_text_args(s: str, i: int, call: Call) -> None:
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
            except (LexError, IndexError):
                return
            call.kwargs[m.group().lower()] = tok
            continue
        try:
            tok, i = _read_value(s, i)
        except LexError:
            if s[i] in _OPEN_QUOTES:
                raise  # an unterminated string is an error, not trailing junk
            return
        call.args.append(tok)
