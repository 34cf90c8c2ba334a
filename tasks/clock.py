"""Tasks on Clock (com.example.clock, seen)."""

from __future__ import annotations

import random
import re
from typing import Any

from coadapt.apps.clock import ALARM_LABELS, CITIES, DAYS, sample_alarms

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.clock"
MAX_ALARMS = 6
"""The alarm list shows this many rows above the "Add alarm" button without scrolling."""
DAY_NAMES = {"Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday", "Fri": "Friday",
             "Sat": "Saturday", "Sun": "Sunday"}
SONGS = ("Bohemian Rhapsody", "Here Comes the Sun", "Clair de Lune", "Wake Me Up", "Good Morning Sunshine")


def _state(device) -> dict[str, Any]:
    return device.read_app_state(APP)


def _hm(time: str) -> tuple[int, int]:
    return int(time[:2]), int(time[3:])


def _time(rng: random.Random) -> str:
    return f"{rng.choice((5, 6, 7, 8, 9, 10, 13, 15, 16, 19, 20, 22, 23)):02d}:{rng.choice((5, 15, 25, 35, 40, 45, 55)):02d}"


def time_matches(answer: str | None, time: str) -> bool:
    """Whether `answer` names the clock time `time` ("07:05"), as "7:05", "07:05" or "7:05 AM"."""
    if not answer:
        return False
    m = re.fullmatch(r"\D*?(\d{1,2})[:.h](\d{2})\s*(am|pm|a\.m\.|p\.m\.)?\W*", answer.strip().lower())
    if not m:
        return False
    h, mi = int(m.group(1)), int(m.group(2))
    if m.group(3) and m.group(3).startswith("p") and h < 12:
        h += 12
    if m.group(3) and m.group(3).startswith("a") and h == 12:
        h = 0
    return (h, mi) == _hm(time)


def _days_phrase(days: list[str]) -> str:
    names = [DAY_NAMES[d] + "s" for d in days]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


class _ClockTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, n: int, *, must: tuple[dict[str, Any], ...] = (), avoid_times: tuple[str, ...] = (),
              avoid_labels: tuple[str, ...] = (), cities: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """`n` alarms in all: the `must` ones (over random details) and others whose times and
        labels clash with none of them."""
        times = avoid_times + tuple(f"{m['hour']:02d}:{m['minute']:02d}" for m in must if "hour" in m)
        labels = avoid_labels + tuple(m["label"] for m in must if m.get("label"))
        alarms = sample_alarms(rng, n - len(must), avoid_times=times, avoid_labels=labels)
        used = {(a["hour"], a["minute"]) for a in alarms}
        for m in must:
            extra = sample_alarms(rng, 1, avoid_times=tuple(f"{h:02d}:{mi:02d}" for h, mi in used) + times,
                                  avoid_labels=labels + tuple(a["label"] for a in alarms))[0]
            alarm = {**extra, **m}
            used.add((alarm["hour"], alarm["minute"]))
            alarms.append(alarm)
        alarms.sort(key=lambda a: (a["hour"], a["minute"]))
        for i, a in enumerate(alarms):
            a["id"] = i + 1
        if cities is None:
            cities = rng.sample(sorted(CITIES), rng.randint(0, 3))
        return {APP: {"alarms": alarms, "next_id": len(alarms) + 1, "cities": cities,
                      "timer": {"duration_s": 0, "status": "idle"}, "stopwatch": {"status": "idle"}}}

    def initial_alarms(self) -> list[dict[str, Any]]:
        return self.states()[APP]["alarms"]

    def _alarm(self, **kw: Any) -> dict[str, Any]:
        return next(a for a in self.initial_alarms() if all(a[k] == v for k, v in kw.items()))

    def _others_unchanged(self, device, except_ids: tuple[int, ...] = (), extra: int = 0) -> bool:
        now = _state(device)["alarms"]
        keep = [a for a in self.initial_alarms() if a["id"] not in except_ids]
        return all(a in now for a in keep) and len(now) == len(self.initial_alarms()) + extra

    def _set_time(self, o: OracleCtx, time: str) -> Solution:
        """In the open time picker: type the hour and the minute, then OK."""
        h, m = _hm(time)
        yield o.type(str(h), rid="hour", clear=True)
        yield o.type(f"{m:02d}", rid="minute", clear=True)
        yield o.tap(text="OK")

    def _open_labelled(self, o: OracleCtx, label: str) -> Solution:
        yield o.tap(contains=f"· {label}")


