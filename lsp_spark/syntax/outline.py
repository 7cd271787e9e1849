"""What a prompt needs to know about a document's syntax, read from its tree.

``enclosing_scopes`` and ``cursor_region`` run on every completion request, so they only look at
the few nodes around the cursor. ``imports`` and ``definitions`` query the whole file and are
cached per tree version. Text comes from the document's blocks, never from the joined text.
All offsets are UTF-8 byte offsets, as tree-sitter counts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal, TypeVar
from weakref import WeakKeyDictionary

from tree_sitter import Node, Query, QueryCursor, Tree

from lsp_spark.documents import Document
from lsp_spark.syntax.grammars import language_for, query_for
from lsp_spark.syntax.trees import SyntaxTree
from lsp_spark.syntax.walks import MAX_VISITED, ancestors

Region = Literal["code", "comment", "string"]

MAX_HEADER_LINES = 3
"""A longer header (a signature split over many lines) is joined into one line."""
MAX_HEADER_CHARS = 240
_MAX_READ_BYTES = 4 * MAX_HEADER_CHARS
"""Enough source for any header; a 2,000-line constant is not read whole to show one line."""
_LOOKBEHIND_BYTES = 1024
"""How far back a blank, indented cursor line looks for the code it continues."""

# Where a comment ending right at the cursor is closed, the cursor is already past it.
_BLOCK_COMMENT_ENDS = (b"*/", b"]]", b"=]", b"-}", b"*)", b"-->", b"=end")
# Inside strings, these are code again: f"{x}", `${x}`, "$(cmd)", "${var}".
_CODE_IN_STRING_WORDS = ("interpolation", "substitution", "expansion")
_STRING_KINDS = frozenset(
    {"heredoc_body", "heredoc_content", "nowdoc_body", "text_block"}
    | {"char_literal", "character_literal", "rune_literal"}
)
_SPACE_AFTER_OPENING = re.compile(r"([(\[{])\s+")
_SPACE_BEFORE_CLOSING = re.compile(r"\s+([)\]}])")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Scope:
    """A definition around the cursor, shown by its header: its text up to its body."""

    kind: str
    header: str
    start_byte: int
    end_byte: int
    body_start_byte: int | None
    column: int
    """Where the scope starts on its line, in bytes: in Python, rows indented no deeper
    are outside it."""


@dataclass(frozen=True, slots=True)
class Definition:
    """A named definition, with its signature so a prompt can show it without its body."""

    name: str
    kind: str
    signature: str
    start_byte: int
    end_byte: int


def enclosing_scopes(syntax: SyntaxTree, byte_offset: int) -> list[Scope]:
    """The scopes around the cursor, outermost first.

    A scope whose body has no closing token (a Python block) also encloses a cursor on an
    indented blank line after it, when the cursor is indented deeper than the scope's start.
    """
    query = query_for(syntax.language_id, "scopes")
    if query is None:
        return []
    root = syntax.tree.root_node
    continuation = _indented_continuation(syntax.document, byte_offset)
    start = byte_offset if continuation is None else continuation[0]
    cursor = QueryCursor(query)  # a fresh one costs less than a microsecond; none is shared
    cursor.set_byte_range(max(start - 1, 0), byte_offset + 1)
    # Scopes sharing a body (a C++ template and its class) collapse to the one starting first.
    found: dict[int, tuple[Node, Node | None, int]] = {}
    for pattern, captures in cursor.matches(root):
        scope = captures["scope"][0]
        body = captures["scope.body"][0] if "scope.body" in captures else None
        if not _encloses(scope, body, byte_offset, continuation):
            continue
        key = scope.id if body is None else body.id
        kept = found.get(key)
        if kept is None or (scope.start_byte, pattern) < (kept[0].start_byte, kept[2]):
            found[key] = (scope, body, pattern)
    ordered = sorted(found.values(), key=lambda item: (item[0].start_byte, -item[0].end_byte))
    return [
        Scope(
            kind=_kind(query, pattern, scope),
            header=_header(syntax.document, scope, body),
            start_byte=scope.start_byte,
            end_byte=scope.end_byte,
            body_start_byte=None if body is None else body.start_byte,
            column=scope.start_point.column,
        )
        for scope, body, pattern in ordered
    ]


def imports(syntax: SyntaxTree) -> list[tuple[int, int, str]]:
    """Each import statement as (start_byte, end_byte, text), in document order."""
    return list(_per_version(_IMPORTS, syntax, _find_imports))


def definitions(syntax: SyntaxTree) -> list[Definition]:
    """Named top-level and member definitions in document order, each with its signature."""
    return list(_per_version(_DEFINITIONS, syntax, _find_definitions))


def cursor_region(syntax: SyntaxTree, byte_offset: int) -> Region:
    """Whether the cursor is in a comment, a string (docstrings and templates too) or code.

    The cursor right after a line comment is still in it; right after a closing quote or
    ``*/`` it is not. Only the innermost node and `MAX_ANCESTORS` above it are looked at:
    a string or comment is a leaf or sits right above one, and an unclosed call makes the
    tree thousands of levels deep (see `walks`).
    """
    if byte_offset <= 0:
        return "code"
    regions = _region_kinds(syntax.language_id)
    innermost = syntax.tree.root_node.descendant_for_byte_range(byte_offset - 1, byte_offset)
    if innermost is None:
        return "code"
    for node in (innermost, *ancestors(innermost)):
        region = regions.get(node.kind_id)
        if region is not None and node.start_byte < byte_offset:
            if byte_offset < node.end_byte:
                return region
            if byte_offset == node.end_byte and _open_at_end(syntax.document, node, region):
                return region
    return "code"


def error_count(tree: Tree) -> int:
    """ERROR plus MISSING nodes in a tree."""
    return errors_in(tree.root_node)


def errors_in(node: Node, limit: int = MAX_VISITED) -> int:
    """ERROR plus MISSING nodes in a subtree: a walk that only enters subtrees flagged
    ``has_error``. A query would visit every node; this costs nothing on valid code.
    It stops after `limit` nodes: broken code can make one subtree of the rest of the file,
    and errors that far away say nothing about the cursor."""
    count = 0
    pending = [node]
    while pending and limit > 0:
        node = pending.pop()
        limit -= 1
        if node.is_error or node.is_missing:
            count += 1
        if node.has_error:
            pending.extend(node.children)
    return count


_IMPORTS: WeakKeyDictionary[SyntaxTree, tuple[int, list[tuple[int, int, str]]]] = (
    WeakKeyDictionary()
)
_DEFINITIONS: WeakKeyDictionary[SyntaxTree, tuple[int, list[Definition]]] = WeakKeyDictionary()


def _per_version(
    cache: WeakKeyDictionary[SyntaxTree, tuple[int, list[T]]],
    syntax: SyntaxTree,
    find: Callable[[SyntaxTree, Tree], list[T]],
) -> list[T]:
    tree = syntax.tree  # may reparse, which bumps the version
    cached = cache.get(syntax)
    if cached is not None and cached[0] == syntax.version:
        return cached[1]
    found = find(syntax, tree)
    cache[syntax] = (syntax.version, found)
    return found


def _find_imports(syntax: SyntaxTree, tree: Tree) -> list[tuple[int, int, str]]:
    query = query_for(syntax.language_id, "imports")
    if query is None:
        return []
    nodes = QueryCursor(query).captures(tree.root_node).get("import", [])
    found: list[tuple[int, int, str]] = []
    for node in sorted(nodes, key=lambda node: (node.start_byte, -node.end_byte)):
        if found and node.end_byte <= found[-1][1]:
            continue  # inside an import already listed
        source = syntax.document.utf8_between(node.start_byte, node.end_byte).rstrip()
        found.append((node.start_byte, node.start_byte + len(source), _decode(source)))
    return found


def _find_definitions(syntax: SyntaxTree, tree: Tree) -> list[Definition]:
    query = query_for(syntax.language_id, "definitions")
    if query is None:
        return []
    bodies = _scope_bodies(syntax, tree)
    # When patterns overlap (a const bound to a function), the first pattern names the kind.
    chosen: dict[int, tuple[int, Node, Node]] = {}
    for pattern, captures in QueryCursor(query).matches(tree.root_node):
        if "definition" not in captures or "name" not in captures:
            continue
        node = captures["definition"][0]
        kept = chosen.get(node.id)
        if kept is None or pattern < kept[0]:
            chosen[node.id] = (pattern, node, captures["name"][0])
    document = syntax.document
    return [
        Definition(
            name=_decode(document.utf8_between(name.start_byte, name.end_byte)),
            kind=_kind(query, pattern, node),
            signature=_header(document, node, bodies[node.id])
            if node.id in bodies
            else _signature(document, node, node.end_byte),
            start_byte=node.start_byte,
            end_byte=node.end_byte,
        )
        for pattern, node, name in sorted(chosen.values(), key=lambda item: item[1].start_byte)
    ]


def _scope_bodies(syntax: SyntaxTree, tree: Tree) -> dict[int, Node | None]:
    """Body of every scope in the file by scope node id, so signatures stop where bodies start."""
    query = query_for(syntax.language_id, "scopes")
    if query is None:
        return {}
    return {
        captures["scope"][0].id: captures["scope.body"][0] if "scope.body" in captures else None
        for _, captures in QueryCursor(query).matches(tree.root_node)
    }


def _kind(query: Query, pattern: int, node: Node) -> str:
    kind = query.pattern_settings(pattern).get("kind")
    return kind if isinstance(kind, str) else node.type


def _encloses(
    scope: Node, body: Node | None, byte_offset: int, continuation: tuple[int, int] | None
) -> bool:
    if scope.start_byte < byte_offset < scope.end_byte:
        return True
    if body is None or body.end_byte != scope.end_byte or not _last_token_is_named(body):
        return False  # closed by a token such as `}` or `end`: the cursor is past it
    if byte_offset == scope.end_byte:
        return True
    return (
        continuation is not None
        and scope.end_byte == continuation[0]
        and continuation[1] > scope.start_point.column
    )


def _last_token_is_named(body: Node) -> bool:
    last = body.child(body.child_count - 1) if body.child_count else body
    return last is not None and last.is_named


def _indented_continuation(document: Document, byte_offset: int) -> tuple[int, int] | None:
    """(end of the code before the cursor, cursor column) when only indentation lies between.

    That is the cursor on a fresh indented line, which belongs to whatever open-ended body
    (a Python block) it is indented into, though the tree has not grown there yet. Read from
    the text: the node API's ``first_child_for_byte`` crashes where no child follows.
    """
    start = max(byte_offset - _LOOKBEHIND_BYTES, 0)
    before = document.utf8_between(start, byte_offset)
    code = before.rstrip()
    gap = before[len(code) :]
    newline = gap.rfind(b"\n")
    if not code or newline < 0:
        return None
    return start + len(code), len(gap) - newline - 1


def _open_at_end(document: Document, node: Node, region: Region) -> bool:
    """Whether the cursor right at the node's end is still inside it."""
    if region == "comment":
        tail = document.utf8_between(max(node.end_byte - 4, node.start_byte), node.end_byte)
        return not tail.endswith(b"\n") and not tail.endswith(_BLOCK_COMMENT_ENDS)
    if region == "string":
        # Unterminated: its closing quote MISSING, or (error recovery) a bare piece of string
        # content left in an ERROR node.
        if node.child_count:
            last = node.child(node.child_count - 1)
            return last is not None and last.is_missing
        parent = node.parent
        return parent is not None and parent.is_error
    return False


