"""Contacts (com.example.contacts), a seen app: an alphabetical contact list with All and
Favourites tabs, an extended "Add contact" button, a contact page with Call, favourite, Edit and
Delete buttons, and a form for new and edited contacts."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, EditText, Fab, KeyValue, LayoutCtx, ListItem, ListView, Row, Screen, Tabs, Text, Toolbar,
)

MAX_CONTACTS = 7
"""The list shows at most this many rows above the "Add contact" button without scrolling."""

FIRST_NAMES = (
    "Ana", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hiro", "Isla", "Jonas", "Kemi", "Liam",
    "Maya", "Nikolai", "Olivia", "Priya", "Quentin", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wei", "Yusuf",
)
LAST_NAMES = (
    "Silva", "Okafor", "Martin", "Kowalski", "Nguyen", "Haddad", "Lee", "Tanaka", "Moreau", "Berg", "Adeyemi",
    "Walsh", "Patel", "Ivanova", "Brown", "Sharma", "Dubois", "Garcia", "Khan", "Rossi", "Fischer", "Chen",
)
COMPANIES = ("Acme Corp", "Northwind", "Globex", "Initech", "Umbrella Labs", "Blue Harbor", "Greenleaf", "")
MAIL_DOMAINS = ("example.com", "mail.example.org", "example.net")


@dataclass
class Contact:
    id: int
    name: str
    phone: str = ""
    email: str = ""
    company: str = ""
    favourite: bool = False


@dataclass
class Call:
    contact_id: int
    number: str
    time: str


@dataclass
class ContactsState:
    contacts: list[Contact] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    next_id: int = 1


@dataclass
class _Draft:
    contact_id: int | None
    name: str = ""
    phone: str = ""
    email: str = ""
    company: str = ""


def digits(phone: str) -> str:
    """The digits of a phone number ("+1 (415) 555-0132" -> "14155550132")."""
    return "".join(ch for ch in phone if ch.isdigit())


def sample_phone(rng: random.Random) -> str:
    return f"+1 {rng.choice((202, 312, 415, 617, 646, 720))} 555 {rng.randrange(100, 200):04d}"


def sample_email(rng: random.Random, name: str) -> str:
    first, _, last = name.lower().partition(" ")
    local = rng.choice((f"{first}.{last}", f"{first}{last[:1]}", f"{first[:1]}{last}"))
    return f"{local}@{rng.choice(MAIL_DOMAINS)}"


def sample_names(rng: random.Random, n: int, avoid: tuple[str, ...] = ()) -> list[str]:
    """`n` distinct full names with distinct first names, none in `avoid` (nor sharing a first name with them)."""
    avoid_first = {a.split(" ")[0] for a in avoid}
    firsts = rng.sample([f for f in FIRST_NAMES if f not in avoid_first], n)
    return [f"{f} {rng.choice(LAST_NAMES)}" for f in firsts]


def sample_contacts(rng: random.Random, n: int, avoid: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """`n` plausible contacts (state dicts) with distinct names and numbers, none named in `avoid`."""
    out: list[dict[str, Any]] = []
    phones: set[str] = set()
    for i, name in enumerate(sample_names(rng, n, avoid)):
        phone = sample_phone(rng)
        while digits(phone) in phones:
            phone = sample_phone(rng)
        phones.add(digits(phone))
        out.append({"id": i + 1, "name": name, "phone": phone, "email": sample_email(rng, name),
                    "company": rng.choice(COMPANIES), "favourite": rng.random() < 0.3})
    return out


class ContactsApp(SimApp):
    package = "com.example.contacts"
    label = "Contacts"
    icon = "person"
    color = "#1A73E8"

    def reset_state(self) -> None:
        self.state = ContactsState()
        self.draft: _Draft | None = None
        self.tab = 0

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        contacts = [Contact(**c) for c in data.get("contacts", [])]
        self.state = ContactsState(contacts=contacts, calls=[Call(**c) for c in data.get("calls", [])],
                                   next_id=data.get("next_id", max((c.id for c in contacts), default=0) + 1))
        self.draft = None
        self.tab = 0
        self.home_screen()

    # ------------------------------------------------------------------ actions

    def _get(self, contact_id: int | None) -> Contact | None:
        return next((c for c in self.state.contacts if c.id == contact_id), None)

    def _sorted(self, favourites: bool = False) -> list[Contact]:
        rows = [c for c in self.state.contacts if c.favourite or not favourites]
        return sorted(rows, key=lambda c: (c.name.lower(), c.id))

    def _open_form(self, contact: Contact | None) -> None:
        if contact is None:
            self.draft = _Draft(None)
        else:
            self.draft = _Draft(contact.id, contact.name, contact.phone, contact.email, contact.company)
        self.push("form")
        if contact is None:
            self.focus("name")

    def _save(self) -> None:
        d = self.draft
        if d is None:
            return
        if not d.name.strip():
            self.toast("Enter a name")
            return
        if d.contact_id is None:
            c = Contact(self.state.next_id, d.name.strip(), d.phone.strip(), d.email.strip(), d.company.strip())
            self.state.contacts.append(c)
            self.state.next_id += 1
            self.draft = None
            self.replace("detail", contact_id=c.id)  # a new contact opens on its page, as on Android
            self.toast("Contact saved")
            return
        c = self._get(d.contact_id)
        if c is not None:
            c.name, c.phone, c.email, c.company = d.name.strip(), d.phone.strip(), d.email.strip(), d.company.strip()
        self.draft = None
        self.pop()

    def _cancel(self) -> None:
        self.draft = None
        self.pop()

    def _delete(self, contact: Contact) -> None:
        index = self.state.contacts.index(contact)
        self.state.contacts.remove(contact)
        self.home_screen()

        def undo() -> None:
            self.state.contacts.insert(min(index, len(self.state.contacts)), contact)

        self.snackbar("Contact deleted", "Undo", undo)

    def _toggle_favourite(self, contact: Contact) -> None:
        contact.favourite = not contact.favourite
        self.toast("Added to favourites" if contact.favourite else "Removed from favourites")

    def _call(self, contact: Contact) -> None:
        if not contact.phone:
            self.toast("No phone number")
            return
        self.state.calls.append(Call(contact.id, contact.phone, self.now().isoformat(timespec="seconds")))
        self.toast(f"Calling {contact.name}…")

    def on_back(self) -> bool:
        if self.route.name == "form" and not self.route.has_overlay():
            self._cancel()  # leaving the form discards it; Save keeps it
            return True
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        if self.route.name == "form" and self.draft is not None:
            return self._form()
        if self.route.name == "detail":
            contact = self._get(self.route.params.get("contact_id"))
            if contact is not None:
                return self._detail(contact)
            self.home_screen()
        return self._list()

    def _list(self) -> Screen:
        favourites = self.tab == 1

        def select(i: int) -> None:
            self.tab = i

        items = [ListItem(c.name, c.phone or c.email, avatar=c.name, meta="Favourite" if c.favourite and not favourites else "",
                          on_click=lambda c=c: self.push("detail", contact_id=c.id), id="contact")
                 for c in self._sorted(favourites)]
        empty = "No favourites yet. Open a contact and tap Add to favourites." if favourites else \
            "No contacts yet. Tap Add contact to add one."
        return Screen(
            toolbar=Toolbar("Contacts"),
            tabs=Tabs(["All", "Favourites"], self.tab, select),
            body=[ListView("contacts_list", items, empty_text=empty)],
            fab=Fab("add", "Add contact", lambda: self._open_form(None), label="Add contact"),
        )

    def _detail(self, c: Contact) -> Screen:
        fav = Button("Remove from favourites" if c.favourite else "Add to favourites",
                     lambda: self._toggle_favourite(c), kind="tonal", id="favourite")
        return Screen(
            toolbar=Toolbar("Contact", nav="back", on_nav=self.pop),
            body=[
                Text(c.name, "headline", align="center", id="name", vpad=12),
                *([Text(c.company, "body2", align="center", id="subtitle", vpad=0)] if c.company else []),
                Row([Button("Call", lambda: self._call(c), id="call"), fav], align="center", pad=8),
                KeyValue("Phone", c.phone, id="phone"),
                KeyValue("Email", c.email, id="email"),
                KeyValue("Company", c.company, id="company"),
                ButtonRow([Button("Delete", lambda: self._delete(c), kind="outlined", id="delete"),
                           Button("Edit", lambda: self._open_form(c), id="edit")]),
            ],
        )

    def _form(self) -> Screen:
        d = self.draft
        assert d is not None

        def setter(attr: str):
            def set_value(v: str) -> None:
                setattr(d, attr, v)

            return set_value

        buttons = [Button("Cancel", self._cancel, kind="outlined", id="cancel"), Button("Save", self._save, id="save")]
        return Screen(
            toolbar=Toolbar("Edit contact" if d.contact_id is not None else "New contact", nav="back", on_nav=self._cancel),
            body=[
                EditText("name", d.name, setter("name"), hint="Name", label="Name"),
                EditText("phone", d.phone, setter("phone"), hint="Phone", label="Phone"),
                EditText("email", d.email, setter("email"), hint="Email", label="Email"),
                EditText("company", d.company, setter("company"), hint="Company", label="Company"),
                ButtonRow(buttons),
            ],
        )


APP = ContactsApp
GROUP = "seen"
