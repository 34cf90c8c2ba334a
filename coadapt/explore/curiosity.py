"""Curiosity terms for rollouts: count-based novelty, information gain, and a hindsight term that
pays for information later used and charges for wandering.

ScreenExplorer found that paying for any screen change breeds wandering, so novelty and
information gain are small and the hindsight term decides: at the end of an episode each step is
classed by what became of what it revealed.

  * informative — it revealed a label (an element, a menu entry, a value) that a later step acted
    on (tapped, typed into) or that the final answer quotes: paid;
  * unused — it revealed labels, none of them ever used: charged a little;
  * wandering — it revealed nothing and changed nothing that lasted: a no-op, a revisit of an
    earlier state (back-and-forth, loops): charged;
  * acting — anything else (typing, submitting, the final `done`): neutral.

No ground truth is read: only the trees the agent saw and the actions it took.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from coadapt.android_env.actions import Done, Infeasible, Type
from coadapt.android_env.observation import Observation
from coadapt.rollout.episode import Trajectory

from .screens import label_words, normalise, screen_facts

INFORMATIVE, UNUSED, WANDERING, ACTING = "informative", "unused", "wandering", "acting"


@dataclass(frozen=True)
class CuriosityWeights:
    """How much each term weighs in a step's curiosity reward (config: adapt.curiosity_*)."""

    novelty: float = 0.05
    """Times 1/sqrt(visits) of the screen reached (visits counted over the whole run)."""
    info_gain: float = 0.05
    """Paid once for a step that revealed at least one new label."""
    used: float = 0.5
    """Hindsight bonus of an informative step."""
    unused: float = 0.1
    """Hindsight charge of a step whose findings were never used."""
    wandering: float = 0.3
    """Charge of a wandering step."""


@dataclass
class VisitCounts:
    """Screen visit counts shared across the episodes of a run (count-based novelty)."""

    counts: Counter = field(default_factory=Counter)

    def novelty(self, key: str) -> float:
        return 1.0 / math.sqrt(1 + self.counts[key])

    def add(self, key: str) -> None:
        self.counts[key] += 1


@dataclass(frozen=True)
class StepCuriosity:
    """One step's curiosity analysis."""

    kind: str
    """informative, unused, wandering or acting."""
    revealed: tuple[str, ...]
    used: tuple[str, ...]
    novelty: float
    reward: float


@dataclass(frozen=True)
class EpisodeCuriosity:
    steps: tuple[StepCuriosity, ...]

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.steps]

    def rate(self, kind: str) -> float:
        n = len(self.steps)
        return sum(1 for s in self.steps if s.kind == kind) / n if n else 0.0

    @property
    def wandering_rate(self) -> float:
        """Share of steps that revealed nothing new and made no progress."""
        return self.rate(WANDERING)

    @property
    def information_rate(self) -> float:
        """Share of steps whose findings a later step used."""
        return self.rate(INFORMATIVE)


def episode_fields(traj: Trajectory) -> dict[str, float]:
    """The run store's curiosity columns of a finished episode (a RolloutRunner `annotate` hook)."""
    cur = analyse(traj)
    return {"curiosity": round(sum(cur.rewards), 4), "wandering": round(cur.wandering_rate, 4),
            "informative": round(cur.information_rate, 4)}


def _target_label(step) -> str:
    el = step.info.element
    if el is not None and el.label:
        return normalise(el.label)
    idx = getattr(step.action, "index", None)
    if idx is not None and 0 <= idx < len(step.obs.elements):
        return normalise(step.obs.elements[idx].label)
    return ""


def analyse(traj: Trajectory | Sequence, weights: CuriosityWeights = CuriosityWeights(),
            visits: VisitCounts | None = None, final_obs: Observation | None = None,
            answer: str | None = None) -> EpisodeCuriosity:
    """Classify and reward every step of an episode (a Trajectory, or a list of StepRecords
    with `final_obs` given). `visits` is updated with the screens reached."""
    if isinstance(traj, Trajectory):
        steps, final_obs, answer = traj.steps, traj.final_obs, traj.answer
    else:
        steps = list(traj)
    if not steps:
        return EpisodeCuriosity(())
    obs = [s.obs for s in steps] + [final_obs if final_obs is not None else steps[-1].obs]
    facts = [screen_facts(o.tree) for o in obs]
    known = set(facts[0].labels)
    seen_states = {facts[0].fine_key}
    revealed: list[set[str]] = []
    lasting: list[bool] = []
    for t in range(len(steps)):
        after = facts[t + 1]
        new = set(after.labels) - known
        known |= after.labels
        revealed.append(new)
        lasting.append(after.fine_key not in seen_states)
        seen_states.add(after.fine_key)
    # what each step used: the label it acted on, and words of the final answer
    targets = [_target_label(s) for s in steps]
    answer_words = label_words(answer or "")
    out: list[StepCuriosity] = []
    for t, step in enumerate(steps):
        used = {lab for lab in revealed[t] if any(lab == targets[j] for j in range(t + 1, len(steps)))}
        if answer_words:
            used |= {lab for lab in revealed[t] if label_words(lab) and label_words(lab) <= answer_words}
        action = step.action
        if used:
            kind = INFORMATIVE
        elif isinstance(action, (Done, Infeasible, Type)):
            kind = ACTING
        elif revealed[t]:
            kind = UNUSED
        elif not lasting[t] or step.info.invalid:
            kind = WANDERING
        else:
            kind = ACTING
        key = facts[t + 1].key
        nov = visits.novelty(key) if visits is not None else 0.0
        if visits is not None:
            visits.add(key)
        reward = weights.novelty * nov + (weights.info_gain if revealed[t] else 0.0)
        reward += {INFORMATIVE: weights.used, UNUSED: -weights.unused, WANDERING: -weights.wandering}.get(kind, 0.0)
        out.append(StepCuriosity(kind, tuple(sorted(revealed[t])), tuple(sorted(used)), nov, reward))
    return EpisodeCuriosity(tuple(out))
