"""The simulated phone: widget toolkit, system UI and the SimDevice backend."""

from .app import SimApp
from .device import LAUNCHER, SimConfig, SimDevice

__all__ = ["LAUNCHER", "SimApp", "SimConfig", "SimDevice"]
