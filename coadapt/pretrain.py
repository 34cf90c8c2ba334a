"""`coadapt pretrain`: behaviour cloning of the tiny VLM on oracle demonstrations from seen apps.

    cfg = PretrainConfig(out="runs/pretrain/tiny_vlm", steps=6000)
    folder = run_pretrain(cfg)            # a plain Hugging Face model folder
    load_policy(folder)                   # what `coadapt eval --policy <folder>` loads

Reads top to bottom: tokenizer from seen-app texts -> processor and random model -> demonstrations
(`coadapt.demos`, pretrain seed space, with popups and detours), each prepared once and cached
(screenshots kept as the processor's exact uint8 pixels) -> AdamW with warm-up and cosine decay
over length-bucketed batches -> every `val_every` steps: per-step exact match on held-out
demonstrations and success of real episodes played by the model on held-out seen-app instances
(pretrain seed space, "val" family; never eval or adapt seeds) -> the best checkpoint by
validation success is the output folder.

The output folder holds config.json, model.safetensors, the tokenizer, the processor and chat
template, coadapt_policy.json, and pretrain_metrics.json (config, data counts, validation curve,
wall-clock). Training state for resuming lives beside it in `<out>.train/`.

Determinism: demonstrations, tokenizer, initialisation, batch order and validation instances
follow from the config alone. What is not pinned: float results of multi-threaded CPU kernels
can differ with `threads` and the CPU type, and a `minutes` budget stops at a time, not a step
(use `steps` to reproduce a run exactly).
"""

from __future__ import annotations

import json
import logging
import math
import pickle
import random
import shutil
import tempfile
import time
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from coadapt.android_env.actions import describe
from coadapt.android_env.errors import ConfigError
from coadapt.android_env.sim import SimConfig, SimDevice
from coadapt.apps import label_map, make_apps
from coadapt.tasks.base import TaskTemplate

from .demos import (
    DemoConfig, DemoRecorder, DemoStats, Sample, corpus_texts, demo_instances, entity_pool, randomize_entities,
    seen_packages, seen_templates,
)
from .policy.model import PolicyConfig, VLMPolicy
from .policy.prompt import PromptConfig
from .policy.tiny import TINY_POLICY_CONFIG, TinyVLMConfig, build_model, build_processor, build_tokenizer, count_parameters

log = logging.getLogger(__name__)

METRICS_FILE = "pretrain_metrics.json"
"""Written into the model folder: the config, data counts, validation curve and wall-clock."""
STATE_FILE = "state.pt"
"""In `<out>.train/`: model, optimizer and progress, to resume a killed run."""

