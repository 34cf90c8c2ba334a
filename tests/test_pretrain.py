"""Pretraining end to end with a tiny budget: a loadable model folder, resuming, config errors."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from coadapt.android_env.env import AndroidEnv  # noqa: E402
from coadapt.android_env.errors import ConfigError  # noqa: E402
from coadapt.android_env.sim import SimDevice  # noqa: E402
from coadapt.apps import label_map, make_apps  # noqa: E402
from coadapt.demos import DemoConfig, demo_instances, iter_demos  # noqa: E402
from coadapt.policy import load_policy  # noqa: E402
from coadapt.policy.tiny import TinyVLMConfig, build_processor, build_tokenizer  # noqa: E402
from coadapt.pretrain import (  # noqa: E402
    METRICS_FILE, PixelCodec, PretrainConfig, batch_order, prepare_example, run_pretrain,
)
from coadapt.rollout import TaskCard, run_episode  # noqa: E402
from coadapt.tasks.registry import get_template  # noqa: E402

NOTES = "com.example.notes"
MICRO = TinyVLMConfig(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64,
                      vision_hidden_size=16, vision_depth=1, vision_heads=1, vision_intermediate_size=32,
                      image_tokens=4, min_image_tokens=1, vocab_size=400)


def micro_config(out: Path, **kw) -> PretrainConfig:
    base = PretrainConfig(out=str(out), model=MICRO, demos=DemoConfig(episodes_per_task=1, apps=(NOTES,)),
                          corpus_episodes_per_task=1, steps=4, warmup_steps=1, batch_size=4, val_every=2,
                          val_episodes_per_task=1, val_samples=8, val_batch=8, log_every=1, checkpoint_every=2,
                          threads=1)
    return replace(base, **kw)


@pytest.fixture(autouse=True)
def short_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """An untrained model never writes the end token: cap answers so validation stays fast."""
    import coadapt.pretrain as pretrain

    monkeypatch.setattr(pretrain, "TINY_POLICY_CONFIG", replace(pretrain.TINY_POLICY_CONFIG, max_new_tokens=6))


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, dict]]]:
    import coadapt.pretrain as pretrain

    mp = pytest.MonkeyPatch()
    mp.setattr(pretrain, "TINY_POLICY_CONFIG", replace(pretrain.TINY_POLICY_CONFIG, max_new_tokens=6))
    events: list[tuple[str, dict]] = []
    out = tmp_path_factory.mktemp("pretrain") / "model"
    try:
        folder = run_pretrain(micro_config(out), progress=lambda e, d: events.append((e, d)))
    finally:
        mp.undo()
    return folder, events


def test_run_pretrain_writes_a_loadable_hf_folder(trained) -> None:
    folder, events = trained
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
            "coadapt_policy.json", "processor_config.json", METRICS_FILE} <= names
    metrics = json.loads((folder / METRICS_FILE).read_text())
    assert [row["step"] for row in metrics["validation"]] == [2, 4]
    assert metrics["best"]["step"] in (2, 4)
    assert metrics["data"]["train_decisions"] > 0 and metrics["config"]["steps"] == 4
    assert "out" not in metrics["config"] and "threads" not in metrics["config"]
    assert [e for e, _ in events if e == "validate"] == ["validate", "validate"]
    assert events[-1][0] == "done"
    policy_cfg = json.loads((folder / "coadapt_policy.json").read_text())
    assert policy_cfg["prompt"]["style"] == "text"

    # the path `coadapt eval --policy <folder>` takes, then one real episode
    agents = load_policy(folder)
    task = get_template("NotesDeleteNote").from_seed(demo_instances(0, 1, (NOTES,), "val")[0].seed)
    env = AndroidEnv(SimDevice(make_apps([NOTES])), app_names=label_map())
    card = TaskCard.from_template(task, "NotesDeleteNote#0")
    traj = run_episode(env, agents.start(card, 1), card)
    assert traj.steps and not traj.infra_error
    assert all(s.raw_output is not None for s in traj.steps)


def test_validation_instances_are_held_out(trained) -> None:
    train = {t.seed for t in demo_instances(0, 1, (NOTES,), "train")}
    val = {t.seed for t in demo_instances(0, 1, (NOTES,), "val")}
    assert train and val and not train & val


def test_an_occupied_out_folder_is_refused(trained) -> None:
    folder, _ = trained
    with pytest.raises(ConfigError, match="resume"):
        run_pretrain(micro_config(folder))


def test_a_killed_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    out = tmp_path / "model"

    class Killed(Exception):
        pass

    def kill_at_3(event: str, data: dict) -> None:
        if event == "step" and data["step"] == 3:
            raise Killed

    with pytest.raises(Killed):
        run_pretrain(micro_config(out), progress=kill_at_3)
    assert (out.with_name("model.train") / "state.pt").exists()
    with pytest.raises(ConfigError, match="differ"):
        run_pretrain(micro_config(out, resume=True, lr=1e-3))
    steps: list[int] = []
    run_pretrain(micro_config(out, resume=True), progress=lambda e, d: steps.append(d["step"]) if e == "step" else None)
    assert steps == [3, 4]  # picks up after the checkpoint at step 2
    metrics = json.loads((out / METRICS_FILE).read_text())
    assert [row["step"] for row in metrics["validation"]] == [2, 4]


def test_cached_pixels_are_exact() -> None:
    sample = next(iter(iter_demos(DemoConfig(episodes_per_task=1, apps=(NOTES,)))))
    tokenizer = build_tokenizer(["hello"], vocab_size=400)
    from coadapt.policy.model import VLMPolicy
    from coadapt.policy.tiny import TINY_POLICY_CONFIG, build_model

    policy = VLMPolicy(build_model(MICRO, tokenizer), build_processor(tokenizer, MICRO), TINY_POLICY_CONFIG)
    codec = PixelCodec(policy.processor.image_processor)
    ex = prepare_example(policy, codec, sample)
    pixels = policy.prepare(sample.policy_input, sample.target)["pixel_values"]
    assert torch.allclose(codec.decode(ex.pixels), pixels, atol=1e-6)


def test_batch_order_is_seeded_and_covers_each_example_once() -> None:
    class Ex:
        def __init__(self, n: int):
            self.length = n

    examples = [Ex(n) for n in range(100)]
    a = batch_order(examples, 8, 4, seed=0, epoch=0)
    assert a == batch_order(examples, 8, 4, seed=0, epoch=0)
    assert a != batch_order(examples, 8, 4, seed=0, epoch=1)
    flat = [i for b in a for i in b]
    assert len(flat) == len(set(flat)) and all(len(b) == 8 for b in a)


@pytest.mark.parametrize("bad, field", [({"steps": 0}, "steps"), ({"lr": 0.0}, "lr"), ({"batch_size": -2}, "batch_size"),
                                        ({"warmup_steps": 10, "steps": 5}, "warmup_steps"), ({"threads": 0}, "threads"),
                                        ({"minutes": -1.0}, "minutes"), ({"min_lr_ratio": 2.0}, "min_lr_ratio")])
def test_bad_values_raise_config_errors_naming_the_field(bad: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        PretrainConfig(**bad)


def test_from_dict_reads_nested_settings_and_refuses_unknown_keys() -> None:
    cfg = PretrainConfig.from_dict({"steps": 10, "warmup_steps": 2, "model": {"hidden_size": 64, "num_heads": 2,
                                                                            "num_kv_heads": 1},
                                    "demos": {"apps": ["Notes"], "episodes_per_task": 3}})
    assert cfg.model.hidden_size == 64 and cfg.demos.apps == ("Notes",) and cfg.steps == 10
    # what a section does not name keeps the recipe's default, not the section class's own
    only_apps = PretrainConfig.from_dict({"demos": {"apps": ["notes", "clock"]}})
    assert only_apps.demos.episodes_per_task == PretrainConfig().demos.episodes_per_task == 80
    assert PretrainConfig.from_dict({"prompt": {}}).prompt == PretrainConfig().prompt
    with pytest.raises(ConfigError, match="unknown key"):
        PretrainConfig.from_dict({"stepz": 1})
    with pytest.raises(ConfigError, match="hidden"):
        PretrainConfig.from_dict({"model": {"hiden_size": 1}})
    with pytest.raises(ConfigError, match="unseen"):
        PretrainConfig.from_dict({"demos": {"apps": ["com.example.expenses"]}})


def test_data_do_not_depend_on_the_number_of_workers() -> None:
    from coadapt.demos import DemoStats
    from coadapt.policy.model import VLMPolicy
    from coadapt.policy.tiny import TINY_POLICY_CONFIG, build_model
    from coadapt.pretrain import _prepare_all

    tokenizer = build_tokenizer(["hello"], vocab_size=400)
    policy = VLMPolicy(build_model(MICRO, tokenizer), build_processor(tokenizer, MICRO), TINY_POLICY_CONFIG)
    codec = PixelCodec(policy.processor.image_processor)
    demos = DemoConfig(episodes_per_task=2, apps=(NOTES,), popup_share=0.5, detour_share=0.5)
    runs = []
    for workers in (1, 2):
        stats = DemoStats()
        seen: list[tuple[int, int]] = []
        examples = _prepare_all(policy, codec, demos, "train", workers, stats, lambda d, n: seen.append((d, n)))
        assert seen[-1] == (16, 16)
        runs.append(([(e.input_ids.tolist(), e.answer.tolist(), e.source) for e in examples], stats.to_dict()))
    assert runs[0] == runs[1]


def test_the_bundled_recipe_prompts_without_indices() -> None:
    from coadapt.policy.prompt import PolicyInput, prompt_text

    cfg = PretrainConfig()
    assert cfg.prompt.show_indices is False and cfg.policy_config.constrain_names is True
    assert cfg.policy_config.constrain_text is True
    sample = next(iter(iter_demos(DemoConfig(episodes_per_task=1, apps=(NOTES,)))))
    text = prompt_text(PolicyInput(sample.observation, "x"), cfg.prompt)
    assert "[0]" not in text and 'TextView "Notes"' in text


def test_text_variants_tokenize_like_prepare_and_randomise_consistently() -> None:
    import random

    from coadapt.android_env.actions import Invalid
    from coadapt.demos import entity_pool, randomize_entities
    from coadapt.policy.model import VLMPolicy
    from coadapt.policy.parser import parse_action
    from coadapt.policy.tiny import TINY_POLICY_CONFIG, build_model
    from coadapt.pretrain import prepare_text_variant

    samples = list(iter_demos(DemoConfig(episodes_per_task=1, apps=(NOTES,))))
    tokenizer = build_tokenizer([s.goal for s in samples], vocab_size=400)
    policy = VLMPolicy(build_model(MICRO, tokenizer), build_processor(tokenizer, MICRO), TINY_POLICY_CONFIG)
    codec = PixelCodec(policy.processor.image_processor)
    base = prepare_example(policy, codec, samples[1])
    same = prepare_text_variant(policy, samples[1], base)
    assert torch.equal(same.input_ids, base.input_ids) and torch.equal(same.answer, base.answer)
    assert torch.equal(same.mm_token_type_ids, base.mm_token_type_ids)

    pool = entity_pool([s.goal for s in samples] + [s.target for s in samples])
    changed = 0
    for s in samples:
        v = randomize_entities(s, pool, random.Random(0))
        if v is None:
            continue
        changed += 1
        assert v.source == s.source + "+random" and v.task == s.task
        assert not isinstance(parse_action(v.target, v.observation), Invalid)
        assert v.observation.screenshot is s.observation.screenshot
        title = next((val for val in get_template(s.task).from_seed(s.seed).values.values()
                      if isinstance(val, str) and val in s.goal and len(val) > 3), None)
        if title is not None and title in s.target:
            assert title not in v.target and title not in v.goal
    assert changed >= len(samples) // 2


def test_continued_pretraining_with_exploration_notes_in_the_prompts(trained, tmp_path: Path) -> None:
    """`init` continues from a model folder (its tokenizer and weights); `memory_share` shows the
    seen app's exploration memory as a Notes: line in that share of the training prompts."""
    import coadapt.pretrain as pretrain

    folder, _ = trained
    cfg = micro_config(tmp_path / "noted", init=str(folder), memory_share=1.0, memory_steps=40, data_workers=1)
    assert "memory_share" in cfg.identity() and "memory_share" not in micro_config(tmp_path / "x").identity()
    prompts: list[str] = []
    real = pretrain.prepare_example

    def spy(policy, codec, sample, prompt=None):
        prompts.append(policy.prompt(sample.policy_input))
        return real(policy, codec, sample, prompt)

    mp = pytest.MonkeyPatch()
    mp.setattr(pretrain, "prepare_example", spy)
    try:
        out = run_pretrain(cfg)
    finally:
        mp.undo()
    memory = json.loads((cfg.train_dir / "memory.json").read_text())[NOTES]
    assert memory and '" holds: ' in memory
    noted = [p for p in prompts if "Notes: " in p]
    assert noted and all(memory.splitlines()[0] in p for p in noted)
    assert any("Notes: " not in p for p in prompts)  # validation decisions stay without notes
    before = load_policy(str(folder)).policy
    after = load_policy(str(out)).policy
    assert after.tokenizer.get_vocab() == before.tokenizer.get_vocab()  # the init model's own tokenizer
    assert not all(torch.equal(a, b) for a, b in zip(before.model.parameters(), after.model.parameters()))
    with pytest.raises(ConfigError, match="init"):
        micro_config(tmp_path / "y", init=str(tmp_path / "nowhere"))
