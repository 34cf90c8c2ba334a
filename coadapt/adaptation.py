"""The `coadapt adapt` job: task cards in the adapt seed space, the adapt loop behind the
ground-truth firewall, then (outside it) the before/after report on fresh eval instances.

Ground truth enters only after adaptation and only here: base and adapted success on the app's
*eval* instances, and the verifier's precision/recall measured by replaying the accepted
attempts on a fresh phone and asking their checkers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from coadapt.adapt.gate import ACCEPTED_POSITIVE
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import CoadaptError, ConfigError
from coadapt.apps import app_class, label_map
from coadapt.config import CoadaptConfig, to_dict
from coadapt.evaluation import GroundTruth, build_report, newest_finished
from coadapt.explore.curiosity import episode_fields
from coadapt.rollout import RolloutRunner, TaskCard
from coadapt.rollout.runner import EpisodeHosts
from coadapt.runs import RunStore
from coadapt.stats import paired
from coadapt.tasks.base import TaskTemplate
from coadapt.tasks.registry import templates_for_app
from coadapt.tasks.suite import instance_seed
from coadapt.totals import AdaptClock, JobTotals, peak_rss_mb

ProgressFn = Callable[[str, dict[str, Any]], None]

ABLATIONS: dict[str, dict[str, Any]] = {
    "no_gate": {"gate": False},
    "no_turn_credit": {"turn_credit": False},
    "no_relabel": {"relabel": False},
    "rloo": {"objective": "rloo"},
    "reinforce_pp": {"objective": "reinforce_pp"},
    "sft": {"objective": "sft"},
    "no_curiosity": {"curiosity": False},
    "no_proposals": {"proposals": 0},
    "memory": {"memory": True},
    "memory_only": {"memory": True, "update": False},
}
"""Variants run by --ablations: each changes one AdaptConfig field of the default."""


def ablation_config(cfg: CoadaptConfig, name: str) -> CoadaptConfig:
    """`cfg` with ablation `name`'s one change."""
    return dataclasses.replace(cfg, adapt=dataclasses.replace(cfg.adapt, **ABLATIONS[name]))


def ablation_folder(run: Path, name: str) -> Path:
    """Where ablation `name` of the run in `run` adapts."""
    return run / "ablations" / name


def instances(app: str, space: str, seed: int, per_template: int) -> dict[str, TaskTemplate]:
    """key -> task instance for every template of `app`, `per_template` each, in seed space `space`."""
    out = {}
    for t in templates_for_app(app):
        for i in range(per_template):
            out[f"{t.name}#{space}{i}"] = t.from_seed(instance_seed(space, seed, t.name, i))
    return out


def adapt_cards(app: str, seed: int, per_template: int) -> tuple[list[TaskCard], list[TaskCard]]:
    """Cards to adapt on, and one held-out card per template for the keep-or-roll-back check
    (all in the adapt seed space; only their goal text and set-up reach the loop)."""
    built = instances(app, "adapt", seed, per_template + 1)
    cards = [TaskCard.from_template(t, key) for key, t in built.items()]
    check = [c for c in cards if c.key.endswith(f"adapt{per_template}")]
    return [c for c in cards if c not in check], check


def replay_success(card: TaskCard, task: TaskTemplate, actions: list, device, declared, answer) -> float:
    """Ground truth of a stored attempt, after the fact: replay its actions on a fresh phone
    (simulated phones are deterministic per seed) and ask the instance's checker."""
    env = AndroidEnv(device, app_names=label_map())
    env.reset(card, seed=card.device_seed)
    for a in actions:
        res = env.step(a)
        if res.terminated or res.truncated:
            break
    return float(task.evaluate(device, declared, answer))


def run_adapt_job(app: str, cfg: CoadaptConfig, out: Path, *, report: bool = True, base: bool = True,
                  ablations: bool = False, ceiling: bool = False, progress: ProgressFn | None = None,
                  hosts: EpisodeHosts | None = None) -> dict[str, Any]:
    """Adapt to `app`; with `report`, evaluate the adapted policy (and with `base` the base policy,
    before adapting) by ground truth on the app's eval instances. With `hosts` (Ray), rollouts,
    evaluations and the exploration run on the hosts' devices; this process stays the learner."""
    say = progress or (lambda e, d: None)
    package = app_class(app).package
    if cfg.model.model in ("oracle", "random"):
        raise ConfigError(f"adapt needs a model policy to update, not {cfg.model.model!r}")
    existed, fresh = out.exists(), not (out / "run.db").exists()
    store = RunStore(out, screens=cfg.devices.screens)
    try:
        return _run(app, package, cfg, out, store, report=report, base=base, ablations=ablations, ceiling=ceiling,
                    say=say, hosts=hosts)
    except CoadaptError:
        if fresh and store.holds_nothing():  # e.g. a mistyped --model: the corrected command may reuse --out
            store.close()
            store.remove(folder_too=not existed)
        raise
    finally:
        store.close()


