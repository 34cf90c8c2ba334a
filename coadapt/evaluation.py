"""AndroidWorld-style evaluation: every instance of a suite, in parallel over devices.

Ground truth lives here (and in the adapt loop's before/after report, which calls this):
`task.evaluate` is called after each episode. Instances use the suite's *eval* seed space,
disjoint from adaptation and pretraining seeds. A run folder makes the run resumable: on
restart, finished episodes are kept and only the rest is played.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from coadapt.android_env.device import Device
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import DeviceError
from coadapt.android_env.pool import DevicePool, NoDeviceError
from coadapt.apps import label_map
from coadapt.tasks.suite import InstanceSpec, Suite

from .agents import Policy
from .rollout import StepRecord, run_episode
from .runs import RunStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalConfig:
    """Settings of an evaluation run."""

    suite: str
    """Suite YAML file, or the name of a bundled suite (smoke, seen, unseen, all)."""
    policy: str = "default"
    """oracle, random, default (the bundled model) or a model folder / hub id."""
    k: int = 1
    """Attempts per instance; pass@k is reported when k > 1."""
    workers: int = 2
    """Simulated phones run in parallel (ignored with --devices: one worker per device)."""
    max_infra_retries: int = 2
    """How often an instance cut by a device fault is rerun before it counts as lost."""
    screenshots: bool = True
    """Save every step's screenshot into the run folder (for the dashboard)."""
    space: str = "eval"
    """Seed space of the instances (eval is disjoint from adapt and pretrain)."""

    def __post_init__(self) -> None:
        from coadapt.android_env.errors import ConfigError

        if self.k < 1:
            raise ConfigError(f"k must be at least 1, got {self.k}")
        if self.workers < 1:
            raise ConfigError(f"workers must be at least 1, got {self.workers}")


ProgressFn = Callable[[str, dict[str, Any]], None]


def _play(spec: InstanceSpec, attempt: int, env: AndroidEnv, policy: Policy, store: RunStore, phase: str) -> str:
    task = spec.build()
    episode_id = store.start_episode(key=spec.key, attempt=attempt, task=spec.task, app=task.app, goal=task.goal,
                                     seed=spec.seed, policy=policy.name, device=env.device.serial, phase=phase)

    def record(i: int, rec: StepRecord) -> None:
        store.add_step(episode_id, i, action=rec.action, screenshot=rec.obs.screenshot, package=rec.obs.package,
                       elements=rec.obs.describe_elements(), element=rec.info.element, invalid=rec.info.invalid,
                       error=rec.info.error, raw_output=rec.raw_output, seconds=rec.info.seconds)

    agent = policy.start(task.goal, task if policy.name == "oracle" else None)
    traj = run_episode(env, agent, task, seed=spec.seed & 0xFFFFFFFF, on_step=record)
    if traj.infra_error:
        store.finish_episode(episode_id, status="infra_error", steps=len(traj.steps), invalid_steps=traj.n_invalid,
                             error=traj.error)
        return "infra_error"
    try:
        success = task.evaluate(env.device, traj.declared, traj.answer)
    except DeviceError as e:
        store.finish_episode(episode_id, status="infra_error", steps=len(traj.steps), error=f"checking failed: {e}")
        return "infra_error"
    store.finish_episode(episode_id, status="finished", steps=len(traj.steps), invalid_steps=traj.n_invalid,
                         declared=traj.declared, answer=traj.answer, success=success)
    return "finished"


