"""AndroidWorld-style evaluation: every instance of a suite, scored by ground truth.

Ground truth lives here: the `GroundTruth` scorer calls `task.evaluate` after each episode
(besides tests and the oracle's demonstrations, nothing else touches checkers; the adapt loop
calls `evaluate_cards` only for its before/after report, outside adaptation). Instances use the
suite's *eval* seed space, disjoint from adaptation and pretraining seeds. A run folder makes the
run resumable: finished episodes are kept and only the rest is played.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping, Sequence

from coadapt.android_env.device import Device
from coadapt.android_env.errors import ConfigError
from coadapt.android_env.pool import DevicePool
from coadapt.explore.curiosity import episode_fields
from coadapt.policy.base import Policy
from coadapt.rollout import RolloutRunner, RolloutSettings, TaskCard, Trajectory
from coadapt.rollout.runner import EpisodeHosts, ProgressFn
from coadapt.runs import EpisodeRow, RunStore
from coadapt.tasks.base import TaskTemplate
from coadapt.tasks.suite import Suite


@dataclass(frozen=True)
class EvalConfig:
    """Settings of an evaluation run."""

    suite: str = "smoke"
    """Suite YAML file, or the name of a bundled suite (smoke, seen, unseen, all)."""
    k: int = 1
    """Attempts per instance; pass@k is reported when k > 1."""
    space: str = "eval"
    """Seed space of the instances (eval is disjoint from adapt and pretrain)."""

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"k must be at least 1, got {self.k}")


class GroundTruth:
    """The evaluation scorer: the task instance's own checker (AndroidWorld's rule: success
    counts only when the agent declared done, or infeasible for infeasible tasks)."""

    def __init__(self, templates: Mapping[str, TaskTemplate]):
        self.templates = dict(templates)

    def __call__(self, card: TaskCard, traj: Trajectory, device: Device) -> float:
        return float(self.templates[card.key].evaluate(device, traj.declared, traj.answer))


def suite_tasks(suite: Suite, space: str = "eval") -> tuple[list[TaskCard], dict[str, TaskTemplate]]:
    """The suite's instances in `space`: their cards, and key -> task instance (for ground truth)."""
    templates = {spec.key: spec.build() for spec in suite.instances(space)}
    return [TaskCard.from_template(t, key) for key, t in templates.items()], templates


def evaluate_cards(cards: Sequence[TaskCard], templates: Mapping[str, TaskTemplate], policy: Policy,
                   devices: Sequence[Device] | DevicePool | None, store: RunStore, *, k: int = 1, phase: str = "eval",
                   round: int | None = None, settings: RolloutSettings = RolloutSettings(),
                   progress: ProgressFn | None = None, adapter: str | None = None,
                   hosts: EpisodeHosts | None = None) -> dict[str, Any]:
    """Play every (card, attempt) of (phase, round) not yet finished in `store`, score each by
    ground truth, and return the report over all of them (earlier runs' episodes too). With
    `hosts`, the episodes are played (and scored) on the hosts' devices instead of `devices`."""
    runner = RolloutRunner(devices, policy, store, scorer=GroundTruth(templates), settings=settings, adapter=adapter,
                           annotate=episode_fields, hosts=hosts)
    result = runner.run(cards, k=k, round=round, phase=phase, progress=progress, keep=False)
    report = build_report(store, [c.key for c in cards], policy.name, k=k, phase=phase, round=round, lost=result.lost)
    health = hosts if hosts is not None else runner.pool
    assert health is not None
    report["device_recoveries"] = health.recoveries
    report["devices_retired"] = health.retired
    return report


