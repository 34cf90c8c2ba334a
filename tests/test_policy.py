"""The tiny VLM pipeline end to end on CPU: build, save, load, act on a sim phone, score, train."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest

torch = pytest.importorskip("torch")

from coadapt.android_env.actions import Action, OpenApp, Tap, Type  # noqa: E402
from coadapt.android_env.env import AndroidEnv  # noqa: E402
from coadapt.android_env.errors import ConfigError  # noqa: E402
from coadapt.android_env.observation import Observation  # noqa: E402
from coadapt.android_env.sim.device import SimDevice  # noqa: E402
from coadapt.apps import label_map, make_apps  # noqa: E402
from coadapt.policy import load_policy  # noqa: E402
from coadapt.policy.agent import BUNDLED_MODEL  # noqa: E402
from coadapt.policy.model import LoraSettings, VLMPolicy  # noqa: E402
from coadapt.policy.parser import format_action  # noqa: E402
from coadapt.policy.processor import ImageOnlyQwen2_5_VLProcessor, ModelLoadError, torchvision_usable  # noqa: E402
from coadapt.policy.prompt import PolicyInput  # noqa: E402
from coadapt.policy.tiny import TINY_POLICY_CONFIG, TinyVLMConfig, build_tiny_policy, count_parameters  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_thread")


class TrivialTask:
    goal = "add a note titled milk"
    max_steps = 4

    def setup(self, device) -> None:
        pass


def _card():
    from coadapt.rollout import TaskCard

    return TaskCard(key="trivial#0", goal=TrivialTask.goal, app="com.example.notes", max_steps=TrivialTask.max_steps,
                    seed=0, start_in_app=False)


@pytest.fixture(scope="module")
def screens() -> list[Observation]:
    """Launcher, Notes list, Notes editor."""
    env = AndroidEnv(SimDevice(make_apps(["com.example.notes"])), label_map())
    home = env.reset(TrivialTask())
    notes = env.step(OpenApp("Notes")).observation
    fab = next(i for i, e in enumerate(notes.elements) if e.content_desc == "New note")
    editor = env.step(Tap(index=fab)).observation
    return [home, notes, editor]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory, screens: list[Observation]) -> Path:
    corpus = [TrivialTask.goal, "open the notes app"]
    corpus += [name for obs in screens for e in obs.elements for name in (e.text, e.content_desc, e.hint) if name]
    corpus += [format_action(Tap(index=i), obs) for obs in screens for i in range(len(obs.elements))]
    folder = tmp_path_factory.mktemp("tiny")
    build_tiny_policy(corpus).save(folder)
    return folder


# A random model never writes the end token: short answers keep the tests fast.
FAST = replace(TINY_POLICY_CONFIG, max_new_tokens=12)


@pytest.fixture(scope="module")
def policy(tiny_dir: Path) -> VLMPolicy:
    return VLMPolicy.load(tiny_dir, config=FAST)


def _inputs(screens: list[Observation]) -> list[PolicyInput]:
    return [PolicyInput(obs, TrivialTask.goal, ('open_app "Notes"',)[: i]) for i, obs in enumerate(screens)]


def test_tiny_model_is_tiny_and_qwen25vl(policy: VLMPolicy) -> None:
    n = count_parameters(policy.model)
    assert 500_000 < n < 8_000_000
    assert policy.model.config.model_type == "qwen2_5_vl"
    assert type(policy.model).__name__ == "Qwen2_5_VLForConditionalGeneration"


def test_saved_folder_is_a_plain_hf_folder(tiny_dir: Path) -> None:
    names = set(os.listdir(tiny_dir))
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "processor_config.json",
            "chat_template.jinja", "generation_config.json", "coadapt_policy.json"} <= names
    proc = json.loads((tiny_dir / "processor_config.json").read_text())
    assert proc["processor_class"] == "Qwen2_5_VLProcessor"  # the stock class, for the stock AutoProcessor
    assert proc["video_processor"]["video_processor_type"] == "Qwen2VLVideoProcessor"
    saved = json.loads((tiny_dir / "coadapt_policy.json").read_text())
    assert saved["prompt"]["style"] == "text" and saved["prompt"]["instruction"] == ""


def test_about_128_image_tokens(policy: VLMPolicy, screens: list[Observation]) -> None:
    batch = policy.encode(_inputs(screens)[:1])
    image_tokens = int(batch["mm_token_type_ids"].sum())
    assert 64 <= image_tokens <= 128
    assert image_tokens == int((batch["input_ids"] == policy.model.config.image_token_id).sum())


def test_processor_matches_the_stock_processor(policy: VLMPolicy, screens: list[Observation]) -> None:
    from transformers import Qwen2_5_VLProcessor
    from transformers.video_processing_utils import BaseVideoProcessor

    ours = policy.processor
    assert isinstance(ours, ImageOnlyQwen2_5_VLProcessor)
    # The stock class insists on a torchvision video processor; images never reach it.
    with mock.patch.object(Qwen2_5_VLProcessor, "check_argument_for_proper_class", lambda self, name, arg: None):
        stock = Qwen2_5_VLProcessor(image_processor=ours.image_processor, tokenizer=ours.tokenizer,
                                    video_processor=BaseVideoProcessor(), chat_template=ours.chat_template)
    texts = [policy.prompt(inp) for inp in _inputs(screens)]
    images = [obs.screenshot for obs in screens]
    a = ours(text=texts, images=images, return_tensors="pt", padding=True)
    b = stock(text=texts, images=images, return_tensors="pt", padding=True)
    assert set(a) == set(b) >= {"input_ids", "attention_mask", "pixel_values", "image_grid_thw", "mm_token_type_ids"}
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.skipif(not torchvision_usable(), reason="the stock Qwen2.5-VL processor needs torchvision")
def test_stock_autoprocessor_loads_the_saved_folder(tiny_dir: Path, policy: VLMPolicy, screens: list[Observation]) -> None:
    from transformers import AutoProcessor

    stock = AutoProcessor.from_pretrained(tiny_dir)
    text = policy.prompt(_inputs(screens)[0])
    a = policy.processor(text=[text], images=[screens[0].screenshot], return_tensors="pt")
    b = stock(text=[text], images=[screens[0].screenshot], return_tensors="pt")
    assert torch.equal(a["input_ids"], b["input_ids"])
    assert torch.allclose(a["pixel_values"], b["pixel_values"], atol=0.1)  # torchvision resizes a bit differently


def test_mrope_positions_reach_the_model(policy: VLMPolicy, screens: list[Observation]) -> None:
    model = policy.model
    batch = policy.encode(_inputs(screens)[1:])
    with torch.no_grad():
        ours = model(**batch).logits
        # 3-D positions were used: image rows and columns share indices, so offsets are negative.
        assert bool((model.model.rope_deltas < 0).all())
        positions, _ = model.model.get_rope_index(batch["input_ids"], mm_token_type_ids=batch["mm_token_type_ids"],
                                                  image_grid_thw=batch["image_grid_thw"],
                                                  attention_mask=batch["attention_mask"])
        explicit = model(**batch, position_ids=positions).logits
        without = {k: v for k, v in batch.items() if k != "mm_token_type_ids"}
        flat = model(**without).logits
    mask = batch["attention_mask"].bool()
    assert torch.allclose(ours[mask], explicit[mask], atol=1e-5)
    assert not torch.allclose(ours[mask], flat[mask], atol=1e-4)  # the 1-D fallback differs


def test_batched_scoring_equals_one_by_one(policy: VLMPolicy, screens: list[Observation]) -> None:
    inputs = _inputs(screens)
    targets = ['open_app "Notes"', 'tap "New note"', 'type "milk" into "Title"']
    with torch.no_grad():
        batched = policy.token_logprobs(inputs, targets)
        single = [policy.token_logprobs([i], [t])[0] for i, t in zip(inputs, targets)]
    for b, s, t in zip(batched, single, targets):
        assert len(b) == len(policy.target_ids(t))
        assert bool((b <= 0).all())
        assert torch.allclose(b, s, atol=1e-4)


def test_prepared_examples_batch_again(policy: VLMPolicy, screens: list[Observation]) -> None:
    inputs, targets = _inputs(screens), ['open_app "Notes"', 'tap "New note"', "back"]
    prepared = [policy.prepare(i, t) for i, t in zip(inputs, targets)]
    with torch.no_grad():
        direct = policy.sft_loss(inputs, targets)
        again = policy.batch_loss(policy.collate(prepared[::-1]))
    assert again.item() == pytest.approx(direct.item(), abs=1e-5)
    with pytest.raises(ConfigError):
        policy.batch_logprobs(policy.encode(inputs))  # no answers to score


def test_generation_scores_its_own_tokens(policy: VLMPolicy, screens: list[Observation]) -> None:
    gens = policy.generate(_inputs(screens))
    assert len(gens) == 3
    for g in gens:
        assert isinstance(g.action, Action.__args__)  # type: ignore[attr-defined]
        assert g.image_size is not None and g.image_size[0] % 28 == 0
        assert 1 <= len(g.token_ids) <= policy.config.max_new_tokens
    with torch.no_grad():
        logps = policy.token_logprobs(_inputs(screens), [g.token_ids for g in gens])
    for lp in logps:
        # Greedy tokens are the argmax, so each has probability well above uniform.
        assert bool((lp > -torch.log(torch.tensor(float(len(policy.tokenizer))))).all())


def test_one_episode_on_a_sim_phone(tiny_dir: Path) -> None:
    agent_policy = load_policy(tiny_dir, config=FAST)
    assert agent_policy.name == str(tiny_dir)
    env = AndroidEnv(SimDevice(make_apps(["com.example.notes"])), label_map())
    obs = env.reset(TrivialTask())
    agent = agent_policy.start(_card(), 3)
    steps = 0
    while True:
        decision = agent.act(obs)
        action = decision.action
        assert isinstance(action, Action.__args__)  # type: ignore[attr-defined]
        assert isinstance(decision.raw_output, str) and len(decision.history) == steps
        result = env.step(action)
        steps += 1
        obs = result.observation
        if result.terminated or result.truncated:
            break
    assert 1 <= steps <= TrivialTask.max_steps
    assert len(agent.history) == steps


def test_sampling_is_reproducible_per_seed(tiny_dir: Path, screens: list[Observation]) -> None:
    config = replace(FAST, temperature=1.0, max_new_tokens=8)
    texts = []
    for _ in range(2):
        agent = load_policy(tiny_dir, config=config).start(_card(), 7)
        texts.append(agent.act(screens[1]).raw_output)
    assert texts[0] == texts[1]
    others = {load_policy(tiny_dir, config=config).start(_card(), s).act(screens[1]).raw_output for s in range(8)}
    assert len(others) > 1  # another episode seed samples something else


def test_sft_loss_trains(tiny_dir: Path, screens: list[Observation]) -> None:
    policy = VLMPolicy.load(tiny_dir)
    inputs, targets = _inputs(screens)[1:], ['tap "New note"', 'type "milk" into "Title"']
    policy.model.train()
    opt = torch.optim.AdamW(policy.model.parameters(), lr=3e-3)
    losses = []
    for _ in range(6):
        loss = policy.sft_loss(inputs, targets)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.5


@pytest.mark.slow
def test_what_it_learns_is_what_it_generates(tiny_dir: Path, screens: list[Observation]) -> None:
    """Overfit two demonstrations; greedy decoding must then write them back exactly, and they
    must parse to the demonstrated actions (prompt and answer tokens agree between the two)."""
    _, notes, editor = screens
    fab = next(i for i, e in enumerate(notes.elements) if e.content_desc == "New note")
    title = next(i for i, e in enumerate(editor.elements) if e.hint == "Title")
    inputs = [PolicyInput(notes, TrivialTask.goal, ('open_app "Notes"',)),
              PolicyInput(editor, TrivialTask.goal, ('open_app "Notes"', 'tap "New note"'))]
    actions = [Tap(index=fab), Type("milk", index=title)]
    targets = [format_action(a, i.observation) for a, i in zip(actions, inputs)]
    assert targets == ['tap "New note"', 'type "milk" into "Title"']
    policy = VLMPolicy.load(tiny_dir, config=FAST)
    batch = policy.encode(inputs, targets)
    torch.manual_seed(0)
    opt = torch.optim.AdamW(policy.model.parameters(), lr=3e-3)
    policy.model.train()
    for _ in range(150):
        loss = policy.batch_loss(batch)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if loss.item() < 0.02:
            break
    gens = policy.generate(inputs)
    assert [g.text for g in gens] == targets
    assert [g.action for g in gens] == actions


def test_lora_one_step_moves_adapter_not_base(tiny_dir: Path, screens: list[Observation], tmp_path: Path) -> None:
    policy = VLMPolicy.load(tiny_dir)
    policy.add_adapter(LoraSettings(r=4, alpha=8))
    names = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n and "language_model" in n for n in names)  # the vision MLP is left alone
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    policy.model.train()
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    inputs, targets = _inputs(screens)[1:], ['tap "New note"', 'type "milk" into "Title"']
    loss = policy.sft_loss(inputs, targets)
    loss.backward()
    opt.step()
    after = dict(policy.model.named_parameters())
    moved = [n for n in names if not torch.equal(before[n], after[n])]
    assert any("lora_B" in n for n in moved)
    base_moved = [n for n in before if n not in names and not torch.equal(before[n], after[n])]
    assert base_moved == []

    policy.model.eval()
    with torch.no_grad():
        tuned = policy.sft_loss(inputs, targets).item()
        with policy.adapter_disabled():
            base = policy.sft_loss(inputs, targets).item()
    assert tuned != pytest.approx(base)

    policy.save_adapter(tmp_path / "adapter")
    assert {"adapter_config.json", "adapter_model.safetensors"} <= set(os.listdir(tmp_path / "adapter"))
    reloaded = VLMPolicy.load(tiny_dir, adapter=tmp_path / "adapter")
    with torch.no_grad():
        assert reloaded.sft_loss(inputs, targets).item() == pytest.approx(tuned, abs=1e-5)
    with pytest.raises(ModelLoadError):
        reloaded.save(tmp_path / "merged")


def test_adapter_records_its_base_model_and_eval_finds_it(tiny_dir: Path, screens: list[Observation],
                                                         tmp_path: Path) -> None:
    from coadapt.config import load_config
    from coadapt.policy.adapter_record import RECORD_FILE, read_base

    policy = VLMPolicy.load(tiny_dir)
    policy.add_adapter(LoraSettings(r=4, alpha=8))
    policy.save_adapter(tmp_path / "adapter")
    assert read_base(tmp_path / "adapter") == str(tiny_dir.resolve())
    # `coadapt eval --adapter DIR` with no model named loads the adapter's base; a named model wins
    assert load_config(None, {"model.adapter": str(tmp_path / "adapter")}).model.model == str(tiny_dir.resolve())
    named = load_config(None, {"model.adapter": str(tmp_path / "adapter"), "model.model": "default"})
    assert named.model.model == "default"

    # another base model (a wider one): a ModelLoadError that says which base the adapter needs
    corpus = [TrivialTask.goal] + [e.text for obs in screens for e in obs.elements if e.text]
    wide = build_tiny_policy(corpus, TinyVLMConfig(hidden_size=64, num_heads=4, intermediate_size=128))
    wide.save(tmp_path / "wide")
    with pytest.raises(ModelLoadError, match=r"trained on .*pass --model"):
        VLMPolicy.load(tmp_path / "wide", adapter=tmp_path / "adapter")

    (tmp_path / "adapter" / RECORD_FILE).write_text("[1, 2]")
    with pytest.raises(ConfigError, match="adapter record"):
        load_config(None, {"model.adapter": str(tmp_path / "adapter")})


def test_act_returns_one_action_per_observation(policy: VLMPolicy, screens: list[Observation]) -> None:
    # A random model writes junk; the policy still returns actions (mostly Invalid), never raises.
    actions = policy.act(screens, [TrivialTask.goal] * 3, [[], [], [Tap(index=0)]])
    assert len(actions) == 3
    assert all(isinstance(a, Action.__args__) for a in actions)  # type: ignore[attr-defined]


def test_missing_models_raise_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError):
        VLMPolicy.load(tmp_path / "nothing-here")
    if not (BUNDLED_MODEL / "config.json").is_file():
        with pytest.raises(ModelLoadError, match="pretrain"):
            load_policy("default")


def test_tiny_config_validation() -> None:
    with pytest.raises(ConfigError):
        TinyVLMConfig(hidden_size=100, num_heads=3)
    with pytest.raises(ConfigError):
        TinyVLMConfig(num_heads=4, num_kv_heads=3)
    assert TinyVLMConfig().max_pixels == 128 * 28 * 28
    assert sum(TinyVLMConfig().mrope_section) == 128 // 4 // 2


@pytest.mark.slow
def test_loads_and_acts_offline_in_a_fresh_process(tiny_dir: Path) -> None:
    code = (
        "from coadapt.android_env.sim.device import SimDevice\n"
        "from coadapt.apps import make_apps\n"
        "from coadapt.android_env.observation import Observation\n"
        "from coadapt.policy.model import VLMPolicy\n"
        "d = SimDevice(make_apps(['com.example.notes']))\n"
        "obs = Observation.build(d.screenshot(), d.ui_tree(), d.current_package(), 0)\n"
        f"p = VLMPolicy.load({str(tiny_dir)!r})\n"
        "print(type(p.act([obs], ['open notes'])[0]).__name__)\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tiny_dir / "no-cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] in {c.__name__ for c in Action.__args__}  # type: ignore[attr-defined]
