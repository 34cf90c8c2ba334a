"""Image-only Qwen2-VL / Qwen2.5-VL processors, and loading any VLM's processor offline.

The stock Qwen2-VL and Qwen2.5-VL processors build a video processor, which needs torchvision;
where torchvision is missing (or does not match the CPU torch build) they cannot load. The
subclasses here drop the video processor and nothing else: for images and text they produce the
stock processor's `input_ids`, `pixel_values`, `image_grid_thw` and `mm_token_type_ids` (the last
is what the model's M-RoPE needs to give image tokens 3-D positions; without it positions silently
fall back to 1-D). What they save stays loadable by the stock `AutoProcessor` where torchvision
exists: the saved class names are the stock ones and a matching video-processor section is kept.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
from pathlib import Path
from typing import Any

from transformers import AutoConfig, AutoProcessor, ProcessorMixin
from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor
from transformers.models.qwen2_vl.processing_qwen2_vl import Qwen2VLProcessor

from coadapt.android_env.errors import CoadaptError

log = logging.getLogger(__name__)


class ModelLoadError(CoadaptError):
    """A model, processor or adapter folder (or hub id) could not be loaded; the message says why."""


def _video_section(image_processor: Any) -> dict[str, Any]:
    """The stock processor's video-processor config, mirroring the image processor's settings."""
    size = dict(getattr(image_processor, "size", None) or {})
    return {
        "video_processor_type": "Qwen2VLVideoProcessor",
        "size": size,
        "patch_size": image_processor.patch_size,
        "temporal_patch_size": image_processor.temporal_patch_size,
        "merge_size": image_processor.merge_size,
        "image_mean": list(image_processor.image_mean),
        "image_std": list(image_processor.image_std),
    }


class _ImageOnlyMixin:
    """Saves under the stock processor's name, with the video section the stock loader expects."""

    stock_class: type[ProcessorMixin]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()  # type: ignore[misc]
        d["processor_class"] = self.stock_class.__name__
        d.setdefault("video_processor", _video_section(self.image_processor))  # type: ignore[attr-defined]
        return d

    def save_pretrained(self, save_directory: str | os.PathLike, push_to_hub: bool = False, **kwargs: Any) -> list[str]:
        files = super().save_pretrained(save_directory, push_to_hub=push_to_hub, **kwargs)  # type: ignore[misc]
        # The tokenizer config names its processor too; point it at the stock class as well.
        tok_config = Path(save_directory) / "tokenizer_config.json"
        if tok_config.exists():
            data = json.loads(tok_config.read_text(encoding="utf-8"))
            if "processor_class" in data:
                data["processor_class"] = self.stock_class.__name__
                tok_config.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return files


class ImageOnlyQwen2_5_VLProcessor(_ImageOnlyMixin, Qwen2_5_VLProcessor):
    """`Qwen2_5_VLProcessor` without the video processor (images and text only)."""

    stock_class = Qwen2_5_VLProcessor

    def __init__(self, image_processor: Any = None, tokenizer: Any = None, chat_template: str | None = None, **kwargs: Any):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


class ImageOnlyQwen2VLProcessor(_ImageOnlyMixin, Qwen2VLProcessor):
    """`Qwen2VLProcessor` without the video processor (images and text only)."""

    stock_class = Qwen2VLProcessor

    def __init__(self, image_processor: Any = None, tokenizer: Any = None, chat_template: str | None = None, **kwargs: Any):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


IMAGE_ONLY_PROCESSORS: dict[str, type[ProcessorMixin]] = {
    "qwen2_5_vl": ImageOnlyQwen2_5_VLProcessor,
    "qwen2_vl": ImageOnlyQwen2VLProcessor,
}
"""model_type -> image-only processor class."""


def torchvision_usable() -> bool:
    """True when torchvision imports beside this torch (the stock video processors need it)."""
    if importlib.util.find_spec("torchvision") is None:
        return False
    try:
        importlib.import_module("torchvision")
    except Exception as e:  # a torchvision built for another torch fails in many ways on import
        log.debug("torchvision present but unusable: %s", e)
        return False
    return True


def load_processor(path: str | os.PathLike) -> ProcessorMixin:
    """The processor of a model folder or hub id (HF_HUB_OFFLINE is respected by transformers).

    Qwen2-VL-family models get the image-only processor when torchvision is unusable; every
    other model goes through the stock `AutoProcessor`. Raises ModelLoadError.
    """
    try:
        model_type = AutoConfig.from_pretrained(path).model_type
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"cannot read the model config at {str(path)!r}: {e}") from e
    try:
        if model_type in IMAGE_ONLY_PROCESSORS and not torchvision_usable():
            return IMAGE_ONLY_PROCESSORS[model_type].from_pretrained(path)
        return AutoProcessor.from_pretrained(path)
    except (OSError, ValueError, ImportError, TypeError) as e:
        raise ModelLoadError(f"cannot load the processor at {str(path)!r}: {e}") from e
