"""Timing shared by the benchmarks."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator


def time_each(calls: Iterator[Callable[[], object]]) -> list[int]:
    """Each call's time in nanoseconds, sorted, measured with the garbage collector off so
    its pauses don't land in p95."""
    samples = []
    clock = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for call in calls:
            begin = clock()
            call()
            samples.append(clock() - begin)
    finally:
        gc.enable()
    return sorted(samples)
