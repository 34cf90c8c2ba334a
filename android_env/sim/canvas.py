"""Pillow drawing for the simulated phone: fonts, cached text, Material-style shapes and icons."""

from __future__ import annotations

import functools
import math
from importlib import resources
from typing import Callable

from PIL import Image, ImageDraw, ImageFont

RGB = tuple[int, int, int]


def hex_rgb(color: str) -> RGB:
    """'#RRGGBB' -> (r, g, b)."""
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


def mix(a: RGB, b: RGB, t: float) -> RGB:
    """Blend colour `a` towards `b` by `t` in [0, 1]."""
    return tuple(round(x + (y - x) * t) for x, y in zip(a, b))  # type: ignore[return-value]


WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)
TEXT: RGB = (28, 27, 31)
TEXT_2: RGB = (96, 94, 102)
HINT: RGB = (140, 138, 146)
DIVIDER: RGB = (224, 222, 228)
SURFACE: RGB = (255, 251, 254)
SURFACE_2: RGB = (243, 237, 247)
SCRIM: RGB = (0, 0, 0)
DISABLED: RGB = (190, 188, 194)
ERROR: RGB = (179, 38, 30)


# --------------------------------------------------------------------------- fonts


def _font_path(weight: str) -> str | None:
    name = {"regular": "Roboto-Regular.ttf", "medium": "Roboto-Medium.ttf", "bold": "Roboto-Bold.ttf"}[weight]
    try:
        path = resources.files("font_roboto") / "files" / name
    except ModuleNotFoundError:
        return None
    return str(path) if path.is_file() else None


@functools.lru_cache(maxsize=64)
def font(size_px: int, weight: str = "regular") -> ImageFont.FreeTypeFont:
    """Roboto (Android's system font) at `size_px`; Pillow's bundled font if Roboto is missing."""
    path = _font_path(weight)
    if path is None:
        return ImageFont.load_default(size_px)  # type: ignore[return-value]
    return ImageFont.truetype(path, size_px, layout_engine=ImageFont.Layout.BASIC)


@functools.lru_cache(maxsize=8192)
def text_width(text: str, size_px: int, weight: str = "regular") -> int:
    """Advance width of `text` in pixels."""
    return math.ceil(font(size_px, weight).getlength(text))


@functools.lru_cache(maxsize=4096)
def _text_mask(text: str, size_px: int, weight: str) -> tuple[Image.Image, int, int]:
    # Rendering a string is ~1 ms in Pillow; screens repeat their strings, so keep the masks.
    f = font(size_px, weight)
    x0, y0, x1, y1 = f.getbbox(text)
    mask = Image.new("L", (max(1, x1 - x0), max(1, y1 - y0)), 0)
    ImageDraw.Draw(mask).text((-x0, -y0), text, font=f, fill=255)
    return mask, x0, y0


def ellipsize(text: str, size_px: int, max_width: int, weight: str = "regular") -> str:
    """Cut `text` with an ellipsis so it fits in `max_width` pixels."""
    if max_width <= 0:
        return ""
    if text_width(text, size_px, weight) <= max_width:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_width(text[:mid] + "…", size_px, weight) <= max_width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"


@functools.lru_cache(maxsize=2048)
def wrap(text: str, size_px: int, max_width: int, weight: str = "regular") -> tuple[str, ...]:
    """Greedy word wrap into lines no wider than `max_width` pixels (explicit newlines kept)."""
    lines: list[str] = []
    for para in text.split("\n"):
        words = para.split(" ")
        line = ""
        for w in words:
            cand = w if not line else f"{line} {w}"
            if text_width(cand, size_px, weight) <= max_width or not line:
                line = cand
            else:
                lines.append(line)
                line = w
        lines.append(line)
    return tuple(lines)


# --------------------------------------------------------------------------- canvas


