"""Device hosts: one Ray actor per slice of the device pool plays whole episodes on its own devices."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from coadapt.android_env.pool import DevicePool
from coadapt.policy.base import Policy
from coadapt.rollout.cards import TaskCard
from coadapt.rollout.runner import RolloutSettings, Scorer, play_episode

from .wire import EpisodeRecord


@dataclass(frozen=True)
class HostSpec:
    """Which devices one host owns."""

    index: int
    """The host's number (0-based); names it in logs and reports."""
    sims: tuple[int, ...] = ()
    """Pool indices of the simulated phones it runs (phone i is seeded seed + i, serial sim-i, as in-process)."""
    serials: tuple[str, ...] = ()
    """ADB serials it drives through the adb server of the node it runs on."""
    seed: int = 0
    popups: bool = False

    @property
    def devices(self) -> int:
        return len(self.sims) + len(self.serials)


@dataclass(frozen=True)
class HostStatus:
    """A host's health as it reports it."""

    index: int
    pid: int
    node: str
    devices: int
    recoveries: int
    retired: tuple[str, ...]


def host_pool(spec: HostSpec) -> DevicePool:
    """The host's slice of the pool, with the same recovery escalation as an in-process pool."""
    from coadapt.devices import adb_pool, sim_slot

    slots = [sim_slot(i, spec.seed, popups=spec.popups) for i in spec.sims]
    if spec.serials:
        slots += adb_pool(list(spec.serials)).slots
    return DevicePool(slots)


class DeviceHost:
    """Owns a slice of the pool (health checks, recovery) and plays one episode per call, one
    call per device at a time (the actor is threaded): the rollout workers live here, next to
    their devices, and only finished episodes travel to the driver."""

    def __init__(self, spec: HostSpec):
        self.spec = spec
        self.pool = host_pool(spec)

    def play(self, policy: Policy, scorer: Scorer | None, settings: RolloutSettings, app_names: Mapping[str, str],
             card: TaskCard, attempt: int, round: int | None, seed: int) -> EpisodeRecord:
        """Play one episode on a free device of this host (scored there, while the device shows
        its final state). Raises NoDeviceError when every device of the host is retired."""
        slot = self.pool.acquire()
        try:
            assert slot.device is not None
            traj = play_episode(slot.device, policy, scorer, settings, app_names, card, attempt, round, seed)
        except BaseException:
            self.pool.release(slot)
            raise
        self.pool.release(slot, faulty=traj.infra_error)
        return EpisodeRecord.of(traj, slot.serial)

    def explore(self, card: TaskCard, options: dict[str, Any]) -> tuple[Any, dict[str, bytes]]:
        """Run `explore_app` on one of this host's devices into a scratch folder; return its result
        and the files it wrote (relative path -> bytes), for the driver to write into the run folder."""
        from coadapt.apps import label_map
        from coadapt.explore.job import explore_app

        with tempfile.TemporaryDirectory(prefix="coadapt-explore-") as tmp, self.pool.lease() as slot:
            assert slot.device is not None
            result = explore_app(slot.device, card, app_names=label_map(), out_dir=Path(tmp), **options)
            files = {str(p.relative_to(tmp)): p.read_bytes() for p in Path(tmp).rglob("*") if p.is_file()}
        return result, files

    def status(self) -> HostStatus:
        import ray

        return HostStatus(self.spec.index, os.getpid(), ray.get_runtime_context().get_node_id(), self.spec.devices,
                          self.pool.recoveries, tuple(self.pool.retired))
