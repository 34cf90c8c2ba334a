"""A real checkpoint's shape, small: Qwen2.5-VL-3B-Instruct's published config with fewer and
narrower layers, its special-token ids, chat template, processor and generation settings, saved in
the published folder layout; then the paths a real checkpoint takes (load, eval, LoRA, processor).
Also: a torchvision that cannot load beside this torch gives a clear ModelLoadError."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

torch = pytest.importorskip("torch")

from coadapt.adapt.config import AdaptConfig  # noqa: E402
from coadapt.adapt.trainer import LoraTrainer, TrainSample  # noqa: E402
from coadapt.android_env.observation import Observation  # noqa: E402
from coadapt.android_env.sim.device import SimDevice  # noqa: E402
from coadapt.apps import make_apps  # noqa: E402
from coadapt.config import DeviceSettings, ModelSettings  # noqa: E402
from coadapt.evaluation import run_suite, suite_tasks  # noqa: E402
from coadapt.policy import load_policy  # noqa: E402
from coadapt.policy.agent import BUNDLED_MODEL  # noqa: E402
from coadapt.policy.model import VLMPolicy  # noqa: E402
from coadapt.policy.processor import (ImageOnlyQwen2_5_VLProcessor, ModelLoadError, check_torchvision,  # noqa: E402
                                      load_processor, torchvision_usable)
from coadapt.policy.prompt import PolicyInput  # noqa: E402
from coadapt.runs import RunStore  # noqa: E402
from coadapt.tasks.suite import Suite  # noqa: E402
from coadapt.wiring import build_policy, build_pool, rollout_settings  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")

# ----------------------------------------------------------------------------- published values

QWEN25_VL_3B_CONFIG: dict = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "vision_start_token_id": 151652,
    "vision_end_token_id": 151653,
    "vision_token_id": 151654,
    "image_token_id": 151655,
    "video_token_id": 151656,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 11008,
    "max_position_embeddings": 128000,
    "max_window_layers": 70,
    "model_type": "qwen2_5_vl",
    "num_attention_heads": 16,
    "num_hidden_layers": 36,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.41.2",
    "use_cache": True,
    "use_sliding_window": False,
    "vision_config": {
        "depth": 32,
        "hidden_act": "silu",
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_chans": 3,
        "out_hidden_size": 2048,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "spatial_patch_size": 14,
        "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "tokens_per_second": 2,
        "temporal_patch_size": 2,
    },
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vocab_size": 151936,
}
"""Qwen/Qwen2.5-VL-3B-Instruct's config.json as published (the flat pre-v5 layout)."""

REDUCED_TEXT = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 1,
                "num_key_value_heads": 1}
"""Fewer, narrower text layers. The head width stays the real 128 (2048 / 16), which the real
mrope_section [16, 24, 24] splits (16 + 24 + 24 = 128 / 2); the vocabulary stays whole, so every
special-token id is the real one."""

REDUCED_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 128,
                  "fullatt_block_indexes": [1]}
"""Two vision blocks, windowed then full attention (the real tower has full attention every 8th block)."""

PREPROCESSOR_CONFIG = {
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen2_5_VLProcessor",
}
"""The published preprocessor_config.json."""

GENERATION_CONFIG = {"bos_token_id": 151643, "pad_token_id": 151643, "do_sample": True, "eos_token_id": [151645, 151643],
                     "repetition_penalty": 1.05, "temperature": 0.1, "top_p": 0.001, "top_k": 1}
"""The published generation_config.json (the policy must decode with its own settings instead)."""

CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen2.5-VL-Instruct's chat template (chat_template.json), with its default system turn."""

