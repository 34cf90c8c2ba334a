"""Settings (com.example.settings), a seen app: a list of categories (Network & internet,
Display, Sound, Battery, About phone), each a page of switches, sliders with labelled step
buttons and dropdowns; the device name is edited in a form. Airplane mode turns the radios off
and restores them when it is turned off again, as on Android."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from coadapt.android_env.errors import AppError
from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, EditText, Header, KeyValue, LayoutCtx, ListItem, ListView, Row, Screen, SeekBar, Spinner, Switch,
    Text, Toolbar,
)

FONT_SIZES = ("Small", "Default", "Large", "Largest")
SCREEN_TIMEOUTS = ("15 seconds", "30 seconds", "1 minute", "2 minutes", "5 minutes", "10 minutes")
RINGTONES = ("Pixel Sounds", "Chime", "Flutter", "Ripple", "Spaceship")
STEP = 10
"""How far the Dimmer/Brighter and Quieter/Louder buttons move a slider."""

MODELS = ("Pixel 8", "Pixel 7a", "Pixel 8 Pro", "Pixel Fold", "Pixel 6")
ANDROID_VERSIONS = ("13", "14", "15")
NETWORKS = ("HomeNet", "Office-5G", "CoffeeHouse", "Linksys-2F", "Garden_WiFi", "Flat 4B")
DEVICE_NAMES = ("Pixel", "Ana's phone", "Work phone", "Kitchen tablet", "Sam's Pixel", "Travel phone")

CATEGORIES = (
    ("network", "Network & internet", "Wi-Fi, Bluetooth, Airplane mode", "wifi"),
    ("display", "Display", "Brightness, Dark theme, Font size", "brightness"),
    ("sound", "Sound", "Volume, Do not disturb, Ringtone", "music"),
    ("battery", "Battery", "Battery level, Battery saver", "battery"),
    ("about", "About phone", "Device name, Model, Build number", "info"),
)


@dataclass
class SettingsState:
    wifi: bool = True
    wifi_network: str = "HomeNet"
    bluetooth: bool = False
    airplane: bool = False
    mobile_data: bool = True
    radios_before_airplane: dict[str, bool] = field(default_factory=dict)
    brightness: int = 60
    adaptive_brightness: bool = True
    dark_theme: bool = False
    font_size: str = "Default"
    screen_timeout: str = "30 seconds"
    media_volume: int = 50
    do_not_disturb: bool = False
    vibrate_for_calls: bool = True
    ringtone: str = "Pixel Sounds"
    battery_level: int = 76
    battery_saver: bool = False
    battery_percentage: bool = False
    device_name: str = "Pixel"
    model: str = "Pixel 8"
    android_version: str = "14"
    build_number: str = "AP1A.240305.019"
    security_update: str = "March 5, 2024"


_FIELDS = {f.name for f in fields(SettingsState)}


def sample_build_number(rng: random.Random, version: str) -> str:
    letter = {"13": "TQ3A", "14": "AP1A", "15": "BP1A"}.get(version, "AP1A")
    return f"{letter}.{rng.choice((23, 24, 25))}{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d}.{rng.randrange(1, 40):03d}"


def sample_settings(rng: random.Random) -> dict[str, Any]:
    """A plausible, varied settings state (as a state dict) for setting up a task."""
    version = rng.choice(ANDROID_VERSIONS)
    airplane = rng.random() < 0.15
    s = SettingsState(
        wifi=not airplane and rng.random() < 0.7,
        wifi_network=rng.choice(NETWORKS),
        bluetooth=not airplane and rng.random() < 0.4,
        airplane=airplane,
        mobile_data=not airplane,
        radios_before_airplane={"wifi": True, "bluetooth": False, "mobile_data": True} if airplane else {},
        brightness=rng.randrange(1, 20) * 5,
        adaptive_brightness=rng.random() < 0.5,
        dark_theme=rng.random() < 0.4,
        font_size=rng.choice(FONT_SIZES),
        screen_timeout=rng.choice(SCREEN_TIMEOUTS),
        media_volume=rng.randrange(0, 21) * 5,
        do_not_disturb=rng.random() < 0.2,
        vibrate_for_calls=rng.random() < 0.7,
        ringtone=rng.choice(RINGTONES),
        battery_level=rng.randrange(8, 100),
        battery_saver=rng.random() < 0.2,
        battery_percentage=rng.random() < 0.5,
        device_name=rng.choice(DEVICE_NAMES),
        model=rng.choice(MODELS),
        android_version=version,
        build_number=sample_build_number(rng, version),
        security_update=f"{rng.choice(('January', 'March', 'May', 'August', 'October'))} 5, {rng.choice((2024, 2025))}",
    )
    return asdict(s)


def _clamp(v: int) -> int:
    return max(0, min(100, v))


class SettingsApp(SimApp):
    package = "com.example.settings"
    label = "Settings"
    icon = "settings"
    color = "#455A64"

    def reset_state(self) -> None:
        self.state = SettingsState()
        self.name_draft = ""

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        unknown = set(data) - _FIELDS
        if unknown:
            raise AppError(f"unknown settings {sorted(unknown)}; known: {sorted(_FIELDS)}")
        self.state = SettingsState(**{**asdict(SettingsState()), **data})
        self.name_draft = ""
        self.home_screen()

    # ------------------------------------------------------------------ behaviour

    def _set_airplane(self, on: bool) -> None:
        s = self.state
        if on == s.airplane:
            return
        if on:
            s.radios_before_airplane = {"wifi": s.wifi, "bluetooth": s.bluetooth, "mobile_data": s.mobile_data}
            s.wifi = s.bluetooth = s.mobile_data = False
        else:
            before = s.radios_before_airplane or {"wifi": True, "bluetooth": False, "mobile_data": True}
            # Radios turned on by hand during the flight stay on.
            s.wifi = s.wifi or before.get("wifi", False)
            s.bluetooth = s.bluetooth or before.get("bluetooth", False)
            s.mobile_data = before.get("mobile_data", True)
            s.radios_before_airplane = {}
        s.airplane = on

    def _set(self, attr: str):
        def set_value(v: Any) -> None:
            setattr(self.state, attr, v)

        return set_value

    def _step(self, attr: str, delta: int):
        def step() -> None:
            setattr(self.state, attr, _clamp(getattr(self.state, attr) + delta))

        return step

    def _open_name_form(self) -> None:
        self.name_draft = self.state.device_name
        self.push("device_name")
        self.focus("device_name")

    def _save_name(self) -> None:
        name = self.name_draft.strip()
        if not name:
            self.toast("Enter a device name")
            return
        self.state.device_name = name
        self.pop()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        page = {"network": self._network, "display": self._display, "sound": self._sound, "battery": self._battery,
                "about": self._about, "device_name": self._device_name}.get(self.route.name)
        return page() if page is not None else self._main()

    def _page(self, title: str, body: list) -> Screen:
        return Screen(toolbar=Toolbar(title, nav="back", on_nav=self.pop), body=body)

    def _main(self) -> Screen:
        items = [ListItem(title, subtitle, icon=icon, on_click=lambda r=route: self.push(r), id=route)
                 for route, title, subtitle, icon in CATEGORIES]
        return Screen(toolbar=Toolbar("Settings"), body=[ListView("settings_list", items)])

    def _network(self) -> Screen:
        s = self.state
        wifi_summary = f"Connected to {s.wifi_network}" if s.wifi else "Off"
        return self._page("Network & internet", [
            Switch("Wi-Fi", s.wifi, self._set("wifi"), id="wifi", summary=wifi_summary, icon="wifi"),
            Switch("Mobile data", s.mobile_data, self._set("mobile_data"), id="mobile_data", icon="signal",
                   summary="Unavailable in airplane mode" if s.airplane else ("On" if s.mobile_data else "Off"),
                   enabled=not s.airplane),
            Switch("Bluetooth", s.bluetooth, self._set("bluetooth"), id="bluetooth", summary="On" if s.bluetooth else "Off",
                   icon="bluetooth"),
            Switch("Airplane mode", s.airplane, self._set_airplane, id="airplane", icon="airplane",
                   summary="On" if s.airplane else "Off"),
        ])

    def _display(self) -> Screen:
        s = self.state
        return self._page("Display", [
            SeekBar("Brightness", s.brightness, self._set("brightness"), id="brightness"),
            Row([Button("Dimmer", self._step("brightness", -STEP), kind="tonal", id="dimmer"),
                 Button("Brighter", self._step("brightness", STEP), kind="tonal", id="brighter")], pad=8, align="end"),
            Switch("Adaptive brightness", s.adaptive_brightness, self._set("adaptive_brightness"), id="adaptive_brightness",
                   summary="Adjust to the light around you"),
            Switch("Dark theme", s.dark_theme, self._set("dark_theme"), id="dark_theme", summary="Easier on the eyes at night"),
            Spinner("font_size", FONT_SIZES, s.font_size, self._set("font_size"), label="Font size"),
            Spinner("screen_timeout", SCREEN_TIMEOUTS, s.screen_timeout, self._set("screen_timeout"), label="Screen timeout"),
        ])

    def _sound(self) -> Screen:
        s = self.state
        return self._page("Sound", [
            SeekBar("Media volume", s.media_volume, self._set("media_volume"), id="media_volume"),
            Row([Button("Quieter", self._step("media_volume", -STEP), kind="tonal", id="quieter"),
                 Button("Louder", self._step("media_volume", STEP), kind="tonal", id="louder")], pad=8, align="end"),
            Switch("Do not disturb", s.do_not_disturb, self._set("do_not_disturb"), id="do_not_disturb",
                   summary="Silence calls and notifications"),
            Switch("Vibrate for calls", s.vibrate_for_calls, self._set("vibrate_for_calls"), id="vibrate_for_calls"),
            Spinner("ringtone", RINGTONES, s.ringtone, self._set("ringtone"), label="Phone ringtone"),
        ])

    def _battery(self) -> Screen:
        s = self.state
        return self._page("Battery", [
            Text(f"{s.battery_level}%", "display", id="battery_level", vpad=12),
            Text("Battery level", "body2", vpad=0),
            Header("Options"),
            Switch("Battery saver", s.battery_saver, self._set("battery_saver"), id="battery_saver",
                   summary="Limits background activity to save power"),
            Switch("Battery percentage", s.battery_percentage, self._set("battery_percentage"), id="battery_percentage",
                   summary="Show the percentage in the status bar"),
        ])

    def _about(self) -> Screen:
        s = self.state
        return self._page("About phone", [
            ListItem("Device name", s.device_name, on_click=self._open_name_form, id="device_name_row"),
            KeyValue("Model", s.model, id="model"),
            KeyValue("Android version", s.android_version, id="android_version"),
            KeyValue("Android security update", s.security_update, id="security_update"),
            KeyValue("Build number", s.build_number, id="build_number"),
        ])

    def _device_name(self) -> Screen:
        def set_name(v: str) -> None:
            self.name_draft = v

        return self._page("Device name", [
            Text("Your device name is visible to apps and to Bluetooth devices nearby.", "body2", max_lines=2),
            EditText("device_name", self.name_draft, set_name, hint="Device name", label="Device name", on_submit=self._save_name),
            ButtonRow([Button("Cancel", self.pop, kind="outlined", id="cancel"), Button("Save", self._save_name, id="save")]),
        ])


APP = SettingsApp
GROUP = "seen"
