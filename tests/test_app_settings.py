"""Settings app: state round trip, airplane mode and the radios, slider step buttons, device name form."""

from __future__ import annotations

import json
import random

import pytest

from coadapt.android_env.errors import AppError
from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.settings import sample_settings
from coadapt.tasks.settings import slider_path

PKG = "com.example.settings"
RID = PKG + ":id/"


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, {"wifi": True, "bluetooth": True, "mobile_data": True, "airplane": False, "brightness": 35,
                            "media_volume": 50, "device_name": "Pixel"})
    d.launch(PKG)
    return d


def tap(d, **kw):
    found = d.ui_tree().find(**kw)
    assert found, f"no {kw}; on screen: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def s(d):
    return d.read_app_state(PKG)


def test_state_round_trips_and_rejects_unknown_keys():
    for seed in range(5):
        state = sample_settings(random.Random(seed))
        d = SimDevice(make_apps([PKG]))
        d.write_app_state(PKG, json.loads(json.dumps(state)))
        assert d.read_app_state(PKG) == state
    with pytest.raises(AppError, match="unknown settings"):
        SimDevice(make_apps([PKG])).write_app_state(PKG, {"wifi": True, "nfc": True})


def test_airplane_mode_turns_radios_off_and_restores_them(dev):
    tap(dev, text="Network & internet")
    tap(dev, resource_id=RID + "airplane")
    st = s(dev)
    assert st["airplane"] and not st["wifi"] and not st["bluetooth"] and not st["mobile_data"]
    mobile = dev.ui_tree().find(resource_id=RID + "mobile_data")[0]
    assert not mobile.enabled  # no mobile data in the air
    tap(dev, text="Mobile data")
    assert not s(dev)["mobile_data"]
    tap(dev, resource_id=RID + "airplane")
    st = s(dev)
    assert not st["airplane"] and st["wifi"] and st["bluetooth"] and st["mobile_data"]


def test_radio_turned_on_in_flight_stays_on(dev):
    dev.write_app_state(PKG, {"wifi": False, "bluetooth": False, "airplane": False})
    dev.launch(PKG)
    tap(dev, text="Network & internet")
    tap(dev, resource_id=RID + "airplane")
    tap(dev, text="Bluetooth")
    assert s(dev)["bluetooth"] and s(dev)["airplane"]
    tap(dev, resource_id=RID + "airplane")
    assert s(dev)["bluetooth"] and not s(dev)["wifi"]


def test_brightness_slider_and_step_buttons(dev):
    tap(dev, text="Display")
    tap(dev, text="Brighter")
    assert s(dev)["brightness"] == 45
    tap(dev, resource_id=RID + "brightness")  # a tap on the middle of the slider
    assert s(dev)["brightness"] == 50
    for _ in range(7):
        tap(dev, text="Brighter")
    assert s(dev)["brightness"] == 100
    assert dev.ui_tree().find(resource_id=RID + "brightness")[0].text == "100"


def test_slider_path_is_shortest():
    assert slider_path(35, 80) == ["center", "up", "up", "up"]
    assert slider_path(40, 70) == ["up"] * 3 and len(slider_path(40, 80)) == 4
    assert slider_path(95, 100) == ["up"]
    assert slider_path(5, 0) == ["down"]


def test_device_name_form_saves_and_refuses_empty(dev):
    tap(dev, text="About phone")
    tap(dev, text="Device name")
    for _ in range(len("Pixel")):
        dev.key("delete")
    tap(dev, text="Save")
    assert s(dev)["device_name"] == "Pixel" and dev.ui_tree().find(text="Enter a device name")
    dev.input_text("Den phone")
    dev.key("enter")  # the keyboard's enter saves too
    assert s(dev)["device_name"] == "Den phone"
    assert dev.ui_tree().find(text="Den phone")  # back on About phone