ProgressFn = Callable[[str, dict[str, Any]], None]
"""progress(event, data): events "demos" (making them), "data" (made), "step", "validate", "done"."""


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class PretrainConfig:
    """Settings of a pretraining run. Nested `model` and `demos` configs; `from_dict` reads YAML-style dicts."""

    out: str = "runs/pretrain/tiny_vlm"
    """Output model folder (a Hugging Face folder). Training state goes to `<out>.train/`."""
    model: TinyVLMConfig = field(default_factory=lambda: TinyVLMConfig(image_tokens=16, min_image_tokens=4))
    """Size of the tiny model: widths, layers, image tokens per screenshot, vocabulary size."""
    demos: DemoConfig = field(default_factory=lambda: DemoConfig(episodes_per_task=80))
    """Which demonstrations: episodes per seen task, perturbation shares, seed."""
    prompt: PromptConfig = replace(TINY_POLICY_CONFIG.prompt, show_indices=False)
    """What the prompt shows (saved with the model in coadapt_policy.json). Element lines without
    indices: the model names elements by text, and prompts are a quarter shorter."""
    constrain_names: bool = True
    """Decode quoted element names constrained to names on the screen (saved in coadapt_policy.json)."""
    constrain_text: bool = True
    """Decode typed text and answers constrained to pieces of the goal or the screen, or numbers
    (saved in coadapt_policy.json)."""
    random_copies: int = 0
    """Entity-randomised copies of each training decision (task parameters swapped for random
    words and numbers everywhere the sample shows them), so that copying from the goal and the
    screen beats remembering the tasks' few names; they share the decision's pixels (0: none).
    Off in the bundled recipe: 2 copies (keep_original 0.1) learnt slower within 10k steps
    (docs/pretraining.md)."""
    keep_original: float = 1.0
    """Share (0-1) of the randomised decisions whose original is kept too (decisions that show no
    task parameter are always kept as they are)."""
    memory_share: float = 0.0
    """Share (0-1) of training episodes whose prompts show their app's exploration memory (a
    `Notes:` line, built by exploring the seen app as `coadapt adapt` explores an unseen one), so
    the model meets notes in pretraining (0: none, the bundled recipe)."""
    memory_steps: int = 200
    """Actions of the exploration that builds each seen app's memory (explore seed space)."""
    init: str = ""
    """A model folder to continue from (its tokenizer and weights; `model` is then ignored), e.g.
    the bundled model; "" trains a new model from scratch."""
    corpus_episodes_per_task: int = 4
    """Episodes per template whose prompts train the tokenizer (goals of all episodes are used too)."""
    steps: int = 10000
    """Optimizer steps (the budget that reproduces a run exactly)."""
    minutes: float = 0.0
    """Wall-clock cap of the training loop in minutes, validation included (0: none). Stops early
    at a time, not a step: not reproducible; use `steps` for a run to be reproduced."""
    batch_size: int = 16
    """Examples (decisions) per optimizer step."""
    lr: float = 2e-3
    """Peak learning rate of AdamW, reached after `warmup_steps`."""
    min_lr_ratio: float = 0.05
    """The cosine schedule ends at lr * min_lr_ratio at `steps`."""
    warmup_steps: int = 200
    """Steps of linear warm-up from 0 to `lr`."""
    weight_decay: float = 0.01
    """AdamW weight decay on weight matrices (not on norms, biases or embeddings)."""
    grad_clip: float = 1.0
    """Gradient-norm clipping threshold (0: no clipping)."""
    bucket_batches: int = 64
    """Batches drawn together and grouped by sequence length, to cut padding (1: no grouping)."""
    seed: int = 0
    """Seeds initialisation order of batches (the model's init uses `model.seed`)."""
    val_every: int = 1250
    """Steps between validations (per-step exact match and validation episodes)."""
    val_episodes_per_task: int = 2
    """Validation episodes per seen template (pretrain seed space, "val" family)."""
    val_samples: int = 600
    """At most this many held-out demonstration decisions for per-step exact match."""
    val_batch: int = 16
    """Validation episodes played in lockstep (one batched generate per step)."""
    log_every: int = 50
    """Steps between training-loss log lines."""
    checkpoint_every: int = 500
    """Steps between saves of the training state (for resuming)."""
    threads: int = 2
    """torch CPU threads (machine setting: not part of what the run reproduces)."""
    data_workers: int = 2
    """Processes that make and prepare the demonstrations (machine setting; the data do not depend on it)."""
    resume: bool = False
    """Continue the run whose state is in `<out>.train/` (same settings required)."""
    overwrite: bool = False
    """Replace an existing model in `out` (e.g. to rebuild the bundled model in place)."""

    # Fields that say where and how fast a run goes, not what it computes.
    MACHINE_FIELDS = ("out", "threads", "data_workers", "resume", "overwrite", "minutes")
    # Fields added after the bundled model was made; left out of the identity while at these values.
    LATER_FIELDS = {"memory_share": 0.0, "memory_steps": 200, "init": ""}

    def __post_init__(self) -> None:
        positive = ("steps", "batch_size", "val_every", "val_episodes_per_task", "val_samples", "val_batch",
                    "log_every", "checkpoint_every", "threads", "data_workers", "bucket_batches", "corpus_episodes_per_task")
        for name in positive:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"pretrain: {name} must be a positive integer, got {v!r}")
        if not isinstance(self.random_copies, int) or isinstance(self.random_copies, bool) or self.random_copies < 0:
            raise ConfigError(f"pretrain: random_copies must be an integer >= 0 (0: no randomised copies), "
                              f"got {self.random_copies!r}")
        if not 0 <= self.memory_share <= 1:
            raise ConfigError(f"pretrain: memory_share is a share in [0, 1], got {self.memory_share!r}")
        if not isinstance(self.memory_steps, int) or self.memory_steps < 1:
            raise ConfigError(f"pretrain: memory_steps must be a positive integer, got {self.memory_steps!r}")
        if self.init and not (Path(self.init) / "config.json").is_file():
            raise ConfigError(f"pretrain: init {self.init!r} is not a model folder (no config.json)")
        if not 0 <= self.keep_original <= 1:
            raise ConfigError(f"pretrain: keep_original is a share in [0, 1], got {self.keep_original!r}")
        if self.random_copies == 0 and self.keep_original < 1:
            raise ConfigError("pretrain: with random_copies 0 every original must be kept; set keep_original to 1")
        if not self.lr > 0 or not math.isfinite(self.lr):
            raise ConfigError(f"pretrain: lr must be a positive number (try 1e-3 .. 3e-3), got {self.lr!r}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ConfigError(f"pretrain: min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")
        if self.warmup_steps < 0 or self.warmup_steps >= self.steps:
            raise ConfigError(f"pretrain: warmup_steps must be in [0, steps), got {self.warmup_steps} with steps {self.steps}")
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ConfigError(f"pretrain: weight_decay and grad_clip must be >= 0, got {self.weight_decay}, {self.grad_clip}")
        if self.minutes < 0:
            raise ConfigError(f"pretrain: minutes must be >= 0 (0: no time cap), got {self.minutes}")
        if self.seed < 0:
            raise ConfigError(f"pretrain: seed must be >= 0, got {self.seed}")
        if not self.out:
            raise ConfigError("pretrain: out must name the output model folder")
        if self.prompt.style != "text":
            raise ConfigError(f"pretrain: the tiny model names elements by text; prompt.style must be 'text', "
                              f"got {self.prompt.style!r}")

    # ------------------------------------------------------------------ dict round-trip

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def identity(self) -> dict[str, Any]:
        """What determines the result (machine settings left out): must match to resume."""
        d = self.to_dict()
        for name in self.MACHINE_FIELDS:
            d.pop(name, None)
        for name, default in self.LATER_FIELDS.items():
            if d.get(name) == default:  # off: a run made before the field existed matches
                d.pop(name)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PretrainConfig":
        """Build from a (YAML) mapping with nested `model`, `demos` and `prompt` mappings;
        unknown keys raise ConfigError listing the valid ones."""
        if not isinstance(data, dict):
            raise ConfigError(f"pretrain config must be a mapping, got {type(data).__name__}")
        nested = {"model": TinyVLMConfig, "demos": DemoConfig, "prompt": PromptConfig}
        kwargs: dict[str, Any] = {}
        valid = {f.name for f in fields(cls)}
        defaults = {f.name: f.default if f.default_factory is MISSING else f.default_factory()  # type: ignore[misc]
                    for f in fields(cls) if f.name in nested}
        for key, value in data.items():
            if key not in valid:
                raise ConfigError(f"pretrain config: unknown key {key!r}; valid: {', '.join(sorted(valid))}")
            if key in nested and isinstance(value, dict):
                sub = nested[key]
                sub_valid = {f.name for f in fields(sub)}
                unknown = set(value) - sub_valid
                if unknown:
                    raise ConfigError(f"pretrain config: unknown key(s) {sorted(unknown)} under {key!r}; "
                                      f"valid: {', '.join(sorted(sub_valid))}")
                value = dict(value)
                if key == "demos" and "apps" in value:
                    value["apps"] = tuple(value["apps"])
                # Fields not named keep the recipe's defaults (80 demos per template), not the
                # section class's own (a `demos: {apps: [...]}` once halved the demonstrations).
                value = replace(defaults[key], **value)
            kwargs[key] = value
        return cls(**kwargs)

    @property
    def train_dir(self) -> Path:
        """Where the resumable training state lives."""
        out = Path(self.out)
        return out.with_name(out.name + ".train")

    @property
    def policy_config(self) -> PolicyConfig:
        return replace(TINY_POLICY_CONFIG, prompt=self.prompt, constrain_names=self.constrain_names,
                       constrain_text=self.constrain_text)


# --------------------------------------------------------------------------- prepared examples


@dataclass(frozen=True, eq=False)
class Example:
    """One decision, processed once: prompt tokens, answer tokens and the screenshot's pixels
    as exact uint8 (the processor's float pixels are (u/255 - mean) / std of uint8 values)."""

    input_ids: torch.Tensor
    """(L,) int32 prompt tokens, image placeholders included."""
    mm_token_type_ids: torch.Tensor | None
    """(L,) int8: 1 on image tokens (their 3-D M-RoPE positions), when the processor gives it."""
    pixels: torch.Tensor
    """(patches, C*T*P*P) uint8."""
    grid: torch.Tensor
    """(1, 3) image_grid_thw."""
    answer: torch.Tensor
    """(A,) int32 target tokens, end token included."""
    task: str
    source: str

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[0] + self.answer.shape[0])


