"""UI hierarchies in the uiautomator dump XML format: parse, query and write.

Two dialects exist in the wild and both are read here:
  * stock `uiautomator dump`: one window (the active one), one line, the classic attribute set;
  * uiautomator2's `dump_hierarchy()`: several windows (status bar, app, dialogs, keyboard),
    indented, with `visible-to-user`, `drawing-order`, `hint` and `display-id`.
Bounds are physical screen pixels, `[left,top][right,bottom]`, right/bottom exclusive.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Iterator, Literal, Sequence
from xml.sax.saxutils import quoteattr

from .errors import UiTreeError

XmlDialect = Literal["stock", "u2"]

_BOUNDS_RE = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
_EDIT_CLASSES = ("EditText", "AutoCompleteTextView", "SearchView$SearchAutoComplete")


@dataclass(frozen=True, slots=True)
class Bounds:
    """A screen rectangle in physical pixels; right and bottom are exclusive."""

    left: int
    top: int
    right: int
    bottom: int

    @property
    def width(self) -> int:
        return max(0, self.right - self.left)

    @property
    def height(self) -> int:
        return max(0, self.bottom - self.top)

    @property
    def center(self) -> tuple[int, int]:
        """The pixel a tap on this rectangle lands on."""
        return (self.left + self.right) // 2, (self.top + self.bottom) // 2

    @property
    def area(self) -> int:
        return self.width * self.height

    def contains(self, x: int, y: int) -> bool:
        return self.left <= x < self.right and self.top <= y < self.bottom

    def __str__(self) -> str:
        return f"[{self.left},{self.top}][{self.right},{self.bottom}]"

    @classmethod
    def parse(cls, text: str) -> "Bounds":
        m = _BOUNDS_RE.fullmatch(text.strip())
        if not m:
            raise UiTreeError(f"bad bounds attribute {text!r}; expected [l,t][r,b]")
        return cls(*(int(g) for g in m.groups()))


@dataclass(frozen=True, slots=True)
class UiElement:
    """One node of a UI hierarchy, with the attributes uiautomator reports.

    `index` is the node's position in document (depth-first) order of the whole dump, `parent`
    the parent's `index` (None for a window root), `window` the number of its window root.
    """

    index: int
    text: str
    content_desc: str
    resource_id: str
    class_name: str
    package: str
    bounds: Bounds
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    long_clickable: bool = False
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    enabled: bool = True
    selected: bool = False
    password: bool = False
    visible: bool = True
    hint: str = ""
    naf: bool = False
    drawing_order: int | None = None
    display_id: int | None = None
    sibling_index: int = 0
    depth: int = 0
    parent: int | None = None
    window: int = 0

    @property
    def editable(self) -> bool:
        """True for text fields (the dump has no such attribute; the class tells)."""
        return self.class_name.endswith(_EDIT_CLASSES)

    @property
    def interactive(self) -> bool:
        return self.clickable or self.long_clickable or self.checkable or self.scrollable or self.editable

    @property
    def label(self) -> str:
        """What a person would call this element: its text, else description, else hint."""
        return self.text or self.content_desc or self.hint

    @property
    def short_class(self) -> str:
        return self.class_name.rsplit(".", 1)[-1]

    @property
    def short_id(self) -> str:
        """The resource id without its package: "save" for "com.example.notes:id/save"."""
        return self.resource_id.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class UiTree:
    """A parsed hierarchy: every node in document order plus the tree links."""

    elements: tuple[UiElement, ...]
    children: tuple[tuple[int, ...], ...]
    rotation: int = 0

    @property
    def roots(self) -> tuple[UiElement, ...]:
        return tuple(e for e in self.elements if e.parent is None)

    @property
    def screen_bounds(self) -> Bounds:
        """The union of the window roots' bounds (the screen, when a full-screen window exists)."""
        roots = self.roots
        if not roots:
            return Bounds(0, 0, 0, 0)
        return Bounds(
            min(r.bounds.left for r in roots),
            min(r.bounds.top for r in roots),
            max(r.bounds.right for r in roots),
            max(r.bounds.bottom for r in roots),
        )

    @property
    def packages(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for e in self.elements:
            if e.package:
                seen.setdefault(e.package)
        return tuple(seen)

    def __len__(self) -> int:
        return len(self.elements)

    def __iter__(self) -> Iterator[UiElement]:
        return iter(self.elements)

    def child_elements(self, element: UiElement) -> tuple[UiElement, ...]:
        return tuple(self.elements[i] for i in self.children[element.index])

    def descendants(self, element: UiElement) -> Iterator[UiElement]:
        stack = list(reversed(self.children[element.index]))
        while stack:
            i = stack.pop()
            yield self.elements[i]
            stack.extend(reversed(self.children[i]))

    def find(
        self,
        *,
        text: str | None = None,
        content_desc: str | None = None,
        resource_id: str | None = None,
        class_name: str | None = None,
    ) -> tuple[UiElement, ...]:
        """Elements whose given attributes equal the given values exactly."""
        out = []
        for e in self.elements:
            if text is not None and e.text != text:
                continue
            if content_desc is not None and e.content_desc != content_desc:
                continue
            if resource_id is not None and e.resource_id != resource_id:
                continue
            if class_name is not None and e.class_name != class_name:
                continue
            out.append(e)
        return tuple(out)

    def texts(self) -> tuple[str, ...]:
        """Every non-empty text and content description, in document order."""
        return tuple(t for e in self.elements for t in (e.text, e.content_desc) if t)

    def structure_key(self) -> str:
        """A string fixed by the layout's structure (classes, ids, nesting), not its texts.

        Screens that differ only in what their lists or fields contain share the key.
        """
        parts = []
        for e in self.elements:
            if e.visible:
                parts.append(f"{e.depth}:{e.short_class}:{e.short_id}")
        return "|".join(parts)

    def to_xml(self, dialect: XmlDialect = "u2") -> str:
        """Serialise back to the uiautomator dump format of `dialect`."""
        return write_xml(self, dialect)


# --------------------------------------------------------------------------- parsing


def _clean_dump(raw: str | bytes) -> str:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    text = raw.strip()
    if not text:
        raise UiTreeError("empty UI dump (the device returned nothing)")
    if "null root node" in text and "<hierarchy" not in text:
        raise UiTreeError(f"no UI to dump (null root node): {text[:120]!r}")
    if "could not get idle state" in text and "<hierarchy" not in text:
        raise UiTreeError(f"UI never went idle, dump refused: {text[:120]!r}")
    start = text.find("<?xml")
    if start < 0:
        start = text.find("<hierarchy")
    if start < 0:
        raise UiTreeError(f"not a uiautomator dump (no <hierarchy> element): {text[:120]!r}")
    end = text.rfind("</hierarchy>")
    if end >= 0:
        # `uiautomator dump /dev/tty` appends "UI hierchary dumped to: /dev/tty".
        text = text[start : end + len("</hierarchy>")]
    else:
        text = text[start:]
    return text


def _flag(attrs: dict[str, str], name: str, default: bool = False) -> bool:
    v = attrs.get(name)
    if v is None:
        return default
    return v == "true"


def _int_or_none(v: str | None) -> int | None:
    if v is None or v == "":
        return None
    try:
        return int(v)
    except ValueError:
        return None


def parse_xml(raw: str | bytes) -> UiTree:
    """Parse a uiautomator dump (either dialect) into a UiTree; raises UiTreeError."""
    text = _clean_dump(raw)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise UiTreeError(f"malformed UI dump XML: {e}") from e
    if root.tag != "hierarchy":
        raise UiTreeError(f"root element is <{root.tag}>, expected <hierarchy>")
    rotation = _int_or_none(root.get("rotation")) or 0

    elements: list[UiElement] = []
    children: list[list[int]] = []
    # Iterative DFS keeps deep real-world hierarchies clear of the recursion limit.
    stack: list[tuple[ET.Element, int | None, int, int, int]] = []
    window = 0
    for sib, top in enumerate(n for n in root if n.tag == "node"):
        stack.append((top, None, 0, sib, window))
        window += 1
    stack.reverse()
    while stack:
        node, parent, depth, sib, win = stack.pop()
        a = node.attrib
        bounds_text = a.get("bounds")
        if bounds_text is None:
            raise UiTreeError(f"node without bounds at depth {depth}: {dict(a)!r}"[:200])
        idx = len(elements)
        elements.append(
            UiElement(
                index=idx,
                text=a.get("text", ""),
                content_desc=a.get("content-desc", ""),
                resource_id=a.get("resource-id", ""),
                class_name=a.get("class", ""),
                package=a.get("package", ""),
                bounds=Bounds.parse(bounds_text),
                checkable=_flag(a, "checkable"),
                checked=_flag(a, "checked"),
                clickable=_flag(a, "clickable"),
                long_clickable=_flag(a, "long-clickable"),
                focusable=_flag(a, "focusable"),
                focused=_flag(a, "focused"),
                scrollable=_flag(a, "scrollable"),
                enabled=_flag(a, "enabled", True),
                selected=_flag(a, "selected"),
                password=_flag(a, "password"),
                visible=_flag(a, "visible-to-user", True),
                hint=a.get("hint", ""),
                naf=_flag(a, "NAF"),
                drawing_order=_int_or_none(a.get("drawing-order")),
                display_id=_int_or_none(a.get("display-id")),
                sibling_index=_int_or_none(a.get("index")) or 0,
                depth=depth,
                parent=parent,
                window=win,
            )
        )
        children.append([])
        if parent is not None:
            children[parent].append(idx)
        kids = [k for k in node if k.tag == "node"]
        for k_sib, kid in reversed(list(enumerate(kids))):
            stack.append((kid, idx, depth + 1, k_sib, win))
    if not elements:
        raise UiTreeError("UI dump has a <hierarchy> but no nodes")
    return UiTree(elements=tuple(elements), children=tuple(tuple(c) for c in children), rotation=rotation)


def parse_file(path: str) -> UiTree:
    """Parse a dump file; raises UiTreeError (also for a missing file)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UiTreeError(f"cannot read UI dump {path!r}: {e.strerror}") from e
    return parse_xml(data)


# --------------------------------------------------------------------------- writing


def _b(v: bool) -> str:
    return "true" if v else "false"


# Characters XML 1.0 forbids (C0 controls but tab/LF/CR, lone surrogates, U+FFFE/U+FFFF).
_XML_FORBIDDEN_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(value: str) -> str:
    """`value` with each character XML 1.0 forbids replaced by '.', as uiautomator's
    AccessibilityNodeInfoDumper does (typed control characters must not make a dump unparseable)."""
    return _XML_FORBIDDEN_RE.sub(".", value)


def _attr(value: str) -> str:
    return quoteattr(xml_safe(value))


def element_attrs(e: UiElement, dialect: XmlDialect) -> str:
    """The attribute string of one <node>, in the order the dialect's dumps use."""
    parts = [
        f'index="{e.sibling_index}"',
        f"text={_attr(e.text)}",
        f"resource-id={_attr(e.resource_id)}",
        f"class={_attr(e.class_name)}",
        f"package={_attr(e.package)}",
        f"content-desc={_attr(e.content_desc)}",
        f'checkable="{_b(e.checkable)}"',
        f'checked="{_b(e.checked)}"',
        f'clickable="{_b(e.clickable)}"',
        f'enabled="{_b(e.enabled)}"',
        f'focusable="{_b(e.focusable)}"',
        f'focused="{_b(e.focused)}"',
        f'scrollable="{_b(e.scrollable)}"',
        f'long-clickable="{_b(e.long_clickable)}"',
        f'password="{_b(e.password)}"',
        f'selected="{_b(e.selected)}"',
    ]
    if dialect == "u2":
        parts.append(f'visible-to-user="{_b(e.visible)}"')
    parts.append(f'bounds="{e.bounds}"')
    # Newer Android's stock dumps also carry drawing-order and hint; keep them when known.
    if dialect == "u2" or e.drawing_order is not None:
        parts.append(f'drawing-order="{e.drawing_order or 0}"')
        parts.append(f"hint={_attr(e.hint)}")
    if dialect == "u2":
        parts.append(f'display-id="{e.display_id or 0}"')
    if e.naf:
        parts.append('NAF="true"')
    return " ".join(parts)


def write_xml(tree: UiTree, dialect: XmlDialect = "u2", windows: Sequence[int] | None = None) -> str:
    """Serialise `tree` (optionally only some window numbers) as a uiautomator dump.

    "stock" is one line, as `uiautomator dump` writes it; "u2" is indented, as uiautomator2's
    `dump_hierarchy()` returns it.
    """
    out: list[str] = []
    pretty = dialect == "u2"
    header = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
    out.append(header + ("\n" if pretty else ""))
    out.append(f'<hierarchy rotation="{tree.rotation}">' + ("\n" if pretty else ""))

    def emit(i: int, level: int) -> None:
        e = tree.elements[i]
        pad = "  " * level if pretty else ""
        nl = "\n" if pretty else ""
        kids = tree.children[i]
        if kids:
            out.append(f"{pad}<node {element_attrs(e, dialect)}>{nl}")
            for k in kids:
                emit(k, level + 1)
            out.append(f"{pad}</node>{nl}")
        else:
            out.append(f"{pad}<node {element_attrs(e, dialect)} />{nl}")

    for e in tree.elements:
        if e.parent is None and (windows is None or e.window in windows):
            emit(e.index, 1)
    out.append("</hierarchy>")
    return "".join(out)
