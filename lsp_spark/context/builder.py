"""Assemble the prompt's material: the cursor window, the completion mode, related code.

Order matters for providers' prefix caching: related code that changes rarely (imports,
other files' definitions) comes first, then this file's definitions and recent edits,
then the enclosing scopes, and only then the text around the cursor, which changes on
every keystroke.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from lsp_spark.context import CursorWindow, Surroundings, cursor_window
from lsp_spark.context import sources as src
from lsp_spark.context.budget import Budget
from lsp_spark.context.mode import Mode, completion_mode
from lsp_spark.context.names import names_to_bind
from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.languages import profile_for
from lsp_spark.postprocess.context import CursorContext, detect_indent_unit, enclosing_width
from lsp_spark.prompts.continuation import line_comment
from lsp_spark.settings import CONTEXT_SOURCES
from lsp_spark.syntax import boundaries, outline
from lsp_spark.syntax.trees import SyntaxTree
from lsp_spark.workspace import Workspace

RELATED_DEADLINE = 0.004
"""Seconds all related-code sources may take together; the rest are skipped, not awaited.
(Wall time: the thread's CPU clock is a system call that cost more than the sources.)"""
PROMPT_ORDER = ("imports", "open_files", "definitions", "recent_edits", "scopes")


@dataclass(frozen=True, slots=True)
class BuiltContext:
    window: CursorWindow
    related: str
    cursor: CursorContext
    sources: tuple[str, ...]
    """The related-code sources that contributed, for evaluation and debugging."""


@dataclass(frozen=True, slots=True)
class ContextOptions:
    budget: Budget
    max_lines: int
    sources: frozenset[str] = frozenset(CONTEXT_SOURCES)
    in_comments: bool = True
    in_strings: bool = True
    indent_unit: str | None = None


class _RowKey(NamedTuple):
    """The versions a row's reading depends on besides the row's own text: while they hold,
    what was read for the row is what a new read would find."""

    row: int
    document: int
    """`Document.stamp_except(row)`: no other line of the document changed."""
    workspace: int
    """`Workspace.stamp_except(uri)`: no other document, outline or exclusion changed."""
    options: ContextOptions


@dataclass(frozen=True, slots=True)
class _RowContext:
    """What was read for the cursor's row. It holds while only that row's text changes
    (and nothing else in the workspace), so typing along a row reads the rest once; the
    line itself is looked at on every keystroke."""

    surroundings: Surroundings
    indent_unit: str
    scopes: tuple[src.Snippet, ...]
    """The enclosing scopes' headers that the window cut off."""
    imports: tuple[src.Snippet, ...]
    definitions: tuple[src.Snippet, ...]
    """Signatures of the names used above the cursor's line, nearest first."""
    recent: tuple[src.Snippet, ...]
    related: str
    """The related code rendered, for keystrokes whose line names nothing new."""
    sources: tuple[str, ...]


class ContextBuilder:
    """Builds each request's context, and remembers per document what it read for the
    cursor's row under a `_RowKey`: reading the related code costs more than the rest of a
    keystroke, and typing along a row changes none of it."""

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        self._rows: dict[str, tuple[_RowKey, _RowContext]] = {}
        self._tops: dict[str, int] = {}
        """Each document's last window top row (see `cursor_window`)."""

    def forget(self, uri: str) -> None:
        self._rows.pop(uri, None)
        self._tops.pop(uri, None)

    def build(
        self, document: Document, row: int, column: int, options: ContextOptions
    ) -> BuiltContext | None:
        """None when nothing should be suggested here."""
        workspace, uri = self._workspace, document.uri
        syntax = workspace.cheap_tree(uri)
        key = _row_key(workspace, document, row, options)
        remembered = self._rows.get(uri)
        known = remembered[1] if remembered is not None and remembered[0] == key else None
        window = _window(document, syntax, row, column, options.budget, known, self._tops.get(uri))
        self._tops[uri] = window.rows.start
        if known is not None and window.surroundings is not known.surroundings:
            known = None
        cursor_byte = document.byte_offset_at(
            document.offset_at(row, column, PositionEncoding.UTF32)
        )
        region = "code" if syntax is None else outline.cursor_region(syntax, cursor_byte)
        mode = completion_mode(
            window.line_prefix,
            window.line_suffix,
            next((line for line in window.next_lines if line.strip()), ""),
            region,
            in_comments=options.in_comments,
            in_strings=options.in_strings,
        )
        if mode is Mode.NONE:
            return None
        if known is None:
            known, complete = _read_row(workspace, document, syntax, cursor_byte, window, options)
            if complete and key is not None:
                self._rows[uri] = key, known
        related, sources = _with_line_definitions(known, workspace, document, window, options)
        cursor = _cursor_context(document, syntax, row, cursor_byte, window, mode, options, known)
        return BuiltContext(window=window, related=related, cursor=cursor, sources=sources)


def _row_key(
    workspace: Workspace, document: Document, row: int, options: ContextOptions
) -> _RowKey | None:
    """None when the last change was elsewhere: nothing read before can be kept."""
    document_stamp = document.stamp_except(row)
    workspace_stamp = workspace.stamp_except(document.uri)
    if document_stamp is None or workspace_stamp is None:
        return None
    return _RowKey(row, document_stamp, workspace_stamp, options)


def _window(
    document: Document,
    syntax: SyntaxTree | None,
    row: int,
    column: int,
    budget: Budget,
    known: _RowContext | None,
    previous_top: int | None,
) -> CursorWindow:
    """The cursor window with its edges on statement boundaries, keeping the known row's
    surroundings while they fit."""
    prefix_tokens = budget.tokens - budget.suffix_tokens - budget.related_tokens
    aligners: dict[str, Callable[[int], int]] = {}
    if syntax is not None:
        aligners = {
            "first_row_at_or_after": partial(boundaries.statement_start_at_or_after, syntax),
            "last_row_at_or_before": partial(boundaries.statement_end_at_or_before, syntax),
        }
    return cursor_window(
        document.lines,
        document.line_count,
        row,
        column,
        prefix_chars=budget.chars(prefix_tokens),
        suffix_chars=budget.chars(budget.suffix_tokens),
        previous_top=previous_top,
        surroundings=None if known is None else known.surroundings,
        **aligners,
    )


def _cursor_context(
    document: Document,
    syntax: SyntaxTree | None,
    row: int,
    cursor_byte: int,
    window: CursorWindow,
    mode: Mode,
    options: ContextOptions,
    known: _RowContext,
) -> CursorContext:
    """What the filters need to judge a suggestion at this cursor."""
    check = (
        None
        if syntax is None
        else boundaries.SuggestionCheck(syntax, cursor_byte, window.line_prefix)
    )
    profile = profile_for(document.language_id)
    header_only = mode is Mode.HEADER and profile.offside
    fitting: tuple[str, ...] = ()
    if header_only and profile.headers is not None:
        fitting = profile.headers.fitting_above(window.suffix, len(window.line_prefix))
    to_bind: tuple[str, ...] = ()
    if mode in (Mode.STATEMENT, Mode.BLOCK) or header_only:
        above, below = _function_rows(document, row, window)
        to_bind = names_to_bind(profile, above, below, document.text)
    indent_unit = options.indent_unit or known.indent_unit
    return CursorContext(
        line_prefix=window.line_prefix,
        line_suffix=window.line_suffix,
        next_lines=window.next_lines,
        multiline=mode.multiline,
        one_statement=mode is Mode.STATEMENT,
        header_only=header_only,
        headers_that_fit=fitting,
        names_to_bind=to_bind,
        max_lines=options.max_lines,
        language=document.language_id,
        indent_unit=indent_unit,
        enclosing_width=enclosing_width(window.prefix, indent_unit) if mode.multiline else None,
        new_errors=None if check is None else check.added_errors,
        parses_at_cursor=None if check is None else check.parses_at_cursor,
    )


FUNCTION_ROWS = 200
"""How many rows each side of the cursor's are read for what its function's code reads."""


def _function_rows(document: Document, row: int, window: CursorWindow) -> tuple[str, str]:
    """The text before and after the cursor, up to `FUNCTION_ROWS` rows each way: the
    function around it whole, where the window's edges may cut its body (and a body cut
    short does not parse)."""
    above = document.lines(max(row - FUNCTION_ROWS, 0), row)
    below = document.lines(row + 1, row + 1 + FUNCTION_ROWS)
    return "\n".join([*above, window.line_prefix]), "\n".join([window.line_suffix, *below])


INDENT_SAMPLE_CHARS = 2000


def _indent_unit(workspace: Workspace, uri: str, window: CursorWindow) -> str:
    """The whole document's unit once its outline is known; until then, the window's."""
    known = workspace.outlines.get(uri)
    if known is not None and known.indent_unit is not None:
        return known.indent_unit
    return detect_indent_unit(
        (window.prefix[-INDENT_SAMPLE_CHARS:] + window.suffix[: INDENT_SAMPLE_CHARS // 2]).split(
            "\n"
        )
    )


def _read_row(
    workspace: Workspace,
    document: Document,
    syntax: SyntaxTree | None,
    cursor_byte: int,
    window: CursorWindow,
    options: ContextOptions,
) -> tuple[_RowContext, bool]:
    """Read the enabled sources by priority until the deadline runs out; says whether all
    were read (a row whose sources were cut short is not remembered)."""
    origin = src.filename_of(document.uri)
    scopes: tuple[src.Snippet, ...] = ()
    if syntax is not None and "scopes" in options.sources:
        scopes = tuple(
            snippet
            for scope in outline.enclosing_scopes(syntax, cursor_byte)
            if (snippet := src.Snippet("scopes", origin, scope.header)).text not in window.prefix
        )
    found, complete = _within_deadline(_proposals(workspace, document, window, options.sources))
    groups = [scopes, *(found.get(name, ()) for name in ("imports", "definitions", "recent"))]
    related, sources = _choose(options, document.language_id, *groups)
    row_context = _RowContext(
        surroundings=window.surroundings,
        indent_unit=_indent_unit(workspace, document.uri, window),
        scopes=groups[0],
        imports=groups[1],
        definitions=groups[2],
        recent=groups[3],
        related=related,
        sources=sources,
    )
    return row_context, complete


_Proposal = tuple[str, Callable[[], list[src.Snippet]]]


def _proposals(
    workspace: Workspace, document: Document, window: CursorWindow, enabled: frozenset[str]
) -> list[_Proposal]:
    """The enabled related-code sources besides the scopes, by priority."""
    origin = src.filename_of(document.uri)
    proposals: list[_Proposal] = []
    if "imports" in enabled:
        outlines = workspace.outlines
        proposals.append(
            ("imports", lambda: src.file_imports(outlines.get(document.uri), window.rows, origin))
        )
    if enabled & {"definitions", "open_files"}:
        names = src.identifiers_near(window.surroundings.above, "")
        proposals.append(
            ("definitions", lambda: _definitions(names, workspace, document, window, enabled))
        )
    if "recent_edits" in enabled:
        proposals.append(
            (
                "recent",
                lambda: src.recent_edits(
                    workspace.recent.places,
                    workspace.documents.get,
                    document.uri,
                    window.rows,
                    src.filename_of,
                ),
            )
        )
    return proposals


def _within_deadline(
    proposals: list[_Proposal],
) -> tuple[dict[str, tuple[src.Snippet, ...]], bool]:
    """Each proposal's snippets until `RELATED_DEADLINE` has passed; whether all ran."""
    deadline = time.perf_counter() + RELATED_DEADLINE
    found: dict[str, tuple[src.Snippet, ...]] = {}
    for name, propose in proposals:
        if time.perf_counter() > deadline:
            return found, False
        found[name] = tuple(propose())
    return found, True


def _definitions(
    names: list[str],
    workspace: Workspace,
    document: Document,
    window: CursorWindow,
    enabled: frozenset[str],
) -> list[src.Snippet]:
    return [
        snippet
        for snippet in src.definitions_of(
            names,
            workspace.outlines,
            document.uri,
            window.prefix + window.suffix,
            src.filename_of,
        )
        if snippet.source in enabled
    ]


def _with_line_definitions(
    known: _RowContext,
    workspace: Workspace,
    document: Document,
    window: CursorWindow,
    options: ContextOptions,
) -> tuple[str, tuple[str, ...]]:
    """The row's related code, with the signatures of names on the cursor's line first."""
    if not options.sources & {"definitions", "open_files"}:
        return known.related, known.sources
    names = src.identifiers_near(window.line_prefix, window.line_suffix)
    fresh = [
        snippet
        for snippet in _definitions(names, workspace, document, window, options.sources)
        if snippet not in known.definitions
    ]
    if not fresh:
        return known.related, known.sources
    return _choose(
        options,
        document.language_id,
        known.scopes,
        known.imports,
        (*fresh, *known.definitions),
        known.recent,
    )


def _choose(
    options: ContextOptions, language: str, *groups: Iterable[src.Snippet]
) -> tuple[str, tuple[str, ...]]:
    """Snippets by priority while the budget lasts, rendered in prompt order, and the
    sources that contributed."""
    chosen: list[src.Snippet] = []
    room = options.budget.related_tokens
    for group in groups:
        for snippet in group:
            cost = options.budget.count(snippet.text)
            if cost <= room:
                chosen.append(snippet)
                room -= cost
    chosen.sort(key=lambda snippet: PROMPT_ORDER.index(snippet.source))
    return (
        _render(chosen, language),
        tuple(dict.fromkeys(snippet.source for snippet in chosen)),
    )


def _render(snippets: Iterable[src.Snippet], language: str) -> str:
    """Group snippets under a comment naming the file they come from."""
    marker = line_comment(language)
    blocks: list[str] = []
    last_origin = None
    for snippet in snippets:
        if snippet.origin != last_origin:
            blocks.append(f"{marker} {snippet.origin}")
            last_origin = snippet.origin
        blocks.append(snippet.text)
    return "\n".join(blocks)
