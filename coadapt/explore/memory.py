"""Exploration memory: what the explorer found, as short text the policy reads in its prompt
(the way AppAgent writes exploration documents): which menu or drawer holds which entry, and
which screen an entry opens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

MAX_ITEMS = 6
_NOT_A_PLACE = ("back", "navigate", "close", "cancel", "save", "delete", "remove", "discard", "done", "ok", "on", "off")


def _name(actionable: str) -> str:
    """The name part of an actionable signature `Class:rid:name[@list]` ("" for list rows)."""
    parts = actionable.split(":", 2)
    return parts[2].split("@", 1)[0] if len(parts) == 3 else ""
"""Entries listed per opener."""


def memory_lines(steps: Sequence, app: str, limit: int = 12) -> list[str]:
    """One line per opener whose first use revealed new entries (`"More options" holds: "log
    expense", ...`), read off an exploration's steps; most revealing first, at most `limit`."""
    lines: list[tuple[int, str]] = []
    seen: set[tuple[str, str]] = set()
    for s in steps:
        ev = s.event
        if ev.kind != "tap" or not s.new_screen or not s.effective or s.dst_facts.package != app:
            continue
        opener = ev.label
        if not opener or opener.lower().split()[0] in _NOT_A_PLACE or any(c.isdigit() for c in opener):
            continue
        if ev.in_list:
            continue  # a list row: data, not a place
        before = {_name(a) for a in s.src_facts.actionables}
        new = sorted({n for n in (_name(a) for a in s.dst_facts.actionables) if n and n not in before and len(n) <= 30
                      and not any(c.isdigit() or c == "$" for c in n) and n.split()[0] not in _NOT_A_PLACE})
        where = (s.src, opener.lower())
        if not new or where in seen:
            continue
        seen.add(where)
        shown = ", ".join(f'"{lab}"' for lab in new[:MAX_ITEMS])
        line = f'"{opener}" holds: {shown}'
        if any(line == known for _, known in lines):
            continue
        lines.append((len(new), line))
    lines.sort(key=lambda t: -t[0])
    return [line for _, line in lines[:limit]]


def memory_text(steps: Sequence, app: str, limit: int = 12) -> str:
    """The memory as the prompt shows it ("" when nothing was found)."""
    return "\n".join(memory_lines(steps, app, limit))


MEMORY_FILE = "exploration_memory.json"
"""Beside an adapter: the exploration memory its app's prompts showed ({"app": ..., "memory": ...})."""


def save_memory(folder: Path, app: str, memory: str) -> None:
    """Write `app`'s memory beside an adapter (nothing when there is none)."""
    if memory:
        (Path(folder) / MEMORY_FILE).write_text(json.dumps({"app": app, "memory": memory}, ensure_ascii=False))


def load_memory(folder: Path) -> tuple[str, str] | None:
    """(app, memory) saved beside an adapter, or None."""
    path = Path(folder) / MEMORY_FILE
    if not path.is_file():
        return None
    saved = json.loads(path.read_text())
    return saved["app"], saved["memory"]