class PixelCodec:
    """Exact uint8 <-> float pixel_values of a Qwen2-VL image processor (mean/std per channel)."""

    def __init__(self, image_processor: Any):
        self.mean = torch.tensor(image_processor.image_mean, dtype=torch.float32)
        self.std = torch.tensor(image_processor.image_std, dtype=torch.float32)

    def _stats(self, width: int) -> tuple[torch.Tensor, torch.Tensor]:
        per = width // len(self.mean)  # the flattened patch is channel-major: C x T x P x P
        return self.mean.repeat_interleave(per), self.std.repeat_interleave(per)

    def encode(self, pixel_values: torch.Tensor) -> torch.Tensor:
        mean, std = self._stats(pixel_values.shape[1])
        return ((pixel_values.float() * std + mean) * 255).round().clamp(0, 255).to(torch.uint8)

    def decode(self, pixels: torch.Tensor) -> torch.Tensor:
        mean, std = self._stats(pixels.shape[1])
        return (pixels.float() / 255 - mean) / std


def prepare_example(policy: VLMPolicy, codec: PixelCodec, sample: Sample, prompt: PromptConfig | None = None) -> Example:
    part = policy.prepare(sample.policy_input, sample.target)
    mm = part.get("mm_token_type_ids")
    return Example(
        input_ids=part["input_ids"][0].to(torch.int32),
        mm_token_type_ids=None if mm is None else mm[0].to(torch.int8),
        pixels=codec.encode(part["pixel_values"]),
        grid=part["image_grid_thw"],
        answer=part["answer_ids"].to(torch.int32),
        task=sample.task,
        source=sample.source,
    )


