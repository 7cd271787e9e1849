"""Typing along a row reuses what the context builder read for it, and nothing stale leaks."""

from __future__ import annotations

import pytest

from lsp_spark.context.budget import Budget
from lsp_spark.context.builder import BuiltContext, ContextOptions, build_context
from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.syntax.outline import cursor_region, ends_in_code, stays_code
from lsp_spark.syntax.trees import SyntaxTree
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


def test_a_row_made_by_enter_reads_other_files_again_but_not_the_tree() -> None:
    workspace = workspace_with()
    syntax = workspace.tree(URI)
    assert syntax is not None
    built(workspace, ROW, 4)
    type_at(workspace, ROW, 4, "x = helper(1)")
    workspace.open(OTHER, "python", 1, "def helper(value):\n    return value\n")
    workspace.refresh_outline(OTHER)
    type_at(workspace, ROW, 17, "\n    ", version=3)
    tree_version = syntax.version
    after = built(workspace, ROW + 1, 4)
    assert syntax.version == tree_version, "the row above's reading was moved down"
    assert "def helper(value):" in after.related


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


def opened(language: str, text: str) -> tuple[Workspace, Document, SyntaxTree]:
    workspace = Workspace()
    uri = f"file:///project/case.{language}"
    workspace.open(uri, language, 1, text)
    document = workspace.documents.get(uri)
    syntax = workspace.tree(uri)
    assert document is not None and syntax is not None
    return workspace, document, syntax


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
    ("python", "def f():\n    pass\n", """x = f("a", 'b') + g("c\\"d", e)  # "q"""),
    ("python", "", "t = '''a''' + 'b' + ''.join(u)"),
    ("javascript", "", """const s = 'a' + "b" + `c ${d}` + 'e'; // "f"""),
    ("c", "", """char q = '"'; puts("x\\n"); /* 'y' */ int z;"""),
    ("go", "", """s := "a" + string('b') + `c`"""),
    ("shellscript", "", """echo "$a" 'b' "c" # 'd'"""),
    ("rust", "", """let s: &'static str = "a"; let c = 'b';"""),
]


@pytest.mark.parametrize(("language", "above", "typed"), REGION_CASES)
def test_the_cursor_is_called_code_without_the_tree_only_when_the_tree_agrees(
    language: str, above: str, typed: str
) -> None:
    workspace, document, syntax = opened(language, above)
    uri = document.uri
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


def retype(
    language: str, text: str, first: int, last: int, budget: int = 600, every: int = 1
) -> tuple[int, int, list[int]]:
    """Delete rows [first, last) of `text`, then type them back as an editor would: Enter
    brings the row's indentation, then the rest of the row arrives. At every `every`th new
    row (the others answered from memory) the context is built, then built again with
    nothing remembered (the full read), and the two must agree. Returns how many new rows
    were read from a row above without the tree, how many were read in full, and the rows
    read in full."""
    lines = text.split("\n")
    workspace, document, syntax = opened(language, "\n".join(lines[:first] + lines[last:]))
    uri = document.uri
    workspace.refresh_outline(uri)
    options = ContextOptions(budget=Budget(budget), max_lines=8)
    version, row, column = 1, first - 1, len(lines[first - 1])
    derived, full, full_rows = 0, 0, []
    assert build_context(workspace, document, row, column, options) is not None
    for number, line in enumerate(lines[first:last]):
        indent = line[: len(line) - len(line.lstrip())]
        version += 1
        at = (row, column)
        workspace.change(uri, version, [(at, at, "\n" + indent)], PositionEncoding.UTF16)
        row, column = row + 1, len(indent)
        if number % every:
            if rest := line[len(indent) :]:
                version += 1
                workspace.change(
                    uri, version, [((row, column),) * 2 + (rest,)], PositionEncoding.UTF16
                )
                column += len(rest)
            continue
        tree_version, top = syntax.version, workspace.window_tops.get(uri)
        quick = build_context(workspace, document, row, column, options)
        if syntax.version == tree_version:
            derived += 1
        else:
            full += 1
            full_rows.append(row)
        remembered = workspace.row_contexts.pop(uri)
        if top is not None:
            workspace.window_tops[uri] = top
        fresh = build_context(workspace, document, row, column, options)
        assert (quick is None) == (fresh is None), line
        if quick is not None and fresh is not None:
            assert quick.window.prefix == fresh.window.prefix, line
            assert quick.window.suffix == fresh.window.suffix, line
            assert (quick.related, quick.sources) == (fresh.related, fresh.sources), line
            assert quick.cursor.multiline == fresh.cursor.multiline, line
        workspace.row_contexts[uri] = remembered
        if rest := line[len(indent) :]:
            version += 1
            at = (row, column)
            workspace.change(uri, version, [(at, at, rest)], PositionEncoding.UTF16)
            column += len(rest)
            build_context(workspace, document, row, column, options)
    return derived, full, full_rows


