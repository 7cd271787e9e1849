"""What an action edits: the selected lines, or the function (or block) around the cursor."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tree_sitter import Node, QueryCursor

from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.syntax.grammars import query_for
from lsp_spark.syntax.outline import enclosing_scopes
from lsp_spark.syntax.trees import SyntaxTree
from lsp_spark.syntax.walks import MAX_ANCESTORS, ancestors, top_level_at

FUNCTION_KINDS = frozenset({"function", "method"})
# Lines just above a definition that belong to it: decorators, attributes, doc comments.
_ATTACHED = ("comment", "decorator", "attribute", "annotation")


@dataclass(frozen=True, slots=True)
class Target:
    """Whole lines [start_row, end_row) of a document."""

    start_row: int
    end_row: int
    kind: str
    """"selection", a scope kind ("function", "method", "class"…) or a statement's node type."""
    name: str | None = None

    @property
    def is_function(self) -> bool:
        return self.kind in FUNCTION_KINDS

    def overlaps(self, other: Target) -> bool:
        return self.start_row < other.end_row and other.start_row < self.end_row


@dataclass(frozen=True, slots=True)
class Function:
    """A function or method of a file, as the security review sees it."""

    start_row: int
    end_row: int
    text: str


def target_at(
    document: Document,
    syntax: SyntaxTree | None,
    start: tuple[int, int],
    end: tuple[int, int] | None = None,
) -> Target | None:
    """The selected lines when `start`..`end` (rows, code point columns) selects some code;
    else the innermost scope around the cursor, else the top-level statement there."""
    if end is not None:
        if not is_cursor(document, start, end):
            selected = _selection(document, start, end)
            if selected is not None:
                return selected
        start = min(start, end)
    if syntax is None:
        return None
    row, column = start
    line = document.line(row)
    indent = len(line) - len(line.lstrip())
    if line.strip() and column <= indent:
        column = indent + 1  # on a definition's first line, that definition is meant
    offset = document.offset_at(row, min(column, len(line)), PositionEncoding.UTF32)
    byte_offset = document.byte_offset_at(offset)
    scopes = enclosing_scopes(syntax, byte_offset)
    root = syntax.tree.root_node
    if scopes:
        scope = scopes[-1]
        return _around(document, _node_spanning(root, scope.start_byte, scope.end_byte), scope.kind)
    found = top_level_at(root, byte_offset)
    if found is None or not line.strip():
        return None
    return _around(document, found, found.type, named=False)


def is_cursor(document: Document, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Whether `start`..`end` (rows, code point columns) is a cursor rather than a selection:
    empty, or the one character a block cursor stands on (Helix's cursor is a selection of
    it), which at a line's end is its line break."""
    (first, first_column), (last, last_column) = sorted((start, end))
    if first == last:
        return last_column - first_column <= 1
    return last == first + 1 and last_column == 0 and first_column >= len(document.line(first))


def functions(syntax: SyntaxTree) -> list[Function]:
    """The outermost functions and methods of a file (a closure is part of its function)."""
    query = query_for(syntax.language_id, "scopes")
    if query is None:
        return []
    found: list[Node] = []
    for pattern, captures in QueryCursor(query).matches(syntax.tree.root_node):
        if query.pattern_settings(pattern).get("kind") in FUNCTION_KINDS:
            found.append(captures["scope"][0])
    found.sort(key=lambda node: (node.start_byte, -node.end_byte))
    document = syntax.document
    outermost: list[Function] = []
    last_end = -1
    for node in found:
        if node.start_byte < last_end:
            continue
        last_end = node.end_byte
        first, end = _rows(document, node)
        outermost.append(Function(first, end, _text(document, node)))
    return outermost


def _selection(document: Document, start: tuple[int, int], end: tuple[int, int]) -> Target | None:
    (first, _), (last, last_column) = sorted((start, end))
    if last > first and last_column == 0:
        last -= 1  # a selection of whole lines ends at the start of the next
    rows = [row for row in range(first, last + 1) if document.line(row).strip()]
    if not rows:
        return None
    return Target(rows[0], rows[-1] + 1, "selection")


def _node_spanning(root: Node, start_byte: int, end_byte: int) -> Node:
    node = root.descendant_for_byte_range(start_byte, end_byte) or root
    for parent in ancestors(node):  # bounded: see `walks`
        if parent.start_byte != start_byte or parent.end_byte != end_byte:
            break
        node = parent
    return node


def _around(document: Document, node: Node, kind: str, named: bool = True) -> Target:
    """The node's lines, with the decorators and comments that lead into it."""
    if node.parent is not None and node.parent.type == "decorated_definition":
        node = node.parent
    first, end = _rows(document, node)
    for before in _preceding(node):
        above, below = _rows(document, before)
        if below != first or not any(word in before.type for word in _ATTACHED):
            break
        first = above
    return Target(first, end, kind, _name(document, node) if named else None)


def _rows(document: Document, node: Node) -> tuple[int, int]:
    """The node's first row and the row after its last (one that has some of its text)."""
    first = document.position_at(document.offset_at_byte(node.start_byte), PositionEncoding.UTF32)
    last = document.position_at(document.offset_at_byte(node.end_byte), PositionEncoding.UTF32)
    return first[0], max(last[0] + (1 if last[1] else 0), first[0] + 1)


def _text(document: Document, node: Node) -> str:
    return document.utf8_between(node.start_byte, node.end_byte).decode("utf-8", "replace")


def _preceding(node: Node) -> Iterator[Node]:
    """What comes before the node, nearest first; for the first node of a block, what comes
    before the block (Python puts a comment above a class's first method there)."""
    current = node
    for _ in range(MAX_ANCESTORS):  # up a few blocks at most: bounded, see `walks`
        before = current.prev_sibling
        while before is not None:
            yield before
            before = before.prev_sibling
        parent = current.parent
        if parent is None or parent.start_byte != current.start_byte:
            return
        current = parent


def _name(document: Document, node: Node) -> str | None:
    for candidate in (node, *node.named_children):
        name = candidate.child_by_field_name("name")
        if name is not None:
            return _text(document, name)
    return None