def prepare_text_variant(policy: VLMPolicy, sample: Sample, base: Example) -> Example:
    """`sample` prepared on the text side only, reusing `base`'s image (same screenshot): the
    processor's image placeholder expanded to the image's token count, then tokenized, exactly as
    `VLMPolicy.prepare` tokenizes."""
    image_pad = "<|image_pad|>"
    merge = int(getattr(policy.processor.image_processor, "merge_size", 2))
    n = int(base.grid[0].prod()) // (merge * merge)
    text = policy.prompt(sample.policy_input).replace(image_pad, image_pad * n, 1)
    ids = torch.tensor(policy.tokenizer(text, add_special_tokens=False)["input_ids"], dtype=torch.int32)
    mm = None
    if base.mm_token_type_ids is not None:
        mm = (ids == policy.tokenizer.convert_tokens_to_ids(image_pad)).to(torch.int8)
    answer = torch.tensor(policy.target_ids(sample.target), dtype=torch.int32)
    return Example(ids, mm, base.pixels, base.grid, answer, sample.task, sample.source)


def collate_examples(policy: VLMPolicy, codec: PixelCodec, examples: Sequence[Example]) -> dict[str, torch.Tensor]:
    """A training batch of cached examples, through the policy's own `collate`."""
    parts = []
    for ex in examples:
        ids = ex.input_ids.to(torch.long).unsqueeze(0)
        part = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "pixel_values": codec.decode(ex.pixels),
                "image_grid_thw": ex.grid, "answer_ids": ex.answer.to(torch.long)}
        if ex.mm_token_type_ids is not None:
            part["mm_token_type_ids"] = ex.mm_token_type_ids.to(torch.long).unsqueeze(0)
        parts.append(part)
    return policy.collate(parts)


def batch_order(examples: Sequence[Example], batch_size: int, bucket: int, seed: int, epoch: int) -> list[list[int]]:
    """The batches of one epoch: a seeded shuffle, then within each window of `bucket` batches
    examples are sorted by length (less padding) and the batches shuffled again."""
    rng = random.Random(f"{seed}/epoch/{epoch}")
    idx = list(range(len(examples)))
    rng.shuffle(idx)
    window = batch_size * bucket
    batches: list[list[int]] = []
    for start in range(0, len(idx), window):
        chunk = sorted(idx[start : start + window], key=lambda i: examples[i].length)
        batches.extend(chunk[k : k + batch_size] for k in range(0, len(chunk), batch_size))
    batches = [b for b in batches if len(b) == batch_size] or batches
    rng.shuffle(batches)
    return batches


# --------------------------------------------------------------------------- validation


