"""Debounce that follows the typist: a small share of the usual keystroke gap, within bounds."""

from __future__ import annotations

import statistics
import time
from collections import deque

DEFAULT_SECONDS = 0.01
BOUNDS = (0.0, 0.02)
BURST_GAP = 1.0
"""Gaps longer than this are pauses, not typing rhythm."""
SAMPLES = 24
GAP_SHARE = 0.15


class AdaptiveDebounce:
    """A request made mid-burst is likely superseded by the next keystroke; waiting a
    fraction of the typist's usual gap avoids some of those upstream calls. The share
    stays small because a keystroke that extends a request in flight rides on it
    rather than superseding it, and every millisecond here is added to what users see."""

    def __init__(self) -> None:
        self._last: float | None = None
        self._gaps: deque[float] = deque(maxlen=SAMPLES)
        self.client_debounces = False
        """Set for a client that waits after keystrokes and cancels what it no longer needs
        before it asks (VS Code waits 50 ms): waiting again here only adds to what users see."""

    def keystroke(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self._last is not None and 0 < now - self._last < BURST_GAP:
            self._gaps.append(now - self._last)
        self._last = now

    def seconds(self, fixed_ms: int | None) -> float:
        if fixed_ms is not None:
            return fixed_ms / 1000
        if self.client_debounces:
            return 0.0
        if len(self._gaps) < 3:
            return DEFAULT_SECONDS
        low, high = BOUNDS
        return min(high, max(low, statistics.median(self._gaps) * GAP_SHARE))
