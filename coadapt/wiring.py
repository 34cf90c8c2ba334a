"""Wiring: turn the root config into the objects a job uses (policy, device pool, settings)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping

from coadapt.android_env.errors import ConfigError
from coadapt.android_env.pool import DevicePool
from coadapt.config import DeviceSettings, ModelSettings
from coadapt.explore.memory import load_memory
from coadapt.policy.base import Policy
from coadapt.rollout import RolloutSettings
from coadapt.tasks.base import TaskTemplate


def set_threads(settings: ModelSettings) -> None:
    if settings.threads is not None:
        import torch

        torch.set_num_threads(settings.threads)


def build_policy(settings: ModelSettings, templates: Mapping[str, TaskTemplate] | None = None, *,
                 temperature: float | None = None) -> Policy:
    """The policy named by `settings.model`, its sampling overridden by the settings (or by
    `temperature`, which wins: adaptation samples its attempts)."""
    from coadapt.policy import make_policy

    set_threads(settings)
    if settings.model in ("oracle", "random"):
        if settings.adapter is not None:
            raise ConfigError(f"--adapter needs a model policy, not {settings.model!r}")
        return make_policy(settings.model, templates=templates)
    agents = make_policy(settings.model, adapter=settings.adapter, device=settings.torch_device, dtype=settings.dtype)
    saved = load_memory(Path(settings.adapter)) if settings.adapter else None
    if saved is not None:  # an adapter adapted with memory in its prompts
        app, memory = saved
        agents.memory[app] = memory  # type: ignore[attr-defined]
    temp = temperature if temperature is not None else settings.temperature
    changes = {k: v for k, v in (("temperature", temp), ("top_p", settings.top_p)) if v is not None}
    if changes:  # on top of what the model folder saved (or the defaults its type gets)
        policy = agents.policy  # type: ignore[attr-defined]
        with policy.lock:
            policy.config = dataclasses.replace(policy.config, **changes)
    return agents


def build_pool(settings: DeviceSettings) -> DevicePool:
    """ADB devices (settings.devices) or `workers` simulated phones."""
    from coadapt.devices import make_pool

    return make_pool(settings.devices, settings.workers, settings.seed, popups=settings.popups)


def rollout_settings(settings: DeviceSettings, *, guard: bool = False) -> RolloutSettings:
    return RolloutSettings(run_seed=settings.seed, max_infra_retries=settings.max_infra_retries,
                           settle_seconds=settings.settle, guard=guard)
