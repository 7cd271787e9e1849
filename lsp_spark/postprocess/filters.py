"""Small pure filters from raw model text to a clean suggestion.

Each takes the text so far and the cursor's surroundings and returns the text it
keeps; none of them knows about the others, so each can be tested alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SPECIAL_TOKEN = re.compile(
    r"<\|(?:fim_[a-z]+|endoftext|file_sep|im_end|im_start|repo_name|eot_id|end|EOT)\|>"
    r"|<(?:fim_prefix|fim_suffix|fim_middle|file_sep|EOT|PRE|SUF|MID)>|</s>"
    r"|<｜[^｜]*｜>"
)
FENCE_OPEN = re.compile(r"^[^\n`]*?```[\w+#.-]*[^\S\n]*\n")
PREAMBLE = re.compile(
    r"^(?:here(?:'s| is)|sure|certainly|the (?:missing|completed?)|to complete)[^\n]*[:.]\n",
    re.IGNORECASE,
)


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
    max_lines: int = 12


def strip_special_tokens(text: str, _: CursorContext) -> str:
    match = SPECIAL_TOKEN.search(text)
    return text if match is None else text[: match.start()]


def strip_fences_and_preamble(text: str, _: CursorContext) -> str:
    """Chat models like to wrap code in Markdown; keep only the code."""
    preamble = PREAMBLE.match(text)
    if preamble and "```" in text:
        text = text[preamble.end() :]
    opening = FENCE_OPEN.match(text)
    if opening is None:
        return text
    body = text[opening.end() :]
    closing = body.find("```")
    return body if closing < 0 else body[:closing]


def strip_echoed_line_prefix(text: str, context: CursorContext) -> str:
    """Drop a re-statement of the text already typed on the cursor's line."""
    typed = context.line_prefix.strip()
    if len(typed) < 3:
        return text
    candidate = text.lstrip()
    return candidate[len(typed) :] if candidate.startswith(typed) else text


def limit_lines(text: str, context: CursorContext) -> str:
    """One line mid-line or where asked; otherwise at most `max_lines`."""
    if not context.multiline:
        first, newline, _ = text.partition("\n")
        if newline and not first.strip():
            return ""
        return first
    return "\n".join(text.split("\n")[: context.max_lines])


def drop_repeated_suffix_lines(text: str, context: CursorContext) -> str:
    """Cut the suggestion where it starts to re-type the lines after the cursor."""
    following = [line.strip() for line in context.next_lines if line.strip()]
    if not following:
        return text
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].strip() and lines[index].strip() == following[0]:
            return "\n".join(lines[:index])
    return text


def trim_trailing_whitespace(text: str, _: CursorContext) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


FILTERS = (
    strip_special_tokens,
    strip_fences_and_preamble,
    strip_echoed_line_prefix,
    limit_lines,
    drop_repeated_suffix_lines,
    trim_trailing_whitespace,
)


def clean(text: str, context: CursorContext) -> str:
    for step in FILTERS:
        text = step(text, context)
    return text


def replaced_suffix_length(text: str, context: CursorContext) -> int:
    """How much of the line after the cursor the suggestion already contains.

    When the editor auto-inserted `)` and the model wrote `a, b)`, the suggestion
    should replace the `)` rather than add a second one.
    """
    rest = context.line_suffix.rstrip()
    if not rest:
        return 0
    last_line = text.rsplit("\n", 1)[-1]
    if rest.strip() and last_line.endswith(rest.strip()):
        return len(rest)
    return 0
