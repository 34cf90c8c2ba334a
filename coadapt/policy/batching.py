"""Gather single generate() calls from rollout threads into batched forward passes."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


@dataclass(eq=False)
class _Pending(Generic[In, Out]):
    item: In
    result: Out | None = None
    error: BaseException | None = None
    done: bool = False


class Batcher(Generic[In, Out]):
    """Call it from many threads with one item each; items that arrive within `max_wait_s`
    of each other go through `fn` together (up to `max_batch`). The first waiting thread runs
    the batch for everyone, so no extra thread is needed and errors reach every caller."""

    def __init__(self, fn: Callable[[Sequence[In]], list[Out]], max_batch: int = 8, max_wait_s: float = 0.02):
        self.fn = fn
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self._pending: list[_Pending[In, Out]] = []
        self._busy = False
        self._cv = threading.Condition()
        self.batches = 0
        self.items = 0

    def __call__(self, item: In) -> Out:
        p: _Pending[In, Out] = _Pending(item)
        with self._cv:
            self._pending.append(p)
            self._cv.notify_all()
            while not p.done:
                if self._busy:
                    self._cv.wait()
                    continue
                self._busy = True
                deadline = time.monotonic() + self.max_wait_s
                while len(self._pending) < self.max_batch:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                batch = self._pending[: self.max_batch]
                del self._pending[: self.max_batch]
                self._cv.release()
                results: list[Out] | None = None
                error: BaseException | None = None
                try:
                    results = self.fn([b.item for b in batch])
                except BaseException as e:  # handed to every caller of this batch
                    error = e
                finally:
                    self._cv.acquire()
                for i, b in enumerate(batch):
                    b.result = results[i] if results is not None else None
                    b.error = error
                    b.done = True
                self.batches += 1
                self.items += len(batch)
                self._busy = False
                self._cv.notify_all()
        if p.error is not None:
            raise p.error
        return p.result  # type: ignore[return-value]
