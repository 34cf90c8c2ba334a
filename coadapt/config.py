"""The root config: one typed dataclass per component, loaded from YAML with CLI overrides on top.

    model:   {model: default, device: cpu, temperature: 1.0}
    devices: {workers: 4, popups: true}
    eval:    {suite: unseen, k: 3}
    adapt:   {rounds: 3, group_size: 4}

Every command reads the same file (`--config FILE`); its own options override single fields.
Unknown keys and ill-typed values raise ConfigError naming the field and the valid keys.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping


from coadapt.adapt.config import AdaptConfig
from coadapt.android_env.errors import ConfigError
from coadapt.evaluation import EvalConfig
from coadapt.tasks.suite import read_yaml_file

MAX_ATTEMPTS = 1000
"""Upper bound of eval.k and adapt.group_size: more attempts per task is a typo, not a plan."""


@dataclass(frozen=True)
class ModelSettings:
    """Which policy acts, and where its model runs."""

    model: str = "default"
    """oracle, random, default (the bundled tiny VLM), or a model folder / hub id."""
    adapter: str | None = None
    """A peft LoRA adapter folder to load on the model."""
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    """Where the model runs; auto picks cuda when available."""
    dtype: str = "auto"
    """Model weights' dtype: auto (the checkpoint's), float32, bfloat16, float16."""
    threads: int | None = None
    """torch CPU threads (default: torch's choice)."""
    temperature: float | None = None
    """Sampling temperature (0 = greedy); None keeps the model folder's saved setting."""
    top_p: float | None = None
    """Nucleus sampling mass; None keeps the model folder's saved setting."""

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda", "auto"):
            raise ConfigError(f"model.device must be cpu, cuda or auto, got {self.device!r}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"model.threads must be >= 1, got {self.threads}")
        if self.temperature is not None and self.temperature < 0:
            raise ConfigError(f"model.temperature must be >= 0, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ConfigError(f"model.top_p must be in (0, 1], got {self.top_p}")

    @property
    def torch_device(self) -> str:
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass(frozen=True)
class DeviceSettings:
    """Which phones episodes run on."""

    devices: str | None = None
    """Comma-separated ADB serials; default: simulated phones."""
    workers: int = 2
    """Simulated phones in parallel (ignored with devices: one worker per device)."""
    seed: int = 0
    """Seed of the simulated phones and of every episode's sampling."""
    settle: float = 0.0
    """Seconds to let a real device's UI settle after each action."""
    popups: bool = False
    """Simulated phones show random system popups (permission dialogs, rate-this-app)."""
    screens: str = "changed"
    """Screenshots saved in the run folder: all (one PNG per step), changed (a screen identical to
    one already saved is a reference, not a copy) or none. Resuming training needs them."""
    max_infra_retries: int = 2
    """How often an episode cut by a device fault is replayed before it counts as lost."""

    @property
    def serials(self) -> list[str]:
        """The ADB serials of `devices`, in order (empty: simulated phones)."""
        return [d.strip() for d in (self.devices or "").split(",") if d.strip()]

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"devices.workers must be >= 1, got {self.workers}")
        if self.devices is not None:
            serials = self.serials
            twice = sorted({d for d in serials if serials.count(d) > 1})
            if twice:
                raise ConfigError(f"devices.devices: {', '.join(twice)} is listed twice; give each serial once")
        if self.settle < 0:
            raise ConfigError(f"devices.settle must be >= 0 seconds, got {self.settle}")
        if self.screens not in ("all", "changed", "none"):
            raise ConfigError(f"devices.screens must be all, changed or none, got {self.screens!r}")
        if self.max_infra_retries < 0:
            raise ConfigError(f"devices.max_infra_retries must be >= 0, got {self.max_infra_retries}")
        if self.seed < 0:
            raise ConfigError(f"devices.seed must be >= 0, got {self.seed}")


@dataclass(frozen=True)
class CoadaptConfig:
    """Everything a command may read; each command uses its sections."""

    model: ModelSettings = field(default_factory=ModelSettings)
    devices: DeviceSettings = field(default_factory=DeviceSettings)
    eval: EvalConfig = field(default_factory=EvalConfig)
    adapt: AdaptConfig = field(default_factory=AdaptConfig)


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        return from_mapping(tp, value, where)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a, where)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"{where}: bad value {value!r}")
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise ConfigError(f"{where} must be one of {', '.join(map(str, typing.get_args(tp)))}, got {value!r}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        inner = typing.get_args(tp)[0] if typing.get_args(tp) else Any
        return tuple(_coerce(v, inner, where) for v in value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {value!r}")
        return value
    return value


def from_mapping(cls: Any, data: Any, where: str = "config") -> Any:
    """Build dataclass `cls` from a (nested) mapping, checking names and types."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be a mapping of {cls.__name__} fields, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; valid: {sorted(fields)}")
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _coerce(value, hints[name], f"{where}.{name}")
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ConfigError(f"{where}: {e}") from e


def load_config(path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> CoadaptConfig:
    """The root config from a YAML file (or defaults), then `overrides` ("section.field" ->
    value; None values are skipped, so unset CLI options keep the file's values)."""
    data: dict[str, Any] = {}
    if path is not None:
        loaded = read_yaml_file(path, ConfigError, "config")
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path}: a config is a mapping with sections model, devices, eval, adapt")
        data = {k: dict(v or {}) if isinstance(v, dict) or v is None else v for k, v in (loaded or {}).items()}
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        section, _, name = dotted.partition(".")
        sec = data.setdefault(section, {})
        if not isinstance(sec, dict):
            raise ConfigError(f"config section {section!r} must be a mapping")
        sec[name] = value
    model = data.get("model")
    if isinstance(model, dict) and model.get("adapter") and "model" not in model:
        from coadapt.policy.adapter_record import read_base

        # no model named: the one the adapter was trained on (`coadapt eval --adapter runs/adapt-x/adapter`)
        base = read_base(model["adapter"]) if Path(str(model["adapter"])).is_dir() else None
        if base is not None:
            model["model"] = base
    cfg = from_mapping(CoadaptConfig, data, where=str(path) if path else "config")
    if cfg.eval.k > MAX_ATTEMPTS:
        raise ConfigError(f"eval.k must be at most {MAX_ATTEMPTS} attempts per instance, got {cfg.eval.k}")
    if cfg.adapt.group_size > MAX_ATTEMPTS:
        raise ConfigError(f"adapt.group_size must be at most {MAX_ATTEMPTS} attempts per task, got {cfg.adapt.group_size}")
    return cfg


def to_dict(cfg: Any) -> Any:
    """A config as plain data (for config.json)."""
    return dataclasses.asdict(cfg)
