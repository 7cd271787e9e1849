"""The user's recent edits, as compact diffs a next-edit prompt shows oldest first.

Keystrokes on neighbouring lines of one document merge into one edit, so renaming a
parameter letter by letter reads as one change from the old line to the new one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from difflib import SequenceMatcher

EDITS_KEPT = 8
DIFF_LINES_SHOWN = 24
"""A diff longer than this (a paste, a reformat) is cut: it says little about the next edit."""
NEARBY_ROWS = 1


@dataclass(slots=True)
class Edit:
    """Rows `start`.. of `uri` read `before` and now read `after`."""

    uri: str
    start: int
    before: list[str]
    after: list[str]

    def touches(self, uri: str, first: int, last: int) -> bool:
        """Whether rows `first`..`last` of `uri` lie within or next to this edit's rows now."""
        end = self.start + len(self.after)
        return uri == self.uri and first >= self.start - NEARBY_ROWS and last <= end + NEARBY_ROWS

    def absorb(self, first: int, old: list[str], new: list[str]) -> None:
        """Fold a later change of rows `first`.. (`old` becoming `new`) into this edit."""
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
        """A unified diff with the document's own line numbers; "" when nothing changed."""
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
        if len(shown) > DIFF_LINES_SHOWN:
            shown = [*shown[:DIFF_LINES_SHOWN], "…"]
        return "\n".join([f"--- a/{name}", f"+++ b/{name}", *shown])


class EditHistory:
    """The last few edits over every open document, oldest first."""

    def __init__(self) -> None:
        self._edits: deque[Edit] = deque(maxlen=EDITS_KEPT)

    def record(self, uri: str, first: int, old: list[str], new: list[str]) -> None:
        """Rows `first`.. of `uri` read `old` and now read `new` (one content change)."""
        latest = self._edits[-1] if self._edits else None
        if latest is not None and latest.touches(uri, first, first + len(old)):
            latest.absorb(first, old, new)
            return
        self._edits.append(Edit(uri, first, list(old), list(new)))

    def latest(self, uri: str) -> Edit | None:
        """The newest edit if it was made in `uri`."""
        latest = self._edits[-1] if self._edits else None
        return latest if latest is not None and latest.uri == uri else None

    def diffs(self, name_of: dict[str, str]) -> list[str]:
        """Each kept edit as a diff, oldest first; documents not in `name_of` (closed or
        excluded since) are left out."""
        shown = [edit.diff(name_of[edit.uri]) for edit in self._edits if edit.uri in name_of]
        return [diff for diff in shown if diff]

    def forget(self, uri: str) -> None:
        kept = [edit for edit in self._edits if edit.uri != uri]
        self._edits.clear()
        self._edits.extend(kept)
