"""Tasks on Settings (com.example.settings, seen)."""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Iterable

from coadapt.apps.settings import DEVICE_NAMES, FONT_SIZES, SCREEN_TIMEOUTS, STEP, sample_settings

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.settings"
NEW_DEVICE_NAMES = ("Living room phone", "Alex's Pixel", "Studio phone", "Backup phone", "Mia's phone", "Field kit")


def _settings(device) -> dict[str, Any]:
    return device.read_app_state(APP)


def slider_path(current: int, target: int) -> list[str]:
    """The shortest presses from `current` to `target`: "center" (a tap on the middle of the
    slider sets 50), "up" and "down" (the step buttons, clamped to 0..100)."""
    # Step buttons first, so that on a tie the path is the plain one.
    moves = {"up": lambda v: min(100, v + STEP), "down": lambda v: max(0, v - STEP), "center": lambda v: 50}
    prev: dict[int, tuple[int, str] | None] = {current: None}
    queue = deque([current])
    while queue:
        v = queue.popleft()
        if v == target:
            path = []
            while prev[v] is not None:
                v, move = prev[v]  # type: ignore[misc]
                path.append(move)
            return path[::-1]
        for name, fn in moves.items():
            w = fn(v)
            if w not in prev:
                prev[w] = (v, name)
                queue.append(w)
    raise ValueError(f"{target} cannot be reached from {current}")


class _SettingsTask(TaskTemplate):
    app = APP
    changes: tuple[str, ...] = ()
    """The settings the task may change (plus what the app changes along with them)."""

    def _base(self, rng: random.Random, **fixed: Any) -> dict[str, dict[str, Any]]:
        state = sample_settings(rng)
        state.update(fixed)
        return {APP: state}

    def initial(self) -> dict[str, Any]:
        return self.states()[APP]

    def _rest_unchanged(self, device, allowed: Iterable[str]) -> bool:
        now, before = _settings(device), self.initial()
        return all(now[k] == before[k] for k in before if k not in set(allowed))

    def _slide(self, o: OracleCtx, rid: str, target: int, up: str, down: str) -> Solution:
        current = int(o.element(rid=rid).text)
        for move in slider_path(current, target):
            yield o.tap(rid=rid) if move == "center" else o.tap(text=up if move == "up" else down)


def _level(rng: random.Random, avoid: int | None = None) -> int:
    return rng.choice([v for v in range(10, 101, 10) if v != avoid])


class SettingsToggleWifi(_SettingsTask):
    name = "SettingsToggleWifi"
    template = "Turn Wi-Fi {state}."
    params = {"state": '"on" or "off"'}
    kind = "toggle"
    complexity = 1
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"state": rng.choice(("on", "off"))}

    def initial_state(self, rng):
        return self._base(rng, airplane=False, wifi=self.values["state"] == "off", radios_before_airplane={})

    def is_successful(self, device, answer):
        return float(_settings(device)["wifi"] == (self.values["state"] == "on") and self._rest_unchanged(device, ("wifi",)))

    def solve(self, o):
        yield o.tap(text="Network & internet")
        yield o.tap(rid="wifi")
        yield o.done()


class SettingsBatterySaver(_SettingsTask):
    name = "SettingsBatterySaver"
    template = "Turn on Battery saver."
    params: dict[str, str] = {}
    kind = "toggle"
    complexity = 1
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        return self._base(rng, battery_saver=False)

    def is_successful(self, device, answer):
        return float(_settings(device)["battery_saver"] and self._rest_unchanged(device, ("battery_saver",)))

    def solve(self, o):
        yield o.tap(text="Battery")
        yield o.tap(rid="battery_saver")
        yield o.done()


class SettingsSetBrightness(_SettingsTask):
    name = "SettingsSetBrightness"
    template = "Set the screen brightness to {level}%."
    params = {"level": "brightness in percent, a multiple of 10"}
    kind = "edit"
    complexity = 3
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        return {"level": _level(rng)}

    def initial_state(self, rng):
        return self._base(rng, brightness=rng.choice([v for v in range(0, 101, 5) if v != self.values["level"]]))

    def is_successful(self, device, answer):
        return float(_settings(device)["brightness"] == self.values["level"] and self._rest_unchanged(device, ("brightness",)))

    def solve(self, o):
        yield o.tap(text="Display")
        yield from self._slide(o, "brightness", self.values["level"], "Brighter", "Dimmer")
        yield o.done()


class SettingsSetFontSize(_SettingsTask):
    name = "SettingsSetFontSize"
    template = "Set the font size to {size}."
    params = {"size": "one of " + ", ".join(FONT_SIZES)}
    kind = "edit"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"size": rng.choice(FONT_SIZES)}

    def initial_state(self, rng):
        return self._base(rng, font_size=rng.choice([f for f in FONT_SIZES if f != self.values["size"]]))

    def is_successful(self, device, answer):
        return float(_settings(device)["font_size"] == self.values["size"] and self._rest_unchanged(device, ("font_size",)))

    def solve(self, o):
        yield o.tap(text="Display")
        yield o.tap(rid="font_size")
        yield o.tap(text=self.values["size"])
        yield o.done()


class SettingsRenameDevice(_SettingsTask):
    name = "SettingsRenameDevice"
    template = 'Change the device name to "{name}".'
    params = {"name": "the new device name"}
    kind = "edit"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NEW_DEVICE_NAMES)}

    def initial_state(self, rng):
        return self._base(rng, device_name=rng.choice(DEVICE_NAMES))

    def is_successful(self, device, answer):
        return float(_settings(device)["device_name"] == self.values["name"] and self._rest_unchanged(device, ("device_name",)))

    def solve(self, o):
        yield o.tap(text="About phone")
        yield o.tap(text="Device name")
        yield o.type(self.values["name"], rid="device_name", clear=True)
        yield o.tap(text="Save")
        yield o.done()


