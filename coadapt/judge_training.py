"""Fit the verifier's feature judge on SEEN apps: the bundled policy's own attempts, labelled by
the seen apps' checkers (never an unseen app, never an eval instance: pretrain seed space).

    coadapt verifier train --per-template 6     # ~5 minutes on 2 cores; writes judge_weights.json
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Callable

from coadapt.adapt.verifier import (
    FEATURES, WEIGHTS_FILE, FeatureJudge, fit_logistic, has_evidence, observation_checks,
)
from coadapt.adaptation import instances
from coadapt.apps import SEEN_APPS
from coadapt.config import ModelSettings
from coadapt.evaluation import GroundTruth
from coadapt.rollout import RolloutRunner, RolloutSettings, TaskCard
from coadapt.runs import RunStore


def seen_tasks(per_template: int, seed: int) -> dict[str, Any]:
    """key -> task instance for every seen-app template, in the pretrain seed space."""
    return {key: task for app in SEEN_APPS for key, task in instances(app, "pretrain", seed + 7919, per_template).items()}


def train_judge(per_template: int = 6, seed: int = 0, temperatures: tuple[float, ...] = (1.0, 0.0), workers: int = 2,
                out: Path = WEIGHTS_FILE, rows_file: Path | None = None,
                progress: Callable[[str, dict], None] | None = None) -> dict[str, Any]:
    """Play seen-app tasks with the bundled policy (sampled and greedy), label each attempt by its
    checker, fit the logistic judge, write its weights; returns fit and held-out quality.
    `rows_file` keeps the labelled checks (each attempt's screens reduced to its check values):
    given and present, the fit reuses them instead of playing again."""
    if rows_file is not None and rows_file.is_file():
        saved = json.loads(rows_file.read_text())
        rows = [(r["x"], r["y"], r["key"]) for r in saved["rows"]]
    else:
        rows = collect_rows(per_template, seed, temperatures, workers, progress)
        if rows_file is not None:
            rows_file.write_text(json.dumps({"features": list(FEATURES), "rows": [{"x": x, "y": y, "key": k}
                                                                                 for x, y, k in rows]}))
    return fit_and_write(rows, out, per_template=per_template, seed=seed, temperatures=temperatures)


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
            store = RunStore(Path(tmp) / f"t{temp}", save_screens=False)
            runner = RolloutRunner(build_pool(DeviceSettings(workers=workers, seed=seed)), agents, store,
                                   scorer=GroundTruth(tasks), settings=RolloutSettings(run_seed=seed, store_trees=False))
            res = runner.run(cards, k=1, phase="judge", progress=progress)
            for (key, _), traj in res.trajectories.items():
                rows.append((observation_checks(traj).vector(), float(traj.score or 0.0), key))
            store.close()
    return rows


def fit_and_write(rows: list[tuple[list[float], float, str]], out: Path, **about: Any) -> dict[str, Any]:
    """Fit on all rows (and, to measure transfer, on three quarters of the templates), write the weights."""
    # hold out a quarter of the templates to measure transfer to tasks the fit never saw
    names = sorted({k.split("#")[0] for _, _, k in rows})
    held = set(names[::4])
    train = [(x, y) for x, y, k in rows if k.split("#")[0] not in held]
    test = [(x, y) for x, y, k in rows if k.split("#")[0] in held]
    w = fit_logistic([x for x, _ in train], [y for _, y in train])
    quality = {"held_out": judge_quality(w, test), "train": judge_quality(w, train)}
    w_all = fit_logistic([x for x, _, _ in rows], [y for _, y, _ in rows])
    data = {"features": list(FEATURES), "weights": w_all, "episodes": len(rows),
            "positives": int(sum(y for _, y, _ in rows)), **about, "quality": quality}
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def judge_quality(weights: list[float], rows: list[tuple[list[float], float]], threshold: float = 0.75,
                  low: float = 0.25) -> dict[str, Any]:
    """Precision of confident positives, recall, and how many verdicts were confident."""
    judge = FeatureJudge(weights)

    # as the verifier uses it: no confident positive without evidence on the screens
    ps = [(judge.p_vector(x) if has_evidence(dict(zip(FEATURES, x))) else min(0.5, judge.p_vector(x)), y)
          for x, y in rows]
    pos = [y for p, y in ps if p >= threshold]
    neg = [y for p, y in ps if p <= low]
    total_pos = sum(y for _, y in ps)
    return {"n": len(ps), "success_rate": round(total_pos / max(1, len(ps)), 4),
            "accepted_positive": len(pos), "precision": round(sum(pos) / len(pos), 4) if pos else None,
            "recall": round(sum(pos) / total_pos, 4) if total_pos else None,
            "accepted_negative": len(neg), "negative_precision": round(1 - sum(neg) / len(neg), 4) if neg else None}
