"""The bundled tiny VLM: it ships, stays small, loads by the default path, acts, and its recipe is on file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from coadapt.android_env.actions import Invalid  # noqa: E402
from coadapt.android_env.env import AndroidEnv  # noqa: E402
from coadapt.android_env.sim import SimDevice  # noqa: E402
from coadapt.apps import label_map, make_apps  # noqa: E402
from coadapt.policy.agent import BUNDLED_MODEL, load_policy  # noqa: E402
from coadapt.pretrain import METRICS_FILE, PretrainConfig  # noqa: E402
from coadapt.rollout import TaskCard, run_episode  # noqa: E402
from coadapt.tasks.registry import get_template  # noqa: E402
from coadapt.tasks.suite import instance_seed  # noqa: E402

RECIPE = Path(__file__).resolve().parents[1] / "configs" / "tiny_vlm.yaml"


def test_the_bundled_model_is_a_small_hugging_face_folder() -> None:
    files = {p.name: p.stat().st_size for p in BUNDLED_MODEL.iterdir()}
    for name in ("config.json", "model.safetensors", "tokenizer.json", "processor_config.json",
                 "coadapt_policy.json", METRICS_FILE):
        assert name in files, f"{name} missing from {BUNDLED_MODEL}"
    assert sum(files.values()) <= 20 * 2**20, files


def test_the_committed_recipe_is_what_made_the_bundled_model() -> None:
    import yaml

    metrics = json.loads((BUNDLED_MODEL / METRICS_FILE).read_text())
    recipe = PretrainConfig.from_dict(yaml.safe_load(RECIPE.read_text()))
    assert metrics["config"] == json.loads(json.dumps(recipe.identity()))
    assert metrics["data"]["train_decisions"] > 10000 and metrics["best"]["success_rate"] > 0


def test_the_default_policy_loads_and_plays_a_seen_task() -> None:
    policy = load_policy("default")
    assert policy.policy.config.constrain_names and policy.policy.config.constrain_text
    seed = instance_seed("eval", 7, "ContactsCallContact", 0)
    task = get_template("ContactsCallContact").from_seed(seed)
    env = AndroidEnv(SimDevice(make_apps([task.app])), app_names=label_map())
    card = TaskCard.from_template(task, "ContactsCallContact#0")
    traj = run_episode(env, policy.start(card, 0), card)
    assert traj.steps and not any(isinstance(s.action, Invalid) for s in traj.steps[:2])


def test_step_grounding_tells_the_apps_the_model_was_trained_on_from_the_others() -> None:
    """Teacher-forced along the oracle's paths: the bundled model writes the oracle's action on
    nearly every step of a seen app and on few steps of an unseen one (the gap adaptation faces)."""
    from coadapt.adaptation import instances
    from coadapt.grounding import step_grounding

    agents = load_policy("default")
    seen = step_grounding(agents, SimDevice(make_apps()), instances("com.example.notes", "eval", 0, 1))
    unseen = step_grounding(agents, SimDevice(make_apps()), instances("com.example.shopping", "eval", 0, 1))
    for g in (seen, unseen):
        assert g["steps"] == sum(total for _, total in g["by_kind"].values()) > 20
    assert seen["accuracy"] >= 0.8 and unseen["accuracy"] <= 0.3, (seen, unseen)