@cache
def _region_kinds(language_id: str) -> dict[int, Region]:
    """Node kinds that make a region, by kind id: classified once per grammar by kind name.

    Names work across grammars (``comment``, ``line_comment``, ``string_content``,
    ``template_string``, ``interpolation``…), including long-tail grammars with no queries.
    """
    language = language_for(language_id)
    if language is None:
        return {}
    kinds: dict[int, Region] = {}
    for kind_id in range(language.node_kind_count):
        name = language.node_kind_for_id(kind_id)
        if not name or not language.node_kind_is_named(kind_id):
            continue
        if "comment" in name:
            kinds[kind_id] = "comment"
        elif any(word in name for word in _CODE_IN_STRING_WORDS):
            kinds[kind_id] = "code"
        elif "string" in name or name in _STRING_KINDS:
            kinds[kind_id] = "string"
    return kinds


def _header(document: Document, scope: Node, body: Node | None) -> str:
    """The scope's text up to its body, then the body's opening tokens (`{`, `interface {`).

    Comments just before the body are left out; without a body (an empty Ruby method), the
    scope's first line.
    """
    if body is None:
        return _signature(document, scope, scope.end_byte, first_line_only=True)
    before = body.prev_sibling
    while before is not None and before.is_extra:
        before = before.prev_sibling
    header = _signature(document, scope, body.start_byte if before is None else before.end_byte)
    opening_end = body.start_byte
    # Not the last child: in an empty body that is the closing token.
    for index in range(body.child_count - 1):
        token = body.child(index)
        if token is None or token.is_named:
            break
        opening_end = token.end_byte
    if opening_end == body.start_byte:
        return header
    return f"{header} {_decode(document.utf8_between(body.start_byte, opening_end))}"


