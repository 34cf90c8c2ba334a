"""A Gymnasium environment over the episode env: one app's tasks, actions as text, "coadapt/Android-v0".

    env = gymnasium.make("coadapt/Android-v0", app="com.example.notes")   # after `import coadapt`
    obs, info = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step('{"action_type": "click", "index": 2}')

Tasks. `reset` plays one task instance of `app`: the template named by `task`, or, when `task`
is None, a template drawn with the env's generator. The instance follows from the same
generator, so `reset(seed=s)` always gives the same template, parameters and initial app
states. Instance seeds lie in the *pretrain* seed space, in a family of their own (the template
name is hashed with "/gym"): by construction never an instance `coadapt eval` scores or the adapt
loop adapts on, and apart from the demonstration families. The initial states are installed the
way evaluation installs them (the instance's `TaskCard` sets the phone up after a reset).

Observations. A dict: "screenshot" (H x W x 3 uint8 RGB, physical pixels), "elements" (the
indexed element list, one `element_line` per element, as in the policy's prompt but never cut
short: every index an action may use is listed) and "goal" (the task in words).

Text spaces and Unicode. Gymnasium's `Text` space holds strings over a finite character set.
The apps show text beyond ASCII ("€", "·", "“", "ê") and agents type what they like, so the
character set is the whole Basic Multilingual Plane less the surrogate block (63,488 characters,
every script and symbol in common use). A character outside it (an emoji, a lone surrogate) is
shown as U+FFFD in "elements" and "goal"; nothing else is changed. Observations are therefore
members of the declared space, which `gymnasium.utils.env_checker.check_env` verifies.

Actions. A string: AndroidWorld JSON (`{"action_type": "click", "index": 3}`) or any form the
policy parser reads (`tap(3)`, `type("milk", 2)`, `tap "Save"`, UI-TARS calls, whose box
coordinates are read as 0-1000 relative). Text the parser cannot read, or an index not on the
screen, becomes an `Invalid` action: the step counts, nothing is touched, and `info["invalid"]`
and `info["error"]` say why. Anything that is not a string is read as its `str()`.

Episode end. `terminated` when the agent declares done or infeasible; `truncated` at the step
limit (the task's `max_steps`, or `max_steps` when given) or when a device fault cut the episode
(`info["infra_error"]`).

Reward. Always 0.0 unless `reward="task"`: then the step that ends the episode carries the
task's ground-truth success (`TaskTemplate.evaluate`: the goal is met, judged from app state, and
the agent declared done, AndroidWorld's rule), also given as `info["success"]`. An episode cut by
a device fault, or whose app state cannot be read, is not scored (`info["success"]` is None,
`info["infra_error"]` True, reward 0.0). With `reward="none"` no checker is ever called.
coadapt's own adaptation never uses this reward.

Devices. By default a fresh simulated phone with every catalogue app, owned and closed by the
env. Any `Device` may be passed instead (an `AdbDevice` for an emulator or a virtual device); it
stays the caller's: `close()` lets go of it without closing it.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Literal

import gymnasium
import numpy as np
from gymnasium import spaces

from coadapt.android_env.actions import describe
from coadapt.android_env.device import Device
from coadapt.android_env.env import AndroidEnv as EpisodeEnv
from coadapt.android_env.errors import ConfigError, DeviceError, EnvError, TaskError
from coadapt.android_env.observation import Observation
from coadapt.android_env.sim import SimConfig, SimDevice
from coadapt.apps import app_class, label_map, make_apps
from coadapt.policy.parser import MAX_INPUT_CHARS, parse_action
from coadapt.policy.prompt import PromptConfig, element_line
from coadapt.rollout.cards import TaskCard
from coadapt.tasks.base import TaskTemplate
from coadapt.tasks.registry import get_template, templates_for_app
from coadapt.tasks.suite import instance_seed

log = logging.getLogger(__name__)

Reward = Literal["none", "task"]
REWARDS: tuple[str, ...] = ("none", "task")

SEED_SPACE = "pretrain"
"""Seed space of the env's task instances (disjoint from eval and adapt by construction)."""
SEED_FAMILY = "gym"
"""Hashed with the template name, so the env's instances are a family apart within the space."""

