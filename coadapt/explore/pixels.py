"""Screen identity from screenshots alone, for when the UI tree is missing or stale.

Every screenshot is cropped to the app's area (the status bar, the top 3 % of the height, and
the navigation bar, the bottom 6 %, are cut as fractions so any resolution works) and scaled to
a fixed working size. From that a `PixelSignature` keeps:

  * a 64-bit perceptual hash (DCT of a 32x32 grey thumbnail, low frequencies against their median),
    a cheap near-duplicate test;
  * a grey thumbnail (a quarter of the 720 px width), compared pixel by pixel for "did anything
    visible change": typed text and a toggled switch move many of its pixels, a caret does not;
  * a *surface map*: the colour image with text removed (a median filter wider than a glyph
    stroke) and scaled to cells of ~2.5 % of the width. It keeps what a screen is made of (bars,
    cards, scrims, drawers, sheets, dialogs, toasts, buttons, avatars) and drops what a list
    says. It is compared with a vertical tolerance of about half a list row: a cell counts as
    different only when no cell of the same column within that reach has its colour, so a list
    scrolled by any amount still matches itself while a menu, a drawer, a dialog's scrim or a
    snackbar, which bring colours that were not there, do not;
  * the position of an on-screen keyboard (rows crossed by many long vertical edges, the sides
    of key caps), since a keyboard that opens or closes does not make another screen: both images
    are compared above it, and when only one has it, the other is also matched as if its window
    had been resized to end at the keyboard (content anchored to the bottom moves up).

`same_screen` also compares the top chrome band (the toolbar: title, navigation and action
icons) closely, text included, because a list and an item's page often share every colour and
differ only there. `changed` is the fine test: enough thumbnail pixels differ clearly, not
counting a lone sliver a caret wide. `PixelIndex` gives screens stable ids by matching new
signatures against a few kept per screen.

On seeded random walks through the simulated apps (taps, typing, back, scrolls, swipes),
`same_screen` agrees with `screens.screen_facts(...).key` on about 99 % of transitions and
`changed` with its `fine_key` on about 97 %. The misses are mostly a focused text field (its
outline and caret change; the tree's fine key ignores focus), toasts (part of the tree's key,
small in pixels) and a form the keyboard shortens (fields leave the tree's key).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
from PIL import Image

STATUS_FRACTION = 0.03
"""Share of the height taken by the status bar (48 of 1600 px)."""
NAV_FRACTION = 0.06
"""Share of the height taken by the navigation bar (96 of 1600 px)."""
WORK_SIZE = (180, 360)
"""(width, height) of the working grey thumbnail of the app area."""
SURFACE_SIZE = (36, 72)
"""(width, height) in cells of the surface map."""
BAND_FRACTION = 0.085
"""Height of the top chrome band (the toolbar), as a share of the app area's height."""

_PIXEL_DELTA = 24
"""Grey levels by which a thumbnail pixel must change to count as changed."""
_CARET_HEIGHT = 0.045
"""Tallest sliver of change taken for a caret, as a share of the app area's height."""
_SURFACE_DELTA = 14
"""Colour levels (any channel) by which a surface cell must differ from its neighbourhood."""
_SURFACE_REACH = 0.045
"""Vertical tolerance of the surface comparison, as a share of the app area's height."""
_SURFACE_LIMIT = 0.012
"""Share of surface cells that may differ on the same screen (a switch, a chip, a badge)."""
_BAND_LIMIT = 1.5
"""Mean grey difference of the toolbar band's thumbnails allowed on the same screen."""
_KEY_EDGE = 0.04
"""Shortest key-cap side counted, as a share of the app area's height (glyphs are shorter)."""
_KEY_EDGES = 12
"""Long vertical edges a row needs to be a row of keys (ten keys make about twenty)."""
_KEYBOARD_MARGIN = 0.07
"""Cut this much (share of height) above the first row of keys: padding and a suggestion strip."""


@dataclass(frozen=True, eq=False)
class PixelSignature:
    """What one screenshot says about the screen it shows (see the module docstring)."""

    phash: int
    """64-bit DCT perceptual hash of the app area."""
    thumb: np.ndarray = field(repr=False)
    """Grey thumbnail of the app area, WORK_SIZE, uint8, read-only."""
    surface: np.ndarray = field(repr=False)
    """Text-free colour map of the app area, SURFACE_SIZE cells x RGB, int16, read-only."""
    keyboard_top: float = 1.0
    """Where an on-screen keyboard begins, as a share of the app area's height (1.0: none)."""