FIRST_ADDED_ID = 151643
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                  "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>")
"""Qwen2's special tokens, in id order from 151643 (<|image_pad|> is 151655)."""
PLAIN_ADDED_TOKENS = ("<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                      "<|repo_name|>", "<|file_sep|>")
"""Added but not special (151657-151664)."""

# ----------------------------------------------------------------------------- the folder


def reduced_config() -> dict:
    """The published config with REDUCED_TEXT and REDUCED_VISION applied."""
    cfg = copy.deepcopy(QWEN25_VL_3B_CONFIG)
    cfg.update(REDUCED_TEXT)
    cfg["vision_config"].update(REDUCED_VISION)
    return cfg


def _tokenizer_json() -> dict:
    """The bundled model's byte-level BPE (Qwen2's pre-tokenizer, NFC, byte-level decoder, as the real
    tokenizer) renumbered, padded with never-merged placeholders up to 151643, then Qwen2's added
    tokens at their real ids."""
    tok = json.loads((BUNDLED_MODEL / "tokenizer.json").read_text(encoding="utf-8"))
    added = {t["content"] for t in tok["added_tokens"]}
    regular = [t for t, _ in sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1]) if t not in added]
    vocab = {t: i for i, t in enumerate(regular)}
    vocab.update({f"<|unused_{i}|>": i for i in range(len(vocab), FIRST_ADDED_ID)})
    tok["model"]["vocab"] = vocab
    tok["added_tokens"] = [{"id": FIRST_ADDED_ID + k, "content": t, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False, "special": k < len(SPECIAL_TOKENS)}
                           for k, t in enumerate(SPECIAL_TOKENS + PLAIN_ADDED_TOKENS)]
    return tok


def _tokenizer_config() -> dict:
    decoder = {str(FIRST_ADDED_ID + k): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                                         "single_word": False, "special": k < len(SPECIAL_TOKENS)}
               for k, t in enumerate(SPECIAL_TOKENS + PLAIN_ADDED_TOKENS)}
    return {"add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": decoder,
            "additional_special_tokens": list(SPECIAL_TOKENS[1:]), "bos_token": None, "chat_template": CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
            "model_max_length": 131072, "pad_token": "<|endoftext|>", "split_special_tokens": False,
            "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}


def write_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A randomly initialised reduced model in bfloat16, in the published file layout (flat
    config.json, preprocessor_config.json, chat_template.json, tokenizer files, generation config);
    no coadapt files, as a downloaded checkpoint."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    if not (BUNDLED_MODEL / "tokenizer.json").is_file():
        pytest.skip("the bundled tiny VLM (whose tokenizer this reuses) is not built")
    cfg = reduced_config()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(**copy.deepcopy(cfg)))
    model.to(torch.bfloat16).save_pretrained(folder)
    files = {"config.json": cfg, "generation_config.json": GENERATION_CONFIG,
             "preprocessor_config.json": PREPROCESSOR_CONFIG, "chat_template.json": {"chat_template": CHAT_TEMPLATE},
             "tokenizer_config.json": _tokenizer_config(), "tokenizer.json": _tokenizer_json()}
    for name, data in files.items():
        indent = None if name == "tokenizer.json" else 2  # 151,665 vocabulary entries
        (folder / name).write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def real_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("qwen25vl-3b-reduced"))


@pytest.fixture(scope="module")
def screens() -> list[Observation]:
    """The launcher and the Notes list."""
    device = SimDevice(make_apps(["com.example.notes"]))
    home = Observation.build(device.screenshot(), device.ui_tree(), device.current_package(), 0)
    device.launch("com.example.notes")
    notes = Observation.build(device.screenshot(), device.ui_tree(), device.current_package(), 1)
    return [home, notes]


def _settings(folder: Path) -> ModelSettings:
    return ModelSettings(model=str(folder), threads=1)


# ----------------------------------------------------------------------------- loading


