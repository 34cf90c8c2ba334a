"""Reference policies: the oracle (scripted solutions, needs the task templates) and random."""

from __future__ import annotations

import random
from typing import Mapping

from coadapt.android_env.actions import (
    Action, Back, Done, Enter, Infeasible, LongPress, Scroll, Swipe, Tap, Type, Wait,
)
from coadapt.android_env.errors import TaskError
from coadapt.android_env.observation import Observation
from coadapt.rollout.cards import TaskCard
from coadapt.tasks.base import OracleCtx, TaskTemplate

from .base import Decision


class _OracleAgent:
    def __init__(self, task: TaskTemplate):
        self.task = task
        self.ctx: OracleCtx | None = None
        self.gen = None

    def act(self, obs: Observation) -> Decision:
        if self.ctx is None:
            self.ctx = OracleCtx(obs)
            self.gen = self.task.solve(self.ctx)
        else:
            self.ctx.obs = obs
        assert self.gen is not None
        try:
            return Decision(next(self.gen))
        except StopIteration:
            return Decision(Done())


class OraclePolicy:
    """Plays each task's scripted solution. It is handed the task instances when it is built
    (evaluation and demonstrations only), outside the Policy protocol: a card alone tells it
    nothing, so it cannot be used where only cards exist."""

    name = "oracle"

    def __init__(self, templates: Mapping[str, TaskTemplate]):
        self.templates = dict(templates)

    def start(self, card: TaskCard, seed: int = 0) -> _OracleAgent:
        task = self.templates.get(card.key)
        if task is None:
            raise TaskError(f"the oracle was not given the task instance {card.key!r} (it only solves the "
                            "instances it was built with)")
        return _OracleAgent(task)


_WORDS = ("milk", "hello", "test", "42", "note", "today", "Sam", "blue")


class _RandomAgent:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def act(self, obs: Observation) -> Decision:
        return Decision(self.rng.choice(random_actions(obs, self.rng)))


def random_actions(obs: Observation, rng: random.Random) -> list[Action]:
    """Every action the random policy may take on `obs` (typed words drawn from `rng`)."""
    options: list[Action] = [Back(), Enter(), Wait(), Done(), Infeasible()]
    options += [Scroll(d) for d in ("up", "down")]  # type: ignore[arg-type]
    for i, e in enumerate(obs.elements):
        if not e.enabled:
            continue
        if e.clickable or e.checkable:
            options.append(Tap(index=i))
        if e.long_clickable:
            options.append(LongPress(index=i))
        if e.editable:
            options.append(Type(rng.choice(_WORDS), index=i))
        if e.clickable and e.bounds.width > obs.size[0] // 2:
            options.append(Swipe("left", index=i))
    return options


class RandomPolicy:
    """Uniform over the valid actions of each screen (taps, long presses, typing, scrolls,
    swipes, keys, done, infeasible): the reference floor. Each episode draws from its own
    generator seeded by the episode seed."""

    name = "random"

    def start(self, card: TaskCard, seed: int) -> _RandomAgent:
        return _RandomAgent(random.Random(seed))
