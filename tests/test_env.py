"""The episode env: resets, steps, index resolution on the observation seen, limits, faults."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coadapt.android_env import actions as A
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import DeviceError, EnvError
from coadapt.android_env.sim import SimDevice
from coadapt.apps import label_map, make_apps

NOTES = "com.example.notes"


@dataclass
class OpenNotes:
    goal: str = "Add a note"
    max_steps: int = 8
    notes: tuple[str, ...] = ()

    def setup(self, device) -> None:
        if self.notes:
            device.write_app_state(NOTES, {"notes": [{"id": i + 1, "title": t} for i, t in enumerate(self.notes)]})
        device.launch(NOTES)


def index_of(obs, **kw) -> int:
    for i, e in enumerate(obs.elements):
        if all(getattr(e, k) == v for k, v in kw.items()):
            return i
    raise AssertionError(f"no indexed element {kw}: {obs.describe_elements()}")


@pytest.fixture
def env():
    return AndroidEnv(SimDevice(make_apps()), app_names=label_map())


def test_reset_sets_up_the_task(env):
    obs = env.reset(OpenNotes(notes=("Milk",)))
    assert obs.step == 0 and obs.package == NOTES
    assert any(e.text == "Milk" for e in obs.elements)
    assert obs.size == (720, 1600)


def test_add_a_note_through_actions(env):
    obs = env.reset(OpenNotes())
    r = env.step(A.Tap(index=index_of(obs, content_desc="New note")))
    assert r.info.element is not None and r.info.element.content_desc == "New note"
    assert not r.terminated and not r.truncated and r.observation.step == 1
    r = env.step(A.Type("Eggs"))
    r = env.step(A.Type("a dozen", index=index_of(r.observation, resource_id="com.example.notes:id/body")))
    r = env.step(A.Tap(index=index_of(r.observation, text="Save")))
    assert env.device.read_app_state(NOTES)["notes"][0] == {"id": 1, "title": "Eggs", "body": "a dozen", "label": "Personal", "pinned": False}
    r = env.step(A.Done())
    assert r.terminated and env.declared == "done"
    with pytest.raises(EnvError):
        env.step(A.Back())


def test_index_refers_to_the_observation_seen(env):
    obs = env.reset(OpenNotes(notes=("Alpha", "Beta")))
    beta = index_of(obs, text="Beta")
    # The screen changes behind the agent's back (a new note arrives and shifts the list).
    env.device.write_app_state(NOTES, {"notes": [{"id": 1, "title": "Alpha"}, {"id": 2, "title": "Beta"}, {"id": 3, "title": "Gamma"}]})
    r = env.step(A.Tap(index=beta))
    assert r.info.element is not None and r.info.element.text == "Beta"
    # The tap went to Beta's old position, which now shows another note: we opened what was there.
    title = [e for e in r.observation.tree if e.resource_id == "com.example.notes:id/title"][0].text
    assert title == "Gamma"


def test_type_with_clear_replaces_text(env):
    obs = env.reset(OpenNotes(notes=("Old title",)))
    r = env.step(A.Tap(index=index_of(obs, text="Old title")))
    title = index_of(r.observation, resource_id="com.example.notes:id/title")
    r = env.step(A.Type("New title", index=title, clear=True))
    env.step(A.Back())
    env.step(A.Back())
    assert [n["title"] for n in env.device.read_app_state(NOTES)["notes"]] == ["New title"]


def test_invalid_and_bad_index_cost_a_step(env):
    env.reset(OpenNotes(max_steps=3))
    r = env.step(A.Invalid("gibberish"))
    assert r.info.invalid and r.info.error == "unparseable" and r.observation.step == 1
    r = env.step(A.Tap(index=999))
    assert r.info.invalid and "no element 999" in r.info.error
    r = env.step(A.OpenApp("Nonexistent"))
    assert r.info.invalid and "no app named" in r.info.error
    assert r.truncated and not r.terminated


def test_opening_a_package_the_device_lacks_is_an_invalid_step(env):
    env.reset(OpenNotes(max_steps=3))
    r = env.step(A.OpenApp("com.example.nowhere"))
    assert r.info.invalid and not r.info.infra_error and "not installed" in r.info.error
    assert not (r.terminated or r.truncated), "the episode goes on"


def test_open_app_by_label_and_package(env):
    env.reset(OpenNotes())
    env.step(A.Home())
    assert env.device.current_package() != NOTES
    r = env.step(A.OpenApp("notes"))
    assert r.observation.package == NOTES and not r.info.invalid
    env.step(A.Home())
    r = env.step(A.OpenApp(NOTES))
    assert r.observation.package == NOTES


def test_scroll_reveals_more(env):
    obs = env.reset(OpenNotes(notes=tuple(f"Note {i:02d}" for i in range(30)), max_steps=20))
    before = {e.text for e in obs.elements}
    r = env.step(A.Scroll("down"))
    after = {e.text for e in r.observation.elements}
    assert after - before
    r = env.step(A.Scroll("up"))
    assert {e.text for e in r.observation.elements} == before


def test_step_limit_truncates(env):
    env.reset(OpenNotes(max_steps=2))
    assert not env.step(A.Wait()).truncated
    r = env.step(A.Wait())
    assert r.truncated and not r.terminated


def test_infeasible_terminates(env):
    env.reset(OpenNotes())
    r = env.step(A.Infeasible())
    assert r.terminated and env.declared == "infeasible"


def test_answer_is_kept(env):
    env.reset(OpenNotes())
    env.step(A.Done("3 notes"))
    assert env.answer == "3 notes"


def test_step_before_reset(env):
    with pytest.raises(EnvError, match="reset"):
        env.step(A.Back())


def test_device_fault_truncates_as_infra_error(env):
    env.reset(OpenNotes())

    def boom(*a, **k):
        raise DeviceError("device vanished", command="input tap", serial="sim-0")

    env.device.tap = boom  # type: ignore[method-assign]
    r = env.step(A.Tap(x=10, y=10))
    assert r.truncated and r.info.infra_error and "vanished" in r.info.error
    with pytest.raises(EnvError):
        env.step(A.Back())


def test_settle_uses_the_injected_sleep():
    slept = []
    env = AndroidEnv(SimDevice(make_apps()), settle_seconds=0.5, sleep=slept.append)
    env.reset(OpenNotes())
    env.step(A.Back())
    assert slept == [0.5]


# --------------------------------------------------------------------------- whatever a model writes

_words = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != "")
_names = _words | st.sampled_from(["notes", "Settings", "com.example.notes", "com.example.nowhere", "a.b", "."])
_index = st.integers(0, 60)
_point = st.tuples(st.integers(0, 800), st.integers(0, 1700))  # past the 720x1600 screen too
_dirs = st.sampled_from(["up", "down", "left", "right"])
_any_action = st.one_of(
    st.builds(A.Tap, index=_index), _point.map(lambda p: A.Tap(x=p[0], y=p[1])),
    st.builds(A.LongPress, index=_index), st.builds(A.Scroll, _dirs, index=st.none() | _index),
    st.builds(A.Swipe, _dirs, index=st.none() | _index), st.builds(A.Type, _words, index=st.none() | _index,
                                                                    clear=st.booleans()),
    st.builds(A.OpenApp, _names), st.builds(A.Wait, st.floats(0.001, 60)), st.just(A.Back()), st.just(A.Home()),
    st.just(A.Enter()), st.builds(A.Invalid, st.text(max_size=30)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_any_action, min_size=1, max_size=12))
def test_no_action_a_model_can_write_ends_an_episode_by_raising(env, steps):
    """An agent's mistakes are invalid steps; only a device fault (infra_error) is not the agent's."""
    env.reset(OpenNotes(max_steps=len(steps)))
    for i, action in enumerate(steps):
        r = env.step(action)
        assert not r.info.infra_error, r.info.error
        assert r.truncated == (i == len(steps) - 1) and not r.terminated
