"""Every task template by name, and lookups by app or app group."""

from __future__ import annotations

import difflib
import importlib
import pkgutil

from coadapt.android_env.errors import TaskError
from coadapt.apps import ALL_APPS, SEEN_APPS, UNSEEN_APPS, app_class

from .base import TaskTemplate

# Every module of this package that defines TASKS contributes its templates.
_INFRA = {"base", "registry", "suite", "oracle"}


def _discover() -> dict[str, type[TaskTemplate]]:
    import coadapt.tasks as pkg

    found: dict[str, type[TaskTemplate]] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name in _INFRA or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for t in getattr(module, "TASKS", ()):
            if t.name in found:
                raise TaskError(f"two task templates are named {t.name!r}")
            if t.app not in ALL_APPS:
                raise TaskError(f"task {t.name} is about {t.app}, which is not in the app catalogue")
            found[t.name] = t
    return found


TEMPLATES: dict[str, type[TaskTemplate]] = _discover()

GROUPS = {"seen": SEEN_APPS, "unseen": UNSEEN_APPS, "all": ALL_APPS}


def get_template(name: str) -> type[TaskTemplate]:
    """The template called `name`; TaskError naming close matches if there is none."""
    try:
        return TEMPLATES[name]
    except KeyError:
        close = difflib.get_close_matches(name, TEMPLATES, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; {len(TEMPLATES)} templates exist (see `coadapt tasks`)"
        raise TaskError(f"unknown task {name!r}{hint}") from None


def templates_for_app(app: str) -> list[type[TaskTemplate]]:
    """Templates of one app (package or launcher label); AppError for an unknown app."""
    package = app_class(app).package
    return [t for t in TEMPLATES.values() if t.app == package]


def templates_for_group(group: str) -> list[type[TaskTemplate]]:
    """Templates of the "seen", "unseen" or "all" apps."""
    if group not in GROUPS:
        raise TaskError(f"unknown app group {group!r}; valid: {', '.join(GROUPS)}")
    apps = GROUPS[group]
    return [t for t in TEMPLATES.values() if t.app in apps]