def test_a_row_made_by_enter_reads_what_a_full_read_would_without_the_tree() -> None:
    import textwrap

    with open(textwrap.__file__, encoding="utf-8") as source:
        text = source.read()
    lines = text.split("\n")
    start = next(n for n, line in enumerate(lines) if "def _wrap_chunks" in line) + 1
    end = next(n for n, line in enumerate(lines) if "def _split_chunks" in line)
    derived, full, _ = retype("python", text, start, end)
    # Comments, docstrings, blank lines and dedents are read in full; the rest are not.
    assert derived > 0.3 * (derived + full) and full > 0, (derived, full)
    # Rows answered from memory in between (nothing read for them) change nothing.
    derived, full, _ = retype("python", text, start, end, every=3)
    assert derived > 0 and full > 0, (derived, full)


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


def test_a_row_after_a_brace_a_string_or_a_dedent_into_code_below_is_read_in_full() -> None:
    derived, _, full_rows = retype("javascript", JS_TEXT, 6, 13, budget=2048)
    assert derived > 0
    # After `sum += price;` the next row steps back; after `}` a scope closed.
    assert {10, 11} <= set(full_rows), full_rows
    # After `return 1` the row steps back out of a block whose text ended there: known
    # without the tree. After a string with an escape the tree must say where the row
    # starts; after a line comment or a plain closed string it need not.
    python = 'def f(x):\n    if x:\n        return 1\n    y = "\\n"\n    z = x # n\n    return y\n'
    _, _, full_rows = retype("python", python, 2, 6, budget=2048)
    assert full_rows == [4], full_rows
    # Stepping back to a method's column while its body goes on below.
    python = "class C:\n    def m(self):\n        a = 1\n    x = 2\n        b = 3\n"
    _, _, full_rows = retype("python", python, 2, 4, budget=2048)
    assert full_rows == [3], full_rows


END_CASES = [
    ("python", "x = 1  # a comment", True),
    ("python", 'y = "#" # c', True),
    ("python", "self.state = ' '  # it's", True),
    ("python", """raise ValueError("Expecting ',' delimiter")""", True),
    ("python", "s = '''doc # not a comment", False),
    ("python", '"""a"', False),
    ("python", r"x = 'a\'b", False),
    ("python", "total = a + \\", False),
    ("javascript", "let v = w / 2 // c", False),
    ("javascript", """const s = 'a' + "b"; // c""", True),
    ("javascript", "const t = `a // b", False),
    ("c", "int a; // c /* d", True),
    ("c", """char q = '"'; // quote""", True),
    ("c", "int b; // continued \\", False),
    ("cpp", "/* open // still", False),
    ("go", "x := 1 // done", True),
    ("shellscript", 'echo "$HOME" # c', True),
    ("rust", 'let s = "a"; // c', True),
    ("rust", """let x: &'a T = "x'""", False),
]


@pytest.mark.parametrize(("language", "line", "expected"), END_CASES)
def test_the_next_row_is_called_code_without_the_tree_only_when_the_tree_agrees(
    language: str, line: str, expected: bool
) -> None:
    _, document, syntax = opened(language, f"{line}\nnext\n")
    next_start = document.byte_offset_at(document.offset_at(1, 0, PositionEncoding.UTF32))
    assert ends_in_code(language, True, line) is expected
    if expected:
        assert cursor_region(syntax, next_start) == "code", (language, line)
