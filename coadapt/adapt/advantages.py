"""Advantages: episode-level estimators (GRPO, RLOO, REINFORCE++, self-imitation) and reverse-turn
credit that ties each turn to what followed it.

Turn credit walks an attempt backwards from its end: the last turns carry the outcome, earlier
ones a discounted share. A turn that changed nothing on screen or came back to a screen already
seen (ABSeeker's redundancy) gets no positive credit; a turn that revealed an element a later turn
acted on (information gathered and used) keeps full credit wherever it sits.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from coadapt.android_env.actions import Done, Infeasible
from coadapt.android_env.observation import Observation
from coadapt.rollout.episode import Trajectory

EPS = 1e-6


def screen_state(obs: Observation) -> tuple:
    """What counts as 'the same screen' for redundancy: package and every text/checked state."""
    return (obs.package, tuple((e.class_name, e.text, e.content_desc, e.checked) for e in obs.tree))


@dataclass(frozen=True)
class TurnFacts:
    """Per turn of an attempt: did it change the screen to one not seen before, and did it
    reveal an element that a later turn acted on."""

    effective: tuple[bool, ...]
    used: tuple[bool, ...]

    @property
    def wandering(self) -> float:
        """Share of turns that revealed nothing new and led to nothing used."""
        n = len(self.effective)
        return sum(1 for e, u in zip(self.effective, self.used) if not e and not u) / n if n else 0.0


def turn_facts(traj: Trajectory) -> TurnFacts:
    obs = traj.observations
    seen = {screen_state(obs[0])}
    effective, revealed = [], []
    for t, step in enumerate(traj.steps):
        after = obs[t + 1] if t + 1 < len(obs) else obs[t]
        if isinstance(step.action, (Done, Infeasible)):
            effective.append(True)
            revealed.append(set())
            continue
        state = screen_state(after)
        effective.append(not step.info.invalid and state not in seen)
        seen.add(state)
        before_labels = {e.label for e in step.obs.elements}
        revealed.append({e.label for e in after.elements if e.label} - before_labels)
    used = [False] * len(traj.steps)
    for t2, step in enumerate(traj.steps):
        el = step.info.element
        if el is None or not el.label:
            continue
        for t in range(t2 - 1, -1, -1):  # the latest earlier turn that revealed it
            if el.label in revealed[t]:
                used[t] = True
                break
    return TurnFacts(tuple(effective), tuple(used))


def turn_weights(facts: TurnFacts, positive: bool, discount: float) -> list[float]:
    """Reverse-turn credit weights in [0, 1] for an attempt whose advantage has the given sign."""
    n = len(facts.effective)
    out = []
    for t in range(n):
        w = discount ** (n - 1 - t)
        if facts.used[t]:
            w = 1.0
        if positive and not facts.effective[t] and not facts.used[t]:
            w = 0.0
        out.append(w)
    return out


def episode_advantages(rewards: Sequence[float], groups: Sequence[str], objective: str) -> list[float | None]:
    """One advantage per attempt (None: no signal, e.g. a group whose rewards are all equal).

    grpo: (r - group mean) / group std. rloo: r - mean of the group's other attempts.
    reinforce_pp: r - group mean, then divided by the std over the whole batch.
    sft: 1 for attempts with reward >= 1 (accepted positives), else None.
    """
    by: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by[g].append(i)
    out: list[float | None] = [None] * len(rewards)
    if objective == "sft":
        return [1.0 if r >= 1.0 else None for r in rewards]
    for idx in by.values():
        rs = [rewards[i] for i in idx]
        if len(rs) < 2 or max(rs) - min(rs) < EPS:
            continue
        mean = sum(rs) / len(rs)
        std = math.sqrt(sum((r - mean) ** 2 for r in rs) / len(rs))
        for i in idx:
            if objective == "grpo":
                out[i] = (rewards[i] - mean) / (std + EPS)
            elif objective == "rloo":
                out[i] = rewards[i] - (sum(rs) - rewards[i]) / (len(rs) - 1)
            elif objective == "reinforce_pp":
                out[i] = rewards[i] - mean
            else:
                raise ValueError(f"unknown objective {objective!r}; valid: grpo, rloo, reinforce_pp, sft")
    if objective == "reinforce_pp":
        vals = [a for a in out if a is not None]
        if vals:
            m = sum(vals) / len(vals)
            sd = math.sqrt(sum((a - m) ** 2 for a in vals) / len(vals))
            out = [None if a is None else a / (sd + EPS) for a in out]
    return out


def step_advantages(advantage: float, facts: TurnFacts, *, turn_credit: bool, discount: float) -> list[float]:
    """An attempt's advantage spread over its turns (uniformly without turn credit)."""
    if not turn_credit:
        return [advantage] * len(facts.effective)
    return [advantage * w for w in turn_weights(facts, advantage > 0, discount)]
