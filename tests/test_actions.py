"""Actions: validation, JSON round trip, AndroidWorld compatibility."""

from __future__ import annotations

import json

import pytest

from coadapt.android_env import actions as A
from coadapt.android_env.errors import ActionError

EXAMPLES = [
    A.Tap(index=3), A.Tap(x=10, y=20), A.LongPress(index=0), A.LongPress(x=5, y=6),
    A.Scroll("down"), A.Scroll("left", index=2), A.Swipe("left", index=4), A.Swipe("up", x=100, y=900),
    A.Swipe("right"), A.Type("milk"), A.Type("Grüße 東京", index=1, clear=True), A.Back(), A.Home(), A.Enter(),
    A.OpenApp("Notes"), A.Wait(), A.Wait(2.5), A.Done(), A.Done("42"), A.Infeasible(), A.Infeasible("no such thing"),
    A.Invalid("blah", "unparseable"),
]


@pytest.mark.parametrize("action", EXAMPLES, ids=lambda a: A.describe(a))
def test_json_round_trip(action):
    text = A.to_json(action)
    assert A.from_json(text) == action
    assert json.loads(text)["action_type"]


def test_androidworld_keys():
    assert A.to_dict(A.Tap(index=3)) == {"action_type": "click", "index": 3}
    assert A.to_dict(A.Type("hi", index=2)) == {"action_type": "input_text", "text": "hi", "index": 2}
    assert A.to_dict(A.Done()) == {"action_type": "status", "goal_status": "complete"}
    assert A.to_dict(A.Infeasible()) == {"action_type": "status", "goal_status": "infeasible"}
    assert A.to_dict(A.Back()) == {"action_type": "navigate_back"}
    assert A.to_dict(A.OpenApp("Clock")) == {"action_type": "open_app", "app_name": "Clock"}
    # AndroidWorld's separate answer action maps onto done(answer).
    assert A.from_dict({"action_type": "answer", "text": "7"}) == A.Done("7")
    # None-valued keys (AndroidWorld serialises every field) are ignored.
    assert A.from_dict({"action_type": "click", "index": 1, "x": None, "y": None, "text": None}) == A.Tap(index=1)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: A.Tap(), "needs a target"),
        (lambda: A.Tap(index=-1), "index"),
        (lambda: A.Tap(index=1, x=2, y=3), "not both"),
        (lambda: A.Tap(x=1), "go together"),
        (lambda: A.Tap(index=True), "index"),
        (lambda: A.Scroll("sideways"), "direction"),
        (lambda: A.Type(""), "text"),
        (lambda: A.OpenApp("  "), "app_name"),
        (lambda: A.Wait(0), "seconds"),
        (lambda: A.Wait(100), "seconds"),
    ],
)
def test_validation_names_the_problem(build, message):
    with pytest.raises(ActionError, match=message):
        build()


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"index": 1}', "action_type"),
        ('{"action_type": "fly"}', "unknown action_type 'fly'; valid:"),
        ('{"action_type": "click", "index": 1, "speed": 3}', "unexpected"),
        ('{"action_type": "status", "goal_status": "maybe"}', "goal_status"),
        ('{"action_type": "click", "index": "3"}', "index"),
    ],
)
def test_bad_json_is_an_action_error(text, message):
    with pytest.raises(ActionError, match=message):
        A.from_json(text)


def test_actions_are_frozen():
    a = A.Tap(index=1)
    with pytest.raises(AttributeError):
        a.index = 2  # type: ignore[misc]


def test_describe():
    assert A.describe(A.Tap(index=3)) == "tap(3)"
    assert A.describe(A.Type("milk", index=2)) == 'type("milk", 2)'
    assert A.describe(A.Done("yes")) == 'done("yes")'
    assert A.describe(A.Scroll("down")) == "scroll(down)"
