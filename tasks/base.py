"""Task templates with AndroidWorld's lifecycle, and the oracle helpers that solve them.

A template is a parameterised family of tasks ("Create a note titled {title}"). An instance is
a template with sampled parameters: `Template.from_seed(seed)`. Its lifecycle:

    task = NotesAddNote.from_seed(1234)     # sample_params + initial state, deterministic
    obs = env.reset(task)                   # device.reset(); task.setup(device)
    ... the agent acts ...
    score = task.evaluate(device, declared, answer)   # ground truth: never during adaptation

`is_successful` reads app state through `device.read_app_state` (never pixels). `evaluate`
adds AndroidWorld's rule: success counts only if the agent declared done (or, for infeasible
tasks, declared infeasible). `solve` is the oracle: a generator of ordinary UI actions that
reacts to each new observation (`OracleCtx.obs`), used to prove every task solvable and to
make demonstrations on seen apps.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generator, Mapping

from coadapt.android_env.actions import (
    Action, Back, Done, Enter, Infeasible, LongPress, OpenApp, Scroll, Swipe, Tap, Type,
)
from coadapt.android_env.device import Device
from coadapt.android_env.errors import TaskError
from coadapt.android_env.observation import Observation
from coadapt.android_env.uitree import UiElement

KINDS = ("entry", "edit", "delete", "toggle", "navigation", "search", "retrieval", "multi", "infeasible")
Solution = Generator[Action, None, None]


class TaskTemplate:
    """Base class of task templates. Subclasses set the class attributes and implement
    `sample_params`, `initial_state`, `is_successful` and `solve`."""

    name: ClassVar[str]
    """Unique name, e.g. "NotesAddNote"."""
    app: ClassVar[str]
    """Package of the app the task is about (and the app it starts in)."""
    template: ClassVar[str]
    """The goal with `{param}` placeholders."""
    params: ClassVar[Mapping[str, str]] = {}
    """The parameter schema: name -> what it is."""
    kind: ClassVar[str] = "entry"
    """One of KINDS."""
    complexity: ClassVar[int] = 1
    """Rough difficulty, 1 (one or two actions) to 5 (long multi-step)."""
    max_steps: ClassVar[int] = 15
    """Step limit of an episode."""
    start_in_app: ClassVar[bool] = True
    """Launch `app` in setup; otherwise the episode starts on the home screen."""

    def __init__(self, params: Mapping[str, Any], seed: int = 0):
        missing = set(self.params) - set(params)
        extra = set(params) - set(self.params)
        if missing or extra:
            raise TaskError(f"{self.name}: parameters {sorted(params)} do not match the schema {sorted(self.params)}")
        self.values: dict[str, Any] = dict(params)
        self.seed = seed
        self._states: dict[str, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_seed(cls, seed: int) -> "TaskTemplate":
        """The instance for `seed`: parameters and initial app state both follow from it."""
        rng = random.Random(seed)
        return cls(cls.sample_params(rng), seed=seed)

    @classmethod
    def sample_params(cls, rng: random.Random) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def goal(self) -> str:
        return self.template.format(**self.values)

    def __repr__(self) -> str:
        return f"{self.name}(seed={self.seed}, {self.values})"

    # ------------------------------------------------------------------ lifecycle

    def initial_state(self, rng: random.Random) -> dict[str, dict[str, Any]]:
        """App states to install before the episode: package -> state (read_app_state shape).
        Called once per instance with an rng seeded from the instance seed."""
        return {}

    def states(self) -> dict[str, dict[str, Any]]:
        """The instance's initial app states (computed once, deterministic)."""
        if self._states is None:
            self._states = self.initial_state(random.Random(self.seed * 7919 + 17))
        return self._states

    def setup(self, device: Device) -> None:
        """Install the initial app states and open the app (the device was just reset)."""
        for package, state in self.states().items():
            device.write_app_state(package, state)
        if self.start_in_app:
            device.launch(self.app)

    def is_successful(self, device: Device, answer: str | None) -> float:
        """1.0 if the goal is met, judged from app state (and the answer for retrieval tasks)."""
        raise NotImplementedError

    def evaluate(self, device: Device, declared: str | None, answer: str | None) -> float:
        """Ground-truth success: the goal is met AND the agent ended the episode the right way."""
        if self.kind == "infeasible":
            return 1.0 if declared == "infeasible" else 0.0
        if declared != "done":
            return 0.0
        return float(self.is_successful(device, answer))

    def solve(self, o: "OracleCtx") -> Solution:
        """The oracle: yield UI actions; `o.obs` is the observation after the last one."""
        raise NotImplementedError
        yield  # pragma: no cover

    # ------------------------------------------------------------------ helpers for subclasses

    def state_of(self, device: Device, package: str | None = None) -> dict[str, Any]:
        return device.read_app_state(package or self.app)