CHARSET = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
"""Characters of the "elements" and "goal" spaces (and of actions): the BMP less surrogates."""
TEXT_MAX_CHARS = 1 << 16
"""Longest "elements" or "goal" text, in characters."""
_OUTSIDE = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")


class UnicodeText(spaces.Text):
    """gymnasium's Text over `CHARSET`, with a repr that does not print 63,488 characters."""

    def __repr__(self) -> str:
        return (f"Text({self.min_length}, {self.max_length}, "
                f"charset=<Unicode BMP less surrogates: {len(self.character_set)} characters>)")


def fit_text(text: str) -> str:
    """`text` with every character outside `CHARSET` replaced by U+FFFD."""
    return _OUTSIDE.sub("\ufffd", text)


def elements_text(obs: Observation, max_label_chars: int = PromptConfig().max_label_chars) -> str:
    """The indexed element list of `obs`, one prompt line per element (`[3] Button "Save"`), in
    `CHARSET`. Lines that would pass `TEXT_MAX_CHARS` are left off (no real screen has that many)."""
    out: list[str] = []
    size = 0
    for i, e in enumerate(obs.elements):
        line = fit_text(element_line(i, e, max_label_chars))
        size += len(line) + (1 if out else 0)
        if size > TEXT_MAX_CHARS:
            log.warning("element list cut at %d of %d elements (over %d characters)", i, len(obs.elements),
                        TEXT_MAX_CHARS)
            break
        out.append(line)
    return "\n".join(out)


