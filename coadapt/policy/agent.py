"""A VLMPolicy as an episode agent: `load_policy(spec).start(card, seed).act(obs)`, history kept per episode."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

from coadapt.rollout.cards import TaskCard

from .batching import Batcher
from .episode_agent import Request, VLMAgent
from .model import Generation, PolicyConfig, VLMPolicy
from .processor import ModelLoadError

log = logging.getLogger(__name__)

BUNDLED_MODEL = Path(__file__).with_name("tiny_vlm")
"""Where the pretrained tiny VLM ships inside the package (written by `coadapt pretrain`)."""


class VLMAgentPolicy:
    """Makes a VLMAgent per episode; the card's goal is all it reads."""

    def __init__(self, policy: VLMPolicy, name: str):
        self.policy = policy
        self.name = name
        # Agents acting in parallel (one per device) share forward passes.
        self.batcher: Batcher[Request, Generation] = Batcher(self._generate_batch, policy.config.max_batch)
        self.memory: dict[str, str] = {}
        """Exploration memory per app package, shown in the prompt of that app's episodes."""

    def _generate_batch(self, requests: Sequence[Request]) -> list[Generation]:
        return self.policy.generate([inp for inp, _ in requests], seeds=[seed for _, seed in requests])

    def start(self, card: TaskCard, seed: int) -> VLMAgent:
        return VLMAgent(self.batcher, card.goal, seed, self.memory.get(card.app, ""))


def load_policy(spec: str | os.PathLike, *, adapter: str | os.PathLike | None = None,
                config: PolicyConfig | None = None, device: str = "cpu", dtype: str = "auto",
                trainable: bool = False) -> VLMAgentPolicy:
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
    policy = VLMPolicy.load(path, adapter=adapter, config=config, device=device, dtype=dtype, trainable=trainable)
    if str(spec) == "default":
        policy.source = "default"  # portable: the bundled model wherever coadapt is installed
    name = str(spec) if adapter is None else f"{spec}+{Path(adapter).name}"
    return VLMAgentPolicy(policy, name=name)
