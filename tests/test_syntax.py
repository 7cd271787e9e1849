"""Tests for syntax trees, the grammar registry, the query files and the outline functions."""

from __future__ import annotations

import difflib
import re
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import tree_sitter_python
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Node, Parser, Tree

from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.languages import PROFILES
from lsp_spark.syntax import grammars
from lsp_spark.syntax.grammars import (
    QUERY_NAMES,
    QueryName,
    language_for,
    query_for,
    query_source,
)
from lsp_spark.syntax.outline import (
    cursor_region,
    definitions,
    enclosing_scopes,
    error_count,
    imports,
)
from lsp_spark.syntax.trees import SyntaxStore, SyntaxTree
from tests.conftest import edit_tree

UTF16 = PositionEncoding.UTF16
UTF32 = PositionEncoding.UTF32
CURSOR = "‸"


def open_syntax(language_id: str, text: str) -> SyntaxTree:
    syntax = SyntaxStore().open(Document(f"file:///t/{language_id}", language_id, 1, text))
    assert syntax is not None
    return syntax


def at_cursor(language_id: str, marked: str) -> tuple[SyntaxTree, int]:
    """The syntax of ``marked`` without its cursor mark, and the mark's byte offset."""
    offset = marked.index(CURSOR)
    syntax = open_syntax(language_id, marked.replace(CURSOR, "", 1))
    return syntax, syntax.document.byte_offset_at(offset)


def shape(tree: Tree) -> list[tuple[str, int, int, bool]]:
    """Every node's type, byte range and whether it is missing, in document order."""
    found = []
    pending: list[Node] = [tree.root_node]
    while pending:
        node = pending.pop()
        found.append((node.type, node.start_byte, node.end_byte, node.is_missing))
        pending.extend(reversed(node.children))
    return found


# --- trees --------------------------------------------------------------------------------

PYTHON_SEED = '''import os

class Shape(Base):
    """A shape."""

    def area(self, w: int) -> int:
        # note: "quoted"
        return w * 2  # done

def main():
    print(f"{os.name}: ok")
'''
JS_SEED = "class A {\n  m(x) {\n    return `a${x}b`; // c\n  }\n}\nconst f = (a) => a + 1;\n"
SNIPPETS = (
    "\n",
    "    ",
    "x",
    "def ",
    "(",
    ")",
    ":",
    '"',
    "'''",
    "#",
    "é",
    "🎉",
    "\r\n",
    "}",
    "{",
    "`",
)


@st.composite
def edit_sequences(draw: st.DrawFn) -> tuple[str, str, list[tuple[float, float, str, bool]]]:
    language_id, seed = draw(st.sampled_from([("python", PYTHON_SEED), ("javascript", JS_SEED)]))
    steps = draw(
        st.lists(
            st.tuples(
                st.floats(0, 1),
                st.floats(0, 0.2),
                st.lists(st.sampled_from(SNIPPETS), max_size=3).map("".join),
                st.booleans(),
            ),
            min_size=1,
            max_size=10,
        )
    )
    return language_id, seed, steps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences())
def test_incremental_reparse_matches_a_fresh_parse(
    case: tuple[str, str, list[tuple[float, float, str, bool]]],
) -> None:
    """Valid text gets exactly a fresh parse's tree. Where the text has errors, tree-sitter's
    incremental error recovery may differ from a fresh parse's (it does so from plain bytes
    too), so there the tree must match tree-sitter's own incremental parse of the bytes."""
    language_id, seed, steps = case
    syntax = open_syntax(language_id, seed)
    document = syntax.document
    parser = Parser(syntax.language)
    syntax.tree  # noqa: B018 - parse once, so later edits go through Tree.edit
    from_bytes = parser.parse(seed.encode())
    for where, length, text, look in steps:
        size = len(document.text)
        start = int(where * size)
        end = min(size, start + int(length * size))
        edit = document.apply_change(
            document.position_at(start, UTF16), document.position_at(end, UTF16), text, UTF16
        )
        syntax.edit(edit)
        edit_tree(from_bytes, edit)
        if look:  # sometimes several edits wait for one reparse, sometimes not
            from_bytes = parser.parse(document.text.encode(), from_bytes)
            assert shape(syntax.tree) == shape(from_bytes)
    from_bytes = parser.parse(document.text.encode(), from_bytes)
    assert shape(syntax.tree) == shape(from_bytes)
    fresh = parser.parse(document.text.encode())
    if not fresh.root_node.has_error:
        assert str(syntax.tree.root_node) == str(fresh.root_node)
        assert shape(syntax.tree) == shape(fresh)


