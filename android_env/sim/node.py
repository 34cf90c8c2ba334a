"""Laid-out views of the simulated phone: what is drawn, what is dumped and what takes touches.

One `Node` tree per window is produced each frame from the apps' widget descriptions. The same
nodes are painted into the screenshot, written as the uiautomator hierarchy and hit-tested for
input, so bounds in the dump always match what is drawn and what a tap reaches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..uitree import Bounds, UiElement, UiTree
from .canvas import RGB, Canvas

Box = tuple[int, int, int, int]


@dataclass(eq=False, slots=True)
class EditBinding:
    """Connects a text-field node to the app state that holds its text."""

    field_id: str
    value: str
    on_change: Callable[[str], None]
    on_submit: Callable[[], None] | None = None
    multiline: bool = False


@dataclass(eq=False, slots=True)
class ScrollBinding:
    """Connects a scroll-container node to its saved offset (pixels from the top)."""

    key: str
    offset: int
    max_offset: int
    set_offset: Callable[[int], None]
    horizontal: bool = False


@dataclass(eq=False, slots=True)
class Node:
    """A laid-out view: an Android class name, pixel bounds, accessibility flags and handlers."""

    cls: str
    box: Box
    text: str = ""
    desc: str = ""
    rid: str = ""
    hint: str = ""
    clickable: bool = False
    long_clickable: bool = False
    checkable: bool = False
    checked: bool = False
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    enabled: bool = True
    selected: bool = False
    password: bool = False
    package: str = ""
    children: list["Node"] = field(default_factory=list)
    paint: Callable[[Canvas], None] | None = None
    on_click: Callable[[], None] | None = None
    on_long_click: Callable[[], None] | None = None
    on_swipe: Callable[[str], bool] | None = None
    on_tap_at: Callable[[int, int], None] | None = None
    edit: EditBinding | None = None
    scroll: ScrollBinding | None = None
    clip_bg: RGB | None = None

    @property
    def height(self) -> int:
        return self.box[3] - self.box[1]

    @property
    def width(self) -> int:
        return self.box[2] - self.box[0]

    def add(self, *nodes: "Node") -> "Node":
        self.children.extend(nodes)
        return self

    def walk(self) -> Iterator["Node"]:
        stack = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(n.children))

    def takes_touch(self) -> bool:
        return self.clickable or self.on_click is not None or self.edit is not None or self.on_tap_at is not None


def _intersect(a: Box, b: Box) -> Box:
    return max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])


def _inside(x: int, y: int, b: Box) -> bool:
    return b[0] <= x < b[2] and b[1] <= y < b[3]


@dataclass(eq=False, slots=True)
class Window:
    """One window of the screen (status bar, app, dialog, keyboard, navigation bar)."""

    root: Node
    package: str
    modal: bool = False
    on_outside: Callable[[], None] | None = None  # a touch outside a modal window
    touchable: bool = True


# --------------------------------------------------------------------------- painting


def paint(node: Node, canvas: Canvas, clip: Box | None = None) -> None:
    """Paint a node and its children. Scroll containers clip their children to their box;
    only what straddles the clip edge is drawn through a small cropped canvas."""
    box = node.box
    if clip is not None:
        if not _overlaps(box, clip):
            return
        if _covers(clip, box):
            clip = None
    if node.paint is not None:
        if clip is None:
            node.paint(canvas)
        else:
            sub = canvas.region(_intersect(box, clip))
            node.paint(sub)
            sub.paste_into(canvas)
    if node.children:
        child_clip = clip
        if node.clip_bg is not None:
            child_clip = box if clip is None else _intersect(box, clip)
        for child in node.children:
            paint(child, canvas, child_clip)


def _covers(outer: Box, inner: Box) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


# --------------------------------------------------------------------------- hit testing


def hit_path(node: Node, x: int, y: int, clip: Box | None = None) -> list[Node]:
    """The chain of nodes under (x, y), outermost first, topmost child preferred."""
    box = node.box if clip is None else _intersect(node.box, clip)
    if not _inside(x, y, box):
        return []
    child_clip = box if node.clip_bg is not None else clip
    for child in reversed(node.children):
        sub = hit_path(child, x, y, child_clip)
        if sub:
            return [node, *sub]
    return [node]


def touch_target(windows: list[Window], x: int, y: int) -> tuple[Window | None, list[Node]]:
    """Which window and node chain a touch at (x, y) reaches, as Android dispatches it.

    Windows are searched top-down; a modal window swallows touches outside itself.
    """
    for win in reversed(windows):
        if not win.touchable:
            continue
        path = hit_path(win.root, x, y)
        if path:
            return win, path
        if win.modal:
            return win, []
    return None, []


# --------------------------------------------------------------------------- dumping


def build_tree(windows: list[Window], width: int, height: int) -> UiTree:
    """The uiautomator hierarchy of the windows (u2 multi-window order), bounds clipped as
    Android reports them; nodes scrolled out of their container are left out."""
    elements: list[UiElement] = []
    children: list[list[int]] = []
    screen: Box = (0, 0, width, height)
    order = 0

    def emit(node: Node, clip: Box, parent: int | None, depth: int, sib: int, win: int, pkg: str) -> None:
        nonlocal order
        l, t, r, b = _intersect(node.box, clip)
        if (r <= l or b <= t) and parent is not None:
            return
        idx = len(elements)
        order += 1
        elements.append(
            UiElement(
                idx, node.text, node.desc,
                node.rid if (":" in node.rid or not node.rid) else f"{node.package or pkg}:id/{node.rid}",
                node.cls, node.package or pkg, Bounds(l, t, max(l, r), max(t, b)),
                node.checkable, node.checked, node.clickable or node.on_click is not None,
                node.long_clickable or node.on_long_click is not None,
                node.focusable or node.edit is not None, node.focused, node.scrollable,
                node.enabled, node.selected, node.password, True, node.hint, False,
                order, 0, sib, depth, parent, win,
            )
        )
        children.append([])
        if parent is not None:
            children[parent].append(idx)
        child_clip = (l, t, r, b) if node.clip_bg is not None else clip
        k = 0
        for child in node.children:
            before = len(elements)
            emit(child, child_clip, idx, depth + 1, k, win, pkg)
            if len(elements) > before:
                k += 1

    for w, win in enumerate(windows):
        emit(win.root, screen, None, 0, 0, w, win.package)
    return UiTree(elements=tuple(elements), children=tuple(tuple(c) for c in children))
