"""The bundled tiny VLM: a Qwen2.5-VL model built from a config, with a locally trained tokenizer.

Pretraining calls, in order:

    tokenizer = build_tokenizer(corpus)            # goals, element texts, action strings
    processor = build_processor(tokenizer, config)
    model = build_model(config, tokenizer)         # random init, seeded
    policy = VLMPolicy(model, processor, TINY_POLICY_CONFIG)
    ... train with policy.sft_loss(inputs, targets) ...
    policy.save(folder)                            # a plain Hugging Face folder
    VLMPolicy.load(folder)                         # the same path a real checkpoint takes

`build_tiny_policy(corpus)` does the first four in one call. Nothing is downloaded.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator

import torch
from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, trainers
from tokenizers.models import BPE
from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX, Qwen2Tokenizer
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from coadapt.android_env.actions import DIRECTIONS
from coadapt.android_env.errors import ConfigError

from .model import PolicyConfig, VLMPolicy
from .processor import ImageOnlyQwen2_5_VLProcessor
from .prompt import INSTRUCTIONS, PromptConfig

log = logging.getLogger(__name__)

PAD_TOKEN = "<|endoftext|>"
END_TOKEN = "<|im_end|>"
SPECIAL_TOKENS: tuple[str, ...] = (
    PAD_TOKEN, "<|im_start|>", END_TOKEN, "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
)
"""Qwen2-VL's control tokens, which its processor and chat template use, in Qwen's order."""

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen2-VL's chat template without its default system turn (tokens the tiny model need not read)."""

TINY_POLICY_CONFIG = PolicyConfig(prompt=PromptConfig(style="text", instruction=""))
"""How the tiny model is prompted: element names in text style, no instruction text."""

_SEED_TEXTS: tuple[str, ...] = (
    "user", "assistant", "system", "Elements:", "(none)", "Previous actions: none", "Goal:",
    'tap "x"', 'long_press "x"', 'type "x" into "y"', "scroll", "swipe", "back", "home", "enter",
    'open_app "x"', "wait", 'done "x"', "infeasible", "clear", "into", "desc", "hint",
    *DIRECTIONS, "checked", "unchecked", "selected", "focused", "scrollable", "disabled",
    "TextView", "Button", "ImageButton", "ImageView", "EditText", "CheckBox", "Switch", "Spinner",
    "RadioButton", "ToggleButton", "FrameLayout", "LinearLayout", "RecyclerView", "ListView",
    "ScrollView", "ViewGroup", "View", "TabWidget", "ProgressBar", "SeekBar",
    *INSTRUCTIONS.values(),
)
"""Always in the tokenizer corpus: the prompt skeleton and the action grammar."""


@dataclass(frozen=True)
class TinyVLMConfig:
    """Size of the tiny Qwen2.5-VL model (defaults give about 1.3 M parameters)."""

    hidden_size: int = 128
    """Width of the language model."""
    num_layers: int = 4
    """Language-model decoder layers."""
    num_heads: int = 4
    """Attention heads of the language model; hidden_size / num_heads must be a multiple of 8."""
    num_kv_heads: int = 2
    """Key/value heads (grouped-query attention); must divide num_heads."""
    intermediate_size: int = 256
    """Width of the language model's MLP."""
    vision_hidden_size: int = 64
    """Width of the vision encoder."""
    vision_depth: int = 2
    """Vision encoder blocks (the last uses full attention, the others windowed)."""
    vision_heads: int = 2
    """Vision attention heads."""
    vision_intermediate_size: int = 128
    """Width of the vision MLP."""
    patch_size: int = 14
    """Vision patch side in pixels."""
    merge_size: int = 2
    """Patches merged per side into one image token."""
    image_tokens: int = 128
    """At most this many image tokens per screenshot (sets the processor's max_pixels)."""
    min_image_tokens: int = 16
    """At least this many image tokens per screenshot (sets min_pixels)."""
    max_positions: int = 4096
    """Longest sequence, in tokens."""
    vocab_size: int = 2048
    """Upper bound of the trained tokenizer's vocabulary (it may come out smaller)."""
    seed: int = 0
    """Seeds the random initialisation."""

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads or (self.hidden_size // self.num_heads) % 8:
            raise ConfigError(f"hidden_size {self.hidden_size} / num_heads {self.num_heads} must be a multiple of 8")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(f"num_kv_heads {self.num_kv_heads} must divide num_heads {self.num_heads}")
        if self.vision_hidden_size % self.vision_heads or (self.vision_hidden_size // self.vision_heads) % 4:
            raise ConfigError(f"vision_hidden_size {self.vision_hidden_size} / vision_heads {self.vision_heads} "
                              "must be a multiple of 4")
        if not 1 <= self.min_image_tokens <= self.image_tokens:
            raise ConfigError(f"need 1 <= min_image_tokens <= image_tokens, got {self.min_image_tokens}, {self.image_tokens}")
        if self.vocab_size < 300:
            raise ConfigError(f"vocab_size {self.vocab_size} must be at least 300 (256 bytes + special tokens)")

    @property
    def max_pixels(self) -> int:
        return self.image_tokens * (self.patch_size * self.merge_size) ** 2

    @property
    def min_pixels(self) -> int:
        return self.min_image_tokens * (self.patch_size * self.merge_size) ** 2

    @property
    def mrope_section(self) -> list[int]:
        """How a head's rotary frequencies split over (time, height, width), as Qwen does (1:1.5:1.5)."""
        half = self.hidden_size // self.num_heads // 2
        t = half // 4
        h = (half - t) // 2
        return [t, h, half - t - h]


def _with_seed_texts(corpus: Iterable[str]) -> Iterator[str]:
    yield from _SEED_TEXTS
    for text in corpus:
        if isinstance(text, str) and text:
            yield text


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 2048) -> Qwen2Tokenizer:
    """A byte-level BPE tokenizer trained on `corpus`, in Qwen2's format (same pre-tokenizer).

    Every byte is in the base alphabet, so any text encodes; the grammar and prompt words are
    always added to the corpus. Quotes split from the words they enclose, so a name in the element
    list and the same name in an action are the same tokens.
    """
    if vocab_size < 300:
        raise ConfigError(f"vocab_size {vocab_size} must be at least 300 (256 bytes + special tokens)")
    tok = Tokenizer(BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_with_seed_texts(corpus), trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    out = Qwen2Tokenizer(vocab=model["vocab"], merges=merges, unk_token=None, eos_token=END_TOKEN, pad_token=PAD_TOKEN,
                         model_max_length=32768)
    out.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS[1:])})
    log.info("trained a tokenizer with %d tokens", len(out))
    return out


