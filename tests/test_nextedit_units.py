"""Next-edit's stages alone: the edit history, the answer format, the minimal hunks."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from lsp_spark.backends import create_backend
from lsp_spark.backends.holder import BackendHolder
from lsp_spark.backends.local import LocalBackend
from lsp_spark.nextedit import history as history_module
from lsp_spark.nextedit.engine import UNOPENED_WITH_PROBLEMS, NextEditService
from lsp_spark.nextedit.history import CONTEXT_ROWS, EDITS_KEPT, ROWS_KEPT, Edit, EditHistory
from lsp_spark.nextedit.hunks import Hunk, hunks_between
from lsp_spark.nextedit.prompt import (
    CURSOR,
    LineEdit,
    numbered,
    parse_answer,
    parse_edits,
    rewritten,
)
from lsp_spark.settings import Settings
from lsp_spark.stats import Stats
from lsp_spark.workspace import Workspace


def test_keystrokes_on_one_line_merge_into_one_edit_and_other_places_stay_apart() -> None:
    history = EditHistory()
    history.record("file:///a.py", 3, ["def f(width):"], ["def f(w):"])
    history.record("file:///a.py", 3, ["def f(w):"], ["def f(wi):"])
    history.record("file:///a.py", 4, ["    pass"], ["    return wi"])
    history.record("file:///a.py", 30, ["x = 1"], ["x = 2"])
    diffs = history.diffs({"file:///a.py": "a.py"})
    assert len(diffs) == 2
    assert diffs[0] == "\n".join(
        [
            "--- a/a.py",
            "+++ b/a.py",
            "@@ -4,2 +4,2 @@",
            "-def f(width):",
            "-    pass",
            "+def f(wi):",
            "+    return wi",
        ]
    )
    assert "@@ -31,1 +31,1 @@\n-x = 1\n+x = 2" in diffs[1]
    assert history.diffs({}) == [], "closed or excluded documents are not shown"


def test_an_edit_undone_by_typing_shows_no_diff() -> None:
    history = EditHistory()
    history.record("file:///a.py", 0, ["abc"], ["ab"])
    history.record("file:///a.py", 0, ["ab"], ["abc"])
    assert history.diffs({"file:///a.py": "a.py"}) == []


def _repeated_rows(count: int) -> list[str]:
    """One function over and over: the shape whose line diff costs most (lines repeat)."""
    block = [
        "def scale(value, factor):",
        "    if factor is None:",
        "        return value",
        "    return value * factor",
        "",
    ]
    return (block * (count // len(block) + 1))[:count]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The rows each diff the history writes is asked to compare."""
    compared: list[tuple[int, int]] = []

    def counting(isjunk: None, a: list[str], b: list[str], autojunk: bool) -> SequenceMatcher[str]:
        compared.append((len(a), len(b)))
        return SequenceMatcher(isjunk, a, b, autojunk)

    monkeypatch.setattr(history_module, "SequenceMatcher", counting)
    return compared


def test_a_whole_file_change_keeps_a_bounded_record_diffed_once_per_change(
    counted: list[tuple[int, int]],
) -> None:
    """`:%s` over 3,000 repeated lines, then keystrokes and a prediction after each: the
    record holds at most ROWS_KEPT rows a side, each diff compares no more, and only the
    record a keystroke changed is diffed again."""
    history = EditHistory()
    old = _repeated_rows(3000)
    new = [line.replace("value", "amount") for line in old]
    history.record("file:///a.py", 0, old, new)
    names = {"file:///a.py": "a.py"}
    [diff] = history.diffs(names)
    assert diff.splitlines()[2].startswith("@@ -1,")
    assert diff.splitlines()[3:5] == ["-def scale(value, factor):", "+def scale(amount, factor):"]
    assert diff.endswith("\n…"), "a cut record says there is more"
    row = 1500
    line = new[row]
    for typed in ("x", "y", "z"):
        history.record("file:///a.py", row, [line], [line + typed])
        line += typed
        history.diffs(names)
    assert history.rows() <= 2 * ROWS_KEPT + 2
    assert history.latest("file:///a.py") == Edit("file:///a.py", row, [new[row]], [line])
    assert all(max(rows) <= ROWS_KEPT for rows in counted), counted
    assert len(counted) == 1 + 3, "one diff per change, none for a record left as it was"


