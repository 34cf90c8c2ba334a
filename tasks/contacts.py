"""Tasks on Contacts (com.example.contacts, seen)."""

from __future__ import annotations

import random
from typing import Any

from coadapt.apps.contacts import (
    COMPANIES, FIRST_NAMES, LAST_NAMES, MAX_CONTACTS, digits, sample_contacts, sample_email, sample_phone,
)

from .base import TaskTemplate, answer_matches

APP = "com.example.contacts"


def _contacts(device) -> list[dict[str, Any]]:
    return device.read_app_state(APP)["contacts"]


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


class _ContactsTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, n: int, *, must: tuple[dict[str, Any], ...] = (), avoid: tuple[str, ...] = (),
              avoid_phones: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
        """`n` contacts in all: the `must` ones (merged over random details) and random others
        whose names and numbers clash with none of them nor with `avoid`/`avoid_phones`."""
        names = tuple(m["name"] for m in must) + avoid
        others = sample_contacts(rng, n - len(must), avoid=names)
        taken = {digits(p) for p in avoid_phones} | {digits(m["phone"]) for m in must if "phone" in m}
        for c in others:
            while digits(c["phone"]) in taken:
                c["phone"] = sample_phone(rng)
            taken.add(digits(c["phone"]))
        contacts = list(others)
        for m in must:
            phone = sample_phone(rng)
            while digits(phone) in taken:
                phone = sample_phone(rng)
            taken.add(digits(phone))
            base = {"phone": phone, "email": sample_email(rng, m["name"]), "company": rng.choice(COMPANIES),
                    "favourite": rng.random() < 0.3}
            contacts.insert(rng.randrange(len(contacts) + 1), {**base, **m})
        for i, c in enumerate(contacts):
            c["id"] = i + 1
        return {APP: {"contacts": contacts, "calls": [], "next_id": len(contacts) + 1}}

    def initial_contacts(self) -> list[dict[str, Any]]:
        return self.states()[APP]["contacts"]

    def _target(self, name: str) -> dict[str, Any]:
        return next(c for c in self.initial_contacts() if c["name"] == name)

    def _others_unchanged(self, device, *, except_names: tuple[str, ...] = (), extra: int = 0) -> bool:
        """Every initial contact not in `except_names` is still there, unchanged, and the list
        has exactly `extra` more contacts than those plus the excepted ones still present."""
        now = _contacts(device)
        keep = [c for c in self.initial_contacts() if c["name"] not in except_names]
        return all(c in now for c in keep) and len(now) == len(self.initial_contacts()) + extra


class ContactsAddContact(_ContactsTask):
    name = "ContactsAddContact"
    template = 'Add a contact named "{name}" with the phone number {phone}.'
    params = {"name": "full name of the new contact", "phone": "their phone number"}
    kind = "entry"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"name": _name(rng), "phone": sample_phone(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, MAX_CONTACTS - 1), avoid=(self.values["name"],), avoid_phones=(self.values["phone"],))

    def is_successful(self, device, answer):
        hits = [c for c in _contacts(device) if c["name"].strip() == self.values["name"]]
        return float(len(hits) == 1 and digits(hits[0]["phone"]) == digits(self.values["phone"])
                     and self._others_unchanged(device, extra=1))

    def solve(self, o):
        yield o.tap(text="Add contact")
        yield o.type(self.values["name"], rid="name")
        yield o.type(self.values["phone"], rid="phone")
        yield o.tap(text="Save")
        yield o.done()


class ContactsEditPhone(_ContactsTask):
    name = "ContactsEditPhone"
    template = "Change {name}'s phone number to {phone}."
    params = {"name": "full name of the contact", "phone": "the new phone number"}
    kind = "edit"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"name": _name(rng), "phone": sample_phone(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, MAX_CONTACTS), must=({"name": self.values["name"]},),
                          avoid_phones=(self.values["phone"],))

    def is_successful(self, device, answer):
        before = self._target(self.values["name"])
        hits = [c for c in _contacts(device) if c["id"] == before["id"]]
        if len(hits) != 1:
            return 0.0
        after = hits[0]
        same_rest = all(after[k] == before[k] for k in ("name", "email", "company", "favourite"))
        return float(digits(after["phone"]) == digits(self.values["phone"]) and same_rest
                     and self._others_unchanged(device, except_names=(self.values["name"],)))

    def solve(self, o):
        yield o.tap(text=self.values["name"])
        yield o.tap(text="Edit")
        yield o.type(self.values["phone"], rid="phone", clear=True)
        yield o.tap(text="Save")
        yield o.done()


class ContactsDeleteContact(_ContactsTask):
    name = "ContactsDeleteContact"
    template = "Delete the contact {name}."
    params = {"name": "full name of the contact to delete"}
    kind = "delete"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"name": _name(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, MAX_CONTACTS), must=({"name": self.values["name"]},))

    def is_successful(self, device, answer):
        names = [c["name"] for c in _contacts(device)]
        return float(self.values["name"] not in names
                     and self._others_unchanged(device, except_names=(self.values["name"],), extra=-1))

    def solve(self, o):
        yield o.tap(text=self.values["name"])
        yield o.tap(text="Delete")
        yield o.done()


