"""The one episode loop: an agent plays a task card on the episode env, every step recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from coadapt.android_env.actions import Action
from coadapt.android_env.env import AndroidEnv, StepInfo
from coadapt.android_env.errors import DeviceError
from coadapt.android_env.observation import Observation
from coadapt.policy.base import Agent, Decision

from .cards import TaskCard


@dataclass(frozen=True, eq=False)
class StepRecord:
    """One step: the observation the agent saw, its decision, and what happened."""

    obs: Observation
    decision: Decision
    info: StepInfo

    @property
    def action(self) -> Action:
        return self.decision.action

    @property
    def raw_output(self) -> str | None:
        return self.decision.raw_output


@dataclass(eq=False)
class Trajectory:
    """A played episode. `infra_error` marks one cut by a device fault: it is excluded from
    learning and from success rates, and replayed."""

    card: TaskCard
    attempt: int = 0
    round: int | None = None
    seed: int = 0
    """The episode's sampling seed."""
    steps: list[StepRecord] = field(default_factory=list)
    final_obs: Observation | None = None
    declared: str | None = None
    """"done", "infeasible", or None when the step limit ended the episode."""
    answer: str | None = None
    infra_error: bool = False
    error: str | None = None
    episode_id: int | None = None
    """Row id in the run store, once stored."""
    score: float | None = None
    """What the runner's scorer said (ground truth in evaluation), if it had one."""

    @property
    def goal(self) -> str:
        return self.card.goal

    @property
    def n_invalid(self) -> int:
        return sum(1 for s in self.steps if s.info.invalid)

    @property
    def observations(self) -> list[Observation]:
        """Every screen of the episode: the one before each step, then the final one."""
        return [s.obs for s in self.steps] + ([self.final_obs] if self.final_obs is not None else [])


StepCallback = Callable[[int, StepRecord], None]


def run_episode(env: AndroidEnv, agent: Agent, card: TaskCard, *, attempt: int = 0, round: int | None = None,
                seed: int = 0, on_step: StepCallback | None = None) -> Trajectory:
    """Reset `env` with `card` and let `agent` act until it ends the episode, the step limit is
    reached, or the device fails (then `infra_error` is set, never raised)."""
    traj = Trajectory(card, attempt=attempt, round=round, seed=seed)
    try:
        obs = env.reset(card, seed=card.device_seed)
    except DeviceError as e:
        traj.infra_error, traj.error = True, f"reset failed: {e}"
        return traj
    while True:
        decision = agent.act(obs)
        result = env.step(decision.action)
        record = StepRecord(obs, decision, result.info)
        traj.steps.append(record)
        if on_step is not None:
            on_step(len(traj.steps) - 1, record)
        obs = result.observation
        if result.info.infra_error:
            traj.infra_error, traj.error = True, result.info.error
            break
        if result.terminated or result.truncated:
            break
    traj.final_obs = obs
    traj.declared, traj.answer = env.declared, env.answer
    return traj