@torch.no_grad()
def exact_match(policy: VLMPolicy, codec: PixelCodec, examples: Sequence[Example], batch_size: int = 16
                ) -> dict[str, Any]:
    """Per-step accuracy on held-out decisions: the share whose every answer token is the
    model's argmax given the gold prefix, which is exactly when greedy decoding writes the
    target. Also the mean loss per answer token, and accuracy by sample source."""
    was = policy.model.training
    policy.model.eval()
    hits: list[bool] = []
    loss_sum, tok_sum = 0.0, 0
    try:
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            batch = collate_examples(policy, codec, chunk)
            labels = batch.pop("labels")
            n = int((labels != -100).sum(dim=1).max().item())
            logits = policy.model(**batch, logits_to_keep=n + 1, use_cache=False).logits[:, :-1].float()
            gold = labels[:, -n:]
            mask = gold != -100
            pred = logits.argmax(-1)
            ok = ((pred == gold) | ~mask).all(dim=1)
            hits.extend(bool(x) for x in ok)
            logp = torch.log_softmax(logits, -1).gather(-1, gold.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            loss_sum += float(-(logp * mask).sum())
            tok_sum += int(mask.sum())
    finally:
        policy.model.train(was)
    by_source: dict[str, list[bool]] = {}
    for ex, h in zip(examples, hits):
        by_source.setdefault(ex.source, []).append(h)
    return {"exact_match": sum(hits) / max(1, len(hits)), "loss": loss_sum / max(1, tok_sum), "n": len(hits),
            "by_source": {k: round(sum(v) / len(v), 4) for k, v in sorted(by_source.items())}}


def play_episodes(policy: VLMPolicy, tasks: Sequence[TaskTemplate], lockstep: int = 16) -> list[dict[str, Any]]:
    """Play each task once with the model (greedy) through the rollout runner, on `lockstep`
    clean simulated phones whose agents share batched forward passes, and score each by its
    ground truth (validation happens on held-out SEEN-app instances only)."""
    from coadapt.android_env.pool import DevicePool
    from coadapt.evaluation import GroundTruth
    from coadapt.policy.agent import VLMAgentPolicy
    from coadapt.rollout import RolloutRunner, RolloutSettings, TaskCard
    from coadapt.runs import RunStore

    packages = sorted({t.app for t in tasks})
    templates = {f"{t.name}#val{i}": t for i, t in enumerate(tasks)}
    cards = [TaskCard.from_template(t, key) for key, t in templates.items()]
    phones = DevicePool.of([SimDevice(make_apps(packages), SimConfig(serial=f"val-{i}"))
                            for i in range(max(1, min(lockstep, len(tasks))))])
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(tmp, screens="none")
        try:
            runner = RolloutRunner(phones, VLMAgentPolicy(policy, "validation"), store, scorer=GroundTruth(templates),
                                   settings=RolloutSettings(store_trees=False), app_names=label_map())
            played = runner.run(cards).trajectories
        finally:
            store.close()
    results = []
    for card in cards:
        traj = played[(card.key, 0)]
        task = templates[card.key]
        results.append({"task": task.name, "app": task.app, "seed": task.seed, "success": traj.score,
                        "steps": len(traj.steps), "invalid": traj.n_invalid,
                        "actions": [s.raw_output or describe(s.action) for s in traj.steps]})
    return results


def summarize_episodes(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    per_app: dict[str, list[float]] = {}
    for r in results:
        per_app.setdefault(r["app"], []).append(r["success"])
    n = max(1, len(results))
    return {"success_rate": sum(r["success"] for r in results) / n, "n": len(results),
            "mean_steps": sum(r["steps"] for r in results) / n,
            "invalid_rate": sum(r["invalid"] for r in results) / max(1, sum(r["steps"] for r in results)),
            "per_app": {k: round(sum(v) / len(v), 4) for k, v in sorted(per_app.items())}}


# --------------------------------------------------------------------------- run


def _lr_at(cfg: PretrainConfig, step: int) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    t = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def _optimizer(model: torch.nn.Module, cfg: PretrainConfig) -> torch.optim.Optimizer:
    decay, no_decay = [], []
    for name, p in {id(p): (n, p) for n, p in model.named_parameters() if p.requires_grad}.values():
        (decay if p.dim() >= 2 and "embed" not in name else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-8)


def _check_out(cfg: PretrainConfig) -> dict[str, Any] | None:
    """Refuse to clobber a model or silently restart a run; the saved state when resuming."""
    out, state_path = Path(cfg.out), cfg.train_dir / STATE_FILE
    if state_path.is_file():
        if not cfg.resume:
            raise ConfigError(f"{cfg.train_dir} holds the state of an earlier pretraining run; pass resume=True "
                              f"(--resume) to continue it, or choose another out folder")
        state = torch.load(state_path, map_location="cpu", weights_only=False)
        if state["identity"] != cfg.identity():
            diff = sorted(k for k in set(state["identity"]) | set(cfg.identity())
                          if state["identity"].get(k) != cfg.identity().get(k))
            raise ConfigError(f"cannot resume {cfg.train_dir}: settings differ from the saved run in {diff}; "
                              f"use the same settings, or another out folder")
        return state
    if (out / "config.json").exists() and not cfg.overwrite:
        raise ConfigError(f"{out} already holds a model; pass overwrite=True (--overwrite) to replace it, "
                          f"or choose another out folder")
    return None


def _save_state(cfg: PretrainConfig, policy: VLMPolicy, opt: torch.optim.Optimizer, step: int,
                history: dict[str, Any]) -> None:
    cfg.train_dir.mkdir(parents=True, exist_ok=True)
    tmp = cfg.train_dir / (STATE_FILE + ".tmp")
    torch.save({"identity": cfg.identity(), "step": step, "model": policy.model.state_dict(),
                "optimizer": opt.state_dict(), "history": history,
                "torch_rng": torch.get_rng_state()}, tmp)
    tmp.replace(cfg.train_dir / STATE_FILE)


def _save_model(policy: VLMPolicy, folder: Path) -> None:
    """Write the model folder atomically enough: into a sibling, then swap it in."""
    tmp = folder.with_name(folder.name + ".saving")
    if tmp.exists():
        shutil.rmtree(tmp)
    policy.save(tmp)
    metrics = folder / METRICS_FILE
    if folder.exists():
        keep = metrics.read_text() if metrics.exists() else None
        shutil.rmtree(folder)
        if keep is not None:
            (tmp / METRICS_FILE).write_text(keep)
    tmp.replace(folder)


_WORKER: dict[str, Any] = {}  # what forked data workers inherit (policy, codec, config)


def _prepare_shard(args: tuple[str, int, int]) -> tuple[list[tuple[int, list[Example]]], DemoStats] | bytes:
    split, shard, n_shards = args
    if _WORKER.get("forked"):
        torch.set_num_threads(1)  # a forked child must not enter the parent's OpenMP pool
    policy, codec, demos = _WORKER["policy"], _WORKER["codec"], _WORKER[split]
    copies, keep, pool = ((_WORKER["random_copies"], _WORKER["keep_original"], _WORKER["pool"]) if split == "train"
                          else (0, 1.0, []))
    memories, share = (_WORKER.get("memories", {}), _WORKER.get("memory_share", 0.0)) if split == "train" else ({}, 0.0)
    recorder = DemoRecorder(demos)
    stats = DemoStats()
    out = []
    for k, task in enumerate(demo_instances(demos.seed, demos.episodes_per_task, demos.apps, split)):
        if k % n_shards != shard:
            continue
        examples = []
        noted = share > 0 and random.Random(f"{demos.seed}/{task.seed}/memory").random() < share
        for j, sample in enumerate(recorder.record(task, stats)):
            if noted and memories.get(sample.app):
                sample = replace(sample, memory=memories[sample.app])
            base = prepare_example(policy, codec, sample)
            variants = [randomize_entities(sample, pool, random.Random(f"{demos.seed}/{task.seed}/{j}/{c}"))
                        for c in range(copies)]
            variants = [v for v in variants if v is not None]
            if not variants or random.Random(f"{demos.seed}/{task.seed}/{j}/keep").random() < keep:
                examples.append(base)
            examples.extend(prepare_text_variant(policy, v, base) for v in variants)
        out.append((k, examples))
    if _WORKER.get("forked"):
        # Plain pickle bytes: multiprocessing would pass each tensor as a shared-memory file
        # descriptor, and tens of thousands of them exhaust the process's open-file limit.
        return pickle.dumps((out, stats), protocol=pickle.HIGHEST_PROTOCOL)
    return out, stats


def _prepare_all(policy: VLMPolicy, codec: PixelCodec, demos: DemoConfig, split: str, workers: int,
                 stats: DemoStats, progress: Callable[[int, int], None] | None = None, random_copies: int = 0,
                 pool: Sequence[str] = (), keep_original: float = 1.0, memories: dict[str, str] | None = None,
                 memory_share: float = 0.0) -> list[Example]:
    """Make and prepare every demonstration of `split`, in `workers` processes (forked, so they
    share the policy); the result is in task order whatever the number of workers.
    `progress(done, total)` counts episodes."""
    total = demos.episodes_per_task * len(seen_templates(demos.apps))
    n_chunks = max(1, min(total, 8 * workers))
    _WORKER.update(policy=policy, codec=codec, random_copies=random_copies, keep_original=keep_original,
                   pool=list(pool), memories=dict(memories or {}), memory_share=memory_share, **{split: demos})
    jobs = [(split, k, n_chunks) for k in range(n_chunks)]
    pieces: list[tuple[int, list[Example]]] = []
    done = 0
    pool = None
    try:
        if workers == 1:
            results = map(_prepare_shard, jobs)
        else:
            import multiprocessing as mp

            _WORKER["forked"] = True
            pool = mp.get_context("fork").Pool(workers)
            results = pool.imap(_prepare_shard, jobs)
        for result in results:
            part, part_stats = pickle.loads(result) if isinstance(result, bytes) else result
            pieces.extend(part)
            stats.merge(part_stats)
            done += len(part)
            if progress is not None:
                progress(done, total)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _WORKER.clear()
    return [ex for _, exs in sorted(pieces, key=lambda p: p[0]) for ex in exs]


def seen_memories(cfg: PretrainConfig) -> dict[str, str]:
    """Exploration memory of every seen app, built as adaptation builds an unseen app's (one
    exploration of `memory_steps` actions from the explore seed space); kept in the training state."""
    from coadapt.adaptation import explore_card
    from coadapt.explore.job import explore_app

    path = cfg.train_dir / "memory.json"
    if path.is_file():
        return json.loads(path.read_text())
    out = {}
    for package in seen_packages(cfg.demos.apps):
        # adaptation's own exploration call (guarded phone, greedy, first run's memory), no proposals
        out[package] = explore_app(SimDevice(make_apps()), explore_card(package, cfg.demos.seed), app_names=label_map(),
                                   steps=cfg.memory_steps, seed=cfg.demos.seed, proposals=0).memory
        log.info("memory of %s: %d lines", package, len(out[package].splitlines()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return out


def run_pretrain(cfg: PretrainConfig, progress: ProgressFn | None = None) -> Path:
    """Pretrain the tiny VLM as `cfg` says and return the output model folder (best checkpoint
    by validation success). Raises ConfigError for bad settings or an occupied `out`."""
    seen_packages(cfg.demos.apps)  # seen apps only (DemoConfig checks too)
    state = _check_out(cfg)
    out = Path(cfg.out)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    wall0 = time.perf_counter()
    try:
        return _run(cfg, out, state, progress, wall0)
    finally:
        torch.set_num_threads(threads_before)


def _run(cfg: PretrainConfig, out: Path, state: dict[str, Any] | None, progress: ProgressFn | None,
         wall0: float) -> Path:
    def report(event: str, **data: Any) -> None:
        if progress is not None:
            progress(event, data)

    # ---------------------------------------------------------------- tokenizer, processor, model
    tok_dir = cfg.train_dir / "tokenizer"
    t0 = time.perf_counter()
    resuming = state is not None and (tok_dir / "tokenizer_config.json").exists()
    corpus = [] if (resuming or cfg.init) and not cfg.random_copies else list(
        corpus_texts(cfg.demos, cfg.corpus_episodes_per_task, cfg.prompt))
    pool = entity_pool(corpus) if cfg.random_copies else []
    if cfg.init:
        tokenizer = None  # the init model's own
    elif resuming:
        from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

        tokenizer = Qwen2Tokenizer.from_pretrained(tok_dir)
    else:
        tokenizer = build_tokenizer(corpus, vocab_size=cfg.model.vocab_size)
        tok_dir.mkdir(parents=True, exist_ok=True)
        tokenizer.save_pretrained(tok_dir)
        log.info("tokenizer: %d tokens from %d texts in %.1f s", len(tokenizer), len(corpus), time.perf_counter() - t0)
    torch.manual_seed(cfg.seed)
    if cfg.init:
        policy = VLMPolicy.load(cfg.init, config=cfg.policy_config)
        log.info("continuing from the model in %s", cfg.init)
    else:
        policy = VLMPolicy(build_model(cfg.model, tokenizer), build_processor(tokenizer, cfg.model), cfg.policy_config)
    codec = PixelCodec(policy.processor.image_processor)
    n_params = count_parameters(policy.model)

    # ---------------------------------------------------------------- demonstrations, prepared once
    t0 = time.perf_counter()
    stats = DemoStats()
    memories = seen_memories(cfg) if cfg.memory_share > 0 else {}
    examples = _prepare_all(policy, codec, cfg.demos, "train", cfg.data_workers, stats,
                            lambda d, n: report("demos", split="train", done=d, total=n), cfg.random_copies, pool,
                            cfg.keep_original, memories, cfg.memory_share)
    if not examples:
        raise ConfigError("pretrain: the demonstrations came out empty; check demos.apps and demos.episodes_per_task")
    val_demo_cfg = replace(cfg.demos, episodes_per_task=cfg.val_episodes_per_task)
    val_stats = DemoStats()
    val_examples = _prepare_all(policy, codec, val_demo_cfg, "val", cfg.data_workers, val_stats)
    random.Random(f"{cfg.seed}/val").shuffle(val_examples)
    val_examples = val_examples[: cfg.val_samples]
    val_tasks = demo_instances(cfg.demos.seed, cfg.val_episodes_per_task, cfg.demos.apps, "val")
    train_seeds = {t.seed for t in demo_instances(cfg.demos.seed, cfg.demos.episodes_per_task, cfg.demos.apps, "train")}
    assert not train_seeds & {t.seed for t in val_tasks}, "validation instances overlap training instances"
    data_seconds = time.perf_counter() - t0
    log.info("%d training decisions (%s), %d validation decisions, %d validation episodes, in %.0f s",
             len(examples), stats.samples, len(val_examples), len(val_tasks), data_seconds)
    report("data", examples=len(examples), stats=stats.to_dict(), seconds=data_seconds)

    # ---------------------------------------------------------------- optimizer, resume
    opt = _optimizer(policy.model, cfg)
    step = 0
    history: dict[str, Any] = {"train": [], "val": [], "best": None, "train_seconds": 0.0}
    if state is not None:
        policy.model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, history = state["step"], state["history"]
        torch.set_rng_state(state["torch_rng"])
        log.info("resumed at step %d", step)

    def validate(at: int) -> dict[str, Any]:
        t = time.perf_counter()
        em = exact_match(policy, codec, val_examples, cfg.batch_size)
        episodes = play_episodes(policy, val_tasks, cfg.val_batch)
        summary = summarize_episodes(episodes)
        row = {"step": at, "train_seconds": round(history["train_seconds"], 1), "exact_match": round(em["exact_match"], 4),
               "val_loss": round(em["loss"], 4), "exact_match_by_source": em["by_source"],
               "success_rate": round(summary["success_rate"], 4), "per_app": summary["per_app"],
               "mean_steps": round(summary["mean_steps"], 2), "invalid_rate": round(summary["invalid_rate"], 4),
               "seconds": round(time.perf_counter() - t, 1)}
        failed = sorted({e["task"] for e in episodes if e["success"] < 1})
        row["failed_tasks"] = failed
        history["val"].append(row)
        best = history["best"]
        if best is None or (row["success_rate"], row["exact_match"]) > (best["success_rate"], best["exact_match"]):
            history["best"] = {k: row[k] for k in ("step", "success_rate", "exact_match", "val_loss")}
            _save_model(policy, out)
            row["saved"] = True
        _write_metrics(cfg, out, history, n_params, stats, val_stats, len(examples), len(val_examples),
                       len(val_tasks), data_seconds, wall0)
        report("validate", **row)
        return row

    # ---------------------------------------------------------------- training loop
    policy.model.train()
    batches: list[list[int]] = []
    epoch = -1
    steps_per_epoch = len(batch_order(examples, cfg.batch_size, cfg.bucket_batches, cfg.seed, 0))
    loss_acc, n_acc, t_log = 0.0, 0, time.perf_counter()
    deadline = None if cfg.minutes <= 0 else time.perf_counter() + cfg.minutes * 60
    stopped_early = False
    while step < cfg.steps:
        if deadline is not None and time.perf_counter() > deadline:
            stopped_early = True
            log.info("time budget of %.1f min reached at step %d", cfg.minutes, step)
            break
        e, k = divmod(step, steps_per_epoch)
        if e != epoch:
            epoch, batches = e, batch_order(examples, cfg.batch_size, cfg.bucket_batches, cfg.seed, e)
        t_step = time.perf_counter()
        lr = _lr_at(cfg, step)
        for group in opt.param_groups:
            group["lr"] = lr
        batch = collate_examples(policy, codec, [examples[i] for i in batches[k]])
        loss = policy.batch_loss(batch)
        if not torch.isfinite(loss):
            raise ConfigError(f"pretrain: the loss became {float(loss)} at step {step}; lower lr (now {cfg.lr})")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(policy.model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        history["train_seconds"] += time.perf_counter() - t_step
        loss_acc += loss.detach().item()
        n_acc += 1
        if step % cfg.log_every == 0 or step == cfg.steps:
            row = {"step": step, "loss": round(loss_acc / n_acc, 4), "lr": lr, "epoch": epoch,
                   "seconds_per_step": round((time.perf_counter() - t_log) / n_acc, 3),
                   "train_seconds": round(history["train_seconds"], 1)}
            history["train"].append(row)
            log.info("step %d loss %.4f lr %.2e %.2f s/step", step, row["loss"], lr, row["seconds_per_step"])
            report("step", **row, total=cfg.steps)
            loss_acc, n_acc, t_log = 0.0, 0, time.perf_counter()
        if step % cfg.val_every == 0 and step < cfg.steps:
            validate(step)
            t_log = time.perf_counter()
        if step % cfg.checkpoint_every == 0 and step < cfg.steps:
            _save_state(cfg, policy, opt, step, history)
    if not history["val"] or history["val"][-1]["step"] != step:
        validate(step)
    history["finished"] = not stopped_early
    _save_state(cfg, policy, opt, step, history)
    _write_metrics(cfg, out, history, n_params, stats, val_stats, len(examples), len(val_examples), len(val_tasks),
                   data_seconds, wall0)
    report("done", out=str(out), best=history["best"], wall_seconds=time.perf_counter() - wall0)
    return out


def _write_metrics(cfg: PretrainConfig, out: Path, history: dict[str, Any], n_params: int, stats: DemoStats,
                   val_stats: DemoStats, n_train: int, n_val: int, n_val_tasks: int, data_seconds: float,
                   wall0: float) -> None:
    if not (out / "config.json").exists():
        return
    metrics = {
        "config": cfg.identity(),
        "machine": {"threads": cfg.threads, "minutes": cfg.minutes, "torch": torch.__version__},
        "parameters": n_params,
        "data": {"train_decisions": n_train, "val_decisions": n_val, "val_episodes": n_val_tasks,
                 "train_demos": stats.to_dict(), "val_demos": val_stats.to_dict(), "seconds": round(data_seconds, 1)},
        "best": history["best"],
        "validation": history["val"],
        "train_log": history["train"],
        "train_seconds": round(history["train_seconds"], 1),
        "wall_seconds": round(time.perf_counter() - wall0, 1),
    }
    (out / METRICS_FILE).write_text(json.dumps(metrics, indent=1) + "\n")