def test_a_whole_file_change_that_altered_one_line_is_recorded_as_that_line() -> None:
    """An editor sending the whole text for a keystroke, or a reload that changed one line."""
    history = EditHistory()
    old = _repeated_rows(3000)
    new = [*old[:1000], "def scale(amount, factor):", *old[1001:]]
    history.record("file:///a.py", 0, old, new)
    assert history.rows() == 2 * (1 + 2 * CONTEXT_ROWS)
    [diff] = history.diffs({"file:///a.py": "a.py"})
    assert "@@ -1000,3 +1000,3 @@" in diff
    assert "-def scale(value, factor):\n+def scale(amount, factor):" in diff
    history.record("file:///a.py", 0, new, new)
    assert history.latest("file:///a.py") is not None
    assert history.rows() == 2 * (1 + 2 * CONTEXT_ROWS), "a change that changed nothing"


def test_typing_a_long_block_line_by_line_splits_it_into_bounded_records() -> None:
    history = EditHistory()
    for row in range(3 * ROWS_KEPT):
        history.record("file:///a.py", row, [""], [f"x{row} = {row}", ""])
        assert history.rows() <= EDITS_KEPT * 2 * ROWS_KEPT
    latest = history.latest("file:///a.py")
    assert latest is not None
    assert len(latest.after) <= ROWS_KEPT
    assert sum(1 for _ in history.diffs({"file:///a.py": "a.py"})) >= 3


def test_the_region_is_numbered_with_the_cursor_marked() -> None:
    assert numbered(["def f(w):", "    return width"], 9, (9, 7)) == (
        f"10| def f(w{CURSOR}):\n11|     return width"
    )


def test_edit_blocks_become_row_edits_and_strays_are_dropped() -> None:
    answer = "\n".join(
        [
            "Here you go:",
            '<edit lines="11-11">',
            "    return w",
            "</edit>",
            '<edit after="12">',
            "x = 1",
            "</edit>",
            '<edit lines="40-41">',  # outside the region
            "nope",
            "</edit>",
            '<edit lines="12-12">',
            "</edit>",
        ]
    )
    edits = parse_edits(answer, 9, 13)
    assert edits == [LineEdit(10, 11, ("    return w",)), LineEdit(12, 12, ("x = 1",))]
    assert parse_edits('<edit lines="12-12">\n</edit>', 9, 13) == [LineEdit(11, 12, ())]
    lines = ["def f(w):", "    return width", "    pass", "y = 2"]
    assert rewritten(
        lines, 9, [LineEdit(10, 11, ("    return w",)), LineEdit(12, 12, ("x = 1",))]
    ) == [
        "def f(w):",
        "    return w",
        "    pass",
        "x = 1",
        "y = 2",
    ]


def test_blocks_that_repeat_the_line_numbers_lose_them() -> None:
    answer = '<edit lines="3-4">\n3|     a = 1\n4|     b = 2\n</edit>'
    assert parse_edits(answer, 0, 10) == [LineEdit(2, 4, ("    a = 1", "    b = 2"))]


def test_overlapping_blocks_keep_the_first() -> None:
    answer = '<edit lines="2-3">\na\n</edit><edit lines="3-3">\nb\n</edit>'
    assert parse_edits(answer, 0, 5) == [LineEdit(1, 3, ("a",))]


def test_a_rename_is_the_name_alone() -> None:
    assert hunks_between(["    return width * h"], ["    return w * h"], 7, False) == [
        Hunk(7, 11, 7, 16, "w")
    ]
    assert hunks_between(["f(a)"], ["f(a, b)"], 0, False) == [Hunk(0, 3, 0, 3, ", b")]


