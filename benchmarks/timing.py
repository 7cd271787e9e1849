"""Timing shared by the benchmarks."""

from __future__ import annotations

import gc
import statistics
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


def measure(calls: Iterator[Callable[[], object]]) -> dict[str, float]:
    """p50, p95 and mean of the calls, in microseconds."""
    samples = time_each(calls)
    return {
        "p50_us": samples[len(samples) // 2] / 1000,
        "p95_us": samples[len(samples) * 95 // 100] / 1000,
        "mean_us": statistics.fmean(samples) / 1000,
        "calls": len(samples),
    }
