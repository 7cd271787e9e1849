"""Everything known about open documents: text, syntax trees, an outline index, recent edits.

Per keystroke only the cheap parts run (text splice, tree edit, a note of where the
edit was); the outline of each document (imports, definitions) is refreshed in the
background after typing pauses, so requests read it without waiting.

Nothing here grows with the number of open documents per keystroke or per pause: outlines
are refreshed a few documents per pause (the one typed in first), each parsed off the event
loop, and only the documents touched last keep their trees (a tree costs several times its
text; the others parse again on demand).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

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
from lsp_spark.syntax.trees import REQUEST_PARSE_SECONDS, SyntaxStore, SyntaxTree

OUTLINE_REFRESH_DELAY = 0.3
OUTLINES_PER_PAUSE = 8
"""Documents whose outline is refreshed per pause in typing, one after the other."""
OUTLINE_SLICE_BYTES = 8192
"""A document's outline is read this much at a time, the event loop free in between."""
MAX_OUTLINE_DEFINITIONS = 2000
MAX_OUTLINE_IMPORTS = 200
INDENT_SAMPLE_LINES = 4000
"""The indentation unit is read from the first lines, enough to see it."""
KEPT_TREES = 16
"""Documents that keep their syntax tree between uses: the ones touched last."""
RECENT_EDITS = 16
NEARBY_ROWS = 3