def run_suite(suite: Suite, policy: Policy, devices: Sequence[Device] | DevicePool | None, store: RunStore, *,
              k: int = 1, space: str = "eval", settings: RolloutSettings = RolloutSettings(),
              progress: ProgressFn | None = None, templates: Mapping[str, TaskTemplate] | None = None,
              adapter: str | None = None, hosts: EpisodeHosts | None = None) -> dict[str, Any]:
    """Evaluate every instance of `suite` (see `evaluate_cards`); the report names the suite.
    `templates` are the suite's instances when the caller built them already (`suite_tasks`)."""
    if templates is None:
        cards, templates = suite_tasks(suite, space)
    else:
        cards = [TaskCard.from_template(t, key) for key, t in templates.items()]
    report = evaluate_cards(cards, templates, policy, devices, store, k=k, settings=settings,
                            progress=progress, adapter=adapter, hosts=hosts)
    return {"suite": suite.name, "seed_space": space, **report}


def newest_finished(rows: Iterable[EpisodeRow], keys: Collection[str] | None = None, k: int = 1) -> list[EpisodeRow]:
    """The finished rows of `rows` (of `keys`, all when None; attempts below `k`), one per (phase,
    round, key, attempt), the newest, in id order: a store written before the one-writer lock may
    hold several finished rows for one attempt, and each attempt counts once."""
    newest: dict[tuple, EpisodeRow] = {}
    for r in rows:
        if r.status == "finished" and (keys is None or r.key in keys) and r.attempt < k:
            ident = (r.phase, r.round, r.key, r.attempt)
            if ident not in newest or r.id > newest[ident].id:
                newest[ident] = r
    return sorted(newest.values(), key=lambda r: r.id)


def build_report(store: RunStore, keys: Sequence[str], policy: str, *, k: int, phase: str = "eval",
                 round: int | None = None, lost: Sequence[str] = ()) -> dict[str, Any]:
    """Success rates and the rest, from the scored episodes in the store. An episode without a
    ground-truth score (none was computed) is counted apart, never as a failure. Each
    (phase, round, key, attempt) counts once, by its newest finished row, whatever the store holds."""
    rows = [r for r in store.episodes(phase=phase) if r.policy == policy and r.round == round]
    wanted = set(keys)
    done = newest_finished(rows, wanted, k)
    scored = [r for r in done if r.success is not None]
    infra = [r for r in rows if r.status == "infra_error" and r.key in wanted]
    by_key: dict[str, list[float]] = defaultdict(list)
    for r in scored:
        by_key[r.key].append(r.success)

    def group(keyfn) -> dict[str, dict[str, float]]:
        acc: dict[str, list] = defaultdict(list)
        for r in scored:
            acc[keyfn(r)].append(r)
        return {name: {"n": len(rs), "success_rate": sum(x.success for x in rs) / len(rs),
                       "mean_steps": sum(x.steps for x in rs) / len(rs)} for name, rs in sorted(acc.items())}

    total_steps = sum(r.steps for r in scored)
    report: dict[str, Any] = {
        "policy": policy,
        "n_instances": len(by_key),
        "n_episodes": len(scored),
        "unscored_episodes": len(done) - len(scored),
        "k": k,
        "success_rate": (sum(r.success for r in scored) / len(scored)) if scored else 0.0,
        "per_task": group(lambda r: r.task),
        "per_app": group(lambda r: r.app),
        "mean_steps": total_steps / len(scored) if scored else 0.0,
        "env_steps": total_steps,
        "invalid_action_rate": (sum(r.invalid_steps for r in scored) / total_steps) if total_steps else 0.0,
        "declared": {d: sum(1 for r in scored if r.declared == d) for d in ("done", "infeasible", None)},
        "infra_errors": len(infra),
        "lost_instances": sorted(set(lost)),
    }
    rated = [r for r in scored if r.wandering is not None]
    if rated:
        report["wandering_rate"] = sum(r.wandering for r in rated) / len(rated)
        report["information_rate"] = sum(r.informative or 0.0 for r in rated) / len(rated)
    report["declared"] = {str(k_) if k_ else "step_limit": v for k_, v in report["declared"].items()}
    if k > 1:
        report["pass_at_k"] = (sum(1 for v in by_key.values() if max(v) >= 1.0) / len(by_key)) if by_key else 0.0
    return report
