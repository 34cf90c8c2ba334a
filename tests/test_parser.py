"""Action parser: every documented format, element-name resolution, round trips, fuzzing."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from coadapt.android_env.actions import (
    Back, Done, Enter, Home, Infeasible, Invalid, LongPress, OpenApp, Scroll, Swipe, Tap, Type, Wait, describe,
    to_json,
)
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import ActionError
from coadapt.android_env.observation import Observation
from coadapt.android_env.sim.device import SimDevice
from coadapt.android_env.uitree import parse_xml
from coadapt.apps import label_map, make_apps
from coadapt.policy.elements import resolve_element
from coadapt.policy.parser import format_action, parse_action

W, H = 720, 1600


def _node(text="", desc="", cls="android.widget.TextView", bounds="[0,0][10,10]", hint="", **flags: bool) -> str:
    attrs = " ".join(f'{k.replace("_", "-")}="{str(v).lower()}"' for k, v in flags.items())
    return (f'<node text="{text}" content-desc="{desc}" hint="{hint}" class="{cls}" package="com.example.test" '
            f'bounds="{bounds}" {attrs} />')


def make_obs(*nodes: str) -> Observation:
    xml = (f'<?xml version="1.0"?><hierarchy rotation="0"><node class="android.widget.FrameLayout" '
           f'package="com.example.test" bounds="[0,0][{W},{H}]">{"".join(nodes)}</node></hierarchy>')
    return Observation.build(Image.new("RGB", (W, H)), parse_xml(xml), "com.example.test", 0)


@pytest.fixture(scope="module")
def screen() -> Observation:
    """A hand-made screen with duplicate, case-variant and substring names."""
    return make_obs(
        _node("Notes", bounds="[0,0][720,100]"),                                                   # 0
        _node(desc="Save", cls="android.widget.ImageButton", bounds="[600,0][700,100]", clickable=True),  # 1
        _node(hint="Title", cls="android.widget.EditText", bounds="[0,120][720,220]", clickable=True, focused=True),  # 2
        _node(text="milk", hint="Body", cls="android.widget.EditText", bounds="[0,240][720,340]", clickable=True),  # 3
        _node("Shopping list", bounds="[0,400][720,500]"),                                          # 4
        _node("Save", cls="android.widget.TextView", bounds="[0,500][720,560]"),                   # 5 (not clickable)
        _node("Down", cls="android.widget.Button", bounds="[0,560][720,600]", clickable=True),    # 6
        _node(cls="androidx.recyclerview.widget.RecyclerView", bounds="[0,600][720,1400]", scrollable=True),  # 7
        _node("Item one", bounds="[0,600][720,700]"),                                             # 8
        _node("Item two", bounds="[0,700][720,800]"),                                             # 9
        _node("(12, 34)", cls="android.widget.Button", bounds="[0,800][720,900]", clickable=True),  # 10
    )


@pytest.fixture(scope="module")
def editor() -> Observation:
    """The Notes app's editor on a simulated phone."""
    env = AndroidEnv(SimDevice(make_apps(["com.example.notes"])), label_map())

    class Task:
        goal, max_steps = "add a note", 10

        def setup(self, device) -> None:
            pass

    obs = env.reset(Task())
    obs = env.step(OpenApp("Notes")).observation
    fab = next(i for i, e in enumerate(obs.elements) if e.content_desc == "New note")
    return env.step(Tap(index=fab)).observation


def test_element_resolution_order(screen: Observation) -> None:
    assert resolve_element("Save", screen) == 1          # exact; the clickable one of two "Save"s
    assert resolve_element("save", screen) == 1          # case-insensitive
    assert resolve_element("Shopping", screen) == 4      # unique substring
    assert resolve_element("Title", screen) == 2         # a hint names a field
    with pytest.raises(ActionError, match="ambiguous"):
        resolve_element("Item", screen)
    with pytest.raises(ActionError, match="no element"):
        resolve_element("Cancel", screen)


