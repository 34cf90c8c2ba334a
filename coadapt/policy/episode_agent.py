"""The per-episode agent of a model policy, apart from the model: wherever generation runs (in this
process or on a policy server), an episode keeps the same history and per-step seeds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from coadapt.android_env.actions import describe
from coadapt.android_env.observation import Observation
from coadapt.rollout.cards import step_seed

from .base import Decision
from .prompt import PolicyInput

if TYPE_CHECKING:
    from .model import Generation

Request = tuple[PolicyInput, int]
"""One decision to make: the model's input and the step's sampling seed."""


class VLMAgent:
    """One episode: feeds the model its goal, the screen and what it did so far. Step t samples
    with seed `step_seed(seed, t)`, so an episode reproduces whatever else shares the batch."""

    def __init__(self, generate: Callable[[Request], Generation], goal: str, seed: int, memory: str = ""):
        self._generate = generate
        self.goal = goal
        self.seed = seed
        self.memory = memory
        self.history: list[str] = []

    def act(self, obs: Observation) -> Decision:
        history = tuple(self.history)
        gen = self._generate((PolicyInput(obs, self.goal, history, self.memory), step_seed(self.seed, len(history))))
        self.history.append(gen.text or describe(gen.action))
        return Decision(gen.action, gen.text, gen.token_ids, gen.logprobs, history)
