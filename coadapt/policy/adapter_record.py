"""Which base model an adapter folder was trained on, saved beside peft's files (no torch here)."""

from __future__ import annotations

import json
from pathlib import Path

from coadapt.android_env.errors import ConfigError

RECORD_FILE = "coadapt_adapter.json"
"""Beside adapter_config.json: {"base_model": "default" | a model folder | a hub id}. peft's own
base_model_name_or_path holds the bundled model's absolute install path, which means nothing on
another machine; "default" does."""


def write_base(folder: str | Path, base_model: str) -> None:
    """Record `base_model` (a model spec as `--model` takes it) in the adapter folder."""
    (Path(folder) / RECORD_FILE).write_text(json.dumps({"base_model": base_model}) + "\n")


def read_base(folder: str | Path) -> str | None:
    """The base model recorded in an adapter folder, or None (adapters saved without a record).
    Raises ConfigError on a record that is not what write_base writes."""
    path = Path(folder) / RECORD_FILE
    if not path.is_file():
        return None
    try:
        base = json.loads(path.read_text()).get("base_model")
    except (OSError, ValueError, AttributeError) as e:
        raise ConfigError(f"{path}: unreadable adapter record ({e}); delete it and pass --model") from None
    if not isinstance(base, str) or not base:
        raise ConfigError(f"{path}: the adapter record names no base model; delete it and pass --model")
    return base
