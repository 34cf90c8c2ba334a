"""Notes (com.example.notes): a seen app. List of notes, a FAB to add, an editor that saves on
back or with the Save action, search from the toolbar, sorting from the overflow menu."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.widgets import (
    EditText, Fab, IconButton, LayoutCtx, ListItem, ListView, MenuItem, Screen, Spinner, Text, Toolbar,
)

LABELS = ("Personal", "Work", "Ideas", "Shopping")


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


class NotesApp(SimApp):
    package = "com.example.notes"
    label = "Notes"
    icon = "note"
    color = "#F9AB00"

    def reset_state(self) -> None:
        self.state = NotesState()
        self.draft: _Draft | None = None
        self.query = ""

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        notes = [Note(**n) for n in data.get("notes", [])]
        self.state = NotesState(notes=notes, sort=data.get("sort", "newest"),
                                next_id=data.get("next_id", max((n.id for n in notes), default=0) + 1))
        self.home_screen()
        self.draft = None

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
            self.draft = _Draft(note.id, note.title, note.body, note.label)
        self.push("editor")
        if note is None:
            self.focus("title")

    def _save(self) -> None:
        d = self.draft
        if d is None:
            return
        if d.note_id is None:
            if d.title.strip() or d.body.strip():
                self.state.notes.append(Note(self.state.next_id, d.title.strip(), d.body, d.label))
                self.state.next_id += 1
        else:
            for n in self.state.notes:
                if n.id == d.note_id:
                    n.title, n.body, n.label = d.title.strip(), d.body, d.label
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

    def _start_search(self) -> None:
        self.query = ""
        self.push("search")
        self.focus("query")

    def _toggle_pin(self) -> None:
        d = self.draft
        if d is None or d.note_id is None:
            return
        for n in self.state.notes:
            if n.id == d.note_id:
                n.pinned = not n.pinned

    def on_back(self) -> bool:
        if self.route.name == "editor" and not self.route.has_overlay():
            self._save()
            return True
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        name = self.route.name
        if name == "editor" and self.draft is not None:
            return self._editor()
        if name == "search":
            return self._search()
        return self._list()

    def _item(self, n: Note) -> ListItem:
        preview = n.body.replace("\n", " ")
        return ListItem(n.title or "(untitled)", preview, on_click=lambda n=n: self._open(n),
                        icon="star" if n.pinned else "note", meta=n.label, id="note")

    def _list(self) -> Screen:
        def sort(mode: str) -> None:
            self.state.sort = mode

        return Screen(
            toolbar=Toolbar(
                "Notes",
                actions=[IconButton("search", "Search notes", self._start_search, id="search")],
                menu=[MenuItem("Sort by title", lambda: sort("title"), checked=self.state.sort == "title"),
                      MenuItem("Sort by newest", lambda: sort("newest"), checked=self.state.sort == "newest")],
            ),
            body=[ListView("notes_list", [self._item(n) for n in self._sorted()], empty_text="No notes yet. Tap + to add one.")],
            fab=Fab("add", "New note", lambda: self._open(None)),
        )

    def _editor(self) -> Screen:
        d = self.draft
        assert d is not None
        existing = d.note_id is not None
        pinned = existing and any(n.pinned for n in self.state.notes if n.id == d.note_id)

        def set_title(v: str) -> None:
            d.title = v

        def set_body(v: str) -> None:
            d.body = v

        def set_label(v: str) -> None:
            d.label = v

        actions = [IconButton("check", "Save", self._save, id="save")]
        if existing:
            actions = [IconButton("star" if pinned else "star_border", "Unpin" if pinned else "Pin", self._toggle_pin, id="pin"),
                       IconButton("delete", "Delete note", self._delete, id="delete"), *actions]
        return Screen(
            toolbar=Toolbar("Edit note" if existing else "New note", nav="back", on_nav=self._save, actions=actions),
            body=[
                EditText("title", d.title, set_title, hint="Title", label="Title"),
                EditText("body", d.body, set_body, hint="Note", label="Note", multiline=True, lines=4),
                Spinner("label", LABELS, d.label, set_label, label="Label"),
            ],
        )

    def _search(self) -> Screen:
        def set_q(v: str) -> None:
            self.query = v

        q = self.query.strip().lower()
        hits = [n for n in self._sorted() if q and (q in n.title.lower() or q in n.body.lower())]

        def leave() -> None:
            self.query = ""
            self.pop()

        body = [EditText("query", self.query, set_q, hint="Search notes", kind="search", icon="search")]
        if q and not hits:
            body.append(Text(f'No notes match "{self.query.strip()}"', "body2", align="center", id="no_results"))
        body.append(ListView("results", [self._item(n) for n in hits]))
        return Screen(toolbar=Toolbar("Search", nav="back", on_nav=leave), body=body)
