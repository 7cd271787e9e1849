"""Post-processing: turn a model's streamed text into a suggestion, and stop it early."""

from __future__ import annotations

from collections.abc import Collection

from lsp_spark.postprocess.filters import (
    FENCE_OPEN,
    MAX_CHARS,
    PREAMBLE,
    SPECIAL_TOKEN,
    CursorContext,
    Reindenter,
    RepetitionTracker,
    ScopeTracker,
    clean,
    looping_at,
    repeats_line,
    replaced_suffix_length,
)

__all__ = ["CursorContext", "SuggestionStream"]

TOKEN_WINDOW = 64
"""How far before the newest delta a special token split across deltas may start."""
LOOP_CHECK_CHARS = 12
"""Characters between looks for a looping line: the shortest loop spans 8, and the look
(two regexes) cost more than the rest of a delta's handling."""


def code_body(raw: str) -> tuple[int, bool] | None:
    """Where the code starts in the model's text, and whether it is fenced.

    None until that is known: the first non-blank line (after a chat preamble, the next
    one too) must be complete to tell a fence from code.
    """
    if "\n" not in raw.lstrip():
        return None
    preamble = PREAMBLE.match(raw)
    if preamble:
        rest = raw[preamble.end() :]
        if "\n" not in rest.lstrip():
            return None
        fence = FENCE_OPEN.match(rest)
        return (preamble.end() + fence.end(), True) if fence else (0, False)
    fence = FENCE_OPEN.match(raw)
    return (fence.end(), True) if fence else (0, False)


class LineJudge:
    """The filters' line-by-line questions, asked of each line as it completes.

    Mirrors the chain's order with the filters' own trackers, so the stream closes on
    the very line where the batch filters cut; a skipped filter asks nothing.
    """

    def __init__(self, context: CursorContext, skip: frozenset[str] = frozenset()) -> None:
        self.context = context
        self.limit = "limit_lines" not in skip
        self.repetition = None if "cut_repetition" in skip else RepetitionTracker()
        self.reindenter = None if "normalise_indentation" in skip else Reindenter(context)
        self.scope = None if "limit_scope" in skip else ScopeTracker(context)
        self.following = (
            None
            if "drop_repeated_suffix_lines" in skip
            else next((line for line in context.next_lines if line.strip()), None)
        )
        self.index = 0

    def over(self, line: str) -> bool:
        """Whether the suggestion ends at or before this complete line."""
        index = self.index
        self.index += 1
        context = self.context
        if self.limit and (not context.multiline or index >= context.max_lines):
            return True
        whole = context.line_prefix + line if index == 0 else line
        if self.repetition is not None and self.repetition.push(whole) is not None:
            return True
        if self.reindenter is not None:
            line = self.reindenter.push(line)
        if self.scope is not None and self.scope.push(line) is not None:
            return True
        return index > 0 and self.following is not None and repeats_line(line, self.following)


class SuggestionStream:
    """Accumulates deltas and says as soon as reading more cannot change the result.

    Each delta costs a look at its own characters and at the lines it completes; the
    whole chain runs once, in `suggestion`. Filters named in `skip` are left out of
    both (the `disabledFilters` setting).
    """

    def __init__(self, context: CursorContext, skip: Collection[str] = frozenset()) -> None:
        self.context = context
        self.skip = frozenset(skip)
        self.raw = ""
        self._body_start = 0
        self._fenced = False
        self._fence_checked = 0
        self._code_start: int | None = None
        self._next_line = 0
        self._capped = "cut_repetition" not in self.skip
        self._loop_check_at = 0
        self._judge = LineJudge(context, self.skip)

    def feed(self, delta: str) -> bool:
        """Add a delta; True means the suggestion is complete and the stream can close."""
        self.raw += delta
        newest = len(self.raw) - len(delta)
        if "strip_special_tokens" not in self.skip and SPECIAL_TOKEN.search(
            self.raw, max(0, newest - TOKEN_WINDOW)
        ):
            return True
        if self._capped and len(self.raw) >= self._loop_check_at:
            self._loop_check_at = len(self.raw) + LOOP_CHECK_CHARS
            if looping_at(self.raw[max(self._next_line, len(self.raw) - 96) :]):
                return True
        start = self._code_start if self._code_start is not None else self._find_code()
        if start is None:
            # One endless first line: the cap applies whatever the line turns out to be.
            typed = len(self.context.line_prefix.strip())
            return self._capped and len(self.raw.lstrip()) > MAX_CHARS + typed
        if self._fenced:
            found = self.raw.find("```", max(self._body_start, self._fence_checked - 2))
            self._fence_checked = len(self.raw)
            if found >= 0:
                return True
        if self._capped and len(self.raw) - start > MAX_CHARS:
            return True
        while (end := self.raw.find("\n", self._next_line)) >= 0:
            line = self.raw[self._next_line : end]
            self._next_line = end + 1
            if self._judge.over(line):
                return True
        return False

    def _find_code(self) -> int | None:
        """Where the code starts past a preamble, an opening fence and a re-typed line
        prefix; None until that is known."""
        body = (0, False) if "strip_fences_and_preamble" in self.skip else code_body(self.raw)
        if body is None:
            return None
        self._body_start, self._fenced = body
        start = self._body_start
        typed = self.context.line_prefix.strip()
        if len(typed) >= 3 and "strip_echoed_line_prefix" not in self.skip:
            candidate = self.raw[start:].lstrip()
            if len(candidate) < len(typed) and typed.startswith(candidate):
                return None
            if candidate.startswith(typed):
                start = len(self.raw) - len(candidate) + len(typed)
        self._code_start = self._next_line = start
        return start

    def suggestion(self) -> tuple[str, int]:
        """The cleaned text, and how many characters after the cursor it replaces."""
        text = clean(self.raw, self.context, self.skip)
        return text, replaced_suffix_length(text, self.context)
