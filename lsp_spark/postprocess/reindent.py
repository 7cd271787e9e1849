"""Suggestions indented as the document is: tabs or spaces, and the document's width."""

from __future__ import annotations

from lsp_spark.languages import profile_for
from lsp_spark.postprocess.context import DEFAULT_INDENT, CursorContext, columns, leading
from lsp_spark.postprocess.stage import Stage


class Reindenter(Stage):
    """Maps the model's indentation to the document's unit, one line at a time.

    The first line continues the cursor's line and is left alone. The model's unit is
    learnt from the first line that shows it and then kept, and so is its width for the
    cursor's block, so a line's result never depends on the lines after it.
    """

    __slots__ = (
        "base",
        "context",
        "index",
        "opens_block",
        "previous",
        "shift",
        "target",
        "unit",
    )

    def __init__(self, context: CursorContext) -> None:
        self.context = context
        self.target = context.indent_unit or DEFAULT_INDENT
        self.unit: str | None = None
        self.base = ""
        self.opens_block = False
        self.previous: int | None = None
        self.index = 0
        self.shift: int | None = None
        """Columns the model's lines move into the cursor's block; None until its second
        line with code decides."""

    def line(self, line: str, last: bool) -> str:
        index = self.index
        self.index += 1
        if index == 0:
            whole = self.context.line_prefix + line
            self.base = leading(whole)
            self.opens_block = profile_for(self.context.language).opens_block(whole)
            if self.target != "\t":
                self.previous = columns(self.base, self.target)
            return line
        indent = leading(line)
        if not line.strip():
            return line
        if "\t" in indent:
            return self._from_tabs(line, indent)
        if self.target == "\t":
            return self._to_tabs(line, indent, index)
        line, indent = self._into_the_cursors_block(line, indent)
        return self._resize(line, indent, index)

    def _into_the_cursors_block(self, line: str, indent: str) -> tuple[str, str]:
        """The model's first line sits where the editor indented the cursor; the model may
        go on at its own width (in a file that mixes them, `   for ...` at three spaces
        after `result = 1` at the editor's four). Python rejects a line between two
        levels; read as the level it is nearer to, a second line nearer the cursor's than
        the enclosing header's is the model's width for the cursor's block, and it and the
        lines after it move by the difference. Nearer the header's, the line leaves the
        block (`limit_scope` ends the suggestion there)."""
        header = self.context.enclosing_width
        width = len(indent)
        if header is None:
            return line, indent
        if self.shift is None:
            cursor = columns(self.base, self.target)
            nearer_the_cursor = header < width < cursor and width - header > cursor - width
            self.shift = cursor - width if nearer_the_cursor and not self.opens_block else 0
        if self.shift and width > header:
            indent = " " * (width + self.shift)
            line = indent + line[width:]
        return line, indent

    def _from_tabs(self, line: str, indent: str) -> str:
        tabs = len(indent) - len(indent.lstrip("\t"))
        if self.target == "\t" or "\t" in indent[tabs:]:
            return line
        self.unit = self.unit or "\t"
        return self.target * tabs + line[tabs:]

    def _to_tabs(self, line: str, indent: str, index: int) -> str:
        width = len(indent)
        if self.unit is None and width:
            if self.previous is not None and width != self.previous:
                step = abs(width - self.previous)
            else:
                levels = self.base.count("\t") + self.base.count(" ") // 4
                expected = levels + (index == 1 and self.opens_block)
                step = width // expected if expected and width % expected == 0 else 0
            if 2 <= step <= 8:
                self.unit = " " * step
        self.previous = width
        if self.unit is None:
            return line
        levels, extra = divmod(width, len(self.unit))
        return "\t" * levels + " " * extra + line[width:]

    def _resize(self, line: str, indent: str, index: int) -> str:
        width, size = len(indent), len(self.target)
        previous = self.previous or 0
        if self.unit is None and width != previous:
            step = abs(width - previous)
            after_opener = index == 1 and self.opens_block and width > previous
            if 2 <= step <= 8 and (step % size or after_opener):
                self.unit = " " * step
            else:
                self.unit = self.target
        self.previous = width
        if self.unit is None or self.unit in (self.target, "\t"):
            return line
        base = columns(self.base, self.target)
        levels, extra = divmod(width - base, len(self.unit))
        return " " * max(0, base + levels * size + extra) + line[width:]
