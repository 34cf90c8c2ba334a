"""Task templates: every oracle solves its task, nothing is solved by doing nothing."""

from __future__ import annotations

import pytest

from coadapt.android_env.actions import Done, Infeasible
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.sim import SimDevice
from coadapt.apps import ALL_APPS, label_map, make_apps
from coadapt.tasks.base import KINDS, TaskTemplate, answer_matches
from coadapt.tasks.oracle import run_oracle
from coadapt.tasks.registry import TEMPLATES
from coadapt.tasks.suite import instance_seed

SEEDS = [instance_seed("eval", 0, "oracle-test", i) for i in range(5)]
NAMES = sorted(TEMPLATES)


@pytest.fixture(scope="module")
def env():
    return AndroidEnv(SimDevice(make_apps()), app_names=label_map())


@pytest.mark.parametrize("name", NAMES)
def test_template_is_well_formed(name):
    t = TEMPLATES[name]
    assert issubclass(t, TaskTemplate)
    assert t.app in ALL_APPS, f"{name}: unknown app {t.app}"
    assert t.kind in KINDS
    assert 1 <= t.complexity <= 5 and 1 <= t.max_steps <= 60
    inst = t.from_seed(SEEDS[0])
    assert set(inst.values) == set(t.params)
    assert "{" not in inst.goal and inst.goal.strip()
    again = t.from_seed(SEEDS[0])
    assert again.values == inst.values and again.states() == inst.states()


@pytest.mark.parametrize("name", NAMES)
def test_oracle_solves_every_seed(env, name):
    for seed in SEEDS:
        task = TEMPLATES[name].from_seed(seed)
        ep = run_oracle(env, task)
        assert ep.score == 1.0, f"{task!r}: oracle scored {ep.score} after {len(ep.steps)} steps (declared {ep.declared}, answer {ep.answer!r})"
        assert len(ep.steps) <= task.max_steps


@pytest.mark.parametrize("name", NAMES)
def test_nothing_done_is_no_success(env, name):
    for seed in SEEDS[:3]:
        task = TEMPLATES[name].from_seed(seed)
        env.reset(task)
        first = Infeasible() if task.kind != "infeasible" else Done()
        env.step(first)
        assert task.evaluate(env.device, env.declared, env.answer) == 0.0
        env.reset(task)
        env.step(Done("0"))
        if task.kind != "infeasible":
            assert task.evaluate(env.device, env.declared, env.answer) == 0.0, f"{task!r} succeeds when done at step 0"
        # Not declaring anything is never a success.
        assert task.evaluate(env.device, None, None) == 0.0


def test_answer_matching():
    assert answer_matches("3", 3) and answer_matches("There are 3 notes.", 3)
    assert not answer_matches("3 or 4", 3) and not answer_matches(None, 3)
    assert answer_matches(" Paris. ", "paris") and not answer_matches("Lyon", "Paris")


def test_seed_spaces_are_disjoint():
    from coadapt.tasks.suite import seed_space

    spaces = ["eval", "adapt", "pretrain", "explore"]
    seeds = {s: {instance_seed(s, 0, "T", i) for i in range(200)} for s in spaces}
    for a in spaces:
        assert all(seed_space(x) == a for x in seeds[a])
        for b in spaces:
            if a != b:
                assert not seeds[a] & seeds[b]


def test_an_app_is_named_by_package_last_segment_or_label():
    from coadapt.apps import AppError, app_class

    for package in ALL_APPS:
        short = package.rsplit(".", 1)[-1]
        assert app_class(short).package == package == app_class(short.upper()).package
        assert app_class(ALL_APPS[package].label).package == package
    with pytest.raises(AppError, match="unknown app 'example'"):
        app_class("example")
