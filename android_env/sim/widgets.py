"""The simulated phone's widget toolkit: Material-style views that lay themselves out as Nodes.

Apps describe a screen with these views; `layout(ctx, x, y, w)` places a view at (x, y) with
width `w` pixels and returns its Node (whose box gives the height it took). Sizes in the
arguments are dp and sp, converted with the device density. Every view that a person can
act on produces a node with the class name, flags and description a real Android view has.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from .app import Route, SimApp
from .canvas import (
    DISABLED, DIVIDER, HINT, RGB, SURFACE_2, TEXT, TEXT_2, WHITE, Canvas,
    hex_rgb, mix, text_width, wrap,
)
from .node import Box, EditBinding, Node, ScrollBinding

Handler = Callable[[], None]


@dataclass(frozen=True)
class Theme:
    """An app's colours: primary (toolbar, FAB, accents) and the text drawn on it."""

    primary: RGB
    on_primary: RGB = WHITE
    container: RGB = SURFACE_2

    @classmethod
    def from_hex(cls, color: str) -> "Theme":
        p = hex_rgb(color)
        lum = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]
        return cls(primary=p, on_primary=WHITE if lum < 170 else TEXT, container=mix(p, WHITE, 0.85))


@dataclass(eq=False)
class LayoutCtx:
    """What views need while laying out one frame of one app."""

    app: SimApp
    route: Route
    density: float
    screen_w: int
    screen_h: int
    theme: Theme
    package: str

    def dp(self, v: float) -> int:
        return round(v * self.density)

    def scroll_offset(self, key: str) -> int:
        return self.route.scroll.get(key, 0)

    def scroll_setter(self, key: str) -> Callable[[int], None]:
        route = self.route

        def set_offset(v: int) -> None:
            route.scroll[key] = v

        return set_offset

    def focus_setter(self, field_id: str) -> Handler:
        route = self.route

        def focus() -> None:
            route.focus = field_id

        return focus


class View:
    """Something that can be laid out into a Node."""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        raise NotImplementedError

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        """Natural width in pixels inside a Row, or None to share the leftover width."""
        return None


# --------------------------------------------------------------------------- text

TEXT_STYLES: dict[str, tuple[int, str, RGB]] = {
    "display": (32, "regular", TEXT),
    "headline": (24, "regular", TEXT),
    "title": (20, "medium", TEXT),
    "subtitle": (16, "medium", TEXT),
    "body": (16, "regular", TEXT),
    "body2": (14, "regular", TEXT_2),
    "caption": (12, "regular", TEXT_2),
    "label": (14, "medium", TEXT),
    "overline": (12, "medium", TEXT_2),
}


def _line_h(size_px: int) -> int:
    return round(size_px * 1.45)


