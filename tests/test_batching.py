"""The batcher: parallel single calls become batches; results and errors reach every caller."""

from __future__ import annotations

import threading

import pytest

from coadapt.policy.batching import Batcher


def test_parallel_calls_share_batches():
    seen: list[int] = []
    gate = threading.Barrier(6)

    def fn(items):
        seen.append(len(items))
        return [i * 10 for i in items]

    b = Batcher(fn, max_batch=8, max_wait_s=0.2)
    out: dict[int, int] = {}

    def call(i: int) -> None:
        gate.wait()
        out[i] = b(i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert out == {i: i * 10 for i in range(6)}
    assert sum(seen) == 6 and len(seen) < 6, f"batches {seen}"


def test_max_batch_is_respected_and_single_calls_work():
    sizes: list[int] = []
    b = Batcher(lambda items: (sizes.append(len(items)), list(items))[1], max_batch=2, max_wait_s=0.0)
    assert [b(i) for i in range(3)] == [0, 1, 2]
    assert max(sizes) <= 2


def test_errors_reach_the_caller():
    def boom(items):
        raise ValueError("model failed")

    with pytest.raises(ValueError, match="model failed"):
        Batcher(boom)(1)
