"""Deciding what to complete at the cursor: nothing, the rest of a line, a header, one
statement, or a block."""

from __future__ import annotations

import enum
import re

CLOSING_ONLY = re.compile(r"[\s)\]}>\"'`;,:.]*")


class Mode(enum.Enum):
    NONE = "none"
    LINE = "line"
    HEADER = "header"
    """One line above deeper code: the header whose body that code is."""
    STATEMENT = "statement"
    """One statement where the code below goes on: a line, or a header with the body it opens."""
    BLOCK = "block"

    @property
    def multiline(self) -> bool:
        return self in (Mode.STATEMENT, Mode.BLOCK)


def completion_mode(
    line_prefix: str,
    line_suffix: str,
    next_line: str,
    region: str = "code",
    *,
    in_comments: bool = True,
    in_strings: bool = True,
) -> Mode:
    """Mid-line: the rest of the line; a blank line where a block is empty or ends:
    several lines; a blank line with its block going on below: one statement, which is
    what fits between the code above and the code below (a line, or a loop or condition
    with its body, since a block the suggestion opens is empty until it is filled); a blank
    line above deeper code: one line, the header whose body that code is.

    `next_line` is the first line below the cursor's with text on it: a blank line in
    between separates paragraphs of the same block, it does not end the block.

    Text right of the cursor that is more than closing punctuation means the user is
    editing inside existing code, where an insertion would only get in the way.
    """
    if (region == "comment" and not in_comments) or (region == "string" and not in_strings):
        return Mode.NONE
    if not CLOSING_ONLY.fullmatch(line_suffix):
        return Mode.NONE
    if line_prefix.strip() or line_suffix.strip():
        return Mode.LINE
    if not next_line.strip():
        return Mode.BLOCK
    next_indent = len(next_line) - len(next_line.lstrip())
    if next_indent > len(line_prefix):
        return Mode.HEADER if region == "code" else Mode.LINE
    if next_indent == len(line_prefix):
        return Mode.STATEMENT
    return Mode.BLOCK
