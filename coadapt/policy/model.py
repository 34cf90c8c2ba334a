"""VLMPolicy: any Hugging Face VLM (plus an optional LoRA adapter) as an Android agent policy.

One class serves the bundled tiny model and real checkpoints (Qwen2-VL, Qwen2.5-VL, UI-TARS):
it loads through `AutoProcessor` + `AutoModelForImageTextToText`, builds prompts, generates one
action per observation in batches, and scores given action strings token by token (for
supervised pretraining and for RL). Prompts and targets are tokenized the same way for
generation and for scoring: the prompt's tokens, then the target's tokens, then the end token.

Generation records each token's log-prob under the distribution it was drawn from (constraint
masks, temperature, top_p: `sampling`), and `score` recomputes exactly that; `target_logprobs`
is the plain softmax, for supervised learning.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Literal, Sequence

import torch

# Before transformers: a torchvision that cannot load beside this torch breaks transformers'
# imports, and `processor` turns that into a ModelLoadError that says what to fix.
from .processor import ModelLoadError, load_processor  # isort: skip

from transformers import (AutoModelForImageTextToText, GenerationConfig, LogitsProcessor, LogitsProcessorList,
                          PreTrainedModel, ProcessorMixin)

from coadapt.android_env.actions import Action
from coadapt.android_env.errors import ConfigError
from coadapt.android_env.observation import Observation

from .adapter_record import read_base, write_base
from .parser import parse_action
from .prompt import PolicyInput, PromptConfig, chat_messages, make_inputs
from .sampling import RowSampler, constrain, constraint_processors, fresh_seeds, step_logprobs

# peft reads transformers' `is_gradient_checkpointing`, which transformers 5 deprecates: the
# warning is about the two libraries, not about anything a user of coadapt can change.
warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)

if TYPE_CHECKING:
    from .constrain import TokenBytes

log = logging.getLogger(__name__)

POLICY_CONFIG_FILE = "coadapt_policy.json"
"""Saved beside a model: how that model is prompted (absent for foreign checkpoints)."""

LANGUAGE_MODEL_PROJECTIONS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
"""LoRA targets: the language model's projections only. The vision MLP reuses the names
gate/up/down_proj, so a plain name list would adapt the vision tower too."""


@dataclass(frozen=True)
class LoraSettings:
    """A LoRA adapter's shape (saved with the adapter in peft's adapter_config.json)."""

    r: int = 8
    """Rank of the update matrices."""
    alpha: int = 16
    """Scale numerator: the update is multiplied by alpha / r."""
    dropout: float = 0.0
    """Dropout on the adapter's input during training."""
    target_modules: str = LANGUAGE_MODEL_PROJECTIONS
    """Regex (full match) over module names that get an adapter."""

    def __post_init__(self) -> None:
        if self.r < 1 or self.alpha <= 0 or not 0 <= self.dropout < 1:
            raise ConfigError(f"LoRA needs r >= 1, alpha > 0, 0 <= dropout < 1; got {self}")


