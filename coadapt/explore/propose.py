"""Self-proposed tasks from an exploration, with rewards that need no judge.

Three kinds, each phrased with the app's own words (the labels the explorer tapped):
  * create — reverse task synthesis (OS-Genesis): a stretch of exploration typed values into a
    form and submitted it, and a later screen shows a typed value outside any field; the goal
    says what was done ("Log expense with Amount 12 and Note Blue notebook");
  * toggle — a tap flipped a switch or checkbox: "Turn on Dark theme";
  * open — a screen or item the explorer reached: "Open Summary", "Open Kitchen towels".

Every proposal keeps the actions that achieved it, from a fresh reset, pruned of detours by
replay, and an expectation on the final screen (a label shown, a check state, a screen key)
that decides success from the screen alone. Replaying the actions from a fresh reset must meet
the expectation, so each proposal is a verified positive by construction.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from coadapt.android_env.actions import Action, Done, Tap, from_dict, to_dict
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.errors import CoadaptError
from coadapt.android_env.observation import Observation, indexed_elements
from coadapt.android_env.uitree import UiTree
from coadapt.rollout.cards import TaskCard

from .explorer import Exploration
from .screens import normalise, screen_facts, stable_name

log = logging.getLogger(__name__)

Expectation = tuple[str, str]
"""("shows", label) · ("checked", label) · ("unchecked", label) · ("screen", key)."""


@dataclass(frozen=True)
class Proposal:
    """A goal the agent set itself, how it was reached, and how to tell it is reached."""

    goal: str
    kind: str
    """create, toggle or open."""
    expect: tuple[Expectation, ...]
    actions: tuple[Action, ...]
    """What reaches the goal from a fresh reset of the exploration's card (done excluded)."""
    origin: tuple[int, ...]
    """The exploration steps it came from."""

    def to_json(self) -> dict:
        return {"goal": self.goal, "kind": self.kind, "expect": [list(e) for e in self.expect],
                "actions": [to_dict(a) for a in self.actions], "origin": list(self.origin)}

    @classmethod
    def from_json(cls, d: dict) -> "Proposal":
        return cls(d["goal"], d["kind"], tuple((a, b) for a, b in d["expect"]),
                   tuple(from_dict(a) for a in d["actions"]), tuple(d["origin"]))

    def card(self, base: TaskCard, index: int, max_steps: int) -> TaskCard:
        """The proposal as a task card on `base`'s phone set-up."""
        return base.replace(key=f"proposed/{self.kind}/{index}", goal=self.goal, task=f"proposed:{self.kind}",
                            source="proposed", max_steps=max(max_steps, len(self.actions) + 2))


def _shown(tree: UiTree) -> set[str]:
    """Labels shown outside editable fields."""
    return {normalise(e.text or e.content_desc) for e in tree.elements
            if e.visible and not e.editable and (e.text or e.content_desc)}


def _check_names(tree: UiTree) -> dict[str, tuple[str, bool]]:
    """normalised name -> (name as shown, checked) of every visible switch, checkbox, chip."""
    out: dict[str, tuple[str, bool]] = {}
    for e in tree.elements:
        if e.visible and e.checkable:
            name = stable_name(tree, e)  # a switch reading ON/OFF is named by its row
            if name:
                out[normalise(name)] = (name, e.checked)
    return out


def _check_states(tree: UiTree) -> dict[str, bool]:
    return {k: on for k, (_, on) in _check_names(tree).items()}


def _all_texts(tree: UiTree) -> set[str]:
    return {normalise(e.text) for e in tree.elements if e.visible and e.text}


def expectation_met(expect: Sequence[Expectation], tree: UiTree) -> bool:
    """Does the screen show what the proposal expects? (Observation only; no app state.)"""
    if not expect:
        return False
    shown, states, key = _shown(tree), _check_states(tree), screen_facts(tree).key
    for kind, value in expect:
        if kind == "shows" and not any(value == s or value in s for s in shown):
            return False
        if kind == "text" and value not in _all_texts(tree):  # in a field too (an item opened for editing)
            return False
        if kind == "checked" and states.get(value) is not True:
            return False
        if kind == "unchecked" and states.get(value) is not False:
            return False
        if kind == "screen" and key != value:
            return False
    return True


def proposal_reward(expect: Sequence[Expectation], final: Observation | None, declared: str | None) -> float:
    """Judge-free reward of an attempt at a proposal: 1 when it declared done on a screen that
    meets the expectation, else 0."""
    if final is None or declared != "done":
        return 0.0
    return 1.0 if expectation_met(expect, final.tree) else 0.0


def replay(env: AndroidEnv, card: TaskCard, actions: Sequence[Action]) -> Observation | None:
    """Play `actions` from a fresh reset; the final observation, or None when one failed."""
    obs = env.reset(card.replace(max_steps=len(actions) + 5), seed=card.device_seed)
    for a in actions:
        res = env.step(a)
        if res.info.invalid or res.info.infra_error or res.terminated:
            return None
        obs = res.observation
    return obs


