"""Applying a server's `WorkspaceEdit` to text as an editor would, for tests and benchmarks."""

from __future__ import annotations

import re

from lsprotocol import types

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def unit_length(char: str, encoding: str) -> int:
    """How many position units `char` counts for in `encoding` ("utf-8" or "utf-16")."""
    if encoding == "utf-8":
        return len(char.encode())
    return len(char.encode("utf-16-le")) // 2


def position_offset(text: str, position: types.Position, encoding: str = "utf-16") -> int:
    """The string index an LSP position names, clamped to its line as editors do."""
    lines = _LINE.findall(text) or [""]
    if position.line >= len(lines):
        return len(text)
    start = sum(len(line) for line in lines[: position.line])
    content = lines[position.line].rstrip("\r\n")
    units = 0
    for index, char in enumerate(content):
        if units >= position.character:
            return start + index
        units += unit_length(char, encoding)
    return start + len(content)


def text_edits(edit: types.WorkspaceEdit | None, uri: str) -> list[types.TextEdit]:
    """The edit's text edits for one document, from `documentChanges` and `changes`."""
    if edit is None:
        return []
    found: list[types.TextEdit] = []
    for change in edit.document_changes or []:
        if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
            found.extend(e for e in change.edits if isinstance(e, types.TextEdit))
    found.extend((edit.changes or {}).get(uri, []))
    return found


def edited_spans(
    text: str, edits: list[types.TextEdit], encoding: str = "utf-16"
) -> list[tuple[int, int, str]]:
    """Each edit as (start, end, new text) string indices, last first, ready to splice."""
    return sorted(
        (
            (
                position_offset(text, e.range.start, encoding),
                position_offset(text, e.range.end, encoding),
                e.new_text,
            )
            for e in edits
        ),
        reverse=True,
    )


def apply_edits(text: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text
