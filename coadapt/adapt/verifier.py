"""The verifier: p(success) of an attempt from what the agent saw and did, never from app state.

Two judges, combined:

* `FeatureJudge`: observation checks (the goal's entities typed and shown on the final screen,
  the screen changed, `done` declared, no error text, an answer grounded in a screen) fed to a
  logistic model fitted on SEEN apps' episodes, labelled by their checkers (the way UI-Genie trains
  its reward model). Rebuilt by `coadapt verifier train`; weights ship in judge_weights.json.
* `ModelJudge`: a VLM asked about the attempt's claim (done, impossible, an answer) over the goal,
  the attempt's actions and the last screen, sampled k times and voted. Unparseable answers
  abstain; they never count as "no".

A verdict is p(success) in [0, 1], or None ("no label") when no judge could say.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from coadapt.android_env.actions import Type
from coadapt.android_env.errors import ConfigError
from coadapt.android_env.observation import Observation
from coadapt.rollout.episode import Trajectory

WEIGHTS_FILE = Path(__file__).with_name("judge_weights.json")

_QUOTED = re.compile(r"[\"“”']([^\"“”']{1,60})[\"“”']")
_NUMBER = re.compile(r"\$?\d+(?:[.,:]\d+)*%?")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_ERROR_WORDS = re.compile(r"\b(error|invalid|required|cannot be empty|can't be empty|failed|try again)\b", re.I)


def goal_entities(goal: str) -> list[str]:
    """The specific things a goal names: quoted text, numbers (amounts, times) and capitalised
    words inside the sentence (names, categories). Lower-cased, in order, without repeats."""
    found = [m.group(1) for m in _QUOTED.finditer(goal)]
    rest = _QUOTED.sub(" ", goal)
    for m in _NUMBER.finditer(rest):
        found.append(m.group(0).lstrip("$").rstrip("%"))
    words = _WORD.findall(_NUMBER.sub(" ", rest))
    found += [w for i, w in enumerate(words) if i > 0 and w[0].isupper()]
    out: list[str] = []
    for e in found:
        e = e.strip().lower()
        if e and e not in out:
            out.append(e)
    return out


def screen_texts(obs: Observation, editable: bool | None = None) -> list[str]:
    """Lower-cased texts and descriptions on a screen (only editable or only fixed ones if asked)."""
    out = []
    for e in obs.tree:
        if editable is not None and e.editable != editable:
            continue
        for t in (e.text, e.content_desc):
            if t:
                out.append(t.lower())
    return out


def _found(entity: str, texts: Sequence[str]) -> bool:
    return any(entity in t for t in texts)


def _checked(obs: Observation) -> dict[str, bool]:
    return {(e.text or e.content_desc or e.resource_id): e.checked for e in obs.tree if e.checkable}


FEATURES = ("bias", "done", "infeasible", "step_limit", "entities_final", "entities_new", "entities_typed",
            "entities_fixed", "no_entities", "changed", "editable_final", "error_text", "steps_used",
            "invalid_share", "answer", "answer_grounded", "toggled", "last_effective", "done_unchanged",
            "done_x_entities", "done_x_new", "done_x_changed")


def as_infeasible_claim(x: Sequence[float]) -> list[float]:
    """The check values of the same attempt had it ended by declaring the task infeasible (same
    screens, same actions): what `observation_checks` gives with `declared == "infeasible"`."""
    out = list(x)
    for name, value in (("done", 0.0), ("infeasible", 1.0), ("step_limit", 0.0), ("done_unchanged", 0.0),
                        ("done_x_entities", 0.0), ("done_x_new", 0.0), ("done_x_changed", 0.0)):
        out[FEATURES.index(name)] = value
    return out


@dataclass(frozen=True)
class Checks:
    """Observation checks of one attempt (each in [0, 1]) and the progress score they imply."""

    values: dict[str, float]
    progress: float
    """How much of the goal visibly happened: the share of goal entities entered or newly shown."""

    def vector(self) -> list[float]:
        return [self.values[f] for f in FEATURES]


def observation_checks(traj: Trajectory) -> Checks:
    """Everything the verifier reads, computed from the trajectory's screens and actions only."""
    obs = traj.observations
    first, last = obs[0], obs[-1]
    ents = goal_entities(traj.goal)
    fixed_final = screen_texts(last, editable=False)
    all_final = screen_texts(last)
    first_texts = screen_texts(first)
    typed = " ".join(s.action.text.lower() for s in traj.steps if isinstance(s.action, Type))
    n = max(1, len(ents))
    in_final = [e for e in ents if _found(e, all_final)]
    new = [e for e in in_final if not _found(e, first_texts)]
    typed_hits = [e for e in ents if e in typed]
    # Shown as fixed text (a saved row, a label), and not already on the first screen: an entity the
    # app showed from the start (its own name, a preset category) is context, not evidence.
    fixed = [e for e in new if _found(e, fixed_final)]
    seen_texts = [t for o in obs for t in screen_texts(o)]
    answer = (traj.answer or "").strip().lower()
    changed = set(all_final) != set(first_texts) or first.package != last.package
    before_done = obs[-2] if len(obs) >= 2 else first
    acts = [s for s in traj.steps if s.action.__class__.__name__ not in ("Done", "Infeasible")]
    last_effective = 0.0
    if acts:
        i = traj.steps.index(acts[-1])
        after = traj.steps[i + 1].obs if i + 1 < len(traj.steps) else last
        last_effective = float(screen_texts(after) != screen_texts(traj.steps[i].obs))
    before_checked, after_checked = _checked(first), _checked(last)
    toggled = any(before_checked.get(k) is not None and before_checked[k] != v for k, v in after_checked.items())
    values = {
        "bias": 1.0,
        "done": float(traj.declared == "done"),
        "infeasible": float(traj.declared == "infeasible"),
        "step_limit": float(traj.declared is None),
        "entities_final": len(in_final) / n,
        "entities_new": len(new) / n,
        "entities_typed": len(typed_hits) / n,
        "entities_fixed": len(fixed) / n,
        "no_entities": float(not ents),
        "changed": float(changed),
        "editable_final": float(any(e.editable for e in last.tree)),
        "error_text": float(any(_ERROR_WORDS.search(t) for t in all_final)),
        "steps_used": min(1.0, len(traj.steps) / max(1, traj.card.max_steps)),
        "invalid_share": traj.n_invalid / max(1, len(traj.steps)),
        "answer": float(bool(answer)),
        "answer_grounded": float(bool(answer) and (_found(answer, seen_texts) or bool(_NUMBER.fullmatch(answer)))),
        "toggled": float(toggled),
        "last_effective": last_effective,
        "done_unchanged": float(traj.declared == "done" and screen_texts(before_done) == first_texts),
    }
    done = values["done"]
    values.update({"done_x_entities": done * values["entities_fixed"], "done_x_new": done * values["entities_new"],
                   "done_x_changed": done * values["changed"]})
    progress = (sum(max(e in typed_hits, e in new, e in fixed) for e in ents) / n) if ents else float(changed)
    return Checks(values, progress)


