"""The model's text streamed through the filters' stages, line by line as it arrives."""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache

from lsp_spark.postprocess.context import CursorContext
from lsp_spark.postprocess.filters import FILTERS, replaced_suffix_length
from lsp_spark.postprocess.stage import End, Filter, Partial, Stage


class SuggestionStream:
    """Accumulates deltas and says as soon as reading more cannot change the result.

    Each delta costs a look for the lines it completes, which go through the line stages
    at once, and the peeking stages' look at the line still arriving. Filters named in
    `skip` are left out (the `disabledFilters` setting).
    """

    def __init__(self, context: CursorContext, skip: Collection[str] = frozenset()) -> None:
        self.context = context
        self.skip = frozenset(skip)
        self.raw = ""
        self._filters = _chosen(self.skip)
        self._partial = Partial()
        self._begin()

    def _begin(self) -> None:
        """Fresh stages, with nothing read."""
        self._line_stages: list[Stage] = []
        self._peekers: list[Stage] = []
        self._finishers: list[Stage] = []
        for make in self._filters:
            stage = make(self.context)
            if stage.reads_lines:
                self._line_stages.append(stage)
            if stage.peeks:
                self._peekers.append(stage)
            if stage.finishes:
                self._finishers.append(stage)
        self._lines: list[str] = []
        self._line_start = 0
        self._settled = False
        self._cut = False
        """A stage ended the suggestion before the line still arriving."""
        self._result: tuple[str, int] | None = None

    def feed(self, delta: str) -> bool:
        """Add a delta; True means the suggestion is complete and the stream can close."""
        if self._settled:
            return True
        newest = len(self.raw)
        if self._result is not None:
            # A suggestion taken mid-stream sent the line then arriving through the stages
            # as the last one: they read everything again.
            self._begin()
            newest = 0
        raw = self.raw = self.raw + delta
        start = self._line_start
        end = raw.find("\n", newest if newest > start else start)
        while end >= 0:
            line = raw[start:end]
            self._line_start = start = end + 1
            if self._pass(0, line, False):
                self._settled = self._cut = True
                return True
            end = raw.find("\n", start)
        if start < len(raw):
            partial = self._partial
            partial.text = raw
            partial.start = start
            partial.fresh = newest if newest > start else start
            for stage in self._peekers:
                if stage.peek(partial):
                    self._settled = True
                    return True
        return False

    def suggestion(self) -> tuple[str, int]:
        """The cleaned text, and how many characters after the cursor it replaces."""
        if self._result is None:
            if not self._cut:
                self._pass(0, self.raw[self._line_start :], True)
            text = "\n".join(self._lines)
            for stage in self._finishers:
                text = stage.finish(text)
            self._result = (text, replaced_suffix_length(text, self.context))
        return self._result

    def _pass(self, first: int, line: str, last: bool) -> bool:
        """Send a line through the line stages from `first` on; True when one ends the
        suggestion."""
        stages = self._line_stages
        for index in range(first, len(stages)):
            verdict = stages[index].line(line, last)
            if isinstance(verdict, str):
                line = verdict
            elif isinstance(verdict, End):
                if verdict.take_back:
                    del self._lines[-verdict.take_back :]
                if verdict.keep is not None:
                    self._pass(index + 1, verdict.keep, True)
                return True
            else:
                final = len(verdict) - 1
                for position, held in enumerate(verdict):
                    if self._pass(index + 1, held, last and position == final):
                        return True
                return False
        self._lines.append(line)
        return False


@lru_cache(maxsize=16)
def _chosen(skip: frozenset[str]) -> tuple[Filter, ...]:
    return tuple(make for make in FILTERS if make.__name__ not in skip)


def clean(text: str, context: CursorContext, skip: Collection[str] = frozenset()) -> str:
    """The suggestion in a whole reply: the stream of it, run to its end."""
    stream = SuggestionStream(context, skip)
    stream.feed(text)
    return stream.suggestion()[0]
