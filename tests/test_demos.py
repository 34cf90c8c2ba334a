"""Demonstrations: seen apps only, pretrain seeds only, and well-formed perturbation samples."""

from __future__ import annotations

import pytest

from coadapt.android_env.errors import ConfigError
from coadapt.apps import SEEN_APPS, UNSEEN_APPS
from coadapt.demos import (
    DEMO_SPACE, DemoConfig, DemoRecorder, DemoStats, check_samples, corpus_texts, demo_instances, demo_seed,
    iter_demos, popup_response, seen_packages, seen_templates,
)
from coadapt.tasks.registry import templates_for_group
from coadapt.tasks.suite import Suite, instance_seed, seed_space

NOTES, SETTINGS = "com.example.notes", "com.example.settings"
SYSTEM = {"com.android.launcher3", "com.google.android.permissioncontroller", "com.android.systemui"}


@pytest.fixture(scope="module")
def perturbed() -> tuple[list, DemoStats]:
    """Two seen apps, every episode with popups and a detour: enough of each kind of sample."""
    stats = DemoStats()
    cfg = DemoConfig(episodes_per_task=3, apps=(NOTES, SETTINGS), popup_share=1.0, popup_rate=0.3, detour_share=1.0)
    return list(iter_demos(cfg, stats)), stats


# --------------------------------------------------------------------------- seen apps only


@pytest.mark.parametrize("app", sorted(UNSEEN_APPS) + ["Expenses"])
def test_unseen_apps_are_refused(app: str) -> None:
    with pytest.raises(ConfigError, match="unseen|seen apps only"):
        DemoConfig(apps=(app,))
    with pytest.raises(ConfigError):
        seen_packages([app])


def test_unknown_app_is_refused_naming_the_seen_ones() -> None:
    with pytest.raises(ConfigError, match="com.example.notes"):
        seen_packages(["com.example.nope"])


def test_templates_and_instances_are_seen_only() -> None:
    templates = seen_templates()
    assert templates and {t.app for t in templates} <= set(SEEN_APPS)
    assert {t.name for t in templates} == {t.name for t in templates_for_group("seen")}
    for task in demo_instances(0, 2):
        assert task.app in SEEN_APPS
        assert seed_space(task.seed) == DEMO_SPACE


def test_recorder_refuses_unseen_tasks_and_foreign_seeds() -> None:
    recorder = DemoRecorder(DemoConfig(apps=(NOTES,)))
    unseen = next(t for t in templates_for_group("unseen"))
    with pytest.raises(ConfigError, match="unseen"):
        recorder.record(unseen.from_seed(demo_seed(0, unseen.name, 0)))
    seen = next(t for t in templates_for_group("seen") if t.app == NOTES)
    for space in ("eval", "adapt"):
        with pytest.raises(ConfigError, match=space):
            recorder.record(seen.from_seed(instance_seed(space, 0, seen.name, 0)))


def test_demo_seeds_never_meet_eval_or_adapt_seeds() -> None:
    train = {t.seed for t in demo_instances(0, 40)}
    val = {t.seed for t in demo_instances(0, 3, split="val")}
    assert not train & val
    for name in ("seen", "unseen", "all", "smoke"):
        suite = Suite.load(name)
        for space in ("eval", "adapt"):
            assert not {s.seed for s in suite.instances(space)} & (train | val)
    with pytest.raises(ConfigError, match="split"):
        demo_seed(0, "NotesAddNote", 0, split="eval")


# --------------------------------------------------------------------------- samples


def test_samples_parse_back_and_touch_only_seen_apps(perturbed) -> None:
    samples, _ = perturbed
    check_samples(samples)
    for s in samples:
        assert s.app in (NOTES, SETTINGS)
        assert s.observation.package in SEEN_APPS or s.observation.package in SYSTEM
        assert not {e.package for e in s.observation.tree.elements} & set(UNSEEN_APPS)


def test_popup_samples_dismiss_a_popup_on_screen(perturbed) -> None:
    samples, stats = perturbed
    popups = [s for s in samples if s.source == "popup"]
    assert popups and stats.popups == len(popups)
    for s in popups:
        assert s.target in ('tap "Don\'t allow"', 'tap "Not now"', "wait")
        assert popup_response(s.observation) is not None
    # every other sample is on a screen without a popup: the oracle acts only on clean screens
    assert all(popup_response(s.observation) is None for s in samples if s.source != "popup")


def test_recovery_samples_go_back_after_a_wrong_tap(perturbed) -> None:
    samples, stats = perturbed
    recoveries = [s for s in samples if s.source == "recovery"]
    assert recoveries and stats.detours == len(recoveries)
    for s in recoveries:
        assert s.target == "back"
        assert s.history and (s.history[-1].startswith("tap ") or s.history[-1] == "back")
    # the wrong tap itself is never a target, and episodes go on after a detour
    by_episode: dict[int, list] = {}
    for s in samples:
        by_episode.setdefault(s.seed, []).append(s)
    resumed = 0
    for episode in by_episode.values():
        k = max((i for i, s in enumerate(episode) if s.source == "recovery"), default=None)
        if k is not None and k + 1 < len(episode):
            resumed += 1
            assert episode[k + 1].history[-1] == "back"
    assert resumed


def test_histories_are_the_episode_so_far(perturbed) -> None:
    samples, _ = perturbed
    prev = None
    for s in samples:
        if prev is not None and prev.seed == s.seed:
            assert s.history[: len(prev.history) + 1] == (*prev.history, prev.target)
        else:  # an episode starts from nothing, or from a wrong first tap to recover from
            assert s.history == () or (s.source == "recovery" and len(s.history) == 1)
        prev = s


def test_demos_are_deterministic() -> None:
    cfg = DemoConfig(episodes_per_task=2, apps=(NOTES,), popup_share=0.5, detour_share=0.5)
    a = [(s.seed, s.history, s.target) for s in iter_demos(cfg)]
    b = [(s.seed, s.history, s.target) for s in iter_demos(cfg)]
    assert a == b and a


def test_corpus_comes_from_seen_apps_only() -> None:
    texts = list(corpus_texts(DemoConfig(episodes_per_task=2, apps=(NOTES,)), episodes_per_task=1))
    joined = "\n".join(texts)
    assert "Elements:" in joined and "New note" in joined
    for cls in UNSEEN_APPS.values():
        assert cls.package not in joined
    for word in ("Expenses", "Recipes", "To-do", "Log expense"):
        assert word not in joined


@pytest.mark.parametrize("bad", [{"episodes_per_task": 0}, {"popup_share": 1.5}, {"detour_share": -0.1},
                                 {"seed": -1}])
def test_bad_demo_config_names_the_field(bad: dict) -> None:
    with pytest.raises(ConfigError, match=next(iter(bad))):
        DemoConfig(**bad)
