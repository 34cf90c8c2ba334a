"""Every subpackage is listed in pyproject.toml, so a non-editable install ships it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder(pkg: str, dirs: dict[str, str]) -> Path:
    """The source folder of `pkg` under package-dir's mapping."""
    root = max((p for p in dirs if pkg == p or pkg.startswith(p + ".")), key=len)
    return ROOT / dirs[root] / Path(*pkg[len(root):].split(".")[1:])


def test_every_package_is_listed():
    cfg = _setuptools()
    listed = set(cfg["packages"])
    dirs = cfg["package-dir"]
    found = set()
    for pkg, folder in dirs.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join([pkg, *rel.parts]) if rel.parts else pkg)
    missing = sorted(found - listed)
    assert not missing, f"add to [tool.setuptools] packages: {missing}"


def test_the_bundled_model_and_suites_ship_as_package_data():
    import fnmatch

    cfg = _setuptools()
    data = cfg["package-data"]
    for pkg, needed in [("coadapt.policy.tiny_vlm", "*"), ("coadapt.tasks.suites", "*.yaml")]:
        folder = _folder(pkg, cfg["package-dir"])
        assert pkg in cfg["packages"], f"{pkg} is not listed, so a wheel would not ship {folder}"
        files = sorted(p.name for p in folder.glob(needed))
        assert files, folder
        unshipped = [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in data.get(pkg, []))]
        assert not unshipped, f"{pkg}: {unshipped} would be left out of a wheel"
