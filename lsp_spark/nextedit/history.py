"""The user's recent edits, as compact diffs a next-edit prompt shows oldest first.

Keystrokes on neighbouring lines of one document merge into one edit, so renaming a
parameter letter by letter reads as one change from the old line to the new one.

Every cost here is bounded by the size of a record, never by the file's: a change is
trimmed to the rows that differ when it is recorded, a record holds at most `ROWS_KEPT`
rows a side (a longer change, such as a whole-file substitution or a reformat, keeps its
first rows and is marked cut), a merge that would pass that size starts a new record, and
each record's diff is computed once per change, not once per prediction.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from difflib import SequenceMatcher

EDITS_KEPT = 8
DIFF_LINES_SHOWN = 24
"""A diff longer than this (a paste, a reformat) is cut: it says little about the next edit."""
ROWS_KEPT = 2 * DIFF_LINES_SHOWN
"""Rows a record holds on each side: enough for the diff shown, and few enough that the
line diff of a record (quadratic or worse in its rows when lines repeat) costs a few ms."""
CONTEXT_ROWS = 1
"""Unchanged rows kept around a trimmed change, so its diff shows where it happened."""
NEARBY_ROWS = 1


@dataclass(slots=True)
class Edit:
    """Rows `start`.. of `uri` read `before` and now read `after`. A `cut` edit changed more
    rows than a record holds: `before` and `after` are the first rows of each side only,
    and it takes no later keystrokes."""

    uri: str
    start: int
    before: list[str]
    after: list[str]
    cut: bool = False
    _diff: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)
    """The document name the diff was last written for, and that diff."""

    def touches(self, uri: str, first: int, last: int) -> bool:
        """Whether rows `first`..`last` of `uri` lie within or next to this edit's rows now."""
        end = self.start + len(self.after)
        return (
            not self.cut
            and uri == self.uri
            and first >= self.start - NEARBY_ROWS
            and last <= end + NEARBY_ROWS
        )

    def has_room_for(self, old: list[str], new: list[str]) -> bool:
        """Whether absorbing `old` becoming `new` keeps both sides within `ROWS_KEPT` rows
        (counted generously: every row of the change may extend both sides)."""
        grown = len(old) + len(new)
        return max(len(self.before), len(self.after)) + grown <= ROWS_KEPT

    def absorb(self, first: int, old: list[str], new: list[str]) -> None:
        """Fold a later change of rows `first`.. (`old` becoming `new`) into this edit."""
        self._diff = None
        end = self.start + len(self.after)
        last = first + len(old)
        if first < self.start:
            # Rows above the edit, unchanged until now: they read the same before.
            above = old[: self.start - first]
            self.before[:0] = above
            self.after[:0] = above
            self.start = first
        if last > end:
            below = old[len(old) - (last - end) :]
            self.before.extend(below)
            self.after.extend(below)
        offset = first - self.start
        self.after[offset : offset + len(old)] = new

    def diff(self, name: str) -> str:
        """A unified diff with the document's own line numbers; "" when nothing changed.
        Written once per change of the edit (predictions ask for it after every keystroke)."""
        if self._diff is None or self._diff[0] != name:
            self._diff = (name, self._written(name))
        return self._diff[1]

    def _written(self, name: str) -> str:
        matcher = SequenceMatcher(None, self.before, self.after, autojunk=False)
        shown: list[str] = []
        for group in matcher.get_grouped_opcodes(1):
            i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
            shown.append(f"@@ -{self.start + i1 + 1},{i2 - i1} +{self.start + j1 + 1},{j2 - j1} @@")
            for tag, a1, a2, b1, b2 in group:
                if tag == "equal":
                    shown.extend(" " + line for line in self.before[a1:a2])
                    continue
                shown.extend("-" + line for line in self.before[a1:a2])
                shown.extend("+" + line for line in self.after[b1:b2])
        if not shown:
            return ""
        if len(shown) > DIFF_LINES_SHOWN or self.cut:
            shown = [*shown[:DIFF_LINES_SHOWN], "…"]
        return "\n".join([f"--- a/{name}", f"+++ b/{name}", *shown])


def trimmed(first: int, old: list[str], new: list[str]) -> tuple[int, list[str], list[str]]:
    """Rows `first`.. reading `old` and then `new`, less the rows both share at the start and
    at the end but `CONTEXT_ROWS` of each: a whole-file change (an editor that sends the
    whole text, a reload) that altered one line is recorded as that line."""
    shortest = min(len(old), len(new))
    prefix = 0
    while prefix < shortest and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    head = max(0, prefix - CONTEXT_ROWS)
    tail = max(0, suffix - CONTEXT_ROWS)
    return first + head, old[head : len(old) - tail], new[head : len(new) - tail]


class EditHistory:
    """The last few edits over every open document, oldest first."""

    def __init__(self) -> None:
        self._edits: deque[Edit] = deque(maxlen=EDITS_KEPT)

    def record(self, uri: str, first: int, old: list[str], new: list[str]) -> None:
        """Rows `first`.. of `uri` read `old` and now read `new` (one content change)."""
        if old == new:
            return
        first, old, new = trimmed(first, old, new)
        latest = self._edits[-1] if self._edits else None
        if (
            latest is not None
            and latest.touches(uri, first, first + len(old))
            and latest.has_room_for(old, new)
        ):
            latest.absorb(first, old, new)
            return
        cut = max(len(old), len(new)) > ROWS_KEPT
        self._edits.append(Edit(uri, first, old[:ROWS_KEPT], new[:ROWS_KEPT], cut))

    def latest(self, uri: str) -> Edit | None:
        """The newest edit if it was made in `uri`."""
        latest = self._edits[-1] if self._edits else None
        return latest if latest is not None and latest.uri == uri else None

    def rows(self) -> int:
        """Rows the records hold, both sides: at most `EDITS_KEPT` * 2 * `ROWS_KEPT`."""
        return sum(len(edit.before) + len(edit.after) for edit in self._edits)

    def diffs(self, name_of: dict[str, str]) -> list[str]:
        """Each kept edit as a diff, oldest first; documents not in `name_of` (closed or
        excluded since) are left out."""
        shown = [edit.diff(name_of[edit.uri]) for edit in self._edits if edit.uri in name_of]
        return [diff for diff in shown if diff]

    def forget(self, uri: str) -> None:
        kept = [edit for edit in self._edits if edit.uri != uri]
        self._edits.clear()
        self._edits.extend(kept)