def _app_area(image: Image.Image | np.ndarray) -> np.ndarray:
    """The RGB pixels between the status bar and the navigation bar."""
    a = np.asarray(image.convert("RGB") if isinstance(image, Image.Image) else image)
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=2)
    a = a[..., :3]
    h = a.shape[0]
    top, bottom = int(round(h * STATUS_FRACTION)), h - int(round(h * NAV_FRACTION))
    return np.ascontiguousarray(a[top:bottom])


def _phash(grey: np.ndarray) -> int:
    """64-bit pHash: the 8x8 lowest DCT frequencies of a 32x32 thumbnail against their median."""
    small = cv2.resize(grey, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32)
    low = cv2.dct(small)[:8, :8].flatten()
    bits = low > np.median(low[1:])
    return int(sum(1 << i for i, b in enumerate(bits) if b))


def _keyboard_top(grey: np.ndarray) -> float:
    """Where an on-screen keyboard's cut lies (share of height), 1.0 when there is none."""
    # a keyboard is a bottom band whose rows are crossed by many long vertical edges: the sides
    # of key caps (an opening with a tall vertical kernel drops glyph strokes, which are short)
    h = grey.shape[0]
    start = int(h * 0.4)
    dx = (np.abs(np.diff(grey[start:].astype(np.int16), axis=1)) > 6).astype(np.uint8)
    tall = max(3, int(round(h * _KEY_EDGE)))
    edges = cv2.morphologyEx(dx, cv2.MORPH_OPEN, np.ones((tall, 1), np.uint8))
    key_rows = np.count_nonzero(edges, axis=1) >= _KEY_EDGES
    rows = np.flatnonzero(key_rows)
    if rows.size < h * 0.1:
        return 1.0
    first = int(rows[0])
    if key_rows[first:].mean() < 0.5 or (len(key_rows) - first) < h * 0.15:
        return 1.0
    return max(0.0, (start + first) / h - _KEYBOARD_MARGIN)


