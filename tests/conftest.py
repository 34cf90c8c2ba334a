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


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module's model tests: on a busy small machine two threads run many
    times slower, not faster. The previous count is restored afterwards."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
