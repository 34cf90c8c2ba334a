"""Clock (com.example.clock), a seen app with top tabs: Alarm (a list of alarms with on/off
switches, an extended "Add alarm" button, a form with the time picker, repeat-day chips, a label
and Save/Delete buttons), Clock (local time and world cities), Timer and Stopwatch. Timer and
stopwatch run on the device's virtual clock (`now()`), which moves one second per input."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.canvas import HINT, SURFACE_2, WHITE
from coadapt.android_env.sim.node import Node
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, Chip, EditText, Fab, KeyValue, LayoutCtx, ListItem, ListView, Row, Screen, Spacer, Switch, Tabs,
    Text, Toolbar, View, time_picker,
)

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WEEKDAYS = DAYS[:5]
WEEKEND = DAYS[5:]
TABS = ("Alarm", "Clock", "Timer", "Stopwatch")
HOME_UTC_OFFSET = 1.0
"""The phone's own time zone (hours from UTC); world-clock differences are relative to it."""
CITIES: dict[str, float] = {
    "London": 1, "Paris": 2, "New York": -4, "Los Angeles": -7, "Mexico City": -6, "Tokyo": 9, "Sydney": 11,
    "Dubai": 4, "Mumbai": 5.5, "Singapore": 8,
}
"""City -> UTC offset in hours, in mid October."""
ALARM_LABELS = ("Work", "Gym", "Medication", "School run", "Wake up", "Meeting", "Yoga", "Pick up kids", "Walk the dog")


