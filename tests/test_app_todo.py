"""To-do (unseen app): state round trip, drawer list switching, the add sheet, swipe to
complete/remove, long-press edit and due date, and the list-delete confirmation."""

from __future__ import annotations

import json

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.todo import TODAY, TodoApp, due_text

PKG = TodoApp.package
STATE = {
    "lists": [
        {"id": 1, "name": "Groceries", "tasks": [{"id": 3, "title": "Buy milk", "done": False, "due": None},
                                                 {"id": 4, "title": "Eggs", "done": True, "due": None}]},
        {"id": 2, "name": "Work", "tasks": [{"id": 5, "title": "Send weekly report", "done": False, "due": "2026-10-20"}]},
    ],
    "current": 1, "show_completed": True, "sort": "manual", "next_id": 6,
}


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, json.loads(json.dumps(STATE)))
    d.launch(PKG)
    return d


def find(d, **kw):
    hits = d.ui_tree().find(**kw)
    return hits[0] if hits else None


def tap(d, **kw):
    e = find(d, **kw)
    assert e is not None, f"no {kw} on screen: {d.ui_tree().texts()}"
    d.tap(*e.bounds.center)


def swipe_row(d, title, direction):
    e = find(d, text=title, resource_id=f"{PKG}:id/title")
    x, y = e.bounds.center
    d.swipe(x, y, x + (250 if direction == "right" else -250), y)


def tasks(d, list_id):
    return next(l["tasks"] for l in d.read_app_state(PKG)["lists"] if l["id"] == list_id)


def test_state_round_trips(dev):
    assert dev.read_app_state(PKG) == STATE


def test_drawer_switches_lists_and_holds_settings(dev):
    assert find(dev, text="Send weekly report") is None and find(dev, text="Settings") is None
    tap(dev, content_desc="Open navigation drawer")
    tap(dev, text="Work")
    assert find(dev, text="Send weekly report") is not None and find(dev, text="Due Tue, Oct 20") is not None
    tap(dev, content_desc="Open navigation drawer")
    tap(dev, text="Settings")
    tap(dev, resource_id=f"{PKG}:id/show_completed")
    assert dev.read_app_state(PKG)["show_completed"] is False


def test_add_sheet_creates_tasks_and_lists(dev):
    tap(dev, content_desc="Add")
    tap(dev, text="New task")
    dev.input_text("Bread")
    tap(dev, text="Save")
    assert [t["title"] for t in tasks(dev, 1)] == ["Buy milk", "Eggs", "Bread"]
    tap(dev, content_desc="Add")
    tap(dev, text="Create list")
    tap(dev, text="Create")  # an empty name keeps the dialog open
    assert find(dev, text="Create list") is not None
    dev.input_text("Garden")
    tap(dev, text="Create")
    state = dev.read_app_state(PKG)
    assert state["lists"][-1]["name"] == "Garden" and state["current"] == state["lists"][-1]["id"]
    assert find(dev, text="Garden", resource_id=f"{PKG}:id/toolbar_title") is not None


def test_swipes_complete_and_remove(dev):
    swipe_row(dev, "Buy milk", "right")
    assert tasks(dev, 1)[0]["done"] is True
    swipe_row(dev, "Eggs", "left")
    assert [t["title"] for t in tasks(dev, 1)] == ["Buy milk"]
    tap(dev, text="UNDO")
    assert [t["title"] for t in tasks(dev, 1)] == ["Buy milk", "Eggs"]


def test_long_press_edits_and_sets_due_date(dev):
    e = find(dev, text="Buy milk", resource_id=f"{PKG}:id/title")
    dev.tap(*e.bounds.center)
    assert find(dev, text="Edit") is None  # a plain tap does not open the menu
    dev.long_press(*e.bounds.center)
    tap(dev, text="Edit")
    dev.input_text(" and cream")
    tap(dev, text="Save")
    assert tasks(dev, 1)[0]["title"] == "Buy milk and cream"
    dev.long_press(*find(dev, text="Buy milk and cream").bounds.center)
    tap(dev, text="Set due date")
    tap(dev, content_desc="Next month")
    tap(dev, content_desc="3 November 2026")
    tap(dev, text="OK")
    assert tasks(dev, 1)[0]["due"] == "2026-11-03"
    assert find(dev, text="Due Tue, Nov 3") is not None


def test_deleting_a_list_asks_first_and_keeps_the_last_one(dev):
    tap(dev, content_desc="Delete list")
    assert find(dev, text="Delete list “Groceries”?") is not None
    tap(dev, text="Cancel")
    assert len(dev.read_app_state(PKG)["lists"]) == 2
    tap(dev, content_desc="Delete list")
    tap(dev, text="Delete")
    state = dev.read_app_state(PKG)
    assert [l["name"] for l in state["lists"]] == ["Work"] and state["current"] == 2
    tap(dev, content_desc="Delete list")
    assert find(dev, text="Delete list “Work”?") is None and len(dev.read_app_state(PKG)["lists"]) == 1


def test_due_text():
    assert due_text(None, TODAY) == "" and due_text("2026-10-15", TODAY) == "Due today"
    assert due_text("2026-10-12", TODAY) == "Overdue · Mon, Oct 12" and due_text("2027-01-02", TODAY) == "Due Sat, Jan 2, 2027"