@dataclass(frozen=True, slots=True)
class Outline:
    """A document's imports and definitions as of its last refresh (possibly stale)."""

    imports: tuple[tuple[int, str], ...] = ()
    """Each import statement's first row and text."""
    definitions: tuple[outline.Definition, ...] = ()
    indent_unit: str | None = None
    """Detected over the document's first `INDENT_SAMPLE_LINES`: a cursor window full of
    docstrings misleads."""
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
    seconds for nothing a suggestion needs."""
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
        self._stale_outlines: OrderedDict[str, None] = OrderedDict()
        """Documents whose outline waits for a refresh, the next to refresh first."""
        self._pause = Deadline(self._refresh_outlines)
        self._refreshing: asyncio.Task[None] | None = None
        self._touched: OrderedDict[str, None] = OrderedDict()
        """Documents with a syntax tree, the one touched last at the end."""
        self._last_opened: str | None = None
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
            self._last_opened = uri
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_soon(self._prepare, uri)
        self._schedule_outline(uri, first=False)
        return document

    def change(
        self, uri: str, version: int, changes: Iterable[Change], encoding: PositionEncoding
    ) -> None:
        """Apply edits; raises UnknownDocumentError for a document never opened."""
        changes = list(changes)
        edits = self.documents.change(uri, version, changes, encoding)
        self._stamp.changed(uri)
        self.syntax.change(uri, edits)
        if self.syntax.get(uri) is not None:
            self._touch(uri)
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
                self._stale_outlines.pop(uri, None)
            elif uri not in self.outlines:
                self._schedule_outline(uri, first=False)

    def _prepare(self, uri: str) -> None:
        """Start parsing the file opened last (the one the user looks at; not each of a
        thousand opened at once) and compile the query a first request uses; the outline's
        queries are compiled by the outline refresh, off the keystroke path."""
        syntax = self.syntax.get(uri)
        if syntax is not None and uri == self._last_opened:
            self._touch(uri)
            syntax.parse_off_loop()
            query_for(syntax.language_id, "scopes")

    def close(self, uri: str) -> None:
        self.documents.close(uri)
        self.syntax.close(uri)
        self.recent.forget(uri)
        self.outlines.pop(uri, None)
        self._stale_outlines.pop(uri, None)
        self._touched.pop(uri, None)
        self._stamp.changed_everywhere()

    def tree(self, uri: str) -> SyntaxTree | None:
        """The document's tree, however much bringing it current costs (for code actions,
        which the user asks for and waits on)."""
        syntax = self.syntax.get(uri)
        if syntax is not None:
            self._touch(uri)
        return syntax

    def cheap_tree(self, uri: str) -> SyntaxTree | None:
        """The document's tree when reading it costs little (current, or a reparse on the
        event loop is expected to be quick); else None, for text-only context, while the
        parse goes on off the loop."""
        syntax = self.tree(uri)
        if syntax is None or syntax.cheap():
            return syntax
        with contextlib.suppress(RuntimeError):
            syntax.parse_off_loop()
        return None

    async def settle(self, uri: str, seconds: float = REQUEST_PARSE_SECONDS) -> None:
        """Give the document's parse up to `seconds` off the event loop, so the request
        that follows finds its tree current, or (when that was not enough, see
        `cheap_tree`) goes on without it."""
        syntax = self.tree(uri)
        if syntax is not None:
            await syntax.parsed_within(seconds)

    def parse_soon(self, uri: str, delay: float = 0.0) -> None:
        """Bring the tree up to date, off the event loop, once the step in hand is done (its
        answer written, or its request sent and waiting for the model), or `delay` seconds
        later: the checks of a suggestion and the next row's context then find the tree
        current."""
        syntax = self.syntax.get(uri)
        if syntax is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_later(delay, syntax.parse_off_loop)

    def _touch(self, uri: str) -> None:
        """Note a use of the document's tree; the trees of documents not used for longest
        go beyond `KEPT_TREES` (their outlines stay)."""
        self._touched[uri] = None
        self._touched.move_to_end(uri)
        while len(self._touched) > KEPT_TREES:
            oldest, _ = self._touched.popitem(last=False)
            if (syntax := self.syntax.get(oldest)) is not None:
                syntax.drop()

    def _schedule_outline(self, uri: str, *, first: bool = True) -> None:
        """Queue the outline's refresh for the next pause in typing (`first`: before the
        others queued); outside an event loop, only on request."""
        if self.exclusions.excludes(uri):
            return
        self._stale_outlines[uri] = None
        self._stale_outlines.move_to_end(uri, last=not first)
        with contextlib.suppress(RuntimeError):
            self._pause.push(asyncio.get_running_loop().time() + OUTLINE_REFRESH_DELAY)

    def _refresh_outlines(self) -> None:
        """A pause in typing: refresh the next few outlines queued."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.get_running_loop().create_task(self._refresh_some())

    async def _refresh_some(self) -> None:
        """Up to `OUTLINES_PER_PAUSE` outlines, each parsed off the loop first; the rest
        wait for the next pause."""
        for _ in range(OUTLINES_PER_PAUSE):
            if not self._stale_outlines:
                return
            uri, _ = self._stale_outlines.popitem(last=False)
            syntax = self.syntax.get(uri)
            if syntax is None:
                continue
            await syntax.parse_off_loop()
            if self.syntax.get(uri) is not syntax:
                continue  # closed or reopened meanwhile
            if not syntax.current:
                self._stale_outlines[uri] = None  # edited meanwhile: its turn comes again
                continue
            version = syntax.version
            for _ in self._read_outline(uri, syntax):
                await asyncio.sleep(0)  # a keystroke waits for one slice at most
                if (
                    self.syntax.get(uri) is not syntax
                    or not syntax.current
                    or syntax.version != version
                ):
                    self._stale_outlines[uri] = None  # edited meanwhile: its turn comes again
                    break
            if uri not in self._touched:
                syntax.drop()
        if self._stale_outlines:
            self._pause.push(asyncio.get_running_loop().time() + OUTLINE_REFRESH_DELAY)

    def refresh_outline(self, uri: str) -> None:
        """The document's outline, now (parsing it on the event loop if need be)."""
        self._stale_outlines.pop(uri, None)
        syntax = self.syntax.get(uri)
        if syntax is not None:
            for _ in self._read_outline(uri, syntax):
                pass

    def _read_outline(self, uri: str, syntax: SyntaxTree) -> Iterator[None]:
        """Read the outline a slice of `OUTLINE_SLICE_BYTES` at a time, pausing after each,
        and store it once read whole (or `MAX_OUTLINE_DEFINITIONS` found): the caller stops
        asking for more when the document changes meanwhile."""
        if self.exclusions.excludes(uri):
            return
        document = syntax.document
        imports: list[tuple[int, int, str]] = []
        definitions: list[outline.Definition] = []
        for start in range(0, max(document.byte_length, 1), OUTLINE_SLICE_BYTES):
            end = start + OUTLINE_SLICE_BYTES
            imports.extend(outline.imports_in(syntax, start, end))
            definitions.extend(outline.definitions_in(syntax, start, end))
            if len(definitions) >= MAX_OUTLINE_DEFINITIONS:
                break
            yield
        definitions = definitions[:MAX_OUTLINE_DEFINITIONS]
        signatures: dict[str, str] = {}
        for definition in definitions:
            signatures.setdefault(definition.name, definition.signature)
        self.outlines[uri] = Outline(
            imports=tuple(
                (document.point_at(document.offset_at_byte(start))[0], text)
                for start, _, text in imports[:MAX_OUTLINE_IMPORTS]
            ),
            definitions=tuple(definitions),
            signatures=signatures,
            indent_unit=detect_indent_unit(document.lines(0, INDENT_SAMPLE_LINES)),
        )
        self._stamp.changed_everywhere()
