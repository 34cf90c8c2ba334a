"""Run a task's oracle through the episode env: proves tasks solvable, makes demonstrations."""

from __future__ import annotations

from dataclasses import dataclass, field

from coadapt.android_env.actions import Action
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import TaskError
from coadapt.android_env.observation import Observation

from .base import OracleCtx, TaskTemplate


@dataclass
class OracleEpisode:
    """An oracle's episode: each observation with the action taken on it, and the score."""

    task: TaskTemplate
    steps: list[tuple[Observation, Action]] = field(default_factory=list)
    score: float = 0.0
    declared: str | None = None
    answer: str | None = None


def run_oracle(env: AndroidEnv, task: TaskTemplate, seed: int | None = None) -> OracleEpisode:
    """Reset `env` with `task`, play the oracle's actions, and score the result."""
    obs = env.reset(task, seed=seed)
    ctx = OracleCtx(obs, app_labels=env.app_names)
    episode = OracleEpisode(task)
    for action in task.solve(ctx):
        episode.steps.append((ctx.obs, action))
        result = env.step(action)
        if result.info.invalid or result.info.infra_error:
            raise TaskError(f"oracle of {task!r} made an action that failed: {result.info.error}")
        ctx.obs = result.observation
        if result.terminated or result.truncated:
            break
    episode.declared, episode.answer = env.declared, env.answer
    episode.score = task.evaluate(env.device, env.declared, env.answer)
    return episode