def build_processor(tokenizer: Qwen2Tokenizer, config: TinyVLMConfig = TinyVLMConfig()) -> ImageOnlyQwen2_5_VLProcessor:
    """An image-only Qwen2.5-VL processor: PIL image processor sized for `config.image_tokens`."""
    image_processor = Qwen2VLImageProcessorPil(min_pixels=config.min_pixels, max_pixels=config.max_pixels,
                                               patch_size=config.patch_size, merge_size=config.merge_size,
                                               temporal_patch_size=2)
    return ImageOnlyQwen2_5_VLProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE)


def model_config(config: TinyVLMConfig, tokenizer: Qwen2Tokenizer) -> Qwen2_5_VLConfig:
    """The Hugging Face config of the tiny model; token ids come from `tokenizer`."""
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = dict(
        vocab_size=len(tokenizer), hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers, num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads, max_position_embeddings=config.max_positions,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": config.mrope_section},
        bos_token_id=None, eos_token_id=ids[END_TOKEN], pad_token_id=ids[PAD_TOKEN], tie_word_embeddings=True,
        use_sliding_window=False,
    )
    vision = dict(
        depth=config.vision_depth, hidden_size=config.vision_hidden_size, intermediate_size=config.vision_intermediate_size,
        num_heads=config.vision_heads, patch_size=config.patch_size, spatial_merge_size=config.merge_size,
        temporal_patch_size=2, out_hidden_size=config.hidden_size, window_size=config.patch_size * config.merge_size * 4,
        fullatt_block_indexes=[config.vision_depth - 1],
    )
    return Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )


def build_model(config: TinyVLMConfig, tokenizer: Qwen2Tokenizer) -> Qwen2_5_VLForConditionalGeneration:
    """A randomly initialised tiny Qwen2.5-VL (seeded by `config.seed`), in float32, eval mode."""
    hf_config = model_config(config, tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = Qwen2_5_VLForConditionalGeneration(hf_config)
    gen = model.generation_config
    gen.eos_token_id = [tokenizer.convert_tokens_to_ids(END_TOKEN), tokenizer.convert_tokens_to_ids(PAD_TOKEN)]
    gen.pad_token_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    gen.bos_token_id = None
    gen.do_sample = False
    model.eval()
    log.info("built a tiny VLM with %d parameters (%s)", count_parameters(model), asdict(config))
    return model


def count_parameters(model: torch.nn.Module) -> int:
    """Distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def build_tiny_policy(corpus: Iterable[str], config: TinyVLMConfig = TinyVLMConfig(),
                      policy_config: PolicyConfig = TINY_POLICY_CONFIG) -> VLMPolicy:
    """Tokenizer, processor and random model from `config`, as a policy ready to train or save."""
    tokenizer = build_tokenizer(corpus, vocab_size=config.vocab_size)
    return VLMPolicy(build_model(config, tokenizer), build_processor(tokenizer, config), policy_config)
