"""The seen/unseen split holds: seen apps use none of the unseen idioms, each unseen app uses
at least four, and together the unseen apps use all of them (apps/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coadapt.apps import SEEN_APPS, UNSEEN_APPS

APPS_DIR = Path(__file__).resolve().parents[1] / "apps"

# Each unseen idiom, and source patterns that show an app uses it.
UNSEEN_IDIOMS: dict[str, str] = {
    "U-overflow-add": r"\bmenu=|\.menu\(",
    "U-sheet": r"BottomSheet\(|\.sheet\(",
    "U-swipe": r"on_swipe\s*=",
    "U-longpress": r"on_long_click\s*=",
    "U-confirm": r"\bDialog\(",
    "U-drawer": r"\bDrawer\(",
    "U-search": r"kind=\"search\"",
    "U-icons": r"\bIconButton\(|GlyphButton\(",
}


def _module(package: str) -> str:
    return package.rsplit(".", 1)[-1]


def _source(package: str) -> str:
    return (APPS_DIR / f"{_module(package)}.py").read_text(encoding="utf-8")


def _idioms(package: str) -> set[str]:
    src = _source(package)
    return {name for name, pat in UNSEEN_IDIOMS.items() if re.search(pat, src)}


@pytest.mark.parametrize("package", sorted(SEEN_APPS))
def test_seen_apps_use_no_unseen_idiom(package):
    assert _idioms(package) == set(), f"{package} is a seen app but uses {sorted(_idioms(package))}"


@pytest.mark.parametrize("package", sorted(UNSEEN_APPS))
def test_unseen_apps_use_at_least_four(package):
    assert len(_idioms(package)) >= 4, f"{package} uses only {sorted(_idioms(package))}"


def test_unseen_apps_cover_every_idiom():
    used = set().union(*(_idioms(p) for p in UNSEEN_APPS))
    assert used == set(UNSEEN_IDIOMS)


def test_catalogue_size_and_readme():
    assert len(SEEN_APPS) >= 7 and len(UNSEEN_APPS) >= 5
    readme = (APPS_DIR / "README.md").read_text(encoding="utf-8")
    for package in [*SEEN_APPS, *UNSEEN_APPS]:
        assert f"| {package} |" in readme, f"{package} has no row in apps/README.md"
