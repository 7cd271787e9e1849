"""Answers from memory, keyed by the state of the cursor's line.

Three ways a request needs no upstream call: the same state was answered before
(including after a backspace), the user is typing the very characters of a suggestion
already shown, or the state is the one reached by accepting a suggestion, whose
continuation was fetched ahead of time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from cachetools import LRUCache, TTLCache

ENTRIES = 512
TTL_SECONDS = 120.0
STATES_PER_ROW = 8
ROWS = 256


@dataclass(frozen=True, slots=True)
class LineState:
    """Where the cursor is: its line split at the cursor, and the line above for safety."""

    uri: str
    row: int
    line_prefix: str
    line_suffix: str
    previous_line: str

    def extended_by(self, later: LineState) -> bool:
        """Whether `later` is this state with more characters typed at the cursor."""
        return (
            later.uri == self.uri
            and later.row == self.row
            and later.line_suffix == self.line_suffix
            and later.previous_line == self.previous_line
            and len(later.line_prefix) > len(self.line_prefix)
            and later.line_prefix.startswith(self.line_prefix)
        )


@dataclass(frozen=True, slots=True)
class Remembered:
    text: str
    replace_chars: int
    origin: str = "cache"
    """"cache" (answered before), "typed" (typing through), or "prefetch"."""


class SuggestionCache:
    def __init__(self) -> None:
        self._entries: TTLCache[LineState, Remembered] = TTLCache(ENTRIES, TTL_SECONDS)
        self._rows: LRUCache[tuple[str, int], deque[LineState]] = LRUCache(ROWS)
        self._next_lines: TTLCache[tuple[str, int, str], str] = TTLCache(ENTRIES, TTL_SECONDS)

    def remember(
        self, state: LineState, text: str, replace_chars: int, origin: str = "cache"
    ) -> None:
        self._entries[state] = Remembered(text, replace_chars, origin)
        key = (state.uri, state.row)
        states = self._rows.get(key)
        if states is None:
            states = self._rows[key] = deque(maxlen=STATES_PER_ROW)
        if state in states:
            states.remove(state)
        states.appendleft(state)

    def remember_next_line(self, uri: str, row: int, previous_line: str, text: str) -> None:
        """A prefetched continuation to show on the blank line after `previous_line`."""
        self._next_lines[(uri, row, previous_line)] = text

    def recall(self, state: LineState) -> Remembered | None:
        found = self._entries.get(state)
        if found is not None:
            return found
        found = self._typed_through(state) or self._next_line(state)
        if found is not None:
            self.remember(state, found.text, found.replace_chars, found.origin)
        return found

    def _typed_through(self, state: LineState) -> Remembered | None:
        line_prefix = state.line_prefix
        for earlier in self._rows.get((state.uri, state.row), ()):
            # The string tests first: they rule out most states before any cache lookup.
            if (
                len(earlier.line_prefix) >= len(line_prefix)
                or not line_prefix.startswith(earlier.line_prefix)
                or earlier.line_suffix != state.line_suffix
                or earlier.previous_line != state.previous_line
            ):
                continue
            entry = self._entries.get(earlier)
            if entry is None:
                continue
            typed = line_prefix[len(earlier.line_prefix) :]
            if entry.text.startswith(typed) and len(entry.text) > len(typed):
                return Remembered(entry.text[len(typed) :], entry.replace_chars, "typed")
        return None

    def _next_line(self, state: LineState) -> Remembered | None:
        if state.line_prefix.strip() or state.line_suffix.strip():
            return None
        text = self._next_lines.get((state.uri, state.row, state.previous_line))
        if text is None or not text.startswith(state.line_prefix):
            return None
        rest = text[len(state.line_prefix) :]
        return Remembered(rest, 0, "prefetch") if rest.strip() else None

    def forget(self, uri: str) -> None:
        for key in [key for key in self._rows if key[0] == uri]:
            for state in self._rows.pop(key):
                self._entries.pop(state, None)
        for slot in [slot for slot in self._next_lines if slot[0] == uri]:
            self._next_lines.pop(slot, None)

    def clear(self) -> None:
        self._entries.clear()
        self._rows.clear()
        self._next_lines.clear()
