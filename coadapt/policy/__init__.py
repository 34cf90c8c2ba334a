"""The VLM policy: model loading, prompts, action parsing, generation.

`parser` and `prompt` need no torch; importing this package does not import torch either.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .agent import VLMAgentPolicy
    from .model import PolicyConfig


def load_policy(spec: str | os.PathLike, *, adapter: str | os.PathLike | None = None, seed: int = 0,
                config: "PolicyConfig | None" = None) -> "VLMAgentPolicy":
    """See `coadapt.policy.agent.load_policy` (imported lazily: it brings in torch)."""
    from .agent import load_policy as _load

    return _load(spec, adapter=adapter, seed=seed, config=config)