def _draw_lines(c: Canvas, x: int, y: int, lines: Sequence[str], size: int, color: RGB, weight: str, width: int, align: str) -> None:
    lh = _line_h(size)
    for i, line in enumerate(lines):
        ax = x if align == "left" else (x + width // 2 if align == "center" else x + width)
        c.text(ax, y + i * lh + (lh - size) // 2 - size // 8, line, size, color, weight, align, max_width=width)


@dataclass
class Text(View):
    """A TextView: one line (ellipsized) or up to `max_lines` wrapped lines."""

    text: str
    style: str = "body"
    color: str | None = None
    max_lines: int = 1
    id: str = ""
    align: str = "left"
    pad: float = 16
    vpad: float = 6
    desc: str = ""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        size_sp, weight, col = TEXT_STYLES[self.style]
        size = ctx.dp(size_sp)
        color = hex_rgb(self.color) if self.color else col
        pad, vpad = ctx.dp(self.pad), ctx.dp(self.vpad)
        inner = max(1, w - 2 * pad)
        lines = wrap(self.text, size, inner, weight) if self.max_lines > 1 else (self.text,)
        if len(lines) > self.max_lines:
            lines = lines[: self.max_lines - 1] + (" ".join(lines[self.max_lines - 1 :]),)
        h = len(lines) * _line_h(size) + 2 * vpad

        def paint(c: Canvas) -> None:
            _draw_lines(c, x + pad, y + vpad, lines, size, color, weight, inner, self.align)

        return Node("android.widget.TextView", (x, y, x + w, y + h), text=self.text, desc=self.desc, rid=self.id, paint=paint)

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        size_sp, weight, _ = TEXT_STYLES[self.style]
        return text_width(self.text, ctx.dp(size_sp), weight) + 2 * ctx.dp(self.pad)


@dataclass
class Header(View):
    """A small coloured section header ("Network", "Today")."""

    text: str

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        size = ctx.dp(14)
        h = ctx.dp(40)
        pad = ctx.dp(16)

        def paint(c: Canvas) -> None:
            c.text_in((x + pad, y + ctx.dp(12), x + w - pad, y + h), self.text, size, ctx.theme.primary, "medium")

        return Node("android.widget.TextView", (x, y, x + w, y + h), text=self.text, paint=paint)


@dataclass
class KeyValue(View):
    """A label above its value ("Amount" / "$12.50"), as detail screens show fields."""

    label: str
    value: str
    id: str = ""
    max_lines: int = 3

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        node = Node("android.widget.LinearLayout", (x, y, x + w, y))
        lab = Text(self.label, "caption", vpad=2).layout(ctx, x, y + ctx.dp(8), w)
        val = Text(self.value or "—", "body", max_lines=self.max_lines, id=self.id, vpad=2).layout(ctx, x, lab.box[3], w)
        node.box = (x, y, x + w, val.box[3] + ctx.dp(8))
        return node.add(lab, val)


@dataclass
class Spacer(View):
    height: float = 8

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        return Node("android.view.View", (x, y, x + w, y + ctx.dp(self.height)))

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return None


@dataclass
class Divider(View):
    inset: float = 0

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = max(1, ctx.dp(1))
        inset = ctx.dp(self.inset)

        def paint(c: Canvas) -> None:
            c.rect((x + inset, y, x + w, y + h), fill=DIVIDER)

        return Node("android.view.View", (x, y, x + w, y + h), paint=paint)


@dataclass
class ImageView(View):
    """A picture placeholder: a tinted rectangle with an icon (content-desc only)."""

    desc: str
    icon: str = "image"
    height: float = 160
    color: str | None = None
    id: str = ""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(self.height)
        col = hex_rgb(self.color) if self.color else ctx.theme.container
        m = ctx.dp(16)

        def paint(c: Canvas) -> None:
            c.rect((x + m, y + ctx.dp(8), x + w - m, y + h - ctx.dp(8)), fill=col, radius=ctx.dp(12))
            c.icon(self.icon, (2 * x + w) // 2, y + h // 2, ctx.dp(48), mix(col, TEXT, 0.5))

        return Node("android.widget.ImageView", (x, y, x + w, y + h), desc=self.desc, rid=self.id, paint=paint)


@dataclass
class ProgressBar(View):
    """An indeterminate circular progress indicator ("Loading…")."""

    desc: str = "Loading"
    height: float = 96

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(self.height)
        r = ctx.dp(20)

        def paint(c: Canvas) -> None:
            cx, cy = x + w // 2, y + h // 2
            c.arc((cx - r, cy - r, cx + r, cy + r), 200, 470, ctx.theme.primary, ctx.dp(4))

        return Node("android.widget.ProgressBar", (x, y, x + w, y + h), desc=self.desc, paint=paint)


# --------------------------------------------------------------------------- containers


@dataclass
class Column(View):
    """Children stacked top to bottom."""

    children: Sequence[View]
    id: str = ""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        node = Node("android.widget.LinearLayout", (x, y, x + w, y), rid=self.id)
        cy = y
        for ch in self.children:
            n = ch.layout(ctx, x, cy, w)
            node.children.append(n)
            cy = n.box[3]
        node.box = (x, y, x + w, cy)
        return node


@dataclass
class Row(View):
    """Children side by side; those without a natural width share what is left."""

    children: Sequence[View]
    id: str = ""
    pad: float = 0
    align: str = "start"

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        pad = ctx.dp(self.pad)
        widths = [ch.wrap_width(ctx) for ch in self.children]
        fixed = sum(v for v in widths if v is not None)
        flex = [i for i, v in enumerate(widths) if v is None]
        left = max(0, w - 2 * pad - fixed)
        share = left // len(flex) if flex else 0
        cx = x + pad
        if not flex and self.align == "end":
            cx = x + w - pad - fixed
        elif not flex and self.align == "center":
            cx = x + (w - fixed) // 2
        nodes = []
        for ch, cw in zip(self.children, widths):
            cw = share if cw is None else cw
            nodes.append(ch.layout(ctx, cx, y, cw))
            cx += cw
        # A child's box may start below y (buttons keep a top margin): the row ends at the lowest edge.
        h = max((n.box[3] - y for n in nodes), default=0)
        return Node("android.widget.LinearLayout", (x, y, x + w, y + h), rid=self.id, children=nodes)


@dataclass
class Card(View):
    """A rounded surface grouping children; clickable when given `on_click`."""

    children: Sequence[View]
    on_click: Handler | None = None
    on_long_click: Handler | None = None
    desc: str = ""
    id: str = ""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        m = ctx.dp(12)
        inner = Column(self.children).layout(ctx, x + m, y + m + ctx.dp(4), w - 2 * m)
        box = (x + m, y + m, x + w - m, inner.box[3] + ctx.dp(4))

        def paint(c: Canvas) -> None:
            c.rect(box, fill=ctx.theme.container, radius=ctx.dp(12))

        node = Node("android.widget.FrameLayout", box, desc=self.desc, rid=self.id, paint=paint,
                    on_click=self.on_click, on_long_click=self.on_long_click, children=[inner])
        outer = Node("android.widget.FrameLayout", (x, y, x + w, box[3] + ctx.dp(4)), children=[node])
        return outer


# --------------------------------------------------------------------------- buttons


@dataclass
class Button(View):
    """A Material button: filled, tonal, outlined or text."""

    text: str
    on_click: Handler | None = None
    kind: str = "filled"
    id: str = ""
    enabled: bool = True
    full_width: bool = False
    desc: str = ""

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        if self.full_width:
            return None
        return text_width(self.text, ctx.dp(14), "medium") + ctx.dp(48) + ctx.dp(8)

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(56)
        m = ctx.dp(8) if not self.full_width else ctx.dp(16)
        box = (x + m // 2 if not self.full_width else x + m, y + ctx.dp(8), x + w - (m // 2 if not self.full_width else m), y + h - ctx.dp(8))
        th = ctx.theme
        kind, enabled = self.kind, self.enabled

        def paint(c: Canvas) -> None:
            r = (box[3] - box[1]) // 2
            if kind == "filled":
                c.rect(box, fill=th.primary if enabled else DISABLED, radius=r)
                fg = th.on_primary if enabled else WHITE
            elif kind == "tonal":
                c.rect(box, fill=th.container if enabled else SURFACE_2, radius=r)
                fg = TEXT if enabled else DISABLED
            elif kind == "outlined":
                c.rect(box, outline=DIVIDER if enabled else SURFACE_2, radius=r, width=max(1, ctx.dp(1)))
                fg = th.primary if enabled else DISABLED
            else:
                fg = th.primary if enabled else DISABLED
            c.text_in(box, self.text, ctx.dp(14), fg, "medium", "center")

        return Node("android.widget.Button", box, text=self.text, desc=self.desc, rid=self.id, enabled=self.enabled,
                    clickable=True, focusable=True, on_click=self.on_click if self.enabled else None, paint=paint)


def ButtonRow(buttons: Sequence[View], align: str = "end") -> Row:
    """Buttons in a row, right-aligned as Material dialogs and forms put them."""
    return Row(list(buttons), pad=8, align=align)


@dataclass
class IconButton(View):
    """An icon without text: only its content description names it (ImageButton)."""

    icon: str
    desc: str
    on_click: Handler | None = None
    id: str = ""
    color: str | None = None
    on_long_click: Handler | None = None
    enabled: bool = True

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return ctx.dp(48)

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        s = ctx.dp(48)
        box = (x, y, x + s, y + s)
        col = hex_rgb(self.color) if self.color else TEXT_2
        if not self.enabled:
            col = DISABLED

        def paint(c: Canvas) -> None:
            c.icon(self.icon, x + s // 2, y + s // 2, ctx.dp(24), col)

        return Node("android.widget.ImageButton", box, desc=self.desc, rid=self.id, clickable=True, focusable=True,
                    enabled=self.enabled, on_click=self.on_click if self.enabled else None,
                    on_long_click=self.on_long_click, paint=paint)


@dataclass
class Fab(View):
    """The floating action button (bottom right); `label` makes it an extended FAB."""

    icon: str
    desc: str
    on_click: Handler | None = None
    label: str = ""
    id: str = "fab"

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        # x, y here is the bottom-right corner the FAB sits against.
        s = ctx.dp(56)
        fw = s if not self.label else text_width(self.label, ctx.dp(14), "medium") + ctx.dp(72)
        box = (x - fw, y - s, x, y)
        th = ctx.theme

        def paint(c: Canvas) -> None:
            c.rect((box[0] + 2, box[1] + 4, box[2] + 2, box[3] + 4), fill=DIVIDER, radius=ctx.dp(16))
            c.rect(box, fill=th.primary, radius=ctx.dp(16))
            if self.label:
                c.icon(self.icon, box[0] + ctx.dp(28), box[1] + s // 2, ctx.dp(24), th.on_primary)
                c.text_in((box[0] + ctx.dp(52), box[1], box[2], box[3]), self.label, ctx.dp(14), th.on_primary, "medium")
            else:
                c.icon(self.icon, box[0] + s // 2, box[1] + s // 2, ctx.dp(24), th.on_primary)

        cls = "android.widget.Button" if self.label else "android.widget.ImageButton"
        return Node(cls, box, text=self.label, desc=self.desc, rid=self.id, clickable=True, focusable=True,
                    on_click=self.on_click, paint=paint)


@dataclass
class Chip(View):
    label: str
    selected: bool = False
    on_click: Handler | None = None
    id: str = ""

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return text_width(self.label, ctx.dp(14), "medium") + ctx.dp(32) + ctx.dp(8) + (ctx.dp(20) if self.selected else 0)

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(48)
        box = (x + ctx.dp(4), y + ctx.dp(8), x + w - ctx.dp(4), y + h - ctx.dp(8))
        th = ctx.theme

        def paint(c: Canvas) -> None:
            if self.selected:
                c.rect(box, fill=th.container, radius=ctx.dp(8))
                c.icon("check", box[0] + ctx.dp(16), (box[1] + box[3]) // 2, ctx.dp(16), TEXT)
                c.text_in((box[0] + ctx.dp(24), box[1], box[2], box[3]), self.label, ctx.dp(14), TEXT, "medium", "center")
            else:
                c.rect(box, outline=DIVIDER, radius=ctx.dp(8), width=max(1, ctx.dp(1)))
                c.text_in(box, self.label, ctx.dp(14), TEXT_2, "medium", "center")

        return Node("android.widget.CompoundButton", box, text=self.label, rid=self.id, checkable=True, checked=self.selected,
                    clickable=True, focusable=True, on_click=self.on_click, paint=paint)


# --------------------------------------------------------------------------- inputs


def _paint_floating_label(c: Canvas, ctx: LayoutCtx, box: Box, label: str, color: RGB) -> None:
    """An outlined field's label, sitting on the top edge of its box (Material style)."""
    lw = text_width(label, ctx.dp(12))
    c.rect((box[0] + ctx.dp(10), box[1] - ctx.dp(8), box[0] + ctx.dp(18) + lw, box[1] + ctx.dp(8)), fill=WHITE)
    c.text(box[0] + ctx.dp(14), box[1] - ctx.dp(9), label, ctx.dp(12), color)


@dataclass
class EditText(View):
    """A text field. Tapping focuses it and shows the keyboard; typed text goes to `on_change`."""

    id: str
    value: str
    on_change: Callable[[str], None]
    hint: str = ""
    label: str = ""
    on_submit: Handler | None = None
    multiline: bool = False
    password: bool = False
    kind: str = "outlined"
    icon: str | None = None
    lines: int = 1

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        m = ctx.dp(16)
        size = ctx.dp(16)
        inner_w = w - 2 * m - ctx.dp(32) - (ctx.dp(32) if self.icon else 0)
        shown = ("•" * len(self.value)) if self.password else self.value
        lines = wrap(shown, size, max(1, inner_w)) if (self.multiline and shown) else (shown,)
        nlines = max(self.lines, min(len(lines), 8)) if self.multiline else 1
        fh = max(ctx.dp(56), nlines * _line_h(size) + ctx.dp(32))
        top = y + (ctx.dp(12) if self.label and self.kind != "search" else ctx.dp(8))
        box = (x + m, top, x + w - m, top + fh)
        h = box[3] - y + ctx.dp(8)
        focused = ctx.route.focus == self.id
        th = ctx.theme
        kind = self.kind

        def paint(c: Canvas) -> None:
            tx = box[0] + ctx.dp(16) + (ctx.dp(32) if self.icon else 0)
            if kind == "search":
                c.rect(box, fill=SURFACE_2, radius=fh // 2)
            elif kind == "underline":
                c.rect((box[0], box[3] - ctx.dp(2 if focused else 1), box[2], box[3]), fill=th.primary if focused else HINT)
            else:
                c.rect(box, outline=th.primary if focused else HINT, radius=ctx.dp(4), width=ctx.dp(2) if focused else max(1, ctx.dp(1)))
            if self.icon:
                c.icon(self.icon, box[0] + ctx.dp(28), (box[1] + box[3]) // 2 if not self.multiline else box[1] + ctx.dp(28), ctx.dp(22), TEXT_2)
            if self.label and kind != "search":
                _paint_floating_label(c, ctx, box, self.label, th.primary if focused else TEXT_2)
            ty = box[1] + (fh - nlines * _line_h(size)) // 2 if not self.multiline else box[1] + ctx.dp(16)
            if shown:
                _draw_lines(c, tx, ty, lines[:8], size, TEXT, "regular", inner_w, "left")
            elif self.hint:
                _draw_lines(c, tx, ty, (self.hint,), size, HINT, "regular", inner_w, "left")
            if focused:
                last = lines[min(len(lines), 8) - 1] if shown else ""
                cx = tx + (text_width(last, size) if last else 0) + 1
                cy = ty + (min(len(lines), 8) - 1) * _line_h(size)
                c.rect((cx, cy + ctx.dp(2), cx + max(2, ctx.dp(1)), cy + _line_h(size) - ctx.dp(2)), fill=th.primary)

        field_node = Node(
            "android.widget.EditText", box, text=self.value, hint=self.hint or self.label, rid=self.id,
            clickable=True, focusable=True, focused=focused, password=self.password, long_clickable=True,
            edit=EditBinding(self.id, self.value, self.on_change, self.on_submit, self.multiline),
            on_click=ctx.focus_setter(self.id), paint=paint,
        )
        return Node("android.widget.FrameLayout", (x, y, x + w, y + h), children=[field_node])


def _toggle_node(cls: str, box: Box, checked: bool, rid: str, text: str, on_toggle: Handler | None, paint, enabled: bool = True) -> Node:
    return Node(cls, box, text=text, rid=rid, checkable=True, checked=checked, clickable=True, focusable=True,
                enabled=enabled, on_click=on_toggle if enabled else None, paint=paint)


def _paint_switch(c: Canvas, ctx: LayoutCtx, box: Box, on: bool, enabled: bool = True) -> None:
    th = ctx.theme
    cy = (box[1] + box[3]) // 2
    tw, thh = ctx.dp(52), ctx.dp(32)
    l = box[2] - tw
    track = (l, cy - thh // 2, l + tw, cy + thh // 2)
    if on:
        c.rect(track, fill=th.primary if enabled else DISABLED, radius=thh // 2)
        c.circle(l + tw - thh // 2, cy, ctx.dp(12), fill=th.on_primary if th.on_primary != TEXT else WHITE)
    else:
        c.rect(track, fill=SURFACE_2, outline=HINT, radius=thh // 2, width=max(1, ctx.dp(2)))
        c.circle(l + thh // 2, cy, ctx.dp(8), fill=HINT)


@dataclass
class Switch(View):
    """A settings row: label (and summary) with a switch on the right; the row toggles it."""

    label: str
    checked: bool
    on_change: Callable[[bool], None]
    id: str = ""
    summary: str = ""
    icon: str | None = None
    enabled: bool = True

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(72 if self.summary else 56)
        pad = ctx.dp(16)
        lx = x + pad + (ctx.dp(40) if self.icon else 0)
        toggle = (lambda v=self.checked: self.on_change(not v)) if self.enabled else None
        sw_box = (x + w - pad - ctx.dp(52), y + (h - ctx.dp(32)) // 2, x + w - pad, y + (h + ctx.dp(32)) // 2)
        row = Node("android.widget.LinearLayout", (x, y, x + w, y + h), clickable=True, on_click=toggle, enabled=self.enabled)
        if self.icon:
            icon = self.icon

            def paint_icon(c: Canvas) -> None:
                c.icon(icon, x + pad + ctx.dp(12), y + h // 2, ctx.dp(24), TEXT_2)

            row.paint = paint_icon
        title_h = _line_h(ctx.dp(16))
        ty = y + (h - title_h - (_line_h(ctx.dp(14)) if self.summary else 0)) // 2
        col = TEXT if self.enabled else DISABLED
        title = Node("android.widget.TextView", (lx, ty, sw_box[0] - pad, ty + title_h), text=self.label, rid="title",
                     paint=lambda c: c.text_in((lx, ty, sw_box[0] - pad, ty + title_h), self.label, ctx.dp(16), col))
        row.children.append(title)
        if self.summary:
            sy = ty + title_h
            sh = _line_h(ctx.dp(14))
            row.children.append(Node("android.widget.TextView", (lx, sy, sw_box[0] - pad, sy + sh), text=self.summary, rid="summary",
                                     paint=lambda c: c.text_in((lx, sy, sw_box[0] - pad, sy + sh), self.summary, ctx.dp(14), TEXT_2)))
        row.children.append(_toggle_node("android.widget.Switch", sw_box, self.checked, self.id or "switch_widget",
                                         "ON" if self.checked else "OFF", toggle,
                                         lambda c: _paint_switch(c, ctx, sw_box, self.checked, self.enabled), self.enabled))
        return row


@dataclass
class CheckBox(View):
    """A checkbox with its label to the right; the whole row toggles it."""

    label: str
    checked: bool
    on_change: Callable[[bool], None]
    id: str = ""

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return None if self.label else ctx.dp(48)

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(48)
        s = ctx.dp(18)
        bx = x + ctx.dp(15)
        cy = y + h // 2
        th = ctx.theme
        toggle = lambda v=self.checked: self.on_change(not v)  # noqa: E731

        def paint(c: Canvas) -> None:
            if self.checked:
                c.rect((bx, cy - s // 2, bx + s, cy + s // 2), fill=th.primary, radius=ctx.dp(2))
                c.icon("check", bx + s // 2, cy, s, th.on_primary if th.on_primary != TEXT else WHITE)
            else:
                c.rect((bx, cy - s // 2, bx + s, cy + s // 2), outline=TEXT_2, radius=ctx.dp(2), width=max(1, ctx.dp(2)))
            if self.label:
                c.text_in((bx + s + ctx.dp(16), y, x + w - ctx.dp(16), y + h), self.label, ctx.dp(16), TEXT)

        return _toggle_node("android.widget.CheckBox", (x, y, x + w, y + h), self.checked, self.id, self.label, toggle, paint)


@dataclass
class RadioGroup(View):
    """Mutually exclusive options; tapping one calls `on_select(option)`."""

    options: Sequence[str]
    selected: str | None
    on_select: Callable[[str], None]
    id: str = ""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        group = Node("android.widget.RadioGroup", (x, y, x + w, y), rid=self.id)
        h = ctx.dp(48)
        th = ctx.theme
        cy0 = y
        for opt in self.options:
            on = opt == self.selected
            top = cy0

            def paint(c: Canvas, top=top, on=on, opt=opt) -> None:
                cx, cy = x + ctx.dp(24), top + h // 2
                c.circle(cx, cy, ctx.dp(10), outline=th.primary if on else TEXT_2, width=max(1, ctx.dp(2)))
                if on:
                    c.circle(cx, cy, ctx.dp(5), fill=th.primary)
                c.text_in((x + ctx.dp(56), top, x + w - ctx.dp(16), top + h), opt, ctx.dp(16), TEXT)

            group.children.append(_toggle_node("android.widget.RadioButton", (x, top, x + w, top + h), on, "", opt,
                                               lambda o=opt: self.on_select(o), paint))
            cy0 += h
        group.box = (x, y, x + w, cy0)
        return group


@dataclass
class SeekBar(View):
    """A slider from `low` to `high`; a tap sets the value under the finger."""

    label: str
    value: int
    on_change: Callable[[int], None]
    low: int = 0
    high: int = 100
    id: str = ""
    icon: str | None = None

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(88)
        pad = ctx.dp(16)
        lx = x + pad + (ctx.dp(40) if self.icon else 0)
        track_l, track_r = lx + ctx.dp(8), x + w - pad - ctx.dp(8)
        ty = y + ctx.dp(60)
        frac = (self.value - self.low) / max(1, self.high - self.low)
        th = ctx.theme

        def paint(c: Canvas) -> None:
            if self.icon:
                c.icon(self.icon, x + pad + ctx.dp(12), y + ctx.dp(44), ctx.dp(24), TEXT_2)
            c.text(lx, y + ctx.dp(12), self.label, ctx.dp(16), TEXT)
            c.text(x + w - pad, y + ctx.dp(12), str(self.value), ctx.dp(14), TEXT_2, align="right")
            c.rect((track_l, ty - ctx.dp(2), track_r, ty + ctx.dp(2)), fill=SURFACE_2, radius=ctx.dp(2))
            kx = track_l + round(frac * (track_r - track_l))
            c.rect((track_l, ty - ctx.dp(2), kx, ty + ctx.dp(2)), fill=th.primary, radius=ctx.dp(2))
            c.circle(kx, ty, ctx.dp(10), fill=th.primary)

        def tap_at(px: int, py: int) -> None:
            f = min(1.0, max(0.0, (px - track_l) / max(1, track_r - track_l)))
            self.on_change(self.low + round(f * (self.high - self.low)))

        row = Node("android.widget.LinearLayout", (x, y, x + w, y + h), paint=paint)
        label = Node("android.widget.TextView", (lx, y + ctx.dp(8), x + w - pad - ctx.dp(48), y + ctx.dp(40)), text=self.label)
        bar = Node("android.widget.SeekBar", (track_l - ctx.dp(8), ty - ctx.dp(20), track_r + ctx.dp(8), ty + ctx.dp(20)),
                   text=str(self.value), desc=self.label, rid=self.id, clickable=True, focusable=True, on_tap_at=tap_at)
        bar.on_swipe = lambda d: False
        return row.add(label, bar)


@dataclass
class Spinner(View):
    """A dropdown showing the chosen option; tapping it opens the option list."""

    id: str
    options: Sequence[str]
    selected: str
    on_select: Callable[[str], None]
    label: str = ""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        m = ctx.dp(16)
        top = y + (ctx.dp(12) if self.label else ctx.dp(8))
        box = (x + m, top, x + w - m, top + ctx.dp(56))
        app = ctx.app

        def open_menu() -> None:
            app.menu([MenuItem(o, (lambda o=o: self.on_select(o)), checked=o == self.selected) for o in self.options], box, "left")

        def paint(c: Canvas) -> None:
            c.rect(box, outline=HINT, radius=ctx.dp(4), width=max(1, ctx.dp(1)))
            if self.label:
                _paint_floating_label(c, ctx, box, self.label, TEXT_2)
            c.icon("expand_more", box[2] - ctx.dp(24), (box[1] + box[3]) // 2, ctx.dp(24), TEXT_2)

        value = Node("android.widget.TextView", (box[0] + ctx.dp(16), box[1], box[2] - ctx.dp(48), box[3]), text=self.selected,
                     rid="text1", paint=lambda c: c.text_in((box[0] + ctx.dp(16), box[1], box[2] - ctx.dp(48), box[3]), self.selected, ctx.dp(16), TEXT))
        spinner = Node("android.widget.Spinner", box, desc=self.label, rid=self.id, clickable=True, focusable=True,
                       on_click=open_menu, paint=paint, children=[value])
        return Node("android.widget.FrameLayout", (x, y, x + w, box[3] + ctx.dp(8)), children=[spinner])


# --------------------------------------------------------------------------- lists


@dataclass
class ListItem(View):
    """A list row: optional leading icon or avatar, title, subtitle, trailing widget or text.

    `on_swipe` maps a direction ("left"/"right") to a handler, for swipe-to-delete and similar.
    """

    title: str
    subtitle: str = ""
    on_click: Handler | None = None
    on_long_click: Handler | None = None
    on_swipe: Mapping[str, Handler] | None = None
    icon: str | None = None
    avatar: str | None = None
    trailing: View | None = None
    meta: str = ""
    id: str = ""
    selected: bool = False
    desc: str = ""
    strike: bool = False

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(72 if self.subtitle else 56)
        pad = ctx.dp(16)
        lead = ctx.dp(56) if (self.icon or self.avatar) else 0
        tw = self.trailing.wrap_width(ctx) if self.trailing is not None else None
        tw = tw if tw is not None else (ctx.dp(56) if self.trailing is not None else 0)
        mw = text_width(self.meta, ctx.dp(12)) + pad if self.meta else 0
        lx = x + pad + lead
        rx = x + w - pad - tw - mw
        title_h = _line_h(ctx.dp(16))
        sub_h = _line_h(ctx.dp(14)) if self.subtitle else 0
        ty = y + (h - title_h - sub_h) // 2
        th = ctx.theme
        swipes = dict(self.on_swipe or {})

        def paint(c: Canvas) -> None:
            if self.selected:
                c.rect((x, y, x + w, y + h), fill=th.container)
            if self.avatar:
                c.circle(x + pad + ctx.dp(20), y + h // 2, ctx.dp(20), fill=th.container)
                c.text_in((x + pad, y, x + pad + ctx.dp(40), y + h), self.avatar[:1].upper(), ctx.dp(18), th.primary, "medium", "center")
            elif self.icon:
                c.icon(self.icon, x + pad + ctx.dp(12), y + h // 2, ctx.dp(24), TEXT_2)
            if self.meta:
                c.text(x + w - pad - tw, ty + ctx.dp(2), self.meta, ctx.dp(12), TEXT_2, align="right")

        def handle_swipe(direction: str) -> bool:
            fn = swipes.get(direction)
            if fn is None:
                return False
            fn()
            return True

        row = Node("android.view.ViewGroup", (x, y, x + w, y + h), desc=self.desc, rid=self.id or "item",
                   on_click=self.on_click, on_long_click=self.on_long_click, selected=self.selected,
                   on_swipe=handle_swipe if swipes else None, paint=paint)
        col = TEXT_2 if self.strike else TEXT

        def paint_title(c: Canvas) -> None:
            c.text_in((lx, ty, rx, ty + title_h), self.title, ctx.dp(16), col)
            if self.strike:
                lw = min(text_width(self.title, ctx.dp(16)), rx - lx)
                c.rect((lx, ty + title_h // 2, lx + lw, ty + title_h // 2 + max(1, ctx.dp(1))), fill=TEXT_2)

        row.children.append(Node("android.widget.TextView", (lx, ty, rx, ty + title_h), text=self.title, rid="title", paint=paint_title))
        if self.subtitle:
            sy = ty + title_h
            row.children.append(Node("android.widget.TextView", (lx, sy, rx, sy + sub_h), text=self.subtitle, rid="subtitle",
                                     paint=lambda c: c.text_in((lx, sy, rx, sy + sub_h), self.subtitle, ctx.dp(14), TEXT_2)))
        if self.meta:
            row.children.append(Node("android.widget.TextView", (x + w - pad - tw - mw + pad, ty, x + w - pad - tw, ty + title_h),
                                     text=self.meta, rid="meta"))
        if self.trailing is not None:
            tn = self.trailing.layout(ctx, x + w - pad - tw + ctx.dp(8), y + (h - ctx.dp(48)) // 2, tw)
            row.children.append(tn)
        return row


@dataclass
class ListView(View):
    """A scrolling list (RecyclerView). It fills the height it is given; rows scrolled out of
    view are not in the dump, as on Android."""

    id: str
    items: Sequence[View]
    empty_text: str = ""
    dividers: bool = False

    def layout_in(self, ctx: LayoutCtx, x: int, y: int, w: int, h: int) -> Node:
        key = self.id
        offset = ctx.scroll_offset(key)
        nodes: list[Node] = []
        cy = y
        for item in self.items:
            n = item.layout(ctx, x, cy, w)
            nodes.append(n)
            cy = n.box[3]
            if self.dividers:
                d = Divider(inset=16).layout(ctx, x, cy, w)
                nodes.append(d)
                cy = d.box[3]
        content_h = cy - y
        max_off = max(0, content_h - h)
        offset = min(max(0, offset), max_off)
        if offset:
            for n in nodes:
                _shift(n, -offset)
        node = Node("androidx.recyclerview.widget.RecyclerView", (x, y, x + w, y + h), rid=key, scrollable=max_off > 0,
                    focusable=True, children=nodes, clip_bg=WHITE,
                    scroll=ScrollBinding(key, offset, max_off, ctx.scroll_setter(key)))
        if not self.items and self.empty_text:
            node.children.append(Text(self.empty_text, "body2", align="center", max_lines=3, id="empty").layout(ctx, x, y + h // 3, w))
        return node

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        # Inside another scroll container a list shows all its rows.
        return Column(self.items).layout(ctx, x, y, w)


def _shift(node: Node, dy: int) -> None:
    for n in node.walk():
        l, t, r, b = n.box
        n.box = (l, t + dy, r, b + dy)
        if n.paint is not None:
            n.paint = _shifted(n.paint, dy)


def _shifted(fn: Callable[[Canvas], None], dy: int) -> Callable[[Canvas], None]:
    def paint(c: Canvas) -> None:
        c.oy -= dy
        try:
            fn(c)
        finally:
            c.oy += dy

    return paint


# --------------------------------------------------------------------------- bars


@dataclass
class MenuItem:
    """An entry of an overflow menu, dropdown, context menu or bottom sheet."""

    label: str
    on_click: Handler | None = None
    icon: str | None = None
    enabled: bool = True
    checked: bool = False


@dataclass
class Toolbar(View):
    """The top app bar: navigation icon, title, action icons and an overflow ("More options") menu."""

    title: str
    nav: str | None = None  # "back", "menu" or "close"
    on_nav: Handler | None = None
    actions: Sequence[IconButton] = ()
    menu: Sequence[MenuItem] = ()
    subtitle: str = ""

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(64)
        th = ctx.theme
        node = Node("android.view.ViewGroup", (x, y, x + w, y + h), rid="toolbar",
                    paint=lambda c: c.rect((x, y, x + w, y + h), fill=th.primary))
        cx = x + ctx.dp(4)
        if self.nav:
            desc = {"back": "Navigate up", "menu": "Open navigation drawer", "close": "Close"}[self.nav]
            icon = {"back": "back", "menu": "menu", "close": "close"}[self.nav]
            nb = IconButton(icon, desc, self.on_nav, color=_hex(th.on_primary)).layout(ctx, cx, y + ctx.dp(8), ctx.dp(48))
            node.children.append(nb)
            cx += ctx.dp(52)
        else:
            cx += ctx.dp(12)
        right = x + w - ctx.dp(4)
        trailing: list[Node] = []
        app = ctx.app
        if self.menu:
            right -= ctx.dp(48)
            box = (right, y + ctx.dp(8), right + ctx.dp(48), y + ctx.dp(56))
            items = list(self.menu)
            trailing.append(IconButton("more_vert", "More options", lambda: app.menu(items, box), id="overflow",
                                       color=_hex(th.on_primary)).layout(ctx, right, y + ctx.dp(8), ctx.dp(48)))
        for act in reversed(self.actions):
            right -= ctx.dp(48)
            a = IconButton(act.icon, act.desc, act.on_click, act.id, act.color or _hex(th.on_primary), act.on_long_click, act.enabled)
            trailing.append(a.layout(ctx, right, y + ctx.dp(8), ctx.dp(48)))
        tb = (cx, y, right - ctx.dp(4), y + h) if not self.subtitle else (cx, y + ctx.dp(6), right - ctx.dp(4), y + ctx.dp(38))
        node.children.append(Node("android.widget.TextView", tb, text=self.title, rid="toolbar_title",
                                  paint=lambda c: c.text_in(tb, self.title, ctx.dp(22), th.on_primary)))
        if self.subtitle:
            sb = (cx, y + ctx.dp(36), right - ctx.dp(4), y + ctx.dp(58))
            node.children.append(Node("android.widget.TextView", sb, text=self.subtitle, rid="toolbar_subtitle",
                                      paint=lambda c: c.text_in(sb, self.subtitle, ctx.dp(14), mix(th.on_primary, th.primary, 0.25))))
        node.children.extend(reversed(trailing))
        return node


def _hex(rgb: RGB) -> str:
    return "#%02x%02x%02x" % rgb


@dataclass
class Tabs(View):
    """A row of tabs under the toolbar; the selected one is underlined."""

    labels: Sequence[str]
    selected: int
    on_select: Callable[[int], None]
    id: str = "tabs"

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(48)
        th = ctx.theme
        node = Node("android.widget.HorizontalScrollView", (x, y, x + w, y + h), rid=self.id,
                    paint=lambda c: (c.rect((x, y, x + w, y + h), fill=th.primary)))
        n = max(1, len(self.labels))
        tw = w // n
        for i, label in enumerate(self.labels):
            tx = x + i * tw
            sel = i == self.selected

            def paint(c: Canvas, tx=tx, sel=sel, label=label) -> None:
                col = th.on_primary if sel else mix(th.on_primary, th.primary, 0.35)
                c.text_in((tx, y, tx + tw, y + h), label.upper(), ctx.dp(14), col, "medium", "center")
                if sel:
                    c.rect((tx + ctx.dp(8), y + h - ctx.dp(3), tx + tw - ctx.dp(8), y + h), fill=th.on_primary)

            node.children.append(Node("android.widget.LinearLayout", (tx, y, tx + tw, y + h), desc=label, clickable=True,
                                      focusable=True, selected=sel, on_click=lambda i=i: self.on_select(i), paint=paint,
                                      children=[Node("android.widget.TextView", (tx, y, tx + tw, y + h), text=label.upper())]))
        return node


@dataclass
class BottomNav(View):
    """Bottom navigation: icons with labels; the selected destination is highlighted."""

    items: Sequence[tuple[str, str]]  # (icon, label)
    selected: int
    on_select: Callable[[int], None]

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(80)
        th = ctx.theme
        node = Node("android.widget.FrameLayout", (x, y, x + w, y + h), rid="bottom_navigation",
                    paint=lambda c: c.rect((x, y, x + w, y + h), fill=SURFACE_2))
        n = max(1, len(self.items))
        iw = w // n
        for i, (icon, label) in enumerate(self.items):
            ix = x + i * iw
            sel = i == self.selected

            def paint(c: Canvas, ix=ix, sel=sel, icon=icon, label=label) -> None:
                cx = ix + iw // 2
                if sel:
                    c.rect((cx - ctx.dp(32), y + ctx.dp(12), cx + ctx.dp(32), y + ctx.dp(44)), fill=th.container, radius=ctx.dp(16))
                c.icon(icon, cx, y + ctx.dp(28), ctx.dp(24), TEXT if sel else TEXT_2)
                c.text_in((ix, y + ctx.dp(48), ix + iw, y + ctx.dp(72)), label, ctx.dp(12), TEXT if sel else TEXT_2,
                          "medium" if sel else "regular", "center")

            node.children.append(Node("android.widget.FrameLayout", (ix, y, ix + iw, y + h), desc=label, clickable=True,
                                      selected=sel, on_click=lambda i=i: self.on_select(i), paint=paint,
                                      children=[Node("android.widget.TextView", (ix, y + ctx.dp(48), ix + iw, y + ctx.dp(72)), text=label)]))
        return node


# --------------------------------------------------------------------------- overlays


@dataclass
class DrawerItem:
    label: str
    on_click: Handler
    icon: str | None = None
    selected: bool = False


@dataclass
class Drawer:
    """A navigation drawer, opened from the toolbar's menu icon or by swiping from the left edge."""

    title: str
    items: Sequence[DrawerItem]


@dataclass
class Dialog:
    """An alert dialog: title, optional message and body views, and up to three buttons
    (given right to left: positive, negative, neutral, as Android numbers them)."""

    title: str
    message: str = ""
    body: Sequence[View] = ()
    buttons: Sequence[tuple[str, Handler]] = ()
    cancelable: bool = True
    on_cancel: Handler | None = None
    package: str = ""


@dataclass
class BottomSheet:
    """A modal sheet of actions rising from the bottom of the screen."""

    items: Sequence[MenuItem]
    title: str = ""


@dataclass
class Screen:
    """One frame of an app: toolbar, body views, and the optional bars and FAB."""

    body: Sequence[View] = ()
    toolbar: Toolbar | None = None
    tabs: Tabs | None = None
    fab: Fab | None = None
    bottom_nav: BottomNav | None = None
    bottom_bar: View | None = None
    drawer: Drawer | None = None
    bg: str | None = None


# --------------------------------------------------------------------------- pickers


def date_picker(title: str, value: dt.date, on_set: Callable[[dt.date], None], view: dict) -> Dialog:
    """A calendar date picker dialog. `view` is a dict the caller keeps across frames (shown
    month); tapping a day selects it, OK confirms."""
    shown = view.setdefault("month", (value.year, value.month))
    picked = view.setdefault("picked", value)
    year, month = shown

    def move(delta: int) -> None:
        y, m = view["month"]
        m += delta
        y, m = (y + (m - 1) // 12, (m - 1) % 12 + 1)
        view["month"] = (y, m)

    def pick(d: dt.date) -> None:
        view["picked"] = d

    month_name = dt.date(year, month, 1).strftime("%B %Y")
    return Dialog(
        title=title,
        body=[
            Text(picked.strftime("%a, %b %-d"), "headline", id="date_picker_header_date"),
            Row([IconButton("chevron_left", "Previous month", lambda: move(-1), id="prev"),
                 Text(month_name, "subtitle", align="center", id="month_view"),
                 IconButton("chevron_right", "Next month", lambda: move(1), id="next")]),
            _MonthGrid(year, month, picked, pick),
        ],
        buttons=[("OK", lambda: on_set(view["picked"])), ("Cancel", lambda: None)],
    )


@dataclass
class _MonthGrid(View):
    year: int
    month: int
    picked: dt.date
    on_pick: Callable[[dt.date], None]

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        cell_w = w // 7
        cell_h = ctx.dp(40)
        th = ctx.theme
        node = Node("android.view.ViewGroup", (x, y, x + w, y), rid="month_grid")
        weeks = calendar.Calendar(firstweekday=6).monthdayscalendar(self.year, self.month)
        for wi, week in enumerate(weeks):
            for di, day in enumerate(week):
                if not day:
                    continue
                d = dt.date(self.year, self.month, day)
                box = (x + di * cell_w, y + wi * cell_h, x + (di + 1) * cell_w, y + (wi + 1) * cell_h)
                sel = d == self.picked

                def paint(c: Canvas, box=box, sel=sel, day=day) -> None:
                    if sel:
                        c.circle((box[0] + box[2]) // 2, (box[1] + box[3]) // 2, min(cell_w, cell_h) // 2 - 2, fill=th.primary)
                    c.text_in(box, str(day), ctx.dp(14), th.on_primary if sel else TEXT, "regular", "center")

                node.children.append(Node("android.widget.TextView", box, text=str(day), desc=d.strftime("%-d %B %Y"),
                                          clickable=True, selected=sel, on_click=lambda d=d: self.on_pick(d), paint=paint))
        node.box = (x, y, x + w, y + len(weeks) * cell_h)
        return node


def time_picker(title: str, hour: int, minute: int, on_set: Callable[[int, int], None], view: dict) -> Dialog:
    """A 24-hour time picker dialog: hour and minute fields with +/- buttons, OK confirms."""
    view.setdefault("hour", str(hour))
    view.setdefault("minute", f"{minute:02d}")

    def bump(key: str, delta: int, mod: int) -> None:
        try:
            v = int(view[key])
        except ValueError:
            v = 0
        view[key] = f"{(v + delta) % mod:02d}" if key == "minute" else str((v + delta) % mod)

    def setter(key: str) -> Callable[[str], None]:
        def set_value(v: str) -> None:
            view[key] = "".join(ch for ch in v if ch.isdigit())[:2]

        return set_value

    def ok() -> None:
        try:
            h, m = int(view["hour"] or 0), int(view["minute"] or 0)
        except ValueError:
            return
        if 0 <= h < 24 and 0 <= m < 60:
            on_set(h, m)

    return Dialog(
        title=title,
        body=[
            Row([IconButton("expand_less", "Increase hour", lambda: bump("hour", 1, 24), id="hour_up"),
                 EditText("hour", view["hour"], setter("hour"), label="Hour"),
                 IconButton("expand_more", "Decrease hour", lambda: bump("hour", -1, 24), id="hour_down")]),
            Row([IconButton("expand_less", "Increase minute", lambda: bump("minute", 1, 60), id="minute_up"),
                 EditText("minute", view["minute"], setter("minute"), label="Minute"),
                 IconButton("expand_more", "Decrease minute", lambda: bump("minute", -1, 60), id="minute_down")]),
        ],
        buttons=[("OK", ok), ("Cancel", lambda: None)],
    )


__all__ = [
    "BottomNav", "BottomSheet", "Button", "ButtonRow", "Card", "CheckBox", "Chip", "Column", "Dialog", "Divider",
    "Drawer", "DrawerItem", "EditText", "Fab", "Header", "IconButton", "ImageView", "KeyValue", "LayoutCtx",
    "ListItem", "ListView", "MenuItem", "ProgressBar", "RadioGroup", "Row", "Screen", "SeekBar", "Spacer",
    "Spinner", "Switch", "Tabs", "Text", "Theme", "Toolbar", "View", "date_picker", "time_picker",
]
