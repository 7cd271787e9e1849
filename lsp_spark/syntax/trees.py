"""Syntax trees for open documents, kept current by incremental reparsing.

A keystroke only records its edit on the tree (``Tree.edit`` is cheap); the reparse waits until
someone asks for the tree, so a burst of keystrokes between two completion requests costs one
incremental parse.

A parse can cost far more than a keystroke may: a fresh 50,000-line file, or an unclosed call
typed in the middle of one (tree-sitter then nests the rest of the file inside the call, and
even the incremental reparse takes 0.3-1 s). So a request gives the parse a bound: it runs on
`PARSE_THREAD` (py-tree-sitter lets go of the GIL while it parses bytes), the request waits for
it at most `REQUEST_PARSE_SECONDS` (`Workspace.settle`), and when that is not enough it goes on
without a tree (text-only context) while the parse finishes off the keystroke path. Tree-sitter's
own way of stopping a parse, its progress callback, only works with a read callback, which
py-tree-sitter 0.26 leaks (see `Document.utf8`). On the event loop a tree is only reparsed when
that is expected to cost little (`cheap`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from tree_sitter import Language, Parser, Tree

from lsp_spark.documents import ByteEdit, Document
from lsp_spark.languages import profile_for
from lsp_spark.syntax.grammars import canonical, language_for

PARSE_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lsp-spark-parse")
"""One thread, so parses off the loop queue up instead of taking both cores from the model."""
REQUEST_PARSE_SECONDS = 0.025
"""How long a request waits for its document's parse before it goes on without the tree."""
CHEAP_PARSE_SECONDS = 0.025
"""A parse expected to take longer than this does not run on the event loop."""
CHEAP_FIRST_PARSE_BYTES = 100_000
"""A first parse of more than this is not expected to be cheap (about 3 MB/s for Python)."""

_thread_parsers: dict[Language, Parser] = {}
"""Parsers used on `PARSE_THREAD` only: a parser is not to be shared between threads."""


def _parse_on_thread(language: Language, source: bytes, old: Tree | None) -> tuple[Tree, float]:
    parser = _thread_parsers.get(language)
    if parser is None:
        parser = _thread_parsers[language] = Parser(language)
    started = time.perf_counter()
    tree = parser.parse(source) if old is None else parser.parse(source, old)
    return tree, time.perf_counter() - started


