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

from lsp_spark.context import CursorWindow, cursor_window
from lsp_spark.context import sources as src
from lsp_spark.context.budget import Budget
from lsp_spark.context.mode import Mode, completion_mode
from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.postprocess.filters import CursorContext, detect_indent_unit
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


def build_context(
    workspace: Workspace, document: Document, row: int, column: int, options: ContextOptions
) -> BuiltContext | None:
    """None when nothing should be suggested here."""
    syntax = workspace.tree(document.uri)
    budget = options.budget
    prefix_tokens = budget.tokens - budget.suffix_tokens - budget.related_tokens
    aligners: dict[str, Callable[[int], int]] = {}
    if syntax is not None:
        aligners = {
            "first_row_at_or_after": partial(boundaries.statement_start_at_or_after, syntax),
            "last_row_at_or_before": partial(boundaries.statement_end_at_or_before, syntax),
        }
    window = cursor_window(
        document.lines,
        document.line_count,
        row,
        column,
        prefix_chars=budget.chars(prefix_tokens),
        suffix_chars=budget.chars(budget.suffix_tokens),
        previous_top=workspace.window_tops.get(document.uri),
        **aligners,
    )
    workspace.window_tops[document.uri] = window.rows.start
    cursor_offset = document.offset_at(row, column, PositionEncoding.UTF32)
    cursor_byte = document.byte_offset_at(cursor_offset)
    region = outline.cursor_region(syntax, cursor_byte) if syntax is not None else "code"
    mode = completion_mode(
        window.line_prefix,
        window.line_suffix,
        window.previous_line,
        window.next_lines[0] if window.next_lines else "",
        region,
        in_comments=options.in_comments,
        in_strings=options.in_strings,
    )
    if mode is Mode.NONE:
        return None
    snippets = _related(workspace, document, syntax, cursor_byte, window, options)
    cursor = CursorContext(
        line_prefix=window.line_prefix,
        line_suffix=window.line_suffix,
        next_lines=window.next_lines,
        multiline=mode is Mode.BLOCK,
        max_lines=options.max_lines,
        language=document.language_id,
        indent_unit=options.indent_unit or _indent_unit(workspace, document.uri, window),
        new_errors=(
            partial(boundaries.added_errors, syntax, cursor_byte) if syntax is not None else None
        ),
        parses_at_cursor=syntax is None or boundaries.parses_near(syntax, cursor_byte),
    )
    return BuiltContext(
        window=window,
        related=_render(snippets, document.language_id),
        cursor=cursor,
        sources=tuple(dict.fromkeys(snippet.source for snippet in snippets)),
    )


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


def _related(
    workspace: Workspace,
    document: Document,
    syntax: SyntaxTree | None,
    cursor_byte: int,
    window: CursorWindow,
    options: ContextOptions,
) -> list[src.Snippet]:
    """Run the enabled sources by priority until the budget or the deadline runs out."""
    deadline = time.perf_counter() + RELATED_DEADLINE
    text = window.prefix + window.suffix
    origin = src.filename_of(document.uri)
    outlines = workspace.outlines
    proposals: list[Callable[[], list[src.Snippet]]] = []
    if syntax is not None and "scopes" in options.sources:
        proposals.append(
            lambda: src.scope_headers(
                outline.enclosing_scopes(syntax, cursor_byte), window.prefix, origin
            )
        )
    if "imports" in options.sources:
        proposals.append(lambda: src.file_imports(outlines.get(document.uri), window.rows, origin))
    if options.sources & {"definitions", "open_files"}:
        names = src.identifiers_near(window.prefix, window.line_suffix)
        proposals.append(
            lambda: [
                snippet
                for snippet in src.definitions_of(
                    names, outlines, document.uri, text, src.filename_of
                )
                if snippet.source in options.sources
            ]
        )
    if "recent_edits" in options.sources:
        proposals.append(
            lambda: src.recent_edits(
                workspace.recent.places,
                workspace.documents.get,
                document.uri,
                window.rows,
                src.filename_of,
            )
        )
    chosen: list[src.Snippet] = []
    room = options.budget.related_tokens
    for propose in proposals:
        if time.perf_counter() > deadline:
            break
        for snippet in propose():
            cost = options.budget.count(snippet.text)
            if cost <= room:
                chosen.append(snippet)
                room -= cost
    return sorted(chosen, key=lambda snippet: PROMPT_ORDER.index(snippet.source))


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
