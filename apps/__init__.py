"""Simulated apps, one module per app, and the catalogue that installs them on a SimDevice."""

from __future__ import annotations

from coadapt.android_env.errors import AppError
from coadapt.android_env.sim.app import SimApp

from .notes import NotesApp

# package -> app class. Seen apps may be used to train the base policy; unseen apps are
# adaptation targets and must never appear in base training data.
SEEN_APPS: dict[str, type[SimApp]] = {
    NotesApp.package: NotesApp,
}
UNSEEN_APPS: dict[str, type[SimApp]] = {}
ALL_APPS: dict[str, type[SimApp]] = {**SEEN_APPS, **UNSEEN_APPS}


def app_class(name: str) -> type[SimApp]:
    """The app class for a package or launcher label; AppError listing the valid ones."""
    if name in ALL_APPS:
        return ALL_APPS[name]
    for cls in ALL_APPS.values():
        if cls.label.lower() == name.lower():
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
