"""The on-screen keyboard of the simulated phone: drawn like Gboard, keys hit-tested by position."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from PIL import Image

from .canvas import TEXT, TEXT_2, Canvas

ROWS = ("qwertyuiop", "asdfghjkl", "#zxcvbnm#", "#, .#")
KEYBOARD_PACKAGE = "com.google.android.inputmethod.latin"
BG = (232, 234, 237)
KEY = (255, 255, 255)
KEY_FN = (200, 204, 212)


@dataclass(frozen=True)
class Key:
    """One key: what it produces and its pixel box inside the keyboard."""

    value: str  # a character, or "shift", "delete", "enter", "symbols"
    box: tuple[int, int, int, int]


@functools.lru_cache(maxsize=8)
def key_layout(width: int, height: int, density: float) -> tuple[Key, ...]:
    """Key boxes for a keyboard `width` x `height` pixels, relative to its top-left corner."""
    pad = round(4 * density)
    top = round(8 * density)
    row_h = (height - top - pad) // 4
    unit = width / 10
    keys: list[Key] = []
    for r, row in enumerate(ROWS):
        y0 = top + r * row_h
        if r == 0:
            cells = [(ch, unit) for ch in row]
        elif r == 1:
            cells = [(ch, unit) for ch in row]
        elif r == 2:
            cells = [("shift", unit * 1.5)] + [(ch, unit) for ch in row[1:-1]] + [("delete", unit * 1.5)]
        else:
            cells = [("symbols", unit * 1.5), (",", unit), (" ", unit * 5), (".", unit), ("enter", unit * 1.5)]
        total = sum(w for _, w in cells)
        x = (width - total) / 2
        for value, w in cells:
            keys.append(Key(value, (round(x) + pad // 2, y0 + pad // 2, round(x + w) - pad // 2, y0 + row_h - pad // 2)))
            x += w
    return tuple(keys)


def key_at(width: int, height: int, density: float, x: int, y: int) -> Key | None:
    """The key under (x, y), relative to the keyboard's top-left corner."""
    for k in key_layout(width, height, density):
        l, t, r, b = k.box
        if l <= x < r and t <= y < b:
            return k
    return None


_LABELS = {"symbols": "?123", " ": "English"}
_ICONS = {"shift": "expand_less", "delete": "back", "enter": "forward"}


@functools.lru_cache(maxsize=8)
def keyboard_image(width: int, height: int, density: float, shifted: bool) -> Image.Image:
    """The keyboard drawn once per size and shift state (it is pasted into every frame)."""
    c = Canvas(width, height, density, BG)
    for k in key_layout(width, height, density):
        fn = k.value in _LABELS or k.value in _ICONS
        c.rect(k.box, fill=KEY_FN if fn and k.value != " " else KEY, radius=round(6 * density))
        if k.value in _ICONS:
            l, t, r, b = k.box
            c.icon(_ICONS[k.value], (l + r) // 2, (t + b) // 2, round(22 * density), TEXT)
            continue
        label = _LABELS.get(k.value, k.value.upper() if shifted else k.value)
        size = round((13 if len(label) > 1 else 20) * density)
        c.text_in(k.box, label, size, TEXT_2 if k.value == " " else TEXT, "regular", "center")
    return c.image