@dataclass(frozen=True)
class PolicyConfig:
    """How the policy prompts, decodes and reads answers."""

    prompt: PromptConfig = field(default_factory=PromptConfig)
    """What the prompt shows and which action format it asks for."""
    max_new_tokens: int = 48
    """Longest answer, in tokens."""
    temperature: float = 0.0
    """Sampling temperature; 0 decodes greedily."""
    top_p: float = 1.0
    """Nucleus sampling mass (used when temperature > 0)."""
    max_batch: int = 8
    """Observations per forward pass; longer lists are split."""
    constrain_names: bool = False
    """Text style only: while the answer quotes an element name (`tap "…"`), allow only tokens
    that keep it a name on the screen (`constrain.ElementNameConstraint`); the model's scores
    still choose among them."""
    constrain_text: bool = False
    """Text style only: typed text and answers (`type "…"`, `done "…"`) must be copied from the
    goal or a name on the screen, or be a number (`constrain.CopyConstraint`)."""
    coordinates: Literal["image", "relative"] = "image"
    """How UI-TARS coordinates in answers are read: pixels of the resized image the model saw
    (Qwen2.5-VL, UI-TARS-1.5) or 0-1000 relative (Qwen2-VL, UI-TARS)."""

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.max_batch < 1:
            raise ConfigError(f"max_new_tokens and max_batch must be >= 1, got {self.max_new_tokens}, {self.max_batch}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ConfigError(f"need temperature >= 0 and 0 < top_p <= 1, got {self.temperature}, {self.top_p}")
        if self.coordinates not in ("image", "relative"):
            raise ConfigError(f"coordinates must be 'image' or 'relative', got {self.coordinates!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PolicyConfig":
        try:
            d = dict(d)
            d["prompt"] = PromptConfig(**d.get("prompt", {}))
            return cls(**d)
        except TypeError as e:
            raise ConfigError(f"bad policy config {d!r}: {e}") from e


@dataclass(frozen=True)
class Generation:
    """One answer of the model."""

    text: str
    """The decoded answer, special tokens removed."""
    action: Action
    """`text` parsed against the observation the model saw (Invalid when unreadable)."""
    token_ids: tuple[int, ...]
    """The generated tokens, up to and including the end token when one was produced."""
    logprobs: tuple[float, ...]
    """Per token of `token_ids`, its log-prob under the distribution it was drawn from (constraint
    masks, temperature, top_p; greedy: masked at temperature 1), as `VLMPolicy.score` recomputes it."""
    image_size: tuple[int, int] | None
    """(width, height) of the resized screenshot the model saw, when known."""


class VLMPolicy:
    """A VLM that maps (screenshot, elements, history, goal) to one action.

    `model` is a transformers image-text-to-text model, optionally wrapped in a peft model;
    `processor` its processor. Sampling follows `config`; `generate` takes a seed per row.

    Thread-safe: every model call, and every block that changes which weights are active
    (`adapter_disabled`, `load_adapter_state`), holds `lock`.
    """

    def __init__(self, model: PreTrainedModel, processor: ProcessorMixin, config: PolicyConfig = PolicyConfig()):
        self.model = model
        self.processor = processor
        self.config = config
        self.tokenizer = processor.tokenizer  # type: ignore[attr-defined]
        self.end_id = self._end_token_id()
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.end_id
        # Qwen-VL models keep M-RoPE offsets (rope_deltas) on the module between calls, so two
        # threads must not run the model at once (rollout workers share one policy).
        self._lock = threading.RLock()
        self._token_bytes: "TokenBytes | None" = None  # built on first constrained call
        self.source: str | None = None
        """The model spec it was loaded from (recorded with each saved adapter); None when built in memory."""

    @property
    def lock(self) -> threading.RLock:
        """The re-entrant lock every model call holds; hold it to run several calls atomically
        (e.g. score with and without the adapter against the same weights)."""
        return self._lock

    def scorable(self, token_ids: Sequence[int]) -> bool:
        """Whether an answer can be scored: a vision placeholder token in it (a sampled answer of an
        untrained model can hold one) would be read as an image position and break the forward."""
        cfg = getattr(self.model, "config", None)
        vision = {getattr(cfg, name, None) for name in ("image_token_id", "video_token_id", "vision_start_token_id",
                                                         "vision_end_token_id")} - {None}
        return not vision.intersection(token_ids)

    # ------------------------------------------------------------------ loading and saving

    @classmethod
    def load(cls, path: str | os.PathLike, *, adapter: str | os.PathLike | None = None, trainable: bool = False,
             config: PolicyConfig | None = None, dtype: str | torch.dtype = "auto", device: str = "cpu") -> "VLMPolicy":
        """Load a model folder or hub id (offline when HF_HUB_OFFLINE=1), and an adapter folder.

        `config` overrides the folder's saved coadapt_policy.json; foreign checkpoints, which have
        none, get the defaults (relative coordinates for Qwen2-VL models). Raises ModelLoadError.
        """
        if str(device).startswith("cuda") and not torch.cuda.is_available():
            raise ModelLoadError(f"--device {device}: torch {torch.__version__} sees no CUDA GPU (a CPU build of "
                                 "torch, or no GPU visible); use --device cpu, or auto to take a GPU when there is one")
        processor = load_processor(path)
        try:
            model = AutoModelForImageTextToText.from_pretrained(str(path), dtype=dtype)
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"cannot load the model at {str(path)!r}: {e}") from e
        model.to(device)
        model.eval()
        if config is None:
            saved = Path(path) / POLICY_CONFIG_FILE
            if saved.is_file():
                config = PolicyConfig.from_dict(json.loads(saved.read_text()))
            else:
                # Qwen2-VL (and UI-TARS built on it) point in 0-1000 relative coordinates.
                relative = model.config.model_type == "qwen2_vl"
                config = PolicyConfig(coordinates="relative" if relative else "image")
        policy = cls(model, processor, config)
        policy.source = str(Path(path).resolve()) if Path(path).exists() else str(path)
        if adapter is not None:
            policy.load_adapter(adapter, trainable=trainable)
        return policy

    def save(self, folder: str | os.PathLike) -> None:
        """Save model, processor and policy config as a plain Hugging Face folder."""
        if self.has_adapter:
            raise ModelLoadError("this policy carries a LoRA adapter: save it with save_adapter(), "
                                 "the base model is the folder it was loaded from")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.processor.save_pretrained(folder)
        (folder / POLICY_CONFIG_FILE).write_text(json.dumps(self.config.to_dict(), indent=2) + "\n")

    # ------------------------------------------------------------------ LoRA

    @property
    def has_adapter(self) -> bool:
        from peft import PeftModel

        return isinstance(self.model, PeftModel)

    def add_adapter(self, settings: LoraSettings = LoraSettings()) -> None:
        """Wrap the model with a fresh trainable LoRA adapter; only its weights train."""
        from peft import LoraConfig, get_peft_model

        if self.has_adapter:
            raise ConfigError("the policy already has an adapter")
        lora = LoraConfig(r=settings.r, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                          target_modules=settings.target_modules, bias="none")
        with self._lock:
            self.model = get_peft_model(self.model, lora)

    def load_adapter(self, folder: str | os.PathLike, *, trainable: bool = False) -> None:
        """Load a peft adapter folder onto the base model."""
        from peft import PeftModel

        if self.has_adapter:
            raise ConfigError("the policy already has an adapter")
        local = Path(folder)
        if local.is_dir() and not (local / "adapter_config.json").is_file():  # never a hub lookup for a local folder
            inner = local / "adapter"
            hint = (f"; an adapt run keeps its adapter in {str(inner)!r}" if (inner / "adapter_config.json").is_file()
                    else "")
            raise ModelLoadError(f"no adapter at {str(folder)!r}: the folder has no adapter_config.json{hint}")
        with self._lock:
            try:
                self.model = PeftModel.from_pretrained(self.model, str(folder), is_trainable=trainable)
            except (OSError, ValueError, RuntimeError) as e:  # RuntimeError: shapes of another base model
                base = read_base(folder)
                hint = f" (it was trained on {base!r}: pass --model {base})" if base and base != self.source else ""
                raise ModelLoadError(f"cannot load the adapter at {str(folder)!r}{hint}: {str(e)[:500]}") from e
            if not trainable:
                self.model.eval()

    def save_adapter(self, folder: str | os.PathLike) -> None:
        """Save the adapter in peft's standard folder format (adapter_config.json + safetensors);
        `load(base, adapter=folder)` or `load_adapter_weights(folder)` bring it back exactly."""
        if not self.has_adapter:
            raise ConfigError("the policy has no adapter to save; call add_adapter() first")
        with self._lock:
            self.model.save_pretrained(str(folder))
        if self.source is not None:
            write_base(folder, self.source)

    def load_adapter_weights(self, folder: str | os.PathLike) -> None:
        """Overwrite the current adapter's weights with those saved in `folder` (by `save_adapter`),
        in place: for rolling back to a checkpoint without rebuilding the model or the optimizer's
        parameter list. The adapter's shape must match; raises ModelLoadError otherwise."""
        from peft.utils import load_peft_weights, set_peft_model_state_dict

        if not self.has_adapter:
            raise ConfigError("the policy has no adapter to load weights into; call add_adapter() or load_adapter()")
        if not Path(folder).is_dir():
            raise ModelLoadError(f"no adapter folder at {str(folder)!r}")
        try:
            weights = load_peft_weights(str(folder), device=str(self.model.device))
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"cannot read the adapter weights at {str(folder)!r}: {e}") from e
        with self._lock:
            backup = self.adapter_state()
            problem = None
            try:
                with torch.no_grad():
                    result = set_peft_model_state_dict(self.model, weights)
                missing = sorted(set(backup) & set(result.missing_keys))
                if missing or result.unexpected_keys:
                    problem = f"missing {missing[:3]}, unexpected {list(result.unexpected_keys)[:3]}"
            except (RuntimeError, ValueError) as e:  # shape mismatch: another rank or other targets
                problem = str(e)
            if problem is not None:
                self.load_adapter_state(backup)  # all or nothing
                raise ModelLoadError(f"the adapter at {str(folder)!r} does not fit this policy's adapter: {problem}")

    def adapter_state(self) -> dict[str, torch.Tensor]:
        """Detached copies of the adapter's LoRA weights, by parameter name (empty without one):
        an in-memory checkpoint for `load_adapter_state`."""
        with self._lock:
            return {n: p.detach().clone() for n, p in self.model.named_parameters() if "lora_" in n}

    def load_adapter_state(self, state: dict[str, torch.Tensor]) -> None:
        """Copy weights from `adapter_state()` back into the adapter, in place (the optimizer's
        parameters stay the same objects). Raises ConfigError when the names differ."""
        with self._lock:
            params = {n: p for n, p in self.model.named_parameters() if "lora_" in n}
            if set(params) != set(state):
                missing, unexpected = sorted(set(params) - set(state)), sorted(set(state) - set(params))
                raise ConfigError(f"adapter state does not match the adapter: missing {missing[:3]}, "
                                  f"unexpected {unexpected[:3]}")
            with torch.no_grad():
                for name, p in params.items():
                    p.copy_(state[name])

    @contextlib.contextmanager
    def adapter_disabled(self) -> Iterator[None]:
        """Run the base model (the RL reference policy) inside this block.

        Holds `lock` throughout: other threads' generate/score calls wait until the block ends
        instead of silently running without the adapter.
        """
        with self._lock:
            if self.has_adapter:
                with self.model.disable_adapter():
                    yield
            else:
                yield

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """What an optimizer should update: the adapter's weights, or all of them without one."""
        return [p for p in self.model.parameters() if p.requires_grad]

    # ------------------------------------------------------------------ prompts and batches

    def prompt(self, inp: PolicyInput) -> str:
        """The chat-templated prompt text, up to where the answer starts."""
        text = self.processor.apply_chat_template(chat_messages(inp, self.config.prompt), tokenize=False,
                                                  add_generation_prompt=True)
        return text if isinstance(text, str) else text[0]

    def target_ids(self, target: str | Sequence[int]) -> list[int]:
        """Token ids of an answer, ending with the end token (given ids are taken as they are)."""
        if not isinstance(target, str):
            return [int(t) for t in target]
        return list(self.tokenizer(target, add_special_tokens=False)["input_ids"]) + [self.end_id]

    def prepare(self, inp: PolicyInput, target: str | Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        """One example, processed: the processor's tensors for the prompt, and `answer_ids`.

        Prepared examples can be kept and batched again with `collate` (a trainer that revisits
        the same screens saves the image preprocessing, a third of a tiny-model training step).
        """
        part = dict(self.processor(text=[self.prompt(inp)], images=[inp.observation.screenshot], return_tensors="pt"))
        part["answer_ids"] = torch.tensor(self.target_ids(target) if target is not None else [], dtype=torch.long)
        return part

    def collate(self, parts: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """Prepared examples as one batch, left-padded so every sequence ends at the right.

        Each answer's tokens follow its prompt's, so generation and scoring see identical prompt
        tokens. Sequence-aligned tensors (input_ids, attention_mask, mm_token_type_ids: the last
        gives image tokens their 3-D M-RoPE positions) are padded; image tensors are concatenated.
        When any example has an answer, the batch also holds `labels` (-100 outside answers).
        """
        if not parts:
            raise ConfigError("an empty batch")
        answers = [p["answer_ids"] for p in parts]
        width = max(p["input_ids"].shape[1] + len(a) for p, a in zip(parts, answers))
        shape = parts[0]["input_ids"].shape
        seq_keys = [k for k, v in parts[0].items() if k != "answer_ids" and v.dim() == 2 and v.shape == shape]
        batch: dict[str, torch.Tensor] = {}
        for key in seq_keys:
            fill = self.pad_id if key == "input_ids" else 0
            out = torch.full((len(parts), width), fill, dtype=parts[0][key].dtype)
            for row, (p, a) in enumerate(zip(parts, answers)):
                if key == "input_ids":
                    tail = a.to(out.dtype)
                else:  # answer tokens are attended text tokens
                    tail = torch.full((len(a),), 1 if key == "attention_mask" else 0, dtype=out.dtype)
                seq = torch.cat([p[key][0], tail])
                out[row, width - len(seq):] = seq
            batch[key] = out
        for key, value in parts[0].items():
            if key not in batch and key != "answer_ids" and isinstance(value, torch.Tensor):
                batch[key] = torch.cat([p[key] for p in parts], dim=0)
        if any(len(a) for a in answers):
            labels = torch.full((len(parts), width), -100, dtype=torch.long)
            for row, a in enumerate(answers):
                if len(a):
                    labels[row, width - len(a):] = a
            batch["labels"] = labels
        device = self.model.device
        return {k: v.to(device) for k, v in batch.items()}

    def encode(self, inputs: Sequence[PolicyInput], targets: Sequence[str | Sequence[int]] | None = None
               ) -> dict[str, torch.Tensor]:
        """`collate` of `prepare`d inputs (and answers)."""
        if targets is not None and len(targets) != len(inputs):
            raise ConfigError(f"{len(inputs)} inputs but {len(targets)} targets")
        return self.collate([self.prepare(inp, None if targets is None else targets[k]) for k, inp in enumerate(inputs)])

    def _image_sizes(self, batch: dict[str, torch.Tensor]) -> list[tuple[int, int] | None]:
        grid = batch.get("image_grid_thw")
        patch = getattr(getattr(self.processor, "image_processor", None), "patch_size", None)
        n = batch["input_ids"].shape[0]
        if self.config.coordinates == "relative" or grid is None or patch is None or len(grid) != n:
            return [None] * n
        return [(int(w) * patch, int(h) * patch) for _, h, w in grid.tolist()]

    # ------------------------------------------------------------------ acting

    @torch.no_grad()
    def generate(self, inputs: Sequence[PolicyInput], seeds: Sequence[int] | None = None) -> list[Generation]:
        """One answer per input, decoded in batches of `config.max_batch`, each parsed to an action.

        With `config.temperature > 0`, row k samples from its own generator seeded by `seeds[k]`
        (any int; give each (episode, step) its own): the same seed and input give the same
        tokens and log-probs whatever else is in the batch (up to last-bit float differences
        between batch shapes tipping a draw, which is rare). `seeds=None` draws fresh seeds from
        the OS. Temperature 0 decodes greedily and ignores `seeds`. Each Generation's `logprobs`
        are what `score` recomputes for its `token_ids`.
        """
        if seeds is not None and len(seeds) != len(inputs):
            raise ConfigError(f"{len(inputs)} inputs but {len(seeds)} seeds")
        if seeds is None:
            seeds = fresh_seeds(len(inputs)) if self.config.temperature > 0 else [0] * len(inputs)
        out: list[Generation] = []
        for start in range(0, len(inputs), self.config.max_batch):
            end = start + self.config.max_batch
            out.extend(self._generate_batch(inputs[start:end], seeds[start:end]))
        return out

    def _generate_batch(self, inputs: Sequence[PolicyInput], seeds: Sequence[int]) -> list[Generation]:
        batch = self.encode(inputs)
        cfg = self.config
        prompt_len = batch["input_ids"].shape[1]
        # Hugging Face decodes greedily around our sampler, which is the only logits processor:
        # it masks, tempers, filters and draws itself, and records what it drew from.
        sampler = RowSampler(self._constraints(inputs, prompt_len), cfg.temperature, cfg.top_p, seeds, prompt_len)
        with self._lock:
            stop_ids = self._stop_ids()
            generation_config = self._generation_config(stop_ids)
            was_training = self.model.training
            self.model.eval()
            try:
                with self._clean_generation_config():
                    seqs = self.model.generate(**batch, generation_config=generation_config,
                                               logits_processor=LogitsProcessorList([sampler]))
            finally:
                self.model.train(was_training)
        new = seqs[:, prompt_len:].tolist()
        stops = set(stop_ids)
        results = []
        for row, (inp, ids, size) in enumerate(zip(inputs, new, self._image_sizes(batch))):
            cut = next((k + 1 for k, t in enumerate(ids) if t in stops), len(ids))
            ids = ids[:cut]
            if sampler.tokens[row][:cut] != ids:  # something after our sampler changed the pick
                raise RuntimeError(f"generate wrote {ids} but the sampler chose {sampler.tokens[row][:cut]}")
            text = self.tokenizer.decode(ids, skip_special_tokens=True).strip()
            results.append(Generation(text=text, action=parse_action(text, inp.observation, image_size=size),
                                      token_ids=tuple(ids), logprobs=tuple(sampler.logprobs[row][:cut]),
                                      image_size=size))
        return results

    def act(self, observations: Sequence[Observation], goals: Sequence[str],
            histories: Sequence[Sequence[str | Action]] | None = None) -> list[Action]:
        """One action per observation (Invalid where the answer is unreadable); never raises on
        model output. History items are strings the model wrote, or Actions (`describe`d)."""
        return [g.action for g in self.generate(make_inputs(observations, goals, histories))]

    # ------------------------------------------------------------------ scoring and training

    def target_logprobs(self, inputs: Sequence[PolicyInput], targets: Sequence[str | Sequence[int]]
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of each answer's tokens under its prompt.

        Returns (logprobs, mask), both (batch, longest answer), answers right-aligned; mask is 1
        on real answer tokens. Differentiable unless called under torch.no_grad().
        """
        return self.batch_logprobs(self.encode(inputs, targets))

    def batch_logprobs(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """`target_logprobs` of a batch made by `encode` or `collate` (which must hold answers)."""
        batch = dict(batch)
        labels = batch.pop("labels", None)
        if labels is None or not bool((labels != -100).any()):
            raise ConfigError("the batch has no answers to score; give targets")
        answer_len = int((labels != -100).sum(dim=1).max().item())
        # Answers end every row (left padding), so logits are needed only for the last positions.
        with self._lock:
            logits = self.model(**batch, logits_to_keep=answer_len + 1, use_cache=False).logits[:, :-1].float()
        gold = labels[:, -answer_len:]
        mask = gold != -100
        logp = torch.log_softmax(logits, dim=-1).gather(-1, gold.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return logp * mask, mask.to(logp.dtype)

    def score(self, inputs: Sequence[PolicyInput], token_ids: Sequence[Sequence[int]]
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs of given answer tokens (e.g. `Generation.token_ids`) under the distribution
        generation draws from: the constraint masks replayed on each teacher-forced prefix, then
        temperature and top_p (greedy configs: masked, temperature 1). For tokens this policy
        generated with the same weights this equals `Generation.logprobs` up to float rounding;
        a recorded token that falls just outside the recomputed nucleus is kept in it, so its
        log-prob stays finite (`sampling.step_logprobs`).

        Returns (logprobs, mask), both (batch, longest answer), answers right-aligned, as
        `target_logprobs`; differentiable unless called under torch.no_grad(). Adapter dropout
        in train mode makes the scores noisy: score in eval mode to compare with sampling.
        """
        return self.score_batch(self.encode(inputs, [list(t) for t in token_ids]), inputs)

    def score_batch(self, batch: dict[str, torch.Tensor], inputs: Sequence[PolicyInput]
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`score` of a batch made by `encode(inputs, token_ids)` or `collate` of `prepare`d
        examples (with answers), in the order of `inputs` (whose screens and goals the
        constraints read); reusing prepared examples saves the image preprocessing."""
        labels = batch.get("labels")
        if labels is None or not bool((labels != -100).any()):
            raise ConfigError("the batch has no answers to score; give token ids")
        if len(inputs) != labels.shape[0]:
            raise ConfigError(f"{labels.shape[0]} rows in the batch but {len(inputs)} inputs")
        batch = {k: v for k, v in batch.items() if k != "labels"}
        answer_len = int((labels != -100).sum(dim=1).max().item())
        with self._lock:
            logits = self.model(**batch, logits_to_keep=answer_len + 1, use_cache=False).logits[:, :-1].float()
        gold = labels[:, -answer_len:]
        mask = gold != -100
        tokens = gold.clamp(min=0)
        processors = self._constraints(inputs, prompt_len=0)
        if processors:
            # Replay the masks position by position on each row's answer prefix (the processors
            # read only the tokens after prompt_len, here 0). Rows are right-aligned: row b's
            # token at column c is its (c - start[b])-th.
            start = (~mask).sum(dim=1)
            left = torch.full_like(tokens, self.pad_id)
            for row in range(tokens.shape[0]):
                n = answer_len - int(start[row])
                left[row, :n] = tokens[row, answer_len - n:]
            columns = []
            for t in range(answer_len):
                col = (start + t).clamp(max=answer_len - 1)
                step = logits[torch.arange(len(col), device=col.device), col]
                columns.append(constrain(processors, left[:, :t], step))
            masked = torch.stack(columns, dim=1)  # left-aligned
            back = (torch.arange(answer_len, device=start.device).unsqueeze(0) - start.unsqueeze(1)).clamp(min=0)
            logits = masked.gather(1, back.unsqueeze(-1).expand(-1, -1, masked.shape[-1]))
        logp = step_logprobs(logits, self.config.temperature, self.config.top_p, keep=tokens)
        picked = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        picked = picked.masked_fill(~mask, 0.0)
        return picked, mask.to(picked.dtype)

    def token_logprobs(self, inputs: Sequence[PolicyInput], targets: Sequence[str | Sequence[int]]) -> list[torch.Tensor]:
        """Per-token log-probabilities of each answer (its tokens plus the end token), one tensor each."""
        logp, mask = self.target_logprobs(inputs, targets)
        return [row[m.bool()] for row, m in zip(logp, mask)]

    def sft_loss(self, inputs: Sequence[PolicyInput], targets: Sequence[str | Sequence[int]]) -> torch.Tensor:
        """Mean negative log-likelihood per answer token (end token included) over the batch:
        the supervised loss on (prompt, target action string) pairs."""
        return self.batch_loss(self.encode(inputs, targets))

    def batch_loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """`sft_loss` of a batch made by `encode` or `collate`."""
        logp, mask = self.batch_logprobs(batch)
        return -logp.sum() / mask.sum().clamp(min=1)

    # ------------------------------------------------------------------ internals

    def _end_token_id(self) -> int:
        for token in ("<|im_end|>", self.tokenizer.eos_token):
            if token is not None:
                tid = self.tokenizer.convert_tokens_to_ids(token)
                if isinstance(tid, int) and tid != self.tokenizer.unk_token_id:
                    return tid
        raise ModelLoadError("the tokenizer has no end-of-turn token (<|im_end|> or eos)")

    def _constraints(self, inputs: Sequence[PolicyInput], prompt_len: int) -> list[LogitsProcessor]:
        """`sampling.constraint_processors` for these inputs (the token table built once)."""
        cfg = self.config
        if not (cfg.constrain_names or cfg.constrain_text):
            return []
        if self._token_bytes is None:
            from .constrain import TokenBytes

            self._token_bytes = TokenBytes(self.tokenizer)
        return constraint_processors(cfg, self._token_bytes, inputs, prompt_len)

    def _generation_config(self, stop_ids: list[int]) -> GenerationConfig:
        """Greedy decoding with nothing but our sampler shaping the scores."""
        return GenerationConfig(do_sample=False, num_beams=1, num_return_sequences=1,
                                max_new_tokens=self.config.max_new_tokens, pad_token_id=self.pad_id,
                                eos_token_id=stop_ids, use_cache=True, repetition_penalty=1.0,
                                no_repeat_ngram_size=0, renormalize_logits=False)

    @contextlib.contextmanager
    def _clean_generation_config(self) -> Iterator[None]:
        """Hide the checkpoint's generation_config during `generate` (hold the lock): Hugging Face
        fills every unset field of ours from it, and fields such as suppress_tokens or
        sequence_bias have no "off" value to override with. Their processors would reshape the
        scores before our sampler, which would then record log-probs that `score` cannot match."""
        hf = self.model.get_base_model() if self.has_adapter else self.model
        saved = hf.generation_config
        hf.generation_config = GenerationConfig()
        try:
            yield
        finally:
            hf.generation_config = saved

    def _stop_ids(self) -> list[int]:
        ids = [self.end_id]
        eos = self.model.generation_config.eos_token_id
        ids.extend([eos] if isinstance(eos, int) else list(eos or []))
        return list(dict.fromkeys(ids))
