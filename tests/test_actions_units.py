"""The pure parts of code actions: reading the model's reply, indentation, diffs, targets,
test-file names, review findings, requests and prompts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from lsprotocol import types

from lsp_spark.actions.catalog import fix_title, rewrites_for, wanted
from lsp_spark.actions.diffing import apply, line_ending, region_edits
from lsp_spark.actions.findings import Finding, parse_findings
from lsp_spark.actions.prompting import EditTask, ReviewTask, WriteTestsTask, build_messages, fenced
from lsp_spark.actions.requests import ActionRequest, ClientSupport
from lsp_spark.actions.rewrite import block_closed, extract_code, reindent, restore_redacted
from lsp_spark.actions.targets import functions, target_at
from lsp_spark.actions.testfiles import test_file_for as find_test_file
from lsp_spark.workspace import Workspace

# --- the code in a reply ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("```python\nx = 1\n```", "x = 1"),
        ("Here is the code:\n\n```py\nx = 1\ny = 2\n```\n\nThis adds y.", "x = 1\ny = 2"),
        ("```\nx = 1\n", "x = 1"),
        ("~~~go\nfunc f() {}\n~~~", "func f() {}"),
        ("```js\na()\n```\nUsage:\n```js\nb()\nc()\n```", "b()\nc()"),
        ("x = 1\ny = 2", "x = 1\ny = 2"),
        ("Sure, here is the updated code:\nx = 1\n", "x = 1"),
        ("<think>the user wants x</think>```python\nx = 1\n```", "x = 1"),
        ("```python\r\nx = 1\r\n```\r\n", "x = 1"),
        ("```python\n\n\nx = 1\n\n```", "x = 1"),
        ("```python\n```", ""),
        ("", ""),
    ],
    ids=[
        "fence",
        "prose-around",
        "unclosed",
        "tildes",
        "largest-block",
        "bare",
        "bare-preamble",
        "thinking",
        "crlf",
        "blank-lines",
        "empty-block",
        "empty",
    ],
)
def test_extract_code(reply: str, code: str) -> None:
    assert extract_code(reply) == code


def test_a_fence_inside_an_indented_docstring_does_not_end_the_block() -> None:
    reply = '```python\ndef f():\n    """Use it:\n    ```\n    f()\n    ```\n    """\n```'
    assert extract_code(reply).endswith('    ```\n    """')


@pytest.mark.parametrize(
    ("reply", "closed"),
    [
        ("```py\nx = 1\n```\n", True),
        ("Sure:\n```py\nx = 1\n```\nIt sets x.", True),
        ("```py\nx = 1\n```", False),
        ("```py\nx = 1\n", False),
        ("````py\nx = '```'\n```\n", False),
        ("<think>```\na\n```\n", False),
        ("x = 1\n", False),
    ],
    ids=[
        "closed",
        "commentary",
        "fence-line-unfinished",
        "open",
        "longer-fence",
        "thinking",
        "bare",
    ],
)
def test_block_closed_says_when_the_answer_is_in(reply: str, closed: bool) -> None:
    assert block_closed(reply) is closed


# --- indentation ---------------------------------------------------------------------------


def test_reindent_restores_the_scope_indentation_the_model_dropped() -> None:
    old = ["    def f(self):", "        return 1"]
    assert reindent(["def f(self):", "    return 2"], old) == [
        "    def f(self):",
        "        return 2",
    ]


def test_reindent_fixes_only_the_first_line_when_only_it_lost_its_indentation() -> None:
    old = ["    def f(self):", "        return 1"]
    assert reindent(["def f(self):", "        return 2"], old) == [
        "    def f(self):",
        "        return 2",
    ]


def test_reindent_turns_spaces_into_the_files_tabs() -> None:
    old = ["func f() {", "\treturn 1", "}"]
    new = ["func f() {", "    if x {", "        return 2", "    }", "}"]
    assert reindent(new, old) == ["func f() {", "\tif x {", "\t\treturn 2", "\t}", "}"]


def test_reindent_leaves_matching_indentation_and_blank_lines_alone() -> None:
    old = ["  a()", "", "  b()"]
    assert reindent(["  a()", "   ", "  c()"], old) == ["  a()", "", "  c()"]
    assert reindent(["a()", "", "c()"], old) == ["  a()", "", "  c()"]


