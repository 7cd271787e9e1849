"""Deciding what to complete at the cursor: nothing, the rest of a line, or a block."""

from __future__ import annotations

import enum
import re

from lsp_spark.languages import profile_for

CLOSING_ONLY = re.compile(r"[\s)\]}>\"'`;,:.]*")


class Mode(enum.Enum):
    NONE = "none"
    LINE = "line"
    BLOCK = "block"


def completion_mode(
    language: str,
    line_prefix: str,
    line_suffix: str,
    previous_line: str,
    next_line: str,
    region: str = "code",
    *,
    in_comments: bool = True,
    in_strings: bool = True,
) -> Mode:
    """Mid-line: the rest of the line; a blank line opening or ending a block: several lines.

    Text right of the cursor that is more than closing punctuation means the user is
    editing inside existing code, where an insertion would only get in the way.
    """
    if (region == "comment" and not in_comments) or (region == "string" and not in_strings):
        return Mode.NONE
    if not CLOSING_ONLY.fullmatch(line_suffix):
        return Mode.NONE
    if line_prefix.strip() or line_suffix.strip():
        return Mode.LINE
    if profile_for(language).leaves_open(previous_line.rstrip()):
        return Mode.BLOCK
    next_indent = len(next_line) - len(next_line.lstrip())
    if not next_line.strip() or next_indent < len(line_prefix):
        return Mode.BLOCK
    return Mode.LINE
