"""Timing, and the command-line options every benchmark takes, shared by the benchmarks."""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path


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


def add_size_options(
    parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup, results: Path, tiny: str
) -> None:
    """`--tiny` (a run of seconds that checks the benchmark still does its work; `tiny` says
    how small) and `--output` (where the JSON goes instead of `results`), so the test suite
    can run every benchmark without touching the real results."""
    parser.add_argument("--tiny", action="store_true", help=tiny)
    parser.add_argument("--output", type=Path, default=results, help="where the JSON goes")
