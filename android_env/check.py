"""check_device: the conformance check every Device implementation must pass.

It drives the Notes app (`com.example.notes`, installed on simulated and virtual devices)
through the Device protocol alone and checks that each method does what it promises: taps
reach the element under them, typing lands in the focused field (non-ASCII too), back and
home navigate, swipes scroll, the tree and the screenshot agree on size, and launch /
current_package / app state / reset agree with each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .device import Device
from .errors import CoadaptError
from .observation import indexed_elements
from .uitree import UiElement, UiTree

NOTES = "com.example.notes"


class ConformanceError(CoadaptError, AssertionError):
    """A device failed check_device; the message lists every failed check."""


@dataclass
class CheckReport:
    """The outcome of each check, by name."""

    serial: str
    results: list[tuple[str, bool, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(ok for _, ok, _ in self.results)

    def failures(self) -> list[str]:
        return [f"{name}: {detail}" for name, ok, detail in self.results if not ok]

    def raise_if_failed(self) -> "CheckReport":
        if not self.ok:
            raise ConformanceError(f"{self.serial} failed {len(self.failures())} check(s):\n  " + "\n  ".join(self.failures()))
        return self


def _one(tree: UiTree, **kw: str) -> UiElement | None:
    found = tree.find(**kw)
    return found[0] if found else None


def _focused_text(tree: UiTree) -> str | None:
    for e in tree:
        if e.focused and e.editable:
            return e.text
    return None


def check_device(device: Device) -> CheckReport:
    """Run every check on `device` and report; call `.raise_if_failed()` to assert."""
    report = CheckReport(device.serial)

    def check(name: str, fn: Callable[[], str | None]) -> bool:
        try:
            problem = fn()
        except Exception as e:  # a conformance check reports any failure, it does not crash
            problem = f"{type(e).__name__}: {e}"
        report.results.append((name, problem is None, problem or "ok"))
        return problem is None

    def sizes_agree() -> str | None:
        w, h = device.screen_size()
        shot = device.screenshot()
        if shot.size != (w, h):
            return f"screenshot is {shot.size}, screen_size says {(w, h)}"
        if shot.mode != "RGB":
            return f"screenshot mode is {shot.mode}, expected RGB"
        sb = device.ui_tree().screen_bounds
        if (sb.right, sb.bottom) != (w, h) or (sb.left, sb.top) != (0, 0):
            return f"UI tree covers {sb}, screen is {w}x{h}"
        return None

    def reset_goes_home() -> str | None:
        device.reset()
        if device.current_package() == NOTES:
            return "after reset the notes app is still in front"
        notes = device.read_app_state(NOTES).get("notes")
        if notes:
            return f"after reset the notes app still has {len(notes)} note(s)"
        return None

    def launch_agrees() -> str | None:
        device.launch(NOTES)
        pkg = device.current_package()
        if pkg != NOTES:
            return f"launched {NOTES} but current_package() is {pkg!r}"
        tree = device.ui_tree()
        if NOTES not in tree.packages:
            return f"launched {NOTES} but the UI tree shows only {tree.packages}"
        return None

    def tap_opens_editor() -> str | None:
        fab = _one(device.ui_tree(), content_desc="New note")
        if fab is None:
            return "no element with content-desc 'New note' on the notes list"
        device.tap(*fab.bounds.center)
        tree = device.ui_tree()
        if _one(tree, text="New note") is None:
            return "tapping 'New note' did not open the editor (no 'New note' title)"
        if _focused_text(tree) is None:
            return "the editor opened without a focused text field"
        return None

    text = "Héllo wörld 42 — ünïcode"

    def typing_lands() -> str | None:
        device.input_text(text)
        got = _focused_text(device.ui_tree())
        if got != text:
            return f"typed {text!r}, the focused field holds {got!r}"
        return None

    def back_saves() -> str | None:
        for _ in range(3):
            if _one(device.ui_tree(), content_desc="New note") is not None:
                break
            device.key("back")
        if _one(device.ui_tree(), content_desc="New note") is None:
            return "three back presses did not return to the notes list"
        titles = [n.get("title") for n in device.read_app_state(NOTES).get("notes", [])]
        if titles != [text]:
            return f"app state has titles {titles}, expected [{text!r}]"
        if _one(device.ui_tree(), text=text) is None:
            return "the saved note is not on the list"
        return None

    def swipe_scrolls() -> str | None:
        device.write_app_state(NOTES, {"notes": [{"id": i, "title": f"Note {i:02d}", "body": ""} for i in range(1, 31)]})
        device.launch(NOTES)
        tree = device.ui_tree()
        lists = [e for e in tree if e.scrollable]
        if not lists:
            return "a list of 30 notes is not scrollable"
        area = max(lists, key=lambda e: e.bounds.area).bounds
        first = [e.text for e in indexed_elements(tree) if e.text.startswith("Note ")][:1]
        cx, cy = area.center
        device.swipe(cx, cy + area.height // 3, cx, cy - area.height // 3, 300)
        after = [e.text for e in indexed_elements(device.ui_tree()) if e.text.startswith("Note ")][:1]
        if not first or first == after:
            return f"swiping up did not scroll the list (first visible note {first} -> {after})"
        return None

    def home_leaves() -> str | None:
        device.key("home")
        pkg = device.current_package()
        if pkg == NOTES:
            return "home key left the notes app in front"
        return None

    def shell_runs() -> str | None:
        out = device.shell("echo conformance").strip()
        if out != "conformance":
            return f"shell('echo conformance') returned {out!r}"
        return None

    if not check("screenshot and tree agree on size", sizes_agree):
        return report
    check("reset clears apps and goes home", reset_goes_home)
    if check("launch and current_package agree", launch_agrees):
        if check("tap reaches the element under it", tap_opens_editor):
            check("typing lands in the focused field", typing_lands)
            check("back navigates and the app saved", back_saves)
    check("swipe scrolls a list", swipe_scrolls)
    check("home leaves the app", home_leaves)
    check("shell runs commands", shell_runs)
    check("screenshot and tree agree after input", sizes_agree)
    device.reset()
    return report
