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
from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.languages import profile_for
from lsp_spark.postprocess.context import CursorContext, detect_indent_unit
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
    """What a row's reading depends on besides the row's own text."""

    row: int
    document: int
    """`Document.stamp_except(row)`."""
    workspace: int
    """`Workspace.stamp_except(uri)`."""
    options: ContextOptions


@dataclass(frozen=True, slots=True)
class _Enclosing:
    """A scope around the row read, with what says whether a later row is still in it."""

    header: src.Snippet
    column: int
    open_ended: bool
    """Its text ends on the row read (none of it below yet): in Python it takes in the rows
    typed after, while they are indented deeper."""


@dataclass(frozen=True, slots=True)
class _RowContext:
    """What was read for the cursor's row. It holds while only that row's text changes
    (and nothing else in the workspace), so typing along a row reads the rest once; the
    line itself is looked at on every keystroke."""

    key: _RowKey | None
    """None when the row's sources were cut short: it is not remembered."""
    surroundings: Surroundings
    indent_unit: str
    starts_in_code: bool
    """The row's first character is code (not inside a string or comment that began above)."""
    indent: int
    """The row's indentation when it was read (the cursor's column on a blank row): the
    scopes found depend on it."""
    enclosing: tuple[_Enclosing, ...]
    scopes: tuple[src.Snippet, ...]
    """The headers of `enclosing` that the window cut off."""
    imports: tuple[src.Snippet, ...]
    definitions: tuple[src.Snippet, ...]
    """Signatures of the names used above the cursor's line, nearest first."""
    recent: tuple[src.Snippet, ...]
    related: str
    """The related code rendered, for keystrokes whose line names nothing new."""
    sources: tuple[str, ...]


