"""Syntax trees for open documents, kept current by incremental reparsing.

A keystroke only records its edit on the tree (``Tree.edit`` is cheap); the reparse waits until
someone asks for the tree, so a burst of keystrokes between two completion requests costs one
incremental parse.

A parse can cost far more than a keystroke may: a fresh 50,000-line file, or an unclosed call
typed in the middle of a big one (tree-sitter then nests the rest of the file inside the call,
and even the incremental reparse takes 0.3-1 s). It cannot be moved off the event loop:
py-tree-sitter 0.26 holds the GIL while it parses (and while a query runs), so a parse on
another thread stops the loop all the same; and tree-sitter's way of stopping a parse early,
its progress callback, works only with a read callback, whose every chunk py-tree-sitter 0.26
leaks (see `Document.utf8`). So a request reads the tree only when a reparse is expected to be
cheap (`cheap`), and otherwise goes on with text-only context; the costly reparse waits for a
pause in typing (`Workspace`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from tree_sitter import Language, Parser, Tree

from lsp_spark.documents import ByteEdit, Document
from lsp_spark.languages import profile_for
from lsp_spark.syntax.grammars import canonical, language_for

CHEAP_PARSE_SECONDS = 0.025
"""A reparse expected to take longer than this is not run while the user types."""
CHEAP_FIRST_PARSE_BYTES = 100_000
"""A file above this size is not expected to parse cheaply without a parse to go by (a first
parse, or after an edit that adds a bracket or quote: it can re-nest the rest of the file);
tree-sitter-python parses about 3 MB/s."""


class SyntaxTree:
    """One document's tree, kept current by incremental edits."""

    __slots__ = (
        "__weakref__",
        "_blank_insertion",
        "_blank_lines_ignored",
        "_parse_seconds",
        "_parser",
        "_risky",
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
        self._risky = False
        """An edit since the last parse may have changed the tree far beyond itself."""

    def __repr__(self) -> str:
        return f"SyntaxTree({self.document.uri!r}, {self.language_id!r}, version={self.version})"

    def edit(self, edit: ByteEdit) -> None:
        """Record an edit already applied to the document; the reparse waits for ``tree``."""
        if self._tree is not None:
            self._tree.edit(
                start_byte=edit.start_byte,
                old_end_byte=edit.old_end_byte,
                new_end_byte=edit.new_end_byte,
                start_point=edit.start_point,
                old_end_point=edit.old_end_point,
                new_end_point=edit.new_end_point,
            )
        reusable = (
            edit.blank_after_code
            and not self._stale
            and self._tree is not None
            and self._blank_lines_ignored
            and not self._tree.root_node.has_error
        )
        self._blank_insertion = (edit.start_byte, edit.new_end_byte) if reusable else None
        self._stale = True

    def mark_risky(self) -> None:
        """Note an edit that added a bracket or quote: until the next parse, the cost of one
        is judged by the file's size, not by the last parse."""
        self._risky = True

    @property
    def current(self) -> bool:
        """Whether the tree matches the text: reading it costs no parse."""
        return not self._stale and self._tree is not None

    @property
    def last_parse_seconds(self) -> float | None:
        """How long the last parse took (None: none yet)."""
        return self._parse_seconds

    def cheap(self) -> bool:
        """Whether bringing the tree current is expected to cost little: it is current, or
        the last parse was quick (or, with none to go by, the file is small)."""
        if self.current:
            return True
        if self._parse_seconds is None or self._risky:
            return self.document.byte_length <= CHEAP_FIRST_PARSE_BYTES
        return self._parse_seconds <= CHEAP_PARSE_SECONDS

    def drop(self) -> None:
        """Forget the tree (its memory); the next use parses the document afresh."""
        self._tree = None
        self._stale = True
        self._blank_insertion = None
        self._parse_seconds = None

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
        """The current tree, reparsed if need be (whatever it costs: see `cheap`)."""
        if self._stale or self._tree is None:
            source = self.document.utf8
            old = self._tree
            started = time.perf_counter()
            self._tree = (
                self._parser.parse(source) if old is None else self._parser.parse(source, old)
            )
            self._parse_seconds = time.perf_counter() - started
            self._risky = False
            self._stale = False
            self._blank_insertion = None
            self.version += 1
        return self._tree


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
