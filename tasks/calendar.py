"""Tasks on Calendar (com.example.calendar, seen)."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from coadapt.apps.calendar import BASE_DAY, REMINDERS, SAMPLE_LOCATIONS, SAMPLE_TITLES, day_title, hhmm, minutes, sample_events

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.calendar"
NEW_TITLES = ("Flight to Berlin", "Team offsite", "Vet appointment", "Tennis with Omar", "School play", "Wine tasting",
              "Job interview", "Bike repair", "Guitar lesson", "Pottery class", "Museum visit", "Movie night")


def _events(device) -> list[dict[str, Any]]:
    return device.read_app_state(APP)["events"]


def _unchanged_except(now: list[dict[str, Any]], before: list[dict[str, Any]], ids: set[int]) -> bool:
    """Every event of `before` not in `ids` is still there, exactly as it was."""
    current = {e["id"]: e for e in now}
    return all(current.get(e["id"]) == e for e in before if e["id"] not in ids)


def _day_param(rng: random.Random, lo: int, hi: int) -> dict[str, str]:
    d = BASE_DAY + dt.timedelta(days=rng.randint(lo, hi))
    return {"date": d.isoformat(), "day": day_title(d)}


# --------------------------------------------------------------------------- oracle helpers


def _shown_day(o: OracleCtx) -> dt.date:
    """The day the day view shows: its heading plus the year in the toolbar's subtitle."""
    year = o.element(rid="toolbar_subtitle").text.split()[-1]
    return dt.datetime.strptime(f"{o.element(rid='day_title').text} {year}", "%A, %B %d %Y").date()


def _pick_date(o: OracleCtx, target: dt.date) -> Solution:
    """In an open date picker: page to the target's month, tap the day, OK."""
    for _ in range(24):
        shown = dt.datetime.strptime(o.element(rid="month_view").text, "%B %Y").date()
        if (shown.year, shown.month) == (target.year, target.month):
            break
        later = (target.year, target.month) > (shown.year, shown.month)
        yield o.tap(desc="Next month" if later else "Previous month")
    yield o.tap(desc=target.strftime("%-d %B %Y"))
    yield o.tap(text="OK")


def _go_to_day(o: OracleCtx, target: dt.date) -> Solution:
    """On the day view: show `target`, stepping day by day when it is near, else with Go to date."""
    if abs((target - _shown_day(o)).days) > 3:
        yield o.tap(text="Go to date")
        yield from _pick_date(o, target)
        return
    for _ in range(4):
        shown = _shown_day(o)
        if shown == target:
            return
        yield o.tap(text="Next day" if target > shown else "Previous day")


def _set_time(o: OracleCtx, field: str, value: str) -> Solution:
    """In the event form: open the "Starts" or "Ends" picker and enter `value` ("HH:MM")."""
    yield o.tap(text=field)
    h, m = value.split(":")
    yield o.type(str(int(h)), rid="hour", clear=True)
    yield o.type(m, rid="minute", clear=True)
    yield o.tap(text="OK")


# --------------------------------------------------------------------------- templates


class _CalendarTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, n: int, *, must: tuple[dict[str, Any], ...] = (), avoid: tuple[str, ...] = (),
              days: tuple[int, int] = (-1, 6)) -> dict[str, dict[str, Any]]:
        events = sample_events(rng, n, days=days, avoid=tuple(m["title"] for m in must) + avoid, per_day=4)
        for m in must:
            events.insert(rng.randrange(len(events) + 1), m)
        for i, e in enumerate(events):
            e["id"] = i + 1
        return {APP: {"events": events, "next_id": len(events) + 1}}

    @staticmethod
    def _event(rng: random.Random, title: str, date: str, **over: Any) -> dict[str, Any]:
        start = rng.randrange(16, 36) * 30  # 08:00 .. 17:30
        ev = {"id": 0, "title": title, "date": date, "start": hhmm(start), "end": hhmm(start + rng.choice((30, 60, 60, 90))),
              "location": rng.choice(SAMPLE_LOCATIONS), "reminder": rng.choice(REMINDERS)}
        ev.update(over)
        return ev

    def _initial(self) -> list[dict[str, Any]]:
        return self.states()[APP]["events"]

    def _target(self) -> dict[str, Any]:
        return next(e for e in self._initial() if e["title"] == self.values["title"])

    def _open_event(self, o: OracleCtx) -> Solution:
        """From the day view: go to the event's day and open it."""
        yield from _go_to_day(o, dt.date.fromisoformat(self.values["date"]))
        yield o.tap(text=self.values["title"])