class Canvas:
    """An RGB image drawn in absolute screen pixels, optionally a clipped window onto the screen.

    A region canvas (`region`) covers a rectangle of the screen; drawing outside it is cut off,
    and `paste_into` puts it back. That is how scrolling lists clip their rows.
    """

    def __init__(self, width: int, height: int, density: float, bg: RGB = WHITE, origin: tuple[int, int] = (0, 0)):
        self.image = Image.new("RGB", (max(1, width), max(1, height)), bg)
        self.draw = ImageDraw.Draw(self.image)
        self.density = density
        self.ox, self.oy = origin

    def dp(self, v: float) -> int:
        return round(v * self.density)

    def region(self, box: tuple[int, int, int, int]) -> "Canvas":
        """A canvas over `box` (screen pixels) holding what is drawn there so far; drawing on it
        is cut off at its edges, and `paste_into` puts it back."""
        l, t, r, b = box
        sub = Canvas.__new__(Canvas)
        sub.image = self.image.crop((l - self.ox, t - self.oy, r - self.ox, b - self.oy))
        sub.draw = ImageDraw.Draw(sub.image)
        sub.density = self.density
        sub.ox, sub.oy = l, t
        return sub

    def paste_into(self, parent: "Canvas") -> None:
        parent.image.paste(self.image, (self.ox - parent.ox, self.oy - parent.oy))

    def _box(self, box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
        l, t, r, b = box
        return l - self.ox, t - self.oy, r - self.ox - 1, b - self.oy - 1

    def rect(self, box, fill: RGB | None = None, outline: RGB | None = None, radius: float = 0, width: int = 1) -> None:
        b = self._box(box)
        if b[2] < b[0] or b[3] < b[1]:
            return
        if radius > 0:
            self.draw.rounded_rectangle(b, radius=radius, fill=fill, outline=outline, width=width)
        else:
            self.draw.rectangle(b, fill=fill, outline=outline, width=width)

    def circle(self, cx: float, cy: float, r: float, fill: RGB | None = None, outline: RGB | None = None, width: int = 1) -> None:
        self.draw.ellipse(self._box((cx - r, cy - r, cx + r + 1, cy + r + 1)), fill=fill, outline=outline, width=width)

    def line(self, points: list[tuple[float, float]], color: RGB, width: int = 2) -> None:
        self.draw.line([(x - self.ox, y - self.oy) for x, y in points], fill=color, width=width, joint="curve")

    def polygon(self, points: list[tuple[float, float]], fill: RGB) -> None:
        self.draw.polygon([(x - self.ox, y - self.oy) for x, y in points], fill=fill)

    def arc(self, box, start: float, end: float, color: RGB, width: int = 2) -> None:
        self.draw.arc(self._box(box), start, end, fill=color, width=width)

    def text(
        self,
        x: int,
        y: int,
        text: str,
        size_px: int,
        color: RGB,
        weight: str = "regular",
        align: str = "left",
        max_width: int | None = None,
    ) -> None:
        """Draw one line of text with its line box's top-left (or centre/right) at x, y."""
        if not text:
            return
        if max_width is not None:
            text = ellipsize(text, size_px, max_width, weight)
            if not text:
                return
        x, y, size_px = round(x), round(y), round(size_px)
        mask, x0, y0 = _text_mask(text, size_px, weight)
        if align != "left":
            w = text_width(text, size_px, weight)
            x = x - w // 2 if align == "center" else x - w
        px, py = x + x0 - self.ox, y + y0 - self.oy
        self.image.paste(color, (px, py, px + mask.width, py + mask.height), mask)

    def text_in(self, box, text: str, size_px: int, color: RGB, weight: str = "regular", align: str = "left", pad: int = 0) -> None:
        """Draw one line of text vertically centred in `box` (with `pad` pixels left/right)."""
        l, t, r, b = (round(v) for v in box)
        size_px = round(size_px)
        f = font(size_px, weight)
        ascent, descent = f.getmetrics()
        y = (t + b - ascent - descent) // 2
        if align == "center":
            x = (l + r) // 2
        elif align == "right":
            x = r - pad
        else:
            x = l + pad
        self.text(x, y, text, size_px, color, weight, align, max_width=(r - l) - 2 * pad)

    def icon(self, name: str, cx: int, cy: int, size: int, color: RGB) -> None:
        """Draw a Material-like icon `name` centred at (cx, cy), `size` pixels across."""
        painter = ICONS.get(name)
        if painter is None:
            self.text_in((cx - size, cy - size, cx + size, cy + size), name[:1].upper(), int(size * 0.8), color, "medium", "center")
            return
        painter(self, cx, cy, size / 2, color, max(2, round(size / 11)))


# --------------------------------------------------------------------------- icons
# Each painter draws in a box of half-size r around (cx, cy) with stroke width w.

IconPainter = Callable[[Canvas, int, int, float, RGB, int], None]


def _plus(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.7, y), (x + r * 0.7, y)], col, w)
    c.line([(x, y - r * 0.7), (x, y + r * 0.7)], col, w)


