"""Rollouts: task cards, the one episode loop, and the runner that plays K attempts per card
over the device pool into the run store."""

from .cards import TaskCard, episode_seed, step_seed
from .episode import StepRecord, Trajectory, run_episode
from .firewall import GroundTruthError, GuardedDevice
from .runner import RolloutResult, RolloutRunner, RolloutSettings, Scorer, load_trajectory

__all__ = ["TaskCard", "episode_seed", "step_seed", "StepRecord", "Trajectory", "run_episode", "GroundTruthError",
           "GuardedDevice", "RolloutResult", "RolloutRunner", "RolloutSettings", "Scorer", "load_trajectory"]
