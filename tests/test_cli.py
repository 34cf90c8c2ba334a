"""The command line, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys

from PIL import Image


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coadapt.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_help_lists_commands():
    out = run("--help")
    assert out.returncode == 0
    assert "show" in out.stdout


def test_show_prints_elements_and_writes_files(tmp_path):
    png, xml = tmp_path / "screen.png", tmp_path / "screen.xml"
    out = run("show", "--app", "com.example.notes", "--out", str(png), "--xml", str(xml))
    assert out.returncode == 0, out.stderr
    assert "New note" in out.stdout
    assert Image.open(png).size == (720, 1600)
    assert "<hierarchy" in xml.read_text()


def test_unknown_app_is_a_clear_error():
    out = run("show", "--app", "com.example.nope")
    assert out.returncode == 2
    assert "unknown app 'com.example.nope'" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_pretrain_bad_settings_are_clear_errors(tmp_path):
    out = run("pretrain", "--lr", "-1", "--out", str(tmp_path / "m"))
    assert out.returncode == 2 and "lr must be a positive number" in out.stdout
    cfg = tmp_path / "p.yaml"
    cfg.write_text("stepz: 10\n")
    out = run("pretrain", "--config", str(cfg))
    assert out.returncode == 2 and "unknown key 'stepz'" in out.stdout
