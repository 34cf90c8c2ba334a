"""Tasks on Notes (com.example.notes, seen)."""

from __future__ import annotations

import random
from typing import Any

from coadapt.apps.notes import LABELS, SAMPLE_BODIES, SAMPLE_TITLES, sample_notes

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.notes"
NEW_TITLES = ("Dentist", "Call mom", "Ideas for Q3", "Bike repair", "Plant care", "Concert", "Tax papers",
              "Yoga class", "Pizza dough", "Holiday cards", "Lunch menu", "Old photos")


def _notes(device) -> list[dict[str, Any]]:
    return device.read_app_state(APP)["notes"]


class _NotesTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, n: int, *, must: tuple[dict[str, Any], ...] = (), avoid: tuple[str, ...] = ()):
        notes = sample_notes(rng, n, avoid=tuple(m["title"] for m in must) + avoid)
        for m in must:
            notes.insert(rng.randrange(len(notes) + 1), {"body": rng.choice(SAMPLE_BODIES), "label": rng.choice(LABELS), "pinned": False, **m})
        for i, note in enumerate(notes):
            note["id"] = i + 1
        return {APP: {"notes": notes, "sort": "newest", "next_id": len(notes) + 1}}

    def _open_note(self, o: OracleCtx, title: str) -> Solution:
        yield o.tap(text=title)


class NotesAddNote(_NotesTask):
    name = "NotesAddNote"
    template = 'Create a note titled "{title}" with the text "{body}".'
    params = {"title": "title of the new note", "body": "text of the new note"}
    kind = "entry"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(NEW_TITLES), "body": rng.choice(SAMPLE_BODIES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(0, 4), avoid=(self.values["title"],))

    def is_successful(self, device, answer):
        hits = [n for n in _notes(device) if n["title"] == self.values["title"]]
        return float(len(hits) == 1 and hits[0]["body"].strip() == self.values["body"])

    def solve(self, o):
        yield o.tap(text="New note")
        yield o.type(self.values["title"], rid="title")
        yield o.type(self.values["body"], rid="body")
        yield o.tap(text="Save")
        yield o.done()


class NotesRenameNote(_NotesTask):
    name = "NotesRenameNote"
    template = 'Rename the note "{old}" to "{new}".'
    params = {"old": "current title", "new": "new title"}
    kind = "edit"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"old": rng.choice(SAMPLE_TITLES), "new": rng.choice(NEW_TITLES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 5), must=({"title": self.values["old"]},), avoid=(self.values["new"],))

    def is_successful(self, device, answer):
        titles = [n["title"] for n in _notes(device)]
        before = len(self.states()[APP]["notes"])
        return float(self.values["new"] in titles and self.values["old"] not in titles and len(titles) == before)

    def solve(self, o):
        yield o.tap(text=self.values["old"])
        yield o.type(self.values["new"], rid="title", clear=True)
        yield o.tap(text="Save")
        yield o.done()


class NotesDeleteNote(_NotesTask):
    name = "NotesDeleteNote"
    template = 'Delete the note "{title}".'
    params = {"title": "title of the note to delete"}
    kind = "delete"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 5), must=({"title": self.values["title"]},))

    def is_successful(self, device, answer):
        titles = [n["title"] for n in _notes(device)]
        return float(self.values["title"] not in titles and len(titles) == len(self.states()[APP]["notes"]) - 1)

    def solve(self, o):
        yield o.tap(text=self.values["title"])
        yield o.tap(text="Delete")
        yield o.done()


class NotesPinNote(_NotesTask):
    name = "NotesPinNote"
    template = 'Pin the note "{title}" so it stays at the top.'
    params = {"title": "title of the note to pin"}
    kind = "toggle"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 5), must=({"title": self.values["title"]},))

    def is_successful(self, device, answer):
        notes = _notes(device)
        target = [n for n in notes if n["title"] == self.values["title"]]
        others_pinned = [n for n in notes if n["pinned"] and n["title"] != self.values["title"]]
        return float(len(target) == 1 and target[0]["pinned"] and not others_pinned)

    def solve(self, o):
        yield o.tap(text=self.values["title"])
        yield o.tap(rid="pinned")
        yield o.tap(text="Save")
        yield o.done()


class NotesSetLabel(_NotesTask):
    name = "NotesSetLabel"
    template = 'Give the note "{title}" the label {label}.'
    params = {"title": "title of the note", "label": "label to set"}
    kind = "edit"
    complexity = 3
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES), "label": rng.choice(LABELS)}

    def initial_state(self, rng):
        other = [lb for lb in LABELS if lb != self.values["label"]]
        return self._base(rng, rng.randint(2, 5), must=({"title": self.values["title"], "label": rng.choice(other)},))

    def is_successful(self, device, answer):
        target = [n for n in _notes(device) if n["title"] == self.values["title"]]
        return float(len(target) == 1 and target[0]["label"] == self.values["label"])

    def solve(self, o):
        yield o.tap(text=self.values["title"])
        yield o.tap(rid="label")
        yield o.tap(text=self.values["label"])
        yield o.tap(text="Save")
        yield o.done()


class NotesCountLabel(_NotesTask):
    name = "NotesCountLabel"
    template = "How many notes have the label {label}? Answer with a number."
    params = {"label": "label to count"}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"label": rng.choice(LABELS)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, 6))

    def expected(self) -> int:
        return sum(1 for n in self.states()[APP]["notes"] if n["label"] == self.values["label"])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        count = sum(1 for e in o.obs.elements if e.text == self.values["label"] and e.resource_id.endswith(":id/meta"))
        yield o.done(str(count))


class NotesAddPinnedWorkNote(_NotesTask):
    name = "NotesAddPinnedWorkNote"
    template = 'Create a pinned note titled "{title}" with the label Work and the text "{body}".'
    params = {"title": "title of the new note", "body": "text of the note"}
    kind = "multi"
    complexity = 4
    max_steps = 14

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(NEW_TITLES), "body": rng.choice(SAMPLE_BODIES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(0, 4), avoid=(self.values["title"],))

    def is_successful(self, device, answer):
        hits = [n for n in _notes(device) if n["title"] == self.values["title"]]
        return float(len(hits) == 1 and hits[0]["pinned"] and hits[0]["label"] == "Work"
                     and hits[0]["body"].strip() == self.values["body"])

    def solve(self, o):
        yield o.tap(text="New note")
        yield o.type(self.values["title"], rid="title")
        yield o.type(self.values["body"], rid="body")
        yield o.tap(rid="label")
        yield o.tap(text="Work")
        yield o.tap(rid="pinned")
        yield o.tap(text="Save")
        yield o.done()


class NotesShareByEmail(_NotesTask):
    name = "NotesShareByEmail"
    template = 'Email the note "{title}" to {email}.'
    params = {"title": "title of the note", "email": "recipient address"}
    kind = "infeasible"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES), "email": rng.choice(["sam@example.com", "lee@example.org", "kim@example.net"])}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 4), must=({"title": self.values["title"]},))

    def is_successful(self, device, answer):
        return 0.0  # Notes cannot send email; only declaring it infeasible succeeds.

    def solve(self, o):
        yield o.tap(text=self.values["title"])
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    NotesAddNote, NotesRenameNote, NotesDeleteNote, NotesPinNote, NotesSetLabel, NotesCountLabel,
    NotesAddPinnedWorkNote, NotesShareByEmail,
)
