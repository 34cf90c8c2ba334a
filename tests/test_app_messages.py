"""Messages app: unread markers, reading marks read, sending, starting a chat, delete with undo."""

from __future__ import annotations

import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.messages import MessagesApp, sample_messages

PKG = MessagesApp.package
STATE = {
    "contacts": [{"name": "Alice Chen", "phone": "+1 415-555-0132"}, {"name": "Ben Okafor", "phone": "+1 415-555-0178"},
                 {"name": "Carla Rossi", "phone": "+1 650-555-0119"}],
    "conversations": [
        {"id": 1, "contact": "Alice Chen", "unread": True, "messages": [
            {"from_me": True, "text": "On my way", "time": "2026-10-14T18:02"},
            {"from_me": False, "text": "See you at 7", "time": "2026-10-15T08:40"}]},
        {"id": 2, "contact": "Ben Okafor", "unread": False, "messages": [
            {"from_me": False, "text": "The package arrived", "time": "2026-10-12T10:00"},
            {"from_me": True, "text": "Thanks!", "time": "2026-10-12T10:05"}]},
    ],
    "next_id": 3,
}


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, STATE)
    d.launch(PKG)
    return d


def tap(d, **kw):
    found = d.ui_tree().find(**kw)
    assert found, f"no {kw}; texts: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def texts(d):
    return d.ui_tree().texts()


def convs(d):
    return {c["contact"]: c for c in d.read_app_state(PKG)["conversations"]}


def test_state_round_trip_and_sample_data():
    app = MessagesApp()
    app.load_state(STATE)
    assert app.state_dict() == STATE
    s = sample_messages(random.Random(4), 8, 5, must_have=("Grace Lee",), must_not=("Hugo Martin",))
    names = [c["contact"] for c in s["conversations"]]
    assert len(s["contacts"]) == 8 and len(names) == 5 == len(set(names))
    assert "Grace Lee" in names and "Hugo Martin" not in names
    assert all(m["time"] < "2026-10-15T09:00" for c in s["conversations"] for m in c["messages"])


def test_list_shows_latest_first_with_unread_marker(dev):
    t = texts(dev)
    assert t.index("Alice Chen") < t.index("Ben Okafor")
    assert "Unread" in t and "You: Thanks!" in t and "08:40" in t and "Oct 12" in t


def test_opening_marks_read_and_mark_as_unread_returns(dev):
    tap(dev, text="Alice Chen")
    assert not convs(dev)["Alice Chen"]["unread"]
    assert "See you at 7" in texts(dev) and "+1 415-555-0132" in texts(dev)
    tap(dev, text="Mark as unread")
    assert convs(dev)["Alice Chen"]["unread"] and "Messages" in texts(dev)


def test_mark_all_as_read_then_disabled(dev):
    tap(dev, text="Mark all as read")
    assert not any(c["unread"] for c in convs(dev).values())
    assert not dev.ui_tree().find(text="Mark all as read")[0].enabled


def test_send_appends_with_the_clock_time(dev):
    tap(dev, text="Ben Okafor")
    tap(dev, resource_id=f"{PKG}:id/compose")
    dev.input_text("Great, thanks")
    tap(dev, text="Send")
    last = convs(dev)["Ben Okafor"]["messages"][-1]
    assert last["from_me"] and last["text"] == "Great, thanks" and last["time"].startswith("2026-10-15T09:00")
    assert dev.ui_tree().find(resource_id=f"{PKG}:id/compose")[0].text == ""
    tap(dev, text="Send")  # an empty message is not sent
    assert len(convs(dev)["Ben Okafor"]["messages"]) == 3


def test_start_chat_creates_a_conversation_only_when_sending(dev):
    tap(dev, text="Start chat")
    tap(dev, text="Carla Rossi")
    assert "Carla Rossi" not in convs(dev)
    tap(dev, resource_id=f"{PKG}:id/compose")
    dev.input_text("Hi Carla")
    tap(dev, text="Send")
    assert [m["text"] for m in convs(dev)["Carla Rossi"]["messages"]] == ["Hi Carla"]
    dev.key("back")  # keyboard
    dev.key("back")  # back to the list, not to the contact picker
    assert "Start chat" in texts(dev) and "Choose a contact" not in texts(dev)


def test_delete_then_undo(dev):
    tap(dev, text="Ben Okafor")
    tap(dev, text="Delete")
    assert set(convs(dev)) == {"Alice Chen"} and "Conversation deleted" in texts(dev)
    tap(dev, text="UNDO")
    assert set(convs(dev)) == {"Alice Chen", "Ben Okafor"}