@pytest.mark.parametrize("text, expected", [
    # function-call style
    ("tap(5)", Tap(index=5)),
    ("tap(120, 540)", Tap(x=120, y=540)),
    ('tap "Save"', Tap(index=1)),
    ('tap("Save")', Tap(index=1)),
    ('tap "shopping"', Tap(index=4)),
    ('type("milk", 2)', Type("milk", index=2)),
    ('type "milk" into "Title"', Type("milk", index=2)),
    ('type("oat milk", "Body", clear=true)', Type("oat milk", index=3, clear=True)),
    ('type "x"', Type("x")),
    ("scroll(down)", Scroll("down")),
    ("scroll(up, 7)", Scroll("up", index=7)),
    ('scroll down "Down"', Scroll("down", index=6)),
    ("swipe(left, 3)", Swipe("left", index=3)),
    ("swipe(right, 100, 200)", Swipe("right", x=100, y=200)),
    ("long_press(4)", LongPress(index=4)),
    ("back()", Back()),
    ("home()", Home()),
    ("enter()", Enter()),
    ('open_app("Notes")', OpenApp("Notes")),
    ("wait()", Wait()),
    ("wait(2.5)", Wait(2.5)),
    ("done()", Done()),
    ('done("42")', Done("42")),
    ("done(42)", Done("42")),
    ("infeasible()", Infeasible()),
    ('infeasible("no such setting")', Infeasible("no such setting")),
    # text style
    ("back", Back()),
    ("tap 3", Tap(index=3)),
    ("tap 100 200", Tap(x=100, y=200)),
    ("scroll down", Scroll("down")),
    ('open_app "Notes"', OpenApp("Notes")),
    ('done "42"', Done("42")),
    ('tap "(12, 34)"', Tap(x=9, y=54)),  # a quoted box is a UI-TARS point (0-1000 relative)
    # AndroidWorld JSON
    ('{"action_type": "click", "index": 3}', Tap(index=3)),
    ('{"action_type": "input_text", "text": "milk", "index": 2}', Type("milk", index=2)),
    ('{"action_type": "scroll", "direction": "down"}', Scroll("down")),
    ('{"action_type": "navigate_back"}', Back()),
    ('{"action_type": "status", "goal_status": "complete"}', Done()),
    ('{"action_type": "status", "goal_status": "infeasible"}', Infeasible()),
    ('{"action_type": "answer", "text": "7"}', Done("7")),
    ('{"action_type": "open_app", "app_name": "Notes"}', OpenApp("Notes")),
    ('{"action_type": "click", "x": 10.0, "y": 20, "reason": "why not"}', Tap(x=10, y=20)),
    ("{'action_type': 'long_press', 'index': 1}", LongPress(index=1)),
    # UI-TARS (no image size: 0-1000 relative)
    ("click(start_box='(500,500)')", Tap(x=360, y=800)),
    ("click(start_box='<|box_start|>(100,200)<|box_end|>')", Tap(x=72, y=320)),
    ("click(start_box='(100,200,300,400)')", Tap(x=144, y=480)),
    ("click(start_box='[100, 200]')", Tap(x=72, y=320)),
    ("click(point='<point>500 250</point>')", Tap(x=360, y=400)),
    ("click(start_box='(1000,1000)')", Tap(x=W - 1, y=H - 1)),
    ("long_press(start_box='(500,500)')", LongPress(x=360, y=800)),
    ("type(content='hello')", Type("hello")),
    ("type(content='hi\\n')", Type("hi\n")),
    ("scroll(start_box='(500,500)', direction='down')", Scroll("down", index=7)),
    ("scroll(start_box='(500,20)', direction='up')", Scroll("up")),
    ("drag(start_box='(100,500)', end_box='(900,520)')", Swipe("right", x=72, y=800)),
    ("drag(start_box='(500,800)', end_box='(500,200)')", Swipe("up", x=360, y=1280)),
    ("press_back()", Back()),
    ("press_home()", Home()),
    ("press_enter()", Enter()),
    ("open_app(app_name='Notes')", OpenApp("Notes")),
    ("finished(content='done it')", Done("done it")),
    ("finished()", Done()),
])
def test_documented_formats(screen: Observation, text: str, expected: object) -> None:
    assert parse_action(text, screen) == expected


