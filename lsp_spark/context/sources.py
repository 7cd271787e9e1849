"""Context sources: small pure functions, each proposing related code for the prompt.

Each reads only what the workspace already holds (outlines refreshed in the
background, recent edit places, the enclosing scopes), so none of them parses or
scans a whole file while the user waits.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urlparse

from lsp_spark.documents import Document
from lsp_spark.workspace import Outline

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NEAR_CURSOR_CHARS = 800
EDIT_CONTEXT_ROWS = 2


@lru_cache(maxsize=64)
def filename_of(uri: str) -> str:
    """The file name a URI ends in, as shown to the model."""
    return posixpath.basename(unquote(urlparse(uri).path)) or uri


@dataclass(frozen=True, slots=True)
class Snippet:
    source: str
    origin: str
    """The file the text comes from, shown to the model."""
    text: str


def identifiers_near(prefix: str, line_suffix: str) -> list[str]:
    """Names used just before (and on) the cursor's line, nearest first."""
    recent = prefix[-NEAR_CURSOR_CHARS:] + line_suffix
    return list(dict.fromkeys(reversed(IDENTIFIER.findall(recent))))


def file_imports(outline: Outline | None, window_rows: range, origin: str) -> list[Snippet]:
    """The file's imports that the cursor window does not show."""
    if outline is None:
        return []
    missing = [text for row, text in outline.imports if row not in window_rows]
    return [Snippet("imports", origin, "\n".join(missing))] if missing else []


def definitions_of(
    names: Iterable[str],
    outlines: Mapping[str, Outline],
    current_uri: str,
    window: str,
    origin_of: Callable[[str], str],
) -> list[Snippet]:
    """Signatures of names used near the cursor, from this file first, then other open files."""
    current = outlines.get(current_uri)
    others = [(uri, outline) for uri, outline in outlines.items() if uri != current_uri]
    found: list[Snippet] = []
    signatures = current.signatures if current is not None else {}
    for name in names:
        signature = signatures.get(name)
        source, uri = "definitions", current_uri
        if signature is None:
            for other_uri, other in others:
                if (signature := other.signatures.get(name)) is not None:
                    source, uri = "open_files", other_uri
                    break
            else:
                continue
        if signature not in window:
            found.append(Snippet(source, origin_of(uri), signature))
    return found


def recent_edits(
    places: Iterable[tuple[str, int]],
    document_of: Callable[[str], Document | None],
    current_uri: str,
    window_rows: range,
    origin_of: Callable[[str], str],
) -> list[Snippet]:
    """A few lines around each place the user edited lately, outside the cursor window."""
    found: list[Snippet] = []
    for uri, row in places:
        document = document_of(uri)
        if document is None or (uri == current_uri and row in window_rows):
            continue
        first = max(0, row - EDIT_CONTEXT_ROWS)
        last = min(document.line_count - 1, row + EDIT_CONTEXT_ROWS)
        text = "\n".join(document.line(index) for index in range(first, last + 1)).strip("\n")
        if text.strip():
            found.append(Snippet("recent_edits", origin_of(uri), text))
    return found
