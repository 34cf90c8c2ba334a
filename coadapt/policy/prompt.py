"""The policy's prompt: screenshot, element list, recent actions, instruction, and the goal last."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Sequence

from coadapt.android_env.actions import Action, describe
from coadapt.android_env.errors import ConfigError
from coadapt.android_env.observation import Observation
from coadapt.android_env.uitree import UiElement

PromptStyle = Literal["text", "call", "json", "uitars"]
PROMPT_STYLES: tuple[str, ...] = ("text", "call", "json", "uitars")

INSTRUCTIONS: dict[str, str] = {
    "text": ('Reply with one action: tap "name", long_press "name", type "text" into "name", '
             "scroll up|down|left|right, swipe left|right \"name\", back, home, enter, "
             'open_app "name", wait, done, done "answer", infeasible. Name elements by their text.'),
    "call": ("Reply with one action: tap(i), long_press(i), type(\"text\", i), scroll(down), scroll(up, i), "
             "swipe(left, i), back(), home(), enter(), open_app(\"name\"), wait(), done(), done(\"answer\"), "
             "infeasible(). i is an element's number in the list."),
    "json": ('Reply with one action as JSON, e.g. {"action_type": "click", "index": 3}, '
             '{"action_type": "input_text", "text": "milk", "index": 2}, {"action_type": "scroll", "direction": "down"}, '
             '{"action_type": "navigate_back"}, {"action_type": "open_app", "app_name": "Notes"}, '
             '{"action_type": "status", "goal_status": "complete"}.'),
    "uitars": ("Reply with Thought: ... then Action: one of click(start_box='(x,y)'), long_press(start_box='(x,y)'), "
               "type(content='...'), scroll(start_box='(x,y)', direction='down'), drag(start_box='(x1,y1)', "
               "end_box='(x2,y2)'), press_back(), press_home(), open_app(app_name='...'), wait(), finished(content='...')."),
}
"""The default instruction for each style; what the model is asked to answer with."""


@dataclass(frozen=True)
class PromptConfig:
    """What the policy's prompt shows."""

    style: PromptStyle = "text"
    """Action format the instruction asks for: "text" (`tap "Save"`, the tiny model's), "call"
    (`tap(3)`), "json" (AndroidWorld JSON) or "uitars" (`click(start_box='(x,y)')`)."""
    instruction: str | None = None
    """Instruction text before the goal; None uses the style's default, "" leaves it out (a model
    trained on one format needs none, and every prompt token costs time)."""
    show_elements: bool = True
    """List the screen's indexed elements (text, class, state) under the screenshot."""
    show_indices: bool = True
    """Start each element line with its index (`[3] Button "Save"`). A model that names elements by
    text (style "text") can leave them out: a third fewer prompt tokens, and nothing to misread."""
    max_elements: int = 50
    """At most this many elements are listed."""
    max_label_chars: int = 60
    """Longer element labels are cut to this many characters."""
    history_steps: int = 4
    """How many of the most recent actions are shown (0 shows none)."""

    def __post_init__(self) -> None:
        if self.style not in PROMPT_STYLES:
            raise ConfigError(f"prompt style {self.style!r}; valid: {', '.join(PROMPT_STYLES)}")
        for name in ("max_elements", "max_label_chars", "history_steps"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")

    @property
    def instruction_text(self) -> str:
        return INSTRUCTIONS[self.style] if self.instruction is None else self.instruction


@dataclass(frozen=True, eq=False)
class PolicyInput:
    """Everything the policy sees for one decision."""

    observation: Observation
    """The current screen; element names and indices in the answer refer to it."""
    goal: str
    """The task in words."""
    history: tuple[str, ...] = ()
    """Earlier actions of the episode, oldest first, as the model wrote them (or `describe`d)."""
    memory: str = ""
    """Exploration memory of the app (what its menus hold), one finding per line; "" for none."""


def history_entry(item: str | Action) -> str:
    """One history line: a string as given, an Action in `describe` form."""
    return item if isinstance(item, str) else describe(item)


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n]


def element_line(i: int | None, e: UiElement, max_chars: int) -> str:
    """`[3] Button "Save"` (`Button "Save"` when `i` is None), with a hint, a second name and
    state flags when they exist.

    Names are JSON-quoted, exactly as actions quote them, so a model copies the same tokens.
    """
    q = lambda s: json.dumps(_cut(s, max_chars), ensure_ascii=False)  # noqa: E731
    parts = [e.short_class if i is None else f"[{i}] {e.short_class}"]
    main = e.text or e.content_desc
    if main:
        parts.append(q(main))
    if e.text and e.content_desc and e.content_desc != e.text:
        parts.append(f"desc {q(e.content_desc)}")
    if e.hint and e.hint != main:
        parts.append(f"hint {q(e.hint)}")
    flags = [name for name, on in (("checked" if e.checked else "unchecked", e.checkable), ("selected", e.selected),
                                   ("focused", e.focused), ("scrollable", e.scrollable), ("disabled", not e.enabled)) if on]
    if flags:
        parts.append(f"({', '.join(flags)})")
    return " ".join(parts)


def prompt_text(inp: PolicyInput, config: PromptConfig) -> str:
    """The text that follows the screenshot. The goal comes last, right before the answer:
    with the goal first, a small model trained from scratch stalled."""
    lines: list[str] = []
    obs = inp.observation
    if config.show_elements:
        lines.append("Elements:")
        shown = obs.elements[: config.max_elements]
        lines.extend(element_line(i if config.show_indices else None, e, config.max_label_chars)
                     for i, e in enumerate(shown))
        if not shown:
            lines.append("(none)")
    if config.history_steps > 0:
        recent = inp.history[-config.history_steps :]
        recent = [_cut(" ".join(h.split()), 2 * config.max_label_chars) for h in recent]
        lines.append("Previous actions: " + ("; ".join(recent) if recent else "none"))
    if inp.memory:
        lines.append("Notes: " + "; ".join(line for line in inp.memory.splitlines() if line.strip()))
    if config.instruction_text:
        lines.append(config.instruction_text)
    lines.append(f"Goal: {inp.goal}")
    return "\n".join(lines)


def chat_messages(inp: PolicyInput, config: PromptConfig) -> list[dict[str, Any]]:
    """One user turn: the screenshot, then `prompt_text`. Rendered by the model's chat template."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt_text(inp, config)}]}]


def make_inputs(observations: Sequence[Observation], goals: Sequence[str],
                histories: Sequence[Sequence[str | Action]] | None = None) -> list[PolicyInput]:
    """Zip parallel lists into PolicyInputs; raises ConfigError when their lengths differ."""
    histories = histories if histories is not None else [()] * len(observations)
    if not len(observations) == len(goals) == len(histories):
        raise ConfigError(f"observations, goals and histories differ in length: "
                          f"{len(observations)}, {len(goals)}, {len(histories)}")
    return [PolicyInput(o, g, tuple(history_entry(h) for h in hist)) for o, g, hist in zip(observations, goals, histories)]