class ClockAddAlarm(_ClockTask):
    name = "ClockAddAlarm"
    template = "Set an alarm for {time}."
    params = {"time": "alarm time, 24-hour HH:MM"}
    kind = "entry"
    complexity = 2
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        return {"time": _time(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(0, MAX_ALARMS - 1), avoid_times=(self.values["time"],))

    def is_successful(self, device, answer):
        h, m = _hm(self.values["time"])
        new = [a for a in _state(device)["alarms"] if (a["hour"], a["minute"]) == (h, m)]
        return float(len(new) == 1 and new[0]["enabled"] and self._others_unchanged(device, extra=1))

    def solve(self, o):
        yield o.tap(text="Add alarm")
        yield from self._set_time(o, self.values["time"])
        yield o.tap(text="Save")
        yield o.done()


class ClockAddRepeatingAlarm(_ClockTask):
    name = "ClockAddRepeatingAlarm"
    template = 'Set an alarm for {time} labelled "{label}" that repeats on {days}.'
    params = {"time": "alarm time, 24-hour HH:MM", "label": "alarm label", "days": 'repeat days, e.g. "Mondays and Thursdays"'}
    kind = "multi"
    complexity = 4
    max_steps = 22

    @classmethod
    def sample_params(cls, rng):
        days = sorted(rng.sample(DAYS, rng.randint(2, 3)), key=DAYS.index)
        return {"time": _time(rng), "label": rng.choice(ALARM_LABELS), "days": _days_phrase(days)}

    def day_list(self) -> list[str]:
        return [d for d in DAYS if DAY_NAMES[d] + "s" in self.values["days"]]

    def initial_state(self, rng):
        return self._base(rng, rng.randint(0, MAX_ALARMS - 1), avoid_times=(self.values["time"],),
                          avoid_labels=(self.values["label"],))

    def is_successful(self, device, answer):
        h, m = _hm(self.values["time"])
        new = [a for a in _state(device)["alarms"] if (a["hour"], a["minute"]) == (h, m)]
        return float(len(new) == 1 and new[0]["enabled"] and new[0]["days"] == self.day_list()
                     and new[0]["label"].strip().lower() == self.values["label"].lower()
                     and self._others_unchanged(device, extra=1))

    def solve(self, o):
        yield o.tap(text="Add alarm")
        yield from self._set_time(o, self.values["time"])
        for day in self.day_list():
            yield o.tap(text=day)
        yield o.type(self.values["label"], rid="label")
        yield o.tap(text="Save")
        yield o.done()


class ClockToggleAlarm(_ClockTask):
    name = "ClockToggleAlarm"
    template = "Turn {state} the {time} alarm."
    params = {"state": '"on" or "off"', "time": "time of an existing alarm, HH:MM"}
    kind = "toggle"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"state": rng.choice(("on", "off")), "time": _time(rng)}

    def initial_state(self, rng):
        h, m = _hm(self.values["time"])
        return self._base(rng, rng.randint(2, MAX_ALARMS),
                          must=({"hour": h, "minute": m, "enabled": self.values["state"] == "off"},))

    def is_successful(self, device, answer):
        h, m = _hm(self.values["time"])
        target = self._alarm(hour=h, minute=m)
        now = [a for a in _state(device)["alarms"] if a["id"] == target["id"]]
        return float(len(now) == 1 and now[0] == {**target, "enabled": self.values["state"] == "on"}
                     and self._others_unchanged(device, except_ids=(target["id"],)))

    def solve(self, o):
        yield o.tap(desc=f"{self.values['time']} alarm")
        yield o.done()


class ClockDeleteAlarm(_ClockTask):
    name = "ClockDeleteAlarm"
    template = 'Delete the alarm labelled "{label}".'
    params = {"label": "label of an existing alarm"}
    kind = "delete"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"label": rng.choice(ALARM_LABELS)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, MAX_ALARMS), must=({"label": self.values["label"]},))

    def is_successful(self, device, answer):
        target = self._alarm(label=self.values["label"])
        now = _state(device)["alarms"]
        return float(all(a["id"] != target["id"] for a in now)
                     and self._others_unchanged(device, except_ids=(target["id"],), extra=-1))

    def solve(self, o):
        yield from self._open_labelled(o, self.values["label"])
        yield o.tap(text="Delete")
        yield o.done()


class ClockEditAlarmTime(_ClockTask):
    name = "ClockEditAlarmTime"
    template = 'Move the "{label}" alarm to {time}.'
    params = {"label": "label of an existing alarm", "time": "the new time, HH:MM"}
    kind = "edit"
    complexity = 3
    max_steps = 14

    @classmethod
    def sample_params(cls, rng):
        return {"label": rng.choice(ALARM_LABELS), "time": _time(rng)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, MAX_ALARMS), must=({"label": self.values["label"]},),
                          avoid_times=(self.values["time"],))

    def is_successful(self, device, answer):
        target = self._alarm(label=self.values["label"])
        h, m = _hm(self.values["time"])
        now = [a for a in _state(device)["alarms"] if a["id"] == target["id"]]
        return float(len(now) == 1 and (now[0]["hour"], now[0]["minute"]) == (h, m) and now[0]["days"] == target["days"]
                     and now[0]["label"] == target["label"] and self._others_unchanged(device, except_ids=(target["id"],)))

    def solve(self, o):
        yield from self._open_labelled(o, self.values["label"])
        yield o.tap(text="Time")
        yield from self._set_time(o, self.values["time"])
        yield o.tap(text="Save")
        yield o.done()


