"""A scripted next-edit model for tests and the evaluation: it answers exactly the edits
that turn the prompt's editable region into the same rows of an expected file.

The region's rows are read from the prompt (their numbers and text), so the answer checks
the server's whole path: region choice, prompt, parsing, diffing, positions and versions.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any

from lsp_spark.nextedit.prompt import CURSOR, SYSTEM

_HEADER = re.compile(r"^Editable region of .*, lines (\d+)-(\d+) of (\d+):$", re.MULTILINE)
_ROW = re.compile(r"^(\d+)\| ?(.*)$")


def is_next_edit_request(request: dict[str, Any]) -> bool:
    messages = request.get("messages") or []
    return bool(messages) and messages[0].get("content") == SYSTEM


def region_of(request: dict[str, Any]) -> tuple[int, int, int, list[str]]:
    """(first line, last line, the file's line count, the region's rows) from the prompt."""
    content = request["messages"][-1]["content"]
    header = _HEADER.search(content)
    if header is None:
        raise ValueError("no editable region in the prompt")
    first, last, count = (int(group) for group in header.groups())
    rows = []
    for line in content[header.end() + 1 :].split("\n"):
        match = _ROW.match(line)
        if match is None:
            break
        rows.append(match.group(2).replace(CURSOR, ""))
    return first, last, count, rows


def scripted_reply(request: dict[str, Any], expected_text: str) -> str:
    """The edit blocks that make the region read as `expected_text` does there. Every
    difference between the file now and `expected_text` must lie inside the region."""
    first, _, count, rows = region_of(request)
    expected = expected_text.replace("\r\n", "\n").split("\n")
    wanted = expected[first - 1 : first - 1 + len(rows) + len(expected) - count]
    blocks = []
    matcher = SequenceMatcher(None, rows, wanted, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        body = "".join(line + "\n" for line in wanted[j1:j2])
        if i1 == i2:
            blocks.append(f'<edit after="{first - 1 + i1}">\n{body}</edit>')
        else:
            blocks.append(f'<edit lines="{first + i1}-{first + i2 - 1}">\n{body}</edit>')
    return "\n".join(blocks) if blocks else "<none/>"
