"""Costs bounded by design, not by file shape: walks over trees thousands of levels deep,
parses off the event loop, outlines of many open documents, a line of megabytes."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from tree_sitter import Node

from lsp_spark import workspace as workspace_module
from lsp_spark.documents import Document, PositionEncoding, _split_lines
from lsp_spark.syntax import boundaries, outline, walks
from lsp_spark.syntax.trees import (
    CHEAP_FIRST_PARSE_BYTES,
    CHEAP_PARSE_SECONDS,
    SyntaxStore,
    SyntaxTree,
)
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.workspace import KEPT_TREES, OUTLINES_PER_PAUSE, Workspace
from tests.conftest import (
    LoopClock,
    StartSpark,
    cerebras_options,
    inline,
    open_document,
    type_text,
)

DEPTH = 1000


def syntax_of(text: str, uri: str = "file:///deep.py") -> SyntaxTree:
    syntax = SyntaxStore().open(Document(uri, "python", 1, text))
    assert syntax is not None
    return syntax


def deep_source() -> str:
    """A comment inside `DEPTH` nested parentheses: a tree as deep as an unclosed call
    makes the rest of a file."""
    return "x = " + "(\n" * DEPTH + "# deep note\n1" + ")" * DEPTH + "\n"


def depth_of(root: Node, node: Node) -> int:
    depth, cursor = 0, root.walk()
    while cursor.goto_first_child_for_byte(node.start_byte) is not None:
        depth += 1
        if cursor.node == node:
            break
    return depth


@pytest.fixture
def counted_ancestors(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many nodes each walk up a tree visits, in `outline` and `boundaries`."""
    visits: list[int] = []

    def counting(node: Node, limit: int = walks.MAX_ANCESTORS) -> Iterator[Node]:
        visits.append(0)
        for parent in walks.ancestors(node, limit):
            visits[-1] += 1
            yield parent

    monkeypatch.setattr(outline, "ancestors", counting)
    return visits


def test_a_walk_up_stops_after_a_few_steps_however_deep_the_tree() -> None:
    syntax = syntax_of(deep_source())
    leaf = syntax.tree.root_node.descendant_for_byte_range(DEPTH * 2 + 10, DEPTH * 2 + 10)
    assert leaf is not None and depth_of(syntax.tree.root_node, leaf) > DEPTH
    assert len(list(walks.ancestors(leaf))) < DEPTH // 10
    shallow = syntax_of("x = 1\n").tree.root_node.descendant_for_byte_range(4, 4)
    assert shallow is not None
    assert [node.type for node in walks.ancestors(shallow)] == [
        "assignment",
        "expression_statement",
        "module",
    ]


def test_the_cursor_region_deep_in_a_tree_visits_a_bounded_number_of_nodes(
    counted_ancestors: list[int],
) -> None:
    text = deep_source()
    syntax = syntax_of(text)
    in_comment = text.index("# deep note") + 6
    after_it = text.index("1)")
    assert outline.cursor_region(syntax, in_comment) == "comment"
    assert outline.cursor_region(syntax, after_it) == "code"
    assert counted_ancestors and max(counted_ancestors) < DEPTH // 10


def test_the_top_level_statement_is_found_one_step_down() -> None:
    text = "import os\n" + deep_source() + "y = 2\n"
    root = syntax_of(text).tree.root_node
    deep = walks.top_level_at(root, text.index("# deep note"))
    assert deep is not None and deep.type == "expression_statement"
    assert deep.start_byte == len("import os\n")
    last = walks.top_level_at(root, text.index("y = 2"))
    assert last is not None and last.start_byte == text.index("y = 2")
    assert walks.top_level_at(root, len(text)) is None


