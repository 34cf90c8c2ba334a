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
def expenses_long_list():
    """Expenses open on a list of 28 expenses (long enough to scroll)."""
    import random

    from coadapt.android_env.sim import SimDevice
    from coadapt.apps import make_apps
    from coadapt.apps.expenses import ExpensesApp, sample_expenses

    d = SimDevice(make_apps([ExpensesApp.package]))
    d.write_app_state(ExpensesApp.package, {"expenses": sample_expenses(random.Random(5), 28), "budget": 900.0})
    d.launch(ExpensesApp.package)
    return d


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
