"""The explorer: acts in an app to map it, building the UI transition graph.

Strategies (one step = one action; a restart of the app counts as one):
  * ``random`` — Monkey-like: taps, long presses and swipes at random points, back now and then,
    random text when a field has focus (the UI/Application Exerciser Monkey's event mix, simplified);
  * ``events`` — a random event of the current screen's elements (DroidBot's random policy);
  * ``dfs`` — DroidBot's naive depth-first: the first untried event of the current screen, else back;
  * ``greedy`` — ours: untried events ordered by how much they are likely to reveal (menus, drawers,
    tabs and new labels first, forms filled before they are submitted, destructive words last),
    and when a screen is exhausted, a walk along the graph to the nearest screen with untried
    events (DroidBot's "unexplored event first" with graph navigation);
  * ``model`` — the policy acting on the goal "Explore the app", for comparison.

Nothing here reads app state: exploration sees only what is on screen.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from coadapt.android_env.actions import Action, Back, LongPress, Scroll, Swipe, Tap, Type, to_dict, to_json
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import ConfigError
from coadapt.android_env.observation import Observation
from coadapt.android_env.uitree import UiElement, UiTree
from coadapt.policy.base import Policy
from coadapt.rollout.cards import TaskCard, episode_seed

from .graph import TransitionGraph
from .screens import ScreenFacts, hidden, normalise, screen_facts, stable_name

log = logging.getLogger(__name__)

Strategy = Literal["greedy", "random", "events", "dfs", "model"]
STRATEGIES: tuple[str, ...] = ("greedy", "random", "events", "dfs", "model")

EXPLORE_GOAL = "Explore the app: open every screen, menu and dialog once."

_OPENERS = ("more options", "navigation", "menu", "drawer", "tab", "add", "new", "create", "settings", "filter",
            "sort", "edit", "details", "open")
"""Words of labels that usually open something (icons, tabs, menus): tried first."""
_RISKY = ("delete", "remove", "discard", "clear", "reset", "sign out", "log out", "uninstall", "cancel", "close")
"""Words of labels that destroy data or leave: tried last."""
_SUBMIT = ("save", "done", "ok", "add", "create", "submit", "confirm", "apply", "send")
"""Words of labels that submit a form: tried first once every field of the screen is filled."""
_SEARCH = ("search", "filter", "find")
"""Words of a field that filters what a screen shows rather than feeding a form: typed into once,
late, never refilled on every visit (that would hide the list it filters)."""
_NUMERIC = ("amount", "price", "cost", "total", "quantity", "qty", "number", "minutes", "hours", "count", "age",
            "year", "duration", "weight", "size", "$")
_WORDS = ("Blue", "River", "Maple", "Quiet", "North", "Amber", "Cedar", "Lucky", "Silver", "Orchid")
_NOUNS = ("notebook", "walk", "lunch", "plan", "trip", "gift", "review", "list", "call", "idea")


@dataclass(frozen=True)
class Event:
    """One thing that can be done on a screen, with a signature stable across visits."""

    kind: str
    """tap, long_press, type, scroll, back."""
    signature: str
    label: str
    index: int | None = None
    text: str = ""
    given: Action | None = None
    """The action itself, for an event that is whatever a policy or the Monkey chose."""

    @classmethod
    def of(cls, action: Action) -> "Event":
        """An event standing for an action chosen elsewhere (the policy, the Monkey)."""
        return cls("policy", f"policy:{to_json(action)}", str(action), getattr(action, "index", None),
                   getattr(action, "text", "") or "", given=action)

    @property
    def in_list(self) -> bool:
        """A tap on a row of a scrolling list (its signature names the list)."""
        return "@" in self.signature and not self.signature.endswith("@")

    def action(self) -> Action:
        if self.given is not None:
            return self.given
        if self.kind == "tap":
            return Tap(index=self.index)
        if self.kind == "long_press":
            return LongPress(index=self.index)
        if self.kind == "type":
            return Type(text=self.text, index=self.index, clear=True)
        if self.kind == "scroll":
            return Scroll(direction="down", index=self.index)
        return Back()

    def describe(self) -> str:
        if self.given is not None:
            return self.label
        if self.kind == "back":
            return "back"
        if self.kind == "type":
            return f"type {self.text!r} into {self.label!r}"
        return f"{self.kind} {self.label!r}"


def _clickable_owner(tree: UiTree, e: UiElement) -> UiElement | None:
    """The element a tap or long press on `e` reaches: itself when it takes either, else its
    nearest ancestor that does."""
    node: UiElement | None = e
    while node is not None:
        if node.clickable or node.checkable or node.long_clickable:
            return node
        node = tree.elements[node.parent] if node.parent is not None else None
    return None


def _list_ancestor(tree: UiTree, e: UiElement) -> UiElement | None:
    p = e.parent
    while p is not None:
        a = tree.elements[p]
        if a.scrollable and a.short_class in ("RecyclerView", "ListView", "GridView"):
            return a
        p = a.parent
    return None


def sample_text(e: UiElement, rng: random.Random) -> str:
    """Something plausible to type into field `e`: a number when its hint asks for one."""
    hint = normalise(" ".join((e.hint, e.content_desc, e.short_id.replace("_", " "), e.text)))
    if any(w in hint for w in _NUMERIC):
        return str(rng.choice((3, 7, 12, 25, 40)))
    return f"{rng.choice(_WORDS)} {rng.choice(_NOUNS)}"


def is_search(ev: Event) -> bool:
    """A text field that searches or filters the screen (not a form field)."""
    return ev.kind == "type" and any(w in f"{normalise(ev.label)} {ev.signature}" for w in _SEARCH)


def _search_text(tree: UiTree, rng: random.Random) -> str | None:
    """A word from a row the screen lists, so the search finds something."""
    words = [w for x in tree.elements if x.visible and x.text and _list_ancestor(tree, x) is not None
             for w in x.text.split()[:1] if len(w) > 2 and w.isalpha()]
    return rng.choice(words) if words else None


def screen_events(obs: Observation, rng: random.Random) -> list[Event]:
    """Every event of a screen, one per distinct target (a list's rows count once per kind)."""
    tree = obs.tree
    out: dict[str, Event] = {}
    covered = hidden(tree)
    for i, e in enumerate(obs.elements):
        if e.index in covered:
            continue  # under a menu, a drawer or a dialog: a tap would only close it
        if e.editable:
            sig = f"type:{e.short_id}:{normalise(e.hint or e.content_desc)}"
            ev = Event("type", sig, e.hint or e.content_desc or e.short_id, i, sample_text(e, rng))
            if is_search(ev):
                ev = dataclasses.replace(ev, text=_search_text(tree, rng) or ev.text)
            out.setdefault(sig, ev)
            continue
        owner = _clickable_owner(tree, e)
        if owner is not None:
            row = _list_ancestor(tree, owner)
            name = "" if row is not None else normalise(stable_name(tree, owner) or e.label)
            sig = f"tap:{owner.short_class}:{owner.short_id}:{name}@{row.short_id if row else ''}"
            if owner.clickable or owner.checkable:
                out.setdefault(sig, Event("tap", sig, e.label or owner.label or owner.short_class, i))
            if owner.long_clickable:
                lsig = "long_" + sig
                out.setdefault(lsig, Event("long_press", lsig, e.label or owner.short_class, i))
        if e.scrollable:
            sig = f"scroll:{e.short_id}"
            out.setdefault(sig, Event("scroll", sig, e.short_id or e.short_class, i))
    out["back"] = Event("back", "back", "back")
    return list(out.values())


def _priority(ev: Event, known: set[str]) -> tuple[int, int]:
    """Lower comes first: openers and unknown labels, then fields, taps, scrolls, risky words, back."""
    label = normalise(ev.label)
    if ev.kind == "back":
        return (9, 0)
    if any(w in label for w in _RISKY):
        return (7, 0)
    if is_search(ev):
        return (8, 0)
    if ev.kind == "type":
        return (1, 0)
    if ev.kind == "scroll":
        return (5, 0)
    if ev.kind == "long_press":
        return (6, 0)
    opener = any(w in label for w in _OPENERS)
    return (0 if opener else 2, 0 if label not in known else 1)


@dataclass
class ExploreStep:
    """One action of an exploration and what it did."""

    step: int
    segment: int
    """Restarts split an exploration into segments; each starts from a fresh reset."""
    event: Event
    effective: bool
    new_screen: bool
    revealed: tuple[str, ...]
    """Labels seen for the first time in this exploration."""
    before: UiTree
    after: UiTree
    src_facts: ScreenFacts
    dst_facts: ScreenFacts

    @property
    def src(self) -> str:
        """The screen key the action was taken on."""
        return self.src_facts.key

    @property
    def dst(self) -> str:
        """The screen key it led to."""
        return self.dst_facts.key


@dataclass
class Exploration:
    """What an exploration found: the graph, every step, and its segments' starting card."""

    graph: TransitionGraph
    steps: list[ExploreStep] = field(default_factory=list)
    card: TaskCard | None = None
    strategy: str = "greedy"
    restarts: int = 0
    """App restarts (fresh resets); each counted as one of the exploration's actions."""

    def coverage(self) -> dict[str, float]:
        return {**self.graph.coverage(), "restarts": self.restarts}


class Explorer:
    """Explores one app on one env for a number of actions."""

    def __init__(self, env: AndroidEnv, card: TaskCard, *, strategy: Strategy = "greedy", seed: int = 0,
                 policy: Policy | None = None, out_dir: Path | None = None,
                 progress: Callable[[int, int], None] | None = None):
        if strategy not in STRATEGIES:
            raise ConfigError(f"explore strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
        if strategy == "model" and policy is None:
            raise ConfigError("the 'model' strategy needs a policy")
        self.env, self.strategy, self.policy = env, strategy, policy
        self.card = card.replace(max_steps=10**9, goal=EXPLORE_GOAL if strategy == "model" else card.goal)
        self.rng = random.Random(seed)
        self.seed = seed
        self.out_dir = out_dir
        self.progress = progress
        self.graph = TransitionGraph(card.app)
        self._known: set[str] = set()
        self._untried: dict[str, set[str]] = {}
        self._typed: set[tuple[str, str]] = set()
        """(screen, field) typed into in the current segment."""
        self._submitted: set[str] = set()
        """Submit events taken after filling a form (each once per segment)."""
        self._restarted_at = 0
        """The step of the last restart (a restart is not judged stuck again within six actions)."""

    # ------------------------------------------------------------------ helpers
    def _observe_new(self, obs: Observation, facts: ScreenFacts, step: int) -> bool:
        title = next((e.text for e in obs.tree.elements if e.visible and "title" in e.short_id and e.text), "")
        node, new = self.graph.visit(facts, step, title)
        if new and self.out_dir is not None:
            shots = self.out_dir / "screens"
            shots.mkdir(parents=True, exist_ok=True)
            node.screenshot = f"screens/{facts.key}.png"
            obs.screenshot.save(self.out_dir / node.screenshot)
        return new

    def _pending(self, key: str, events: list[Event]) -> set[str]:
        """Untried events of this screen as it shows now (what an earlier visit showed and this
        one does not is forgotten, or a walk would keep coming back for it)."""
        pend = {e.signature for e in events if e.kind != "back" and not self.graph.tried(key, e.signature)}
        self._untried[key] = pend
        return pend

    def _choose(self, obs: Observation, facts: ScreenFacts, events: list[Event], agent) -> Event:
        in_app = facts.package == self.card.app
        if self.strategy == "random":
            return self._monkey(obs)
        if self.strategy == "events":
            return self.rng.choice(events)
        if not in_app:
            return next(e for e in events if e.kind == "back")
        pending = self._pending(facts.key, events)
        untried = [e for e in events if e.signature in pending]
        if self.strategy == "dfs":
            return untried[0] if untried else next(e for e in events if e.kind == "back")
        if self.strategy == "model":
            decision = agent.act(obs)
            return Event.of(decision.action)
        fields = [e for e in events if e.kind == "type" and not is_search(e)]
        unfilled = [e for e in fields if (facts.key, e.signature) not in self._typed]
        if unfilled:
            return unfilled[0]  # fill a form again on every visit: a submit needs filled fields
        if fields:
            submit = [e for e in events if e.kind == "tap" and e.signature not in self._submitted
                      and any(normalise(e.label).split()[:1] == [w] for w in _SUBMIT)]
            if submit:
                self._submitted.add(submit[0].signature)
                return submit[0]
        untried = [e for e in untried if e.kind != "type" or is_search(e)]
        if untried:
            best = min(untried, key=lambda e: _priority(e, self._known))
            top = [e for e in untried if _priority(e, self._known) == _priority(best, self._known)]
            return self.rng.choice(top)
        goal = {k for k, v in self._untried.items() if any(not self.graph.tried(k, s) for s in v)
                and self.graph.nodes.get(k) is not None and self.graph.nodes[k].package == self.card.app}
        way = self.graph.path(facts.key, goal)
        if way:
            sig = way[0].event
            hit = next((e for e in events if e.signature == sig), None)
            if hit is not None:
                return hit
        return next(e for e in events if e.kind == "back")

    def _monkey(self, obs: Observation) -> Event:
        w, h = obs.size
        r = self.rng.random()
        x, y = self.rng.randrange(w), self.rng.randrange(h)
        if r < 0.55:
            return Event.of(Tap(x=x, y=y))
        if r < 0.65:
            return Event.of(LongPress(x=x, y=y))
        if r < 0.85:
            return Event.of(Swipe(direction=self.rng.choice(("up", "down", "left", "right")), x=x, y=y))
        if r < 0.95:
            return Event.of(Back())
        focused = next((i for i, e in enumerate(obs.elements) if e.editable and e.focused), None)
        if focused is None:
            return Event.of(Tap(x=x, y=y))
        return Event.of(Type(text=sample_text(obs.elements[focused], self.rng), index=focused))

    # ------------------------------------------------------------------ the loop
    def run(self, steps: int) -> Exploration:
        """Act `steps` times (restarts included) and return what was found."""
        result = Exploration(self.graph, card=self.card, strategy=self.strategy)
        segment = 0
        obs = self.env.reset(self.card, seed=self.card.device_seed)
        facts = screen_facts(obs.tree)
        self._known |= facts.labels
        self._observe_new(obs, facts, 0)
        agent = self.policy.start(self.card, episode_seed(self.seed, self.card.key, 0, None)) if self.policy else None
        out_of_app = 0
        for step in range(1, steps + 1):
            limit = 2 if self.strategy == "random" else 1
            if out_of_app >= limit or (self.strategy != "random" and self._stuck(result)):
                segment += 1
                result.restarts += 1
                self._restarted_at = step
                self._typed.clear()
                self._submitted.clear()
                obs = self.env.reset(self.card, seed=self.card.device_seed)
                facts = screen_facts(obs.tree)
                self._observe_new(obs, facts, step)
                out_of_app = 0
                if self.progress:
                    self.progress(step, steps)
                continue
            events = screen_events(obs, self.rng)
            event = self._choose(obs, facts, events, agent)
            res = self.env.step(event.action())
            if res.terminated or res.truncated:
                # a `done` or a device fault ends the env's episode: start a fresh segment
                new_obs = self.env.reset(self.card, seed=self.card.device_seed)
                segment_end = True
            else:
                new_obs, segment_end = res.observation, False
            new = screen_facts(new_obs.tree)
            revealed = tuple(sorted(new.labels - self._known))
            self._known |= new.labels
            new_screen = self._observe_new(new_obs, new, step)
            effective = new.fine_key != facts.fine_key
            self.graph.add_edge(facts.key, event.signature, to_dict(event.action()), event.describe(), new.key,
                                effective, step)
            result.steps.append(ExploreStep(step, segment, event, effective, new_screen, revealed, obs.tree,
                                            new_obs.tree, facts, new))
            if event.kind == "type":
                self._typed.add((facts.key, event.signature))
            if segment_end:
                segment += 1
                self._typed.clear()
                self._submitted.clear()
            out_of_app = out_of_app + 1 if new.package != self.card.app else 0
            obs, facts = new_obs, new
            if self.progress:
                self.progress(step, steps)
        return result

    def _stuck(self, result: Exploration) -> bool:
        """The last 6 actions changed nothing new (same few screens, no new label)."""
        recent = result.steps[-6:]
        if result.steps and result.steps[-1].step <= self._restarted_at + 6:
            return False  # six actions since the last restart, at least
        return len(recent) == 6 and not any(s.revealed or s.new_screen for s in recent) and \
            len({s.dst for s in recent}) <= 2 and all(s.segment == recent[-1].segment for s in recent) and \
            not any(self._untried.get(s.dst) for s in recent)
