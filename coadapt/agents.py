"""Policies and per-episode agents: the oracle, the random baseline, and the protocol that
model policies implement."""

from __future__ import annotations

import hashlib
import random
from typing import Protocol

from coadapt.android_env.actions import (
    Action, Back, Done, Enter, Infeasible, LongPress, Scroll, Swipe, Tap, Type, Wait,
)
from coadapt.android_env.errors import TaskError
from coadapt.android_env.observation import Observation
from coadapt.tasks.base import OracleCtx, TaskTemplate


class Agent(Protocol):
    """Acts in one episode. `last_output` is the raw text behind the last action, if any."""

    last_output: str | None

    def act(self, obs: Observation) -> Action: ...


class Policy(Protocol):
    """Makes an agent per episode. Only the oracle may look at `task`; every other policy gets
    the goal text alone and must ignore `task` (it carries the ground-truth checker)."""

    name: str

    def start(self, goal: str, task: TaskTemplate | None = None) -> Agent: ...


# --------------------------------------------------------------------------- oracle


class _OracleAgent:
    last_output: str | None = None

    def __init__(self, task: TaskTemplate):
        self.task = task
        self.ctx: OracleCtx | None = None
        self.gen = None

    def act(self, obs: Observation) -> Action:
        if self.ctx is None:
            self.ctx = OracleCtx(obs)
            self.gen = self.task.solve(self.ctx)
        else:
            self.ctx.obs = obs
        assert self.gen is not None
        try:
            return next(self.gen)
        except StopIteration:
            return Done()


class OraclePolicy:
    """Plays each task's scripted solution (needs the task: evaluation and demonstrations only)."""

    name = "oracle"

    def start(self, goal: str, task: TaskTemplate | None = None) -> Agent:
        if task is None:
            raise TaskError("the oracle policy needs the task instance, not just its goal")
        return _OracleAgent(task)


# --------------------------------------------------------------------------- random

_WORDS = ("milk", "hello", "test", "42", "note", "today", "Sam", "blue")


class _RandomAgent:
    last_output: str | None = None

    def __init__(self, rng: random.Random):
        self.rng = rng

    def act(self, obs: Observation) -> Action:
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
                options.append(Type(self.rng.choice(_WORDS), index=i))
            if e.clickable and e.bounds.width > obs.size[0] // 2:
                options.append(Swipe("left", index=i))
        return self.rng.choice(options)


class RandomPolicy:
    """Uniform over the valid actions of each screen (taps, long presses, typing, scrolls,
    swipes, keys, done, infeasible): the reference floor."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def start(self, goal: str, task: TaskTemplate | None = None) -> Agent:
        h = hashlib.blake2b(f"{self.seed}/{goal}".encode(), digest_size=8).digest()
        return _RandomAgent(random.Random(int.from_bytes(h, "big")))