@dataclass
class Alarm:
    id: int
    hour: int
    minute: int
    enabled: bool = True
    days: list[str] = field(default_factory=list)
    label: str = ""
    vibrate: bool = True

    @property
    def time(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


@dataclass
class TimerState:
    duration_s: int = 0
    status: str = "idle"  # idle, running, paused (ringing is derived: running with no time left)
    remaining_s: int = 0  # while paused
    ends_at: str | None = None  # while running, ISO time


@dataclass
class StopwatchState:
    status: str = "idle"  # idle, running, stopped
    base_s: int = 0  # time counted before the current run
    started_at: str | None = None  # while running, ISO time
    laps: list[int] = field(default_factory=list)  # total elapsed seconds at each lap


@dataclass
class ClockState:
    alarms: list[Alarm] = field(default_factory=list)
    next_id: int = 1
    cities: list[str] = field(default_factory=list)
    timer: TimerState = field(default_factory=TimerState)
    stopwatch: StopwatchState = field(default_factory=StopwatchState)


@dataclass
class _Draft:
    alarm_id: int | None
    hour: int = 8
    minute: int = 0
    days: list[str] = field(default_factory=list)
    label: str = ""
    vibrate: bool = True


def days_text(days: list[str]) -> str:
    """How the alarm list describes repeat days ("Weekdays", "Mon, Wed", "Once")."""
    ds = [d for d in DAYS if d in days]
    if not ds:
        return "Once"
    if len(ds) == 7:
        return "Every day"
    if ds == list(WEEKDAYS):
        return "Weekdays"
    if ds == list(WEEKEND):
        return "Weekends"
    return ", ".join(ds)


def fmt_duration(seconds: int) -> str:
    """"05:07" or "1:02:03"."""
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def city_difference(city: str) -> str:
    diff = CITIES[city] - HOME_UTC_OFFSET
    if diff == 0:
        return "Same time"
    n = f"{abs(diff):g}"
    return f"{n} hr {'ahead' if diff > 0 else 'behind'}"


def sample_alarms(rng: random.Random, n: int, avoid_times: tuple[str, ...] = (), avoid_labels: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """`n` plausible alarms (state dicts) with distinct times and distinct labels (or none)."""
    times: set[tuple[int, int]] = {(int(t[:2]), int(t[3:])) for t in avoid_times}
    labels = [lb for lb in ALARM_LABELS if lb not in avoid_labels]
    rng.shuffle(labels)
    out = []
    while len(out) < n:
        hm = (rng.choice((5, 6, 6, 7, 7, 8, 9, 12, 14, 17, 18, 21, 22)), rng.choice((0, 0, 15, 30, 30, 45, 10, 20, 50)))
        if hm in times:
            continue
        times.add(hm)
        days = rng.choice((list(WEEKDAYS), [], list(WEEKEND), list(DAYS), sorted(rng.sample(DAYS, 2), key=DAYS.index)))
        label = labels.pop() if labels and rng.random() < 0.7 else ""
        out.append({"id": len(out) + 1, "hour": hm[0], "minute": hm[1], "enabled": rng.random() < 0.6, "days": days,
                    "label": label, "vibrate": rng.random() < 0.8})
    out.sort(key=lambda a: (a["hour"], a["minute"]))
    for i, a in enumerate(out):
        a["id"] = i + 1
    return out


@dataclass
class _RowSwitch(View):
    """A bare switch at the end of a list row, named by its content description."""

    checked: bool
    on_change: Callable[[bool], None]
    desc: str
    id: str = ""

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return ctx.dp(68)

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        tw, th_ = ctx.dp(52), ctx.dp(32)
        top = y + (ctx.dp(48) - th_) // 2
        box = (x + w - tw - ctx.dp(8), top, x + w - ctx.dp(8), top + th_)
        th = ctx.theme
        on = self.checked

        def paint(c) -> None:
            cy = (box[1] + box[3]) // 2
            if on:
                c.rect(box, fill=th.primary, radius=th_ // 2)
                c.circle(box[2] - th_ // 2, cy, ctx.dp(12), fill=WHITE)
            else:
                c.rect(box, fill=SURFACE_2, outline=HINT, radius=th_ // 2, width=max(1, ctx.dp(2)))
                c.circle(box[0] + th_ // 2, cy, ctx.dp(8), fill=HINT)

        return Node("android.widget.Switch", box, desc=self.desc, rid=self.id, checkable=True, checked=on, clickable=True,
                    focusable=True, on_click=lambda: self.on_change(not on), paint=paint)


class ClockApp(SimApp):
    package = "com.example.clock"
    label = "Clock"
    icon = "alarm"
    color = "#3949AB"

    def reset_state(self) -> None:
        self.state = ClockState()
        self.tab = 0
        self.draft: _Draft | None = None
        self.picker: dict = {}
        self.timer_fields = {"hours": "", "minutes": "", "seconds": ""}

    # ------------------------------------------------------------------ state

    def _time(self, iso: str | None) -> dt.datetime:
        return dt.datetime.fromisoformat(iso) if iso else self.now()

    def timer_remaining(self) -> int:
        t = self.state.timer
        if t.status == "running":
            return max(0, int((self._time(t.ends_at) - self.now()).total_seconds()))
        if t.status == "paused":
            return t.remaining_s
        return t.duration_s

    def timer_status(self) -> str:
        t = self.state.timer
        if t.status == "running" and self.timer_remaining() == 0:
            return "ringing"
        return t.status

    def stopwatch_elapsed(self) -> int:
        sw = self.state.stopwatch
        if sw.status == "running":
            return sw.base_s + max(0, int((self.now() - self._time(sw.started_at)).total_seconds()))
        return sw.base_s

    def state_dict(self) -> dict[str, Any]:
        data = asdict(self.state)
        data["timer"]["status"] = self.timer_status()
        data["timer"]["remaining_s"] = self.timer_remaining()
        data["stopwatch"]["elapsed_s"] = self.stopwatch_elapsed()
        return data

    def load_state(self, data: dict[str, Any]) -> None:
        alarms = [Alarm(**a) for a in data.get("alarms", [])]
        t = dict(data.get("timer") or {})
        status = t.get("status", "idle")
        if status in ("running", "ringing"):
            ends = t.get("ends_at") or (self.now() + dt.timedelta(seconds=t.get("remaining_s", 0))).isoformat()
            timer = TimerState(t.get("duration_s", 0), "running", 0, ends)
        else:
            timer = TimerState(t.get("duration_s", 0), status, t.get("remaining_s", 0) if status == "paused" else 0, None)
        sw = dict(data.get("stopwatch") or {})
        sw_status = sw.get("status", "idle")
        stopwatch = StopwatchState(sw_status, sw.get("base_s", 0),
                                   (sw.get("started_at") or self.now().isoformat()) if sw_status == "running" else None,
                                   list(sw.get("laps", [])))
        self.state = ClockState(alarms=alarms, next_id=data.get("next_id", max((a.id for a in alarms), default=0) + 1),
                                cities=[c for c in data.get("cities", []) if c in CITIES], timer=timer, stopwatch=stopwatch)
        self.tab = 0
        self.draft = None
        self.picker = {}
        self.timer_fields = {"hours": "", "minutes": "", "seconds": ""}
        self.home_screen()

    # ------------------------------------------------------------------ alarms

    def _get_alarm(self, alarm_id: int | None) -> Alarm | None:
        return next((a for a in self.state.alarms if a.id == alarm_id), None)

    def _pick_time(self) -> None:
        d = self.draft
        if d is None:
            return

        def on_set(h: int, m: int) -> None:
            d.hour, d.minute = h, m

        self.picker = {}
        self.dialog(lambda: time_picker("Set alarm time", d.hour, d.minute, on_set, self.picker))

    def _open_alarm(self, alarm: Alarm | None) -> None:
        if alarm is None:
            nxt = self.now() + dt.timedelta(hours=1)
            self.draft = _Draft(None, nxt.hour, 0)
            self.push("alarm")
            self._pick_time()
        else:
            self.draft = _Draft(alarm.id, alarm.hour, alarm.minute, list(alarm.days), alarm.label, alarm.vibrate)
            self.push("alarm")

    def _save_alarm(self) -> None:
        d = self.draft
        if d is None:
            return
        days = [x for x in DAYS if x in d.days]
        if d.alarm_id is None:
            self.state.alarms.append(Alarm(self.state.next_id, d.hour, d.minute, True, days, d.label.strip(), d.vibrate))
            self.state.next_id += 1
            self.toast(f"Alarm set for {d.hour:02d}:{d.minute:02d}")
        else:
            a = self._get_alarm(d.alarm_id)
            if a is not None:
                changed_time = (a.hour, a.minute) != (d.hour, d.minute)
                a.hour, a.minute, a.days, a.label, a.vibrate = d.hour, d.minute, days, d.label.strip(), d.vibrate
                if changed_time:
                    a.enabled = True  # a new time arms the alarm, as on Android
        self.draft = None
        self.pop()

    def _delete_alarm(self) -> None:
        d = self.draft
        self.draft = None
        self.pop()
        alarm = self._get_alarm(d.alarm_id if d else None)
        if alarm is None:
            return
        index = self.state.alarms.index(alarm)
        self.state.alarms.remove(alarm)

        def undo() -> None:
            self.state.alarms.insert(min(index, len(self.state.alarms)), alarm)

        self.snackbar("Alarm deleted", "Undo", undo)

    def _toggle_alarm(self, alarm: Alarm, on: bool) -> None:
        alarm.enabled = on
        if on:
            self.toast(f"Alarm set for {alarm.time}")

    # ------------------------------------------------------------------ timer and stopwatch

    def _start_timer(self) -> None:
        f = self.timer_fields
        try:
            total = sum(int(f[k] or 0) * mul for k, mul in (("hours", 3600), ("minutes", 60), ("seconds", 1)))
        except ValueError:
            total = 0
        if total <= 0:
            self.toast("Set a time first")
            return
        self.state.timer = TimerState(total, "running", 0, (self.now() + dt.timedelta(seconds=total)).isoformat())
        self.focus(None)

    def _pause_timer(self) -> None:
        t = self.state.timer
        t.remaining_s, t.status, t.ends_at = self.timer_remaining(), "paused", None

    def _resume_timer(self) -> None:
        t = self.state.timer
        t.ends_at, t.status = (self.now() + dt.timedelta(seconds=t.remaining_s)).isoformat(), "running"

    def _add_minute(self) -> None:
        t = self.state.timer
        if t.status == "running":
            t.ends_at = (max(self._time(t.ends_at), self.now()) + dt.timedelta(minutes=1)).isoformat()
        elif t.status == "paused":
            t.remaining_s += 60
        t.duration_s += 60

    def _reset_timer(self) -> None:
        self.state.timer = TimerState()
        self.timer_fields = {"hours": "", "minutes": "", "seconds": ""}

    def _sw_start(self) -> None:
        sw = self.state.stopwatch
        sw.status, sw.started_at = "running", self.now().isoformat()

    def _sw_stop(self) -> None:
        sw = self.state.stopwatch
        sw.base_s, sw.status, sw.started_at = self.stopwatch_elapsed(), "stopped", None

    def _sw_lap(self) -> None:
        self.state.stopwatch.laps.append(self.stopwatch_elapsed())

    def _sw_reset(self) -> None:
        self.state.stopwatch = StopwatchState()

    # ------------------------------------------------------------------ cities

    def _add_city(self, city: str) -> None:
        if city not in self.state.cities:
            self.state.cities.append(city)
        self.pop()

    def _delete_city(self, city: str) -> None:
        index = self.state.cities.index(city)
        self.state.cities.remove(city)
        self.pop()

        def undo() -> None:
            self.state.cities.insert(min(index, len(self.state.cities)), city)

        self.snackbar(f"{city} removed", "Undo", undo)

    def on_back(self) -> bool:
        if self.route.name == "alarm" and not self.route.has_overlay():
            self.draft = None  # leaving the form discards it; Save keeps it
            return self.pop()
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        name = self.route.name
        if name == "alarm" and self.draft is not None:
            return self._alarm_form()
        if name == "add_city":
            return self._city_picker()
        if name == "city" and self.route.params.get("city") in self.state.cities:
            return self._city(self.route.params["city"])
        if name != "main":
            self.home_screen()
        body, fab = [self._alarms, self._world, self._timer, self._stopwatch][self.tab]()

        def select(i: int) -> None:
            self.tab = i
            self.focus(None)

        return Screen(toolbar=Toolbar("Clock"), tabs=Tabs(TABS, self.tab, select), body=body, fab=fab)

    def _alarms(self) -> tuple[list[View], Fab | None]:
        items = []
        for a in sorted(self.state.alarms, key=lambda a: (a.hour, a.minute, a.id)):
            sub = days_text(a.days) + (f" · {a.label}" if a.label else "")
            items.append(ListItem(a.time, sub, on_click=lambda a=a: self._open_alarm(a), icon="alarm", id="alarm",
                                  trailing=_RowSwitch(a.enabled, lambda v, a=a: self._toggle_alarm(a, v), f"{a.time} alarm",
                                                      id="alarm_switch")))
        return ([ListView("alarm_list", items, empty_text="No alarms. Tap Add alarm to set one.")],
                Fab("add", "Add alarm", lambda: self._open_alarm(None), label="Add alarm"))

    def _alarm_form(self) -> Screen:
        d = self.draft
        assert d is not None

        def toggle_day(day: str) -> None:
            if day in d.days:
                d.days.remove(day)
            else:
                d.days.append(day)

        def set_label(v: str) -> None:
            d.label = v

        def set_vibrate(v: bool) -> None:
            d.vibrate = v

        def chip(day: str) -> Chip:
            return Chip(day, day in d.days, lambda: toggle_day(day), id=f"day_{day.lower()}")

        buttons = [Button("Cancel", self.on_back, kind="outlined", id="cancel"), Button("Save", self._save_alarm, id="save")]
        if d.alarm_id is not None:
            buttons.insert(0, Button("Delete", self._delete_alarm, kind="text", id="delete"))
        return Screen(
            toolbar=Toolbar("Edit alarm" if d.alarm_id is not None else "New alarm", nav="back", on_nav=self.on_back),
            body=[
                ListItem("Time", f"{d.hour:02d}:{d.minute:02d}", icon="alarm", on_click=self._pick_time, id="time"),
                Text("Repeat", "overline", vpad=4),
                Row([chip(x) for x in DAYS[:4]], pad=12),
                Row([chip(x) for x in DAYS[4:]], pad=12),
                Spacer(4),
                EditText("label", d.label, set_label, label="Label"),
                Switch("Vibrate", d.vibrate, set_vibrate, id="vibrate"),
                ButtonRow(buttons),
            ],
        )

    def _world(self) -> tuple[list[View], Fab | None]:
        now = self.now()
        items = []
        for city in self.state.cities:
            local = now + dt.timedelta(hours=CITIES[city] - HOME_UTC_OFFSET)
            items.append(ListItem(city, city_difference(city), meta=local.strftime("%H:%M"), id="city",
                                  on_click=lambda c=city: self.push("city", city=c)))
        return ([Text(now.strftime("%H:%M"), "display", align="center", id="local_time", vpad=16),
                 Text(now.strftime("%A, %B %-d"), "body2", align="center", id="local_date", vpad=0),
                 Spacer(8),
                 ListView("city_list", items, empty_text="Tap Add city to see the time around the world.")],
                Fab("add", "Add city", lambda: self.push("add_city"), label="Add city"))

    def _city_picker(self) -> Screen:
        items = [ListItem(c, city_difference(c), on_click=lambda c=c: self._add_city(c), id="city_option")
                 for c in CITIES if c not in self.state.cities]
        return Screen(toolbar=Toolbar("Add city", nav="back", on_nav=self.pop),
                      body=[ListView("city_options", items, empty_text="Every city is already on your list.")])

    def _city(self, city: str) -> Screen:
        local = self.now() + dt.timedelta(hours=CITIES[city] - HOME_UTC_OFFSET)
        return Screen(
            toolbar=Toolbar(city, nav="back", on_nav=self.pop),
            body=[Text(local.strftime("%H:%M"), "display", align="center", id="city_time", vpad=16),
                  KeyValue("Time difference", city_difference(city), id="difference"),
                  KeyValue("Date", local.strftime("%A, %B %-d"), id="date"),
                  ButtonRow([Button("Delete", lambda: self._delete_city(city), kind="outlined", id="delete")])],
        )

    def _timer(self) -> tuple[list[View], Fab | None]:
        status = self.timer_status()
        t = self.state.timer
        if status == "idle":
            f = self.timer_fields

            def setter(key: str):
                def set_value(v: str) -> None:
                    f[key] = "".join(ch for ch in v if ch.isdigit())[:2]

                return set_value

            def preset(minutes: int):
                def apply() -> None:
                    f["hours"], f["minutes"], f["seconds"] = "", str(minutes), ""

                return apply

            return ([Text("Set a timer", "title", align="center", vpad=16),
                     Row([EditText("timer_hours", f["hours"], setter("hours"), label="Hours"),
                          EditText("timer_minutes", f["minutes"], setter("minutes"), label="Minutes"),
                          EditText("timer_seconds", f["seconds"], setter("seconds"), label="Seconds")], pad=4),
                     Row([Chip("1 min", on_click=preset(1)), Chip("5 min", on_click=preset(5)),
                          Chip("10 min", on_click=preset(10))], pad=12, align="center"),
                     Spacer(8),
                     ButtonRow([Button("Start", self._start_timer, id="start")], align="center")], None)
        shown = fmt_duration(self.timer_remaining())
        if status == "ringing":
            caption = "Time's up"
            buttons = [Button("Stop", self._reset_timer, id="stop")]
        elif status == "paused":
            caption = f"{fmt_duration(t.duration_s)} timer · paused"
            buttons = [Button("Reset", self._reset_timer, kind="outlined", id="reset"),
                       Button("Resume", self._resume_timer, id="resume")]
        else:
            caption = f"{fmt_duration(t.duration_s)} timer"
            buttons = [Button("Reset", self._reset_timer, kind="outlined", id="reset"),
                       Button("+1:00", self._add_minute, kind="tonal", id="add_minute"),
                       Button("Pause", self._pause_timer, id="pause")]
        return ([Spacer(48), Text(shown, "display", align="center", id="timer_remaining", vpad=16),
                 Text(caption, "body2", align="center", id="timer_caption", vpad=4), Spacer(24),
                 ButtonRow(buttons, align="center")], None)

    def _stopwatch(self) -> tuple[list[View], Fab | None]:
        sw = self.state.stopwatch
        if sw.status == "running":
            buttons = [Button("Lap", self._sw_lap, kind="outlined", id="lap"), Button("Stop", self._sw_stop, id="stop")]
        elif sw.status == "stopped":
            buttons = [Button("Reset", self._sw_reset, kind="outlined", id="reset"), Button("Resume", self._sw_start, id="resume")]
        else:
            buttons = [Button("Start", self._sw_start, id="start")]
        laps = []
        prev = 0
        for i, total in enumerate(sw.laps):
            laps.append(ListItem(f"Lap {i + 1}", f"Total {fmt_duration(total)}", meta=fmt_duration(total - prev), id="lap_row"))
            prev = total
        return ([Text(fmt_duration(self.stopwatch_elapsed()), "display", align="center", id="stopwatch_time", vpad=24),
                 ButtonRow(buttons, align="center"),
                 ListView("laps", list(reversed(laps)))], None)


APP = ClockApp
GROUP = "seen"
