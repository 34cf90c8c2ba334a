"""One error hierarchy for the whole project, rooted at CoadaptError."""

from __future__ import annotations


class CoadaptError(Exception):
    """Base of every error coadapt raises on purpose."""


class ConfigError(CoadaptError, ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


class ActionError(CoadaptError, ValueError):
    """An action is malformed (bad field, bad JSON) or cannot be resolved on the screen seen."""


class UiTreeError(CoadaptError):
    """A UI hierarchy dump could not be parsed (malformed XML, empty file, null root node)."""


class DeviceError(CoadaptError):
    """A device command failed. `command` holds what was sent, when known."""

    def __init__(self, message: str, *, command: str | None = None, serial: str | None = None):
        parts = [message]
        if command:
            parts.append(f"command: {command!r}")
        if serial:
            parts.append(f"device: {serial}")
        super().__init__("; ".join(parts))
        self.command = command
        self.serial = serial


class DeviceOfflineError(DeviceError):
    """The device is gone (disconnected, killed, offline) and needs recovery, not a retry."""


class DeviceTimeoutError(DeviceError):
    """A device command did not answer in time."""


class AppError(CoadaptError, KeyError):
    """An unknown app or package was named."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class TaskError(CoadaptError):
    """A task or suite is malformed, unknown, or was used out of its lifecycle order."""


class EnvError(CoadaptError):
    """The episode env was used out of order (step before reset, step after the end)."""