class CalendarAddEvent(_CalendarTask):
    name = "CalendarAddEvent"
    template = 'Add an event "{title}" on {day} from {start} to {end}.'
    params = {"title": "title of the new event", "date": "its date (ISO)", "day": "its date as the goal says it",
              "start": "start time HH:MM", "end": "end time HH:MM"}
    kind = "entry"
    complexity = 3
    max_steps = 34

    @classmethod
    def sample_params(cls, rng):
        start = rng.randrange(16, 38) * 30
        return {"title": rng.choice(NEW_TITLES), **_day_param(rng, 1, 24), "start": hhmm(start),
                "end": hhmm(start + rng.choice((30, 45, 60, 90, 120)))}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 6), avoid=(self.values["title"],))

    def is_successful(self, device, answer):
        v = self.values
        events = _events(device)
        hits = [e for e in events if e["title"] == v["title"]]
        return float(len(hits) == 1 and (hits[0]["date"], hits[0]["start"], hits[0]["end"]) == (v["date"], v["start"], v["end"])
                     and len(events) == len(self._initial()) + 1 and _unchanged_except(events, self._initial(), set()))

    def solve(self, o):
        v = self.values
        yield o.tap(text="New event")
        yield o.type(v["title"], rid="title")
        yield o.tap(text="Date")
        yield from _pick_date(o, dt.date.fromisoformat(v["date"]))
        yield from _set_time(o, "Starts", v["start"])
        yield from _set_time(o, "Ends", v["end"])
        yield o.tap(text="Save")
        yield o.done()


class CalendarAddEventWithDetails(_CalendarTask):
    name = "CalendarAddEventWithDetails"
    template = 'Add an event "{title}" at {location} on {day} starting at {start}, with the reminder set to "{reminder}".'
    params = {"title": "title of the new event", "location": "where it is", "date": "its date (ISO)",
              "day": "its date as the goal says it", "start": "start time HH:MM", "reminder": "reminder option"}
    kind = "multi"
    complexity = 4
    max_steps = 30

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(NEW_TITLES), "location": rng.choice(SAMPLE_LOCATIONS), **_day_param(rng, 0, 12),
                "start": hhmm(rng.randrange(16, 40) * 30), "reminder": rng.choice([r for r in REMINDERS if r != "10 minutes before"])}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 6), avoid=(self.values["title"],))

    def is_successful(self, device, answer):
        v = self.values
        events = _events(device)
        hits = [e for e in events if e["title"] == v["title"]]
        if len(hits) != 1:
            return 0.0
        e = hits[0]
        return float((e["date"], e["start"], e["location"], e["reminder"]) == (v["date"], v["start"], v["location"], v["reminder"])
                     and minutes(e["end"]) > minutes(e["start"])
                     and len(events) == len(self._initial()) + 1 and _unchanged_except(events, self._initial(), set()))

    def solve(self, o):
        v = self.values
        yield o.tap(text="New event")
        yield o.type(v["title"], rid="title")
        yield o.type(v["location"], rid="location")
        date = dt.date.fromisoformat(v["date"])
        if not o.has(text=date.strftime("%a, %b %-d, %Y")):  # the form starts on the day shown
            yield o.tap(text="Date")
            yield from _pick_date(o, date)
        yield from _set_time(o, "Starts", v["start"])
        yield o.tap(rid="reminder")
        yield o.tap(text=v["reminder"])
        yield o.tap(text="Save")
        yield o.done()


class CalendarRescheduleEvent(_CalendarTask):
    name = "CalendarRescheduleEvent"
    template = 'Move the event "{title}" on {day} so that it starts at {start}, keeping its length.'
    params = {"title": "title of the event", "date": "its date (ISO)", "day": "its date as the goal says it",
              "start": "new start time HH:MM"}
    kind = "edit"
    complexity = 3
    max_steps = 22

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES), **_day_param(rng, 0, 3), "start": hhmm(rng.randrange(16, 38) * 30)}

    def initial_state(self, rng):
        v = self.values
        start = rng.choice([s for s in range(16, 36) if s * 30 != minutes(v["start"])]) * 30
        ev = self._event(rng, v["title"], v["date"], start=hhmm(start), end=hhmm(start + rng.choice((30, 60, 90))))
        return self._base(rng, rng.randint(2, 6), must=(ev,))

    def is_successful(self, device, answer):
        t = self._target()
        events = _events(device)
        now = next((e for e in events if e["id"] == t["id"]), None)
        length = minutes(t["end"]) - minutes(t["start"])
        want = {**t, "start": self.values["start"], "end": hhmm(minutes(self.values["start"]) + length)}
        return float(now == want and len(events) == len(self._initial()) and _unchanged_except(events, self._initial(), {t["id"]}))

    def solve(self, o):
        yield from self._open_event(o)
        yield o.tap(text="Edit")
        yield from _set_time(o, "Starts", self.values["start"])
        yield o.tap(text="Save")
        yield o.done()