def build_context(
    workspace: Workspace, document: Document, row: int, column: int, options: ContextOptions
) -> BuiltContext | None:
    """None when nothing should be suggested here."""
    uri = document.uri
    syntax = workspace.tree(uri)
    document_stamp, workspace_stamp = document.stamp_except(row), workspace.stamp_except(uri)
    key = None
    if document_stamp is not None and workspace_stamp is not None:
        key = _RowKey(row, document_stamp, workspace_stamp, options)
    known = workspace.row_contexts.get(uri)
    if not isinstance(known, _RowContext) or key is None:
        known = None
    split_from = None
    if known is not None and known.key != key:
        split_from, known = _split_from(document, known, row, key), None
    budget = options.budget
    prefix_tokens = budget.tokens - budget.suffix_tokens - budget.related_tokens
    aligners: dict[str, Callable[[int], int]] = {}
    if syntax is not None:
        aligners = {
            "first_row_at_or_after": partial(boundaries.statement_start_at_or_after, syntax),
            "last_row_at_or_before": partial(boundaries.statement_end_at_or_before, syntax),
        }
    surroundings = None
    if known is not None:
        surroundings = known.surroundings
    elif split_from is not None:
        surroundings = split_from.parent.surroundings.moved_down(split_from.rows)
    window = cursor_window(
        document.lines,
        document.line_count,
        row,
        column,
        prefix_chars=budget.chars(prefix_tokens),
        suffix_chars=budget.chars(budget.suffix_tokens),
        previous_top=workspace.window_tops.get(uri),
        surroundings=surroundings,
        **aligners,
    )
    if window.surroundings is not surroundings:
        known = split_from = None
    workspace.window_tops[uri] = window.rows.start
    cursor_offset = document.offset_at(row, column, PositionEncoding.UTF32)
    cursor_byte = document.byte_offset_at(cursor_offset)
    starts_in_code = known.starts_in_code if known is not None else split_from is not None
    if syntax is None or (
        starts_in_code
        and len(window.line_prefix) == column
        and outline.stays_code(document.language_id, True, window.line_prefix)
    ):
        region: outline.Region = "code"
    else:
        region = outline.cursor_region(syntax, cursor_byte)
    mode = completion_mode(
        document.language_id,
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
    if known is None:
        known = _read_row(
            workspace, document, syntax, row, cursor_byte, window, options, key, split_from
        )
        if known.key is not None:
            workspace.row_contexts[uri] = known
    related, sources = _with_line_definitions(known, workspace, document, window, options)
    check = (
        None
        if syntax is None
        else boundaries.SuggestionCheck(syntax, cursor_byte, window.line_prefix)
    )
    cursor = CursorContext(
        line_prefix=window.line_prefix,
        line_suffix=window.line_suffix,
        next_lines=window.next_lines,
        multiline=mode is Mode.BLOCK,
        max_lines=options.max_lines,
        language=document.language_id,
        indent_unit=options.indent_unit or known.indent_unit,
        new_errors=None if check is None else check.added_errors,
        parses_at_cursor=None if check is None else check.parses_at_cursor,
    )
    return BuiltContext(window=window, related=related, cursor=cursor, sources=sources)


def _indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


@dataclass(frozen=True, slots=True)
class _Split:
    """What a row made by Enter takes from the row it was split from."""

    parent: _RowContext
    rows: list[str]
    """The rows the splits put above the cursor's, the parent's first."""
    enclosing: tuple[_Enclosing, ...]
    """The parent's scopes that still enclose the cursor's row."""


def _split_from(
    document: Document, parent: _RowContext, row: int, key: _RowKey | None
) -> _Split | None:
    """What `parent` read, moved to `row`, when line splits (Enter) made `row` from the
    parent's row and it still holds: nothing else in the document changed (see
    `Document.grown_from`; what other documents and outlines lend is read again), the
    rows the splits made stay in code (so `row` starts in it) and close no brace, the
    indentation deepens only after a row that opens a block (whose header is then in the
    window), and where it steps back (Python) it leaves only scopes whose text ended on
    the parent's row. So the scopes whose headers the window cut off are known."""
    known = parent.key
    if (
        key is None
        or known is None
        or known.options != key.options
        or not parent.starts_in_code
        or document.grown_from(known.row, known.document) != row
    ):
        return None
    language = document.language_id
    profile = profile_for(language)
    rows = document.lines(known.row, row + 1)
    depth, lowest, opens = parent.indent, parent.indent, False
    cursor_row = len(rows) - 1
    for index, text in enumerate(rows):
        if index < cursor_row:
            if "}" in text or not outline.ends_in_code(language, True, text):
                return None
            if not text.strip():
                continue
        width = _indent_width(text)
        if (width > depth and not opens) or (width < depth and not profile.indentation_scopes):
            return None
        # A row that opens a block or a bracket may be followed by a deeper one.
        depth, lowest, opens = width, min(lowest, width), profile.leaves_open(text.rstrip())
    enclosing = parent.enclosing
    if lowest < parent.indent:
        if any(lowest <= scope.column and not scope.open_ended for scope in enclosing):
            return None
        enclosing = tuple(scope for scope in enclosing if lowest > scope.column)
    return _Split(parent, rows[:-1], enclosing)


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
    row: int,
    cursor_byte: int,
    window: CursorWindow,
    options: ContextOptions,
    key: _RowKey | None,
    split_from: _Split | None,
) -> _RowContext:
    """Run the enabled sources by priority until the deadline runs out; a row whose
    sources were cut short is not remembered (its key is None). A row split from
    another takes that row's scopes (see `_split_from`): the syntax tree is not
    needed before the request goes out."""
    deadline = time.perf_counter() + RELATED_DEADLINE
    origin = src.filename_of(document.uri)
    outlines = workspace.outlines
    enabled = options.sources
    found: dict[str, tuple[src.Snippet, ...]] = {}
    proposals: list[tuple[str, Callable[[], list[src.Snippet]]]] = []
    enclosing: tuple[_Enclosing, ...] = ()
    if split_from is not None:
        enclosing = split_from.enclosing
    elif syntax is not None and "scopes" in enabled:
        row_end = cursor_byte + len(window.line_suffix.encode("utf-8", "surrogatepass"))
        enclosing = tuple(
            _Enclosing(
                src.Snippet("scopes", origin, scope.header), scope.column, scope.end_byte <= row_end
            )
            for scope in outline.enclosing_scopes(syntax, cursor_byte)
        )
    found["scopes"] = tuple(
        scope.header for scope in enclosing if scope.header.text not in window.prefix
    )
    if "imports" in enabled:
        proposals.append(
            ("imports", lambda: src.file_imports(outlines.get(document.uri), window.rows, origin))
        )
    if enabled & {"definitions", "open_files"}:
        names = src.identifiers_near(window.surroundings.above, "")
        proposals.append(
            (
                "definitions",
                lambda: _definitions(names, workspace, document, window, enabled),
            )
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
    for name, propose in proposals:
        if time.perf_counter() > deadline:
            key = None
            break
        found[name] = tuple(propose())
    groups = [found.get(name, ()) for name in ("scopes", "imports", "definitions", "recent")]
    related, sources = _choose(options, document.language_id, *groups)
    return _RowContext(
        key=key,
        surroundings=window.surroundings,
        indent_unit=_indent_unit(workspace, document.uri, window),
        starts_in_code=split_from is not None or _starts_in_code(syntax, document, row),
        indent=(
            len(window.line_prefix)
            if not window.line_prefix.strip()
            else _indent_width(window.line_prefix)
        ),
        enclosing=enclosing,
        scopes=groups[0],
        imports=groups[1],
        definitions=groups[2],
        recent=groups[3],
        related=related,
        sources=sources,
    )


def _starts_in_code(syntax: SyntaxTree | None, document: Document, row: int) -> bool:
    if syntax is None:
        return True
    line_start = document.byte_offset_at(document.offset_at(row, 0, PositionEncoding.UTF32))
    return outline.cursor_region(syntax, line_start) == "code"


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
