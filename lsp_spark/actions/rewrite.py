"""From a model's reply to the new lines of a scope: fences and chatter off, indentation on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from math import gcd

from lsp_spark.postprocess.fences import is_prose, opening_fence
from lsp_spark.privacy.redaction import PLACEHOLDER

_THINKING = re.compile(r"<think>.*?</think>", re.S)


def extract_code(reply: str) -> str:
    """The code in a reply: its largest fenced block (an unclosed one runs to the end), or,
    without fences, the reply minus the sentences around it. Blank lines around are dropped."""
    lines = _visible(reply).split("\n")
    blocks = [block for block, _ in _fenced_blocks(lines)]
    chosen = max(blocks, key=len) if blocks else _without_prose(lines)
    return "\n".join(_trim_blank(chosen))


def block_closed(reply: str) -> bool:
    """Whether the reply so far holds a whole fenced block: the answer is in, and whatever
    the model adds after it is commentary not worth waiting for."""
    text = _visible(reply)
    if "<think>" in text:
        return False
    complete = text.split("\n")[:-1]  # the last line may still be growing
    return any(closed for _, closed in _fenced_blocks(complete))


def _visible(reply: str) -> str:
    return _THINKING.sub("", reply.replace("\r\n", "\n").replace("\r", "\n"))


def _fenced_blocks(lines: list[str]) -> list[tuple[list[str], bool]]:
    """Each fenced block's lines, and whether its closing fence came."""
    blocks: list[tuple[list[str], bool]] = []
    index = 0
    while index < len(lines):
        fence = opening_fence(lines[index])
        index += 1
        if fence is None:
            continue
        block: list[str] = []
        while index < len(lines) and fence.closing_at(lines[index]) < 0:
            block.append(lines[index])
            index += 1
        blocks.append((block, index < len(lines)))
        index += 1
    return blocks


def _without_prose(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and (not lines[start].strip() or is_prose(lines[start])):
        start += 1
    while end > start and (not lines[end - 1].strip() or is_prose(lines[end - 1])):
        end -= 1
    return lines[start:end]


def _trim_blank(lines: Sequence[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return list(lines[start:end])


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def reindent(new: Sequence[str], old: Sequence[str]) -> list[str]:
    """`new` indented as `old` is. Models often drop the scope's indentation, or only its
    first line's (the rest keeps the file's columns), or write spaces where the file has
    tabs; each is undone."""
    new = [line.rstrip() for line in new]
    if not new or not old:
        return new
    if any(indent_of(line).startswith("\t") for line in old):
        new = _tabbed(new)
    base, old_base = _base(new), _base(old)
    if base == old_base:
        return new
    if len(new) > 1 and len(old) > 1 and _base(new[1:]) == _base(old[1:]):
        return [indent_of(old[0]) + new[0].lstrip(), *new[1:]]
    return _shifted(new, base, old_base)


def _base(lines: Sequence[str]) -> str:
    """The indentation every non-blank line shares."""
    indents = [indent_of(line) for line in lines if line.strip()]
    if not indents:
        return ""
    shortest = min(indents, key=len)
    size = next(
        (i for i in range(len(shortest)) if any(indent[i] != shortest[i] for indent in indents)),
        len(shortest),
    )
    return shortest[:size]


def _shifted(lines: list[str], base: str, target: str) -> list[str]:
    return [target + line[len(base) :] if line.strip() else "" for line in lines]


def _tabbed(lines: list[str]) -> list[str]:
    """Leading spaces turned into tabs, one per indentation step the spaces use."""
    widths = [len(indent_of(line)) for line in lines if indent_of(line).startswith(" ")]
    step = 0
    for width in widths:
        step = gcd(step, width)
    if not step:
        return lines
    return [
        "\t" * (len(indent_of(line)) // step) + line.lstrip(" ")
        if indent_of(line).startswith(" ")
        else line
        for line in lines
    ]


def restore_redacted(new: Sequence[str], old: Sequence[str]) -> list[str]:
    """Lines the model repeated with a redaction placeholder where the file has a secret are
    put back as the file has them; a placeholder in any other line stays (to be refused)."""
    restored = []
    for line in new:
        if PLACEHOLDER.search(line):
            pieces = PLACEHOLDER.split(line)
            pattern = re.compile(".+?".join(re.escape(piece) for piece in pieces))
            line = next((before for before in old if pattern.fullmatch(before)), line)
        restored.append(line)
    return restored