VALID_VARIANTS = {
    "python": [
        PYTHON_SEED,
        PYTHON_SEED.replace("return w * 2", "total = w * 2\n        return total"),
        PYTHON_SEED.replace('"""A shape."""', '"""A shape, with an area."""\n\n    SIDES = 4'),
        PYTHON_SEED.replace("def main():", "async def run(argv: list[str]) -> None:"),
        "import sys\n\n" + PYTHON_SEED.split("def main")[0],
    ],
    "javascript": [
        JS_SEED,
        JS_SEED.replace("return `a${x}b`;", "const y = x * 2;\n    return `a${y}b`;"),
        JS_SEED.replace("class A {", "export default class Cart extends Base {"),
        "import { b } from './b.js';\n" + JS_SEED.replace("a + 1", "{ return b(a); }"),
    ],
}


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(sorted(VALID_VARIANTS)).flatmap(
        lambda language_id: st.tuples(
            st.just(language_id),
            st.sampled_from(VALID_VARIANTS[language_id]),
            st.sampled_from(VALID_VARIANTS[language_id]),
        )
    ),
    st.lists(st.booleans(), min_size=1, max_size=8),
)
def test_typing_through_broken_code_back_to_valid_code_matches_a_fresh_parse(
    case: tuple[str, str, str], looks: list[bool]
) -> None:
    """Type one valid text into another, character by character, reparsing now and then:
    the broken states in between must leave no trace in the final tree."""
    language_id, source, target = case
    syntax = open_syntax(language_id, source)
    document = syntax.document
    syntax.tree  # noqa: B018
    steps = 0
    opcodes = difflib.SequenceMatcher(None, source, target, autojunk=False).get_opcodes()
    for tag, start, end, target_start, target_end in reversed(opcodes):
        if tag == "equal":
            continue
        syntax.edit(
            document.apply_change(
                document.position_at(start, UTF16), document.position_at(end, UTF16), "", UTF16
            )
        )
        for offset, char in enumerate(target[target_start:target_end], start):
            position = document.position_at(offset, UTF16)
            syntax.edit(document.apply_change(position, position, char, UTF16))
            steps += 1
            if looks[steps % len(looks)]:
                syntax.tree  # noqa: B018
    assert document.text == target
    fresh = Parser(syntax.language).parse(target.encode())
    assert not fresh.root_node.has_error
    assert shape(syntax.tree) == shape(fresh)


def test_reparse_is_lazy_and_bumps_the_version() -> None:
    syntax = open_syntax("python", "x = 1\n")
    assert syntax.version == 0  # nothing parsed until asked
    tree = syntax.tree
    assert syntax.version == 1 and syntax.tree is tree
    for column in range(3):
        syntax.edit(syntax.document.apply_change((1, column), (1, column), "y", UTF16))
    assert syntax.version == 1
    assert str(syntax.tree.root_node) == str(Parser(syntax.language).parse(b"x = 1\nyyy").root_node)
    assert syntax.version == 2


def code_nodes(tree: Tree, before: int) -> list[tuple[str, int, tuple[int, int], bool]]:
    """Each node holding code before byte `before`: its type, start and whether it has errors."""
    return [
        (kind, start, point, error)
        for kind, start, point, error in (
            (node.type, node.start_byte, node.start_point, node.has_error)
            for node in nodes_of(tree)
        )
        if start < before
    ]


