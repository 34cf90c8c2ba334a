"""The rollout runner: per-attempt sampling, the ground-truth firewall, resume by (phase, round, key, attempt)."""

from __future__ import annotations

from unittest import mock

import pytest

torch = pytest.importorskip("torch")

from coadapt.android_env.errors import ConfigError  # noqa: E402
from coadapt.android_env.sim import SimDevice  # noqa: E402
from coadapt.apps import make_apps  # noqa: E402
from coadapt.config import ModelSettings  # noqa: E402
from coadapt.evaluation import suite_tasks  # noqa: E402
from coadapt.policy.baselines import RandomPolicy  # noqa: E402
from coadapt.rollout.runner import fresh_pixels  # noqa: E402
from coadapt.rollout import (  # noqa: E402
    GroundTruthError, GuardedDevice, RolloutRunner, RolloutSettings, episode_seed, load_trajectory,
)
from coadapt.runs import RunStore  # noqa: E402
from coadapt.tasks.base import TaskTemplate  # noqa: E402
from coadapt.tasks.suite import Suite  # noqa: E402
from coadapt.wiring import build_policy  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")

UNSEEN = Suite.from_dict({"name": "u", "seed": 3, "group": "unseen"})


@pytest.fixture(scope="module")
def sampled(one_thread):
    return build_policy(ModelSettings(), temperature=1.0)


