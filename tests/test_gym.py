"""The Gymnasium env "coadapt/Android-v0": API conformance, episodes, reward policy, errors."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

gymnasium = pytest.importorskip("gymnasium")

import coadapt  # noqa: E402,F401  (registers the env)
from coadapt.android_env.actions import describe, to_json  # noqa: E402
from coadapt.android_env.errors import AppError, ConfigError, EnvError, TaskError  # noqa: E402
from coadapt.android_env.sim import SimConfig, SimDevice  # noqa: E402
from coadapt.apps import label_map, make_apps  # noqa: E402
from coadapt.tasks.base import OracleCtx, TaskTemplate  # noqa: E402
from coadapt.tasks.registry import get_template  # noqa: E402
from coadapt.tasks.suite import seed_space  # noqa: E402

ID = "coadapt/Android-v0"
NOTES = "com.example.notes"


def make(**kw):
    kw.setdefault("app", NOTES)
    return gymnasium.make(ID, **kw)


def play_oracle(env, info, *, call_form: bool = False):
    """Play the instance's oracle through env.step as action strings; the last step's results."""
    task = get_template(info["task"]).from_seed(info["task_seed"])
    ctx = OracleCtx(env.unwrapped.observation, app_labels=label_map())
    out = None
    for k, action in enumerate(task.solve(ctx)):
        text = describe(action) if call_form and k % 2 else to_json(action)
        out = env.step(text)
        assert not out[4]["invalid"], out[4]
        ctx.obs = env.unwrapped.observation
        if out[2] or out[3]:
            break
    return out


def test_check_env_passes_with_render():
    # Expenses shows "·", "€"-style symbols and quotes: real non-ASCII text in the observations.
    env = make(app="com.example.expenses", render_mode="rgb_array")
    from gymnasium.utils.env_checker import check_env

    check_env(env.unwrapped)
    obs, _ = env.reset(seed=0)
    assert any(ord(c) > 127 for c in obs["elements"])
    frame = env.render()
    assert frame.shape == (1600, 720, 3) and frame.dtype.name == "uint8"
    env.close()


def test_random_agent_plays_to_the_end():
    env = make(max_steps=8)
    rng = random.Random(0)
    actions = ["tap(0)", "tap(3)", "tap(40)", 'type("milk", 2)', '{"action_type": "scroll", "direction": "down"}',
               '{"action_type": "navigate_back"}', "enter()", 'tap "New note"', "}{ not an action", "", "wait()"]
    obs, info = env.reset(seed=1)
    assert obs in env.observation_space and info["max_steps"] == 8
    steps, ended = 0, False
    while not ended:
        obs, reward, terminated, truncated, info = env.step(rng.choice(actions))
        steps += 1
        assert obs in env.observation_space
        assert reward == 0.0 and "success" not in info
        assert info["step"] == steps
        ended = terminated or truncated
    assert steps <= 8 and (terminated or steps == 8)
    with pytest.raises(EnvError):
        env.step("back()")
    env.close()


def test_seed_picks_template_and_instance():
    env = make(seed=5)
    _, first = env.reset()
    _, again = env.reset(seed=5)
    assert (first["task"], first["task_seed"]) == (again["task"], again["task_seed"])
    names = {env.reset(seed=s)[1]["task"] for s in range(12)}
    assert len(names) > 1  # task=None draws among the app's templates
    assert seed_space(first["task_seed"]) == "pretrain"  # never an eval or adapt instance
    env.close()


def test_oracle_earns_reward_with_task_reward():
    env = make(task="NotesAddNote", reward="task")
    obs, info = env.reset(seed=3)
    assert info["task"] == "NotesAddNote" and obs["goal"]
    _, reward, terminated, truncated, info = play_oracle(env, info, call_form=True)
    assert terminated and not truncated
    assert reward == 1.0 and info["success"] == 1.0 and info["declared"] == "done"
    env.close()


def test_no_reward_and_no_checker_without_task_reward(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("ground truth read with reward='none'")

    monkeypatch.setattr(TaskTemplate, "evaluate", refuse)
    env = make(task="NotesAddNote")
    _, info = env.reset(seed=3)
    _, reward, terminated, _, info = play_oracle(env, info)
    assert terminated and reward == 0.0 and "success" not in info
    env.close()


def test_truncation_scores_zero_with_task_reward():
    env = make(task="NotesAddNote", reward="task", max_steps=2)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("wait()")
    assert (reward, terminated, truncated) == (0.0, False, False) and "success" not in info
    _, reward, terminated, truncated, info = env.step("wait()")
    assert truncated and not terminated and reward == 0.0 and info["success"] == 0.0
    env.close()


def test_unparseable_action_is_invalid_not_an_error():
    env = make()
    obs0, _ = env.reset(seed=0)
    for junk in ["hello there", "tap(999)", '{"action_type": "fly"}', 12345, None]:
        obs, reward, terminated, truncated, info = env.step(junk)
        assert info["invalid"] and info["error"] and info["action"].startswith("invalid(")
        assert not terminated and reward == 0.0
        assert obs["elements"] == obs0["elements"]
    env.close()


def test_text_outside_the_charset_is_replaced():
    env = make(task="NotesAddNote")
    env.reset(seed=0)
    env.step('tap "New note"')
    obs, _, _, _, info = env.step('type("tea \U0001f375 time", "Title")')
    assert not info["invalid"], info
    assert "tea \ufffd time" in obs["elements"] and obs in env.observation_space
    env.close()


def test_a_device_passed_in_is_used_and_left_open():
    device = SimDevice(make_apps([NOTES]), SimConfig(width=360, height=800, serial="mine"))
    env = make(device=device)
    assert env.observation_space["screenshot"].shape == (800, 360, 3)
    obs, _ = env.reset(seed=0)
    assert obs["screenshot"].shape == (800, 360, 3) and device.current_package() == NOTES
    env.close()
    env.close()
    assert not device._closed
    with pytest.raises(EnvError):
        env.unwrapped.reset()


def test_bad_arguments_give_typed_errors():
    with pytest.raises(AppError, match="unknown app 'com.example.nope'"):
        make(app="com.example.nope")
    with pytest.raises(TaskError, match="unknown task"):
        make(task="NotesAddNoet")
    with pytest.raises(TaskError, match="not com.example.notes"):
        make(task="ExpensesLogExpense")
    with pytest.raises(ConfigError, match="reward"):
        make(reward="dense")
    with pytest.raises(ConfigError, match="max_steps"):
        make(max_steps=0)
    with pytest.raises(ConfigError, match="Device protocol"):
        make(device="emulator-5554")


def test_importing_coadapt_registers_cheaply():
    code = ("import sys, coadapt, gymnasium; coadapt._register_gym_env()\n"
            "assert 'coadapt/Android-v0' in gymnasium.registry\n"
            "heavy = ('torch', 'transformers', 'gradio', 'peft', 'coadapt.gym_env', 'coadapt.android_env.sim')\n"
            "print(','.join(m for m in heavy if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_survives_without_gymnasium():
    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import coadapt; print(coadapt.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == coadapt.__version__


def test_a_device_fault_truncates_unscored():
    from coadapt.android_env.errors import DeviceOfflineError

    class Unplugged(SimDevice):
        def tap(self, x, y):
            raise DeviceOfflineError("device went away", command="input tap", serial=self.serial)

    env = make(task="NotesAddNote", reward="task", device=Unplugged(make_apps([NOTES])))
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("tap(0)")
    assert truncated and not terminated and info["infra_error"] and "went away" in info["error"]
    assert reward == 0.0 and info["success"] is None
    env.close()


def test_unreadable_app_state_leaves_the_episode_unscored():
    from coadapt.android_env.errors import DeviceError

    class Sealed(SimDevice):
        def read_app_state(self, package):
            raise DeviceError("no access to app data", command=f"run-as {package}", serial=self.serial)

    env = make(task="NotesAddNote", reward="task", device=Sealed(make_apps([NOTES])))
    _, info = env.reset(seed=3)
    _, reward, terminated, _, info = play_oracle(env, info)
    assert terminated and reward == 0.0 and info["success"] is None and info["infra_error"]
    env.close()
