"""Simulated apps, one module per app, and the catalogue that installs them on a SimDevice.

Each module defines `APP` (its SimApp subclass) and `GROUP`: "seen" apps may be used to train
the base policy; "unseen" apps are adaptation targets and never appear in base training data.
Modules are found in this package by name, so adding an app is adding a module (apps/README.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from coadapt.android_env.errors import AppError, ConfigError
from coadapt.android_env.sim.app import SimApp


def _discover() -> tuple[dict[str, type[SimApp]], dict[str, type[SimApp]]]:
    seen: dict[str, type[SimApp]] = {}
    unseen: dict[str, type[SimApp]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        cls = getattr(module, "APP", None)
        if cls is None:
            continue
        group = getattr(module, "GROUP", None)
        if group not in ("seen", "unseen"):
            raise ConfigError(f"apps/{info.name}.py: GROUP must be 'seen' or 'unseen', got {group!r}")
        target = seen if group == "seen" else unseen
        if cls.package in seen or cls.package in unseen:
            raise ConfigError(f"apps/{info.name}.py: package {cls.package} is defined twice")
        target[cls.package] = cls
    return seen, unseen


SEEN_APPS, UNSEEN_APPS = _discover()
ALL_APPS: dict[str, type[SimApp]] = {**SEEN_APPS, **UNSEEN_APPS}


def app_class(name: str) -> type[SimApp]:
    """The app class for a package, its last segment (`todo`) or its launcher label; AppError
    listing the valid ones."""
    if name in ALL_APPS:
        return ALL_APPS[name]
    wanted = name.lower()
    for cls in ALL_APPS.values():
        if wanted in (cls.label.lower(), cls.package.rsplit(".", 1)[-1].lower()):
            return cls
    valid = ", ".join(f"{p} ({c.label})" for p, c in sorted(ALL_APPS.items()))
    raise AppError(f"unknown app {name!r}; known apps: {valid}")


def make_apps(packages: list[str] | None = None) -> list[SimApp]:
    """Fresh instances of the named apps (all apps when None), in catalogue order."""
    if packages is None:
        return [cls() for cls in ALL_APPS.values()]
    return [app_class(p)() for p in packages]


def is_seen(package: str) -> bool:
    return app_class(package).package in SEEN_APPS


def label_map() -> dict[str, str]:
    """Launcher label -> package, for resolving `open_app` actions."""
    return {cls.label: p for p, cls in ALL_APPS.items()}