def _cards(n: int, suite: Suite = UNSEEN):
    cards, templates = suite_tasks(suite)
    step = max(1, len(cards) // n)
    return cards[::step][:n], templates


def _signature(traj) -> tuple:
    return tuple(s.raw_output or repr(s.action) for s in traj.steps)


def test_card_carries_no_checker():
    cards, templates = _cards(3)
    card = cards[0]
    assert not hasattr(card, "is_successful") and not hasattr(card, "solve")
    assert card.goal == templates[card.key].goal and card.seed == templates[card.key].seed
    with pytest.raises(ConfigError):
        card.replace(max_steps=0)
    assert card.replace(max_steps=3).max_steps == 3
    assert episode_seed(0, card.key, 0, 0) != episode_seed(0, card.key, 1, 0) != episode_seed(0, card.key, 0, 1)


def test_k_sampled_attempts_differ_and_reproduce(tmp_path, sampled):
    cards, _ = _cards(8)
    cards = [c.replace(max_steps=6) for c in cards]
    runs = []
    for name in ("a", "b"):
        store = RunStore(tmp_path / name, screens="none")
        res = RolloutRunner([SimDevice(make_apps())], sampled, store).run(cards, k=4, round=0, phase="adapt")
        runs.append(res.trajectories)
        store.close()
    first, second = runs
    distinct = [len({_signature(first[(c.key, a)]) for a in range(4)}) for c in cards]
    assert sum(d >= 2 for d in distinct) > len(cards) / 2, distinct
    assert all(_signature(first[key]) == _signature(second[key]) for key in first)
    # behaviour log-probs and tokens are recorded per step
    traj = next(iter(first.values()))
    assert all(len(s.decision.token_ids) == len(s.decision.logprobs) > 0 for s in traj.steps)


def test_random_policy_attempts_differ(tmp_path):
    cards, _ = _cards(6, Suite.from_dict({"name": "s", "tasks": ["NotesAddNote", "ExpensesLogExpense"],
                                          "instances_per_task": 3}))
    store = RunStore(tmp_path / "r", screens="none")
    res = RolloutRunner([SimDevice(make_apps())], RandomPolicy(), store).run(cards, k=3, phase="x")
    same = sum(len({_signature(res.trajectories[(c.key, a)]) for a in range(3)}) == 1 for c in cards)
    assert same == 0


def _raise(*a, **k):
    raise AssertionError("ground truth touched during a learning rollout")


def test_firewall_learning_rollout_never_touches_ground_truth(tmp_path, sampled):
    cards, _ = _cards(4)
    store = RunStore(tmp_path / "fw")
    settings = RolloutSettings(guard=True)
    with mock.patch.object(TaskTemplate, "is_successful", _raise), mock.patch.object(TaskTemplate, "evaluate", _raise), \
            mock.patch.object(TaskTemplate, "solve", _raise), mock.patch.object(SimDevice, "read_app_state", _raise):
        res = RolloutRunner([SimDevice(make_apps())], sampled, store, settings=settings).run(
            [c.replace(max_steps=4) for c in cards], k=2, round=0, phase="adapt")
    assert len(res.trajectories) == 8 and all(t.score is None for t in res.trajectories.values())
    guarded = GuardedDevice(SimDevice(make_apps()))
    with pytest.raises(GroundTruthError):
        guarded.read_app_state("com.example.notes")
    assert guarded.current_package()  # everything else passes through


class _Kill(Exception):
    pass


def test_killed_round_two_resumes_without_redoing(tmp_path, sampled):
    cards, _ = _cards(3)
    cards = [c.replace(max_steps=3) for c in cards]
    folder = tmp_path / "kill"
    store = RunStore(folder)
    runner = RolloutRunner([SimDevice(make_apps())], sampled, store)
    runner.run(cards, k=2, round=0, phase="adapt")
    played = []

    def die_after_two(event, data):
        if event == "episode":
            played.append(data["key"])
            if len(played) == 2:
                raise _Kill()

    with pytest.raises(_Kill):
        runner.run(cards, k=2, round=1, phase="adapt", progress=die_after_two)
    store.close()
    store = RunStore(folder)
    before = {(r.key, r.attempt): r.id for r in store.episodes(phase="adapt", round=1) if r.status == "finished"}
    assert 1 <= len(before) <= 2
    res = RolloutRunner([SimDevice(make_apps())], sampled, store).run(cards, k=2, round=1, phase="adapt")
    assert set(res.trajectories).isdisjoint(before)  # nothing finished was played again
    assert len(res.episode_ids) == 6 and all(res.episode_ids[k] == v for k, v in before.items())
    assert len(store.finished_keys("adapt", 0)) == 6
    rows = store.episodes(phase="adapt")
    assert len(rows) == 12 and all(r.status == "finished" for r in rows)
    # a stored episode rebuilds with its observations, tokens and behaviour log-probs
    key, eid = next(iter(before.items()))
    card = next(c for c in cards if c.key == key[0])
    traj = load_trajectory(store, eid, card)
    assert len(traj.steps) == store.episode(eid).steps
    assert traj.steps[0].obs.elements and traj.steps[0].decision.logprobs
    # ... holding its screenshots compressed until a trainer asks for pixels
    assert all("coadapt_png" in s.obs.screenshot.info for s in traj.steps)
    assert fresh_pixels(traj.steps[0].obs).screenshot.size == store.load_observation(eid, 0).screenshot.size


def test_a_reloaded_attempt_ends_on_the_screen_it_ended_on(tmp_path):
    """An attempt cut by the step limit ends on the screen its last action led to; a step row holds
    only the screen before. Rebuilt after a resume, the attempt must end on that same final screen,
    or the verifier scores it differently from the played one (it did: a resumed adapt run judged
    13 of 56 step-limit attempts otherwise and kept an update the unkilled run rolled back)."""
    from coadapt.adapt.verifier import observation_checks
    from coadapt.policy.baselines import OraclePolicy

    suite = Suite.from_dict({"name": "s", "seed": 1, "tasks": ["NotesAddNote", "ContactsAddContact"]})
    cards, templates = suite_tasks(suite)
    cards = [c.replace(max_steps=2) for c in cards]  # the oracle's second action changes the screen
    store = RunStore(tmp_path / "run")
    res = RolloutRunner([SimDevice(make_apps())], OraclePolicy(templates), store).run(cards, k=1, phase="adapt", round=0)
    for card in cards:
        played = res.trajectories[(card.key, 0)]
        assert played.declared is None and len(played.steps) == 2  # cut by the step limit
        assert played.final_obs.describe_elements() != played.steps[-1].obs.describe_elements()
        loaded = load_trajectory(store, res.episode_ids[(card.key, 0)], card)
        assert loaded.final_obs.describe_elements() == played.final_obs.describe_elements()
        assert loaded.final_obs.screenshot.tobytes() == played.final_obs.screenshot.tobytes()
        assert observation_checks(loaded).vector() == observation_checks(played).vector()
    store.close()
