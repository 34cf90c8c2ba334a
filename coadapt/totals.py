"""Wall-clock and peak RSS of a job over every process that worked on its run folder."""

from __future__ import annotations

import logging
import resource
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from coadapt.runs import RunStore

ProgressFn = Callable[[str, dict[str, Any]], None]

log = logging.getLogger(__name__)


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _SavedEveryFew:
    """A total kept in the run store's meta, saved at most every `every_s` seconds while a job
    reports progress (a killed process loses at most that much)."""

    def __init__(self, store: RunStore, every_s: float):
        self.store, self.every_s = store, every_s
        self.started = self.saved_at = time.monotonic()
        self.riders: list[_SavedEveryFew] = []

    def also(self, other: "_SavedEveryFew") -> None:
        """Save `other` whenever this one saves on a tick: totals saved at one moment stay
        consistent after a kill (a job's time never falls below the part of it kept by `other`)."""
        self.riders.append(other)

    def this_process(self) -> float:
        return time.monotonic() - self.started

    def save(self) -> object:
        raise NotImplementedError

    def save_all(self) -> None:
        """Save this total and its riders at one moment."""
        self.save()
        for rider in self.riders:
            rider.save()

    def ticking(self, say: ProgressFn) -> ProgressFn:
        """`say`, saving on the way when the last save is `every_s` old."""
        def tick(event: str, data: dict[str, Any]) -> None:
            if time.monotonic() - self.saved_at >= self.every_s:
                self.save_all()
            say(event, data)
        return tick

    @contextmanager
    def saved_on_error(self) -> Iterator[None]:
        """Save (riders too) when the block ends by an exception, Ctrl+C included: only a hard
        kill loses the time since the last tick. The exception itself goes on unchanged."""
        try:
            yield
        except BaseException:
            try:
                self.save_all()
            except Exception as e:  # e.g. the store's own disk error: keep the first exception
                log.warning("could not save the run's totals on the way out: %s", e)
            raise


class JobTotals(_SavedEveryFew):
    """A killed or re-run job's report keeps what earlier processes spent: wall-clock summed, peak
    RSS the largest any process reached. Kept under `key`."""

    def __init__(self, store: RunStore, key: str, every_s: float = 5.0):
        super().__init__(store, every_s)
        self.key = key
        before = store.get_meta(key) or {}
        self.wall_before = float(before.get("wall_s", 0.0))
        self.rss_before = float(before.get("peak_rss_mb", 0.0))

    def save(self) -> tuple[float, float]:
        """(wall seconds, peak RSS MB) over every process so far, this one included; stored."""
        self.saved_at = time.monotonic()
        wall = round(self.wall_before + self.saved_at - self.started, 1)
        rss = round(max(self.rss_before, peak_rss_mb()), 1)
        self.store.set_meta(self.key, {"wall_s": wall, "peak_rss_mb": rss})
        return wall, rss


class AdaptClock(_SavedEveryFew):
    """Adaptation wall-clock summed over the processes of a run: a resumed run continues its
    budget (and its report's adapt_wall_clock_s) instead of starting a fresh 15 minutes."""

    KEY = "adapt_spent_s"

    def __init__(self, store: RunStore, every_s: float = 5.0):
        super().__init__(store, every_s)
        self.before = float(store.get_meta(self.KEY, 0.0))

    def save(self) -> float:
        """Seconds of adaptation so far, earlier processes of this run included (and saved)."""
        self.saved_at = time.monotonic()
        total = self.before + self.this_process()
        self.store.set_meta(self.KEY, round(total, 1))
        return total

    spent = save