class ContactsAddFavourite(_ContactsTask):
    name = "ContactsAddFavourite"
    template = "Add {name} to your favourites."
    params = {"name": "full name of the contact"}
    kind = "toggle"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"name": _name(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, MAX_CONTACTS), must=({"name": self.values["name"], "favourite": False},))

    def is_successful(self, device, answer):
        before = self._target(self.values["name"])
        hits = [c for c in _contacts(device) if c["id"] == before["id"]]
        return float(len(hits) == 1 and hits[0] == {**before, "favourite": True}
                     and self._others_unchanged(device, except_names=(self.values["name"],)))

    def solve(self, o):
        yield o.tap(text=self.values["name"])
        yield o.tap(text="Add to favourites")
        yield o.done()


class ContactsCallContact(_ContactsTask):
    name = "ContactsCallContact"
    template = "Call {name}."
    params = {"name": "full name of the contact to call"}
    kind = "navigation"
    complexity = 1
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"name": _name(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, MAX_CONTACTS), must=({"name": self.values["name"]},))

    def is_successful(self, device, answer):
        target = self._target(self.values["name"])
        calls = device.read_app_state(APP)["calls"]
        return float(len(calls) == 1 and calls[0]["contact_id"] == target["id"]
                     and digits(calls[0]["number"]) == digits(target["phone"]) and self._others_unchanged(device))

    def solve(self, o):
        yield o.tap(text=self.values["name"])
        yield o.tap(text="Call")
        yield o.done()


class ContactsGetEmail(_ContactsTask):
    name = "ContactsGetEmail"
    template = "What is {name}'s email address?"
    params = {"name": "full name of the contact"}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"name": _name(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, MAX_CONTACTS), must=({"name": self.values["name"]},))

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self._target(self.values["name"])["email"]))

    def solve(self, o):
        yield o.tap(text=self.values["name"])
        yield o.done(o.element(rid="email").text)


class ContactsFindByPhone(_ContactsTask):
    name = "ContactsFindByPhone"
    template = "Whose phone number is {phone}? Answer with their full name."
    params = {"phone": "a phone number in the contact list"}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"phone": sample_phone(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, MAX_CONTACTS), must=({"name": _name(rng), "phone": self.values["phone"]},))

    def is_successful(self, device, answer):
        owner = next(c for c in self.initial_contacts() if digits(c["phone"]) == digits(self.values["phone"]))
        return float(answer_matches(answer, owner["name"]))

    def solve(self, o):
        # Each row is a title (the name) followed by its subtitle (the number).
        els = o.obs.elements
        i = o.index(text=self.values["phone"])
        yield o.done(els[i - 1].text)


class ContactsCountFavourites(_ContactsTask):
    name = "ContactsCountFavourites"
    template = "How many contacts are in your favourites? Answer with a number."
    params: dict[str, str] = {}
    kind = "retrieval"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        state = self._base(rng, rng.randint(3, MAX_CONTACTS))
        contacts = state[APP]["contacts"]
        for c in contacts:
            c["favourite"] = False
        for c in rng.sample(contacts, rng.randint(1, min(4, len(contacts)))):
            c["favourite"] = True
        return state

    def is_successful(self, device, answer):
        return float(answer_matches(answer, sum(1 for c in self.initial_contacts() if c["favourite"])))

    def solve(self, o):
        yield o.tap(desc="Favourites")
        rows = sum(1 for e in o.obs.elements if e.resource_id.endswith(":id/title"))
        yield o.done(str(rows))


class ContactsAddFavouriteContact(_ContactsTask):
    name = "ContactsAddFavouriteContact"
    template = ('Add a new contact "{name}" with the phone number {phone}, the email {email} and the company '
                '{company}, and add them to your favourites.')
    params = {"name": "full name", "phone": "phone number", "email": "email address", "company": "company name"}
    kind = "multi"
    complexity = 4
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        name = _name(rng)
        return {"name": name, "phone": sample_phone(rng), "email": sample_email(rng, name),
                "company": rng.choice([c for c in COMPANIES if c])}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, MAX_CONTACTS - 1), avoid=(self.values["name"],), avoid_phones=(self.values["phone"],))

    def is_successful(self, device, answer):
        v = self.values
        hits = [c for c in _contacts(device) if c["name"].strip() == v["name"]]
        if len(hits) != 1:
            return 0.0
        c = hits[0]
        return float(digits(c["phone"]) == digits(v["phone"]) and c["email"].strip().lower() == v["email"].lower()
                     and c["company"].strip().lower() == v["company"].lower() and c["favourite"]
                     and self._others_unchanged(device, extra=1))

    def solve(self, o):
        v = self.values
        yield o.tap(text="Add contact")
        yield o.type(v["name"], rid="name")
        yield o.type(v["phone"], rid="phone")
        yield o.type(v["email"], rid="email")
        yield o.type(v["company"], rid="company")
        yield o.tap(text="Save")
        yield o.tap(text="Add to favourites")
        yield o.done()


class ContactsBlockNumber(_ContactsTask):
    name = "ContactsBlockNumber"
    template = "Block {name}'s number so they can no longer call you."
    params = {"name": "full name of the contact"}
    kind = "infeasible"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"name": _name(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(3, MAX_CONTACTS), must=({"name": self.values["name"]},))

    def is_successful(self, device, answer):
        return 0.0  # Contacts has no call blocking; only declaring it infeasible succeeds.

    def solve(self, o):
        yield o.tap(text=self.values["name"])
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    ContactsAddContact, ContactsEditPhone, ContactsDeleteContact, ContactsAddFavourite, ContactsCallContact,
    ContactsGetEmail, ContactsFindByPhone, ContactsCountFavourites, ContactsAddFavouriteContact, ContactsBlockNumber,
)