class CalendarSetReminder(_CalendarTask):
    name = "CalendarSetReminder"
    template = 'Set the reminder of "{title}" on {day} to "{reminder}".'
    params = {"title": "title of the event", "date": "its date (ISO)", "day": "its date as the goal says it",
              "reminder": "reminder option"}
    kind = "edit"
    complexity = 3
    max_steps = 18

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES), **_day_param(rng, 0, 3), "reminder": rng.choice(REMINDERS)}

    def initial_state(self, rng):
        v = self.values
        ev = self._event(rng, v["title"], v["date"], reminder=rng.choice([r for r in REMINDERS if r != v["reminder"]]))
        return self._base(rng, rng.randint(2, 6), must=(ev,))

    def is_successful(self, device, answer):
        t = self._target()
        events = _events(device)
        now = next((e for e in events if e["id"] == t["id"]), None)
        return float(now == {**t, "reminder": self.values["reminder"]} and len(events) == len(self._initial())
                     and _unchanged_except(events, self._initial(), {t["id"]}))

    def solve(self, o):
        yield from self._open_event(o)
        yield o.tap(text="Edit")
        yield o.tap(rid="reminder")
        yield o.tap(text=self.values["reminder"])
        yield o.tap(text="Save")
        yield o.done()


class CalendarDeleteEvent(_CalendarTask):
    name = "CalendarDeleteEvent"
    template = 'Delete the event "{title}" on {day}.'
    params = {"title": "title of the event", "date": "its date (ISO)", "day": "its date as the goal says it"}
    kind = "delete"
    complexity = 2
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES), **_day_param(rng, 0, 3)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 6), must=(self._event(rng, self.values["title"], self.values["date"]),))

    def is_successful(self, device, answer):
        events = _events(device)
        return float(all(e["title"] != self.values["title"] for e in events)
                     and len(events) == len(self._initial()) - 1 and _unchanged_except(events, self._initial(), {self._target()["id"]}))

    def solve(self, o):
        yield from self._open_event(o)
        yield o.tap(text="Delete")
        yield o.done()


class CalendarCountEvents(_CalendarTask):
    name = "CalendarCountEvents"
    template = "How many events do I have on {day}? Answer with a number."
    params = {"date": "the day (ISO)", "day": "the day as the goal says it"}
    kind = "retrieval"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return _day_param(rng, 1, 3)

    def initial_state(self, rng):
        d = self.values["date"]
        titles = rng.sample(SAMPLE_TITLES, rng.randint(1, 3))
        musts = []
        for i, title in enumerate(titles):  # non-overlapping mornings, afternoons, evenings
            start = (8 + 4 * i) * 60 + rng.choice((0, 30, 60))
            musts.append(self._event(rng, title, d, start=hhmm(start), end=hhmm(start + 60)))
        return self._base(rng, rng.randint(3, 6), must=tuple(musts), days=(-1, 5))

    def expected(self) -> int:
        return sum(1 for e in self._initial() if e["date"] == self.values["date"])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield from _go_to_day(o, dt.date.fromisoformat(self.values["date"]))
        count = sum(1 for e in o.obs.elements if e.resource_id == f"{APP}:id/title")
        yield o.done(str(count))


class CalendarEventLocation(_CalendarTask):
    name = "CalendarEventLocation"
    template = 'Where does "{title}" on {day} take place? Answer with the location only.'
    params = {"title": "title of the event", "date": "its date (ISO)", "day": "its date as the goal says it"}
    kind = "retrieval"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES), **_day_param(rng, 0, 3)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 6), must=(self._event(rng, self.values["title"], self.values["date"]),))

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self._target()["location"]))

    def solve(self, o):
        yield from self._open_event(o)
        yield o.done(o.element(rid="location").text)


class CalendarRepeatWeekly(_CalendarTask):
    name = "CalendarRepeatWeekly"
    template = 'Make the event "{title}" on {day} repeat every week.'
    params = {"title": "title of the event", "date": "its date (ISO)", "day": "its date as the goal says it"}
    kind = "infeasible"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SAMPLE_TITLES), **_day_param(rng, 0, 2)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, 5), must=(self._event(rng, self.values["title"], self.values["date"]),))

    def is_successful(self, device, answer):
        return 0.0  # events have no repeat setting; only declaring the task infeasible succeeds

    def solve(self, o):
        yield from self._open_event(o)
        yield o.tap(text="Edit")
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    CalendarAddEvent, CalendarAddEventWithDetails, CalendarRescheduleEvent, CalendarSetReminder, CalendarDeleteEvent,
    CalendarCountEvents, CalendarEventLocation, CalendarRepeatWeekly,
)
