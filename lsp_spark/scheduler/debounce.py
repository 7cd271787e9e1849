"""Debounce that follows the typist: wait about half a usual keystroke gap, within bounds."""

from __future__ import annotations

import statistics
import time
from collections import deque

DEFAULT_SECONDS = 0.015
BOUNDS = (0.005, 0.05)
BURST_GAP = 1.0
"""Gaps longer than this are pauses, not typing rhythm."""
SAMPLES = 24


class AdaptiveDebounce:
    """A request made mid-burst is likely superseded by the next keystroke; waiting a
    fraction of the typist's usual gap avoids paying for it upstream, while a pause
    (when the suggestion is actually read) costs only those few milliseconds."""

    def __init__(self) -> None:
        self._last: float | None = None
        self._gaps: deque[float] = deque(maxlen=SAMPLES)

    def keystroke(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self._last is not None and 0 < now - self._last < BURST_GAP:
            self._gaps.append(now - self._last)
        self._last = now

    def seconds(self, fixed_ms: int | None) -> float:
        if fixed_ms is not None:
            return fixed_ms / 1000
        if len(self._gaps) < 3:
            return DEFAULT_SECONDS
        low, high = BOUNDS
        return min(high, max(low, statistics.median(self._gaps) / 2))
