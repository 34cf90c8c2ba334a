"""Hindsight relabelling: the goal an attempt actually achieved, so a failure can teach as a success.

Two sources, both judged by the same verifier as any attempt, so a relabel is a positive only
when the screens show it:
* sibling goals: another goal of the adaptation set whose entities the final screen shows;
* rewritten goals: the attempt's goal with a quoted entity it missed replaced by text the attempt
  itself typed and that now shows on the final screen (it entered "Lunch" where "Dinner" was asked).
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Callable, Sequence

from coadapt.android_env.actions import Type
from coadapt.rollout.cards import TaskCard
from coadapt.rollout.episode import Trajectory

from .verifier import Verdict, screen_texts

_QUOTED = re.compile(r"([\"“])([^\"“”]{1,60})([\"”])")


def relabelled(traj: Trajectory, goal: str, source: str = "relabel") -> Trajectory:
    """The same attempt told as an attempt at `goal`."""
    out = copy.copy(traj)
    tag = hashlib.blake2b(goal.encode(), digest_size=4).hexdigest()
    out.card = traj.card.replace(goal=goal, key=f"{traj.card.key}~{tag}", source=source)
    return out


def rewritten_goals(traj: Trajectory) -> list[str]:
    """The goal with one quoted entity swapped for text the attempt typed and left on screen."""
    final = screen_texts(traj.observations[-1], editable=False)
    first = screen_texts(traj.observations[0])
    made = []
    for s in traj.steps:
        if isinstance(s.action, Type):
            t = s.action.text.strip()
            low = t.lower()
            if t and any(low in x for x in final) and not any(low in x for x in first) and t not in made:
                made.append(t)
    goals = []
    for m in _QUOTED.finditer(traj.goal):
        if any(m.group(2).lower() in x for x in final):
            continue
        for t in made:
            if t.lower() not in traj.goal.lower():
                goals.append(traj.goal[: m.start(2)] + t + traj.goal[m.end(2) :])
    return goals


def relabel(traj: Trajectory, siblings: Sequence[TaskCard], judge: Callable[[Trajectory], Verdict],
            threshold: float) -> tuple[Trajectory, Verdict] | None:
    """The first relabelling of `traj` that the verifier accepts as a success (p >= threshold)."""
    candidates = rewritten_goals(traj) + [c.goal for c in siblings if c.goal != traj.goal and c.app == traj.card.app]
    for goal in dict.fromkeys(candidates):
        other = relabelled(traj, goal)
        verdict = judge(other)
        if verdict.p is not None and verdict.p >= threshold:
            return other, verdict
    return None