def _run(app: str, package: str, cfg: CoadaptConfig, out: Path, store: RunStore, *, report: bool, base: bool,
         ablations: bool, ceiling: bool, say: ProgressFn, hosts: EpisodeHosts | None) -> dict[str, Any]:
    identity = {"app": package, "model": cfg.model.model, "adapter": cfg.model.adapter, "adapt": to_dict(cfg.adapt)}
    store.claim("adapt", identity)  # before any total is saved: a refused resume leaves the folder as it was
    store.write_json("config.json", {"kind": "adapt", **identity, "config": to_dict(cfg)})
    totals = JobTotals(store, "adapt_job_totals")  # a resumed or re-run job reports every process's
    with totals.saved_on_error():  # Ctrl+C or a crash keeps the time spent for the resumed run's budget
        return _job(app, package, cfg, out, store, totals, report=report, base=base, ablations=ablations,
                    ceiling=ceiling, say=totals.ticking(say), hosts=hosts)


def _job(app: str, package: str, cfg: CoadaptConfig, out: Path, store: RunStore, totals: JobTotals, *,
         report: bool, base: bool, ablations: bool, ceiling: bool, say: ProgressFn,
         hosts: EpisodeHosts | None) -> dict[str, Any]:
    from coadapt.adapt.loop import adapt
    from coadapt.adapt.verifier import FeatureJudge, ModelJudge, Verifier
    from coadapt.policy.agent import VLMAgentPolicy
    from coadapt.wiring import build_policy, build_pool, rollout_settings

    a = cfg.adapt
    agents = build_policy(cfg.model, temperature=a.temperature)
    assert isinstance(agents, VLMAgentPolicy)
    pool = build_pool(cfg.devices)
    settings = rollout_settings(cfg.devices)
    model_judge = ModelJudge(agents.policy) if cfg.model.model != "default" and a.judge_votes else None
    features = FeatureJudge(FeatureJudge.load(Path(a.judge_weights)) if a.judge_weights else None)
    verifier = Verifier(features, model_judge, votes=a.judge_votes, judge_infeasible=a.judge_infeasible)
    train_cards, check_cards = adapt_cards(package, a.seed, a.instances_per_template)
    eval_tasks = instances(package, "eval", a.seed, a.eval_instances)
    eval_cards = [TaskCard.from_template(t, k) for k, t in eval_tasks.items()]
    result: dict[str, Any] = {"app": package, "model": cfg.model.model, "run_folder": str(out),
                              "adapt_cards": len(train_cards), "check_cards": len(check_cards),
                              "eval_cards": len(eval_cards), "config": to_dict(a)}

    def evaluate(phase: str, who: VLMAgentPolicy | None = None) -> dict[str, Any]:
        from coadapt.adapt.loop import greedy

        who = who or agents
        say("eval", {"phase": phase, "total": len(eval_cards)})
        runner = RolloutRunner(pool, who, store, scorer=GroundTruth(eval_tasks), settings=settings,
                               annotate=episode_fields, hosts=hosts)
        with greedy(who):
            res = runner.run(eval_cards, k=1, phase=phase, keep=False,
                             progress=lambda e, d: say("episode" if e == "episode" else "eval_start", d))
        rep = build_report(store, [c.key for c in eval_cards], who.name, k=1, phase=phase, lost=res.lost)
        return {k: rep[k] for k in ("success_rate", "n_episodes", "per_task", "mean_steps", "env_steps",
                                    "invalid_action_rate", "declared", "infra_errors", "wandering_rate",
                                    "information_rate") if k in rep}

    def grounding(who: VLMAgentPolicy | None = None) -> dict[str, Any]:
        """Teacher-forced step accuracy on the first `grounding_instances` eval instances per template."""
        from coadapt.grounding import step_grounding

        tasks = instances(package, "eval", a.seed, min(a.grounding_instances, a.eval_instances))  # eval_tasks' first
        with pool.lease() as slot:
            return step_grounding(who or agents, slot.device, tasks)

    # ------------------------------------------------------------------ before (ground truth, no adapter yet)
    if report and base:
        result["base"] = evaluate("eval_base")
        if a.grounding_instances:
            result["base"]["grounding"] = grounding()
    rss = {"after_base_eval": round(peak_rss_mb(), 1)}

    # ------------------------------------------------------------------ adaptation (no ground truth)
    clock = AdaptClock(store)
    totals.also(clock)  # saved with the job's totals, exploration included
    proposals, base_card = explore_for_adapt(package, a, pool, out / "explore", agents, say, hosts=hosts)
    explore_s = store.get_meta("explore_wall_clock_s")
    if explore_s is None:  # explored now, not reloaded from an earlier process
        explore_s = round(clock.this_process(), 1)
        store.set_meta("explore_wall_clock_s", explore_s)
    result["explore"] = {"proposals": len(proposals), "wall_clock_s": explore_s,
                         "memory_lines": len(agents.memory.get(package, "").splitlines())}
    summary = adapt(agents, pool, store, train_cards, check_cards, a, verifier, out_dir=out, settings=settings,
                    progress=say, proposals=proposals if a.proposals else (), proposal_base=base_card,
                    spent_s=clock.spent(), hosts=hosts)
    result["adapt_wall_clock_s"] = round(clock.spent(), 1)  # every process of a resumed run, not only this one
    result["rounds"] = [{k: v for k, v in r.items() if k not in ("verifier", "visits")} for r in summary["rounds"]]
    result["adapter"] = summary["adapter"]
    rss["after_adaptation"] = round(peak_rss_mb(), 1)
    result["env_steps"] = sum(r.get("env_steps", 0) for r in summary["rounds"])

    # ------------------------------------------------------------------ after (ground truth, for the report only)
    if report:
        result["adapted"] = evaluate("eval_adapted")
        if a.grounding_instances:
            result["adapted"]["grounding"] = grounding()
        rss["after_adapted_eval"] = round(peak_rss_mb(), 1)
        if base:
            result["gain"] = round(result["adapted"]["success_rate"] - result["base"]["success_rate"], 4)
            result["comparison"] = {"adapted": compare(store, "eval_adapted", a.seed)}
        result["verifier"] = verifier_quality(store, summary, train_cards, package, a.seed, a.instances_per_template)
    if report and ceiling:
        # Reference only: the same number of optimizer steps spent imitating the oracle on the
        # adapt instances, from a fresh adapter (ground truth, after the method has finished).
        from coadapt.ceiling import oracle_samples, train_ceiling

        say("ceiling", {})
        ref = build_policy(cfg.model, temperature=a.temperature)
        assert isinstance(ref, VLMAgentPolicy)
        budget = sum(int(r.get("train_optimizer_steps") or 0) for r in summary["rounds"])
        adapted_on = {c.key for c in train_cards}
        tasks = {k: t for k, t in instances(package, "adapt", a.seed, a.instances_per_template + 1).items()
                 if k in adapted_on}
        trained = train_ceiling(ref, oracle_samples(ref, pool, tasks, settings), a, budget)
        result["ceiling"] = {**evaluate("eval_ceiling", ref), "training": trained}
        if a.grounding_instances:
            result["ceiling"]["grounding"] = grounding(ref)
        if base:
            result["ceiling_gain"] = round(result["ceiling"]["success_rate"] - result["base"]["success_rate"], 4)
            result.setdefault("comparison", {})["ceiling"] = compare(store, "eval_ceiling", a.seed)
    if ablations:
        result["ablations"] = run_ablations(app, cfg, out, progress=say, hosts=hosts, store=store)
    result["wall_clock_s"], result["peak_rss_mb"] = totals.save()  # over every process of the run
    result["peak_rss_mb_by_phase"] = rss  # this process's peak so far, at the end of each phase
    result["disk_mb"] = round(store.disk_bytes() / 2**20, 1)
    store.write_json("report.json", result)
    return result


