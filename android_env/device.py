"""The Device protocol: what every backend (simulated, ADB) offers the rest of coadapt."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from PIL import Image

from .uitree import UiTree

# Key names Device.key accepts, with the Android keycodes they send over ADB.
KEY_NAMES: dict[str, int] = {
    "back": 4,
    "home": 3,
    "enter": 66,
    "recents": 187,
    "delete": 67,
    "move_end": 123,
    "tab": 61,
}


@runtime_checkable
class Device(Protocol):
    """An Android device: screen in, touches and keys out.

    Coordinates are physical screen pixels, origin top-left. Methods raise DeviceError (or a
    subclass) when the device fails; backends retry transient faults themselves, callers don't.
    """

    serial: str

    def screen_size(self) -> tuple[int, int]:
        """(width, height) in physical pixels, in the current orientation."""
        ...

    def screenshot(self) -> Image.Image:
        """The screen as an RGB image of `screen_size()`."""
        ...

    def ui_tree(self) -> UiTree:
        """The current UI hierarchy (uiautomator format, parsed)."""
        ...

    def tap(self, x: int, y: int) -> None: ...

    def long_press(self, x: int, y: int, duration_ms: int = 600) -> None: ...

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        """Move a finger from (x1, y1) to (x2, y2) over `duration_ms` milliseconds."""
        ...

    def input_text(self, text: str) -> None:
        """Type `text` into the focused field (appends; nothing happens without a focus)."""
        ...

    def key(self, name: str) -> None:
        """Press a key by name: one of KEY_NAMES."""
        ...

    def launch(self, package: str) -> None:
        """Bring the app `package` to the foreground (starting it if needed)."""
        ...

    def current_package(self) -> str:
        """Package of the focused window."""
        ...

    def shell(self, cmd: str) -> str:
        """Run a shell command on the device and return its output."""
        ...

    def read_app_state(self, package: str) -> dict[str, Any]:
        """The app's data as JSON-able values, read like a task reads an app database."""
        ...

    def write_app_state(self, package: str, state: dict[str, Any]) -> None:
        """Replace the app's data (task set-up); `state` has the shape read_app_state returns."""
        ...

    def reset(self, seed: int | None = None) -> None:
        """Back to a clean device: apps' data cleared, home screen shown. `seed` reseeds any
        randomness the device has (the simulated popups); real devices ignore it."""
        ...

    def wait(self, seconds: float) -> None:
        """Let `seconds` pass (the sim advances its clock; a real device sleeps)."""
        ...

    def close(self) -> None:
        """Release connections; the device object is unusable afterwards."""
        ...