def nodes_of(tree: Tree) -> Iterator[Node]:
    pending: list[Node] = [tree.root_node]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(node.children))


REAL_CODE = Path(textwrap.__file__).read_text(encoding="utf-8")


def press_enter(syntax: SyntaxTree, row: int, indent: str) -> tuple[int, int]:
    """Enter and `indent` at the end of `row` (edited, not reparsed): where the insertion
    starts, and the cursor's byte after it."""
    document = syntax.document
    column = len(document.line(row).rstrip("\r\n"))
    edit = document.apply_change((row, column), (row, column), "\n" + indent, UTF32)
    syntax.edit(edit)
    return edit.start_byte, edit.new_end_byte


@pytest.mark.parametrize("keep_rest", [False, True])
def test_after_enter_below_valid_code_its_nodes_are_read_without_a_reparse(
    keep_rest: bool,
) -> None:
    lines = REAL_CODE.split("\n")
    checked = reused = 0
    for row in range(3, len(lines) - 1, 9):
        text = "\n".join(lines if keep_rest else lines[:row])
        syntax = open_syntax("python", text)
        valid = not syntax.tree.root_node.has_error
        line = lines[row - 1]
        if not line.strip() or line.rstrip().endswith("\\"):
            continue
        start, cursor = press_enter(syntax, row - 1, line[: len(line) - len(line.lstrip())])
        version = syntax.version
        stale = syntax.tree_before(cursor)
        fresh = Parser(syntax.language).parse(syntax.document.utf8)
        assert code_nodes(stale, start) == code_nodes(fresh, start)
        assert (syntax.version == version) == valid
        checked, reused = checked + 1, reused + valid
    assert reused > checked / 3


def test_the_edited_tree_is_not_read_inside_the_blank_space_or_after_another_edit() -> None:
    syntax = open_syntax("python", "def f():\n    x = 1\n    y = 2\n")
    syntax.tree  # noqa: B018
    start, _ = press_enter(syntax, 1, "    ")
    syntax.tree_before(start + 1)
    assert syntax.version == 2
    start, cursor = press_enter(syntax, 3, "    ")
    syntax.tree_before(cursor)
    syntax.tree_before(start)
    assert syntax.version == 2
    syntax.edit(syntax.document.apply_change((4, 4), (4, 4), "z", UTF16))
    syntax.tree_before(cursor)
    assert syntax.version == 3


@pytest.mark.parametrize(
    ("language_id", "text", "row", "indent"),
    [
        ("python", "def f(:\n    x = 1\n", 1, "    "),  # below broken code
        ("javascript", "let x = 1;\n", 0, ""),  # where blank lines may mean something
    ],
)
def test_the_tree_is_reparsed_below_broken_code_or_where_blank_lines_may_count(
    language_id: str, text: str, row: int, indent: str
) -> None:
    syntax = open_syntax(language_id, text)
    syntax.tree  # noqa: B018
    _, cursor = press_enter(syntax, row, indent)
    syntax.tree_before(cursor)
    assert syntax.version == 2


def test_whole_document_replacement() -> None:
    store = SyntaxStore()
    document = Document("file:///a.py", "python", 1, "def f():\n    pass\n")
    syntax = store.open(document)
    assert syntax is not None
    syntax.tree  # noqa: B018
    store.change(document.uri, [document.apply_change(None, None, "class C:\n    x = 1\n", UTF16)])
    assert str(syntax.tree.root_node) == str(
        Parser(syntax.language).parse(b"class C:\n    x = 1\n").root_node
    )