def test_lines_repeated_with_a_redaction_placeholder_get_the_files_secret_back() -> None:
    old = ['    key = "sk-live-1234"', '    url = "https://u:hunter2@host"', "    call(key)"]
    new = [
        '    key = "<redacted:token>"',
        '    url = "https://u:<redacted:url-password>@host"',
        "    call(key, <redacted:token>)",
    ]
    assert restore_redacted(new, old) == [*old[:2], "    call(key, <redacted:token>)"]


# --- diffs -----------------------------------------------------------------------------------


def test_region_edits_touch_only_changed_lines() -> None:
    old = "a\nb\nc\nd\n"
    edits = region_edits(old, ["a", "B", "c", "d", "e"], "\n")
    assert [(e.start, e.end, e.text) for e in edits] == [(2, 4, "B\n"), (8, 8, "e\n")]
    assert apply(old, edits) == "a\nB\nc\nd\ne\n"
    assert region_edits(old, ["a", "b", "c", "d"], "\n") == []


def test_region_edits_keep_crlf_and_untouched_terminators() -> None:
    old = "a\r\nb\r\nc\r\n"
    edits = region_edits(old, ["a", "x", "y", "c"], "\r\n")
    assert apply(old, edits) == "a\r\nx\r\ny\r\nc\r\n"
    assert all(edit.text.count("\n") == edit.text.count("\r\n") for edit in edits)


@pytest.mark.parametrize(
    ("new", "expected"),
    [(["a", "B"], "a\nB"), (["a", "b", "c"], "a\nb\nc"), (["a"], "a"), ([], "")],
    ids=["replace-last", "append", "delete-last", "delete-all"],
)
def test_region_edits_at_the_end_of_a_file_without_a_final_newline(
    new: list[str], expected: str
) -> None:
    assert apply("a\nb", region_edits("a\nb", new, "\n")) == expected


lines = st.lists(st.sampled_from(["", "a", "b", "  c", "d()", "}"]), max_size=8)


@given(old=lines.filter(bool), new=lines, eol=st.sampled_from(["\n", "\r\n"]), ended=st.booleans())
def test_region_edits_always_produce_the_rewrite(
    old: list[str], new: list[str], eol: str, ended: bool
) -> None:
    # Neither a region nor a rewrite ends in an empty unterminated line (blank ends are trimmed).
    assume(ended or (old[-1] and (not new or new[-1])))
    before = eol.join(old) + (eol if ended else "")
    expected = eol.join(new) + (eol if ended and new else "")
    assert apply(before, region_edits(before, new, eol)) == expected


def test_apply_uses_offsets_relative_to_the_region_start() -> None:
    assert apply("head\nb\n", region_edits("b\n", ["c"], "\n"), offset=5) == "head\nc\n"


def test_line_ending_is_the_first_terminator() -> None:
    assert line_ending("a\r\nb\n") == "\r\n"
    assert line_ending("no newline", "\r\n") == "\r\n"


# --- targets ---------------------------------------------------------------------------------

PYTHON = """import os


class Box:
    # a helper
    @staticmethod
    def make(size):
        return Box()

    def open(self):
        pass


def top(a):
    return a
"""


def opened(text: str, language: str, name: str = "example") -> tuple[object, object]:
    workspace = Workspace()
    uri = f"file:///work/{name}"
    return workspace.open(uri, language, 1, text), workspace.tree(uri)


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        ((7, 8), (4, 8, "function", "make")),
        ((6, 0), (4, 8, "function", "make")),
        ((10, 8), (9, 11, "function", "open")),
        ((3, 3), (3, 11, "class", "Box")),
        ((14, 4), (13, 15, "function", "top")),
        ((0, 2), (0, 1, "import_statement", None)),
    ],
    ids=["body", "header-start", "method", "class", "function", "statement"],
)
def test_target_is_the_innermost_scope_with_its_decorators_and_comments(
    at: tuple[int, int], expected: tuple[int, int, str, str | None]
) -> None:
    document, syntax = opened(PYTHON, "python")
    target = target_at(document, syntax, at)  # type: ignore[arg-type]
    assert target is not None
    assert (target.start_row, target.end_row, target.kind, target.name) == expected


