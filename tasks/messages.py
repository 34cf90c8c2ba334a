"""Tasks on Messages (com.example.messages, seen)."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from coadapt.apps.messages import BASE_TIME, CONTACTS, THEIR_TEXTS, sample_messages

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.messages"
NAMES = tuple(c[0] for c in CONTACTS)
TO_SEND = ("I'll be there in 20 minutes", "Can we move it to Friday?", "Happy anniversary!", "Please call me back",
           "The meeting is at 3 pm", "Thanks, got it", "Dinner at 8?", "Running late, sorry", "Good luck today!",
           "See you at the station")


def _state(device) -> dict[str, Any]:
    return device.read_app_state(APP)


def _by_contact(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["contact"]: c for c in state["conversations"]}


def _messages_same(now: dict[str, Any], before: dict[str, Any], skip: set[str]) -> bool:
    """Every conversation of `before` except those with `skip` still holds the same messages."""
    cur = _by_contact(now)
    return all(c["contact"] in cur and cur[c["contact"]]["messages"] == c["messages"]
               for c in before["conversations"] if c["contact"] not in skip)


def _set_unread(rng: random.Random, conv: dict[str, Any], unread: bool) -> None:
    """Mark `conv` (un)read; an unread one gets a last message from the contact if it lacks one."""
    conv["unread"] = unread
    if unread and conv["messages"][-1]["from_me"]:
        last = dt.datetime.fromisoformat(conv["messages"][-1]["time"])
        t = min(last + dt.timedelta(minutes=rng.randint(1, 30)), BASE_TIME - dt.timedelta(minutes=1))
        text = rng.choice([x for x in THEIR_TEXTS if x not in {m["text"] for m in conv["messages"]}])
        conv["messages"].append({"from_me": False, "text": text, "time": t.strftime("%Y-%m-%dT%H:%M")})


class _MessagesTask(TaskTemplate):
    app = APP

    def _initial(self) -> dict[str, Any]:
        return self.states()[APP]

    def _conv0(self, contact: str) -> dict[str, Any]:
        return _by_contact(self._initial())[contact]

    def _open(self, o: OracleCtx, contact: str) -> Solution:
        yield o.tap(text=contact)


class MessagesSendMessage(_MessagesTask):
    name = "MessagesSendMessage"
    template = 'Send "{text}" to {contact}.'
    params = {"contact": "who to write to (has a conversation)", "text": "the message"}
    kind = "entry"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"contact": rng.choice(NAMES), "text": rng.choice(TO_SEND)}

    def initial_state(self, rng):
        return {APP: sample_messages(rng, 8, rng.randint(3, 6), must_have=(self.values["contact"],))}

    def is_successful(self, device, answer):
        now, before = _state(device), self._initial()
        conv = _by_contact(now).get(self.values["contact"])
        old = self._conv0(self.values["contact"])["messages"]
        return float(conv is not None and len(conv["messages"]) == len(old) + 1 and conv["messages"][:-1] == old
                     and conv["messages"][-1]["from_me"] and conv["messages"][-1]["text"] == self.values["text"]
                     and len(now["conversations"]) == len(before["conversations"])
                     and _messages_same(now, before, {self.values["contact"]}))

    def solve(self, o):
        yield from self._open(o, self.values["contact"])
        yield o.type(self.values["text"], rid="compose")
        yield o.tap(text="Send")
        yield o.done()


class MessagesStartChat(_MessagesTask):
    name = "MessagesStartChat"
    template = 'Start a new chat with {contact} and send "{text}".'
    params = {"contact": "a contact without a conversation", "text": "the message"}
    kind = "multi"
    complexity = 3
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"contact": rng.choice(NAMES), "text": rng.choice(TO_SEND)}

    def initial_state(self, rng):
        return {APP: sample_messages(rng, 8, rng.randint(2, 5), must_not=(self.values["contact"],))}

    def is_successful(self, device, answer):
        now, before = _state(device), self._initial()
        conv = _by_contact(now).get(self.values["contact"])
        return float(conv is not None and [(m["from_me"], m["text"]) for m in conv["messages"]] == [(True, self.values["text"])]
                     and len(now["conversations"]) == len(before["conversations"]) + 1 and _messages_same(now, before, set()))

    def solve(self, o):
        yield o.tap(text="Start chat")
        yield o.tap(text=self.values["contact"])
        yield o.type(self.values["text"], rid="compose")
        yield o.tap(text="Send")
        yield o.done()


class MessagesDeleteConversation(_MessagesTask):
    name = "MessagesDeleteConversation"
    template = "Delete the conversation with {contact}."
    params = {"contact": "whose conversation to delete"}
    kind = "delete"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"contact": rng.choice(NAMES)}

    def initial_state(self, rng):
        return {APP: sample_messages(rng, 8, rng.randint(3, 6), must_have=(self.values["contact"],))}

    def is_successful(self, device, answer):
        now, before = _state(device), self._initial()
        return float(self.values["contact"] not in _by_contact(now)
                     and len(now["conversations"]) == len(before["conversations"]) - 1
                     and _messages_same(now, before, {self.values["contact"]}))

    def solve(self, o):
        yield from self._open(o, self.values["contact"])
        yield o.tap(text="Delete")
        yield o.done()


class MessagesMarkAllRead(_MessagesTask):
    name = "MessagesMarkAllRead"
    template = "Mark all my conversations as read."
    params: dict[str, str] = {}
    kind = "toggle"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        state = sample_messages(rng, 8, rng.randint(3, 6))
        for conv in rng.sample(state["conversations"], rng.randint(2, len(state["conversations"]))):
            _set_unread(rng, conv, True)
        return {APP: state}

    def is_successful(self, device, answer):
        now, before = _state(device), self._initial()
        return float(not any(c["unread"] for c in now["conversations"])
                     and len(now["conversations"]) == len(before["conversations"]) and _messages_same(now, before, set()))

    def solve(self, o):
        yield o.tap(text="Mark all as read")
        yield o.done()


class MessagesMarkUnread(_MessagesTask):
    name = "MessagesMarkUnread"
    template = "Mark the conversation with {contact} as unread."
    params = {"contact": "whose conversation"}
    kind = "toggle"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"contact": rng.choice(NAMES)}

    def initial_state(self, rng):
        state = sample_messages(rng, 8, rng.randint(3, 6), must_have=(self.values["contact"],))
        for conv in state["conversations"]:
            if conv["contact"] == self.values["contact"]:
                conv["unread"] = False
        return {APP: state}

    def is_successful(self, device, answer):
        now, before = _state(device), self._initial()
        flags = {c["contact"]: c["unread"] for c in now["conversations"]}
        want = {c["contact"]: c["unread"] or c["contact"] == self.values["contact"] for c in before["conversations"]}
        return float(flags == want and _messages_same(now, before, set()))

    def solve(self, o):
        yield from self._open(o, self.values["contact"])
        yield o.tap(text="Mark as unread")
        yield o.done()


class MessagesLastMessageFrom(_MessagesTask):
    name = "MessagesLastMessageFrom"
    template = "What was the last message {contact} sent me? Answer with the message text."
    params = {"contact": "whose message"}
    kind = "retrieval"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"contact": rng.choice(NAMES)}

    def initial_state(self, rng):
        state = sample_messages(rng, 8, rng.randint(3, 6), must_have=(self.values["contact"],))
        for conv in state["conversations"]:
            if conv["contact"] == self.values["contact"] and all(m["from_me"] for m in conv["messages"]):
                _set_unread(rng, conv, True)
        return {APP: state}

    def expected(self) -> str:
        return [m for m in self._conv0(self.values["contact"])["messages"] if not m["from_me"]][-1]["text"]

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield from self._open(o, self.values["contact"])
        theirs = [e.text for e in o.obs.elements if e.resource_id == f"{APP}:id/message_in"]
        yield o.done(theirs[-1])


class MessagesCountUnread(_MessagesTask):
    name = "MessagesCountUnread"
    template = "How many unread conversations do I have? Answer with a number."
    params: dict[str, str] = {}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        state = sample_messages(rng, 8, rng.randint(3, 6))
        flags = [True] * rng.randint(1, len(state["conversations"]) - 1)
        flags += [False] * (len(state["conversations"]) - len(flags))
        rng.shuffle(flags)
        for conv, f in zip(state["conversations"], flags, strict=True):
            _set_unread(rng, conv, f)
        return {APP: state}

    def expected(self) -> int:
        return sum(1 for c in self._initial()["conversations"] if c["unread"])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield o.done(str(sum(1 for e in o.obs.elements if e.resource_id == f"{APP}:id/unread")))


class MessagesForwardLastMessage(_MessagesTask):
    name = "MessagesForwardLastMessage"
    template = "Send {dst} the last message that {src} sent me, word for word."
    params = {"src": "whose message to pass on", "dst": "who gets it (has a conversation)"}
    kind = "multi"
    complexity = 4
    max_steps = 14

    @classmethod
    def sample_params(cls, rng):
        src, dst = rng.sample(NAMES, 2)
        return {"src": src, "dst": dst}

    def initial_state(self, rng):
        v = self.values
        state = sample_messages(rng, 8, rng.randint(3, 6), must_have=(v["src"], v["dst"]))
        for conv in state["conversations"]:
            if conv["contact"] == v["src"] and all(m["from_me"] for m in conv["messages"]):
                _set_unread(rng, conv, True)
        return {APP: state}

    def _text(self) -> str:
        return [m for m in self._conv0(self.values["src"])["messages"] if not m["from_me"]][-1]["text"]

    def is_successful(self, device, answer):
        now, before = _state(device), self._initial()
        conv = _by_contact(now).get(self.values["dst"])
        old = self._conv0(self.values["dst"])["messages"]
        return float(conv is not None and conv["messages"][:-1] == old and len(conv["messages"]) == len(old) + 1
                     and conv["messages"][-1]["from_me"] and conv["messages"][-1]["text"] == self._text()
                     and len(now["conversations"]) == len(before["conversations"])
                     and _messages_same(now, before, {self.values["dst"]}))

    def solve(self, o):
        yield from self._open(o, self.values["src"])
        text = self._text()
        yield o.tap(desc="Navigate up")
        yield from self._open(o, self.values["dst"])
        yield o.type(text, rid="compose")
        yield o.tap(text="Send")
        yield o.done()


class MessagesScheduleMessage(_MessagesTask):
    name = "MessagesScheduleMessage"
    template = 'Schedule the message "{text}" to {contact} so that it is sent tomorrow at 08:00.'
    params = {"contact": "recipient", "text": "the message"}
    kind = "infeasible"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"contact": rng.choice(NAMES), "text": rng.choice(TO_SEND)}

    def initial_state(self, rng):
        return {APP: sample_messages(rng, 8, rng.randint(3, 6), must_have=(self.values["contact"],))}

    def is_successful(self, device, answer):
        return 0.0  # Messages cannot schedule; only declaring the task infeasible succeeds

    def solve(self, o):
        yield from self._open(o, self.values["contact"])
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    MessagesSendMessage, MessagesStartChat, MessagesDeleteConversation, MessagesMarkAllRead, MessagesMarkUnread,
    MessagesLastMessageFrom, MessagesCountUnread, MessagesForwardLastMessage, MessagesScheduleMessage,
)