@pytest.mark.parametrize("text", [
    "Action: tap(1)",
    "Thought: the save button is at the top right.\nAction: tap(1)",
    "```\ntap(1)\n```",
    "```python\ntap(1)\n```",
    "I will tap \"Save\" now.",
    "tap(1) because it saves the note",
    "tap(1",
    "  TAP(1)  ",
    "1. tap(1)\n2. back()",
    '{"action_type": "click", "index": 1}\nThis saves it.',
    'The answer is {"action_type": "click", "index": 1}',
])
def test_surrounding_junk_is_ignored(screen: Observation, text: str) -> None:
    assert parse_action(text, screen) == Tap(index=1)


def test_uitars_image_pixels_scale_to_screen(screen: Observation) -> None:
    # The model saw a 196x448 resize of the 720x1600 screen.
    assert parse_action("click(start_box='(98,224)')", screen, image_size=(196, 448)) == Tap(x=360, y=800)
    assert parse_action("click(start_box='(196,448)')", screen, image_size=(196, 448)) == Tap(x=W - 1, y=H - 1)
    assert isinstance(parse_action("click(start_box='(300,100)')", screen, image_size=(196, 448)), Invalid)


@pytest.mark.parametrize("text, reason", [
    ("", "empty"),
    ("I am not sure what to do.", "no action"),
    ('tap "Cancel"', "no element named"),
    ('tap "Item"', "ambiguous"),
    ("tap(99)", "no element 99"),
    ("tap(5000, 10)", "off the"),
    ('tap "unterminated', "unterminated"),
    ("scroll(sideways)", "direction"),
    ("type(content='')", "non-empty"),
    ("click(start_box='(1200,10)')", "off the"),
    ("click(start_box='(1,2,3)')", "box"),
    ("wait(500)", "seconds"),
    ('{"action_type": "fly"}', "unknown action_type"),
    ("drag(start_box='(1,1)')", "end_box"),
])
def test_unreadable_output_is_invalid_with_reason(screen: Observation, text: str, reason: str) -> None:
    action = parse_action(text, screen)
    assert isinstance(action, Invalid)
    assert action.raw == text
    assert reason in action.reason


def test_prose_opening_with_an_english_verb_is_not_an_action(screen: Observation) -> None:
    assert isinstance(parse_action("Open the notes app and look around", screen), Invalid)
    assert isinstance(parse_action("Complete the form first", screen), Invalid)


# --------------------------------------------------------------------------- round trips

EXAMPLES = [
    Tap(index=1), Tap(index=5), Tap(index=9), Tap(index=7), Tap(index=10), Tap(x=120, y=540), LongPress(index=4),
    LongPress(x=0, y=0), Type("milk", index=2), Type('say "hi"\n\\ ok', index=3, clear=True), Type("Action: tap(3)"),
    Type("x"), Scroll("down"), Scroll("up", index=7), Scroll("down", index=6), Swipe("left"), Swipe("right", index=8),
    Swipe("up", x=10, y=20), Back(), Home(), Enter(), OpenApp("Notes"), OpenApp("com.example.notes"), Wait(),
    Wait(2.5), Wait(30), Done(), Done("42"), Done(""), Infeasible(), Infeasible("no such setting"),
]


@pytest.mark.parametrize("style", ["text", "call", "json"])
@pytest.mark.parametrize("action", EXAMPLES, ids=describe)
def test_format_round_trip(screen: Observation, action: object, style: str) -> None:
    text = format_action(action, screen, style=style)  # type: ignore[arg-type]
    assert parse_action(text, screen) == action, text


def test_text_style_names_elements_by_text(screen: Observation, editor: Observation) -> None:
    assert format_action(Tap(index=1), screen) == 'tap "Save"'
    assert format_action(Tap(index=5), screen) == "tap 5"            # "Save" means element 1
    assert format_action(Tap(index=10), screen) == "tap 10"          # its name reads as a point
    assert format_action(Type("milk", index=3), screen) == 'type "milk" into "Body"'  # a field by its hint
    save = next(i for i, e in enumerate(editor.elements) if e.label == "Save")
    title = next(i for i, e in enumerate(editor.elements) if e.hint == "Title")
    assert format_action(Tap(index=save), editor) == 'tap "Save"'
    assert format_action(Type("milk", index=title), editor) == 'type "milk" into "Title"'


