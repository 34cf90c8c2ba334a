"""What every policy gives the rollout loop: an agent per episode, one decision per step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from coadapt.android_env.actions import Action
from coadapt.android_env.observation import Observation

if TYPE_CHECKING:
    from coadapt.rollout.cards import TaskCard


@dataclass(frozen=True)
class Decision:
    """One step's choice, with what training needs to re-score it."""

    action: Action
    """What the agent does (an `Invalid` action when the model's answer was unreadable)."""
    raw_output: str | None = None
    """The text the model generated, when a model acted."""
    token_ids: tuple[int, ...] = ()
    """The sampled answer tokens (end token included when produced)."""
    logprobs: tuple[float, ...] = ()
    """Behaviour log-prob of each sampled token, under the distribution it was drawn from."""
    history: tuple[str, ...] = ()
    """The earlier actions the model was shown (its prompt's history), oldest first."""


class Agent(Protocol):
    """Acts in one episode."""

    def act(self, obs: Observation) -> Decision: ...


class Policy(Protocol):
    """Makes an agent per episode from a task card (goal text, no checker) and the episode's
    sampling seed (distinct per instance, attempt and round)."""

    name: str

    def start(self, card: "TaskCard", seed: int) -> Agent: ...
