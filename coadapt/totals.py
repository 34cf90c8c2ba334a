"""Wall-clock and peak RSS of a job over every process that worked on its run folder."""

from __future__ import annotations

import resource
import time
from typing import Any, Callable

from coadapt.runs import RunStore

ProgressFn = Callable[[str, dict[str, Any]], None]


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class JobTotals:
    """A killed or re-run job's report keeps what earlier processes spent: wall-clock summed, peak
    RSS the largest any process reached. Kept in the run store's meta under `key`, saved at most
    every `every_s` seconds while the job reports progress (a kill loses at most that much)."""

    def __init__(self, store: RunStore, key: str, every_s: float = 5.0):
        self.store, self.key, self.every_s = store, key, every_s
        before = store.get_meta(key) or {}
        self.wall_before = float(before.get("wall_s", 0.0))
        self.rss_before = float(before.get("peak_rss_mb", 0.0))
        self.started = self.saved_at = time.monotonic()

    def save(self) -> tuple[float, float]:
        """(wall seconds, peak RSS MB) over every process so far, this one included; stored."""
        self.saved_at = time.monotonic()
        wall = round(self.wall_before + self.saved_at - self.started, 1)
        rss = round(max(self.rss_before, peak_rss_mb()), 1)
        self.store.set_meta(self.key, {"wall_s": wall, "peak_rss_mb": rss})
        return wall, rss

    def ticking(self, say: ProgressFn) -> ProgressFn:
        """`say`, saving the totals on the way when the last save is `every_s` old."""
        def tick(event: str, data: dict[str, Any]) -> None:
            if time.monotonic() - self.saved_at >= self.every_s:
                self.save()
            say(event, data)
        return tick
