"""Calendar (com.example.calendar), a seen app: one day's events at a time (Previous day / Next
day buttons and a "Go to date" picker), an event page with Edit and Delete buttons, and an event
form with a title, location, date and time pickers and a reminder dropdown."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, Column, Divider, EditText, Fab, KeyValue, LayoutCtx, ListItem, ListView, Row, Screen, Spacer,
    Spinner, Text, Toolbar, date_picker, time_picker,
)

REMINDERS = ("None", "At start time", "10 minutes before", "30 minutes before", "1 hour before", "1 day before")
DEFAULT_REMINDER = "10 minutes before"
BASE_DAY = dt.date(2026, 10, 15)
"""The day the simulated phone's clock starts on (SimConfig.start_time); sample data is spread around it."""

SAMPLE_TITLES = (
    "Dentist appointment", "Team standup", "Lunch with Sam", "Yoga class", "Project review", "Call with landlord",
    "Piano lesson", "Book club", "Haircut", "Parent-teacher meeting", "Car service", "Birthday dinner", "Gym session",
    "Quarterly planning", "Doctor's appointment", "Coffee with Priya", "Budget meeting", "Swimming lesson",
)
SAMPLE_LOCATIONS = (
    "Room 4B", "Main Street Clinic", "Cafe Aroma", "Community Center", "Online", "City Library", "Office",
    "Riverside Park", "Town Hall", "Studio 2",
)


@dataclass
class Event:
    id: int
    title: str
    date: str  # ISO date, e.g. "2026-10-15"
    start: str  # "HH:MM", 24-hour
    end: str  # "HH:MM", after start
    location: str = ""
    reminder: str = DEFAULT_REMINDER


@dataclass
class CalendarState:
    events: list[Event] = field(default_factory=list)
    next_id: int = 1


@dataclass
class _Draft:
    event_id: int | None
    title: str
    date: dt.date
    start: str
    end: str
    location: str = ""
    reminder: str = DEFAULT_REMINDER


