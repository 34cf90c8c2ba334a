"""Demonstrations for pretraining: oracle episodes on seen apps, with perturbed states to recover from.

Every sample is one decision: (observation, goal, history of earlier actions) -> the target
action, written as the tiny model's text (`format_action(style="text")`, elements named by their
text). Episodes are oracle runs on task instances from the "pretrain" seed space, so no sample
can come from an evaluation or adaptation instance; only *seen* apps are used (asking for an
unseen app raises ConfigError).

Two perturbations teach the model to recover from states a clean oracle never visits:

* popups: a share of the episodes runs on a phone that shows random system popups
  (permission dialog, "rate this app", a loading spinner). The demonstrator dismisses them
  (`tap "Don't allow"`, `tap "Not now"`, `wait` while "Loading…") and the oracle resumes.
* detours: in a share of the episodes, at one random step, a plausible wrong tap (another
  clickable element than the oracle's) opens a different screen; the sample on that screen is
  labelled `back`, with the wrong tap in its history. A detour is kept only if Back restores the
  same screen (structure, labels) and the same app state; otherwise the episode is replayed
  from its start without it (the simulated phone is deterministic given seed and inputs).

The wrong tap itself is never a training target. An episode whose oracle fails or whose task is
not solved at the end contributes no samples (counted in `DemoStats`).
"""

from __future__ import annotations

import dataclasses
import logging
import random
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

from coadapt.android_env.actions import Action, Back, Done, Tap, Wait
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import ActionError, ConfigError, TaskError
from coadapt.android_env.observation import Observation
from coadapt.android_env.sim import SimConfig, SimDevice
from coadapt.apps import SEEN_APPS, app_class, label_map, make_apps
from coadapt.policy.parser import format_action
from coadapt.policy.prompt import PolicyInput, PromptConfig
from coadapt.tasks.base import OracleCtx, TaskTemplate
from coadapt.tasks.oracle import run_oracle
from coadapt.tasks.registry import TEMPLATES
from coadapt.tasks.suite import instance_seed, seed_space

log = logging.getLogger(__name__)