# --------------------------------------------------------------------------- answers


def normalize_answer(text: str | None) -> str:
    """Lower-case, trimmed, inner whitespace collapsed, trailing punctuation dropped."""
    if text is None:
        return ""
    t = re.sub(r"\s+", " ", text.strip().lower())
    return t.strip(string.punctuation + " ")


def answer_matches(answer: str | None, expected: str | float | int) -> bool:
    """Compare an answer with the expected value: numbers numerically, text normalised."""
    got = normalize_answer(answer)
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        nums = re.findall(r"-?\d+(?:\.\d+)?", got.replace(",", ""))
        return len(nums) == 1 and abs(float(nums[0]) - float(expected)) < 1e-6
    want = normalize_answer(str(expected))
    return got == want or (len(want) > 2 and got.startswith(want) and len(got) <= len(want) + 12)


# --------------------------------------------------------------------------- oracle helpers


@dataclass
class OracleCtx:
    """What an oracle sees: the current observation, and helpers that turn an element
    description into an action on it. Finding nothing raises TaskError (an oracle bug)."""

    obs: Observation
    app_labels: Mapping[str, str] = field(default_factory=dict)

    def find(
        self,
        *,
        text: str | None = None,
        desc: str | None = None,
        label: str | None = None,
        rid: str | None = None,
        contains: str | None = None,
        cls: str | None = None,
        nth: int = 0,
    ) -> int | None:
        """Index in `obs.elements` of the nth element matching every given criterion.
        `label` matches text or content-desc; `rid` matches the id after ":id/"."""
        hits = []
        for i, e in enumerate(self.obs.elements):
            if text is not None and e.text != text:
                continue
            if desc is not None and e.content_desc != desc:
                continue
            if label is not None and label not in (e.text, e.content_desc):
                continue
            if rid is not None and not e.resource_id.endswith(f":id/{rid}") and e.resource_id != rid:
                continue
            if contains is not None and contains.lower() not in (e.text + " " + e.content_desc).lower():
                continue
            if cls is not None and e.short_class != cls and e.class_name != cls:
                continue
            hits.append(i)
        return hits[nth] if len(hits) > nth else None

    def has(self, **kw: Any) -> bool:
        return self.find(**kw) is not None

    def element(self, **kw: Any) -> UiElement:
        return self.obs.elements[self.index(**kw)]

    def index(self, **kw: Any) -> int:
        i = self.find(**kw)
        if i is None:
            seen = "; ".join(self.obs.describe_elements(40))
            raise TaskError(f"oracle: no element {kw} on screen ({self.obs.package}); elements: {seen}")
        return i

    def tap(self, **kw: Any) -> Tap:
        return Tap(index=self.index(**kw))

    def long_press(self, **kw: Any) -> LongPress:
        return LongPress(index=self.index(**kw))

    def type(self, text: str, clear: bool = False, **kw: Any) -> Type:
        """Type into the element matching `kw`, or into the focused field when `kw` is empty."""
        if not kw:
            return Type(text, clear=clear)
        return Type(text, index=self.index(**kw), clear=clear)

    def swipe(self, direction: str, **kw: Any) -> Swipe:
        return Swipe(direction, index=self.index(**kw))  # type: ignore[arg-type]

    def back(self) -> Back:
        return Back()

    def enter(self) -> Enter:
        return Enter()

    def open_app(self, label: str) -> OpenApp:
        return OpenApp(label)

    def done(self, answer: str | None = None) -> Done:
        return Done(answer)

    def infeasible(self) -> Infeasible:
        return Infeasible()

    def scroll_to(self, direction: str = "down", max_scrolls: int = 12, **kw: Any) -> Solution:
        """Scroll the main list until an element matching `kw` is on screen."""
        for _ in range(max_scrolls):
            if self.has(**kw):
                return
            before = [e.label for e in self.obs.elements]
            yield Scroll(direction)  # type: ignore[arg-type]
            if [e.label for e in self.obs.elements] == before:
                break
        if not self.has(**kw):
            raise TaskError(f"oracle: scrolled {direction} but never found {kw}")