def _apply(lines: list[str], hunks: list[Hunk]) -> list[str]:
    text = "\n".join(lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    ordered = sorted(
        enumerate(hunks), key=lambda item: (item[1].start_row, item[1].start_column, item[0])
    )
    for _, hunk in reversed(ordered):
        begin = starts[hunk.start_row] + hunk.start_column
        end = starts[hunk.end_row] + hunk.end_column
        text = text[:begin] + hunk.text + text[end:]
    return text.split("\n")


@pytest.mark.parametrize("at_file_end", [True, False])
def test_hunks_rebuild_the_new_lines_exactly(at_file_end: bool) -> None:
    """Random line edits, at the region's end too, where the file may end without a break."""
    rng = random.Random(7)
    words = ["a", "bb", "ccc", "", "  x = 1", "y"]
    for _ in range(2000):
        old = [rng.choice(words) for _ in range(rng.randint(1, 5))]
        new = list(old)
        for _ in range(rng.randint(1, 3)):
            where = rng.randint(0, len(new))
            roll = rng.random()
            if roll < 0.3 and new:
                new[min(where, len(new) - 1)] = rng.choice(words) + "z"
            elif roll < 0.6:
                new.insert(where, rng.choice(words))
            elif new:
                del new[min(where, len(new) - 1)]
        if not new:
            continue
        tail = [] if at_file_end else ["the next line"]
        assert _apply(old + tail, hunks_between(old, new, 0, at_file_end)) == new + tail, (old, new)


def test_predictions_are_off_for_the_embedded_model_unless_asked_for() -> None:
    holder = BackendHolder(lambda message, error: None)
    holder.backend = LocalBackend()
    service = NextEditService(Workspace(), holder, Stats(), lambda document, row, column: "")
    assert not service.enabled
    holder.settings = Settings(next_edit=True)
    assert service.enabled
    holder.settings = Settings(backend="openai")
    holder.backend = create_backend(holder.settings)
    assert service.enabled
    holder.settings = Settings(backend="openai", next_edit=False)
    assert not service.enabled


REGION = ["", "def f(width):", "    return width", ""]


@pytest.mark.parametrize(
    "answer",
    [
        "```python\ndef f(w):\n    return w\n```",
        "11| def f(w):\n12|     return w\n",
        "import os\n\ndef f(w):\n    return w\n\nx = f(2)\n",
    ],
    ids=["region in a fence", "numbered region", "whole file"],
)
def test_an_answer_without_edit_blocks_is_read_as_the_region_written_again(answer: str) -> None:
    """Rows 9-12 of a file whose first rows are `import os`, blank, and whose last is
    `x = f(2)`; the region's blank rows at its ends are kept."""
    [edit] = (
        parse_answer(answer, 1, REGION, 1)
        if answer.startswith("import")
        else parse_answer(answer, 9, REGION, 1)
    )
    assert edit.lines == ("", "def f(w):", "    return w", "")


def test_an_answer_of_none_or_nothing_edits_nothing() -> None:
    assert parse_answer("<none/>", 9, REGION, 1) == []
    assert parse_answer("  \n", 9, REGION, 1) == []


def test_an_answer_unlike_the_region_is_not_taken_for_it() -> None:
    """A model that answers anything else (a completion, an explanation) edits nothing."""
    assert parse_answer("return a + b", 9, REGION, 1) == []
    assert parse_answer("The next edit renames width.", 9, REGION, 1) == []


def test_diagnostics_of_documents_never_opened_are_kept_for_a_few_only() -> None:
    """An editor reporting a whole project's diagnostics: those of open documents stay
    until the document closes, of the others only the newest UNOPENED_WITH_PROBLEMS."""
    workspace = Workspace()
    workspace.open("file:///open.py", "python", 1, "x = 1\n")
    holder = BackendHolder(lambda message, error: None)
    stats = Stats()
    service = NextEditService(workspace, holder, stats, lambda document, row, column: "")
    problem = {"range": {"start": {"line": 0, "character": 0}}, "message": "unused"}
    service.set_problems("file:///open.py", [problem])
    for index in range(10 * UNOPENED_WITH_PROBLEMS):
        service.set_problems(f"file:///never{index}.py", [problem] * 3)
        service.add_problems(f"file:///acted{index}.py", [problem])
    assert len(service.problems) == 1 + UNOPENED_WITH_PROBLEMS
    assert stats.next_edit.documents_with_problems == len(service.problems)
    assert service.problems["file:///open.py"] == [problem]
    assert f"file:///acted{10 * UNOPENED_WITH_PROBLEMS - 1}.py" in service.problems
    service.forget("file:///open.py")
    assert "file:///open.py" not in service.problems


@pytest.mark.parametrize("functions", [3, 3000], ids=["small-file", "large-file"])
def test_a_predicted_edit_that_adds_syntax_errors_is_found_at_any_file_size(
    functions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small file is checked whole; a large one (here about 130 KB) in the rows around the
    edit only, without ever building the file's text with the edit applied."""
    from lsp_spark.nextedit import hunks as hunks_module

    text = "".join(f"def f{n}(a, b):\n    return a + b\n\n" for n in range(functions))
    workspace = Workspace()
    document = workspace.open("file:///big.py", "python", 1, text)
    syntax = workspace.tree(document.uri)
    if functions > 100:
        assert document.byte_length > hunks_module.WHOLE_FILE_CHECK_BYTES

        def whole_text(*_: object) -> str:
            raise AssertionError("the whole file was rebuilt for the check")

        monkeypatch.setattr(hunks_module, "applied", whole_text)
    middle = 3 * (functions // 2) + 1
    broken = Hunk(middle, 11, middle, 16, "a + (b")
    fine = Hunk(middle, 11, middle, 16, "a * b")
    assert hunks_module.breaks_syntax(syntax, document, broken)
    assert not hunks_module.breaks_syntax(syntax, document, fine)
