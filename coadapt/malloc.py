"""glibc allocator settings for long jobs: freed screenshots go back to the OS, and rollout
threads share a few heaps instead of one each."""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


def tune_glibc_malloc() -> None:
    """Pin the mmap threshold and cap the malloc arenas; a no-op where the C library is not glibc.

    Every screenshot is a ~3.4 MB buffer; glibc raises its mmap threshold after the first is freed
    and then serves them from the heap, which fragments: an unseen-suite eval grew to 1.7 GB
    resident. Pinned, each buffer is mmapped and unmapped again (67 MB vs 586 MB after 40
    simulated episodes). Each round starts new rollout threads, and glibc gives threads their own
    arenas (up to 8 per core) that keep freed memory: a 20-minute eval soak grew 31 % in RSS with
    no growth in Python objects, and 6.7 % with two arenas."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, 128 * 1024)
        libc.mallopt(M_ARENA_MAX, 2)
    except (OSError, AttributeError):
        pass
