"""Everything known about open documents: text, syntax trees, an outline index, recent edits.

Per keystroke only the cheap parts run (text splice, tree edit, a note of where the
edit was); the outline of each document (imports, definitions) is refreshed in the
background after typing pauses, so requests read it without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial

from lsp_spark.documents import (
    Change,
    ChangeStamp,
    Document,
    DocumentStore,
    PositionEncoding,
)
from lsp_spark.postprocess.filters import detect_indent_unit
from lsp_spark.privacy.exclusion import Exclusions
from lsp_spark.scheduler import Deadline
from lsp_spark.syntax import outline
from lsp_spark.syntax.grammars import query_for
from lsp_spark.syntax.trees import SyntaxStore, SyntaxTree

OUTLINE_REFRESH_DELAY = 0.3
RECENT_EDITS = 16
NEARBY_ROWS = 3


@dataclass(frozen=True, slots=True)
class Outline:
    """A document's imports and definitions as of its last refresh (possibly stale)."""

    imports: tuple[tuple[int, str], ...] = ()
    """Each import statement's first row and text."""
    definitions: tuple[outline.Definition, ...] = ()
    indent_unit: str | None = None
    """Detected over the whole document: a cursor window full of docstrings misleads."""
    signatures: dict[str, str] = field(default_factory=dict)
    """Each defined name's signature (the first definition wins), for lookups per request."""


@dataclass
class RecentEdits:
    """Where the user edited lately, newest first, one entry per nearby region."""

    places: deque[tuple[str, int]] = field(default_factory=lambda: deque(maxlen=RECENT_EDITS))

    def record(self, uri: str, row: int) -> None:
        for index, (known_uri, known_row) in enumerate(self.places):
            if known_uri == uri and abs(known_row - row) <= NEARBY_ROWS:
                del self.places[index]
                break
        self.places.appendleft((uri, row))

    def forget(self, uri: str) -> None:
        kept = [place for place in self.places if place[0] != uri]
        self.places.clear()
        self.places.extend(kept)


MAX_PARSED_CHARS = 2_000_000
MINIFIED_LINE = re.compile(r"[^\n]{20000}")


def worth_parsing(text: str) -> bool:
    """Huge and minified files get text-only context: their trees and outlines would cost
    seconds on the event loop for nothing a suggestion needs."""
    return len(text) <= MAX_PARSED_CHARS and MINIFIED_LINE.search(text) is None


class Workspace:
    def __init__(self) -> None:
        self.documents = DocumentStore()
        self.syntax = SyntaxStore()
        self.recent = RecentEdits()
        self.outlines: dict[str, Outline] = {}
        self.exclusions = Exclusions()
        """Excluded documents get no outline and no recent-edit record, so no context
        source can ever reach their text."""
        self._refreshes: dict[str, Deadline] = {}
        self._stamp = ChangeStamp()

    def stamp_except(self, uri: str) -> int | None:
        """A number that stays the same while nothing changes but the text of `uri` (None
        when the last change was to another document): other documents, outlines and
        exclusions as they were."""
        return self._stamp.except_(uri)

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        document = self.documents.open(uri, language_id, version, text)
        self._stamp.changed_everywhere()
        if not worth_parsing(text):
            return document
        if self.syntax.open(document) is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_soon(self._prepare, uri)
        self._schedule_outline(uri)
        return document

    def change(
        self, uri: str, version: int, changes: Iterable[Change], encoding: PositionEncoding
    ) -> None:
        """Apply edits; raises UnknownDocumentError for a document never opened."""
        changes = list(changes)
        edits = self.documents.change(uri, version, changes, encoding)
        self._stamp.changed(uri)
        self.syntax.change(uri, edits)
        if self.exclusions.excludes(uri):
            return
        for edit in edits:
            self.recent.record(uri, edit.start_point[0])
        self._schedule_outline(uri)

    def excluded(self, uri: str) -> bool:
        return self.exclusions.excludes(uri)

    def set_exclusions(self, exclusions: Exclusions) -> None:
        """Newly excluded open documents lose what they had lent to other files' context."""
        self.exclusions = exclusions
        self._stamp.changed_everywhere()
        for uri in [document.uri for document in self.documents]:
            if exclusions.excludes(uri):
                self.outlines.pop(uri, None)
                self.recent.forget(uri)
                if (deadline := self._refreshes.pop(uri, None)) is not None:
                    deadline.cancel()
            elif uri not in self.outlines:
                self._schedule_outline(uri)

    def _prepare(self, uri: str) -> None:
        """Parse a newly opened file and compile the query a first request uses, right away;
        the outline's queries are compiled by the outline refresh, off the keystroke path."""
        syntax = self.syntax.get(uri)
        if syntax is not None:
            _ = syntax.tree
            query_for(syntax.language_id, "scopes")

    def close(self, uri: str) -> None:
        self.documents.close(uri)
        self.syntax.close(uri)
        self.recent.forget(uri)
        self.outlines.pop(uri, None)
        self._stamp.changed_everywhere()
        if (deadline := self._refreshes.pop(uri, None)) is not None:
            deadline.cancel()

    def tree(self, uri: str) -> SyntaxTree | None:
        return self.syntax.get(uri)

    def parse_soon(self, uri: str, delay: float = 0.0) -> None:
        """Bring the tree up to date once the step in hand is done (its answer written, or
        its request sent and waiting for the model), or `delay` seconds later: the checks
        of a suggestion and the next row's context then find the tree current."""
        syntax = self.syntax.get(uri)
        if syntax is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_later(delay, syntax.refresh)

    def _schedule_outline(self, uri: str, delay: float = OUTLINE_REFRESH_DELAY) -> None:
        """Refresh the outline after typing pauses; outside an event loop, only on request."""
        if self.exclusions.excludes(uri):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        deadline = self._refreshes.get(uri)
        if deadline is None:
            deadline = self._refreshes[uri] = Deadline(partial(self.refresh_outline, uri))
        deadline.push(loop.time() + delay)

    def refresh_outline(self, uri: str) -> None:
        if (deadline := self._refreshes.pop(uri, None)) is not None:
            deadline.cancel()
        syntax = self.syntax.get(uri)
        if syntax is None or self.exclusions.excludes(uri):
            return
        definitions = tuple(outline.definitions(syntax))
        signatures: dict[str, str] = {}
        for definition in definitions:
            signatures.setdefault(definition.name, definition.signature)
        refreshed = Outline(
            imports=tuple(
                (syntax.document.point_at(syntax.document.offset_at_byte(start))[0], text)
                for start, _, text in outline.imports(syntax)
            ),
            definitions=definitions,
            signatures=signatures,
            indent_unit=detect_indent_unit(syntax.document.lines(0, syntax.document.line_count)),
        )
        self.outlines[uri] = refreshed
        self._stamp.changed_everywhere()
