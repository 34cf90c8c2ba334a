"""Screen identity from the UI tree: a coarse key that survives scrolling and data, a fine one
for "something new was revealed", and the labels and actionable elements a screen shows.

The coarse key (DroidBot's content-free state string, made scroll-proof) is built from the
structure of the fixed chrome: every visible element outside scroll containers (window, depth,
class, resource id; not texts, and not icon descriptions, which flip with state: Play/Pause). List containers
(RecyclerView, ListView, GridView) contribute only themselves: their rows are data, and how far
they are scrolled or how many rows they hold does not make another screen. Other scroll
containers (a ScrollView holding a form or a settings page) contribute the set of resource ids
inside them, which tells one form from another without counting scroll offset. The status bar,
the navigation bar, the keyboard and windows with nothing to act on (toasts) are not part of
any screen.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass

from coadapt.android_env.observation import SYSTEM_PACKAGES
from coadapt.android_env.uitree import UiElement, UiTree

log = logging.getLogger(__name__)

LIST_CLASSES = ("RecyclerView", "ListView", "GridView", "AbsListView", "ViewPager")
"""Containers whose children are data rows."""


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _is_system(e: UiElement) -> bool:
    """Status bar, navigation bar, or any keyboard: part of no screen."""
    return e.package in SYSTEM_PACKAGES or "inputmethod" in e.package


def _is_list(e: UiElement) -> bool:
    return e.short_class in LIST_CLASSES


def _scroll_ancestor(tree: UiTree, e: UiElement) -> UiElement | None:
    """The outermost scrollable or list ancestor of `e` (None when it sits in fixed chrome)."""
    found = None
    p = e.parent
    while p is not None:
        a = tree.elements[p]
        if a.scrollable or _is_list(a):
            found = a
        p = a.parent
    return found


def _transient_windows(tree: UiTree) -> set[int]:
    """Windows with nothing to act on (toasts, plain snackbars): they come and go by themselves
    and make no screen of their own."""
    active: set[int] = set()
    present: set[int] = set()
    for e in tree.elements:
        if not e.visible or _is_system(e):
            continue
        present.add(e.window)
        if e.clickable or e.long_clickable or e.editable or e.checkable or e.scrollable:
            active.add(e.window)
    return present - active


def _repeated_siblings(tree: UiTree) -> set[int]:
    """Elements inside a sibling whose whole subtree repeats an earlier sibling's (the rows of a
    dialog's choice list): data, not structure."""
    sig: dict[int, str] = {}
    for e in reversed(tree.elements):
        kids = tree.children[e.index] if e.index < len(tree.children) else ()
        sig[e.index] = f"{e.short_class}:{e.short_id}(" + ",".join(sig.get(k, "") for k in kids) + ")"
    out: set[int] = set()
    for e in tree.elements:
        kids = tree.children[e.index] if e.index < len(tree.children) else ()
        seen: set[str] = set()
        for k in kids:
            if sig[k] in seen:
                out.add(k)
                out.update(d.index for d in tree.descendants(tree.elements[k]))
            seen.add(sig[k])
    return out


_VALUE_CLASSES = ("SeekBar", "ProgressBar", "RatingBar", "NumberPicker")
_SWITCH_TEXTS = ("", "on", "off")


def stable_name(tree: UiTree, e: UiElement) -> str:
    """A name that does not change with the element's value: a field by its hint or id, a seek
    bar by its id, a switch reading ON/OFF by its row's text; otherwise its label."""
    if e.editable:
        return e.hint or e.content_desc or e.short_id
    if e.short_class in _VALUE_CLASSES:
        return e.short_id or e.short_class
    if e.checkable and e.label.strip().lower() in _SWITCH_TEXTS:
        if e.parent is not None:
            row = tree.elements[e.parent]
            named = next((d.text for d in tree.descendants(row) if d.text and d.index != e.index
                          and d.text.strip().lower() not in _SWITCH_TEXTS), "")
            if named:
                return named
        return e.content_desc or e.short_id
    return _name(tree, e)