DEMO_SPACE = "pretrain"
"""Seed space of every demonstration and validation instance (disjoint from eval and adapt)."""
SPLITS = ("train", "val")
"""Instance families inside the pretrain space: demonstrations, and validation episodes."""
SOURCES = ("oracle", "popup", "recovery")
"""Where a sample's target comes from: the oracle, popup dismissal, or Back after a detour."""
EXTRA_STEPS = 12
"""Steps a perturbed episode may take beyond the task's limit (dismissals and detours cost steps)."""
MAX_DETOUR_TRIES = 3
"""Wrong taps tried (each on a fresh replay) before an episode goes without a detour."""
MAX_BACKS = 3
"""Backs a detour may need to restore the screen (a keyboard or a menu closes first)."""


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class DemoConfig:
    """Which demonstrations to make."""

    episodes_per_task: int = 40
    """Oracle episodes (instances) per seen task template."""
    seed: int = 0
    """Suite seed of the instances inside the pretrain seed space; also seeds the perturbations."""
    apps: tuple[str, ...] = ()
    """Packages or launcher labels of the seen apps to use; empty means every seen app."""
    popup_share: float = 0.15
    """Share of episodes (0-1) played on a phone that shows random system popups."""
    popup_rate: float = 0.12
    """In those episodes, chance per input (0-1) that a popup appears."""
    detour_share: float = 0.3
    """Share of episodes (0-1) with one detour (a wrong tap, then Back)."""

    def __post_init__(self) -> None:
        if self.episodes_per_task < 1:
            raise ConfigError(f"episodes_per_task must be at least 1, got {self.episodes_per_task}")
        for name in ("popup_share", "popup_rate", "detour_share"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise ConfigError(f"{name} is a share in [0, 1], got {v}")
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        seen_packages(self.apps)  # raises for unseen or unknown apps


def seen_packages(apps: Iterable[str] = ()) -> tuple[str, ...]:
    """Packages of `apps` (every seen app when empty); ConfigError for an unseen or unknown app."""
    names = tuple(apps)
    if not names:
        return tuple(sorted(SEEN_APPS))
    out = []
    for name in names:
        try:
            package = app_class(name).package
        except KeyError as e:  # AppError
            raise ConfigError(f"{e}; pretraining uses seen apps only: {', '.join(sorted(SEEN_APPS))}") from None
        if package not in SEEN_APPS:
            raise ConfigError(f"{package} is an unseen app (an adaptation target) and never appears in pretraining "
                              f"data; use seen apps only: {', '.join(sorted(SEEN_APPS))}")
        out.append(package)
    return tuple(dict.fromkeys(out))


def seen_templates(apps: Iterable[str] = ()) -> list[type[TaskTemplate]]:
    """Task templates of the seen apps in `apps` (all seen apps when empty), by name."""
    packages = set(seen_packages(apps))
    return [t for name, t in sorted(TEMPLATES.items()) if t.app in packages]


def demo_seed(seed: int, task: str, index: int, split: str = "train") -> int:
    """Seed of instance `index` of `task` for `split` ("train" demonstrations or "val" episodes).

    Always in the pretrain seed space; the split is part of what is hashed, so training and
    validation instances are different families (and `demo_instances` checks they never meet).
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    s = instance_seed(DEMO_SPACE, seed, f"{task}/{split}", index)
    assert seed_space(s) == DEMO_SPACE
    return s


def demo_instances(seed: int, per_task: int, apps: Iterable[str] = (), split: str = "train"
                   ) -> list[TaskTemplate]:
    """Instances of every seen template (`per_task` each) for `split`, task by task."""
    out = []
    for t in seen_templates(apps):
        for i in range(per_task):
            out.append(t.from_seed(demo_seed(seed, t.name, i, split)))
    return out


# --------------------------------------------------------------------------- samples


@dataclass(frozen=True, eq=False)
class Sample:
    """One decision of a demonstration."""

    observation: Observation
    """The screen the action is taken on (names in `target` refer to it)."""
    goal: str
    """The task in words."""
    history: tuple[str, ...]
    """Earlier actions of the episode, oldest first, in the target format."""
    target: str
    """The action to learn, e.g. `tap "Save"` (format_action, text style)."""
    task: str
    """Template name."""
    app: str
    """Package of the task's app (always a seen app)."""
    seed: int
    """Instance seed (pretrain seed space)."""
    source: str
    """"oracle", "popup" (dismissing a system popup) or "recovery" (Back after a detour);
    "+random" is appended on entity-randomised copies (`randomize_entities`)."""
    memory: str = ""
    """Exploration memory of the app shown in the prompt ("" for none)."""

    @property
    def policy_input(self) -> PolicyInput:
        return PolicyInput(self.observation, self.goal, self.history, self.memory)


@dataclass
class DemoStats:
    """Counts over the episodes generated so far."""

    episodes: int = 0
    """Episodes that contributed samples."""
    samples: dict[str, int] = field(default_factory=lambda: {s: 0 for s in SOURCES})
    """Samples by source."""
    popups: int = 0
    """Popups dismissed."""
    detours: int = 0
    """Detours kept (wrong tap, then Back restored the screen)."""
    detours_replayed: int = 0
    """Detours that Back did not undo: the episode was replayed without them."""
    dropped: int = 0
    """Episodes without samples: the oracle failed on a perturbed screen or the task ended unsolved."""
    dropped_tasks: dict[str, int] = field(default_factory=dict)
    """Dropped episodes by template."""

    def merge(self, other: "DemoStats") -> None:
        """Add `other`'s counts (demonstrations made in another process)."""
        self.episodes += other.episodes
        for k, v in other.samples.items():
            self.samples[k] = self.samples.get(k, 0) + v
        self.popups += other.popups
        self.detours += other.detours
        self.detours_replayed += other.detours_replayed
        self.dropped += other.dropped
        for k, v in other.dropped_tasks.items():
            self.dropped_tasks[k] = self.dropped_tasks.get(k, 0) + v

    def to_dict(self) -> dict:
        return {"episodes": self.episodes, "samples": dict(self.samples), "popups": self.popups,
                "detours": self.detours, "detours_replayed": self.detours_replayed, "dropped": self.dropped,
                "dropped_tasks": dict(self.dropped_tasks)}


# --------------------------------------------------------------------------- perturbations


def popup_response(obs: Observation) -> Action | None:
    """How the demonstrator clears a system popup on `obs`, or None when there is none.

    Permission dialog: "Don't allow"; "rate this app": "Not now"; loading spinner: wait.
    """
    labels = [e.text for e in obs.elements]
    if "Loading…" in labels:
        return Wait()
    for button, title in (("Don't allow", "Allow "), ("Not now", "Enjoying ")):
        if button in labels and any(t.startswith(title) and t.endswith("?") for t in labels):
            return Tap(index=labels.index(button))
    return None


def _screen_key(obs: Observation) -> tuple[str, str, tuple[str, ...]]:
    return obs.package, obs.tree.structure_key(), tuple(e.label for e in obs.elements)


def _action_element(action: Action) -> int | None:
    return getattr(action, "index", None)


def _reaches_clickable(obs: Observation, e) -> bool:
    """A tap on `e` lands on something clickable: `e` itself or a container around it."""
    elems = obs.tree.elements
    node = e
    for _ in range(64):
        if node.clickable:
            return True
        if node.parent is None:
            return False
        node = elems[node.parent]
    return False


def detour_candidates(obs: Observation, planned: Action) -> list[int]:
    """Elements a plausible wrong tap may hit: enabled, named, a tap on them reaches something
    clickable, not the planned action's element (nor one of the same name), no text field or
    switch (those change state in place), not the toolbar's up arrow (a Back of its own)."""
    avoid = _action_element(planned)
    avoid_label = obs.elements[avoid].label if avoid is not None and avoid < len(obs.elements) else None
    out = []
    for i, e in enumerate(obs.elements):
        if i == avoid or not e.enabled or e.editable or e.checkable or not _reaches_clickable(obs, e):
            continue
        if not e.label or e.label == avoid_label or e.label in ("Navigate up", "Back"):
            continue
        out.append(i)
    return out


# --------------------------------------------------------------------------- episodes


class _Budgeted:
    """A task with more steps allowed (perturbations cost steps); set-up and goal unchanged."""

    def __init__(self, task: TaskTemplate, extra: int):
        self.task = task
        self.goal = task.goal
        self.max_steps = task.max_steps + extra

    def setup(self, device) -> None:
        self.task.setup(device)


class _Replay(Exception):
    """A detour that Back did not undo: replay the episode (another wrong tap, or none)."""


@dataclass
class _Plan:
    detour_at: int | None
    """Oracle step before which to take the detour (None: no detour)."""


class DemoRecorder:
    """Plays oracle episodes with perturbations on two simulated phones (clean, with popups)."""

    def __init__(self, config: DemoConfig):
        self.config = config
        self.packages = seen_packages(config.apps)
        apps = make_apps(list(self.packages))
        self.env = AndroidEnv(SimDevice(apps, SimConfig(serial="demo-0")), app_names=label_map())
        popup_cfg = SimConfig(serial="demo-1", popups=True, popup_rate=max(config.popup_rate, 1e-9))
        self.popup_env = AndroidEnv(SimDevice(make_apps(list(self.packages)), popup_cfg), app_names=label_map())

    def record(self, task: TaskTemplate, stats: DemoStats | None = None) -> list[Sample]:
        """The samples of one episode of `task` (empty when it was dropped)."""
        if task.app not in SEEN_APPS:
            raise ConfigError(f"{task.name} is about {task.app}, an unseen app; demonstrations use seen apps only")
        if seed_space(task.seed) != DEMO_SPACE:
            raise ConfigError(f"{task!r}: instance seed is in the {seed_space(task.seed)!r} space; demonstrations "
                              f"use the {DEMO_SPACE!r} space only")
        stats = stats if stats is not None else DemoStats()
        cfg = self.config
        rng = random.Random(f"{cfg.seed}/{task.seed}/perturb")
        popups = rng.random() < cfg.popup_share
        detour = rng.random() < cfg.detour_share
        env = self.popup_env if popups else self.env
        plan = _Plan(detour_at=None)
        if detour:
            # Where: a uniform oracle step before the last (a clean run tells the episode's length).
            try:
                n = len(run_oracle(self.env, task, seed=task.seed & 0xFFFFFFFF).steps)
            except TaskError as e:
                log.debug("oracle of %r failed: %s", task, e)
                n = 1
            plan.detour_at = rng.randrange(max(1, n - 1))
        samples: list[Sample] = []
        counts: dict[str, int] = {}
        for attempt in range(MAX_DETOUR_TRIES + 1):
            if attempt == MAX_DETOUR_TRIES:
                plan.detour_at = None  # the last try goes without a detour
            try:
                samples, counts = self._play(env, task, plan, rng)
                break
            except _Replay:
                stats.detours_replayed += 1
            except (TaskError, ActionError) as e:
                log.debug("dropped %r: %s", task, e)
                break
        if not samples:
            stats.dropped += 1
            stats.dropped_tasks[task.name] = stats.dropped_tasks.get(task.name, 0) + 1
            return []
        stats.episodes += 1
        stats.popups += counts["popup"]
        stats.detours += counts["recovery"]
        for s in samples:
            stats.samples[s.source] += 1
        return samples

    # ------------------------------------------------------------------ one play

    def _play(self, env: AndroidEnv, task: TaskTemplate, plan: _Plan, rng: random.Random
              ) -> tuple[list[Sample], dict[str, int]]:
        budget = _Budgeted(task, EXTRA_STEPS)
        device_seed = task.seed & 0xFFFFFFFF
        obs = env.reset(budget, seed=device_seed)
        ctx = OracleCtx(obs, app_labels=env.app_names)
        solution = task.solve(ctx)
        samples: list[Sample] = []
        history: list[str] = []
        counts = {"popup": 0, "recovery": 0}
        ended = False
        oracle_steps = 0

        def emit(o: Observation, action: Action, source: str | None) -> Observation:
            """Take `action` on `o`; record it as a sample unless `source` is None."""
            nonlocal ended
            text = format_action(action, o)
            if source is not None:
                samples.append(Sample(o, task.goal, tuple(history), text, task.name, task.app, task.seed, source))
            history.append(text)
            result = env.step(action)
            if result.info.invalid or result.info.infra_error:
                raise TaskError(f"{text!r} failed on {task!r}: {result.info.error}")
            ended = result.terminated or result.truncated
            return result.observation

        def clear_popups(o: Observation) -> Observation:
            for _ in range(8):
                response = popup_response(o)
                if response is None or ended:
                    return o
                counts["popup"] += 1
                o = emit(o, response, "popup")
            return o

        while not ended:
            obs = clear_popups(obs)
            if ended:
                break
            ctx.obs = obs
            try:
                action = next(solution)
            except StopIteration:
                action = Done()
            if plan.detour_at is not None and oracle_steps == plan.detour_at:
                back = self._detour(env, task, obs, action, rng, emit, counts)
                if back is None:  # nothing plausible to try here: move the detour one step on
                    plan.detour_at += 1
                else:  # the same screen again: the oracle's planned action (an index on `obs`) applies
                    obs = ctx.obs = back
            oracle_steps += 1
            obs = emit(obs, action, "oracle")
        score = task.evaluate(env.device, env.declared, env.answer)
        if score < 1.0:
            raise TaskError(f"{task!r} ended unsolved (score {score})")
        return samples, counts

    def _detour(self, env: AndroidEnv, task: TaskTemplate, obs: Observation, planned: Action, rng: random.Random,
                emit: Callable[[Observation, Action, str | None], Observation], counts: dict[str, int]
                ) -> Observation | None:
        """A wrong tap that opens another screen, then Back (labelled). Returns the screen after
        Back, or None when no wrong tap is plausible here (nothing was done)."""
        if isinstance(planned, Done) or obs.package not in self.packages:
            return None
        candidates = detour_candidates(obs, planned)
        if not candidates:
            return None
        before_state = env.device.read_app_state(task.app)
        wrong = Tap(index=rng.choice(candidates))
        away = emit(obs, wrong, None)
        if _screen_key(away) == _screen_key(obs) or popup_response(away) is not None:
            raise _Replay()  # the tap did not navigate anywhere (or a popup came): no detour
        back = away
        for _ in range(MAX_BACKS):
            counts["recovery"] += 1
            back = emit(back, Back(), "recovery")
            if _screen_key(back) == _screen_key(obs) or popup_response(back) is not None:
                break
        if _screen_key(back) != _screen_key(obs) or env.device.read_app_state(task.app) != before_state:
            raise _Replay()
        return back


# --------------------------------------------------------------------------- whole sets


def iter_demos(config: DemoConfig, stats: DemoStats | None = None, split: str = "train",
               progress: Callable[[int, int], None] | None = None) -> Iterator[Sample]:
    """Every sample of `config.episodes_per_task` episodes of every seen template, task by task.

    Deterministic given the config. `progress(done, total)` is called after each episode.
    """
    recorder = DemoRecorder(config)
    tasks = demo_instances(config.seed, config.episodes_per_task, config.apps, split)
    for k, task in enumerate(tasks):
        yield from recorder.record(task, stats)
        if progress is not None:
            progress(k + 1, len(tasks))


def corpus_texts(config: DemoConfig, episodes_per_task: int = 4, prompt: PromptConfig | None = None) -> Iterator[str]:
    """Texts for training the tokenizer, from seen apps only: every training goal, and the
    prompts (element lists, history) and targets of the first `episodes_per_task` episodes of
    each template (with popups and detours, so their words are in too). Whole prompts are
    included so that the tokenizer learns the prompt's own pieces (` TextView`, ` "`, `hint`)."""
    from coadapt.policy.prompt import prompt_text
    from coadapt.policy.tiny import TINY_POLICY_CONFIG

    prompt = prompt if prompt is not None else TINY_POLICY_CONFIG.prompt
    for task in demo_instances(config.seed, config.episodes_per_task, config.apps, "train"):
        yield task.goal
    small = DemoConfig(episodes_per_task=min(episodes_per_task, config.episodes_per_task), seed=config.seed,
                       apps=config.apps, popup_share=1.0, popup_rate=config.popup_rate, detour_share=1.0)
    for s in iter_demos(small):
        yield prompt_text(s.policy_input, prompt)
        yield s.target


# --------------------------------------------------------------------------- entity randomisation

_KEEP_PARAMS = frozenset({"date", "day"})
"""Parameters whose words must not change: the model compares them with the screen's date."""
_STOP_WORDS = frozenset("""a an and the to of at in on for with by from my me you your is are be it this that
    or as up am pm new old all none off on yes no ok""".split())
_CALENDAR_WORDS = frozenset("""monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays
    thursdays fridays saturdays sundays mon tue wed thu fri sat sun january february march april may june july
    august september october november december jan feb mar apr jun jul aug sep sept oct nov dec""".split())
_WORD_RE = re.compile(r"[A-Za-z]+")
_NUM_RE = re.compile(r"\d+")


def entity_pool(texts: Iterable[str]) -> list[str]:
    """Words (3+ letters, lower-case) of the goals and quoted element names in `texts` (lines
    starting "Goal: " and "…"-quoted strings, as prompts and targets hold them): what randomised
    entities are made of, so they tokenise like real ones. Pass seen-app texts only."""
    words: set[str] = set()
    for text in texts:
        parts = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
        parts += [line[6:] for line in text.splitlines() if line.startswith("Goal: ")]
        for part in parts:
            words.update(w.lower() for w in _WORD_RE.findall(part) if len(w) >= 3)
    return sorted(words - _STOP_WORDS - _CALENDAR_WORDS)


def _param_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return []


def randomize_entities(sample: Sample, pool: Sequence[str], rng: random.Random) -> Sample | None:
    """The sample with its task's parameter words and numbers swapped for random ones, the same
    way everywhere it shows them (goal, element names, history, target).

    A model trained on the instances alone can lower its loss by remembering the few names,
    titles and numbers the tasks draw from, and then writes a remembered name instead of the
    one in the goal; in randomised copies only copying works. Words of the goal template,
    dates and weekday or month names are kept (the model reads them), as are numbers that
    are not in a parameter string. The screenshot is not redrawn (the tiny model sees it at a
    size where text is unreadable). None when the sample shows none of its parameters.
    """
    task = TEMPLATES[sample.task]
    values = task.from_seed(sample.seed).values
    template_words = {w.lower() for w in _WORD_RE.findall(task.template)}
    words: dict[str, str] = {}
    numbers: dict[int, int] = {}
    for key, value in values.items():
        if key in _KEEP_PARAMS:
            continue
        for text in _param_strings(value):
            for w in _WORD_RE.findall(text):
                lw = w.lower()
                if len(w) >= 2 and lw not in _STOP_WORDS | _CALENDAR_WORDS | template_words and w not in words:
                    new = rng.choice(pool)
                    words[w] = new.capitalize() if w[0].isupper() else new
            for n in _NUM_RE.findall(text):
                if int(n) not in numbers:
                    numbers[int(n)] = rng.randrange(10 ** (len(n) - 1) if len(n) > 1 else 0, 10 ** len(n))
    if not words and not numbers:
        return None
    word_re = re.compile(r"(?<![A-Za-z])(" + "|".join(map(re.escape, sorted(words, key=len, reverse=True))) + r")(?![A-Za-z])") if words else None

    def swap(text: str) -> str:
        if not text:
            return text
        if word_re is not None:
            text = word_re.sub(lambda m: words[m.group(1)], text)
        if numbers:
            def num(m: re.Match) -> str:
                v = int(m.group(0))
                if v not in numbers:
                    return m.group(0)
                return str(numbers[v]).zfill(len(m.group(0)))
            text = _NUM_RE.sub(num, text)
        return text

    goal = swap(sample.goal)
    if goal == sample.goal:
        return None
    elements = tuple(dataclasses.replace(e, text=swap(e.text), content_desc=swap(e.content_desc), hint=swap(e.hint))
                     for e in sample.observation.elements)
    obs = dataclasses.replace(sample.observation, elements=elements)
    return dataclasses.replace(sample, observation=obs, goal=goal, history=tuple(swap(h) for h in sample.history),
                               target=swap(sample.target), source=sample.source + "+random")


def check_samples(samples: Sequence[Sample]) -> None:
    """Raise ConfigError unless every sample is from a seen app, in the pretrain space, and its
    target parses back on its own observation (what the tests and `run_pretrain` rely on)."""
    from coadapt.android_env.actions import Invalid
    from coadapt.policy.parser import parse_action

    for s in samples:
        if s.app not in SEEN_APPS:
            raise ConfigError(f"sample of {s.task} is from unseen app {s.app}")
        if seed_space(s.seed) != DEMO_SPACE:
            raise ConfigError(f"sample of {s.task} has a seed in the {seed_space(s.seed)!r} space")
        if isinstance(parse_action(s.target, s.observation), Invalid):
            raise ConfigError(f"sample target {s.target!r} of {s.task} does not parse on its screen")