class ClockAlarmTime(_ClockTask):
    name = "ClockAlarmTime"
    template = 'What time is the "{label}" alarm set for? Answer as HH:MM.'
    params = {"label": "label of an existing alarm"}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"label": rng.choice(ALARM_LABELS)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, MAX_ALARMS), must=({"label": self.values["label"]},))

    def is_successful(self, device, answer):
        a = self._alarm(label=self.values["label"])
        return float(time_matches(answer, f"{a['hour']:02d}:{a['minute']:02d}"))

    def solve(self, o):
        # A row is its title (the time) followed by its subtitle (days · label).
        i = o.index(contains=f"· {self.values['label']}")
        yield o.done(o.obs.elements[i - 1].text)


class ClockCountActiveAlarms(_ClockTask):
    name = "ClockCountActiveAlarms"
    template = "How many alarms are switched on? Answer with a number."
    params: dict[str, str] = {}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        state = self._base(rng, rng.randint(2, MAX_ALARMS))
        alarms = state[APP]["alarms"]
        if not any(a["enabled"] for a in alarms):
            rng.choice(alarms)["enabled"] = True
        return state

    def is_successful(self, device, answer):
        return float(answer_matches(answer, sum(1 for a in self.initial_alarms() if a["enabled"])))

    def solve(self, o):
        on = sum(1 for e in o.obs.elements if e.resource_id.endswith(":id/alarm_switch") and e.checked)
        yield o.done(str(on))


class ClockStartTimer(_ClockTask):
    name = "ClockStartTimer"
    template = "Start a {minutes}-minute timer."
    params = {"minutes": "timer length in minutes"}
    kind = "entry"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"minutes": rng.choice((2, 3, 4, 6, 7, 8, 12, 15, 20, 25, 30, 45))}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(0, 4))

    def is_successful(self, device, answer):
        t = _state(device)["timer"]
        return float(t["status"] == "running" and t["duration_s"] == self.values["minutes"] * 60)

    def solve(self, o):
        yield o.tap(desc="Timer")
        yield o.type(str(self.values["minutes"]), rid="timer_minutes")
        yield o.tap(text="Start")
        yield o.done()


class ClockStopwatchLaps(_ClockTask):
    name = "ClockStopwatchLaps"
    template = "Start the stopwatch, record {laps} laps, then stop it."
    params = {"laps": "number of laps to record"}
    kind = "multi"
    complexity = 3
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        return {"laps": rng.randint(2, 4)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(0, 4))

    def is_successful(self, device, answer):
        sw = _state(device)["stopwatch"]
        return float(sw["status"] == "stopped" and len(sw["laps"]) == self.values["laps"] and sw["elapsed_s"] > 0)

    def solve(self, o):
        yield o.tap(desc="Stopwatch")
        yield o.tap(text="Start")
        for _ in range(self.values["laps"]):
            yield o.tap(text="Lap")
        yield o.tap(text="Stop")
        yield o.done()


class ClockAddCity(_ClockTask):
    name = "ClockAddCity"
    template = "Add {city} to the world clock."
    params = {"city": "one of " + ", ".join(CITIES)}
    kind = "navigation"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"city": rng.choice(sorted(CITIES))}

    def initial_state(self, rng):
        cities = rng.sample([c for c in sorted(CITIES) if c != self.values["city"]], rng.randint(0, 3))
        return self._base(rng, rng.randint(0, 4), cities=cities)

    def is_successful(self, device, answer):
        before = self.states()[APP]["cities"]
        now = _state(device)["cities"]
        return float(self.values["city"] in now and all(c in now for c in before) and len(now) == len(before) + 1)

    def solve(self, o):
        yield o.tap(desc="Clock")
        yield o.tap(text="Add city")
        yield o.tap(text=self.values["city"])
        yield o.done()


class ClockAlarmSong(_ClockTask):
    name = "ClockAlarmSong"
    template = 'Make the "{label}" alarm play "{song}" when it rings.'
    params = {"label": "label of an existing alarm", "song": "a song title"}
    kind = "infeasible"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"label": rng.choice(ALARM_LABELS), "song": rng.choice(SONGS)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(2, MAX_ALARMS), must=({"label": self.values["label"]},))

    def is_successful(self, device, answer):
        return 0.0  # Alarms have no sound setting; only declaring it infeasible succeeds.

    def solve(self, o):
        yield from self._open_labelled(o, self.values["label"])
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    ClockAddAlarm, ClockAddRepeatingAlarm, ClockToggleAlarm, ClockDeleteAlarm, ClockEditAlarmTime, ClockAlarmTime,
    ClockCountActiveAlarms, ClockStartTimer, ClockStopwatchLaps, ClockAddCity, ClockAlarmSong,
)
