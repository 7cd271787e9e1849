"""Statement boundaries for cutting the context window, and the syntax check of a suggestion."""

from __future__ import annotations

from functools import cache

from tree_sitter import Language, Node, Parser, Tree

from lsp_spark.documents import PositionEncoding
from lsp_spark.languages import profile_for
from lsp_spark.syntax.outline import error_count, errors_in
from lsp_spark.syntax.trees import CHEAP_PARSE_SECONDS, SyntaxTree
from lsp_spark.syntax.walks import MAX_ANCESTORS, top_level_at

SEARCH_ROWS = 40
CONTAINER_TYPES = (
    "block",
    "body",
    "compound_statement",
    "declaration_list",
    "program",
    "module",
    "source_file",
    "translation_unit",
    "chunk",
    "suite",
    "statement_block",
)
"""Node types (by substring, across grammars) whose children are statements or members."""


def starts_statement(syntax: SyntaxTree, row: int) -> bool:
    """Whether the row's first non-blank character begins a statement or definition."""
    document = syntax.document
    text = document.line(row)
    column = len(text) - len(text.lstrip())
    if column == len(text):
        return False
    byte = document.byte_offset_at(document.offset_at(row, column, PositionEncoding.UTF32))
    node = syntax.tree_before(byte + 1).root_node.named_descendant_for_byte_range(byte, byte)
    if node is None:
        return False
    parent = node.parent  # each access builds a new Node: read it once per step
    for _ in range(MAX_ANCESTORS):  # up through the nodes starting here; bounded, see `walks`
        if parent is None or parent.start_byte != byte or _is_container(parent):
            break
        node, parent = parent, parent.parent
    return node.start_byte == byte and (parent is None or _is_container(parent))


def _is_container(node: Node) -> bool:
    return node.parent is None or _container_type(node.type)


@cache
def _container_type(kind: str) -> bool:
    return any(container in kind for container in CONTAINER_TYPES)


def statement_start_at_or_after(syntax: SyntaxTree, row: int) -> int:
    """The first row at or after `row` where a statement begins (or `row` if none near)."""
    last = min(syntax.document.line_count, row + SEARCH_ROWS)
    return next((r for r in range(row, last) if starts_statement(syntax, r)), row)


def statement_end_at_or_before(syntax: SyntaxTree, row: int) -> int:
    """The last row at or before `row` whose next non-blank row begins a statement."""
    document = syntax.document
    following = row + 1
    while following < document.line_count and following - row < SEARCH_ROWS:
        if document.line(following).strip():
            break
        following += 1
    for candidate in range(row, max(-1, row - SEARCH_ROWS), -1):
        if following >= document.line_count or starts_statement(syntax, following):
            return candidate
        if document.line(candidate).strip():
            following = candidate
    return row


STANDALONE_LIMIT = 4096
"""A statement up to this size is checked on its own: two small parses beat one
incremental parse of the whole file, which tree-sitter-python makes nearly full."""
IN_PLACE_LIMIT = 100_000
"""Bytes of a file above which a suggestion is not checked by reparsing the whole file."""
LOOK_BACK_BYTES = 256
"""Bytes read back at first for the code before the cursor (more when they are blank)."""


