"""Step-level grounding of a policy: along the oracle's own path through each task instance, the
share of states where the greedy policy writes exactly the oracle's action (teacher forcing).

Episode success hides where a chain breaks; this shows it per action kind. It uses ground truth
(the oracle's scripted solutions), so like the ceiling it is a report-side measurement, computed
after adaptation and never part of the method.
"""

from __future__ import annotations

import collections
from typing import Any, Mapping

from coadapt.adapt.loop import greedy
from coadapt.android_env.device import Device
from coadapt.android_env.env import AndroidEnv
from coadapt.apps import label_map
from coadapt.ceiling import oracle_walk
from coadapt.policy.agent import VLMAgentPolicy
from coadapt.policy.prompt import PolicyInput
from coadapt.rollout.runner import compact_obs
from coadapt.tasks.base import TaskTemplate

KINDS = ("tap", "type", "scroll", "done", "other")
"""Action kinds reported apart (`other`: back, swipe, long_press, infeasible, open_app, ...)."""


def action_kind(action_text: str) -> str:
    """The kind of an action as the policy writes it (`tap "Save"` -> "tap")."""
    word = action_text.split(" ", 1)[0]
    return word if word in KINDS else "other"


def step_grounding(agents: VLMAgentPolicy, device: Device, tasks: Mapping[str, TaskTemplate]) -> dict[str, Any]:
    """Teacher-forced accuracy of `agents` (greedy, with its app memory) on `tasks`, played on
    `device`: overall, on each instance's first step, and per action kind ([hits, steps])."""
    policy = agents.policy
    hits: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    first = [0, 0]
    with greedy(agents):
        for card, i, obs, history, target in oracle_walk(AndroidEnv(device, label_map()), tasks,
                                                         policy.config.prompt.style):
            inp = PolicyInput(compact_obs(obs), card.goal, history, agents.memory.get(card.app, ""))
            ok = policy.generate([inp])[0].text.strip() == target.strip()
            kind = action_kind(target)
            total[kind] += 1
            hits[kind] += ok
            if i == 0:
                first[0] += ok
                first[1] += 1
    n = sum(total.values())
    return {"steps": n, "accuracy": round(sum(hits.values()) / n, 4) if n else None,
            "first_step": round(first[0] / first[1], 4) if first[1] else None,
            "by_kind": {k: [hits[k], total[k]] for k in KINDS if total[k]}}
