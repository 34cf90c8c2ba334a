"""Image-only Qwen2-VL / Qwen2.5-VL processors, and loading any VLM's processor offline.

The stock Qwen2-VL and Qwen2.5-VL processors build a video processor, which needs torchvision;
where torchvision is missing (or does not match the CPU torch build) they cannot load. The
subclasses here drop the video processor and nothing else: for images and text they produce the
stock processor's `input_ids`, `pixel_values`, `image_grid_thw` and `mm_token_type_ids` (the last
is what the model's M-RoPE needs to give image tokens 3-D positions; without it positions silently
fall back to 1-D). What they save stays loadable by the stock `AutoProcessor` where torchvision
exists: the saved class names are the stock ones and a matching video-processor section is kept.

A torchvision that is installed but cannot load beside this torch (the registry's CUDA build next to
the CPU-only torch) breaks transformers itself; importing this module then raises ModelLoadError
saying so, instead of transformers' ImportError from deep inside.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from coadapt.android_env.errors import CoadaptError

log = logging.getLogger(__name__)


class ModelLoadError(CoadaptError):
    """A model, processor or adapter folder (or hub id) could not be loaded; the message says why."""


def _torchvision_installed() -> bool:
    try:
        return importlib.util.find_spec("torchvision") is not None
    except (ImportError, ValueError):  # a half-imported module left in sys.modules: it is there
        return True


def _torchvision_import_error() -> Exception | None:
    """What importing torchvision raises; None when it imports or is not installed."""
    if not _torchvision_installed():
        return None
    try:
        importlib.import_module("torchvision")
    except Exception as e:  # a torchvision built for another torch fails in many ways on import
        return e
    return None


def torchvision_usable() -> bool:
    """True when torchvision imports beside this torch (the stock video processors need it);
    False when it is missing or broken. Never raises."""
    if not _torchvision_installed():
        return False
    error = _torchvision_import_error()
    if error is not None:
        log.debug("torchvision present but unusable: %s", error)
    return error is None


def _dist(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _torch_requirement() -> str:
    """The torch requirement in torchvision's metadata (e.g. "torch==2.13.0"), or "" when unknown."""
    try:
        reqs = importlib.metadata.requires("torchvision") or []
    except importlib.metadata.PackageNotFoundError:
        return ""
    for req in reqs:  # "torch (==2.13.0)" or "torch==2.13.0", maybe with a marker
        m = re.fullmatch(r"torch\s*\(?\s*([<>=!~][^);]*?)\s*\)?\s*(;.*)?", req.strip())
        if m:
            return "torch" + m.group(1).replace(" ", "")
    return ""


def check_torchvision() -> None:
    """Raise ModelLoadError when torchvision is installed but cannot be imported beside this torch.

    transformers imports torchvision whenever it is installed, so such a torchvision breaks
    every model load; the message says what to uninstall or install.
    """
    error = _torchvision_import_error()
    if error is None:
        return
    first_line = (str(error).strip().splitlines() or [""])[0]
    wants = _torch_requirement()
    install = f"`pip install '{wants}'`" if wants else "`pip install torch==<the version it requires>`"
    raise ModelLoadError(
        f"torchvision {_dist('torchvision')}{f' (requires {wants})' if wants else ''} is installed but cannot be "
        f"imported beside torch {_dist('torch')} ({type(error).__name__}: {first_line}); transformers imports "
        "torchvision whenever it is installed, so no model can load. On a CPU-only machine run "
        "`pip uninstall torchvision` (coadapt does not need it there); on a GPU machine install the torch build "
        f"it was made for ({install} from the default index is the CUDA build on Linux x86_64). "
        "See docs/real-models.md."
    ) from error


try:
    from transformers import AutoConfig, AutoProcessor, ProcessorMixin
    from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.processing_qwen2_vl import Qwen2VLProcessor
except Exception:  # transformers reports a broken torchvision as an unrelated missing name
    check_torchvision()
    raise


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


def load_processor(path: str | os.PathLike) -> ProcessorMixin:
    """The processor of a model folder or hub id (HF_HUB_OFFLINE is respected by transformers).

    Qwen2-VL-family models get the image-only processor when torchvision is unusable; every
    other model goes through the stock `AutoProcessor`. Raises ModelLoadError (also when
    torchvision is installed but broken: `check_torchvision`).
    """
    check_torchvision()
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
