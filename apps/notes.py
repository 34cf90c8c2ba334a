"""Notes (com.example.notes), a seen app: a list of notes, an extended "New note" button, an
editor with Save and Delete buttons, a Pinned switch and a label dropdown."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, Chip, EditText, Fab, LayoutCtx, ListItem, ListView, Row, Screen, Spinner, Switch, Toolbar,
)

LABELS = ("Personal", "Work", "Ideas", "Shopping")
SAMPLE_TITLES = (
    "Groceries", "Meeting notes", "Gift ideas", "Book list", "Packing list", "Recipe ideas", "Workout plan",
    "Travel plans", "Project kickoff", "Garden", "Birthday party", "Movie night", "Car service", "Weekend",
)
SAMPLE_BODIES = (
    "milk, eggs, bread", "call the plumber", "ask about the budget", "tent and sleeping bags",
    "try the new pasta place", "three sets of ten", "water the tomatoes", "book the tickets",
)


@dataclass
class Note:
    id: int
    title: str
    body: str = ""
    label: str = "Personal"
    pinned: bool = False


@dataclass
class NotesState:
    notes: list[Note] = field(default_factory=list)
    sort: str = "newest"  # "newest" or "title"
    next_id: int = 1


@dataclass
class _Draft:
    note_id: int | None
    title: str = ""
    body: str = ""
    label: str = "Personal"
    pinned: bool = False


def sample_notes(rng: random.Random, n: int, avoid: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """`n` plausible notes with distinct titles (none in `avoid`), as state dicts."""
    titles = rng.sample([t for t in SAMPLE_TITLES if t not in avoid], n)
    return [{"id": i + 1, "title": t, "body": rng.choice(SAMPLE_BODIES), "label": rng.choice(LABELS), "pinned": False}
            for i, t in enumerate(titles)]


class NotesApp(SimApp):
    package = "com.example.notes"
    label = "Notes"
    icon = "note"
    color = "#F9AB00"

    def reset_state(self) -> None:
        self.state = NotesState()
        self.draft: _Draft | None = None

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        notes = [Note(**n) for n in data.get("notes", [])]
        self.state = NotesState(notes=notes, sort=data.get("sort", "newest"),
                                next_id=data.get("next_id", max((n.id for n in notes), default=0) + 1))
        self.draft = None
        self.home_screen()

    # ------------------------------------------------------------------ actions

    def _sorted(self) -> list[Note]:
        notes = list(self.state.notes)
        if self.state.sort == "title":
            notes.sort(key=lambda n: n.title.lower())
        else:
            notes.sort(key=lambda n: -n.id)
        notes.sort(key=lambda n: not n.pinned)
        return notes

    def _open(self, note: Note | None) -> None:
        if note is None:
            self.draft = _Draft(None)
        else:
            self.draft = _Draft(note.id, note.title, note.body, note.label, note.pinned)
        self.push("editor")
        if note is None:
            self.focus("title")

    def _save(self) -> None:
        d = self.draft
        if d is None:
            return
        if d.note_id is None:
            if d.title.strip() or d.body.strip():
                self.state.notes.append(Note(self.state.next_id, d.title.strip(), d.body, d.label, d.pinned))
                self.state.next_id += 1
        else:
            for n in self.state.notes:
                if n.id == d.note_id:
                    n.title, n.body, n.label, n.pinned = d.title.strip(), d.body, d.label, d.pinned
        self.draft = None
        self.pop()

    def _delete(self) -> None:
        d = self.draft
        self.draft = None
        self.pop()
        if d is None or d.note_id is None:
            return
        removed = [n for n in self.state.notes if n.id == d.note_id]
        self.state.notes = [n for n in self.state.notes if n.id != d.note_id]

        def undo() -> None:
            self.state.notes.extend(removed)

        self.snackbar("Note deleted", "Undo", undo)

    def on_back(self) -> bool:
        if self.route.name == "editor" and not self.route.has_overlay():
            self._save()
            return True
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        if self.route.name == "editor" and self.draft is not None:
            return self._editor()
        return self._list()

    def _list(self) -> Screen:
        def sort(mode: str) -> None:
            self.state.sort = mode

        items = [ListItem(n.title or "(untitled)", n.body.replace("\n", " "), on_click=lambda n=n: self._open(n),
                          icon="star" if n.pinned else "note", meta=n.label, id="note") for n in self._sorted()]
        return Screen(
            toolbar=Toolbar("Notes"),
            body=[
                Row([Chip("Newest", self.state.sort == "newest", lambda: sort("newest")),
                     Chip("A–Z", self.state.sort == "title", lambda: sort("title"))], pad=12),
                ListView("notes_list", items, empty_text="No notes yet. Tap New note to add one."),
            ],
            fab=Fab("add", "New note", lambda: self._open(None), label="New note"),
        )

    def _editor(self) -> Screen:
        d = self.draft
        assert d is not None
        existing = d.note_id is not None

        def set_title(v: str) -> None:
            d.title = v

        def set_body(v: str) -> None:
            d.body = v

        def set_label(v: str) -> None:
            d.label = v

        def set_pinned(v: bool) -> None:
            d.pinned = v

        buttons = [Button("Save", self._save, id="save")]
        if existing:
            buttons.insert(0, Button("Delete", self._delete, kind="outlined", id="delete"))
        return Screen(
            toolbar=Toolbar("Edit note" if existing else "New note", nav="back", on_nav=self._save),
            body=[
                EditText("title", d.title, set_title, hint="Title", label="Title"),
                EditText("body", d.body, set_body, hint="Note", label="Note", multiline=True, lines=3),
                Spinner("label", LABELS, d.label, set_label, label="Label"),
                Switch("Pinned", d.pinned, set_pinned, id="pinned", summary="Keep at the top of the list"),
                ButtonRow(buttons),
            ],
        )


APP = NotesApp
GROUP = "seen"
