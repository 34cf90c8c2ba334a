"""Messages (com.example.messages), a seen app: conversations with an unread marker and a
"Mark all as read" button, a thread with a compose field and a Send button, "Mark as unread" and
"Delete" buttons in the thread, and a "Start chat" button that picks a contact."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, Card, Column, EditText, Fab, LayoutCtx, ListItem, ListView, Row, Screen, Spacer, Text,
    Toolbar,
)

BASE_TIME = dt.datetime(2026, 10, 15, 9, 0)
"""When the simulated phone's clock starts (SimConfig.start_time); sample messages are older."""

CONTACTS = (
    ("Alice Chen", "+1 415-555-0132"), ("Ben Okafor", "+1 415-555-0178"), ("Carla Rossi", "+1 650-555-0119"),
    ("David Kim", "+1 408-555-0161"), ("Emma Novak", "+1 510-555-0144"), ("Farid Haddad", "+1 415-555-0190"),
    ("Grace Lee", "+1 650-555-0107"), ("Hugo Martin", "+1 408-555-0125"), ("Isla Brown", "+1 510-555-0183"),
    ("Jonas Weber", "+1 415-555-0156"),
)
THEIR_TEXTS = (
    "Are we still on for lunch tomorrow?", "Running 10 minutes late", "Can you send me the address?",
    "Thanks for yesterday!", "Did you see the game last night?", "The package arrived", "Call me when you're free",
    "See you at 7", "Don't forget the tickets", "Happy birthday!", "What time is the meeting?",
    "I left my umbrella at your place", "Can you pick up milk on the way?", "The train is delayed again",
)
MY_TEXTS = (
    "Sure, sounds good", "On my way", "Thanks!", "I'll check and let you know", "Yes, 7 works", "No problem",
    "Let me think about it", "Great, see you then",
)


@dataclass
class Contact:
    name: str
    phone: str


@dataclass
class Message:
    from_me: bool
    text: str
    time: str  # ISO date and time, minutes precision: "2026-10-15T08:12"


@dataclass
class Conversation:
    id: int
    contact: str  # a contact's name
    unread: bool = False
    messages: list[Message] = field(default_factory=list)


@dataclass
class MessagesState:
    contacts: list[Contact] = field(default_factory=list)
    conversations: list[Conversation] = field(default_factory=list)
    next_id: int = 1


def sample_messages(rng: random.Random, n_contacts: int = 8, n_conversations: int = 4, *,
                    must_have: tuple[str, ...] = (), must_not: tuple[str, ...] = ()) -> dict[str, Any]:
    """A plausible Messages state: `n_contacts` contacts (including `must_have` and `must_not`)
    and `n_conversations` conversations with some of them (every name in `must_have`, none in
    `must_not`), each of 2-4 messages ending before BASE_TIME, some unread."""
    fixed = [c for c in CONTACTS if c[0] in must_have or c[0] in must_not]
    rest = rng.sample([c for c in CONTACTS if c not in fixed], n_contacts - len(fixed))
    contacts = sorted(fixed + rest)
    pool = [c[0] for c in contacts if c[0] not in must_have and c[0] not in must_not]
    with_chat = list(must_have) + rng.sample(pool, n_conversations - len(must_have))
    rng.shuffle(with_chat)
    convs = []
    for i, name in enumerate(with_chat):
        t = BASE_TIME - dt.timedelta(minutes=rng.randint(5, 60 * 24 * 5))
        n = rng.randint(2, 4)
        msgs = []
        mine, theirs = rng.sample(MY_TEXTS, n), rng.sample(THEIR_TEXTS, n)
        from_me = rng.random() < 0.3
        for _ in range(n):
            msgs.append({"from_me": from_me, "text": (mine if from_me else theirs).pop(), "time": ""})
            from_me = not from_me if rng.random() < 0.8 else from_me
        for k in range(n - 1, -1, -1):
            msgs[k]["time"] = t.strftime("%Y-%m-%dT%H:%M")
            t -= dt.timedelta(minutes=rng.randint(2, 300))
        unread = not msgs[-1]["from_me"] and rng.random() < 0.6
        convs.append({"id": i + 1, "contact": name, "unread": unread, "messages": msgs})
    return {"contacts": [{"name": c[0], "phone": c[1]} for c in contacts], "conversations": convs,
            "next_id": len(convs) + 1}


class _Gap(Spacer):
    """Fixed-width space beside a chat bubble, so bubbles sit to the left or right."""

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return ctx.dp(64)


