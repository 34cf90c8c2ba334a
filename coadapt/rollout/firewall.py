"""The ground-truth firewall on the device side: a phone whose app state cannot be read."""

from __future__ import annotations

from typing import Any

from coadapt.android_env.errors import CoadaptError


class GroundTruthError(CoadaptError):
    """Something on the learning side tried to read ground truth (app state, a checker)."""


class GuardedDevice:
    """Wraps a device for adaptation: everything works except `read_app_state`, which raises.

    Setting a task up still writes app states; only reading them back (what checkers do) is cut.
    """

    def __init__(self, device: Any):
        self._device = device

    @property
    def inner(self) -> Any:
        return self._device

    def read_app_state(self, package: str) -> dict[str, Any]:
        raise GroundTruthError(f"read_app_state({package!r}) during adaptation: the learning side sees only "
                               "screens, never app state")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._device, name)
