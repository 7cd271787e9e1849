"""The shape of a post-processing filter: a stage the model's text streams through.

A filter is a function of the cursor's surroundings (`CursorContext`) that gives the
`Stage` doing its work on one suggestion; the function's name is the filter's name in the
`disabledFilters` setting. The stream hands each line, as it completes, through the line
stages in the filters' order. A stage passes the line on (rewritten, if that is its work),
holds lines back while the first ones decide what the text's head is, or ends the
suggestion: ending both cuts the text and tells the stream it can close, so stopping early
and filtering are the same code. A stage may also look at the line still arriving
(`peek`) to end the stream before that line is complete, and filters that need the whole
text work on it once it is in (`finish`).

Stages never look ahead: a line's fate depends on the lines before it only. So the stream
can close the moment a stage ends the suggestion, and the text cleaned in one go is the
stream run to its end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from lsp_spark.postprocess.context import CursorContext


@dataclass(frozen=True, slots=True)
class End:
    """The suggestion ends at this line."""

    keep: str | None = None
    """What of the line stays, as the suggestion's last line (None: nothing, not even an
    empty line)."""
    take_back: int = 0
    """How many lines already passed on are dropped too. Only a stage after every stage that
    holds lines back may take lines back: the stages after it pass one line for each line,
    so the lines it passed on are the suggestion's last ones."""


Verdict = str | tuple[str, ...] | End
"""A stage's answer for one line: the line to pass on; the lines to pass on in its place
(none while a head stage is still holding them); or the end of the suggestion."""


class Partial:
    """The line the model is still writing, as positions in the text received, so stages
    can look at it on every delta without copying it."""

    __slots__ = ("fresh", "start", "text")

    def __init__(self) -> None:
        self.text = ""
        self.start = 0
        """Where the line starts, as the stages before this one leave it."""
        self.fresh = 0
        """Where the characters of the newest delta start (never before `start`)."""


class Stage:
    """One filter's work on one suggestion; each hook passes everything by default.

    Which hooks a kind of stage overrides is noted once per class, so the stream calls a
    stage only where it does some work.
    """

    __slots__ = ()
    reads_lines: ClassVar[bool] = False
    peeks: ClassVar[bool] = False
    finishes: ClassVar[bool] = False

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.reads_lines = cls.line is not Stage.line
        cls.peeks = cls.peek is not Stage.peek
        cls.finishes = cls.finish is not Stage.finish

    def line(self, line: str, last: bool) -> Verdict:
        """Judge a complete line; `last` marks the text's final line, perhaps unfinished,
        which no line follows (a stage holding lines back lets them all go then)."""
        return line

    def peek(self, partial: Partial) -> bool:
        """Whether the line still arriving already settles the suggestion (its `line` will
        end it wherever the line goes from here). A stage that changes where the line
        starts, for the stages after it, moves `partial.start`."""
        return False

    def finish(self, text: str) -> str:
        """The whole suggestion, once every line has gone through the line stages."""
        return text


PASS = Stage()
"""The stage of a filter with nothing to do at this cursor; the stream leaves it out."""

Filter = Callable[[CursorContext], Stage]


class Finish(Stage):
    """A filter's work on the whole text, once the model is done."""

    __slots__ = ("_context", "_step")

    def __init__(self, step: Callable[[str, CursorContext], str], context: CursorContext) -> None:
        self._step = step
        self._context = context

    def finish(self, text: str) -> str:
        return self._step(text, self._context)