def run_suite(suite: Suite, policy: Policy, devices: Sequence[Device] | DevicePool, store: RunStore, *, k: int = 1,
              max_infra_retries: int = 2, space: str = "eval", phase: str = "eval",
              progress: ProgressFn | None = None) -> dict[str, Any]:
    """Play every (instance, attempt) not yet finished in `store`, one worker thread per
    device, and return the report (also over episodes finished by earlier runs).

    An episode cut by a device fault is recorded as an infra error, the device goes back to
    the pool as faulty (which recovers or retires it), and the episode is replayed.
    """
    pool = devices if isinstance(devices, DevicePool) else DevicePool.of(devices)
    instances = suite.instances(space)
    dropped = store.discard_unfinished(phase)
    if dropped:
        log.info("dropped %d episode(s) a killed run left unfinished; they are replayed", dropped)
    done = store.finished_keys(phase)
    jobs: queue.Queue[tuple[InstanceSpec, int, int]] = queue.Queue()
    todo = [(spec, a) for spec in instances for a in range(k) if (spec.key, a) not in done]
    for spec, a in todo:
        jobs.put((spec, a, 0))
    if progress:
        progress("start", {"total": len(instances) * k, "done": len(instances) * k - len(todo)})
    lost: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        while not errors:
            try:
                spec, attempt, tries = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                slot = pool.acquire()
            except NoDeviceError:
                jobs.put((spec, attempt, tries))
                return
            try:
                env = AndroidEnv(slot.device, app_names=label_map())
                outcome = _play(spec, attempt, env, policy, store, phase)
            except BaseException as e:  # a policy or task bug: stop everyone, report it
                errors.append(e)
                pool.release(slot)
                return
            pool.release(slot, faulty=outcome == "infra_error")
            if outcome == "infra_error":
                if tries < max_infra_retries:
                    jobs.put((spec, attempt, tries + 1))
                else:
                    with lock:
                        lost.append(spec.key)
            if progress:
                progress("episode", {"key": spec.key, "outcome": outcome})

    threads = [threading.Thread(target=worker, name=f"eval-{i}", daemon=True) for i in range(len(pool.slots))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    if not jobs.empty():
        raise NoDeviceError(f"every device failed ({', '.join(pool.retired)}); {jobs.qsize()} episode(s) not played "
                            "(rerun with the same --out to resume)")
    report = build_report(store, suite, policy.name, k=k, phase=phase, lost=lost)
    report["device_recoveries"] = pool.recoveries
    report["devices_retired"] = pool.retired
    return report


def build_report(store: RunStore, suite: Suite, policy: str, *, k: int, phase: str = "eval",
                 lost: Sequence[str] = ()) -> dict[str, Any]:
    """Success rates and the rest, from the episodes in the store."""
    rows = [r for r in store.episodes(phase=phase) if r.policy == policy]
    wanted = {spec.key for spec in suite.instances()}
    finished = [r for r in rows if r.status == "finished" and r.key in wanted and r.attempt < k]
    infra = [r for r in rows if r.status == "infra_error" and r.key in wanted]
    by_key: dict[str, list[float]] = defaultdict(list)
    for r in finished:
        by_key[r.key].append(r.success or 0.0)

    def group(keyfn) -> dict[str, dict[str, float]]:
        acc: dict[str, list] = defaultdict(list)
        for r in finished:
            acc[keyfn(r)].append(r)
        return {name: {"n": len(rs), "success_rate": sum(x.success or 0 for x in rs) / len(rs),
                       "mean_steps": sum(x.steps for x in rs) / len(rs)} for name, rs in sorted(acc.items())}

    total_steps = sum(r.steps for r in finished)
    report: dict[str, Any] = {
        "suite": suite.name,
        "policy": policy,
        "seed_space": "eval",
        "n_instances": len(by_key),
        "n_episodes": len(finished),
        "k": k,
        "success_rate": (sum(r.success or 0 for r in finished) / len(finished)) if finished else 0.0,
        "per_task": group(lambda r: r.task),
        "per_app": group(lambda r: r.app),
        "mean_steps": total_steps / len(finished) if finished else 0.0,
        "invalid_action_rate": (sum(r.invalid_steps for r in finished) / total_steps) if total_steps else 0.0,
        "infra_errors": len(infra),
        "lost_instances": sorted(set(lost)),
    }
    if k > 1:
        report["pass_at_k"] = (sum(1 for v in by_key.values() if max(v) >= 1.0) / len(by_key)) if by_key else 0.0
    return report