def prune(env: AndroidEnv, card: TaskCard, actions: Sequence[Action], expect: Sequence[Expectation]) -> tuple[Action, ...] | None:
    """Drop every action the expectation does not need (back to front, one replay each); None
    when even the full sequence fails from a fresh reset."""
    final = replay(env, card, actions)
    if final is None or not expectation_met(expect, final.tree):
        return None
    kept = list(actions)
    for width in (1, 2):  # single actions, then pairs (an open-then-close detour)
        i = len(kept) - 1 - width  # the last action is what achieved it
        while i >= 0:
            trial = kept[:i] + kept[i + width:]
            final = replay(env, card, trial)
            if final is not None and expectation_met(expect, final.tree):
                kept = trial
            i -= 1
    return tuple(kept)


def loop_free_paths(steps: Sequence) -> Iterator[list]:
    """For each step in turn, the path from the start through it with every loop cut out (a
    stretch that came back to a screen state seen before it, by fine key): a deterministic phone
    replays the rest to the same place."""
    kept: list = []
    at: dict[str, int] = {}
    for s in steps:
        state = s.src_facts.fine_key
        if state in at:
            kept = kept[: at[state]]
            at = {k: v for k, v in at.items() if v < len(kept)}
        at[state] = len(kept)
        kept = [*kept, s]
        yield kept


_VERBS = ("open", "add", "sort", "filter", "search", "show", "view", "edit", "create", "new", "go", "select",
          "choose", "change", "set", "play", "share", "turn", "manage")
"""First words that make a label an instruction already ("Sort recipes")."""
_NOT_A_PLACE = ("back", "navigate", "close", "cancel", "save", "delete", "remove", "discard", "done", "ok", "more")
"""First words of labels whose screens are no goal of their own (leaving, committing, overflow)."""


def _is_value(label: str) -> bool:
    """A label that is data (an amount, a date, a count) rather than a name."""
    return sum(c.isdigit() for c in label) * 2 >= len(label.replace(" ", "")) or label[:1] in "$€£"


def _title(tree: UiTree) -> str:
    """The title of the topmost window that has one (a dialog's over its screen's)."""
    titles = [e for e in tree.elements if e.visible and e.text and "title" in e.short_id.lower()]
    return max(titles, key=lambda e: e.window).text if titles else ""


def field_name(tree: UiTree, index: int | None) -> str:
    """What a form calls field `index` (of the indexed elements): the text just before it in its
    parent (its caption), else its hint."""
    if index is None:
        return ""
    elements = indexed_elements(tree)
    if not 0 <= index < len(elements):
        return ""
    field = elements[index]
    if field.parent is not None:
        siblings = tree.children[field.parent]
        pos = siblings.index(field.index) if field.index in siblings else 0
        for k in reversed(siblings[:pos]):
            e = tree.elements[k]
            if e.text and not e.editable and e.visible:
                return e.text
    rid = field.short_id
    for prefix in ("et_", "edit_", "input_", "field_", "txt_"):
        rid = rid.removeprefix(prefix)
    if rid and rid.replace("_", "").isalpha():
        return rid.replace("_", " ")
    return field.hint or field.content_desc


def _rows(tree: UiTree, picked: int | None) -> list[tuple[int, str]]:
    """(index, title) of the other rows of the list that holds indexed element `picked`."""
    elements = indexed_elements(tree)
    if picked is None or not 0 <= picked < len(elements):
        return []
    target = elements[picked]

    def row_of(e):
        node = e
        while node.parent is not None:
            parent = tree.elements[node.parent]
            if parent.short_class in ("RecyclerView", "ListView", "GridView"):
                return node.index, parent.index
            node = parent
        return None

    home = row_of(target)
    if home is None:
        return []
    out, seen = [], {home[0]}
    for i, e in enumerate(elements):
        where = row_of(e)
        if where is None or where[1] != home[1] or where[0] in seen or not e.text or e.editable:
            continue
        if e.short_id != target.short_id:
            continue
        seen.add(where[0])
        out.append((i, e.text))
    return out


def _cap(label: str) -> str:
    return label[:1].upper() + label[1:] if label else label


