"""The episode env: reset(task, seed) -> Observation, step(action) -> StepResult.

Actions that name an element index are resolved against the observation the agent saw, never
a re-read screen. `terminated` means the agent ended the episode (done / infeasible);
`truncated` means the step limit was reached or a device fault cut the episode (`infra_error`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol

from .actions import (
    Action, Back, Done, Enter, Home, Infeasible, Invalid, LongPress, OpenApp, Scroll, Swipe, Tap, Type, Wait,
)
from .device import Device
from .errors import AppError, DeviceError, EnvError
from .observation import Observation
from .uitree import Bounds, UiElement

log = logging.getLogger(__name__)


class EpisodeTask(Protocol):
    """What the env needs of a task instance."""

    goal: str
    max_steps: int

    def setup(self, device: Device) -> None: ...


@dataclass(frozen=True)
class StepInfo:
    """What happened in one step, beyond the observation."""

    action: Action
    """The action as the agent gave it."""
    element: UiElement | None = None
    """The element an index referred to, resolved on the observation the agent saw."""
    invalid: bool = False
    """The action could not be carried out (unparseable, bad index, unknown app); it cost a step."""
    error: str | None = None
    """Why the action was invalid, or what the device reported on an infra error."""
    infra_error: bool = False
    """A device fault cut the episode; it must not be learned from, and should be rerun."""
    seconds: float = 0.0
    """Wall-clock time of the step (action + observation)."""


@dataclass(frozen=True, eq=False)
class StepResult:
    observation: Observation
    terminated: bool
    truncated: bool
    info: StepInfo


class AndroidEnv:
    """Runs one episode at a time on a device.

    `app_names` maps launcher labels to packages so `open_app("Notes")` works; `settle_seconds`
    is how long to let a real device's UI settle after each action (0 for simulated devices).
    """

    def __init__(
        self,
        device: Device,
        app_names: Mapping[str, str] | None = None,
        settle_seconds: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.device = device
        self.app_names = {k.lower(): v for k, v in (app_names or {}).items()}
        self.settle_seconds = settle_seconds
        self._sleep = sleep
        self._obs: Observation | None = None
        self._task: EpisodeTask | None = None
        self._done = True
        self.answer: str | None = None
        self.declared: str | None = None  # "done", "infeasible" or None

    @property
    def observation(self) -> Observation:
        if self._obs is None:
            raise EnvError("no observation yet: call reset(task) first")
        return self._obs

    def reset(self, task: EpisodeTask, seed: int | None = None) -> Observation:
        """Clean device, task set-up, first observation (step 0)."""
        self.device.reset(seed=seed)
        task.setup(self.device)
        self._task = task
        self._done = False
        self.answer = None
        self.declared = None
        self._obs = self._observe(0)
        return self._obs

    def _observe(self, step: int) -> Observation:
        tree = self.device.ui_tree()
        shot = self.device.screenshot()
        return Observation.build(shot, tree, self.device.current_package(), step)

    def step(self, action: Action) -> StepResult:
        if self._done or self._obs is None or self._task is None:
            raise EnvError("the episode is over (or never started): call reset(task) first")
        t0 = time.perf_counter()
        obs = self._obs
        step_no = obs.step + 1
        element: UiElement | None = None
        error: str | None = None
        terminated = False
        try:
            element, error = self._act(action, obs)
        except DeviceError as e:
            log.warning("device fault on %s at step %d: %s", self.device.serial, step_no, e)
            self._done = True
            info = StepInfo(action, element, False, str(e), True, time.perf_counter() - t0)
            return StepResult(obs, False, True, info)
        if isinstance(action, (Done, Infeasible)):
            terminated = True
            self.declared = "done" if isinstance(action, Done) else "infeasible"
            self.answer = action.answer if isinstance(action, Done) else None
        invalid = isinstance(action, Invalid) or error is not None
        if isinstance(action, Invalid) and error is None:
            error = action.reason
        try:
            if not terminated and not invalid and self.settle_seconds > 0:
                self._sleep(self.settle_seconds)
            new_obs = obs if terminated else self._observe(step_no)
        except DeviceError as e:
            self._done = True
            info = StepInfo(action, element, invalid, str(e), True, time.perf_counter() - t0)
            return StepResult(obs, False, True, info)
        if terminated:
            new_obs = Observation(obs.screenshot, obs.tree, obs.elements, obs.package, step_no)
        truncated = not terminated and step_no >= self._task.max_steps
        self._done = terminated or truncated
        self._obs = new_obs
        info = StepInfo(action, element, invalid, error, False, time.perf_counter() - t0)
        return StepResult(new_obs, terminated, truncated, info)

    # ------------------------------------------------------------------ action execution

    def _element(self, obs: Observation, index: int) -> UiElement | None:
        if 0 <= index < len(obs.elements):
            return obs.elements[index]
        return None

    def _act(self, action: Action, obs: Observation) -> tuple[UiElement | None, str | None]:
        d = self.device
        w, h = obs.size
        match action:
            case Tap(index=i, x=x, y=y) | LongPress(index=i, x=x, y=y):
                el = None
                if i is not None:
                    el = self._element(obs, i)
                    if el is None:
                        return None, f"no element {i} (the screen had {len(obs.elements)})"
                    x, y = el.bounds.center
                assert x is not None and y is not None
                if not (0 <= x < w and 0 <= y < h):
                    return el, f"point ({x}, {y}) is off the {w}x{h} screen"
                (d.tap if isinstance(action, Tap) else d.long_press)(x, y)
                return el, None
            case Scroll(direction=direction, index=i):
                el = None
                if i is not None:
                    el = self._element(obs, i)
                    if el is None:
                        return None, f"no element {i} (the screen had {len(obs.elements)})"
                    area = el.bounds
                else:
                    area = _main_scroll_area(obs)
                cx, cy = area.center
                dx = round(area.width * 0.3)
                dy = round(area.height * 0.3)
                # Content moves opposite to the finger: "down" reveals what is below.
                x1, y1, x2, y2 = {
                    "down": (cx, cy + dy, cx, cy - dy),
                    "up": (cx, cy - dy, cx, cy + dy),
                    "right": (cx + dx, cy, cx - dx, cy),
                    "left": (cx - dx, cy, cx + dx, cy),
                }[direction]
                d.swipe(x1, y1, x2, y2)
                return el, None
            case Swipe(direction=direction, index=i, x=x, y=y):
                el = None
                if i is not None:
                    el = self._element(obs, i)
                    if el is None:
                        return None, f"no element {i} (the screen had {len(obs.elements)})"
                    x, y = el.bounds.center
                elif x is None or y is None:
                    x, y = w // 2, h // 2
                dist_x, dist_y = round(w * 0.4), round(h * 0.25)
                x2, y2 = {
                    "left": (x - dist_x, y), "right": (x + dist_x, y), "up": (x, y - dist_y), "down": (x, y + dist_y),
                }[direction]
                d.swipe(x, y, min(w - 1, max(0, x2)), min(h - 1, max(0, y2)))
                return el, None
            case Type(text=text, index=i, clear=clear):
                el = None
                if i is not None:
                    el = self._element(obs, i)
                    if el is None:
                        return None, f"no element {i} (the screen had {len(obs.elements)})"
                    d.tap(*el.bounds.center)
                target = el if el is not None else next((e for e in obs.tree if e.focused and e.editable), None)
                if clear and target is not None and target.text:
                    d.key("move_end")
                    for _ in range(len(target.text)):
                        d.key("delete")
                d.input_text(text)
                return el, None
            case Back():
                d.key("back")
            case Home():
                d.key("home")
            case Enter():
                d.key("enter")
            case OpenApp(app_name=name):
                package = self.app_names.get(name.lower())
                if package is None and "." in name:
                    package = name
                if package is None:
                    known = ", ".join(sorted(self.app_names)) or "none"
                    return None, f"no app named {name!r}; known: {known}"
                try:
                    d.launch(package)
                except AppError as e:  # the agent named a package the device lacks: its mistake, not a fault
                    return None, str(e)
            case Wait(seconds=s):
                d.wait(s)
            case Done() | Infeasible() | Invalid():
                pass
        return None, None


def _main_scroll_area(obs: Observation) -> Bounds:
    """The largest scrollable element on screen, else the middle of the screen."""
    scrollables = [e for e in obs.tree if e.scrollable and e.visible]
    if scrollables:
        return max(scrollables, key=lambda e: e.bounds.area).bounds
    w, h = obs.size
    return Bounds(0, h // 5, w, h * 4 // 5)
