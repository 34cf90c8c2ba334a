"""What crosses process boundaries: observations as raw pixels, episodes as plain records."""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from coadapt.android_env.observation import Observation
from coadapt.android_env.uitree import UiElement, UiTree
from coadapt.policy.base import Decision
from coadapt.policy.prompt import PolicyInput
from coadapt.rollout.cards import TaskCard
from coadapt.rollout.episode import StepRecord, Trajectory
from coadapt.android_env.env import StepInfo


@dataclass(frozen=True)
class WireObs:
    """An observation in transit: the screenshot as raw pixels (a pickled PIL image would be the
    same bytes plus PIL's own overhead; PNG would cost ~30 ms per 720x1600 screen to encode)."""

    mode: str
    size: tuple[int, int]
    """(width, height) of the screenshot in physical pixels."""
    pixels: bytes
    tree: UiTree
    elements: tuple[UiElement, ...]
    package: str
    step: int

    @classmethod
    def of(cls, obs: Observation) -> "WireObs":
        shot = obs.screenshot
        return cls(shot.mode, shot.size, shot.tobytes(), obs.tree, obs.elements, obs.package, obs.step)

    def observation(self) -> Observation:
        return Observation(Image.frombytes(self.mode, self.size, self.pixels), self.tree, self.elements,
                           self.package, self.step)


@dataclass(frozen=True)
class WireInput:
    """One generation request: `PolicyInput` with its observation in transit form."""

    obs: WireObs
    goal: str
    history: tuple[str, ...]
    memory: str

    @classmethod
    def of(cls, inp: PolicyInput) -> "WireInput":
        return cls(WireObs.of(inp.observation), inp.goal, tuple(inp.history), inp.memory)

    def policy_input(self) -> PolicyInput:
        return PolicyInput(self.obs.observation(), self.goal, self.history, self.memory)


@dataclass(frozen=True)
class WireStep:
    """One step of a played episode: the screen the agent saw, its decision, what happened."""

    obs: WireObs
    decision: Decision
    info: StepInfo


@dataclass(frozen=True)
class EpisodeRecord:
    """A played episode as a host hands it to the driver, which stores it in the run store."""

    card: TaskCard
    attempt: int
    round: int | None
    seed: int
    steps: tuple[WireStep, ...]
    final_obs: WireObs | None
    declared: str | None
    answer: str | None
    infra_error: bool
    error: str | None
    score: float | None
    device: str | None
    """Serial of the device it ran on."""

    @classmethod
    def of(cls, traj: Trajectory, device: str | None) -> "EpisodeRecord":
        steps = tuple(WireStep(WireObs.of(s.obs), s.decision, s.info) for s in traj.steps)
        final = None if traj.final_obs is None else WireObs.of(traj.final_obs)
        return cls(traj.card, traj.attempt, traj.round, traj.seed, steps, final, traj.declared, traj.answer,
                   traj.infra_error, traj.error, traj.score, device)

    def trajectory(self) -> Trajectory:
        """The episode as the runner's own `_play` would have returned it."""
        steps = [StepRecord(s.obs.observation(), s.decision, s.info) for s in self.steps]
        final = None if self.final_obs is None else self.final_obs.observation()
        return Trajectory(self.card, attempt=self.attempt, round=self.round, seed=self.seed, steps=steps,
                          final_obs=final, declared=self.declared, answer=self.answer, infra_error=self.infra_error,
                          error=self.error, score=self.score)