def minutes(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def hhmm(total: int) -> str:
    total = max(0, min(total, 23 * 60 + 59))
    return f"{total // 60:02d}:{total % 60:02d}"


def day_title(d: dt.date) -> str:
    """How the day view names a day: "Thursday, October 15"."""
    return d.strftime("%A, %B %-d")


def sample_events(rng: random.Random, n: int, *, days: tuple[int, int] = (-2, 10), avoid: tuple[str, ...] = (),
                  per_day: int = 5) -> list[dict[str, Any]]:
    """`n` plausible events with distinct titles (none in `avoid`), spread over BASE_DAY + `days`
    (inclusive) with at most `per_day` a day and no overlaps, as state dicts."""
    titles = rng.sample([t for t in SAMPLE_TITLES if t not in avoid], n)
    taken: dict[str, set[int]] = {}
    out: list[dict[str, Any]] = []
    for i, title in enumerate(titles):
        for _ in range(1000):
            day = (BASE_DAY + dt.timedelta(days=rng.randint(*days))).isoformat()
            start = rng.randrange(8 * 2, 19 * 2)  # half hours from 08:00 to 18:30
            length = rng.choice((1, 2, 2, 3))
            slots = set(range(start, start + length))
            busy = taken.setdefault(day, set())
            if not slots & busy and sum(1 for e in out if e["date"] == day) < per_day:
                busy.update(slots)
                break
        else:
            raise ValueError(f"cannot fit {n} events into days {days} with {per_day} a day")
        out.append({"id": i + 1, "title": title, "date": day, "start": hhmm(start * 30), "end": hhmm((start + length) * 30),
                    "location": rng.choice(SAMPLE_LOCATIONS + ("",)), "reminder": rng.choice(REMINDERS)})
    return out


class CalendarApp(SimApp):
    package = "com.example.calendar"
    label = "Calendar"
    icon = "calendar"
    color = "#D93025"

    def reset_state(self) -> None:
        self.state = CalendarState()
        self.day: dt.date | None = None  # the day shown; None means today on the device's clock
        self.draft: _Draft | None = None
        self.picker: dict = {}

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        events = [Event(**e) for e in data.get("events", [])]
        self.state = CalendarState(events=events, next_id=data.get("next_id", max((e.id for e in events), default=0) + 1))
        self.day = None
        self.draft = None
        self.home_screen()

    # ------------------------------------------------------------------ actions

    def _today(self) -> dt.date:
        return self.now().date()

    def _shown(self) -> dt.date:
        return self.day or self._today()

    def _event(self, event_id: int) -> Event | None:
        return next((e for e in self.state.events if e.id == event_id), None)

    def _events_on(self, d: dt.date) -> list[Event]:
        return sorted((e for e in self.state.events if e.date == d.isoformat()), key=lambda e: (e.start, e.end, e.id))

    def _move_day(self, delta: int) -> None:
        self.day = self._shown() + dt.timedelta(days=delta)

    def _go_to_date(self) -> None:
        self.picker = {}

        def pick(d: dt.date) -> None:
            self.day = d

        self.dialog(lambda: date_picker("Go to date", self._shown(), pick, self.picker))

    def _new(self) -> None:
        start = min(self.now().hour + 1, 22) * 60
        self.draft = _Draft(None, "", self._shown(), hhmm(start), hhmm(start + 60))
        self.push("form")
        self.focus("title")

    def _edit(self, ev: Event) -> None:
        self.draft = _Draft(ev.id, ev.title, dt.date.fromisoformat(ev.date), ev.start, ev.end, ev.location, ev.reminder)
        self.push("form")

    def _save(self) -> None:
        d = self.draft
        if d is None:
            return
        title = d.title.strip() or "(No title)"
        if d.event_id is None:
            ev = Event(self.state.next_id, title, d.date.isoformat(), d.start, d.end, d.location.strip(), d.reminder)
            self.state.events.append(ev)
            self.state.next_id += 1
            self.draft = None
            self.pop()
            self.day = d.date
            self.toast("Event saved")
        else:
            ev = self._event(d.event_id)
            if ev is not None:
                ev.title, ev.date, ev.start, ev.end = title, d.date.isoformat(), d.start, d.end
                ev.location, ev.reminder = d.location.strip(), d.reminder
            self.draft = None
            self.pop()
            self.toast("Event updated")

    def _cancel(self) -> None:
        self.draft = None
        self.pop()

    def _delete(self, event_id: int) -> None:
        removed = [e for e in self.state.events if e.id == event_id]
        self.state.events = [e for e in self.state.events if e.id != event_id]
        self.pop()

        def undo() -> None:
            self.state.events.extend(removed)

        if removed:
            self.snackbar("Event deleted", "Undo", undo)

    def _pick_date(self) -> None:
        d = self.draft
        assert d is not None
        self.focus(None)  # a picker field takes focus away from the text fields (keyboard hides)
        self.picker = {}

        def set_date(v: dt.date) -> None:
            d.date = v

        self.dialog(lambda: date_picker("Date", d.date, set_date, self.picker))

    def _pick_time(self, which: str) -> None:
        d = self.draft
        assert d is not None
        self.focus(None)
        self.picker = {}
        value = d.start if which == "start" else d.end

        def set_time(h: int, m: int) -> None:
            t = h * 60 + m
            if which == "start":
                # Like most calendars, moving the start keeps the event's length.
                length = max(15, minutes(d.end) - minutes(d.start))
                end = min(t + length, 23 * 60 + 59)
                d.start, d.end = hhmm(min(t, end - 15)), hhmm(end)
            elif t <= minutes(d.start):
                self.toast("End time must be after the start time")
            else:
                d.end = hhmm(t)

        title = "Start time" if which == "start" else "End time"
        self.dialog(lambda: time_picker(title, minutes(value) // 60, minutes(value) % 60, set_time, self.picker))

    def on_back(self) -> bool:
        if self.route.name == "form" and not self.route.has_overlay():
            self._cancel()  # leaving the form without Save discards it
            return True
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        name = self.route.name
        if name == "form" and self.draft is not None:
            return self._form()
        if name == "event":
            ev = self._event(self.route.params["event_id"])
            if ev is not None:
                return self._detail(ev)
            self.pop()
        return self._day()

    def _day(self) -> Screen:
        shown = self._shown()
        items = []
        for e in self._events_on(shown):
            sub = f"{e.start} – {e.end}" + (f" · {e.location}" if e.location else "")
            items.append(ListItem(e.title, sub, on_click=lambda e=e: self.push("event", event_id=e.id), icon="calendar", id="event"))
        return Screen(
            toolbar=Toolbar("Calendar", subtitle=shown.strftime("%B %Y")),
            body=[
                Row([Text(day_title(shown), "subtitle", id="day_title", vpad=18),
                     Button("Go to date", self._go_to_date, kind="tonal", id="go_to_date")], pad=4),
                ButtonRow([Button("Previous day", lambda: self._move_day(-1), kind="outlined", id="previous_day"),
                           Button("Next day", lambda: self._move_day(1), kind="outlined", id="next_day")], align="start"),
                Spacer(8),
                Divider(),
                ListView("events", items, empty_text="No events. Tap New event to add one."),
            ],
            fab=Fab("add", "New event", self._new, label="New event"),
        )

    def _detail(self, ev: Event) -> Screen:
        d = dt.date.fromisoformat(ev.date)
        return Screen(
            toolbar=Toolbar("Event", nav="back", on_nav=self.pop),
            body=[
                Text(ev.title, "headline", max_lines=2, id="event_title", vpad=12),
                KeyValue("Date", d.strftime("%A, %B %-d, %Y"), id="date"),
                KeyValue("Time", f"{ev.start} – {ev.end}", id="time"),
                KeyValue("Location", ev.location, id="location"),
                KeyValue("Reminder", ev.reminder, id="reminder"),
                ButtonRow([Button("Delete", lambda: self._delete(ev.id), kind="outlined", id="delete"),
                           Button("Edit", lambda: self._edit(ev), id="edit")]),
            ],
        )

    def _form(self) -> Screen:
        d = self.draft
        assert d is not None

        def set_title(v: str) -> None:
            d.title = v

        def set_location(v: str) -> None:
            d.location = v

        def set_reminder(v: str) -> None:
            d.reminder = v

        return Screen(
            toolbar=Toolbar("Edit event" if d.event_id is not None else "New event", nav="back", on_nav=self._cancel),
            body=[
                EditText("title", d.title, set_title, hint="Add title", label="Title"),
                EditText("location", d.location, set_location, hint="Add location", label="Location"),
                ListItem("Date", d.date.strftime("%a, %b %-d, %Y"), on_click=self._pick_date, icon="calendar", id="date"),
                ListItem("Starts", d.start, on_click=lambda: self._pick_time("start"), icon="alarm", id="start"),
                ListItem("Ends", d.end, on_click=lambda: self._pick_time("end"), icon="timer", id="end"),
                Spinner("reminder", REMINDERS, d.reminder, set_reminder, label="Reminder"),
            ],
            # Row heights leave out the buttons' top margin, so a spacer keeps Save off the nav bar.
            bottom_bar=Column([ButtonRow([Button("Cancel", self._cancel, kind="text", id="cancel"),
                                          Button("Save", self._save, id="save")]), Spacer(8)]),
        )


APP = CalendarApp
GROUP = "seen"