def test_describe_output_parses_back(screen: Observation) -> None:
    for action in EXAMPLES:
        if isinstance(action, Infeasible) or (isinstance(action, Wait) and action.seconds != round(action.seconds, 4)):
            continue
        assert parse_action(describe(action), screen) == action
        assert parse_action(to_json(action), screen) == action


def test_format_refuses_what_cannot_be_a_target(screen: Observation) -> None:
    with pytest.raises(ActionError):
        format_action(Invalid("zzz"), screen)
    with pytest.raises(ActionError):
        format_action(Tap(index=99), screen)
    with pytest.raises(ActionError):
        format_action(Back(), screen, style="yaml")  # type: ignore[arg-type]


def test_every_element_of_a_real_screen_round_trips(editor: Observation) -> None:
    for i in range(len(editor.elements)):
        for action in (Tap(index=i), LongPress(index=i), Type("abc", index=i), Scroll("down", index=i), Swipe("left", index=i)):
            assert parse_action(format_action(action, editor), editor) == action


# --------------------------------------------------------------------------- property tests

_texts = st.text(min_size=1, max_size=40)


@st.composite
def actions(draw: st.DrawFn) -> object:
    n = 11
    index = st.integers(0, n - 1)
    point = st.tuples(st.integers(0, W - 1), st.integers(0, H - 1))
    direction = st.sampled_from(["up", "down", "left", "right"])
    kind = draw(st.sampled_from(["tap", "long", "type", "scroll", "swipe", "back", "home", "enter", "open", "wait",
                                 "done", "infeasible"]))
    if kind in ("tap", "long"):
        cls = Tap if kind == "tap" else LongPress
        if draw(st.booleans()):
            return cls(index=draw(index))
        x, y = draw(point)
        return cls(x=x, y=y)
    if kind == "type":
        return Type(draw(_texts), index=draw(st.none() | index), clear=draw(st.booleans()))
    if kind == "scroll":
        return Scroll(draw(direction), index=draw(st.none() | index))
    if kind == "swipe":
        choice = draw(st.sampled_from(["none", "index", "point"]))
        if choice == "index":
            return Swipe(draw(direction), index=draw(index))
        if choice == "point":
            x, y = draw(point)
            return Swipe(draw(direction), x=x, y=y)
        return Swipe(draw(direction))
    if kind == "open":
        return OpenApp(draw(_texts.filter(lambda s: s.strip() != "")))
    if kind == "wait":
        return Wait(draw(st.floats(min_value=0.001, max_value=60)))
    if kind == "done":
        return Done(draw(st.none() | st.text(max_size=40)))
    if kind == "infeasible":
        return Infeasible(draw(st.none() | _texts))
    return {"back": Back(), "home": Home(), "enter": Enter()}[kind]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(action=actions(), style=st.sampled_from(["text", "call", "json"]))
def test_random_actions_round_trip(screen: Observation, action: object, style: str) -> None:
    text = format_action(action, screen, style=style)  # type: ignore[arg-type]
    assert parse_action(text, screen) == action, text


_FRAGMENTS = [
    "tap", "click", "type", "scroll", "swipe", "drag", "long_press", "back", "home", "enter", "open_app", "wait",
    "done", "finished", "infeasible", "press_back", "Action:", "Thought:", "(", ")", "[", "]", "{", "}", ",", "=",
    "'", '"', "\\", "\n", " ", "start_box=", "end_box=", "content=", "direction=", "down", "left", "into", "clear",
    "<|box_start|>", "<|box_end|>", "<point>", "</point>", "```", "```json\n", '"action_type"', ":", '"click"',
    '"index"', "-", ".", "e5", "0", "3", "42", "999999999999999999999", "1e309", "nan", "Save", "Item", "\u201c",
    "\u201d", "\\u12", "\\ud83d", "\ud7ff", "\x00",
]


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join))
def test_fuzz_near_miss_strings_never_raise(screen: Observation, text: str) -> None:
    action = parse_action(text, screen)
    assert action is not None
    if isinstance(action, Invalid):
        assert "parser error" not in action.reason, action.reason


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300), size=st.none() | st.tuples(st.integers(-5, 2000), st.integers(-5, 2000)))
def test_fuzz_random_strings_never_raise(screen: Observation, text: str, size: tuple[int, int] | None) -> None:
    action = parse_action(text, screen, image_size=size)
    assert action is not None
    if isinstance(action, Invalid):
        assert "parser error" not in action.reason, action.reason


