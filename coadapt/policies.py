"""Turn a policy name from the command line into a Policy."""

from __future__ import annotations

from pathlib import Path

from coadapt.android_env.errors import ConfigError

from .agents import OraclePolicy, Policy, RandomPolicy

BUILTIN = ("oracle", "random", "default")


def make_policy(spec: str, *, seed: int = 0, adapter: str | None = None) -> Policy:
    """"oracle", "random", "default" (the bundled tiny VLM), or a model folder / hub id."""
    if spec == "oracle":
        return OraclePolicy()
    if spec == "random":
        return RandomPolicy(seed)
    try:
        from coadapt.policy.model import VLMPolicy  # noqa: F401  (torch is imported only here)
    except ImportError as e:
        raise ConfigError(f"policy {spec!r} needs the model policy, which failed to import: {e}") from e
    from coadapt.policy import load_policy

    if spec != "default" and not Path(spec).exists() and "/" not in spec:
        raise ConfigError(f"unknown policy {spec!r}: give one of {', '.join(BUILTIN)}, a model folder, or a hub id")
    return load_policy(spec, adapter=adapter, seed=seed)