def _back(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.7, y), (x + r * 0.7, y)], col, w)
    c.line([(x - r * 0.05, y - r * 0.65), (x - r * 0.7, y), (x - r * 0.05, y + r * 0.65)], col, w)


def _forward(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.7, y), (x + r * 0.7, y)], col, w)
    c.line([(x + r * 0.05, y - r * 0.65), (x + r * 0.7, y), (x + r * 0.05, y + r * 0.65)], col, w)


def _chevron(dx: float, dy: float) -> IconPainter:
    def paint(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
        if dx:
            c.line([(x - dx * r * 0.25, y - r * 0.5), (x + dx * r * 0.25, y), (x - dx * r * 0.25, y + r * 0.5)], col, w)
        else:
            c.line([(x - r * 0.5, y - dy * r * 0.25), (x, y + dy * r * 0.25), (x + r * 0.5, y - dy * r * 0.25)], col, w)

    return paint


def _menu(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    for dy in (-0.55, 0, 0.55):
        c.line([(x - r * 0.75, y + dy * r), (x + r * 0.75, y + dy * r)], col, w)


def _more_vert(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    for dy in (-0.6, 0, 0.6):
        c.circle(x, y + dy * r, max(1.5, r * 0.14), fill=col)


def _search(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x - r * 0.2, y - r * 0.2, r * 0.45, outline=col, width=w)
    c.line([(x + r * 0.12, y + r * 0.12), (x + r * 0.7, y + r * 0.7)], col, w + 1)


def _close(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.55, y - r * 0.55), (x + r * 0.55, y + r * 0.55)], col, w)
    c.line([(x - r * 0.55, y + r * 0.55), (x + r * 0.55, y - r * 0.55)], col, w)


def _check(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.6, y), (x - r * 0.15, y + r * 0.45), (x + r * 0.65, y - r * 0.45)], col, w)


def _delete(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.5, y - r * 0.45, x + r * 0.5, y + r * 0.8), outline=col, width=w, radius=r * 0.1)
    c.line([(x - r * 0.7, y - r * 0.55), (x + r * 0.7, y - r * 0.55)], col, w)
    c.line([(x - r * 0.2, y - r * 0.8), (x + r * 0.2, y - r * 0.8)], col, w)


def _edit(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.6, y + r * 0.6), (x + r * 0.5, y - r * 0.5)], col, w + 2)
    c.polygon([(x - r * 0.75, y + r * 0.75), (x - r * 0.65, y + r * 0.35), (x - r * 0.35, y + r * 0.65)], col)


def _star(filled: bool) -> IconPainter:
    def paint(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
        pts = []
        for i in range(10):
            a = -math.pi / 2 + i * math.pi / 5
            rr = r * (0.8 if i % 2 == 0 else 0.35)
            pts.append((x + rr * math.cos(a), y + rr * math.sin(a)))
        if filled:
            c.polygon(pts, col)
        else:
            c.line(pts + [pts[0]], col, w)

    return paint


def _settings(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    for i in range(8):
        a = i * math.pi / 4
        c.line([(x + r * 0.45 * math.cos(a), y + r * 0.45 * math.sin(a)), (x + r * 0.8 * math.cos(a), y + r * 0.8 * math.sin(a))], col, w + 1)
    c.circle(x, y, r * 0.5, outline=col, width=w)
    c.circle(x, y, r * 0.18, fill=col)


def _person(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x, y - r * 0.35, r * 0.32, fill=col)
    c.draw.pieslice(c._box((x - r * 0.7, y + r * 0.05, x + r * 0.7, y + r * 1.4)), 180, 360, fill=col)


def _calendar(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.7, y - r * 0.55, x + r * 0.7, y + r * 0.75), outline=col, width=w, radius=r * 0.1)
    c.rect((x - r * 0.7, y - r * 0.55, x + r * 0.7, y - r * 0.2), fill=col)
    for dx in (-0.35, 0.35):
        c.line([(x + dx * r, y - r * 0.8), (x + dx * r, y - r * 0.45)], col, w)


def _alarm(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x, y + r * 0.08, r * 0.65, outline=col, width=w)
    c.line([(x, y - r * 0.3), (x, y + r * 0.1), (x + r * 0.3, y + r * 0.3)], col, w)
    c.line([(x - r * 0.85, y - r * 0.45), (x - r * 0.5, y - r * 0.8)], col, w)
    c.line([(x + r * 0.85, y - r * 0.45), (x + r * 0.5, y - r * 0.8)], col, w)


def _timer(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x, y + r * 0.1, r * 0.65, outline=col, width=w)
    c.line([(x, y + r * 0.1), (x + r * 0.3, y - r * 0.2)], col, w)
    c.line([(x - r * 0.25, y - r * 0.8), (x + r * 0.25, y - r * 0.8)], col, w)


def _message(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.75, y - r * 0.6, x + r * 0.75, y + r * 0.35), fill=col, radius=r * 0.15)
    c.polygon([(x - r * 0.45, y + r * 0.3), (x - r * 0.45, y + r * 0.75), (x - r * 0.05, y + r * 0.3)], col)