def eval_outcomes(store: RunStore, phase: str) -> dict[str, float]:
    """Ground-truth success per eval instance key of one eval phase (each attempt counted once)."""
    rows = newest_finished(r for r in store.episodes(phase=phase) if r.round is None)
    return {r.key: float(r.success) for r in rows if r.success is not None}


def compare(store: RunStore, phase: str, seed: int) -> dict[str, Any]:
    """`phase`'s eval against the base eval on the same instances: the gain, instances won and
    lost, the sign test's p-value and a 95 % template-cluster bootstrap interval (coadapt.stats)."""
    return paired(eval_outcomes(store, "eval_base"), eval_outcomes(store, phase), seed=seed)


def default_gain(default: RunStore, variant_folder: Path, seed: int) -> dict[str, Any]:
    """The default run's adapted eval against a variant's (the run in `variant_folder`), paired on
    the instances both evaluated: a gain > 0 means the default beats the variant."""
    with RunStore(variant_folder, readonly=True) as variant:
        return paired(eval_outcomes(variant, "eval_adapted"), eval_outcomes(default, "eval_adapted"), seed=seed)


def explore_card(package: str, seed: int) -> TaskCard:
    """The phone set-up explorations start from: an instance of the app's first template in the
    explore seed space (its data, not its goal)."""
    key, task = next(iter(instances(package, "explore", seed, 1).items()))
    return TaskCard.from_template(task, f"explore/{package}", source="explore")


