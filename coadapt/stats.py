"""Paired comparison of two evaluations of the same instances: the gain with its uncertainty.

Base and adapted success are measured on the same eval instances, so the gain is a paired
difference. Instances of one template share their difficulty, so the interval resamples whole
templates (a cluster bootstrap) rather than single episodes, which would be too narrow. The
interval covers which instances were drawn, not the adaptation's own randomness: for that,
repeat the run at other seeds (`adapt.seed`).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

BOOTSTRAP_SAMPLES = 4000


def template_of(key: str) -> str:
    """The template of an instance key (`template#space3` -> `template`)."""
    return key.split("#", 1)[0]


def by_template(base: Mapping[str, float], other: Mapping[str, float]) -> dict[str, list[float]]:
    """Template -> [instances, base successes, other successes] over the instances both evaluated."""
    acc: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for key in sorted(set(base) & set(other)):
        row = acc[template_of(key)]
        row[0] += 1
        row[1] += base[key]
        row[2] += other[key]
    return dict(sorted(acc.items()))


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test (McNemar's exact test) on the discordant pairs."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def bootstrap_gains(groups: Sequence[Sequence[Sequence[float]]], samples: int = BOOTSTRAP_SAMPLES,
                    seed: int = 0) -> list[float]:
    """Cluster-bootstrap replicates of the mean gain over `groups` (one per app, each a list of
    per-template [n, base successes, other successes]): templates are resampled within each
    group, each group's gain is its resampled success difference, and the groups are averaged."""
    rng = random.Random(seed)
    out = []
    for _ in range(samples):
        total = 0.0
        for rows in groups:
            picks = [rows[rng.randrange(len(rows))] for _ in rows]
            n = sum(p[0] for p in picks)
            total += (sum(p[2] - p[1] for p in picks) / n) if n else 0.0
        out.append(total / len(groups))
    return out


def interval(replicates: Iterable[float], level: float = 0.95) -> list[float]:
    """Percentile interval of bootstrap replicates."""
    xs = sorted(replicates)
    lo = xs[int(math.floor((1 - level) / 2 * (len(xs) - 1)))]
    hi = xs[int(math.ceil((1 + level) / 2 * (len(xs) - 1)))]
    return [round(lo, 4), round(hi, 4)]


def paired(base: Mapping[str, float], other: Mapping[str, float], *, seed: int = 0) -> dict[str, Any]:
    """Gain of `other` over `base` on the instances both evaluated: the difference, instances
    won and lost, the sign test's p-value, and a 95 % template-cluster bootstrap interval
    (`by_template` holds what a mean over apps needs to resample)."""
    keys = sorted(set(base) & set(other))
    wins = sum(1 for k in keys if other[k] > base[k])
    losses = sum(1 for k in keys if other[k] < base[k])
    rows = by_template(base, other)
    result: dict[str, Any] = {"instances": len(keys), "templates": len(rows), "wins": wins, "losses": losses,
                              "p_value": round(sign_test_p(wins, losses), 4)}
    if keys:
        result["gain"] = round(sum(other[k] - base[k] for k in keys) / len(keys), 4)
        result["ci95"] = interval(bootstrap_gains([list(rows.values())], seed=seed))
    result["by_template"] = rows
    return result


def describe(c: Mapping[str, Any]) -> str:
    """One line for a `paired(...)` result that has an interval: the interval, instances won and lost."""
    return (f"95% CI {c['ci95'][0]:+.3f} to {c['ci95'][1]:+.3f}, won {c['wins']}, lost {c['losses']} "
            f"of {c['instances']} instances")


def mean_interval(comparisons: Sequence[Mapping[str, Any]], *, seed: int = 0) -> list[float] | None:
    """95 % interval of the mean gain over apps, from each app's `paired(...)` result (templates
    resampled within each app; apps are independent)."""
    groups = [list(c["by_template"].values()) for c in comparisons if c.get("by_template")]
    if not groups or len(groups) != len(comparisons):
        return None
    return interval(bootstrap_gains(groups, seed=seed))
