"""Prompt building and policy configs (no model needed)."""

from __future__ import annotations

import json

import pytest

from coadapt.android_env.actions import OpenApp, Tap
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import ConfigError
from coadapt.android_env.observation import Observation
from coadapt.android_env.sim.device import SimDevice
from coadapt.apps import label_map, make_apps
from coadapt.policy.prompt import PolicyInput, PromptConfig, chat_messages, make_inputs, prompt_text


class _Task:
    goal, max_steps = "add a note titled milk", 10

    def setup(self, device) -> None:
        pass


@pytest.fixture(scope="module")
def editor() -> Observation:
    env = AndroidEnv(SimDevice(make_apps(["com.example.notes"])), label_map())
    env.reset(_Task())
    obs = env.step(OpenApp("Notes")).observation
    fab = next(i for i, e in enumerate(obs.elements) if e.content_desc == "New note")
    return env.step(Tap(index=fab)).observation


def test_goal_is_the_last_text(editor: Observation) -> None:
    inp = PolicyInput(editor, "add a note titled milk", ('open_app "Notes"', 'tap "New note"'))
    for style in ("text", "call", "json", "uitars"):
        text = prompt_text(inp, PromptConfig(style=style))  # type: ignore[arg-type]
        assert text.splitlines()[-1] == "Goal: add a note titled milk"


def test_elements_are_listed_with_json_quotes(editor: Observation) -> None:
    text = prompt_text(PolicyInput(editor, "g"), PromptConfig(instruction=""))
    assert '[2] EditText hint "Title" (focused)' in text
    assert any(line.endswith('"Save"') for line in text.splitlines())
    assert "Previous actions: none" in text


def test_prompt_options(editor: Observation) -> None:
    history = tuple(f'tap "{i}"' for i in range(10)) + ("junk\nGoal: fake " + "x" * 500,)
    text = prompt_text(PolicyInput(editor, "g", history),
                       PromptConfig(show_elements=False, history_steps=2, instruction="Be brief."))
    lines = text.splitlines()
    assert "Elements:" not in text
    assert lines[0].startswith('Previous actions: tap "9"; junk Goal: fake xxx')
    assert len(lines[0]) < 200  # long history entries are cut, and cannot add lines
    assert lines[1:] == ["Be brief.", "Goal: g"]


def test_chat_messages_put_the_image_first(editor: Observation) -> None:
    msgs = chat_messages(PolicyInput(editor, "g"), PromptConfig())
    assert [c["type"] for c in msgs[0]["content"]] == ["image", "text"]


def test_make_inputs_checks_lengths(editor: Observation) -> None:
    inputs = make_inputs([editor], ["g"], [[Tap(index=1), "back"]])
    assert inputs[0].history == ("tap(1)", "back")
    with pytest.raises(ConfigError):
        make_inputs([editor, editor], ["g"])


def test_configs_validate_and_round_trip() -> None:
    pytest.importorskip("torch")  # model.py imports torch
    from coadapt.policy.model import LoraSettings, PolicyConfig

    cfg = PolicyConfig(prompt=PromptConfig(style="call", history_steps=2), temperature=0.7)
    assert PolicyConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ConfigError, match="style"):
        PromptConfig(style="xml")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        PolicyConfig(temperature=-1)
    with pytest.raises(ConfigError):
        PolicyConfig(coordinates="inches")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        LoraSettings(r=0)
    with pytest.raises(ConfigError):
        PolicyConfig.from_dict({"prompt": {"colour": "red"}})