class SuggestionCheck:
    """The syntax check of the suggestions at one cursor: how many syntax errors inserting
    one adds, and whether the code there parses as it is.

    One way for every language: the statement holding the code before the cursor is cut
    out of the file and parsed with the suggestion spliced in, and the errors it has
    without the suggestion (counted once for all the versions checked) are taken off.
    Where nested statements parse on their own (Python, see `NestedStatements`) it is the
    innermost clean statement that holds every line of the suggestion, so lines that step
    back out of the cursor's block stay in it (a method is checked in a block of its own,
    without its class, whose parse costs far more); elsewhere the top-level one around the
    cursor. A statement over `STANDALONE_LIMIT`, or none around
    the cursor, leaves the whole document: its tree is edited and reparsed incrementally
    instead, which reuses what the insertion does not touch.
    """

    __slots__ = ("_baselines", "_byte", "_line_prefix", "_syntax")

    def __init__(self, syntax: SyntaxTree, byte_offset: int, line_prefix: str) -> None:
        self._syntax = syntax
        self._byte = byte_offset
        self._line_prefix = line_prefix
        self._baselines: dict[bytes, int] = {}
        """A broken statement's own errors, by its text."""

    def added_errors(self, text: str) -> int:
        """How many syntax errors inserting `text` at the cursor adds (none known when the
        tree cannot be read without a costly parse: edits came in since the request)."""
        if not self._syntax.cheap():
            return 0
        inserted = text.encode()
        piece = self._piece(inserted)
        if piece is None:
            return _added_errors_in_place(self._syntax, self._byte, inserted)
        start, end, header, broken = piece
        source = header + self._syntax.document.utf8_between(start, end)
        cut = len(header) + self._byte - start
        checker = _checker(self._syntax.language)
        added = error_count(checker.parse(source[:cut] + inserted + source[cut:]))
        if not broken:
            return added  # clean in the file, so clean on its own too
        if source not in self._baselines:
            self._baselines[source] = error_count(checker.parse(source))
        return added - self._baselines[source]

    def parses_at_cursor(self) -> bool:
        """Whether the top-level statements around the cursor are free of syntax errors (not
        known, so not claimed, when reading the tree would cost a costly parse)."""
        if not self._syntax.cheap():
            return False
        return _errors_around(self._syntax.tree, self._byte, self._byte) == 0

    def _piece(self, inserted: bytes) -> tuple[int, int, bytes, bool] | None:
        """What to check on its own: where it starts and ends (to the end of the cursor's
        line at least, which lands after the insertion), the header that puts it in a block,
        and whether it is broken; None for the whole document. Where nested statements parse
        on their own, the innermost clean one that starts its line at or left of every line
        the insertion makes; else the top-level statement, if it holds the cursor."""
        path = self._path()
        syntax, byte = self._syntax, self._byte
        nested = profile_for(syntax.language_id).nested_statements
        leftmost = _leftmost_column(self._line_prefix, inserted)
        for depth in range(len(path) - 1, 0, -1):
            statement = path[depth]
            if (
                nested is not None
                and path[depth - 1].type in nested.parents
                and statement.start_point.column <= leftmost
                and not statement.has_error
                and _starts_its_line(syntax, statement)
            ):
                start = statement.start_byte - statement.start_point.column
                header = nested.header if statement.start_point.column else b""
                break
        else:
            if len(path) < 2 or not path[1].start_byte <= byte <= path[1].end_byte:
                return None
            statement, start, header = path[1], path[1].start_byte, b""
        end = max(statement.end_byte, _line_end(syntax, byte))
        if end - start > STANDALONE_LIMIT:
            return None
        return start, end, header, statement.has_error

    def _path(self) -> list[Node]:
        """The nodes down to the last code before the cursor (before its line, when only
        indentation precedes it there). Only code before the cursor is read, and only where
        it starts: a row just made by Enter needs no reparse (see `SyntaxTree.tree_before`)."""
        syntax, byte = self._syntax, self._byte
        if not self._line_prefix.strip():
            byte -= len(self._line_prefix.encode("utf-8", "surrogatepass"))
        return _path_to_code_before(syntax, syntax.tree_before(self._byte).root_node, byte)


def _leftmost_column(line_prefix: str, inserted: bytes) -> int:
    """The smallest indentation among the cursor's line and the lines an insertion makes."""
    leftmost = len(line_prefix) - len(line_prefix.lstrip(" \t"))
    for line in inserted.split(b"\n")[1:]:
        if line.strip():
            leftmost = min(leftmost, _indent_width(line))
    return leftmost


