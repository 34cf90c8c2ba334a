"""Fit the verifier's feature judge on SEEN apps: the bundled policy's own attempts, labelled by
the seen apps' checkers (never an unseen app, never an eval instance: pretrain seed space).

    coadapt verifier train --per-template 6     # ~5 minutes on 2 cores; writes judge_weights.json
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any, Callable

from coadapt.adapt.verifier import (FEATURES, WEIGHTS_FILE, FeatureJudge, as_infeasible_claim, fit_logistic,
                                    observation_checks)
from coadapt.adaptation import instances
from coadapt.android_env.actions import Action, Done
from coadapt.android_env.observation import Observation
from coadapt.android_env.errors import ConfigError
from coadapt.apps import SEEN_APPS
from coadapt.config import ModelSettings
from coadapt.evaluation import GroundTruth
from coadapt.policy.base import Decision
from coadapt.rollout import RolloutRunner, RolloutSettings, TaskCard
from coadapt.runs import RunStore
from coadapt.tasks.registry import templates_for_app


NEW_APP_BASE_RATE = 0.05
"""Success rate of a policy on an app it never saw, at which precision is also stated: the
development model's base success on Contacts, the seen app it was pretrained without. The judge's
own rows succeed far more often (about 0.38), and a threshold's false positives weigh that much
more where successes are rare."""


def seen_tasks(per_template: int, seed: int) -> dict[str, Any]:
    """key -> task instance for every seen-app template, in the pretrain seed space."""
    return {key: task for app in SEEN_APPS for key, task in instances(app, "pretrain", seed + 7919, per_template).items()}


def train_judge(per_template: int = 6, seed: int = 0, temperatures: tuple[float, ...] = (1.0, 0.0), workers: int = 2,
                out: Path = WEIGHTS_FILE, rows_file: Path | None = None,
                progress: Callable[[str, dict], None] | None = None, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """Play seen-app tasks with the bundled policy (sampled and greedy), label each attempt by its
    checker, fit the logistic judge, write its weights; returns fit and held-out quality.
    `rows_file` keeps the labelled checks (each attempt's screens reduced to its check values):
    given and present, the fit reuses them instead of playing again. `leave_out` names seen apps
    whose attempts the fit does not use (a judge for a development model that never trained on
    them, docs/adapt.md); the rows file keeps every app's."""
    from coadapt.demos import seen_packages

    left_out = seen_packages(leave_out) if leave_out else ()  # ConfigError for an unseen or unknown app
    about: dict[str, Any] = {"per_template": per_template, "seed": seed, "temperatures": list(temperatures)}
    if rows_file is not None and rows_file.is_file():
        saved = json.loads(rows_file.read_text())
        if saved.get("features") != list(FEATURES):
            raise ConfigError(f"{rows_file} holds checks of other features; delete it to play the attempts again")
        rows = [(r["x"], r["y"], r["key"]) for r in saved["rows"]]
        about = saved.get("about", about)
    else:
        rows = collect_rows(per_template, seed, temperatures, workers, progress)
        if rows_file is not None:
            rows_file.write_text(json.dumps({"features": list(FEATURES), "about": about,
                                             "rows": [{"x": x, "y": y, "key": k} for x, y, k in rows]}))
    if left_out:
        apps = app_of_template()
        rows = [r for r in rows if apps.get(r[2].split("#")[0]) not in left_out]
        about = {**about, "left_out": list(left_out)}
    return fit_and_write(rows, out, **about)


def collect_rows(per_template: int, seed: int, temperatures: tuple[float, ...], workers: int,
                 progress: Callable[[str, dict], None] | None = None) -> list[tuple[list[float], float, str]]:
    """(check values, ground-truth success, instance key) of the bundled policy's seen-app attempts."""
    from coadapt.config import DeviceSettings
    from coadapt.wiring import build_policy, build_pool

    tasks = seen_tasks(per_template, seed)
    cards = [TaskCard.from_template(t, k) for k, t in tasks.items()]
    rows: list[tuple[list[float], float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for temp in temperatures:
            agents = build_policy(ModelSettings(), temperature=temp)
            store = RunStore(Path(tmp) / f"t{temp}", screens="none")
            runner = RolloutRunner(build_pool(DeviceSettings(workers=workers, seed=seed)), agents, store,
                                   scorer=GroundTruth(tasks), settings=RolloutSettings(run_seed=seed, store_trees=False))
            res = runner.run(cards, k=1, phase="judge", progress=progress)
            for (key, _), traj in res.trajectories.items():
                rows.append((observation_checks(traj).vector(), float(traj.score or 0.0), key))
            # Hard negatives (and the odd positive): each attempt cut short and ended with `done`,
            # the shortcut a policy under adaptation finds first; labelled by the checker like the rest.
            rng = random.Random(seed)
            plans = {f"{key}~cut": [s.action for s in traj.steps[: rng.randint(1, len(traj.steps) - 1)]]
                     for (key, _), traj in res.trajectories.items() if len(traj.steps) >= 2}
            cut_tasks = {k: tasks[k.removesuffix("~cut")] for k in plans}
            cut_cards = [TaskCard.from_template(t, k) for k, t in cut_tasks.items()]
            runner = RolloutRunner(build_pool(DeviceSettings(workers=workers, seed=seed)), ReplayPolicy(plans), store,
                                   scorer=GroundTruth(cut_tasks), settings=RolloutSettings(store_trees=False))
            res = runner.run(cut_cards, k=1, phase="judge_cut", progress=progress)
            for (key, _), traj in res.trajectories.items():
                rows.append((observation_checks(traj).vector(), float(traj.score or 0.0), key))
            store.close()
    return rows


class ReplayPolicy:
    """Replays a fixed list of actions per card key, then declares done."""

    name = "replay"

    def __init__(self, plans: dict[str, list[Action]]):
        self.plans = plans

    def start(self, card: TaskCard, seed: int) -> "_Replay":
        return _Replay(list(self.plans[card.key]))


class _Replay:
    def __init__(self, actions: list[Action]):
        self.actions = actions

    def act(self, obs: Observation) -> Decision:
        return Decision(self.actions.pop(0) if self.actions else Done())


def fit_and_write(rows: list[tuple[list[float], float, str]], out: Path, folds: int = 4,
                  thresholds: tuple[float, ...] = (0.75, 0.85, 0.9, 0.95), **about: Any) -> dict[str, Any]:
    """Fit on all rows and write the weights; quality is measured by cross-validation over
    templates (each fold's templates never seen by its fit) and over apps (each app held out in
    turn), at each acceptance threshold."""
    templates = [k.split("#")[0] for _, _, k in rows]
    names = sorted(set(templates))
    scored = held_out_scores(rows, templates, [set(names[f::folds]) for f in range(folds)])
    quality = {str(t): judge_quality(scored, t) for t in thresholds}
    w_all = fit_logistic([x for x, _, _ in rows], [y for _, y, _ in rows])
    data = {"features": list(FEATURES), "weights": w_all, "episodes": len(rows),
            "positives": int(sum(y for _, y, _ in rows)), "cut_short": sum("~cut" in k for _, _, k in rows), **about,
            "quality_on_held_out_templates": quality,
            "quality_on_held_out_apps": held_out_app_quality(rows, thresholds),
            "infeasible_claims": infeasible_claim_quality(rows, [set(names[f::folds]) for f in range(folds)])}
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def infeasible_claim_quality(rows: list[tuple[list[float], float, str]], held_sets: list[set[str]],
                             threshold: float = 0.85, kinds: dict[str, str] | None = None) -> dict[str, Any]:
    """How the judge (fitted on the real attempts, templates held out) scores claims of infeasibility
    when they are made everywhere: every attempt that did not declare infeasible is also scored as
    if it had. The labels are exact by the checkers' rule: such a claim succeeds iff the task is of
    the infeasible kind. An adapting policy can make these claims anywhere; the real attempts alone
    hold only the bundled policy's claims, which it makes where they are right."""
    kinds = {t.name: t.kind for app in SEEN_APPS for t in templates_for_app(app)} if kinds is None else kinds
    i_inf = FEATURES.index("infeasible")
    template = lambda k: k.split("#")[0]  # noqa: E731
    claims = [(x, y, k) for x, y, k in rows if x[i_inf] == 1.0]
    claims += [(as_infeasible_claim(x), float(kinds.get(template(k)) == "infeasible"), k)
               for x, _, k in rows if x[i_inf] != 1.0 and template(k) in kinds]
    scored: list[tuple[float, float]] = []
    for held in held_sets:
        train = [(x, y) for x, y, k in rows if template(k) not in held]
        judge = FeatureJudge(fit_logistic([x for x, _ in train], [y for _, y in train]))
        scored += [(judge.p_vector(x), y) for x, y, k in claims if template(k) in held]
    right = [p for p, y in scored if y == 1.0]
    wrong = [p for p, y in scored if y == 0.0]
    auc = (sum((a > b) + 0.5 * (a == b) for a in right for b in wrong) / (len(right) * len(wrong))
           if right and wrong else None)
    accepted = [y for p, y in scored if p >= threshold]
    return {"claims": len(scored), "right": len(right), "real_claims": sum(1 for x, _, _ in rows if x[i_inf] == 1.0),
            "auc": None if auc is None else round(auc, 4), "threshold": threshold, "accepted": len(accepted),
            "accepted_right": int(sum(accepted)),
            "precision": round(sum(accepted) / len(accepted), 4) if accepted else None}


def app_of_template() -> dict[str, str]:
    """Template name -> the seen app it belongs to."""
    return {t.name: app for app in SEEN_APPS for t in templates_for_app(app)}


def held_out_app_quality(rows: list[tuple[list[float], float, str]], thresholds: tuple[float, ...],
                         apps: dict[str, str] | None = None) -> dict[str, Any]:
    """Quality when each app is held out of the fit in turn (leave one app out): the judge meets
    unseen apps, so this, not the held-out-templates figure, is the estimate of its transfer.
    Rows whose template belongs to no known app form one group of their own."""
    apps = app_of_template() if apps is None else apps
    group = [apps.get(k.split("#")[0], "?") for _, _, k in rows]
    held = [{g} for g in sorted(set(group))] if len(set(group)) > 1 else []
    scored = held_out_scores(rows, group, held)
    return {str(t): judge_quality(scored, t) for t in thresholds}


def held_out_scores(rows: list[tuple[list[float], float, str]], group: list[str],
                    held_sets: list[set[str]]) -> list[tuple[float, float, bool]]:
    """(p, label, cut short) of every row in each held-out set of groups, scored by a judge fitted
    on the rows of all other groups."""
    scored: list[tuple[float, float, bool]] = []
    for held in held_sets:
        train = [(x, y) for (x, y, _), g in zip(rows, group) if g not in held]
        judge = FeatureJudge(fit_logistic([x for x, _ in train], [y for _, y in train]))
        scored += [(judge.p_vector(x), y, "~cut" in k) for (x, y, k), g in zip(rows, group) if g in held]
    return scored


def judge_quality(scored: list[tuple[float, float, bool]], threshold: float, low: float = 0.25,
                  base_rate: float = NEW_APP_BASE_RATE) -> dict[str, Any]:
    """Precision and recall of confident positives (p >= threshold) and of confident negatives;
    and the precision the same true- and false-positive rates give where only `base_rate` of the
    attempts succeed (an app the policy never saw)."""
    pos = [y for p, y, _ in scored if p >= threshold]
    neg = [y for p, y, _ in scored if p <= low]
    total_pos = sum(y for _, y, _ in scored)
    failures = len(scored) - total_pos
    tpr = sum(pos) / total_pos if total_pos else 0.0
    fpr = (len(pos) - sum(pos)) / failures if failures else 0.0
    at_rate = tpr * base_rate / (tpr * base_rate + fpr * (1 - base_rate)) if tpr or fpr else None
    return {"n": len(scored), "success_rate": round(total_pos / max(1, len(scored)), 4),
            "accepted_positive": len(pos), "precision": round(sum(pos) / len(pos), 4) if pos else None,
            "recall": round(sum(pos) / total_pos, 4) if total_pos else None,
            "false_positive_rate": round(fpr, 4) if failures else None,
            "base_rate": base_rate, "precision_at_base_rate": round(at_rate, 4) if at_rate is not None else None,
            "cut_short_accepted": sum(c for p, _, c in scored if p >= threshold),
            "accepted_negative": len(neg), "negative_precision": round(1 - sum(neg) / len(neg), 4) if neg else None}
