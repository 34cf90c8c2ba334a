"""Connecting to Ray and placing the actors: device hosts by a per-node resource, policy servers by GPU."""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from coadapt.android_env.errors import ConfigError
from coadapt.android_env.pool import NoDeviceError
from coadapt.policy.base import Policy
from coadapt.rollout.cards import TaskCard
from coadapt.rollout.episode import Trajectory
from coadapt.rollout.runner import HostLostError, RolloutSettings, Scorer

from .hosts import DeviceHost, HostSpec, HostStatus
from .policy import PolicyServer, Publisher, RemotePolicy, ServerSpec

if TYPE_CHECKING:
    from coadapt.config import DeviceSettings, ModelSettings

log = logging.getLogger(__name__)

DEVICE_RESOURCE = "coadapt_devices"
"""The custom Ray resource a node declares for the devices it can run (`ray start --resources
'{"coadapt_devices": 8}'`); each host asks for one unit per device it owns."""

READY_TIMEOUT_S = 180.0
"""How long actors may take to start (a policy server loads its model), in seconds."""

PING_TIMEOUT_S = 30.0
"""How long a host that failed a call may take to answer again (Ray restarting it), in seconds."""


@dataclass(frozen=True)
class RaySettings:
    """Where the actors run and how the device pool is cut into hosts."""

    address: str | None = None
    """A running cluster to join ("auto", "ray://host:10001", "host:6379"); None: $RAY_ADDRESS when
    set, else a local Ray started for this job (and stopped after it)."""
    devices_per_host: int = 1
    """Devices each host actor owns (one worker thread each); a killed host loses that many episodes in flight."""
    policy_servers: int = 1
    """Policy server actors (one per GPU: each asks for a whole GPU when the model runs on cuda)."""
    restarts: int = 1
    """How often Ray restarts a dead host (its in-flight episodes are replayed elsewhere either way)."""

    def __post_init__(self) -> None:
        if self.devices_per_host < 1 or self.policy_servers < 1 or self.restarts < 0:
            raise ConfigError(f"ray settings need devices_per_host >= 1, policy_servers >= 1, restarts >= 0; got {self}")


def import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ConfigError("--ray needs Ray: pip install 'coadapt[ray]'") from e
    return ray


def host_specs(devices: "DeviceSettings", per_host: int) -> list[HostSpec]:
    """The pool cut into hosts of `per_host` devices: simulated phones by index, or ADB serials."""
    serials = devices.serials
    if serials:
        return [HostSpec(i, serials=tuple(serials[j:j + per_host]), seed=devices.seed)
                for i, j in enumerate(range(0, len(serials), per_host))]
    return [HostSpec(i, sims=tuple(range(j, min(j + per_host, devices.workers))), seed=devices.seed,
                     popups=devices.popups) for i, j in enumerate(range(0, devices.workers, per_host))]