def test_store_tracks_documents_with_a_grammar_only() -> None:
    store = SyntaxStore()
    assert store.open(Document("file:///notes.txt", "plaintext", 1, "hello")) is None
    assert store.get("file:///notes.txt") is None
    store.change("file:///never-opened.py", [])  # harmless
    document = Document("file:///a.py", "py", 1, "x = 1\n")
    syntax = store.open(document)
    assert syntax is not None and syntax.language_id == "python"
    assert store.get(document.uri) is syntax
    store.close(document.uri)
    assert store.get(document.uri) is None


# --- grammar registry ---------------------------------------------------------------------


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """Grammar lookups are cached; a test that fakes packages must not leak into others."""
    language_for.cache_clear()
    yield
    language_for.cache_clear()


def test_unknown_language_has_no_grammar(fresh_registry: None) -> None:
    assert language_for("no-such-language") is None
    assert language_for("../../etc") is None
    assert query_for("no-such-language", "scopes") is None


def fake_pack(name: str, grammars_by_name: dict[str, Language]) -> types.ModuleType:
    module = types.ModuleType(name)

    def get_language(language_name: str) -> Language:
        if language_name not in grammars_by_name:
            raise LookupError(language_name)
        return grammars_by_name[language_name]

    module.get_language = get_language  # type: ignore[attr-defined]
    return module