class AndroidEnv(gymnasium.Env):
    """One app's tasks on one device, as a Gymnasium environment (see the module docstring).

    `app` is a package or launcher label; `task` a template name of that app (None: drawn per
    reset); `seed` seeds the first reset when it is given none; `device` a Device to use instead
    of a fresh simulated phone; `max_steps` overrides the task's step limit; `reward` is "none"
    (always 0.0) or "task" (ground-truth success at the episode's end).
    Raises AppError for an unknown app, TaskError for an unknown task or one of another app,
    ConfigError for a bad reward, step limit or device.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, app: str, task: str | None = None, seed: int | None = None, device: Device | None = None,
                 max_steps: int | None = None, reward: Reward = "none", render_mode: str | None = None):
        self.app = app_class(app).package
        self.templates: tuple[type[TaskTemplate], ...] = tuple(templates_for_app(self.app))
        if task is not None:
            template = get_template(task)
            if template.app != self.app:
                raise TaskError(f"task {task!r} is about {template.app}, not {self.app}; "
                                f"{self.app} has: {', '.join(t.name for t in self.templates)}")
            self.templates = (template,)
        if not self.templates:
            raise TaskError(f"app {self.app} has no task templates")
        if reward not in REWARDS:
            raise ConfigError(f"reward {reward!r}; valid: {', '.join(REWARDS)} (task gives ground-truth success)")
        if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1):
            raise ConfigError(f"max_steps must be a positive integer or None (the task's limit), got {max_steps!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode {render_mode!r}; valid: None, {', '.join(self.metadata['render_modes'])}")
        if device is not None and not isinstance(device, Device):
            raise ConfigError(f"device must implement the Device protocol (a SimDevice, an AdbDevice), "
                              f"got {type(device).__name__}")
        self.reward_mode: Reward = reward
        self.max_steps = max_steps
        self.render_mode = render_mode
        self._owns_device = device is None
        self.device: Device | None = device if device is not None else SimDevice(make_apps(), SimConfig(serial="gym-0"))
        self._env = EpisodeEnv(self.device, app_names=label_map())
        self._first_seed = seed
        self._task: TaskTemplate | None = None
        self._steps = 0
        self._closed = False

        width, height = self.device.screen_size()
        self.observation_space = spaces.Dict({
            "screenshot": spaces.Box(0, 255, (height, width, 3), np.uint8),
            "elements": UnicodeText(TEXT_MAX_CHARS, min_length=0, charset=CHARSET),
            "goal": UnicodeText(TEXT_MAX_CHARS, min_length=0, charset=CHARSET),
        })
        self.action_space = UnicodeText(MAX_INPUT_CHARS, min_length=0, charset=CHARSET)

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Draw a task instance, reset the device, install the task's initial state; step 0.
        `options` is accepted (Gymnasium passes it) and unused."""
        self._check_open()
        seed, self._first_seed = (seed if seed is not None else self._first_seed), None
        super().reset(seed=seed)
        template = self.templates[int(self.np_random.integers(len(self.templates)))]
        index = int(self.np_random.integers(2**31))
        task = template.from_seed(instance_seed(SEED_SPACE, 0, f"{template.name}/{SEED_FAMILY}", index))
        card = TaskCard.from_template(task, f"{template.name}#{SEED_FAMILY}{index}", source=SEED_FAMILY)
        if self.max_steps is not None:
            card = card.replace(max_steps=self.max_steps)
        obs = self._env.reset(card, seed=card.device_seed)
        self._task, self._steps = task, 0
        info = {"task": task.name, "task_seed": task.seed, "app": self.app, "max_steps": card.max_steps}
        return self._observation(obs, card.goal), info

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Parse `action` on the screen the agent saw and play it (see the module docstring)."""
        self._check_open()
        if self._task is None:
            raise EnvError("call reset() before step()")
        parsed = parse_action(action if isinstance(action, str) else str(action), self._env.observation)
        result = self._env.step(parsed)
        self._steps += 1
        env = self._env
        info: dict[str, Any] = {
            "action": describe(parsed), "invalid": result.info.invalid, "error": result.info.error,
            "declared": env.declared, "answer": env.answer, "infra_error": result.info.infra_error,
            "step": self._steps,
        }
        reward = 0.0
        if self.reward_mode == "task" and (result.terminated or result.truncated):
            if result.info.infra_error:
                log.warning("episode of %r cut by a device fault; not scored: %s", self._task, result.info.error)
                info["success"] = None
            else:
                try:
                    info["success"] = reward = float(self._task.evaluate(env.device, env.declared, env.answer))
                except DeviceError as e:  # the app state could not be read: unscored, like a cut episode
                    log.warning("could not score the episode of %r: %s", self._task, e)
                    info.update(success=None, infra_error=True, error=str(e))
        return (self._observation(result.observation, self._task.goal), reward, bool(result.terminated),
                bool(result.truncated), info)

    def render(self) -> np.ndarray | None:
        """The current screen as an H x W x 3 uint8 array ("rgb_array"), or None without a render mode."""
        if self.render_mode is None:
            return None
        return self._screenshot(self._env.observation)

    def close(self) -> None:
        """Close the device the env made (a device passed in stays open); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._owns_device and self.device is not None:
            self.device.close()
        self.device = None

    # ------------------------------------------------------------------ helpers

    @property
    def observation(self) -> Observation:
        """The last observation as the device layer has it (UI tree, elements): what the next
        action's element indices refer to. EnvError before the first reset."""
        return self._env.observation

    def _check_open(self) -> None:
        if self._closed:
            raise EnvError("the env is closed; make a new one")

    def _screenshot(self, obs: Observation) -> np.ndarray:
        shape = self.observation_space["screenshot"].shape
        shot = np.array(obs.screenshot.convert("RGB"), dtype=np.uint8)  # a copy: callers keep their arrays
        if shot.shape != shape:
            raise EnvError(f"the screen is {shot.shape[1]}x{shot.shape[0]} px but was {shape[1]}x{shape[0]} when the "
                           "env was made (the observation space is fixed then); lock the device's orientation")
        return shot

    def _observation(self, obs: Observation, goal: str) -> dict[str, Any]:
        return {"screenshot": self._screenshot(obs), "elements": elements_text(obs), "goal": fit_text(goal)[:TEXT_MAX_CHARS]}