class RayHosts:
    """The device hosts of a job (the runner's `EpisodeHosts`), and the policy servers they ask,
    started on first use of a model policy."""

    def __init__(self, ray: Any, specs: list[HostSpec], settings: RaySettings, model: "ModelSettings | None"):
        self.ray = ray
        self.specs = specs
        self.settings = settings
        self.model = model
        actor = ray.remote(DeviceHost)
        self.hosts = [actor.options(num_cpus=0, resources={DEVICE_RESOURCE: s.devices}, max_restarts=settings.restarts,
                                    max_concurrency=s.devices + 4).remote(s) for s in specs]
        self.dead: set[int] = set()
        self.in_flight: dict[int, int] = {i: 0 for i in range(len(specs))}
        """Episodes each host is playing right now."""
        self._last: dict[int, HostStatus] = {}
        self._servers: list[Any] = []
        self._publisher: Publisher | None = None
        self._lock = threading.Lock()
        self.status()  # wait until every host has its devices

    # ------------------------------------------------------------------ health

    def status(self, timeout_s: float = READY_TIMEOUT_S) -> list[HostStatus]:
        """Every live host's status (waits for hosts still starting)."""
        live = [i for i in range(len(self.hosts)) if i not in self.dead]
        refs = [self.hosts[i].status.remote() for i in live]
        try:
            got = self.ray.get(refs, timeout=timeout_s)
        except self.ray.exceptions.GetTimeoutError as e:
            raise ConfigError(f"device hosts did not start within {timeout_s:.0f} s: does the cluster declare "
                              f"enough {DEVICE_RESOURCE!r} ({sum(s.devices for s in self.specs)} needed)?") from e
        for st in got:
            self._last[st.index] = st
        return got

    def alive(self, i: int) -> bool:
        """Whether host `i` answers within PING_TIMEOUT_S (after Ray restarted it, if it died);
        marks it dead otherwise. A ping sent while Ray has not yet noticed the death, or while
        the actor restarts, fails at once: it is retried until the deadline."""
        deadline = time.monotonic() + PING_TIMEOUT_S
        while i not in self.dead:
            try:
                self._last[i] = self.ray.get(self.hosts[i].status.remote(),
                                             timeout=max(0.1, deadline - time.monotonic()))
                return True
            except (self.ray.exceptions.RayError, NoDeviceError) as e:
                if time.monotonic() >= deadline or isinstance(e, NoDeviceError):
                    with self._lock:
                        self.dead.add(i)
                    log.warning("device host %d is gone (%s); its devices are out of the pool", i, type(e).__name__)
                    return False
                time.sleep(0.5)
        return False

    @property
    def recoveries(self) -> int:
        return sum(st.recoveries for st in self._last.values())

    @property
    def retired(self) -> list[str]:
        out = [serial for st in self._last.values() for serial in st.retired]
        out += [f"host-{i}" for i in sorted(self.dead)]
        return out

    def pids(self) -> dict[int, int]:
        """Host index -> process id, for the live hosts."""
        return {st.index: st.pid for st in self.status()}

    # ------------------------------------------------------------------ policy servers

    def servers(self) -> list[Any]:
        """The policy servers, started on first use (they load the job's model)."""
        if not self._servers:
            if self.model is None:
                raise ConfigError("a model policy on Ray needs the model settings")
            device = self.model.torch_device
            spec = ServerSpec(self.model.model, device=device, dtype=self.model.dtype, threads=self.model.threads)
            per_gpu = {"num_gpus": 1} if device == "cuda" else {"num_cpus": 0}
            total = sum(s.devices for s in self.specs)
            actor = self.ray.remote(PolicyServer)
            self._servers = [actor.options(max_concurrency=total + 8, max_restarts=self.settings.restarts,
                                           **per_gpu).remote(spec) for _ in range(self.settings.policy_servers)]
            self.ray.get([s.stats.remote() for s in self._servers], timeout=READY_TIMEOUT_S)
            self._publisher = Publisher(self._servers)
        return self._servers

    def server_stats(self) -> list[dict[str, Any]]:
        return self.ray.get([s.stats.remote() for s in self._servers]) if self._servers else []

    @property
    def published(self) -> int:
        """How many times adapter weights were sent to the servers."""
        return self._publisher.published if self._publisher is not None else 0

    def remote_policy(self, policy: Policy) -> Policy:
        """What the hosts run: a model policy becomes a handle on the servers (synced with the
        driver's weights and sampling settings now); any other policy travels as it is."""
        agent_module = sys.modules.get("coadapt.policy.agent")  # not imported: no model policy exists
        if agent_module is not None and isinstance(policy, agent_module.VLMAgentPolicy):
            servers = self.servers()
            assert self._publisher is not None
            self._publisher.sync(policy)
            return RemotePolicy(policy.name, tuple(servers), dict(policy.memory))
        return policy

    # ------------------------------------------------------------------ episodes

    def session(self, policy: Policy, scorer: Scorer | None, settings: RolloutSettings,
                app_names: Mapping[str, str]) -> "HostSession":
        ray = self.ray
        refs = (ray.put(self.remote_policy(policy)), ray.put(scorer), ray.put(settings), ray.put(dict(app_names)))
        return HostSession(self, refs)

    def explore(self, card: TaskCard, options: dict[str, Any]) -> tuple[Any, dict[str, bytes]]:
        """An exploration on the first live host (see `DeviceHost.explore`)."""
        for i, host in enumerate(self.hosts):
            if i in self.dead:
                continue
            try:
                return self.ray.get(host.explore.remote(card, options))
            except self.ray.exceptions.RayActorError:
                self.alive(i)
        raise NoDeviceError("no device host is left to explore on")