def test_statement_starts_deep_in_a_tree_are_still_found() -> None:
    text = deep_source() + "y = 2\n"
    syntax = syntax_of(text)
    last_row = text.count("\n") - 1
    assert boundaries.starts_statement(syntax, last_row)
    assert not boundaries.starts_statement(syntax, DEPTH // 2)


def test_counting_errors_stops_after_a_bounded_number_of_nodes() -> None:
    broken = "".join(f"def f{n}(:\n    pass\n" for n in range(200))
    tree = syntax_of(broken).tree
    assert outline.error_count(tree) > 10
    assert outline.errors_in(tree.root_node, limit=10) <= 10


def test_a_big_first_parse_or_a_bracket_typed_in_a_big_file_is_not_cheap() -> None:
    text = "value = compute(1)\n" * (CHEAP_FIRST_PARSE_BYTES // 10)
    files = Workspace()
    uri = "file:///big.py"
    files.open(uri, "python", 1, text)
    syntax = files.tree(uri)
    assert syntax is not None and not syntax.cheap()
    assert files.cheap_tree(uri) is None
    syntax.refresh()
    assert files.cheap_tree(uri) is syntax
    files.change(uri, 2, [((5, 0), (5, 0), "x")], PositionEncoding.UTF16)
    assert syntax.cheap() == ((syntax.last_parse_seconds or 0.0) <= CHEAP_PARSE_SECONDS)
    files.change(uri, 3, [((5, 1), (5, 1), "(")], PositionEncoding.UTF16)
    assert not syntax.cheap() and files.cheap_tree(uri) is None
    small = Workspace()
    small.open("file:///small.py", "python", 1, "x = 1\n")
    small.change("file:///small.py", 2, [((0, 5), (0, 5), "(")], PositionEncoding.UTF16)
    assert small.cheap_tree("file:///small.py") is not None


async def test_a_costly_parse_waits_for_a_pause_in_typing(loop_clock: LoopClock) -> None:
    text = "value = compute(1)\n" * (CHEAP_FIRST_PARSE_BYTES // 10)
    files = Workspace()
    uri = "file:///big.py"
    files.open(uri, "python", 1, text)
    files.change(uri, 2, [((5, 0), (5, 0), "(")], PositionEncoding.UTF16)
    syntax = files.tree(uri)
    assert syntax is not None and not syntax.current
    await loop_clock.advance(workspace_module.OUTLINE_REFRESH_DELAY)
    if files._refreshing is not None:
        await files._refreshing
    assert not syntax.current and uri not in files.outlines  # typing has not paused enough
    await loop_clock.advance(workspace_module.IDLE_PARSE_SECONDS)
    assert files._refreshing is not None
    await files._refreshing
    assert syntax.current and uri in files.outlines


async def test_outlines_of_many_documents_refresh_a_few_per_pause_and_drop_their_trees(
    loop_clock: LoopClock,
) -> None:
    files = Workspace()
    count = OUTLINES_PER_PAUSE * 3
    for index in range(count):
        files.open(f"file:///many/m{index}.py", "python", 1, f"def f{index}(a):\n    return a\n")
    await loop_clock.advance(workspace_module.OUTLINE_REFRESH_DELAY)
    assert files._refreshing is not None
    await files._refreshing
    assert len(files.outlines) == OUTLINES_PER_PAUSE
    await loop_clock.advance(workspace_module.OUTLINE_REFRESH_DELAY)
    assert files._refreshing is not None
    await files._refreshing
    assert len(files.outlines) == 2 * OUTLINES_PER_PAUSE
    holding = [
        uri
        for uri in (f"file:///many/m{index}.py" for index in range(count))
        if (syntax := files.tree(uri)) is not None and syntax._tree is not None
    ]
    assert len(holding) <= 1  # only the document opened last was touched


def test_trees_are_kept_for_the_documents_touched_last_only() -> None:
    files = Workspace()
    uris = [f"file:///kept/m{index}.py" for index in range(KEPT_TREES + 5)]
    for uri in uris:
        files.open(uri, "python", 1, "x = 1\n")
        syntax = files.tree(uri)
        assert syntax is not None
        syntax.refresh()
    holding = [uri for uri in uris if files.syntax.get(uri)._tree is not None]  # type: ignore[union-attr]
    assert holding == uris[-KEPT_TREES:]


def test_an_outline_keeps_at_most_its_cap_of_definitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace_module, "MAX_OUTLINE_DEFINITIONS", 5)
    files = Workspace()
    text = "".join(f"def f{n}(a):\n    return a\n" for n in range(50))
    files.open("file:///capped.py", "python", 1, text)
    files.refresh_outline("file:///capped.py")
    names = [definition.name for definition in files.outlines["file:///capped.py"].definitions]
    assert names == ["f0", "f1", "f2", "f3", "f4"]


_LINE_PATTERN = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


@pytest.mark.parametrize(
    "text", ["", "a", "a\n", "a\nb", "\n\n", "a\r\nb\rc\n", "x" * 100_000 + "\n", "\r", "é\n"]
)
def test_lines_split_on_exactly_the_lsp_terminators(text: str) -> None:
    expected = _LINE_PATTERN.findall(text) or [""]
    if expected[-1][-1:] in ("\r", "\n"):
        expected.append("")
    assert _split_lines(text) == expected


UNCLOSED_FILE_LINES = 16_000


def sixteen_thousand_lines() -> tuple[str, int]:
    """A 16,000-line file, and a blank indented row in the middle of a function."""
    rows = []
    for index in range(UNCLOSED_FILE_LINES // 4):
        rows += [
            f"def step_{index}(value, other):",
            f"    total = helper(value, other) + {index}",
            "    return total * 2",
            "",
        ]
    middle = len(rows) // 2 + 2
    rows.insert(middle, "    ")
    return "\n".join(rows) + "\n", middle


async def test_a_16k_line_file_with_an_unclosed_call_gets_ghost_text_with_its_context(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    text, row = sixteen_thousand_lines()
    cerebras.config.default_reply = "value)"
    client = await start_spark(cerebras_options(cerebras, cache=False))
    uri = open_document(client, text, uri="file:///work/long.py")
    column = 4
    for version, char in enumerate("helper(x", start=2):
        type_text(client, uri, version, row, column, char)
        column += 1
        result = await inline(client, uri, row, column)
        assert result is not None
    prompt = cerebras.completion_requests[-1].body["messages"][-1]["content"]
    assert f"    total = helper(value, other) + {(row - 2) // 4}\n" in prompt
    assert "    helper(x" in prompt
    assert f"def step_{(row - 2) // 4 + 1}(value, other):" in prompt
    assert [item.insert_text for item in result.items] == ["value)"]
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats is not None
