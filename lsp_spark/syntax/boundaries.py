"""Statement boundaries for cutting the context window, and the syntax check of a suggestion."""

from __future__ import annotations

from functools import cache, lru_cache

from tree_sitter import Language, Node, Parser, Tree

from lsp_spark.documents import PositionEncoding
from lsp_spark.syntax.outline import error_count
from lsp_spark.syntax.trees import SyntaxTree

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
    while parent is not None and parent.start_byte == byte:
        if _is_container(parent):
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


def _top_level_at(root: Node, byte: int) -> Node | None:
    """The child of the root that contains `byte` (tree-sitter's first_child_for_byte
    crashes past the last child, so this walks up from the innermost node instead)."""
    node = root.descendant_for_byte_range(byte, byte)
    while node is not None and node.parent is not None and node.parent.parent is not None:
        node = node.parent
    return None if node is None or node.parent is None else node


def _errors_around(tree: Tree, start: int, end: int) -> int:
    """ERROR and MISSING nodes in the top-level statements that overlap [start, end]."""
    root = tree.root_node
    child = _top_level_at(root, max(start - 1, 0)) or _top_level_at(root, start)
    if child is None:
        child = root.child(root.child_count - 1) if root.child_count else None
        while child is not None and child.prev_sibling is not None and child.end_byte > start:
            child = child.prev_sibling
    total = 1 if root.is_error else 0
    while child is not None and child.start_byte <= end:
        if child.has_error:
            total += _count_errors(child)
        child = child.next_sibling
    return total


def _count_errors(node: Node) -> int:
    cursor = node.walk()
    count = 0
    while True:
        current = cursor.node
        if current is not None and (current.is_error or current.is_missing):
            count += 1
        if current is not None and current.has_error and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent() or cursor.node == node:
                return count


def parses_near(syntax: SyntaxTree, byte_offset: int) -> bool:
    """Whether the statements around the cursor are free of syntax errors now."""
    return _errors_around(syntax.tree, byte_offset, byte_offset) == 0


STANDALONE_LIMIT = 4096
"""Top-level statements up to this size are checked on their own: two small parses beat
one incremental parse of the whole file, which tree-sitter-python makes nearly full."""


INDENTED_LANGUAGES = frozenset({"python"})
"""Languages in which a statement cut out of its file parses as it did there, in a block of
its own."""
STATEMENT_PARENTS = frozenset({"block", "module"})
LOOK_BACK_BYTES = 256
"""Bytes read back at first for the code before the cursor (more when they are blank)."""
BLOCK_HEADER = b"if True:\n"
"""Puts an indented statement in a block, where indentation means what it means in the file."""


def added_errors(syntax: SyntaxTree, byte_offset: int, line_prefix: str, text: str) -> int:
    """How many syntax errors inserting `text` at the cursor (after `line_prefix` on its
    line) adds near it."""
    inserted = text.encode()
    if syntax.language_id in INDENTED_LANGUAGES:
        nested = _nested_statement(syntax, byte_offset, line_prefix, inserted)
        if nested is not None:
            # It parses cleanly in the file, so in a block of its own it parses cleanly too.
            start = nested.start_byte - nested.start_point.column
            end = max(nested.end_byte, _line_end(syntax, byte_offset))
            source = syntax.document.utf8_between(start, end)
            cut = byte_offset - start
            spliced = source[:cut] + inserted + source[cut:]
            if nested.start_point.column:
                spliced = BLOCK_HEADER + spliced
            return error_count(_checker(syntax.language).parse(spliced))
    root = syntax.tree.root_node
    top = _top_level_at(root, max(byte_offset - 1, 0)) or _top_level_at(root, byte_offset)
    if top is not None and top.end_byte - top.start_byte <= STANDALONE_LIMIT:
        source = syntax.document.utf8_between(top.start_byte, top.end_byte)
        cut = byte_offset - top.start_byte
        before = _counted_errors(syntax.language, source) if top.has_error else 0
        spliced = source[:cut] + inserted + source[cut:]
        return error_count(_checker(syntax.language).parse(spliced)) - before
    return _added_errors_in_place(syntax, byte_offset, inserted)


@lru_cache(maxsize=4)
def _counted_errors(language: Language, source: bytes) -> int:
    """The errors of a broken statement on its own, counted once for all the versions of a
    suggestion checked against it (a statement the file parses cleanly has none)."""
    return error_count(_checker(language).parse(source))


def _nested_statement(
    syntax: SyntaxTree, byte_offset: int, line_prefix: str, inserted: bytes
) -> Node | None:
    """What to check on its own in an indented language (to the end of the cursor's line
    if it ends before): the innermost statement that starts its line, holds the code
    before the cursor and begins at or left of every line the insertion makes, so lines
    that step back out of the cursor's block stay in it. A method of a big class is
    checked without the class: the whole file's incremental parse, or the class's, costs
    far more. None when that statement is too big, or broken: errors cut out of their
    context count differently (an unterminated string swallows what follows it, in the
    file or in the piece)."""
    deepest = len(line_prefix) - len(line_prefix.lstrip(" \t"))
    for line in inserted.split(b"\n")[1:]:
        if line.strip():
            deepest = min(deepest, _indent_width(line))
    blank = not line_prefix.strip()
    search_from = (
        byte_offset - len(line_prefix.encode("utf-8", "surrogatepass")) if blank else byte_offset
    )
    # Only code before the cursor is read, and only where it starts (its end is the line's
    # at least): a row just made by Enter needs no reparse.
    path = _path_to_code_before(syntax, syntax.tree_before(byte_offset).root_node, search_from)
    for depth in range(len(path) - 1, 0, -1):
        node = path[depth]
        if (
            path[depth - 1].type in STATEMENT_PARENTS
            and node.start_point.column <= deepest
            and _starts_its_line(syntax, node)
        ):
            too_big = max(node.end_byte, byte_offset) - node.start_byte > STANDALONE_LIMIT
            return None if too_big or node.has_error else node
    return None


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
    """The same check for a huge statement: parse incrementally from a copy of the tree
    with the text spliced in (one copy of the bytes: a read callback would leak them all,
    see `Document.utf8`)."""
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
