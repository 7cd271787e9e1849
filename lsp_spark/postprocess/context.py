"""What the filters know about the cursor, and the document's indentation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

DEFAULT_INDENT = "    "


@dataclass(frozen=True, slots=True)
class CursorContext:
    """What surrounds the cursor, as the filters need it."""

    line_prefix: str
    """Text of the cursor's line before the cursor."""
    line_suffix: str
    """Text of the cursor's line after the cursor."""
    next_lines: tuple[str, ...] = ()
    """A few lines after the cursor's line, to catch a model repeating them."""
    multiline: bool = True
    """Whether several lines may be suggested; otherwise the rest of one line."""
    one_statement: bool = False
    """Whether the code below the cursor goes on in the cursor's block, so only one statement
    fits between it and the code above: a line, or a header with the body it opens."""
    header_only: bool = False
    """Whether only a header fits on the cursor's blank line: the code below is indented
    deeper, in an indentation language, so it is the body of whatever goes here."""
    headers_that_fit: tuple[str, ...] = ()
    """Where only a header fits and the code below goes on with a clause of its statement
    (`elif`, `except`), the words of the headers that clause can follow (empty: any)."""
    names_to_bind: tuple[str, ...] = ()
    """On a blank line in a function, the names its code below reads and nothing in the
    document binds (`context/names.py`): the line is about to bind one of them."""
    max_lines: int = 12
    language: str = "plaintext"
    """The document's LSP language id: its profile gives the scope rules and the string
    syntax."""
    indent_unit: str = DEFAULT_INDENT
    """The document's indentation unit ("\\t" or N spaces) that suggestions are given."""
    enclosing_width: int | None = None
    """Columns of the nearest line above indented less than the cursor's line, the header
    of the cursor's block (`enclosing_width`; None: no such line, or not known)."""
    new_errors: Callable[[str], int] | None = None
    """How many syntax errors inserting a candidate at the cursor adds (None: no grammar)."""
    parses_at_cursor: Callable[[], bool] | None = None
    """Whether the document parses at the cursor (None: taken as yes). Where it does not,
    error counts cannot tell a bad suggestion from a bad document, so none is dropped for
    them. A function, since finding out takes a parse, which few suggestions need."""


def detect_indent_unit(lines: Iterable[str]) -> str:
    """The document's indentation unit, so suggestions can be re-indented to match it.

    Tabs when more lines are indented with tabs than with spaces; otherwise the most
    frequent positive step between consecutive non-blank lines (the smaller on a tie).
    Where no line with code is indented, the indentation an editor left on a blank line
    (the cursor's, on the first line of a body) is the only sign of the unit there is.
    """
    tabbed = spaced = 0
    steps: Counter[int] = Counter()
    previous = 0
    blank_indents: list[str] = []
    for line in lines:
        if not line.strip():
            blank_indents.append(leading(line))
            continue
        if line.startswith("\t"):
            tabbed += 1
            continue
        width = len(line) - len(line.lstrip(" "))
        spaced += width > 0
        if 0 < width - previous <= 8:
            steps[width - previous] += 1
        previous = width
    if tabbed > spaced:
        return "\t"
    if not steps:
        return _blank_lines_unit(blank_indents) if not spaced else DEFAULT_INDENT
    most = max(steps.values())
    return " " * min(step for step, count in steps.items() if count == most)


def _blank_lines_unit(indents: list[str]) -> str:
    """Tabs if a blank line has them; otherwise the most frequent width (the wider on a
    tie, so a stray space left at the end of a file does not count as a level)."""
    if any(indent.startswith("\t") for indent in indents):
        return "\t"
    widths = Counter(
        len(indent) for indent in indents if 0 < len(indent) <= 8 and not indent.strip(" ")
    )
    if not widths:
        return DEFAULT_INDENT
    return " " * max(widths, key=lambda width: (widths[width], width))


def enclosing_width(prefix: str, unit: str) -> int | None:
    """Columns of the nearest code line in `prefix` indented less than its last line (the
    cursor's), in the document's `unit`: where the cursor's block starts."""
    lines = prefix.split("\n")
    cursor = columns(leading(lines[-1]), unit)
    for line in reversed(lines[:-1]):
        width = columns(leading(line), unit)
        if line.strip() and width < cursor:
            return width
    return None


def leading(line: str) -> str:
    """The line's indentation."""
    return line[: len(line) - len(line.lstrip(" \t"))]


def columns(indent: str, unit: str) -> int:
    """Columns of an indentation, a tab counting as one unit of the document."""
    tab = 4 if "\t" in unit or not unit else len(unit)
    return indent.count("\t") * tab + indent.count(" ")
