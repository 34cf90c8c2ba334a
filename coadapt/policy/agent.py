"""A VLMPolicy as an episode agent: `load_policy(spec).start(goal).act(obs)`, history kept per episode."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import torch

from coadapt.android_env.actions import Action, describe
from coadapt.android_env.observation import Observation

from .batching import Batcher
from .model import Generation, PolicyConfig, VLMPolicy
from .processor import ModelLoadError
from .prompt import PolicyInput

log = logging.getLogger(__name__)

BUNDLED_MODEL = Path(__file__).with_name("tiny_vlm")
"""Where the pretrained tiny VLM ships inside the package (written by `coadapt pretrain`)."""


class VLMAgent:
    """One episode: feeds the model its goal, the screen and what it did so far."""

    def __init__(self, policy: VLMPolicy, goal: str, seed: int, generate: Batcher[PolicyInput, Generation] | None = None):
        self.policy = policy
        self._generate = generate or (lambda inp: policy.generate([inp])[0])
        self.goal = goal
        self.seed = seed
        self.history: list[str] = []
        self.last_output: str | None = None

    def act(self, obs: Observation) -> Action:
        if self.policy.config.temperature > 0:
            # Reproducible samples per (seed, goal, step) without a generator argument in generate().
            key = hashlib.blake2b(f"{self.seed}/{self.goal}/{len(self.history)}".encode(), digest_size=8).digest()
            torch.manual_seed(int.from_bytes(key, "big") % (2**63))
        gen = self._generate(PolicyInput(obs, self.goal, tuple(self.history)))
        self.last_output = gen.text
        self.history.append(gen.text or describe(gen.action))
        return gen.action


class VLMAgentPolicy:
    """Makes a VLMAgent per episode; the goal is all it gets (`task` is ignored by contract)."""

    def __init__(self, policy: VLMPolicy, name: str, seed: int = 0):
        self.policy = policy
        self.name = name
        self.seed = seed
        # Agents acting in parallel (one per device) share forward passes.
        self.batcher: Batcher[PolicyInput, Generation] = Batcher(policy.generate, policy.config.max_batch)

    def start(self, goal: str, task: object | None = None) -> VLMAgent:
        return VLMAgent(self.policy, goal, self.seed, self.batcher)


def load_policy(spec: str | os.PathLike, *, adapter: str | os.PathLike | None = None, seed: int = 0,
                config: PolicyConfig | None = None) -> VLMAgentPolicy:
    """"default" (the bundled tiny VLM), a model folder or a hub id, with an optional adapter folder.

    Raises ModelLoadError (e.g. when the bundled model has not been pretrained yet).
    """
    if str(spec) == "default":
        if not (BUNDLED_MODEL / "config.json").is_file():
            raise ModelLoadError(f"the bundled tiny VLM is missing ({BUNDLED_MODEL}); run `coadapt pretrain` "
                                 "or pass a model folder or hub id")
        path: str | os.PathLike = BUNDLED_MODEL
    else:
        path = spec
    policy = VLMPolicy.load(path, adapter=adapter, config=config)
    return VLMAgentPolicy(policy, name=str(spec), seed=seed)