def candidates(ex: Exploration) -> list[Proposal]:
    """Unverified proposals read off an exploration (goal, expectation, its raw action path)."""
    out: list[Proposal] = []
    app = ex.card.app if ex.card else ""
    by_segment: dict[int, list] = {}
    for s in ex.steps:
        by_segment.setdefault(s.segment, []).append(s)
    for seg, steps in by_segment.items():
        start_shown = _shown(steps[0].before)
        start_texts = _all_texts(steps[0].before)
        start_states = _check_states(steps[0].before)
        typed: list[tuple[str, str, int]] = []  # (field, text, step index in segment)
        opener = ""
        for j, (s, way) in enumerate(zip(steps, loop_free_paths(steps))):
            path = tuple(x.event.action() for x in way)
            origin = tuple(x.step for x in way)
            ev = s.event
            if ev.kind == "type":
                if typed and steps[typed[0][2]].src != s.src:
                    typed = []  # another form
                if not typed:
                    opener = _title(s.before)  # the form's own title names what it does
                typed.append((field_name(s.before, ev.index) or ev.label, ev.text, j))
            elif ev.kind == "tap" and typed and s.dst_facts.package == app:
                shown = _shown(s.after) - start_shown
                hits = [(f, t) for f, t, _ in typed if normalise(t) in shown]
                if hits:
                    fields = " and ".join(f"{_cap(f)} {t}" for f, t, _ in typed)
                    goal = f"{_cap(opener) or 'Add an item'} with {fields}" if opener else f"Add {hits[0][1]}"
                    out.append(Proposal(goal, "create", tuple(("shows", normalise(t)) for _, t in hits), path, origin))
                    typed = []
            if ev.kind == "tap" and s.dst_facts.package == app:
                before_states = _check_states(s.before)
                for name, (shown_as, on) in _check_names(s.after).items():
                    before = before_states.get(name)
                    if before is not None and before != on and start_states.get(name, not on) != on:
                        verb = "Turn on" if on else "Turn off"
                        out.append(Proposal(f"{verb} {_cap(shown_as)}", "toggle",
                                            (("checked" if on else "unchecked", name),), path, origin))
                if s.dst != s.src and ev.label and s.dst_facts.key != steps[0].src_facts.key:
                    label = normalise(ev.label)
                    words = label.split()
                    if label in _shown(s.before) and words and words[0] not in _NOT_A_PLACE and len(words) <= 6 \
                            and not _is_value(label) and not (len(words) == 1 and words[0] in _VERBS):
                        named: tuple[Expectation, ...] = ()
                        if label in _shown(s.after) and label not in start_shown:
                            named = (("shows", label),)
                        elif label in _all_texts(s.after) and label not in start_texts:
                            named = (("text", label),)
                        if ev.in_list and not named:
                            continue  # an item's screen that does not name the item: any item would pass
                        goal = f"{_cap(ev.label)}" if words[0] in _VERBS else f"Open {_cap(ev.label)}"
                        out.append(Proposal(goal, "open", (("screen", s.dst),) + named, path, origin))
                        for idx, title in _rows(s.before, ev.index) if ev.in_list else ():
                            if _is_value(normalise(title)):
                                continue
                            out.append(Proposal(f"Open {title}", "open", (("screen", s.dst), ("shows", normalise(title))),
                                                path[:-1] + (Tap(index=idx),), origin))
    return out


def propose(ex: Exploration, env: AndroidEnv, *, limit: int = 60,
            progress: Callable[[int, int], None] | None = None) -> list[Proposal]:
    """Verified, pruned, de-duplicated proposals (at most `limit`, kinds interleaved)."""
    if ex.card is None:
        raise CoadaptError("the exploration has no card to reset with")
    shortest: dict[str, Proposal] = {}
    for p in candidates(ex):
        if p.goal not in shortest or len(p.actions) < len(shortest[p.goal].actions):
            shortest[p.goal] = p
    raw = sorted(shortest.values(), key=lambda p: len(p.actions))[: 3 * limit]
    start = env.reset(ex.card, seed=ex.card.device_seed).tree  # every replay starts from this screen
    kept: list[Proposal] = []
    for i, p in enumerate(raw):
        if progress:
            progress(i, len(raw))
        if expectation_met(p.expect, start):
            continue  # already true at the start: nothing to do
        actions = prune(env, ex.card, p.actions, p.expect)
        if actions is None:
            log.debug("proposal %r did not replay from a fresh reset; dropped", p.goal)
            continue
        kept.append(Proposal(p.goal, p.kind, p.expect, actions, p.origin))
    return interleave(kept, limit)


def interleave(proposals: Sequence[Proposal], limit: int) -> list[Proposal]:
    """At most `limit` proposals, kinds taken in turn (so no kind crowds out the others)."""
    by_kind: dict[str, list[Proposal]] = {}
    for p in proposals:
        by_kind.setdefault(p.kind, []).append(p)
    mixed: list[Proposal] = []
    while len(mixed) < limit and any(by_kind.values()):
        for k in list(by_kind):
            if by_kind[k] and len(mixed) < limit:
                mixed.append(by_kind[k].pop(0))
    return mixed


def demo_actions(p: Proposal) -> list[Action]:
    """The proposal's verified path, ended with `done` (what imitation learns from)."""
    return [*p.actions, Done()]


def dumps(proposals: Sequence[Proposal]) -> str:
    return json.dumps([p.to_json() for p in proposals], indent=1, ensure_ascii=False)


def loads(text: str) -> list[Proposal]:
    return [Proposal.from_json(d) for d in json.loads(text)]