def _send(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x - r * 0.7, y - r * 0.7), (x + r * 0.75, y), (x - r * 0.7, y + r * 0.7), (x - r * 0.45, y)], col)


def _folder(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x - r * 0.8, y - r * 0.55), (x - r * 0.25, y - r * 0.55), (x - r * 0.1, y - r * 0.4), (x + r * 0.8, y - r * 0.4),
               (x + r * 0.8, y + r * 0.6), (x - r * 0.8, y + r * 0.6)], col)


def _file(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x - r * 0.55, y - r * 0.8), (x + r * 0.2, y - r * 0.8), (x + r * 0.55, y - r * 0.45), (x + r * 0.55, y + r * 0.8),
               (x - r * 0.55, y + r * 0.8)], col)


def _cart(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.85, y - r * 0.7), (x - r * 0.55, y - r * 0.7), (x - r * 0.3, y + r * 0.3), (x + r * 0.6, y + r * 0.3), (x + r * 0.8, y - r * 0.4), (x - r * 0.45, y - r * 0.4)], col, w)
    c.circle(x - r * 0.25, y + r * 0.65, r * 0.13, fill=col)
    c.circle(x + r * 0.5, y + r * 0.65, r * 0.13, fill=col)


def _music(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x - r * 0.35, y + r * 0.5, r * 0.28, fill=col)
    c.line([(x - r * 0.1, y + r * 0.5), (x - r * 0.1, y - r * 0.75), (x + r * 0.6, y - r * 0.55)], col, w + 1)


def _play(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x - r * 0.45, y - r * 0.7), (x + r * 0.7, y), (x - r * 0.45, y + r * 0.7)], col)


def _pause(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.55, y - r * 0.65, x - r * 0.15, y + r * 0.65), fill=col)
    c.rect((x + r * 0.15, y - r * 0.65, x + r * 0.55, y + r * 0.65), fill=col)


def _share(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    a, b, d = (x + r * 0.5, y - r * 0.55), (x - r * 0.5, y), (x + r * 0.5, y + r * 0.55)
    c.line([a, b, d], col, w)
    for p in (a, b, d):
        c.circle(p[0], p[1], r * 0.2, fill=col)


def _sort(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    for dy, ln in ((-0.5, 0.75), (0, 0.5), (0.5, 0.25)):
        c.line([(x - r * 0.75, y + dy * r), (x - r * 0.75 + 2 * ln * r, y + dy * r)], col, w)


def _filter(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x - r * 0.8, y - r * 0.6), (x + r * 0.8, y - r * 0.6), (x + r * 0.15, y + r * 0.1), (x + r * 0.15, y + r * 0.7),
               (x - r * 0.15, y + r * 0.55), (x - r * 0.15, y + r * 0.1)], col)


def _wifi(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    for k in (0.35, 0.65, 0.95):
        c.arc((x - r * k, y + r * 0.5 - r * k, x + r * k, y + r * 0.5 + r * k), 225, 315, col, w)
    c.circle(x, y + r * 0.45, max(1.5, r * 0.12), fill=col)


def _battery(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.35, y - r * 0.75, x + r * 0.35, y + r * 0.85), fill=col, radius=r * 0.08)
    c.rect((x - r * 0.15, y - r * 0.9, x + r * 0.15, y - r * 0.7), fill=col)


def _signal(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x - r * 0.8, y + r * 0.8), (x + r * 0.8, y + r * 0.8), (x + r * 0.8, y - r * 0.8)], col)