@pytest.mark.parametrize("junk", [
    "tap(" * 5000, "(" + "1" * 5000 + "x)", "tap \"" + "a" * 19000, " " * 19000 + "x", "{" * 5000,
    "click(start_box='(" + "1 " * 3000 + "x')", "\n".join(["tap"] * 4000),
])
def test_pathological_input_is_fast(screen: Observation, junk: str) -> None:
    # A hang guard against catastrophic backtracking, not a speed target (those live in
    # benchmarks/): linear parsing takes milliseconds, exponential parsing would not end.
    start = time.perf_counter()
    assert isinstance(parse_action(junk, screen), (Invalid, Tap, Back))
    assert time.perf_counter() - start < 30.0


# --------------------------------------------------------------------------- lone surrogates

_SURROGATE_RE = __import__("re").compile("[\ud800-\udfff]")


def _strings_of(action) -> list[str]:
    from dataclasses import fields as dc_fields
    return [v for f in dc_fields(action) if isinstance(v := getattr(action, f.name), str)]


def _no_lone_surrogates(action) -> None:
    for s in _strings_of(action):
        assert not _SURROGATE_RE.search(s), (action, s)
        s.encode("utf-8")  # a lone surrogate would raise UnicodeEncodeError here


@pytest.mark.parametrize("text, kind, field", [
    ('{"action_type": "answer", "text": "\\ud83d"}', Done, "answer"),               # JSON escape
    ('{"action_type": "input_text", "text": "a\\udc00b"}', Type, "text"),          # JSON, low half
    ("{'action_type': 'answer', 'text': '\\ud83d'}", Done, "answer"),             # literal_eval fallback
    ('type("\ud83d")', Type, "text"),                                              # call form, raw char
    ('type("\\ud83d")', Type, "text"),                                             # call form, escape
    ('type "\ud83d"', Type, "text"),                                               # quoted text form
    ('done "x\udfff"', Done, "answer"),
    ("finished(content='\ud83d')", Done, "answer"),                               # UI-TARS
    ('open_app("\ud83d")', OpenApp, "app_name"),
    ('infeasible("\ud800")', Infeasible, "reason"),
])
def test_lone_surrogates_become_replacement_char(screen: Observation, text: str, kind: type, field: str) -> None:
    action = parse_action(text, screen)
    assert isinstance(action, kind), action
    _no_lone_surrogates(action)
    assert "\ufffd" in getattr(action, field)


def test_surrogate_pair_escapes_still_decode_to_the_character(screen: Observation) -> None:
    action = parse_action('{"action_type": "answer", "text": "\\ud83d\\ude00"}', screen)
    assert action == Done("\U0001F600")


def test_invalid_output_keeps_no_lone_surrogate(screen: Observation) -> None:
    action = parse_action("gibberish \ud83d", screen)
    assert isinstance(action, Invalid)
    _no_lone_surrogates(action)


def test_literal_eval_fallback_prints_no_warnings(screen: Observation, capfd: pytest.CaptureFixture[str]) -> None:
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action = parse_action("{'action_type': 'answer', 'text': '\\d\\q'}", screen)
    assert isinstance(action, Done)
    assert not caught, [str(w.message) for w in caught]
    assert "Warning" not in capfd.readouterr().err


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    template=st.sampled_from([
        '{{"action_type": "answer", "text": "{}"}}', "{{'action_type': 'input_text', 'text': '{}'}}",
        'type("{}")', 'type "{}"', 'done("{}")', "finished(content='{}')", 'open_app "{}"', "{}",
    ]),
    body=st.lists(st.sampled_from(["a", "\\ud83d", "\\ude00", "\ud83d", "\ude00", "\\n", "\U0001F600", " "]),
                  max_size=6).map("".join),
)
def test_fuzz_no_action_holds_a_lone_surrogate(screen: Observation, template: str, body: str) -> None:
    _no_lone_surrogates(parse_action(template.format(body), screen))