class SyntaxTree:
    """One document's tree, kept current by incremental edits."""

    __slots__ = (
        "__weakref__",
        "_background",
        "_background_started",
        "_blank_insertion",
        "_blank_lines_ignored",
        "_edits_since",
        "_generation",
        "_parse_seconds",
        "_parser",
        "_stale",
        "_tree",
        "document",
        "language",
        "language_id",
        "version",
    )

    document: Document
    language_id: str
    language: Language
    version: int
    """Bumped by every (re)parse, so callers can cache what they derive per tree."""

    def __init__(self, document: Document, language_id: str, language: Language) -> None:
        self.document = document
        self.language_id = language_id
        self.language = language
        self.version = 0
        self._parser = Parser(language)
        self._tree: Tree | None = None
        self._stale = True
        self._blank_insertion: tuple[int, int] | None = None
        """Where the one edit since the last parse went in, when the edited tree can stand
        for a reparse (see `tree_before`)."""
        self._blank_lines_ignored = profile_for(language_id).blank_lines_ignored
        self._parse_seconds: float | None = None
        """How long the last parse took (None: none yet)."""
        self._background: asyncio.Future[None] | None = None
        """The parse running on `PARSE_THREAD`, if one is."""
        self._background_started = 0.0
        self._edits_since: list[ByteEdit] = []
        """Edits made while the parse off the loop runs, to replay on its tree."""
        self._generation = 0
        """Bumped when the tree is replaced on the loop: a parse off the loop started
        before that is older than the tree, and is dropped when it lands."""

    def __repr__(self) -> str:
        return f"SyntaxTree({self.document.uri!r}, {self.language_id!r}, version={self.version})"

    def edit(self, edit: ByteEdit) -> None:
        """Record an edit already applied to the document; the reparse waits for ``tree``."""
        if self._tree is not None:
            _record_edit(self._tree, edit)
        reusable = (
            edit.blank_after_code
            and not self._stale
            and self._tree is not None
            and self._blank_lines_ignored
            and not self._tree.root_node.has_error
        )
        self._blank_insertion = (edit.start_byte, edit.new_end_byte) if reusable else None
        self._stale = True
        if self._background is not None:
            self._edits_since.append(edit)

    @property
    def current(self) -> bool:
        """Whether the tree matches the text: reading it costs no parse."""
        return not self._stale and self._tree is not None

    def cheap(self) -> bool:
        """Whether bringing the tree current on the event loop is expected to cost little:
        the last parse did, and no parse off the loop has been running for longer."""
        if self.current:
            return True
        if self._background is not None and (
            time.perf_counter() - self._background_started > CHEAP_PARSE_SECONDS
        ):
            return False
        if self._parse_seconds is None:
            return self.document.byte_length <= CHEAP_FIRST_PARSE_BYTES
        return self._parse_seconds <= CHEAP_PARSE_SECONDS

    @property
    def last_parse_seconds(self) -> float | None:
        """How long the last parse took (None: none yet), what a reparse of an edited copy
        of the tree is expected to cost."""
        return self._parse_seconds

    def parse_off_loop(self) -> asyncio.Future[None]:
        """Start bringing the tree current on `PARSE_THREAD`, unless that is running already;
        the future is done when this parse lands (the tree is current then unless edits
        came in meanwhile). Needs a running event loop."""
        loop = asyncio.get_running_loop()
        if self._background is not None:
            return self._background
        done: asyncio.Future[None] = loop.create_future()
        if self.current:
            done.set_result(None)
            return done
        self._background, self._background_started = done, time.perf_counter()
        self._edits_since = []
        generation = self._generation
        # A copy: the loop goes on editing this document's tree while the thread reads it.
        old = None if self._tree is None else self._tree.copy()
        parsing = loop.run_in_executor(
            PARSE_THREAD, _parse_on_thread, self.language, self.document.utf8, old
        )
        parsing.add_done_callback(lambda landed: self._land(landed, generation, done))
        return done

    def _land(
        self,
        landed: asyncio.Future[tuple[Tree, float]],
        generation: int,
        done: asyncio.Future[None],
    ) -> None:
        """Install a parse made off the loop, with the edits made since replayed on it."""
        self._background = None
        edits, self._edits_since = self._edits_since, []
        if not done.done():
            done.set_result(None)
        if landed.cancelled() or landed.exception() is not None:
            return
        tree, seconds = landed.result()
        self._parse_seconds = seconds
        if generation != self._generation:
            return  # the loop parsed a newer state meanwhile
        for edit in edits:
            _record_edit(tree, edit)
        self._tree = tree
        self._stale = bool(edits)
        self._blank_insertion = None
        self.version += 1

    async def parsed_within(self, seconds: float) -> bool:
        """Whether the tree is current, after waiting at most `seconds` for parses off the
        loop (the one running may have started before the last edits: then another)."""
        deadline = time.perf_counter() + seconds
        while not self.current:
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            await asyncio.wait({self.parse_off_loop()}, timeout=left)
        return True

    def drop(self) -> None:
        """Forget the tree (its memory); the next use parses the document afresh."""
        self._tree = None
        self._stale = True
        self._blank_insertion = None
        self._parse_seconds = None
        self._generation += 1

    @property
    def tree(self) -> Tree:
        """The current tree: reparsed incrementally (reusing the edited tree) if edits came in."""
        return self.refresh()

    def tree_before(self, byte: int) -> Tree:
        """The tree, to read the kinds, starts and errors of the nodes holding code before
        `byte`. Not reparsed when blank lines mean nothing to the grammar (its language's
        profile says so: not Markdown's, where one ends a paragraph), the last parse
        found no syntax error and the only edit since put blank space after a line's code
        (Enter and its indentation), unless `byte` falls inside that space: valid code
        stays valid, with the same nodes, only shifted by the edit, except that a node
        which ended where the blank space went in now ends after it. (Around errors,
        recovery can differ: then it is reparsed.)"""
        tree, blank = self._tree, self._blank_insertion
        if tree is not None and blank is not None and not blank[0] < byte < blank[1]:
            return tree
        return self.refresh()

    def refresh(self) -> Tree:
        """The current tree, parsed on the event loop if need be (whatever it costs)."""
        if self._stale or self._tree is None:
            source = self.document.utf8
            old = self._tree
            started = time.perf_counter()
            self._tree = (
                self._parser.parse(source) if old is None else self._parser.parse(source, old)
            )
            self._parse_seconds = time.perf_counter() - started
            self._stale = False
            self._blank_insertion = None
            self._generation += 1
            self.version += 1
        return self._tree


def _record_edit(tree: Tree, edit: ByteEdit) -> None:
    tree.edit(
        start_byte=edit.start_byte,
        old_end_byte=edit.old_end_byte,
        new_end_byte=edit.new_end_byte,
        start_point=edit.start_point,
        old_end_point=edit.old_end_point,
        new_end_point=edit.new_end_point,
    )


class SyntaxStore:
    """Syntax trees of open documents by URI, for the languages that have a grammar."""

    __slots__ = ("_trees",)

    def __init__(self) -> None:
        self._trees: dict[str, SyntaxTree] = {}

    def open(self, document: Document) -> SyntaxTree | None:
        """Track a (re)opened document; None when its language has no grammar.

        The first parse waits until the tree is first needed, so opening many files is cheap.
        """
        language_id = canonical(document.language_id)
        language = language_for(language_id)
        if language is None:
            self._trees.pop(document.uri, None)
            return None
        syntax = SyntaxTree(document, language_id, language)
        self._trees[document.uri] = syntax
        return syntax

    def change(self, uri: str, edits: Sequence[ByteEdit]) -> None:
        """Record a didChange's edits, in order; a document without a tree is ignored."""
        syntax = self._trees.get(uri)
        if syntax is None:
            return
        for edit in edits:
            syntax.edit(edit)

    def close(self, uri: str) -> None:
        self._trees.pop(uri, None)

    def get(self, uri: str) -> SyntaxTree | None:
        return self._trees.get(uri)