@dataclass(frozen=True)
class Verdict:
    """The verifier's word on one attempt."""

    p: float | None
    """p(success), or None: no judge could say (never read as a failure)."""
    progress: float
    """Share of the goal that visibly happened (reward shaping; not a success signal)."""
    votes: tuple[tuple[str, int, float], ...] = ()
    """(judge, sample, vote) for the run store."""
    checks: dict[str, float] = field(default_factory=dict)


class FeatureJudge:
    """Logistic model over `observation_checks` (weights fitted on seen apps)."""

    name = "features"

    def __init__(self, weights: Sequence[float] | None = None):
        self.weights = list(self.load(WEIGHTS_FILE) if weights is None else weights)

    @staticmethod
    def load(path: Path) -> list[float]:
        """The weights in a file written by `coadapt verifier train` (clear error when it is not one)."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"cannot read judge weights at {path} ({e}); run `coadapt verifier train`") from None
        if not isinstance(data, dict) or data.get("features") != list(FEATURES) \
                or len(data.get("weights") or ()) != len(FEATURES):
            raise ConfigError(f"{path} holds no judge weights for these features; run `coadapt verifier train`")
        return [float(w) for w in data["weights"]]

    def p(self, checks: Checks) -> float:
        return self.p_vector(checks.vector())

    def p_vector(self, x: Sequence[float]) -> float:
        """p(success) of a feature vector in FEATURES order."""
        z = sum(w * v for w, v in zip(self.weights, x))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


JudgeFn = Callable[[Trajectory, int], "Sequence[float | None]"]
"""A model judge: (trajectory, k) -> k votes in [0, 1], None where the answer was unreadable."""


class Verifier:
    """Combines the feature judge with an optional model judge (mean of the judges that spoke).
    With `judge_infeasible` off, an attempt that declared the task infeasible gets no label:
    nothing on its screens can show a task is impossible."""

    def __init__(self, features: FeatureJudge | None = None, model_judge: JudgeFn | None = None, votes: int = 4,
                 judge_infeasible: bool = True):
        self.features = features
        self.model_judge = model_judge
        self.votes = votes
        self.judge_infeasible = judge_infeasible

    def __call__(self, traj: Trajectory) -> Verdict:
        checks = observation_checks(traj)
        if traj.declared == "infeasible" and not self.judge_infeasible:
            return Verdict(None, checks.progress, (), checks.values)
        opinions: list[float] = []
        record: list[tuple[str, int, float]] = []
        if self.features is not None:
            p = self.features.p(checks)
            opinions.append(p)
            record.append(("features", 0, p))
        if self.model_judge is not None:
            raw = list(self.model_judge(traj, self.votes))
            votes = [v for v in raw if v is not None]
            record += [("model", i, v) for i, v in enumerate(raw) if v is not None]
            if len(votes) * 2 >= len(raw) and votes:  # most samples readable: the vote counts
                opinions.append(sum(votes) / len(votes))
        p_all = sum(opinions) / len(opinions) if opinions else None
        return Verdict(p_all, checks.progress, tuple(record), checks.values)


def fit_logistic(x: Sequence[Sequence[float]], y: Sequence[float], *, l2: float = 1e-3, steps: int = 20000,
                 lr: float = 1.0) -> list[float]:
    """Weights of an L2-regularised logistic regression (full-batch gradient descent, numpy)."""
    import numpy as np

    X = np.asarray(x, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    w = np.zeros(X.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(X @ w, -30, 30)))
        grad = X.T @ (p - Y) / len(Y) + l2 * np.r_[0.0, w[1:]]
        w -= lr * grad
    return [float(v) for v in w]


def judge_prompt(goal: str, declared: str | None = "done", answer: str | None = None) -> str:
    """What a VLM judge is asked about the final screen. The question is about the claim the agent
    made: a task it declared impossible is judged on that claim, an answer on its correctness."""
    asked = f'An agent was asked: "{goal}". The screenshot shows the phone after it stopped'
    if declared == "infeasible":
        return (asked + ", saying this app cannot do the task. Is that right: does the app offer no way to do it? "
                "Answer yes or no.")
    if answer:
        return asked + f', answering "{answer}". Is that answer correct? Answer yes or no.'
    return asked + ". Was the task completed? Answer yes or no."


def read_vote(text: str) -> float | None:
    """1.0 for a yes, 0.0 for a no, None when the answer says neither (it abstains)."""
    t = text.strip().lower()
    yes = re.search(r"\b(yes|completed|done|success(ful)?|true)\b", t)
    no = re.search(r"\b(no|not|failed|incomplete|false)\b", t)
    if yes and not no:
        return 1.0
    if no and not yes:
        return 0.0
    if yes and no:
        return 1.0 if yes.start() < no.start() else 0.0
    return None


class ModelJudge:
    """A VLM policy used as a judge: the question about the goal in the goal's place, the final
    screen as the screenshot, the attempt's actions as the history, k sampled answers read as
    yes / no / abstain."""

    def __init__(self, policy: "object"):
        self.policy = policy

    def __call__(self, traj: Trajectory, k: int) -> list[float | None]:
        from coadapt.policy.prompt import PolicyInput, history_entry
        from coadapt.rollout.cards import step_seed

        final = traj.observations[-1]
        actions = tuple(history_entry(s.action) for s in traj.steps)
        question = PolicyInput(final, judge_prompt(traj.goal, traj.declared, traj.answer), actions)
        gens = self.policy.generate([question] * k, seeds=[step_seed(traj.seed, 10_000 + i) for i in range(k)])
        return [read_vote(g.text) for g in gens]