def test_loads_through_the_cli_path_as_a_real_checkpoint(real_dir: Path, screens: list[Observation]) -> None:
    from safetensors.torch import load_file

    agents = build_policy(_settings(real_dir))  # what `coadapt eval --model PATH` builds
    policy: VLMPolicy = agents.policy  # type: ignore[attr-defined]
    model, tok = policy.model, policy.tokenizer
    assert type(model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    assert model.dtype == torch.bfloat16  # dtype "auto": the checkpoint's
    assert type(policy.processor).__name__ in ("ImageOnlyQwen2_5_VLProcessor", "Qwen2_5_VLProcessor")
    assert isinstance(policy.processor, ImageOnlyQwen2_5_VLProcessor) != torchvision_usable()
    state = model.state_dict()
    saved = load_file(str(real_dir / "model.safetensors"))  # under the published names (model.*, visual.*)
    loaded = {k: next(state[n] for n in (k, "model.language_model." + k.removeprefix("model."), "model." + k) if n in state)
              for k in saved}
    assert all(torch.equal(loaded[k], v) for k, v in saved.items()), "every weight came from the file"

    # the real ids, from the config, the tokenizer and the policy
    cfg = model.config
    assert (cfg.image_token_id, cfg.video_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id) == \
        (151655, 151656, 151652, 151653)
    assert cfg.text_config.rope_parameters["mrope_section"] == [16, 24, 24]
    assert cfg.text_config.hidden_size // cfg.text_config.num_attention_heads == 128
    assert cfg.vision_config.window_size == 112 and cfg.vision_config.fullatt_block_indexes == [1]
    assert [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == list(range(151643, 151657))
    assert len(tok) == 151665
    assert (policy.end_id, policy.pad_id) == (151645, 151643)
    assert policy.config.coordinates == "image" and policy.config.temperature == 0.0  # defaults for a foreign folder

    inp = PolicyInput(screens[1], "Open the first note", ())
    prompt = policy.prompt(inp)
    assert prompt.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                             "<|vision_start|><|image_pad|><|vision_end|>")
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
    batch = policy.encode([inp])
    t, h, w = batch["image_grid_thw"][0].tolist()
    image_tokens = int((batch["input_ids"] == 151655).sum())
    assert image_tokens == t * h * w // 4 == int(batch["mm_token_type_ids"].sum())
    with torch.no_grad():
        model(**batch, logits_to_keep=1)  # all 1,650 rows of 151,936 logits would take seconds
    assert bool((model.model.rope_deltas < 0).all()), "image tokens got 3-D M-RoPE positions"


@pytest.mark.slow
def test_one_eval_episode_on_a_sim_phone(real_dir: Path, tmp_path: Path) -> None:
    devices = DeviceSettings(workers=1)
    suite = Suite(name="real-config", tasks=("ClockToggleAlarm",), seed=11)  # 6 steps at most
    _, templates = suite_tasks(suite)
    agents = build_policy(_settings(real_dir), templates)
    store = RunStore(tmp_path / "run")
    try:
        report = run_suite(suite, agents, build_pool(devices), store, settings=rollout_settings(devices),
                           templates=templates)
        assert report["n_episodes"] == 1
        (episode,) = store.episodes()
        assert episode.status == "finished" and episode.policy == str(real_dir)
        assert 1 <= episode.steps <= 6
        steps = store.steps(episode.id)
        assert len(steps) == episode.steps
        for s in steps:
            assert isinstance(s["raw_output"], str)
            assert 1 <= len(s["token_ids"]) == len(s["logprobs"]) <= agents.policy.config.max_new_tokens
            assert all(math.isfinite(lp) and lp <= 0 for lp in s["logprobs"])
    finally:
        store.close()


@pytest.mark.slow
def test_one_lora_step_through_the_trainer(real_dir: Path, screens: list[Observation]) -> None:
    policy = load_policy(str(real_dir)).policy
    home, notes = screens
    sampled_input = PolicyInput(home, "Open the Notes app", ())
    (gen,) = policy.generate([sampled_input])
    samples = [TrainSample(sampled_input, gen.token_ids, gen.logprobs, advantage=1.0),
               TrainSample(PolicyInput(notes, "Open the first note", ('open_app "Notes"',)),
                           tuple(policy.target_ids('tap "Notes"')), (), advantage=0.5, imitate=True)]
    trainer = LoraTrainer(policy, AdaptConfig(epochs=1, batch_size=2))
    trainable = {n for n, p in policy.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n and "language_model" in n for n in trainable)  # the vision tower is left alone
    assert any(".mlp.down_proj." in n for n in trainable) and any(".self_attn.k_proj." in n for n in trainable)
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}

    metrics = trainer.update(samples)

    assert metrics["samples"] == 2 and metrics["optimizer_steps"] == 1
    assert all(math.isfinite(metrics[k]) for k in ("loss", "pg", "kl", "sft")), metrics
    # bfloat16 weights: the log-probs recorded while sampling are still what training re-scores
    # (no ratio of the sampled answer falls outside the 0.2 clip)
    assert metrics["clipped"] == 0.0, metrics
    after = dict(policy.model.named_parameters())
    moved = {n for n in trainable if not torch.equal(before[n], after[n])}
    assert any("lora_B" in n for n in moved)
    assert all(torch.isfinite(after[n]).all() for n in moved)
    assert [n for n in before if n not in trainable and not torch.equal(before[n], after[n])] == []


# ----------------------------------------------------------------------------- processor parity