def test_a_selection_is_its_lines_without_blank_ends() -> None:
    document, syntax = opened(PYTHON, "python")
    target = target_at(document, syntax, (8, 0), (11, 0))  # type: ignore[arg-type]
    assert target is not None and (target.start_row, target.end_row) == (9, 11)
    assert target.kind == "selection"
    assert target_at(document, syntax, (1, 0)) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("start", "end"),
    [((14, 4), (14, 5)), ((14, 5), (14, 4)), ((14, 12), (15, 0))],
    ids=["character", "reversed", "line-break"],
)
def test_a_one_character_range_is_a_cursor_in_the_scope_around_it(
    start: tuple[int, int], end: tuple[int, int]
) -> None:
    """A block cursor (Helix's) selects the character under it: at a line's end, its line
    break."""
    document, syntax = opened(PYTHON, "python")
    target = target_at(document, syntax, start, end)  # type: ignore[arg-type]
    assert target is not None
    assert (target.start_row, target.end_row, target.kind, target.name) == (
        13,
        15,
        "function",
        "top",
    )


def test_two_characters_of_a_line_select_that_line() -> None:
    document, syntax = opened(PYTHON, "python")
    target = target_at(document, syntax, (14, 4), (14, 6))  # type: ignore[arg-type]
    assert target is not None and (target.start_row, target.end_row) == (14, 15)
    assert target.kind == "selection"


@pytest.mark.parametrize(
    ("language", "text", "at", "expected"),
    [
        (
            "go",
            "package p\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
            (4, 1),
            (2, 6, "Add"),
        ),
        (
            "rust",
            "/// Adds.\n#[inline]\nfn add(a: i32) -> i32 {\n    a\n}\n",
            (3, 4),
            (0, 5, "add"),
        ),
        ("typescript", "const f = (a: number) => {\n  return a;\n};\n", (1, 2), (0, 3, "f")),
        ("javascript", "class K {\n  m() {\n    return 1;\n  }\n}\n", (2, 4), (1, 4, "m")),
    ],
    ids=["go", "rust", "typescript-arrow", "javascript-method"],
)
def test_targets_in_other_languages(
    language: str, text: str, at: tuple[int, int], expected: tuple[int, int, str]
) -> None:
    document, syntax = opened(text, language)
    target = target_at(document, syntax, at)  # type: ignore[arg-type]
    assert target is not None
    assert (target.start_row, target.end_row, target.name) == expected
    assert target.is_function


def test_functions_are_the_outermost_functions_and_methods() -> None:
    text = (
        "def outer():\n    def inner():\n        pass\n\n\n"
        "class C:\n    def m(self):\n        pass\n"
    )
    _, syntax = opened(text, "python")
    found = functions(syntax)  # type: ignore[arg-type]
    assert [(f.start_row, f.end_row) for f in found] == [(0, 3), (6, 8)]
    assert found[1].text == "def m(self):\n        pass"


# --- test files ------------------------------------------------------------------------------


def exists_among(*paths: str):  # type: ignore[no-untyped-def]
    known = {Path(path) for path in paths}
    return lambda path: path in known


@pytest.mark.parametrize(
    ("source", "language", "present", "expected"),
    [
        ("/r/pkg/mod.py", "python", ("/r/tests",), "/r/tests/test_mod.py"),
        ("/r/pkg/mod.py", "python", (), "/r/pkg/test_mod.py"),
        ("/r/pkg/mod.py", "python", ("/r/pkg/test_mod.py", "/r/tests"), "/r/pkg/test_mod.py"),
        ("/r/src/app.ts", "typescript", (), "/r/src/app.test.ts"),
        ("/r/src/app.jsx", "javascriptreact", ("/r/src/app.spec.jsx",), "/r/src/app.spec.jsx"),
        (
            "/r/src/app.js",
            "javascript",
            ("/r/src/__tests__/app.test.js",),
            "/r/src/__tests__/app.test.js",
        ),
        ("/r/calc.go", "go", (), "/r/calc_test.go"),
        ("/r/src/lib.rs", "rust", (), "/r/src/lib.rs"),
    ],
)
def test_test_file_names_follow_each_convention(
    source: str, language: str, present: tuple[str, ...], expected: str
) -> None:
    found = find_test_file(Path(source), language, Path("/r"), exists_among(*present))
    assert found is not None and found.path == Path(expected)
    assert found.same_file == (language == "rust")


@pytest.mark.parametrize(
    ("source", "language"),
    [
        ("/r/tests/test_mod.py", "python"),
        ("/r/app.test.ts", "typescript"),
        ("/r/calc_test.go", "go"),
        ("/r/Main.java", "java"),
    ],
)
def test_test_files_and_unknown_languages_get_no_test_file(source: str, language: str) -> None:
    assert find_test_file(Path(source), language, Path("/r"), exists_among()) is None


def test_python_tests_import_the_module_by_its_path_under_the_root() -> None:
    found = find_test_file(Path("/r/src/pkg/mod.py"), "python", Path("/r"), exists_among())
    assert found is not None and found.module == "pkg.mod"