class MessagesApp(SimApp):
    package = "com.example.messages"
    label = "Messages"
    icon = "message"
    color = "#00897B"

    def reset_state(self) -> None:
        self.state = MessagesState()
        self.compose: dict[str, str] = {}  # unsent text per contact

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        convs = [Conversation(c["id"], c["contact"], c.get("unread", False), [Message(**m) for m in c.get("messages", [])])
                 for c in data.get("conversations", [])]
        self.state = MessagesState(
            contacts=[Contact(**c) for c in data.get("contacts", [])], conversations=convs,
            next_id=data.get("next_id", max((c.id for c in convs), default=0) + 1))
        self.compose = {}
        self.home_screen()

    # ------------------------------------------------------------------ actions

    def _conv(self, contact: str) -> Conversation | None:
        return next((c for c in self.state.conversations if c.contact == contact), None)

    def _phone(self, contact: str) -> str:
        return next((c.phone for c in self.state.contacts if c.name == contact), "")

    def _sorted(self) -> list[Conversation]:
        return sorted(self.state.conversations, key=lambda c: c.messages[-1].time if c.messages else "", reverse=True)

    def _open(self, contact: str, replace: bool = False) -> None:
        conv = self._conv(contact)
        if conv is not None:
            conv.unread = False  # reading a conversation marks it read
        (self.replace if replace else self.push)("thread", contact=contact)
        self.route.scroll["thread"] = 10**6  # newest messages in view

    def _send(self, contact: str) -> None:
        text = self.compose.get(contact, "").strip()
        if not text:
            return
        conv = self._conv(contact)
        if conv is None:
            conv = Conversation(self.state.next_id, contact)
            self.state.next_id += 1
            self.state.conversations.append(conv)
        conv.messages.append(Message(True, text, self.now().strftime("%Y-%m-%dT%H:%M")))
        conv.unread = False
        self.compose[contact] = ""
        self.route.scroll["thread"] = 10**6

    def _mark_unread(self, contact: str) -> None:
        conv = self._conv(contact)
        if conv is not None:
            conv.unread = True
        self.pop()

    def _mark_all_read(self) -> None:
        for c in self.state.conversations:
            c.unread = False

    def _delete(self, contact: str) -> None:
        conv = self._conv(contact)
        self.pop()
        if conv is None:
            return
        self.state.conversations.remove(conv)

        def undo() -> None:
            self.state.conversations.append(conv)

        self.snackbar("Conversation deleted", "Undo", undo)

    def _when(self, iso: str) -> str:
        t = dt.datetime.fromisoformat(iso)
        return t.strftime("%H:%M") if t.date() == self.now().date() else t.strftime("%b %-d")

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        if self.route.name == "thread":
            return self._thread(self.route.params["contact"])
        if self.route.name == "contacts":
            return self._contacts()
        return self._list()

    def _list(self) -> Screen:
        items = []
        for c in self._sorted():
            last = c.messages[-1] if c.messages else None
            sub = "" if last is None else ("You: " if last.from_me else "") + last.text
            items.append(ListItem(
                c.contact, sub, on_click=lambda c=c: self._open(c.contact), avatar=c.contact, id="conversation",
                meta=self._when(last.time) if last else "",
                trailing=Text("Unread", "label", color=self.color, pad=4, id="unread") if c.unread else None,
            ))
        return Screen(
            toolbar=Toolbar("Messages"),
            body=[
                ButtonRow([Button("Mark all as read", self._mark_all_read, kind="text", id="mark_all_read",
                                  enabled=any(c.unread for c in self.state.conversations))]),
                ListView("conversations", items, empty_text="No conversations. Tap Start chat to send a message."),
            ],
            fab=Fab("message", "Start chat", lambda: self.push("contacts"), label="Start chat"),
        )

    def _contacts(self) -> Screen:
        items = [ListItem(c.name, c.phone, on_click=lambda c=c: self._open(c.name, replace=True), avatar=c.name, id="contact")
                 for c in sorted(self.state.contacts, key=lambda c: c.name)]
        return Screen(
            toolbar=Toolbar("Start chat", nav="back", on_nav=self.pop),
            body=[Text("Choose a contact", "body2", id="hint"), ListView("contacts", items, empty_text="No contacts")],
        )

    def _thread(self, contact: str) -> Screen:
        conv = self._conv(contact)
        bubbles = []
        for m in conv.messages if conv else []:
            side = "right" if m.from_me else "left"
            card = Card([Text(m.text, "body", max_lines=6, align=side, vpad=2, pad=12, id="message_out" if m.from_me else "message_in"),
                         Text(self._when(m.time), "caption", align=side, vpad=2, pad=12, id="message_time")])
            bubbles.append(Row([_Gap(), card] if m.from_me else [card, _Gap()]))
        body = []
        if conv is not None:
            body.append(ButtonRow([Button("Mark as unread", lambda: self._mark_unread(contact), kind="outlined", id="mark_unread"),
                                   Button("Delete", lambda: self._delete(contact), kind="outlined", id="delete")]))
        body.append(ListView("thread", bubbles, empty_text=f"Send a message to start a chat with {contact}."))

        def set_text(v: str) -> None:
            self.compose[contact] = v

        return Screen(
            toolbar=Toolbar(contact, nav="back", on_nav=self.pop, subtitle=self._phone(contact)),
            body=body,
            bottom_bar=Column([Row([EditText("compose", self.compose.get(contact, ""), set_text, hint="Text message"),
                                    Button("Send", lambda: self._send(contact), id="send")]), Spacer(8)]),
        )


APP = MessagesApp
GROUP = "seen"