def test_language_pack_is_consulted_after_the_official_wheels(
    fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in = Language(tree_sitter_python.language())
    pack = fake_pack("tree_sitter_language_pack", {"kotlin": stand_in, "python": stand_in})
    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", pack)
    monkeypatch.setattr(grammars, "_installed_version", {"tree-sitter-language-pack": "0.13.0"}.get)
    assert language_for("kotlin") is stand_in
    assert language_for("python") is not stand_in  # the official wheel comes first
    assert language_for("haskell") is None  # not in this pack either


def test_language_pack_1x_is_refused(fresh_registry: None, monkeypatch: pytest.MonkeyPatch) -> None:
    pack = fake_pack(
        "tree_sitter_language_pack", {"kotlin": Language(tree_sitter_python.language())}
    )
    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", pack)
    monkeypatch.setattr(grammars, "_installed_version", {"tree-sitter-language-pack": "1.0.2"}.get)
    assert language_for("kotlin") is None


def test_tree_sitter_languages_failing_on_new_tree_sitter_is_skipped(
    fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = types.ModuleType("tree_sitter_languages")

    def get_language(name: str) -> Language:
        raise TypeError("__init__() takes exactly 1 argument (2 given)")  # as on 0.22+

    module.get_language = get_language  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tree_sitter_languages", module)
    monkeypatch.setattr(grammars, "_installed_version", {"tree-sitter-languages": "1.10.2"}.get)
    assert language_for("kotlin") is None


# --- query files --------------------------------------------------------------------------

CAPTURES = {
    "scopes": {"scope", "scope.body"},
    "imports": {"import"},
    "definitions": {"definition", "name"},
}
QUERY_DIRECTORIES = {profile.id: profile.queries for profile in PROFILES if profile.queries}
TEXT_PREDICATES = {
    f"#{negation}{scope}{test}?"
    for negation in ("", "not-")
    for scope in ("", "any-")
    for test in ("eq", "match", "any-of")
}


@pytest.mark.parametrize("language_id", sorted(QUERY_DIRECTORIES))
@pytest.mark.parametrize("name", QUERY_NAMES)
def test_every_query_compiles_with_the_contract_captures(language_id: str, name: QueryName) -> None:
    query = query_for(language_id, name)
    assert query is not None
    names = {query.capture_name(index) for index in range(query.capture_count)}
    assert {name for name in names if not name.startswith("_")} == CAPTURES[name]
    if name != "imports":
        kinds = [query.pattern_settings(index).get("kind") for index in range(query.pattern_count)]
        assert all(kinds), "every scope and definition pattern names its kind with #set!"


def top_level_patterns(source: str) -> list[list[str]]:
    """The query's top-level patterns as token lists (strings whole, comments dropped)."""
    patterns: list[list[str]] = []
    depth = 0
    for token in re.findall(r'"(?:\\.|[^"\\])*"|;[^\n]*|[()\[\]]|[^\s()\[\]";]+', source):
        if token.startswith(";"):
            continue
        if depth == 0 and (token in "([" or not patterns):
            patterns.append([])
        patterns[-1].append(token)
        depth += token in ("(", "[")
        depth -= token in (")", "]")
    return patterns


def test_pattern_splitting_sees_a_misplaced_set() -> None:
    [pattern] = top_level_patterns('((a) @x (#match? @x "^(") (#set! kind "k"))  ; (#set!')
    assert pattern.index("#set!") > pattern.index("#match?")


@pytest.mark.parametrize("directory", sorted(set(QUERY_DIRECTORIES.values())))
@pytest.mark.parametrize("name", QUERY_NAMES)
def test_set_directives_come_before_text_predicates(directory: str, name: QueryName) -> None:
    """py-tree-sitter 0.26.1 crashes freeing a query whose ``#set!`` follows ``#match?``."""
    for pattern in top_level_patterns(query_source(directory, name)):
        predicates = [index for index, token in enumerate(pattern) if token in TEXT_PREDICATES]
        if predicates:
            assert "#set!" not in pattern[predicates[0] :], " ".join(pattern)


# --- enclosing scopes ---------------------------------------------------------------------


def headers(language_id: str, marked: str) -> list[tuple[str, str]]:
    syntax, offset = at_cursor(language_id, marked)
    return [(scope.kind, scope.header) for scope in enclosing_scopes(syntax, offset)]


def test_python_class_and_method() -> None:
    source = (
        "class Shape(Base):\n"
        "    @property\n"
        "    def area(self, w: int) -> int:\n"
        "        return w‸ * 2\n"
        "\n"
        "def other():\n"
        "    pass\n"
    )
    assert headers("python", source) == [
        ("class", "class Shape(Base):"),
        ("function", "def area(self, w: int) -> int:"),
    ]


def test_python_scope_ranges_and_body() -> None:
    syntax, offset = at_cursor("python", "def f(a‸):\n    return a\n")
    [scope] = enclosing_scopes(syntax, offset)
    assert (scope.start_byte, scope.end_byte, scope.body_start_byte) == (0, 22, 14)


def test_python_blank_indented_line_belongs_to_the_block_it_is_indented_into() -> None:
    method = "class A:\n    def f(self):\n        x = 1\n"
    assert [kind for kind, _ in headers("python", method + "        ‸\n")] == ["class", "function"]
    assert [kind for kind, _ in headers("python", method + "        x‸")] == ["class", "function"]
    assert [kind for kind, _ in headers("python", method + "    ‸\n")] == ["class"]
    assert headers("python", method + "‸\n") == []


def test_python_long_signature_is_joined_into_one_line() -> None:
    source = "def area(\n    self,\n    width: int,\n    height: int,\n) -> int:\n    return ‸0\n"
    assert headers("python", source) == [
        ("function", "def area(self, width: int, height: int,) -> int:")
    ]


def test_javascript_class_method() -> None:
    source = "class Cart extends Base {\n  total(items) {\n    return ‸items.length;\n  }\n}\n"
    assert headers("javascript", source) == [
        ("class", "class Cart extends Base {"),
        ("method", "total(items) {"),
    ]
    assert headers("javascript", source.replace("‸", "") + "‸") == []


def test_go_method() -> None:
    source = (
        "package main\n\nfunc (s *Server) Handle(w http.ResponseWriter) error {\n\treturn ‸nil\n}\n"
    )
    assert headers("go", source) == [
        ("method", "func (s *Server) Handle(w http.ResponseWriter) error {")
    ]


def test_rust_impl_fn() -> None:
    source = "impl Shape for Square {\n    fn area(&self) -> f64 {\n        self.side‸\n    }\n}\n"
    assert headers("rust", source) == [
        ("impl", "impl Shape for Square {"),
        ("function", "fn area(&self) -> f64 {"),
    ]


def test_c_function() -> None:
    source = "#include <stdio.h>\n\nstatic int area(int w, int h) {\n    return w * ‸h;\n}\n"
    assert headers("c", source) == [("function", "static int area(int w, int h) {")]


def test_java_method() -> None:
    source = (
        "public class Shapes {\n"
        "    @Override\n"
        "    public int area(int w) throws Oops {\n"
        "        return ‸w;\n"
        "    }\n"
        "}\n"
    )
    assert headers("java", source) == [
        ("class", "public class Shapes {"),
        ("method", "@Override\npublic int area(int w) throws Oops {"),
    ]


def test_cpp_template_shares_its_class_body() -> None:
    source = "namespace ns {\ntemplate <typename T>\nclass Box {\n  T get() { return ‸v; }\n};\n}\n"
    assert headers("cpp", source) == [
        ("namespace", "namespace ns {"),
        ("template", "template <typename T>\nclass Box {"),
        ("function", "T get() {"),
    ]


def test_ruby_empty_method_is_a_scope_by_its_first_line() -> None:
    syntax, offset = at_cursor("ruby", "class Foo\n  def bar(a)\n    ‸\n  end\nend\n")
    scopes = enclosing_scopes(syntax, offset)
    assert [(scope.header, scope.body_start_byte) for scope in scopes][-1] == ("def bar(a)", None)


def test_language_without_queries_has_no_scopes() -> None:
    syntax, offset = at_cursor("json", '{"a": [1, ‸2]}')
    assert enclosing_scopes(syntax, offset) == []
    assert imports(syntax) == [] and definitions(syntax) == []


# --- imports and definitions --------------------------------------------------------------


def test_python_imports_and_definitions() -> None:
    syntax = open_syntax("python", PYTHON_SEED + "MAX_SIZE = 10\nhelper = 3\ntype Id = int\n")
    assert imports(syntax) == [(0, 9, "import os")]
    assert [(d.kind, d.name, d.signature) for d in definitions(syntax)] == [
        ("class", "Shape", "class Shape(Base):"),
        ("method", "area", "def area(self, w: int) -> int:"),
        ("function", "main", "def main():"),
        ("constant", "MAX_SIZE", "MAX_SIZE = 10"),
        ("type", "Id", "type Id = int"),
    ]


def test_typescript_imports_and_definitions() -> None:
    source = (
        'import { a } from "./a";\n'
        "import type { B } from 'b';\n"
        'const fs = require("fs");\n'
        "export interface Shape { area(): number }\n"
        "export type Id = string;\n"
        "export class Square implements Shape {\n"
        "  area(): number { return 1; }\n"
        "}\n"
        "export const double = (x: number): number => {\n  return 2 * x;\n};\n"
        "const LIMIT = 3;\n"
    )
    syntax = open_syntax("typescript", source)
    assert [text for _, _, text in imports(syntax)] == [
        'import { a } from "./a";',
        "import type { B } from 'b';",
        'const fs = require("fs");',
    ]
    assert [(d.kind, d.name, d.signature) for d in definitions(syntax)] == [
        ("interface", "Shape", "interface Shape {"),
        ("method", "area", "area(): number"),
        ("type", "Id", "type Id = string;"),
        ("class", "Square", "class Square implements Shape {"),
        ("method", "area", "area(): number {"),
        ("function", "double", "const double = (x: number): number => {"),
        ("constant", "LIMIT", "const LIMIT = 3;"),
    ]


def test_go_imports_and_definitions() -> None:
    source = (
        "package main\n\n"
        'import "fmt"\n'
        'import (\n\t"net/http"\n)\n\n'
        "const Max = 3\n"
        "type Server struct {\n\taddr string\n}\n"
        "type (\n\tID int\n\tStore interface {\n\t\tGet() error\n\t}\n)\n"
        "func (s *Server) Handle(w http.ResponseWriter) error {\n\treturn nil\n}\n"
        "func New() *Server { return nil }\n"
    )
    syntax = open_syntax("go", source)
    assert [text for _, _, text in imports(syntax)] == [
        'import "fmt"',
        'import (\n\t"net/http"\n)',
    ]
    assert [(d.kind, d.name, d.signature) for d in definitions(syntax)] == [
        ("constant", "Max", "const Max = 3"),
        ("struct", "Server", "type Server struct {"),
        ("type", "ID", "ID int"),
        ("interface", "Store", "Store interface {"),
        ("method", "Handle", "func (s *Server) Handle(w http.ResponseWriter) error {"),
        ("function", "New", "func New() *Server {"),
    ]


def test_import_ranges_match_their_text() -> None:
    syntax = open_syntax("c", '#include <stdio.h>\n#include "é.h"\nint x;\n')
    source = syntax.document.text.encode()
    for start, end, text in imports(syntax):
        assert source[start:end].decode() == text
    assert [text for _, _, text in imports(syntax)] == ["#include <stdio.h>", '#include "é.h"']


def test_outline_is_cached_per_tree_version() -> None:
    syntax = open_syntax("python", "def f():\n    pass\n")
    first = definitions(syntax)
    assert definitions(syntax) == first
    syntax.edit(syntax.document.apply_change((0, 4), (0, 5), "g", UTF16))
    assert [d.name for d in definitions(syntax)] == ["g"]


# --- cursor region ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language_id", "marked", "region"),
    [
        ("python", "x = 1  # a note‸\ny = 2\n", "comment"),
        ("python", "x = 1  # a no‸te\n", "comment"),
        ("python", "x = 1  # a note\n‸y = 2\n", "code"),
        ("python", 'def f():\n    """Doc‸string."""\n', "string"),
        ("python", 'x = "abc"‸\n', "code"),
        ("python", 'x = ‸"abc"\n', "code"),
        ("python", 'x = f"a{b‸}c"\n', "code"),
        ("python", 'x = f"a{b}‸c"\n', "string"),
        ("python", "x = y‸ + 1\n", "code"),
        ("javascript", "const s = `total: ${n‸}`;\n", "code"),
        ("javascript", "const s = `tot‸al: ${n}`;\n", "string"),
        ("javascript", "/* block */‸\n", "code"),
        ("javascript", "/* blo‸ck */\n", "comment"),
        ("javascript", "f(); // trailing‸", "comment"),
        ("typescript", "const s: string = 'a‸b';\n", "string"),
        ("go", 'package main\n\nvar s = "unterminated‸', "string"),
        ("rust", "/// doc‸\nfn f() {}\n", "comment"),
        ("rust", "/// doc\n‸fn f() {}\n", "code"),
        ("c", 'int main() { puts("hi‸"); }\n', "string"),
        ("lua", "--[[ block ]]‸\n", "code"),
        ("lua", "-- line‸\n", "comment"),
        ("shellscript", 'echo "hi $(da‸te)"\n', "code"),
        ("shellscript", 'echo "hi th‸ere"\n', "string"),
        ("ruby", 'x = "a#{b‸}c"\n', "code"),
    ],
)
def test_cursor_region(language_id: str, marked: str, region: str) -> None:
    syntax, offset = at_cursor(language_id, marked)
    assert cursor_region(syntax, offset) == region


# --- errors -------------------------------------------------------------------------------


def test_error_count() -> None:
    parser = Parser(language_for("python"))
    assert error_count(parser.parse(PYTHON_SEED.encode())) == 0
    assert error_count(parser.parse(b"def f(:\n    pass\n")) > 0
    assert error_count(Parser(language_for("javascript")).parse(b"call(1, 2")) > 0