def _signature(document: Document, node: Node, end: int, *, first_line_only: bool = False) -> str:
    source = document.utf8_between(node.start_byte, min(end, node.start_byte + _MAX_READ_BYTES))
    if first_line_only:
        source = source.partition(b"\n")[0]
    return _normalise(source, node.start_point.column)


def _normalise(source: bytes, column: int) -> str:
    """Blank lines and trailing spaces dropped, continuation lines dedented by the first line's
    column; more than a few lines are joined into one, and the result is capped."""
    lines = [line.rstrip() for line in _decode(source).splitlines()]
    lines = lines[:1] + [_dedent(line, column) for line in lines[1:] if line]
    if len(lines) > MAX_HEADER_LINES:
        joined = " ".join(line.strip() for line in lines)
        joined = _SPACE_AFTER_OPENING.sub(r"\1", joined)
        lines = [_SPACE_BEFORE_CLOSING.sub(r"\1", joined)]
    header = "\n".join(lines)
    if len(header) > MAX_HEADER_CHARS:
        header = header[: MAX_HEADER_CHARS - 1].rstrip() + "…"
    return header


def _dedent(line: str, column: int) -> str:
    indent = len(line) - len(line.lstrip())
    return line[min(indent, column) :]


def _decode(source: bytes) -> str:
    return source.decode("utf-8", "replace")