def _home(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x, y, r * 0.75, outline=col, width=w)


def _house(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x, y - r * 0.8), (x + r * 0.8, y - r * 0.05), (x - r * 0.8, y - r * 0.05)], col)
    c.rect((x - r * 0.55, y - r * 0.1, x + r * 0.55, y + r * 0.75), fill=col)


def _nav_back(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x + r * 0.5, y - r * 0.65), (x - r * 0.55, y), (x + r * 0.5, y + r * 0.65), (x + r * 0.5, y - r * 0.65)], col, w)


def _recents(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.6, y - r * 0.6, x + r * 0.6, y + r * 0.6), outline=col, width=w, radius=r * 0.12)


def _info(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x, y, r * 0.8, outline=col, width=w)
    c.line([(x, y - r * 0.05), (x, y + r * 0.45)], col, w)
    c.circle(x, y - r * 0.35, max(1.5, r * 0.09), fill=col)


def _bluetooth(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.45, y - r * 0.4), (x + r * 0.4, y + r * 0.4), (x, y + r * 0.8), (x, y - r * 0.8), (x + r * 0.4, y - r * 0.4), (x - r * 0.45, y + r * 0.4)], col, w)


def _airplane(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x, y - r * 0.85), (x + r * 0.12, y - r * 0.2), (x + r * 0.8, y + r * 0.2), (x + r * 0.12, y + r * 0.05), (x + r * 0.1, y + r * 0.55),
               (x + r * 0.3, y + r * 0.8), (x - r * 0.3, y + r * 0.8), (x - r * 0.1, y + r * 0.55), (x - r * 0.12, y + r * 0.05),
               (x - r * 0.8, y + r * 0.2), (x - r * 0.12, y - r * 0.2)], col)


def _brightness(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x, y, r * 0.35, fill=col)
    for i in range(8):
        a = i * math.pi / 4
        c.line([(x + r * 0.55 * math.cos(a), y + r * 0.55 * math.sin(a)), (x + r * 0.8 * math.cos(a), y + r * 0.8 * math.sin(a))], col, w)


def _moon(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.draw.chord(c._box((x - r * 0.7, y - r * 0.7, x + r * 0.7, y + r * 0.7)), 60, 300, fill=col)


def _image(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.75, y - r * 0.6, x + r * 0.75, y + r * 0.6), outline=col, width=w, radius=r * 0.1)
    c.polygon([(x - r * 0.6, y + r * 0.45), (x - r * 0.2, y - r * 0.05), (x + r * 0.1, y + r * 0.25), (x + r * 0.3, y + r * 0.05), (x + r * 0.6, y + r * 0.45)], col)


def _label(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.polygon([(x - r * 0.75, y - r * 0.5), (x + r * 0.35, y - r * 0.5), (x + r * 0.8, y), (x + r * 0.35, y + r * 0.5), (x - r * 0.75, y + r * 0.5)], col)


def _note(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.6, y - r * 0.75, x + r * 0.6, y + r * 0.75), outline=col, width=w, radius=r * 0.1)
    for dy in (-0.35, 0, 0.35):
        c.line([(x - r * 0.35, y + dy * r), (x + r * 0.35, y + dy * r)], col, max(1, w - 1))


