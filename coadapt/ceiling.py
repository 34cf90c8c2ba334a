"""The ceiling line of an adapt report: the loop's update budget spent on oracle demonstrations of
the adapt instances instead. It uses ground truth (the oracle's scripted solutions), so it is a
reference computed for the report only, after adapting, and never part of the method."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Mapping

from coadapt.adapt.config import AdaptConfig
from coadapt.adapt.trainer import LoraTrainer, TrainSample
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.observation import Observation
from coadapt.android_env.pool import DevicePool
from coadapt.apps import label_map
from coadapt.policy.agent import VLMAgentPolicy
from coadapt.policy.baselines import OraclePolicy
from coadapt.policy.parser import format_action
from coadapt.policy.prompt import PolicyInput
from coadapt.rollout import RolloutSettings, TaskCard
from coadapt.rollout.runner import compact_obs
from coadapt.tasks.base import TaskTemplate


def oracle_walk(env: AndroidEnv, tasks: Mapping[str, TaskTemplate], style: str
                ) -> Iterator[tuple[TaskCard, int, Observation, tuple[str, ...], str]]:
    """Every state on the oracle's path through each task instance, played on `env`: (card, step,
    observation, the oracle's earlier actions, its action here), actions written in `style`."""
    oracle = OraclePolicy(tasks)
    for key, task in tasks.items():
        card = TaskCard.from_template(task, key)
        obs = env.reset(card, seed=card.device_seed)
        player = oracle.start(card)
        history: list[str] = []
        for i in range(card.max_steps):
            action = player.act(obs).action
            target = format_action(action, obs, style)
            yield card, i, obs, tuple(history), target
            history.append(target)
            res = env.step(action)
            if res.terminated or res.truncated:
                break
            obs = res.observation


def oracle_samples(agents: VLMAgentPolicy, pool: DevicePool, tasks: Mapping[str, TaskTemplate],
                   settings: RolloutSettings = RolloutSettings()) -> list[TrainSample]:
    """One imitation sample per oracle step on each task instance, written the way the policy
    writes actions."""
    policy = agents.policy
    with pool.lease() as slot:
        env = AndroidEnv(slot.device, label_map(), settle_seconds=settings.settle_seconds)
        return [TrainSample(PolicyInput(compact_obs(obs), card.goal, history), tuple(policy.target_ids(target)), (),
                            0.0, imitate=True)
                for card, _, obs, history, target in oracle_walk(env, tasks, policy.config.prompt.style)]


def train_ceiling(agents: VLMAgentPolicy, samples: list[TrainSample], cfg: AdaptConfig, optimizer_steps: int
                  ) -> dict[str, Any]:
    """Train a fresh adapter of `agents` on `samples` (imitation only) for `optimizer_steps` steps,
    the loop's own budget; returns what was trained."""
    sft = dataclasses.replace(cfg, self_imitation=1.0, kl_weight=0.0)  # plain imitation
    trainer = LoraTrainer(agents.policy, sft)
    done, loss, seed = 0, None, 0
    while done < optimizer_steps and samples:
        stats = trainer.update(samples, seed=seed)
        if not stats.get("optimizer_steps"):
            break
        done += stats["optimizer_steps"]
        loss = stats.get("loss")
        seed += 1
    return {"samples": len(samples), "optimizer_steps": done, "budget_steps": optimizer_steps,
            "last_loss": loss}