def hidden(tree: UiTree) -> set[int]:
    """Elements a tap cannot reach: everything under a popup or dialog window (modal: a tap outside
    it only closes it), and within a window whatever a later element drawn over it covers (a
    drawer panel and its scrim; a later clickable element or a panel of a quarter of the screen
    or more, not in the same line of descent)."""
    items = [e for e in tree.elements if e.visible and not _is_system(e)]
    screen = max(1, tree.screen_bounds.area)
    covers = [e for e in items if e.bounds.area > 0 and (e.clickable or e.bounds.area * 4 >= screen)]
    out: set[int] = set()

    def related(a: UiElement, b: UiElement) -> bool:
        for x, y in ((a, b), (b, a)):
            p = y.parent
            while p is not None:
                if p == x.index:
                    return True
                p = tree.elements[p].parent
        return False

    top = max((e.window for e in items if e.clickable), default=0)
    for e in items:
        if not e.interactive and not e.label:
            continue
        cx, cy = e.bounds.center
        if e.window < top:  # a popup or dialog window above is modal: a tap outside it only closes it
            out.add(e.index)
            continue
        for c in covers:
            if c.index > e.index and c.window == e.window and c.bounds.contains(cx, cy) and not related(c, e):
                out.add(e.index)
                break
    return out


def _name(tree: UiTree, e: UiElement) -> str:
    """An element's label, or the first label inside it (a clickable row named by its text)."""
    return e.label or next((d.label for d in tree.descendants(e) if d.label), "")


def normalise(label: str) -> str:
    """A label as compared across screens: lower case, spaces collapsed, trimmed."""
    return " ".join(label.lower().split())


@dataclass(frozen=True)
class ScreenFacts:
    """What one UI tree says about the screen it shows."""

    key: str
    """Coarse screen identity (16 hex digits): same for a scrolled or refilled list."""
    fine_key: str
    """Coarse key plus the visible labels and check states: changes whenever anything new shows."""
    labels: frozenset[str]
    """Normalised texts and descriptions of the visible, non-system elements."""
    actionables: tuple[str, ...]
    """Signatures of the actionable elements (rows of a list count once), for coverage."""
    package: str
    """The foreground app's package (the package of most non-system elements)."""


def screen_facts(tree: UiTree) -> ScreenFacts:
    """The keys, labels and actionable elements of one UI tree."""
    chrome: list[str] = []
    scroll_ids: dict[int, set[str]] = {}
    labels: set[str] = set()
    states: list[str] = []
    actionables: set[str] = set()
    packages: dict[str, int] = {}
    repeated = _repeated_siblings(tree)
    transient = _transient_windows(tree)
    covered = hidden(tree)
    for e in tree.elements:
        if not e.visible or _is_system(e):
            continue
        packages[e.package] = packages.get(e.package, 0) + 1
        for text in (e.text, e.content_desc):
            if text.strip():
                labels.add(normalise(text))
        if e.checkable:
            states.append(f"{normalise(e.label)}={int(e.checked)}")
        outer = _scroll_ancestor(tree, e)
        if outer is None:
            if e.interactive and e.index not in covered:
                actionables.add(f"{e.short_class}:{e.short_id}:{normalise(stable_name(tree, e))}")
            if e.index in repeated or e.window in transient:
                continue
            chrome.append(f"{e.window}:{e.depth}:{e.short_class}:{e.short_id}")
            if e.scrollable or _is_list(e):
                scroll_ids.setdefault(e.index, set())
        else:
            if not _is_list(outer) and e.short_id:
                scroll_ids.setdefault(outer.index, set()).add(f"{e.short_class}:{e.short_id}")
            if e.interactive and e.index not in covered:
                # a list row counts once per kind; a control in a scrolling page counts by its name
                # (a short fixed list, such as a menu, keeps its entries' names)
                name = "" if _is_list(outer) and outer.scrollable else normalise(stable_name(tree, e))
                actionables.add(f"{e.short_class}:{e.short_id}:{name}@{outer.short_id}")
    parts = chrome + sorted(f"scroll:{tree.elements[i].short_class}:{tree.elements[i].short_id}:" + ",".join(sorted(ids))
                            for i, ids in scroll_ids.items())
    key = _digest("|".join(parts))
    log.debug("screen key %s from %s", key, parts)
    fine = _digest(key + "|" + "|".join(sorted(labels)) + "|" + "|".join(sorted(states)))
    package = max(packages, key=lambda p: packages[p]) if packages else ""
    return ScreenFacts(key, fine, frozenset(labels), tuple(sorted(actionables)), package)


def screen_key(tree: UiTree) -> str:
    """The coarse screen identity of `tree` (see the module docstring)."""
    return screen_facts(tree).key


_WORD = re.compile(r"[a-z0-9][a-z0-9'.&-]*")


def label_words(label: str) -> set[str]:
    """Lower-case words of a label (for matching what was typed or read later)."""
    return set(_WORD.findall(label.lower()))