def _list(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    for dy in (-0.5, 0, 0.5):
        c.circle(x - r * 0.6, y + dy * r, r * 0.1, fill=col)
        c.line([(x - r * 0.3, y + dy * r), (x + r * 0.75, y + dy * r)], col, w)


def _phone(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.rect((x - r * 0.45, y - r * 0.8, x + r * 0.45, y + r * 0.8), outline=col, width=w, radius=r * 0.15)
    c.line([(x - r * 0.12, y + r * 0.55), (x + r * 0.12, y + r * 0.55)], col, w)


def _money(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.circle(x, y, r * 0.8, outline=col, width=w)
    c.text_in((x - r, y - r, x + r, y + r), "$", max(6, int(r * 1.1)), col, "bold", "center")


def _recipe(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.draw.chord(c._box((x - r * 0.8, y - r * 0.7, x + r * 0.8, y + r * 0.9)), 0, 180, fill=col)
    c.line([(x - r * 0.9, y + r * 0.1), (x + r * 0.9, y + r * 0.1)], col, w)


def _undo(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.arc((x - r * 0.6, y - r * 0.5, x + r * 0.7, y + r * 0.7), 180, 330, col, w)
    c.polygon([(x - r * 0.85, y - r * 0.1), (x - r * 0.35, y - r * 0.15), (x - r * 0.6, y + r * 0.35)], col)


def _download(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x, y - r * 0.7), (x, y + r * 0.3)], col, w)
    c.line([(x - r * 0.4, y - r * 0.1), (x, y + r * 0.3), (x + r * 0.4, y - r * 0.1)], col, w)
    c.line([(x - r * 0.6, y + r * 0.7), (x + r * 0.6, y + r * 0.7)], col, w)


def _minus(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.7, y), (x + r * 0.7, y)], col, w)


def _skip(direction: int) -> IconPainter:
    def paint(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
        d = direction
        c.polygon([(x - d * r * 0.55, y - r * 0.6), (x + d * r * 0.35, y), (x - d * r * 0.55, y + r * 0.6)], col)
        c.rect((min(x + d * r * 0.4, x + d * r * 0.6), y - r * 0.6, max(x + d * r * 0.4, x + d * r * 0.6), y + r * 0.6), fill=col)

    return paint


def _shuffle(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.75, y - r * 0.5), (x - r * 0.2, y - r * 0.5), (x + r * 0.3, y + r * 0.5), (x + r * 0.75, y + r * 0.5)], col, w)
    c.line([(x - r * 0.75, y + r * 0.5), (x - r * 0.2, y + r * 0.5), (x + r * 0.3, y - r * 0.5), (x + r * 0.75, y - r * 0.5)], col, w)
    for dy in (-0.5, 0.5):
        c.polygon([(x + r * 0.85, y + dy * r), (x + r * 0.55, y + dy * r - r * 0.22), (x + r * 0.55, y + dy * r + r * 0.22)], col)


def _repeat(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    c.line([(x - r * 0.7, y + r * 0.1), (x - r * 0.7, y - r * 0.4), (x + r * 0.6, y - r * 0.4)], col, w)
    c.line([(x + r * 0.7, y - r * 0.1), (x + r * 0.7, y + r * 0.4), (x - r * 0.6, y + r * 0.4)], col, w)
    c.polygon([(x + r * 0.85, y - r * 0.4), (x + r * 0.5, y - r * 0.65), (x + r * 0.5, y - r * 0.15)], col)
    c.polygon([(x - r * 0.85, y + r * 0.4), (x - r * 0.5, y + r * 0.15), (x - r * 0.5, y + r * 0.65)], col)


def _add_cart(c: Canvas, x: int, y: int, r: float, col: RGB, w: int) -> None:
    _cart(c, x, y + round(r * 0.1), r * 0.9, col, w)
    c.line([(x + r * 0.2, y - r * 0.85), (x + r * 0.2, y - r * 0.35)], col, w)
    c.line([(x - r * 0.05, y - r * 0.6), (x + r * 0.45, y - r * 0.6)], col, w)


ICONS: dict[str, IconPainter] = {
    "add": _plus, "back": _back, "forward": _forward, "menu": _menu, "more_vert": _more_vert,
    "search": _search, "close": _close, "check": _check, "delete": _delete, "edit": _edit,
    "star": _star(True), "star_border": _star(False), "settings": _settings, "person": _person,
    "calendar": _calendar, "alarm": _alarm, "timer": _timer, "message": _message, "send": _send,
    "folder": _folder, "file": _file, "cart": _cart, "music": _music, "play": _play, "pause": _pause,
    "share": _share, "sort": _sort, "filter": _filter, "wifi": _wifi, "battery": _battery,
    "signal": _signal, "nav_home": _home, "home": _house, "nav_back": _nav_back, "nav_recents": _recents,
    "info": _info, "bluetooth": _bluetooth, "airplane": _airplane, "brightness": _brightness,
    "dark_mode": _moon, "image": _image, "label": _label, "note": _note, "list": _list,
    "phone": _phone, "money": _money, "recipe": _recipe, "undo": _undo, "download": _download,
    "chevron_left": _chevron(-1, 0), "chevron_right": _chevron(1, 0),
    "expand_more": _chevron(0, 1), "expand_less": _chevron(0, -1),
    "remove": _minus, "skip_previous": _skip(-1), "skip_next": _skip(1), "shuffle": _shuffle,
    "repeat": _repeat, "add_cart": _add_cart,
}