class SettingsAboutPhone(_SettingsTask):
    name = "SettingsAboutPhone"
    template = "What is the phone's {field}?"
    params = {"field": "model, Android version or build number"}
    kind = "retrieval"
    complexity = 2
    max_steps = 6
    FIELDS = {"model": "model", "Android version": "android_version", "build number": "build_number"}

    @classmethod
    def sample_params(cls, rng):
        return {"field": rng.choice(list(cls.FIELDS))}

    def initial_state(self, rng):
        return self._base(rng)

    def is_successful(self, device, answer):
        expected = self.initial()[self.FIELDS[self.values["field"]]]
        if self.values["field"] == "Android version":
            return float(answer_matches(answer, int(expected)))
        return float(answer_matches(answer, expected))

    def solve(self, o):
        yield o.tap(text="About phone")
        yield o.done(o.element(rid=self.FIELDS[self.values["field"]]).text)


class SettingsBatteryLevel(_SettingsTask):
    name = "SettingsBatteryLevel"
    template = "What is the phone's battery level? Answer with a percentage."
    params: dict[str, str] = {}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        return self._base(rng)

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.initial()["battery_level"]))

    def solve(self, o):
        yield o.tap(text="Battery")
        yield o.done(o.element(rid="battery_level").text)


class SettingsFlightMode(_SettingsTask):
    name = "SettingsFlightMode"
    template = ("Get ready for a flight: turn on airplane mode, then turn Bluetooth back on for your headphones, "
                "and set the media volume to {volume}%.")
    params = {"volume": "media volume in percent, a multiple of 10"}
    kind = "multi"
    complexity = 4
    max_steps = 22

    @classmethod
    def sample_params(cls, rng):
        return {"volume": _level(rng)}

    def initial_state(self, rng):
        return self._base(rng, airplane=False, wifi=True, mobile_data=True, radios_before_airplane={},
                          media_volume=rng.choice([v for v in range(0, 101, 5) if v != self.values["volume"]]))

    def is_successful(self, device, answer):
        s = _settings(device)
        return float(s["airplane"] and s["bluetooth"] and not s["wifi"] and not s["mobile_data"]
                     and s["media_volume"] == self.values["volume"]
                     and self._rest_unchanged(device, ("airplane", "bluetooth", "wifi", "mobile_data", "media_volume",
                                                       "radios_before_airplane")))

    def solve(self, o):
        yield o.tap(text="Network & internet")
        yield o.tap(rid="airplane")
        yield o.tap(rid="bluetooth")
        yield o.back()
        yield o.tap(text="Sound")
        yield from self._slide(o, "media_volume", self.values["volume"], "Louder", "Quieter")
        yield o.done()


class SettingsNightMode(_SettingsTask):
    name = "SettingsNightMode"
    template = "Get the phone ready for the night: turn on Dark theme, set the brightness to {level}% and turn on Do not disturb."
    params = {"level": "brightness in percent, a multiple of 10"}
    kind = "multi"
    complexity = 4
    max_steps = 22

    @classmethod
    def sample_params(cls, rng):
        return {"level": rng.choice((10, 20, 30, 40))}

    def initial_state(self, rng):
        return self._base(rng, dark_theme=False, do_not_disturb=False,
                          brightness=rng.choice([v for v in range(30, 101, 5) if v != self.values["level"]]))

    def is_successful(self, device, answer):
        s = _settings(device)
        return float(s["dark_theme"] and s["do_not_disturb"] and s["brightness"] == self.values["level"]
                     and self._rest_unchanged(device, ("dark_theme", "do_not_disturb", "brightness")))

    def solve(self, o):
        yield o.tap(text="Display")
        yield o.tap(rid="dark_theme")
        yield from self._slide(o, "brightness", self.values["level"], "Brighter", "Dimmer")
        yield o.back()
        yield o.tap(text="Sound")
        yield o.tap(rid="do_not_disturb")
        yield o.done()


class SettingsScreenTimeout(_SettingsTask):
    name = "SettingsScreenTimeout"
    template = "Make the screen turn off after {timeout} of inactivity."
    params = {"timeout": "one of " + ", ".join(SCREEN_TIMEOUTS)}
    kind = "edit"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"timeout": rng.choice(SCREEN_TIMEOUTS)}

    def initial_state(self, rng):
        return self._base(rng, screen_timeout=rng.choice([t for t in SCREEN_TIMEOUTS if t != self.values["timeout"]]))

    def is_successful(self, device, answer):
        return float(_settings(device)["screen_timeout"] == self.values["timeout"]
                     and self._rest_unchanged(device, ("screen_timeout",)))

    def solve(self, o):
        yield o.tap(text="Display")
        yield o.tap(rid="screen_timeout")
        yield o.tap(text=self.values["timeout"])
        yield o.done()


class SettingsRefreshRate(_SettingsTask):
    name = "SettingsRefreshRate"
    template = "Set the screen refresh rate to {rate} Hz."
    params = {"rate": "refresh rate in hertz"}
    kind = "infeasible"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"rate": rng.choice((90, 120, 144))}

    def initial_state(self, rng):
        return self._base(rng)

    def is_successful(self, device, answer):
        return 0.0  # Display has no refresh-rate setting; only declaring it infeasible succeeds.

    def solve(self, o):
        yield o.tap(text="Display")
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    SettingsToggleWifi, SettingsBatterySaver, SettingsSetBrightness, SettingsSetFontSize, SettingsRenameDevice,
    SettingsAboutPhone, SettingsBatteryLevel, SettingsFlightMode, SettingsNightMode, SettingsScreenTimeout,
    SettingsRefreshRate,
)
