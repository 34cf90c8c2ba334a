"""Imports point one way: android_env <- apps <- tasks <- emulator <- coadapt (DESIGN.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"torch", "transformers", "peft", "gradio", "accelerate", "safetensors", "tokenizers"}
# For each layer: which coadapt subpackages it may import.
ALLOWED = {
    "android_env": {"android_env"},
    "apps": {"android_env", "apps"},
    "tasks": {"android_env", "apps", "tasks"},
    "emulator": {"android_env", "apps", "tasks", "emulator"},
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports(layer):
    problems = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in HEAVY and layer in ("android_env", "apps", "tasks", "emulator"):
                if layer == "android_env" or top != "safetensors":
                    problems.append(f"{path.relative_to(ROOT)} imports {name}")
            if top == "coadapt":
                parts = name.split(".")
                sub = parts[1] if len(parts) > 1 else ""
                if sub not in ALLOWED[layer]:
                    problems.append(f"{path.relative_to(ROOT)} imports {name} (layer {layer} may use {sorted(ALLOWED[layer])})")
            if top in ALLOWED and top != layer:
                problems.append(f"{path.relative_to(ROOT)} imports top-level {name}; use coadapt.{name}")
    assert not problems, "\n".join(problems)


def test_device_layer_loads_without_heavy_modules():
    code = (
        "import pkgutil, importlib, sys\n"
        "import coadapt.android_env as pkg\n"
        "for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "    importlib.import_module(m.name)\n"
        f"bad = sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
