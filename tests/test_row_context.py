"""Typing along a row reuses what the context builder read for it, and nothing stale leaks."""

from __future__ import annotations

from lsp_spark.context.budget import Budget
from lsp_spark.context.builder import BuiltContext, ContextBuilder, ContextOptions
from lsp_spark.documents import PositionEncoding
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


class Project:
    """`TEXT` open in a workspace, with the builder the server would use for it."""

    def __init__(self) -> None:
        self.workspace = Workspace()
        self.document = self.workspace.open(URI, "python", 1, TEXT)
        self.workspace.refresh_outline(URI)
        self.builder = ContextBuilder(self.workspace)

    def type_at(self, row: int, column: int, text: str, version: int = 2) -> None:
        at = (row, column)
        self.workspace.change(URI, version, [(at, at, text)], PositionEncoding.UTF16)

    def built(self, row: int, column: int) -> BuiltContext:
        context = self.builder.build(self.document, row, column, OPTIONS)
        assert context is not None
        return context


def test_the_rows_around_are_read_once_while_typing_along_a_row() -> None:
    project = Project()
    first = project.built(ROW, 4)
    project.type_at(ROW, 4, "x")
    second = project.built(ROW, 5)
    assert second.window.surroundings is first.window.surroundings
    assert second.window.prefix == first.window.prefix + "x"
    assert second.window.suffix == first.window.suffix


def test_an_edit_to_another_row_is_seen_at_once() -> None:
    project = Project()
    project.built(ROW, 4)
    project.type_at(6, 4, "old_")
    after = project.built(ROW, 4)
    assert "    old_path = os.getcwd()\n" in after.window.prefix
    project.type_at(8, 4, "#", version=3)
    assert "\n    #print(path)" in project.built(ROW, 4).window.suffix


def test_a_new_line_above_is_seen_at_once() -> None:
    project = Project()
    project.built(ROW, 4)
    project.type_at(6, 0, "    seed = 1\n")
    after = project.built(ROW + 1, 4)
    assert after.window.prefix.endswith("\n    seed = 1\n    path = os.getcwd()\n    ")


def test_a_name_typed_on_the_row_brings_its_definition() -> None:
    project = Project()
    assert "def scale" not in project.built(ROW, 4).related
    project.type_at(ROW, 4, "result = sca")
    # The definition is in the window itself, so it is not repeated; from another file it is.
    project.workspace.open(
        OTHER, "python", 1, "def rescale(values, low, high):\n    return values\n"
    )
    project.workspace.refresh_outline(OTHER)
    assert "rescale" not in project.built(ROW, 16).related
    project.type_at(ROW, 16, " + re", version=3)
    project.type_at(ROW, 21, "scale(", version=4)
    assert "def rescale(values, low, high):" in project.built(ROW, 27).related


def test_a_row_made_by_enter_reads_other_files_again() -> None:
    project = Project()
    project.built(ROW, 4)
    project.type_at(ROW, 4, "x = helper(1)")
    project.workspace.open(OTHER, "python", 1, "def helper(value):\n    return value\n")
    project.workspace.refresh_outline(OTHER)
    project.type_at(ROW, 17, "\n    ", version=3)
    assert "def helper(value):" in project.built(ROW + 1, 4).related


def test_an_edit_in_another_document_refreshes_related_code() -> None:
    project = Project()
    workspace = project.workspace
    workspace.open(OTHER, "python", 1, "LIMIT = 1\n\n\n\nvalue = 2\n")
    workspace.change(OTHER, 2, [((4, 0), (4, 0), "other_")], PositionEncoding.UTF16)
    before = project.built(ROW, 4)
    assert "other_value = 2" in before.related
    workspace.change(OTHER, 3, [((4, 0), (4, 6), "renamed_")], PositionEncoding.UTF16)
    after = project.built(ROW, 4)
    assert "renamed_value = 2" in after.related
    assert "other_value" not in after.related


