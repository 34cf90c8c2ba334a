"""The policies: the VLM policy (model loading, prompt, action parsing, generation) and the
oracle and random baselines; `make_policy` turns a command-line name into one.

`parser`, `prompt` and `base` need no torch; importing this package does not import torch either.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from coadapt.android_env.errors import ConfigError

if TYPE_CHECKING:
    from coadapt.tasks.base import TaskTemplate

    from .agent import VLMAgentPolicy
    from .base import Policy
    from .model import PolicyConfig

BUILTIN = ("oracle", "random", "default")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def load_policy(spec: str | os.PathLike, *, adapter: str | os.PathLike | None = None,
                config: "PolicyConfig | None" = None, device: str = "cpu", dtype: str = "auto",
                trainable: bool = False) -> "VLMAgentPolicy":
    """See `coadapt.policy.agent.load_policy` (imported lazily: it brings in torch)."""
    from .agent import load_policy as _load

    return _load(spec, adapter=adapter, config=config, device=device, dtype=dtype, trainable=trainable)


def make_policy(spec: str, *, adapter: str | None = None, templates: "Mapping[str, TaskTemplate] | None" = None,
                config: "PolicyConfig | None" = None, device: str = "cpu", dtype: str = "auto") -> "Policy":
    """"oracle" (needs `templates`: key -> task instance), "random", "default" (the bundled tiny
    VLM), or a model folder / hub id (with an optional adapter folder)."""
    from .baselines import OraclePolicy, RandomPolicy

    if spec == "oracle":
        if templates is None:
            raise ConfigError("the oracle policy solves known task instances only; it cannot act on goal text alone")
        return OraclePolicy(templates)
    if spec == "random":
        return RandomPolicy()
    if spec != "default" and not Path(spec).exists():
        if not _HUB_ID.fullmatch(spec) or spec.startswith((".", "/", "~")):
            raise ConfigError(f"unknown policy {spec!r}: no model folder there; give one of {', '.join(BUILTIN)}, "
                              "an existing model folder, or a hub id (org/name)")
    if adapter is not None and not Path(adapter).is_dir():
        raise ConfigError(f"no adapter folder at {adapter!r}")
    try:
        from .model import VLMPolicy  # noqa: F401  (torch is imported only here)
    except ImportError as e:
        raise ConfigError(f"policy {spec!r} needs the model policy, which failed to import: {e}") from e
    return load_policy(spec, adapter=adapter, config=config, device=device, dtype=dtype)
