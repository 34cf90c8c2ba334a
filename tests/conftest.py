"""Shared fixtures: simulated devices and the real uiautomator dumps."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

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


class Killer:
    """Kills process `pid` (SIGKILL) the first time `caught()` is true, polled from a thread for up to
    `timeout` seconds; `killed` says whether it happened. Used to cut a device mid-episode."""

    def __init__(self, caught: Callable[[], bool], pid: int, timeout: float = 300.0, every: float = 0.05):
        self.killed = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(caught, pid, timeout, every), daemon=True)
        self._thread.start()

    def _watch(self, caught: Callable[[], bool], pid: int, timeout: float, every: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if caught():
                os.kill(pid, 9)
                self.killed.set()
                return
            time.sleep(every)

    def join(self, timeout: float = 5.0) -> bool:
        self._thread.join(timeout)
        return self.killed.is_set()


@pytest.fixture
def kill_when():
    """`kill_when(caught, pid)`: a Killer watching for the moment to kill `pid`."""
    return Killer


@pytest.fixture
def adb_env(tmp_path, monkeypatch):
    """A private adb server and runtime dir, also seen by CLI subprocesses through the env; the
    virtual devices started on it are stopped afterwards."""
    from coadapt.emulator import manager
    from coadapt.emulator.adb_server import AdbServer

    with AdbServer() as server:
        monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(server.port))
        monkeypatch.setenv("COADAPT_RUNTIME_DIR", str(tmp_path / "runtime"))
        try:
            yield server
        finally:
            manager.stop_virtual_devices(adb_port=server.port)