def explore_for_adapt(package: str, a: Any, pool: Any, out: Path, agents: Any, say: ProgressFn, *,
                      hosts: Any = None) -> tuple[list, TaskCard]:
    """Explore the app before the rounds (or reload a resumed run's exploration): the proposals,
    the card they start from, and the memory set on `agents` when the config shows it. With
    `hosts`, one of them explores and its files are written into `out` here."""
    from coadapt.explore.job import explore_app, load_explored, write_explored

    card = explore_card(package, a.seed)
    if a.explore_steps == 0 or (a.proposals == 0 and not a.memory):
        return [], card
    loaded = load_explored(out)
    if loaded is None:
        say("explore", {"runs": a.explore_runs, "steps": a.explore_steps})
        options = dict(steps=a.explore_steps, runs=a.explore_runs, seed=a.seed, proposals=a.proposals)
        if hosts is not None:
            found, files = hosts.explore(card, options)
            write_explored(out, files)
        else:
            with pool.lease() as slot:
                found = explore_app(slot.device, card, app_names=label_map(), out_dir=out, progress=say, **options)
        loaded = (found.proposals, found.memory)
    proposals, memory = loaded
    if a.memory:
        agents.memory[package] = memory
    return proposals, card


def verifier_quality(store: RunStore, summary: dict[str, Any], cards: list[TaskCard], package: str, seed: int,
                     per_template: int) -> dict[str, Any]:
    """Verifier precision / recall against ground truth on the adapt attempts, by replay (after the fact)."""
    from coadapt.android_env.sim import SimConfig, SimDevice
    from coadapt.apps import make_apps
    from coadapt.android_env.actions import from_dict

    tasks = instances(package, "adapt", seed, per_template + 1)
    by_key = {c.key: c for c in cards}
    device = SimDevice(make_apps(), SimConfig(serial="replay"))
    tp = fp = fn = tn = 0
    by_round: list[dict[str, int]] = []
    for r in summary["rounds"]:
        if r.get("kind") == "consolidate":
            continue
        tp0, fp0 = tp, fp
        for episode_id, p, decision in r.get("verifier", []):
            row = store.episode(episode_id)
            card = by_key.get(row.key)
            if card is None or p is None:
                continue
            card = card.replace(max_steps=max(row.steps, 1))
            actions = [from_dict(s["action"]) for s in store.steps(episode_id)]
            truth = replay_success(card, tasks[row.key], actions, device, row.declared, row.answer) >= 1.0
            said = decision == ACCEPTED_POSITIVE
            tp += said and truth
            fp += said and not truth
            fn += (not said) and truth
            tn += (not said) and not truth
        by_round.append({"round": r["round"], "accepted_positive": tp - tp0 + fp - fp0, "true_positive": tp - tp0})
    return {"accepted_positive": tp + fp, "true_positive": tp, "false_positive": fp, "missed_success": fn,
            "true_negative": tn, "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None, "by_round": by_round}


def run_ablations(app: str, cfg: CoadaptConfig, out: Path, progress: ProgressFn | None = None,
                  hosts: EpisodeHosts | None = None, store: RunStore | None = None) -> dict[str, Any]:
    """Each ablation adapts from scratch in out/ablations/<name> with one field changed; the
    adapted success on the same eval instances is reported (its own base equals the main one).
    With the main run's `store`, each row also has `default_gain`: the default's adapted
    success against the variant's, paired on those instances (> 0: the default beats it)."""
    rows = {}
    for name, change in ABLATIONS.items():
        folder = ablation_folder(out, name)
        rep = run_adapt_job(app, ablation_config(cfg, name), folder, base=False, hosts=hosts)
        rows[name] = {"change": change, "adapted": rep["adapted"]["success_rate"], "env_steps": rep["env_steps"],
                      "rounds": len(rep["rounds"]),
                      "wandering_rate": [r for r in rep["rounds"] if "wandering_rate" in r][-1]["wandering_rate"],
                      "eval_wandering_rate": rep["adapted"].get("wandering_rate"),
                      "step_accuracy": (rep["adapted"].get("grounding") or {}).get("accuracy"),
                      "verifier_precision": rep["verifier"]["precision"]}
        if store is not None:
            rows[name]["default_gain"] = default_gain(store, folder, cfg.adapt.seed)
        if progress:
            progress("ablation", {"name": name, **rows[name]})
    return rows
