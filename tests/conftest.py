"""Shared fixtures: simulated devices and the real uiautomator dumps."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def sim():
    """A simulated phone with every catalogue app installed."""
    from coadapt.android_env.sim import SimDevice
    from coadapt.apps import make_apps

    return SimDevice(make_apps())


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