def _freeze(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def pixel_signature(image: Image.Image | np.ndarray) -> PixelSignature:
    """The signature of one screenshot (a PIL image or an RGB array)."""
    area = _app_area(image)
    colour = cv2.resize(area, WORK_SIZE, interpolation=cv2.INTER_AREA)
    grey = cv2.cvtColor(colour, cv2.COLOR_RGB2GRAY)
    plain = cv2.medianBlur(colour, 9)
    surface = cv2.resize(plain, SURFACE_SIZE, interpolation=cv2.INTER_AREA)
    kb = _keyboard_top(grey)
    return PixelSignature(_phash(grey), _freeze(grey), _freeze(surface.astype(np.int16)), kb)


def _cut(a: PixelSignature, b: PixelSignature) -> float:
    return min(a.keyboard_top, b.keyboard_top)


def pixel_change(a: PixelSignature, b: PixelSignature) -> float:
    """Share of the app area (above any keyboard) that changed clearly, caret-like slivers left out."""
    rows = int(WORK_SIZE[1] * _cut(a, b))
    if rows <= 0:
        return 0.0
    mask = (cv2.absdiff(a.thumb[:rows], b.thumb[:rows]) > _PIXEL_DELTA).astype(np.uint8)
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    stats = stats[1:n]
    caret = (stats[:, cv2.CC_STAT_WIDTH] <= 2) & (stats[:, cv2.CC_STAT_HEIGHT] <= WORK_SIZE[1] * _CARET_HEIGHT)
    return float(stats[~caret, cv2.CC_STAT_AREA].sum()) / mask.size


def changed(a: PixelSignature, b: PixelSignature, threshold: float = 0.0001) -> bool:
    """Did anything visible change: more than `threshold` of the app area changed clearly."""
    return pixel_change(a, b) > threshold


def _bounds(surface: np.ndarray, reach: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the lowest and highest level of each channel within `reach` rows of its column."""
    kernel = np.ones((2 * reach + 1, 1), np.uint8)
    f = surface.astype(np.float32)
    return cv2.erode(f, kernel), cv2.dilate(f, kernel)


def _misses(cells: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Cells whose colour lies clearly outside the other map's [lo, hi] in some channel."""
    return ((cells < lo - _SURFACE_DELTA) | (cells > hi + _SURFACE_DELTA)).any(axis=2)


def _resized_change(k: np.ndarray, o: np.ndarray, shift: int, reach: int) -> float:
    """Surface change of `k` (above a keyboard) and `o` (none), cells matched in place or `shift` rows lower in `o`."""
    r, rows = k.shape[0], o.shape[0]
    n = max(0, min(r, rows - shift))
    klo, khi = _bounds(k, reach)
    olo, ohi = _bounds(o, reach)
    mk = _misses(k, olo[:r], ohi[:r])
    mk[:n] &= _misses(k[:n], olo[shift:shift + n], ohi[shift:shift + n])
    mo = np.ones(o.shape[:2], bool)
    mo[:r] = _misses(o[:r], klo, khi)
    low = np.ones(o.shape[:2], bool)
    low[shift:shift + n] = _misses(o[shift:shift + n], klo[:n], khi[:n])
    seen = np.zeros(rows, bool)
    seen[:r] = True
    seen[shift:shift + n] = True
    return float(mk.mean() + (mo & low)[seen].mean()) / 2


def surface_change(a: PixelSignature, b: PixelSignature) -> float:
    """Share of surface cells (above any keyboard) whose colour the other screen lacks nearby."""
    rows = SURFACE_SIZE[1]
    reach = max(1, int(round(rows * _SURFACE_REACH)))
    if (a.keyboard_top < 1.0) == (b.keyboard_top < 1.0):
        r = int(rows * _cut(a, b))
        if r <= 0:
            return 0.0
        sa, sb = a.surface[:r], b.surface[:r]
        # both directions: what `a` shows that `b` lacks, and what `b` shows that `a` lacks
        return float(_misses(sa, *_bounds(sb, reach)).mean() + _misses(sb, *_bounds(sa, reach)).mean()) / 2
    k, o = (a, b) if a.keyboard_top < 1.0 else (b, a)
    r = int(rows * k.keyboard_top)
    if r <= 0:
        return 0.0
    # the window may have been resized to end at the keyboard, moving what is anchored to its
    # bottom up by the keyboard's height; that top lies between the cut and the first row of keys
    shifts = range(int(rows * (1 - k.keyboard_top - _KEYBOARD_MARGIN)), int(rows * (1 - k.keyboard_top)) + 1)
    return min(_resized_change(k.surface[:r], o.surface, s, reach) for s in shifts)


def band_change(a: PixelSignature, b: PixelSignature) -> float:
    """Mean grey difference of the two toolbar bands, as coarse 8-pixel-row thumbnails."""
    rows = max(1, int(WORK_SIZE[1] * BAND_FRACTION))
    size = (WORK_SIZE[0] // 2, 8)
    x = cv2.resize(a.thumb[:rows], size, interpolation=cv2.INTER_AREA)
    y = cv2.resize(b.thumb[:rows], size, interpolation=cv2.INTER_AREA)
    return float(cv2.absdiff(x, y).mean())


def screen_distance(a: PixelSignature, b: PixelSignature) -> float:
    """How far apart two screens are; below 1.0 they are the same screen."""
    if a.phash == b.phash and not changed(a, b):
        return 0.0
    return max(band_change(a, b) / _BAND_LIMIT, surface_change(a, b) / _SURFACE_LIMIT)


def same_screen(a: PixelSignature, b: PixelSignature) -> bool:
    """Coarse identity: the same screen, whatever its list shows or how far it is scrolled."""
    return screen_distance(a, b) < 1.0


class PixelIndex:
    """Screens seen so far, each with a stable id, matched by `same_screen`."""

    def __init__(self, exemplars: int = 8):
        self.exemplars = exemplars
        """Signatures kept per screen (later visits that look different enough are added)."""
        self._screens: list[list[PixelSignature]] = []

    def __len__(self) -> int:
        return len(self._screens)

    def lookup(self, sig: PixelSignature) -> int | None:
        """The id of the closest known screen that `sig` matches, or None."""
        best, best_d = None, 1.0
        for i, sigs in enumerate(self._screens):
            d = min(screen_distance(sig, s) for s in sigs)
            if d < best_d:
                best, best_d = i, d
        return best

    def lookup_or_add(self, sig: PixelSignature) -> tuple[int, bool]:
        """(screen id, whether it is new): a known screen's id, else a new one for `sig`."""
        i = self.lookup(sig)
        if i is None:
            self._screens.append([sig])
            return len(self._screens) - 1, True
        sigs = self._screens[i]
        if len(sigs) < self.exemplars and all(changed(sig, s) for s in sigs):
            sigs.append(sig)
        return i, False
