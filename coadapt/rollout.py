"""Play one episode with an agent on the episode env, recording every step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from coadapt.android_env.actions import Action
from coadapt.android_env.env import AndroidEnv, EpisodeTask, StepInfo
from coadapt.android_env.errors import DeviceError
from coadapt.android_env.observation import Observation

from .agents import Agent


@dataclass
class StepRecord:
    """One step: the observation the agent saw, what it did, and what happened."""

    obs: Observation
    action: Action
    info: StepInfo
    raw_output: str | None = None


@dataclass
class Trajectory:
    """A finished episode. `infra_error` marks an episode cut by a device fault: it is
    excluded from learning and from success rates, and rerun."""

    goal: str
    steps: list[StepRecord] = field(default_factory=list)
    final_obs: Observation | None = None
    declared: str | None = None
    answer: str | None = None
    infra_error: bool = False
    error: str | None = None

    @property
    def n_invalid(self) -> int:
        return sum(1 for s in self.steps if s.info.invalid)


StepCallback = Callable[[int, StepRecord], None]


def run_episode(env: AndroidEnv, agent: Agent, task: EpisodeTask, *, seed: int | None = None,
                on_step: StepCallback | None = None) -> Trajectory:
    """Reset `env` with `task` and let `agent` act until it ends the episode, the step limit
    is reached, or the device fails (then `infra_error` is set, never raised)."""
    traj = Trajectory(goal=task.goal)
    try:
        obs = env.reset(task, seed=seed)
    except DeviceError as e:
        traj.infra_error, traj.error = True, f"reset failed: {e}"
        return traj
    while True:
        action = agent.act(obs)
        result = env.step(action)
        record = StepRecord(obs, action, result.info, agent.last_output)
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
