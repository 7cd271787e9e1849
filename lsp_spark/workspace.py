"""Everything known about open documents: text, syntax trees, an outline index, recent edits.

Per keystroke only the cheap parts run (text splice, tree edit, a note of where the
edit was); the outline of each document (imports, definitions) is refreshed in the
background after typing pauses, so requests read it without waiting.

Nothing here grows with the number of open documents per keystroke or per pause: outlines
are refreshed a few documents per pause (the one typed in first), one per turn of the event
loop, and only the documents touched last keep their trees (a tree costs several times its
text; the others parse again on demand). A parse not expected to be cheap waits until typing
in its document has paused for `IDLE_PARSE_SECONDS`; requests meanwhile get text-only
context.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import OrderedDict, deque
from collections.abc import Iterable
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
from lsp_spark.syntax.trees import SyntaxStore, SyntaxTree

OUTLINE_REFRESH_DELAY = 0.3
OUTLINES_PER_PAUSE = 8
"""Documents whose outline is refreshed per pause in typing, one after the other."""
MAX_OUTLINE_DEFINITIONS = 2000
MAX_OUTLINE_IMPORTS = 200
INDENT_SAMPLE_LINES = 4000
"""The indentation unit is read from the first lines, enough to see it."""
IDLE_PARSE_SECONDS = 1.0
"""How long typing in a document pauses before a parse that is not expected to be cheap
runs (it holds the event loop: a 50,000-line file with an unclosed call takes a second)."""
_RISKY = re.compile(r"[()\[\]{}\"'`]")
"""Characters whose insertion can change a tree far beyond the edit."""
OPENING_PAUSE = 0.02
"""Seconds without another file opened before the one opened last is parsed."""
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


def _refresh_if_cheap(syntax: SyntaxTree) -> None:
    if syntax.cheap():
        syntax.refresh()


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
        self._opening = Deadline(self._prepare)
        """Fires once a burst of opened files ends (an editor restoring a session)."""
        self._edited_at: dict[str, float] = {}
        """When each document was last edited, by the event loop's clock."""
        self._last_edit = 0.0
        """When any document was last edited: an outline refresh under way stops then."""
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
                self._opening.push(asyncio.get_running_loop().time() + OPENING_PAUSE)
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
        with contextlib.suppress(RuntimeError):
            self._last_edit = asyncio.get_running_loop().time()
        if (syntax := self.syntax.get(uri)) is not None:
            self._touch(uri)
            self._edited_at[uri] = self._last_edit
            if any(_RISKY.search(text) for _, _, text in changes):
                syntax.mark_risky()
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

    def _prepare(self) -> None:
        """Parse the file opened last (the one the user looks at; not each of a thousand
        opened at once) when that is cheap, and compile the query a first request uses; the
        outline's queries are compiled by the outline refresh, off the keystroke path."""
        uri = self._last_opened
        syntax = None if uri is None else self.syntax.get(uri)
        if uri is not None and syntax is not None:
            self._touch(uri)
            if syntax.cheap():
                syntax.refresh()
            query_for(syntax.language_id, "scopes")

    def close(self, uri: str) -> None:
        self.documents.close(uri)
        self.syntax.close(uri)
        self.recent.forget(uri)
        self.outlines.pop(uri, None)
        self._stale_outlines.pop(uri, None)
        self._touched.pop(uri, None)
        self._edited_at.pop(uri, None)
        self._stamp.changed_everywhere()

    def tree(self, uri: str) -> SyntaxTree | None:
        """The document's tree, however much bringing it current costs (for code actions,
        which the user asks for and waits on)."""
        syntax = self.syntax.get(uri)
        if syntax is not None:
            self._touch(uri)
        return syntax

    def cheap_tree(self, uri: str) -> SyntaxTree | None:
        """The document's tree when reading it is expected to cost little (see
        `SyntaxTree.cheap`); else None, for text-only context, while the reparse waits for
        a pause in typing (the outline refresh does it)."""
        syntax = self.tree(uri)
        return syntax if syntax is None or syntax.cheap() else None

    def parse_soon(self, uri: str, delay: float = 0.0) -> None:
        """Bring the tree up to date once the step in hand is done (its answer written, or
        its request sent and waiting for the model), or `delay` seconds later, when that is
        cheap: the checks of a suggestion and the next row's context then find the tree
        current."""
        syntax = self.syntax.get(uri)
        if syntax is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_later(delay, _refresh_if_cheap, syntax)

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
        """Up to `OUTLINES_PER_PAUSE` outlines, one per turn of the event loop. A document
        whose parse is not expected to be cheap (see `SyntaxTree.cheap`) waits until its
        typing has paused for `IDLE_PARSE_SECONDS`: its parse and queries (a second or more
        for 50,000 lines) hold the event loop, and cannot be split or moved off it."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        for _ in range(OUTLINES_PER_PAUSE):
            if not self._stale_outlines:
                return
            if self._last_edit > started:
                break  # typing again: the rest waits for the next pause
            uri, _ = self._stale_outlines.popitem(last=False)
            syntax = self.syntax.get(uri)
            if syntax is None:
                continue
            idle_at = self._edited_at.get(uri, 0.0) + IDLE_PARSE_SECONDS
            if not syntax.cheap() and loop.time() < idle_at:
                self._stale_outlines[uri] = None
                self._stale_outlines.move_to_end(uri, last=False)
                self._pause.push(idle_at)
                return
            self.refresh_outline(uri)
            if uri not in self._touched:
                syntax.drop()
            await asyncio.sleep(0)  # a keystroke waits for one document at most
        if self._stale_outlines:
            self._pause.push(loop.time() + OUTLINE_REFRESH_DELAY)

    def refresh_outline(self, uri: str) -> None:
        """The document's outline, now (parsing it if need be)."""
        self._stale_outlines.pop(uri, None)
        syntax = self.syntax.get(uri)
        if syntax is not None:
            self._store_outline(
                uri,
                syntax,
                outline.imports(syntax),
                outline.definitions(syntax)[:MAX_OUTLINE_DEFINITIONS],
            )

    def _store_outline(
        self,
        uri: str,
        syntax: SyntaxTree,
        imports: list[tuple[int, int, str]],
        definitions: list[outline.Definition],
    ) -> None:
        if self.exclusions.excludes(uri):
            return
        document = syntax.document
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