def _path_to_code_before(syntax: SyntaxTree, root: Node, byte_offset: int) -> list[Node]:
    """The nodes from the root down to the innermost one holding the last code before
    `byte_offset` (none when there is no code before it). Comments are passed over: one
    between an `if` body and its `elif` belongs to neither. Found by the byte, going down:
    where nodes end is not looked at."""
    end = byte_offset
    while (last := _last_code_byte(syntax, end)) >= 0:
        path = [root]
        cursor = root.walk()
        while cursor.goto_first_child_for_byte(last) is not None:
            node = cursor.node
            if node is None or node.start_byte > last:
                break
            path.append(node)
        if not _is_comment(path[-1]):
            return path
        end = path[-1].start_byte
    return []


def _last_code_byte(syntax: SyntaxTree, end: int) -> int:
    """Where the last byte before `end` that is not blank is, or -1."""
    window = LOOK_BACK_BYTES
    while end > 0:
        start = max(0, end - window)
        text = syntax.document.utf8_between(start, end).rstrip()
        if text:
            return start + len(text) - 1
        end, window = start, window * 4
    return -1


def _is_comment(node: Node) -> bool:
    """Extras that are not text skipped by error recovery (that is code, if broken)."""
    return node.is_extra and not node.is_error


def _indent_width(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _line_end(syntax: SyntaxTree, byte_offset: int) -> int:
    """Where the line holding `byte_offset` ends (its rest lands after an insertion)."""
    rest = syntax.document.read_utf8(byte_offset, (0, 0))
    newline = rest.find(b"\n")
    return byte_offset + (len(rest) if newline < 0 else newline)


def _starts_its_line(syntax: SyntaxTree, node: Node) -> bool:
    column = node.start_point.column
    return not syntax.document.utf8_between(node.start_byte - column, node.start_byte).strip()


@cache
def _checker(language: Language) -> Parser:
    """One parser per grammar for the checks (they all run on the event loop's thread)."""
    return Parser(language)


def _added_errors_in_place(syntax: SyntaxTree, byte_offset: int, inserted: bytes) -> int:
    """The check in the whole document: parse incrementally from a copy of the tree with
    the text spliced in (one copy of the bytes: a read callback would leak them all, see
    `Document.utf8`), and count the errors of the top-level statements it touches. Skipped
    (no error known) in a file over `IN_PLACE_LIMIT` bytes, or where the last parse of the
    file was costly: a suggestion that opens or closes a bracket there changes the tree down
    to the end of the file, and its parse costs what a fresh one does (a second for 50,000
    lines), on the event loop."""
    if (
        syntax.document.byte_length > IN_PLACE_LIMIT
        or (syntax.last_parse_seconds or 0.0) > CHEAP_PARSE_SECONDS
    ):
        return 0
    tree = syntax.tree
    size = len(inserted)
    document = syntax.document
    start = document.point_at(document.offset_at_byte(byte_offset))
    last_line = inserted.rsplit(b"\n", 1)
    end = (
        (start[0] + inserted.count(b"\n"), len(last_line[-1]))
        if len(last_line) > 1
        else (start[0], start[1] + size)
    )
    candidate = tree.copy()
    candidate.edit(
        start_byte=byte_offset,
        old_end_byte=byte_offset,
        new_end_byte=byte_offset + size,
        start_point=start,
        old_end_point=start,
        new_end_point=end,
    )
    whole = document.utf8
    spliced = _checker(syntax.language).parse(
        whole[:byte_offset] + inserted + whole[byte_offset:], candidate
    )
    before = _errors_around(tree, byte_offset, byte_offset)
    return _errors_around(spliced, byte_offset, byte_offset + size) - before


def _errors_around(tree: Tree, start: int, end: int) -> int:
    """ERROR and MISSING nodes in the top-level statements that overlap [start, end]."""
    root = tree.root_node
    child = top_level_at(root, max(start - 1, 0)) or top_level_at(root, start)
    if child is None:
        child = root.child(root.child_count - 1) if root.child_count else None
        while child is not None and child.prev_sibling is not None and child.end_byte > start:
            child = child.prev_sibling
    total = 1 if root.is_error else 0
    while child is not None and child.start_byte <= end:
        total += errors_in(child)
        child = child.next_sibling
    return total