def test_image_only_processor_matches_the_stock_class(real_dir: Path, screens: list[Observation]) -> None:
    """Without torchvision: the stock Qwen2_5_VLProcessor around the same parts gives the same tensors."""
    from transformers import Qwen2_5_VLProcessor
    from transformers.video_processing_utils import BaseVideoProcessor

    ours = ImageOnlyQwen2_5_VLProcessor.from_pretrained(real_dir)
    assert ours.image_processor.size == {"shortest_edge": 3136, "longest_edge": 12845056}
    assert ours.chat_template == CHAT_TEMPLATE
    with mock.patch.object(Qwen2_5_VLProcessor, "check_argument_for_proper_class", lambda self, name, arg: None):
        stock = Qwen2_5_VLProcessor(image_processor=ours.image_processor, tokenizer=ours.tokenizer,
                                    video_processor=BaseVideoProcessor(), chat_template=ours.chat_template)
    policy = VLMPolicy.load(real_dir)
    texts = [policy.prompt(PolicyInput(obs, "Open the first note", ())) for obs in screens]
    images = [obs.screenshot for obs in screens]
    a = ours(text=texts, images=images, return_tensors="pt", padding=True)
    b = stock(text=texts, images=images, return_tensors="pt", padding=True)
    assert set(a) == set(b) >= {"input_ids", "attention_mask", "pixel_values", "image_grid_thw", "mm_token_type_ids"}
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.skipif(not torchvision_usable(), reason="the stock AutoProcessor for Qwen2.5-VL needs a torchvision that "
                    "imports beside this torch (CPU machines: none; see docs/real-models.md)")
def test_stock_autoprocessor_matches_ours(real_dir: Path, screens: list[Observation]) -> None:
    from transformers import AutoProcessor

    stock = AutoProcessor.from_pretrained(real_dir)
    ours = ImageOnlyQwen2_5_VLProcessor.from_pretrained(real_dir)
    assert type(load_processor(real_dir)).__name__ == type(stock).__name__  # with torchvision, the stock one is used
    policy = VLMPolicy.load(real_dir)
    text = policy.prompt(PolicyInput(screens[1], "Open the first note", ()))
    a = ours(text=[text], images=[screens[1].screenshot], return_tensors="pt")
    b = stock(text=[text], images=[screens[1].screenshot], return_tensors="pt")
    for key in ("input_ids", "attention_mask", "image_grid_thw", "mm_token_type_ids"):
        assert torch.equal(a[key], b[key]), key
    assert torch.allclose(a["pixel_values"], b["pixel_values"], atol=0.1)  # torchvision resizes a bit differently


# ----------------------------------------------------------------------------- a broken torchvision


@pytest.fixture
def broken_torchvision(tmp_path: Path) -> Path:
    """A folder holding a torchvision 0.28.0 (built for torch==2.13.0) whose import fails the way
    the CUDA build does beside the CPU-only torch."""
    root = tmp_path / "broken-tv"
    (root / "torchvision").mkdir(parents=True)
    (root / "torchvision" / "__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    info = root / "torchvision-0.28.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.28.0\n"
                                   "Requires-Dist: numpy\nRequires-Dist: torch (==2.13.0)\n")
    return root


def test_a_broken_torchvision_is_reported_not_raised_deep(broken_torchvision: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        monkeypatch.delitem(sys.modules, name)  # a working torchvision, where one is installed, hides for this test
    monkeypatch.syspath_prepend(str(broken_torchvision))
    assert torchvision_usable() is False  # never raises
    with pytest.raises(ModelLoadError) as err:
        check_torchvision()
    message = str(err.value)
    assert "\n" not in message
    assert "torchvision 0.28.0 (requires torch==2.13.0) is installed but cannot be imported beside torch" in message
    assert "RuntimeError: operator torchvision::nms does not exist" in message
    assert "pip uninstall torchvision" in message and "docs/real-models.md" in message
    assert isinstance(err.value.__cause__, RuntimeError)
    with pytest.raises(ModelLoadError, match="pip uninstall torchvision"):
        load_processor(tmp_path)


@pytest.mark.slow
def test_eval_with_a_broken_torchvision_says_what_to_do(broken_torchvision: Path, tmp_path: Path) -> None:
    """In a fresh process transformers itself fails to import; the command still ends in one line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken_torchvision), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "coadapt.cli", "eval", "--suite", "smoke", "--model", str(tmp_path), "--workers", "1",
            "--out", str(tmp_path / "run")]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[-3000:]
    assert "Traceback" not in out
    assert "torchvision 0.28.0 (requires torch==2.13.0) is installed but cannot be imported" in out
    assert "pip uninstall torchvision" in out
