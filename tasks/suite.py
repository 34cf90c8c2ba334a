"""Suites: which task templates, how many instances, and the seeds that make them.

Instance seeds are derived from (suite seed, task name, index) inside a *seed space*. The
spaces never overlap by construction (the space is the top bits of the seed), so evaluation
instances can never be instances an agent adapted or was pretrained on.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from coadapt.android_env.errors import AppError, TaskError

from .base import TaskTemplate
from .registry import get_template, templates_for_app, templates_for_group

SEED_SPACES: dict[str, int] = {"eval": 0, "adapt": 1, "pretrain": 2, "explore": 3}
_SPACE_SHIFT = 48
SUITES_DIR = Path(__file__).parent / "suites"
MAX_YAML_BYTES = 1 << 20
"""Suite and config files are a few lines; a larger file is refused before it is parsed."""
_BAD_NAME_RE = re.compile(r"[/\\\x00]")


class _NoAliasLoader(yaml.SafeLoader):
    """The safe loader, refusing aliases (`*name`): a few lines of nested aliases expand to
    billions of nodes when walked ("billion laughs"), and suite and config files need none."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in coadapt files", mark)
        return super().compose_node(parent, index)


def read_yaml_file(path: str | Path, error: type[Exception], what: str) -> Any:
    """Parse the small YAML file `path` (a suite, a config) with the safe loader, refusing
    aliases, files over MAX_YAML_BYTES and text that is not UTF-8. Every failure raises
    `error` with one line naming the file; `what` names the file's role ("suite", "config")."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except OSError as e:
        raise error(f"cannot read {what} {str(path)!r}: {e.strerror or e}") from e
    if len(data) > MAX_YAML_BYTES:
        raise error(f"{p}: too large for a {what} file (over {MAX_YAML_BYTES >> 20} MiB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{p}: not UTF-8 text (byte {e.start}); a {what} file is YAML") from e
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        detail = " ".join(str(e).split())  # one line
        raise error(f"{p}: not valid YAML: {detail}") from e


def instance_seed(space: str, suite_seed: int, task: str, index: int) -> int:
    """The seed of instance `index` of `task` in a suite, inside seed space `space`."""
    if space not in SEED_SPACES:
        raise TaskError(f"unknown seed space {space!r}; valid: {', '.join(SEED_SPACES)}")
    digest = hashlib.blake2b(f"{suite_seed}/{task}/{index}".encode(), digest_size=6).digest()
    return (SEED_SPACES[space] << _SPACE_SHIFT) | int.from_bytes(digest, "big")


def seed_space(seed: int) -> str:
    """Which space a seed was drawn in."""
    top = seed >> _SPACE_SHIFT
    for name, v in SEED_SPACES.items():
        if v == top:
            return name
    raise TaskError(f"seed {seed} is in no known seed space")


@dataclass(frozen=True)
class InstanceSpec:
    """One task instance of a suite: template name, index within the template, seed."""

    task: str
    index: int
    seed: int

    @property
    def key(self) -> str:
        """Stable id of the instance within a run (used to resume)."""
        return f"{self.task}#{self.index}"

    def build(self) -> TaskTemplate:
        return get_template(self.task).from_seed(self.seed)


_KEYS = {"name", "description", "seed", "instances_per_task", "tasks", "apps", "group", "exclude"}


@dataclass(frozen=True)
class Suite:
    """A named set of task templates with an instance count and a seed."""

    name: str
    tasks: tuple[str, ...]
    seed: int = 0
    instances_per_task: int = 1
    description: str = ""

    def instances(self, space: str = "eval") -> list[InstanceSpec]:
        return [InstanceSpec(t, i, instance_seed(space, self.seed, t, i))
                for t in self.tasks for i in range(self.instances_per_task)]

    @property
    def apps(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(get_template(t).app for t in self.tasks))

    @classmethod
    def from_dict(cls, data: Any, source: str = "suite") -> "Suite":
        """Validate a parsed suite; TaskError names the file and the problem."""
        if not isinstance(data, dict):
            raise TaskError(f"{source}: a suite is a mapping with keys {sorted(_KEYS)}, got {type(data).__name__}")
        unknown = set(data) - _KEYS
        if unknown:
            raise TaskError(f"{source}: unknown key(s) {sorted(unknown)}; valid: {sorted(_KEYS)}")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise TaskError(f"{source}: 'name' must be a non-empty string")
        # The name becomes part of a run folder's name (runs/eval-<name>-...).
        if _BAD_NAME_RE.search(name) or name in (".", ".."):
            raise TaskError(f"{source}: 'name' must be a plain name without '/', '\\' or NUL, got {name!r}")
        seed = data.get("seed", 0)
        n = data.get("instances_per_task", 1)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise TaskError(f"{source}: 'seed' must be a non-negative integer, got {seed!r}")
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 1000:
            raise TaskError(f"{source}: 'instances_per_task' must be an integer in 1..1000, got {n!r}")
        selected: list[str] = []
        for key in ("tasks", "apps", "exclude"):
            v = data.get(key)
            if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
                raise TaskError(f"{source}: '{key}' must be a list of names")
        try:
            if data.get("group") is not None:
                selected += [t.name for t in templates_for_group(str(data["group"]))]
            for app in data.get("apps") or []:
                found = templates_for_app(app)
                if not found:
                    raise TaskError(f"{source}: app {app!r} has no task templates")
                selected += [t.name for t in found]
            for t in data.get("tasks") or []:
                selected.append(get_template(t).name)
            excluded = {get_template(t).name for t in data.get("exclude") or []}
        except (TaskError, AppError) as e:
            raise TaskError(f"{source}: {e}") from e
        tasks = tuple(t for t in dict.fromkeys(selected) if t not in excluded)
        if not tasks:
            raise TaskError(f"{source}: selects no tasks (give 'tasks', 'apps' or 'group')")
        return cls(name=name, tasks=tasks, seed=seed, instances_per_task=n, description=str(data.get("description", "")))

    @classmethod
    def load(cls, path: str | Path) -> "Suite":
        """Read a suite YAML file; a bare name ("smoke") means tasks/suites/<name>.yaml."""
        p = Path(path)
        # A bare name is a bundled suite unless a file of that name is here (a folder named `unseen`
        # in the working directory must not shadow the bundled suite).
        if not p.is_file() and p.suffix == "" and (SUITES_DIR / f"{p.name}.yaml").exists():
            p = SUITES_DIR / f"{p.name}.yaml"
        if not p.is_file():
            known = ", ".join(sorted(f.stem for f in SUITES_DIR.glob("*.yaml")))
            # Never opened: a FIFO or a device would block the read.
            reason = "Is a directory" if p.is_dir() else "No such file" if not p.exists() else "not a regular file"
            raise TaskError(f"cannot read suite {str(path)!r}: {reason}; bundled suites: {known}")
        return cls.from_dict(read_yaml_file(p, TaskError, "suite"), source=str(p))
