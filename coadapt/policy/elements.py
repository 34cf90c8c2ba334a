"""Naming screen elements in actions: which element a name means, and which name means an element."""

from __future__ import annotations

import re
from typing import Callable

from coadapt.android_env.errors import ActionError
from coadapt.android_env.observation import Observation
from coadapt.android_env.uitree import UiElement

from .lexer import COORD_STR_RE


def tappable(e: UiElement) -> bool:
    """What a tap can act on."""
    return e.clickable or e.long_clickable or e.checkable or e.editable


def editable(e: UiElement) -> bool:
    """A text field."""
    return e.editable


def scrollable(e: UiElement) -> bool:
    """A scroll container."""
    return e.scrollable


def looks_like_point(s: str) -> bool:
    """A quoted UI-TARS box such as '(120,540)' rather than an element name (a lone number is a name)."""
    return bool(COORD_STR_RE.fullmatch(s)) and not re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", s)


def element_names(e: UiElement) -> tuple[str, ...]:
    """The names an action may call `e` by, most preferred first: text, description, hint."""
    return tuple(dict.fromkeys(n for n in (e.text, e.content_desc, e.hint) if n))


def resolve_element(name: str, obs: Observation, prefer: Callable[[UiElement], bool] = tappable) -> int:
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
