"""What the agent sees at one step: screenshot, UI tree and the indexed elements."""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image

from .uitree import UiElement, UiTree

# Windows of the system UI are left out of the indexed list: the agent uses back/home actions.
SYSTEM_PACKAGES = frozenset({"com.android.systemui", "com.google.android.inputmethod.latin"})

PNG_INFO = "coadapt_png"
"""`Image.info` key of a screenshot held as PNG bytes (see `png_screenshot`)."""


def png_screenshot(png: bytes) -> Image.Image:
    """A screenshot held as its PNG bytes, which PIL decodes only when pixels are asked for (a sim
    screen is ~3.4 MB decoded, ~60 KB as PNG; a round of attempts holds hundreds)."""
    image = Image.open(io.BytesIO(png))
    image.info[PNG_INFO] = png
    return image


def indexed_elements(tree: UiTree) -> tuple[UiElement, ...]:
    """The elements an agent may refer to by index, in document order.

    Kept: visible, on-screen elements that carry a label (text, description, hint) or can be
    acted on (editable, checkable, scrollable). A clickable container is kept only when nothing
    inside it has a label; otherwise its labelled children stand for it (a tap on a child's
    centre reaches the container, as on Android).
    """
    labelled_below: set[int] = set()
    for e in reversed(tree.elements):
        if e.parent is not None and (e.label or e.index in labelled_below):
            labelled_below.add(e.parent)
    out = []
    for e in tree.elements:
        if not e.visible or e.bounds.width <= 1 or e.bounds.height <= 1 or e.package in SYSTEM_PACKAGES:
            continue
        if e.label or e.editable or e.checkable or e.scrollable:
            out.append(e)
        elif (e.clickable or e.long_clickable) and e.index not in labelled_below:
            out.append(e)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Observation:
    """One observation. `elements[i]` is what an action's `index=i` means for this step."""

    screenshot: Image.Image
    """RGB image in physical pixels."""
    tree: UiTree
    """The full UI hierarchy."""
    elements: tuple[UiElement, ...]
    """Indexed elements (see `indexed_elements`)."""
    package: str
    """Package of the app in the foreground."""
    step: int
    """Number of actions taken in the episode before this observation."""

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the screen in pixels."""
        return self.screenshot.size

    @classmethod
    def build(cls, screenshot: Image.Image, tree: UiTree, package: str, step: int) -> "Observation":
        return cls(screenshot, tree, indexed_elements(tree), package, step)

    def describe_elements(self, limit: int | None = None) -> list[str]:
        """One line per indexed element, e.g. `[3] Button "Save" clickable`."""
        lines = []
        for i, e in enumerate(self.elements[:limit]):
            label = e.text or e.content_desc or (f"hint: {e.hint}" if e.hint else "")
            flags = [f for f, on in (("clickable", e.clickable), ("editable", e.editable), ("scrollable", e.scrollable),
                                     ("checked" if e.checked else "unchecked", e.checkable), ("focused", e.focused),
                                     ("selected", e.selected), ("disabled", not e.enabled)) if on]
            lines.append(f"[{i}] {e.short_class} {label!r}" + (f" ({', '.join(flags)})" if flags else ""))
        return lines