class HostSession:
    """One `run` call's view of the hosts: a free-device token per device, handed to the
    runner's threads; a host that dies takes its tokens with it."""

    def __init__(self, hosts: RayHosts, refs: tuple[Any, ...]):
        self.hosts = hosts
        self.refs = refs
        self.tokens: queue.Queue[int] = queue.Queue()
        for spec in hosts.specs:
            if spec.index not in hosts.dead:
                for _ in range(spec.devices):
                    self.tokens.put(spec.index)
        self.slots = self.tokens.qsize()

    def _take(self) -> int:
        while True:
            if len(self.hosts.dead) == len(self.hosts.hosts):
                raise NoDeviceError("every device host died or lost all its devices: "
                                    + ", ".join(self.hosts.retired))
            try:
                i = self.tokens.get(timeout=0.2)
            except queue.Empty:
                continue
            if i not in self.hosts.dead:
                return i

    def play(self, card: TaskCard, attempt: int, round: int | None, seed: int) -> tuple[Trajectory, str | None]:
        ray = self.hosts.ray
        while True:
            i = self._take()
            ref = self.hosts.hosts[i].play.remote(*self.refs, card, attempt, round, seed)
            with self.hosts._lock:
                self.hosts.in_flight[i] += 1
            try:
                record = ray.get(ref)
            except NoDeviceError:  # this host's devices are all retired: try another host
                with self.hosts._lock:
                    self.hosts.dead.add(i)
                continue
            except ray.exceptions.RayActorError as e:
                if self.hosts.alive(i):  # Ray restarted it: its devices are back
                    self.tokens.put(i)
                raise HostLostError(f"device host {i} died while playing {card.key} (attempt {attempt}): "
                                    f"{type(e).__name__}") from e
            finally:
                with self.hosts._lock:
                    self.hosts.in_flight[i] -= 1
            self.tokens.put(i)
            return record.trajectory(), record.device


@contextmanager
def ray_hosts(settings: RaySettings, devices: "DeviceSettings", model: "ModelSettings | None" = None
              ) -> Iterator[RayHosts]:
    """Device hosts for `devices` on Ray (joined at settings.address or $RAY_ADDRESS, else started
    locally with one device slot per phone), torn down when the block ends."""
    ray = import_ray()
    specs = host_specs(devices, settings.devices_per_host)
    started = False
    if not ray.is_initialized():
        address = settings.address or os.environ.get("RAY_ADDRESS")
        quiet = {"logging_level": logging.WARNING, "log_to_driver": False}
        if address:
            ray.init(address=address, **quiet)
        else:
            need = sum(s.devices for s in specs)
            ray.init(num_cpus=os.cpu_count() or 1, resources={DEVICE_RESOURCE: need}, include_dashboard=False,
                     **quiet)
        started = True
    try:
        have = ray.cluster_resources().get(DEVICE_RESOURCE, 0)
        need = max(s.devices for s in specs)
        if have < sum(s.devices for s in specs):
            raise ConfigError(f"the Ray cluster declares {have:g} {DEVICE_RESOURCE!r} but this job's "
                              f"{len(specs)} device host(s) need {sum(s.devices for s in specs)} (at least {need} "
                              f"on one node); start each node with ray start --resources "
                              f"'{{\"{DEVICE_RESOURCE}\": N}}' for the N devices it can run")
        t0 = time.monotonic()
        hosts = RayHosts(ray, specs, settings, model)
        log.info("%d device host(s) ready in %.1f s", len(specs), time.monotonic() - t0)
        try:
            yield hosts
        finally:
            for actor in [*hosts.hosts, *hosts._servers]:
                ray.kill(actor, no_restart=True)
    finally:
        if started:
            ray.shutdown()