def test_a_closed_document_is_forgotten() -> None:
    project = Project()
    first = project.built(ROW, 4)
    project.builder.forget(URI)
    assert project.built(ROW, 4).window.surroundings is not first.window.surroundings


def retype(language: str, text: str, first: int, last: int) -> int:
    """Delete rows [first, last) of `text`, then type them back as an editor would: Enter
    brings the row's indentation, then the rest of the row arrives one character at a time.
    After each keystroke the context is built with what the builder remembers, and again by
    a builder that remembers nothing: the two must agree. Returns how many builds kept the
    row's reading."""
    lines = text.split("\n")
    workspace = Workspace()
    uri = f"file:///project/case.{language}"
    document = workspace.open(uri, language, 1, "\n".join(lines[:first] + lines[last:]))
    workspace.refresh_outline(uri)
    builder = ContextBuilder(workspace)
    # The whole file fits, so the window's top is row 0 for both builders.
    options = ContextOptions(budget=Budget(8192), max_lines=8)
    version, row, column = 1, first - 1, len(lines[first - 1])
    kept, previous = 0, None
    for line in lines[first:last]:
        indent = line[: len(line) - len(line.lstrip())]
        keys = ["\n" + indent, *line[len(indent) :]]
        for key in keys:
            version += 1
            at = (row, column)
            workspace.change(uri, version, [(at, at, key)], PositionEncoding.UTF16)
            row, column = (row + 1, len(indent)) if key[0] == "\n" else (row, column + 1)
            quick = builder.build(document, row, column, options)
            fresh = ContextBuilder(workspace).build(document, row, column, options)
            assert (quick is None) == (fresh is None), line
            if quick is None or fresh is None:
                continue
            assert quick.window == fresh.window, line
            assert (quick.related, quick.sources) == (fresh.related, fresh.sources), line
            assert quick.cursor.multiline == fresh.cursor.multiline, line
            if previous is not None and quick.window.surroundings is previous:
                kept += 1
            previous = quick.window.surroundings
    return kept


def test_typing_along_rows_reads_what_a_full_read_would() -> None:
    import textwrap

    with open(textwrap.__file__, encoding="utf-8") as source:
        text = "\n".join(source.read().split("\n")[:360])
    lines = text.split("\n")
    start = next(n for n, line in enumerate(lines) if "def _wrap_chunks" in line) + 1
    assert retype("python", text, start, start + 40) > 300


JS_TEXT = """class Cart {
  constructor(items) {
    this.items = items;
  }

  total(rate) {
    let sum = 0;
    for (const item of this.items) {
      const price = item.price * item.count;
      sum += price;
    }
    return sum * (1 + rate);
  }
}
"""


def test_typing_along_rows_of_braces_reads_what_a_full_read_would() -> None:
    assert retype("javascript", JS_TEXT, 6, 13) > 50


def test_only_a_header_fits_above_deeper_code_where_indentation_is_syntax() -> None:
    workspace = Workspace()
    python = workspace.open(URI, "python", 1, "def f(x):\n    \n        return x\n")
    javascript = workspace.open(
        "file:///project/app.js", "javascript", 1, "function f(x) {\n  \n    return x;\n}\n"
    )
    below = workspace.open(OTHER, "python", 1, "def f(x):\n    \n    return x\n")
    builder = ContextBuilder(workspace)
    found = {}
    for document, column in ((python, 4), (javascript, 2), (below, 4)):
        built = builder.build(document, 1, column, OPTIONS)
        assert built is not None
        found[document.uri] = built.cursor.header_only
    assert found == {URI: True, "file:///project/app.js": False, OTHER: False}


def test_above_a_body_an_elif_follows_only_the_headers_it_can_follow_fit() -> None:
    workspace = Workspace()
    text = "def f(x):\n    \n        return 1\n    elif x:\n        return 2\n"
    document = workspace.open(URI, "python", 1, text)
    built = ContextBuilder(workspace).build(document, 1, 4, OPTIONS)
    assert built is not None
    assert built.cursor.header_only
    assert built.cursor.headers_that_fit == ("if", "elif")