# --- review findings -------------------------------------------------------------------------


def test_findings_are_read_from_json_in_any_wrapping() -> None:
    reply = (
        'Findings:\n```json\n{"findings": [{"function": 2, "line": 3, "kind": "SQL injection",'
        ' "message": "  concatenated   query "}, {"function": 1, "line": 1, "kind": "style",'
        ' "message": "x"}, {"function": 9, "line": 1, "kind": "weak-crypto",'
        ' "message": "md5"}]}\n```'
    )
    assert parse_findings(reply, 2) == {
        1: [],
        2: [Finding(3, "sql-injection", "concatenated query")],
    }
    assert parse_findings('[{"line": 2, "kind": "hardcoded_secret"}]', 1) == {
        1: [Finding(2, "hard-coded-secret", "hard coded secret")]
    }
    assert parse_findings("I found nothing worrying.", 2) == {1: [], 2: []}
    assert parse_findings(
        '{"findings": [{"function": 1, "line": true, "kind": "weak-crypto"}]}', 1
    ) == {1: []}


# --- requests, prompts, catalog ----------------------------------------------------------------


def test_requests_round_trip_through_data_and_reject_bad_arguments() -> None:
    request = ActionRequest("file:///a.py", "fix", (3, 4), (3, 4), diagnostic={"message": "m"})
    assert ActionRequest.from_data(request.data()) == request
    argument = {
        "uri": "file:///a.py",
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 5}},
        "instruction": "  add logging ",
    }
    parsed = ActionRequest.from_instruction(argument)
    assert parsed is not None
    assert (parsed.start, parsed.end, parsed.instruction) == ((1, 0), (2, 5), "add logging")
    assert ActionRequest.from_instruction({**argument, "instruction": " "}) is None
    assert ActionRequest.from_instruction({**argument, "range": {"start": {}}}) is None
    assert ActionRequest.from_instruction([argument]) is None
    assert ActionRequest.from_data({"action": "fix"}) is None


def test_only_a_client_known_to_wait_on_resolve_is_taken_to_block_it() -> None:
    """Helix resolves a code action on its UI thread: progress created meanwhile would begin
    only once the edit is done, so none is created for its resolves."""
    capabilities = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True)
    )
    helix = ClientSupport.of(capabilities, types.ClientInfo("helix", "25.07.1 (079a789e)"))
    assert helix.progress and helix.blocks_on_resolve
    for other in (types.ClientInfo("Visual Studio Code", "1.99.0"), types.ClientInfo("Neovim")):
        assert not ClientSupport.of(capabilities, other).blocks_on_resolve
    assert not ClientSupport.of(capabilities).blocks_on_resolve


def test_edit_prompts_carry_the_instruction_and_predict_the_scope() -> None:
    task = EditTask("python", "pkg/a.py", "add logging", 'x = "```"', before="import os")
    outbound = build_messages(task)
    user = outbound.messages[-1]["content"]
    assert "Instruction: add logging" in user and "import os" in user
    assert outbound.prediction == fenced('x = "```"', "python")
    assert outbound.prediction.startswith("````python\n")
    assert outbound.messages[0]["role"] == "system"


def test_rust_tests_go_in_a_module_of_their_own_in_the_same_file() -> None:
    task = WriteTestsTask(
        "rust", "lib.rs", "fn add() {}", "add", "lib.rs", "fn add() {}", same_file=True
    )
    user = build_messages(task).messages[-1]["content"]
    assert "mod tests_add" in user and "so far" not in user


def test_review_prompts_number_functions_and_lines() -> None:
    outbound = build_messages(ReviewTask("go", "a.go", ("func a() {\n}", "func b() {}")))
    user = outbound.messages[-1]["content"]
    assert "Function 1:\n```go\n1| func a() {\n2| }\n```" in user
    assert "Function 2:" in user and outbound.prediction is None


def test_catalog_filters_and_titles() -> None:
    assert wanted("refactor.rewrite", ["refactor"]) and not wanted("refactor.rewrite", ["quickfix"])
    assert wanted("quickfix", None) and not wanted("refactorx", ["refactor"])
    assert fix_title("bad\nthing", "lsp-spark") == "Fix with lsp-spark: bad"
    assert fix_title("x" * 100, "pyright").endswith("…")
    assert "Add type annotations" not in [a.title for a in rewrites_for("go")]
    assert "Add type annotations" in [a.title for a in rewrites_for("python")]
