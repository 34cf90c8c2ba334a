"""Task cards: what a learning agent is told about a task (goal text, never the checker)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from coadapt.android_env.device import Device
from coadapt.android_env.errors import ConfigError
from coadapt.tasks.base import TaskTemplate


@dataclass(frozen=True)
class TaskCard:
    """One task as an agent or the adapt loop receives it: the goal in words and how to set the
    phone up. It carries no checker and no oracle, so nothing holding a card can grade itself.

    A card is also the `EpisodeTask` the episode env runs (`goal`, `max_steps`, `setup`).
    """

    key: str
    """Stable id of the instance within a run, e.g. "ExpensesAddExpense#3" (resume key)."""
    goal: str
    """The task in words."""
    app: str
    """Package the task is about (and the app the episode starts in)."""
    max_steps: int
    """Step limit of an episode."""
    seed: int
    """Instance seed; the phone is reset with it, so every attempt starts from the same screen."""
    states: tuple[tuple[str, str], ...] = ()
    """App states installed at reset: (package, JSON of the state), in order."""
    start_in_app: bool = True
    """Launch `app` after installing the states; otherwise start on the home screen."""
    task: str = ""
    """Label for reports (the template name for suite instances, a tag for self-made goals)."""
    source: str = "suite"
    """Where the card came from: suite, relabel, proposed, ..."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"task card {self.key!r}: max_steps must be >= 1, got {self.max_steps}")
        if not self.goal.strip():
            raise ConfigError(f"task card {self.key!r}: empty goal")

    @classmethod
    def from_template(cls, task: TaskTemplate, key: str, source: str = "suite") -> "TaskCard":
        """The card of a task instance: its goal and initial states, nothing of its checker."""
        states = tuple((pkg, json.dumps(state, sort_keys=True, ensure_ascii=False))
                       for pkg, state in task.states().items())
        return cls(key=key, goal=task.goal, app=task.app, max_steps=task.max_steps, seed=task.seed, states=states,
                   start_in_app=task.start_in_app, task=task.name, source=source)

    @property
    def device_seed(self) -> int:
        """The seed the phone is reset with (32 bits, derived from the instance seed)."""
        return self.seed & 0xFFFFFFFF

    def initial_states(self) -> dict[str, dict[str, Any]]:
        return {pkg: json.loads(state) for pkg, state in self.states}

    def setup(self, device: Device) -> None:
        """Install the initial app states and open the app (the device was just reset)."""
        for package, state in self.initial_states().items():
            device.write_app_state(package, state)
        if self.start_in_app:
            device.launch(self.app)

    def replace(self, **changes: Any) -> "TaskCard":
        """A copy with some fields changed (a relabelled goal, a shorter step limit)."""
        return dataclasses.replace(self, **changes)


def episode_seed(run_seed: int, key: str, attempt: int, round: int | None) -> int:
    """The sampling seed of one episode: distinct per (run seed, instance, attempt, round), so
    K attempts differ and a rerun reproduces each of them."""
    digest = hashlib.blake2b(f"{run_seed}/{key}/{attempt}/{round}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def step_seed(episode: int, step: int) -> int:
    """The sampling seed of one decision within an episode."""
    digest = hashlib.blake2b(f"{episode}/{step}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


