"""Calendar app: day navigation, the event form's pickers, save/cancel, delete with undo."""

from __future__ import annotations

import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.calendar import CalendarApp, sample_events

PKG = CalendarApp.package
EVENTS = [
    {"id": 1, "title": "Team standup", "date": "2026-10-15", "start": "09:30", "end": "10:00", "location": "Room 4B",
     "reminder": "10 minutes before"},
    {"id": 2, "title": "Yoga class", "date": "2026-10-16", "start": "18:00", "end": "19:00", "location": "Studio 2",
     "reminder": "None"},
]


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, {"events": [dict(e) for e in EVENTS], "next_id": 3})
    d.launch(PKG)
    return d


def tap(d, **kw):
    found = d.ui_tree().find(**kw)
    assert found, f"no {kw}; texts: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def texts(d):
    return d.ui_tree().texts()


def events(d):
    return d.read_app_state(PKG)["events"]


def set_time(d, field, h, m):
    tap(d, text=field)
    tap(d, resource_id=f"{PKG}:id/hour")
    d.key("move_end")
    for _ in range(2):
        d.key("delete")
    d.input_text(str(h))
    tap(d, resource_id=f"{PKG}:id/minute")
    d.key("move_end")
    for _ in range(2):
        d.key("delete")
    d.input_text(f"{m:02d}")
    tap(d, text="OK")


def test_state_round_trip_and_sample_data():
    app = CalendarApp()
    app.load_state({"events": EVENTS, "next_id": 3})
    assert app.state_dict() == {"events": EVENTS, "next_id": 3}
    sample = sample_events(random.Random(1), 8, per_day=3)
    assert len({e["title"] for e in sample}) == 8
    for day in {e["date"] for e in sample}:
        assert sum(e["date"] == day for e in sample) <= 3
    app.load_state({"events": sample})
    assert app.state_dict()["next_id"] == 9


def test_day_view_shows_today_and_steps_through_days(dev):
    assert "Thursday, October 15" in texts(dev) and "Team standup" in texts(dev) and "Yoga class" not in texts(dev)
    tap(dev, text="Next day")
    assert "Friday, October 16" in texts(dev) and "Yoga class" in texts(dev)
    tap(dev, text="Previous day")
    tap(dev, text="Previous day")
    assert "Wednesday, October 14" in texts(dev) and "No events. Tap New event to add one." in texts(dev)


def test_go_to_date_uses_the_date_picker(dev):
    tap(dev, text="Go to date")
    tap(dev, content_desc="Next month")
    tap(dev, content_desc="3 November 2026")
    tap(dev, text="OK")
    assert "Tuesday, November 3" in texts(dev) and "November 2026" in texts(dev)


def test_new_event_with_pickers_and_reminder(dev):
    tap(dev, text="New event")
    assert dev.keyboard_visible  # the title field has focus
    dev.input_text("Haircut")
    tap(dev, text="Date")
    assert not dev.keyboard_visible  # a picker takes the focus away
    tap(dev, content_desc="20 October 2026")
    tap(dev, text="OK")
    set_time(dev, "Starts", 14, 30)
    assert "15:30" in texts(dev)  # the end follows the start, keeping the hour
    set_time(dev, "Ends", 15, 15)
    tap(dev, resource_id=f"{PKG}:id/reminder")
    tap(dev, text="1 hour before")
    tap(dev, text="Save")
    new = events(dev)[-1]
    assert new == {"id": 3, "title": "Haircut", "date": "2026-10-20", "start": "14:30", "end": "15:15", "location": "",
                   "reminder": "1 hour before"}
    assert "Tuesday, October 20" in texts(dev)  # the day view jumps to the new event's day


def test_end_before_start_is_refused(dev):
    tap(dev, text="Team standup")
    tap(dev, text="Edit")
    set_time(dev, "Ends", 9, 0)
    assert "End time must be after the start time" in texts(dev)
    tap(dev, text="Save")
    assert events(dev) == EVENTS


def test_back_discards_the_form(dev):
    tap(dev, text="Team standup")
    tap(dev, text="Edit")
    tap(dev, resource_id=f"{PKG}:id/title")
    dev.input_text(" moved")
    dev.key("back")  # hides the keyboard
    dev.key("back")  # leaves the form without saving
    assert events(dev) == EVENTS
    assert "Event" in texts(dev) and "Team standup" in texts(dev)


def test_delete_then_undo(dev):
    tap(dev, text="Team standup")
    tap(dev, text="Delete")
    assert [e["title"] for e in events(dev)] == ["Yoga class"]
    assert "Event deleted" in texts(dev)
    tap(dev, text="UNDO")
    assert sorted(e["id"] for e in events(dev)) == [1, 2]
