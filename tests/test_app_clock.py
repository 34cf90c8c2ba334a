"""Clock app: state round trip, alarms (picker, repeat chips, list switches, delete/undo), the timer
and stopwatch on the virtual clock, world cities."""

from __future__ import annotations

import json
import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.clock import days_text, fmt_duration, sample_alarms
from coadapt.tasks.clock import time_matches

PKG = "com.example.clock"
RID = PKG + ":id/"
ALARMS = [
    {"id": 1, "hour": 6, "minute": 30, "enabled": True, "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "label": "Work", "vibrate": True},
    {"id": 2, "hour": 9, "minute": 0, "enabled": False, "days": [], "label": "", "vibrate": True},
]


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, {"alarms": [dict(a) for a in ALARMS], "cities": ["Tokyo"]})
    d.launch(PKG)
    return d


def tap(d, **kw):
    found = d.ui_tree().find(**kw)
    assert found, f"no {kw}; on screen: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def st(d):
    return d.read_app_state(PKG)


def test_state_round_trips_with_running_timer_and_stopwatch(dev):
    tap(dev, content_desc="Timer")
    tap(dev, text="5 min")
    tap(dev, text="Start")
    tap(dev, content_desc="Stopwatch")
    tap(dev, text="Start")
    dev.wait(10)
    tap(dev, text="Lap")
    state = st(dev)
    assert state["timer"]["status"] == "running" and state["timer"]["remaining_s"] == 300 - 13
    assert state["stopwatch"]["elapsed_s"] == 11 and state["stopwatch"]["laps"] == [11]
    other = SimDevice(make_apps([PKG]))
    other.wait((dev.now() - other.now()).total_seconds())  # running ones end at absolute times
    other.write_app_state(PKG, json.loads(json.dumps(state)))
    assert other.read_app_state(PKG) == state


def test_sampled_alarms_have_distinct_times_and_labels():
    for seed in range(30):
        alarms = sample_alarms(random.Random(seed), 6)
        assert len({(a["hour"], a["minute"]) for a in alarms}) == 6
        labels = [a["label"] for a in alarms if a["label"]]
        assert len(labels) == len(set(labels))


def test_list_switch_toggles_only_that_alarm(dev):
    sw = dev.ui_tree().find(content_desc="09:00 alarm")[0]
    assert sw.checkable and not sw.checked
    dev.tap(*sw.bounds.center)
    alarms = st(dev)["alarms"]
    assert alarms[1]["enabled"] and alarms[0] == ALARMS[0]
    assert dev.ui_tree().find(content_desc="09:00 alarm")[0].checked
    assert dev.ui_tree().find(text="Weekdays · Work")


def test_add_alarm_with_picker_and_repeat_days(dev):
    tap(dev, text="Add alarm")  # opens the form with the time picker on top
    assert dev.ui_tree().find(text="Set alarm time")
    tap(dev, content_desc="Increase hour")
    tap(dev, resource_id=RID + "minute")
    dev.key("delete")
    dev.key("delete")
    dev.input_text("45")
    tap(dev, text="OK")
    assert dev.ui_tree().find(text="11:45")  # 09:00 + 1 h default, one hour up
    tap(dev, text="Sat")
    tap(dev, text="Sun")
    tap(dev, text="Sat")
    tap(dev, resource_id=RID + "label")
    dev.input_text("Brunch")
    tap(dev, text="Save")
    new = [a for a in st(dev)["alarms"] if a["label"] == "Brunch"]
    assert len(new) == 1 and (new[0]["hour"], new[0]["minute"]) == (11, 45) and new[0]["days"] == ["Sun"] and new[0]["enabled"]


def test_back_discards_the_form_and_delete_undoes(dev):
    tap(dev, text="06:30")
    tap(dev, text="Mon")
    dev.key("back")
    assert st(dev)["alarms"] == ALARMS
    tap(dev, text="06:30")
    tap(dev, text="Delete")
    assert len(st(dev)["alarms"]) == 1
    tap(dev, text="UNDO")
    assert st(dev)["alarms"] == ALARMS


def test_timer_counts_down_pauses_and_rings(dev):
    tap(dev, content_desc="Timer")
    tap(dev, resource_id=RID + "timer_seconds")
    dev.input_text("30")
    tap(dev, text="Start")
    dev.wait(9)  # it started when Start was tapped
    assert dev.ui_tree().find(resource_id=RID + "timer_remaining")[0].text == "00:21"
    tap(dev, text="Pause")  # one more second for the tap
    dev.wait(30)
    assert st(dev)["timer"] == {**st(dev)["timer"], "status": "paused", "remaining_s": 20}
    tap(dev, text="Resume")
    dev.wait(30)
    assert st(dev)["timer"]["status"] == "ringing"
    assert dev.ui_tree().find(text="Time's up")
    tap(dev, text="Stop")
    assert st(dev)["timer"]["status"] == "idle"


def test_stopwatch_stop_resume_reset(dev):
    tap(dev, content_desc="Stopwatch")
    tap(dev, text="Start")
    dev.wait(4)
    tap(dev, text="Stop")
    dev.wait(60)  # stopped: no time passes on the stopwatch
    assert st(dev)["stopwatch"]["elapsed_s"] == 5
    tap(dev, text="Resume")
    dev.wait(2)
    tap(dev, text="Lap")
    assert dev.ui_tree().find(text="Lap 1")
    tap(dev, text="Stop")
    tap(dev, text="Reset")
    assert st(dev)["stopwatch"] == {"status": "idle", "base_s": 0, "started_at": None, "laps": [], "elapsed_s": 0}


def test_world_clock_add_and_delete_city(dev):
    tap(dev, content_desc="Clock")
    assert dev.ui_tree().find(text="Tokyo") and dev.ui_tree().find(text="8 hr ahead")
    tap(dev, text="Add city")
    assert not dev.ui_tree().find(text="Tokyo")  # already on the list
    tap(dev, text="Mumbai")
    assert st(dev)["cities"] == ["Tokyo", "Mumbai"]
    assert dev.ui_tree().find(text="4.5 hr ahead")
    tap(dev, text="Tokyo")
    tap(dev, text="Delete")
    assert st(dev)["cities"] == ["Mumbai"]


def test_helpers():
    assert days_text(["Sat", "Sun"]) == "Weekends" and days_text(["Wed", "Mon"]) == "Mon, Wed" and days_text([]) == "Once"
    assert fmt_duration(65) == "01:05" and fmt_duration(3725) == "1:02:05"
    assert time_matches("7:05", "07:05") and time_matches("07:05", "07:05") and time_matches("7:05 PM", "19:05")
    assert time_matches("It is set for 19:05.", "19:05")
    assert not time_matches("7:50", "07:05") and not time_matches(None, "07:05") and not time_matches("7", "07:00")
