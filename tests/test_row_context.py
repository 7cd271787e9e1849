"""Typing along a row reuses what the context builder read for it, and nothing stale leaks."""

from __future__ import annotations

import pytest

from lsp_spark.context.budget import Budget
from lsp_spark.context.builder import BuiltContext, ContextOptions, build_context
from lsp_spark.documents import PositionEncoding
from lsp_spark.syntax.outline import cursor_region, stays_code
from lsp_spark.workspace import Workspace

URI = "file:///project/app.py"
OTHER = "file:///project/helpers.py"
TEXT = (
    "import os\n"
    "\n"
    "def scale(values, factor):\n"
    "    return [v * factor for v in values]\n"
    "\n"
    "def main():\n"
    "    path = os.getcwd()\n"
    "    \n"
    "    print(path)\n"
)
ROW = 7
OPTIONS = ContextOptions(budget=Budget(2048), max_lines=8)


def workspace_with(text: str = TEXT) -> Workspace:
    workspace = Workspace()
    workspace.open(URI, "python", 1, text)
    workspace.refresh_outline(URI)
    return workspace


def type_at(workspace: Workspace, row: int, column: int, text: str, version: int = 2) -> None:
    workspace.change(URI, version, [((row, column), (row, column), text)], PositionEncoding.UTF16)


def built(workspace: Workspace, row: int, column: int) -> BuiltContext:
    document = workspace.documents.get(URI)
    assert document is not None
    context = build_context(workspace, document, row, column, OPTIONS)
    assert context is not None
    return context


def test_the_rows_around_are_read_once_while_typing_along_a_row() -> None:
    workspace = workspace_with()
    first = built(workspace, ROW, 4)
    type_at(workspace, ROW, 4, "x")
    second = built(workspace, ROW, 5)
    assert second.window.surroundings is first.window.surroundings
    assert second.window.prefix == first.window.prefix + "x"
    assert second.window.suffix == first.window.suffix


def test_an_edit_to_another_row_is_seen_at_once() -> None:
    workspace = workspace_with()
    built(workspace, ROW, 4)
    type_at(workspace, 6, 4, "old_")
    after = built(workspace, ROW, 4)
    assert "    old_path = os.getcwd()\n" in after.window.prefix
    type_at(workspace, 8, 4, "#", version=3)
    assert "\n    #print(path)" in built(workspace, ROW, 4).window.suffix


def test_a_new_line_above_is_seen_at_once() -> None:
    workspace = workspace_with()
    built(workspace, ROW, 4)
    type_at(workspace, 6, 0, "    seed = 1\n")
    after = built(workspace, ROW + 1, 4)
    assert after.window.prefix.endswith("\n    seed = 1\n    path = os.getcwd()\n    ")


def test_a_name_typed_on_the_row_brings_its_definition() -> None:
    workspace = workspace_with()
    assert "def scale" not in built(workspace, ROW, 4).related
    type_at(workspace, ROW, 4, "result = sca")
    # The definition is in the window itself, so it is not repeated; from another file it is.
    workspace.open(OTHER, "python", 1, "def rescale(values, low, high):\n    return values\n")
    workspace.refresh_outline(OTHER)
    assert "rescale" not in built(workspace, ROW, 16).related
    type_at(workspace, ROW, 16, " + re", version=3)
    type_at(workspace, ROW, 21, "scale(", version=4)
    assert "def rescale(values, low, high):" in built(workspace, ROW, 27).related


def test_an_edit_in_another_document_refreshes_related_code() -> None:
    workspace = workspace_with()
    workspace.open(OTHER, "python", 1, "LIMIT = 1\n\n\n\nvalue = 2\n")
    workspace.change(OTHER, 2, [((4, 0), (4, 0), "other_")], PositionEncoding.UTF16)
    before = built(workspace, ROW, 4)
    assert "other_value = 2" in before.related
    workspace.change(OTHER, 3, [((4, 0), (4, 6), "renamed_")], PositionEncoding.UTF16)
    after = built(workspace, ROW, 4)
    assert "renamed_value = 2" in after.related
    assert "other_value" not in after.related


# The cursor's region without the tree: whenever the shortcut says "code", the tree agrees.
REGION_CASES = [
    ("python", 'def f():\n    """Doc\n    more\n    """\n    x = 1\n', 'y = g("a") # c'),
    ("python", 's = """\n', "inside the string"),
    ("javascript", "const t = `\nline\n`;\n/* a\n b */\n", "let v = w / 2 // c"),
    ("typescript", "/*\n * block\n", "still a comment"),
    ("c", "#include <stdio.h>\n/* c\n */\nint x;\n", 'int y = 2; // "q"'),
    ("rust", 'fn f() {\n    let s = r#"\n', "raw string body"),
    ("go", "var s = `\n", "raw"),
    ("shellscript", "cat <<EOF\nhere\nEOF\n", "echo $HOME # c"),
]


@pytest.mark.parametrize(("language", "above", "typed"), REGION_CASES)
def test_the_cursor_is_called_code_without_the_tree_only_when_the_tree_agrees(
    language: str, above: str, typed: str
) -> None:
    workspace = Workspace()
    uri = f"file:///project/case.{language}"
    workspace.open(uri, language, 1, above)
    document = workspace.documents.get(uri)
    syntax = workspace.tree(uri)
    assert document is not None and syntax is not None
    row = document.line_count - 1
    line_start = document.byte_offset_at(document.offset_at(row, 0, PositionEncoding.UTF32))
    starts_in_code = cursor_region(syntax, line_start) == "code"
    for column, char in enumerate(typed, start=1):
        point = (row, column - 1)
        workspace.change(uri, column + 1, [(point, point, char)], PositionEncoding.UTF16)
        line_prefix = typed[:column]
        if stays_code(language, starts_in_code, line_prefix):
            cursor_byte = document.byte_offset_at(
                document.offset_at(row, column, PositionEncoding.UTF32)
            )
            assert cursor_region(syntax, cursor_byte) == "code", (language, line_prefix)
