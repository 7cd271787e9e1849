"""The names a blank line in a function is about to bind: what the code below reads before
anything binds it, found with Python's own parser."""

from __future__ import annotations

import pytest

from lsp_spark.context.budget import Budget
from lsp_spark.context.builder import ContextBuilder, ContextOptions
from lsp_spark.context.names import names_to_bind
from lsp_spark.languages import profile_for
from lsp_spark.syntax.names import python_names_read_before_bound
from lsp_spark.workspace import Workspace
from tests.test_row_context import OPTIONS

PYTHON = profile_for("python")


@pytest.mark.parametrize(
    ("code", "row", "names"),
    [
        ("def f(r):\n\n    return area + r\n", 1, {"area"}),
        ("def f(r):\n    area = r * r\n\n    return area\n", 2, set()),
        ("def f(xs):\n\n    for x in xs:\n        count += x\n    return count\n", 1, {"count"}),
        ("def f(xs):\n\n    for x in xs:\n        seen.append(x)\n", 1, {"seen"}),
        ("def f(xs):\n\n    found = False\n    return found\n", 1, set()),
        ("def f(xs):\n\n    total = total + 1\n", 1, {"total"}),
        ("def f(xs):\n\n    for x in xs:\n        out = [x] + out\n", 1, {"out"}),
        ("def f(xs):\n\n    for x in f(x):\n        print(x)\n", 1, {"x"}),
        ("def f(xs):\n\n    total = 0\n    total = total + 1\n", 1, set()),
        ("def f(r):\n\n    return [x for x in r if x > limit]\n", 1, {"limit"}),
        ("def f(r):\n\n    def g():\n        return total + r\n    return g\n", 1, {"total"}),
        ("def f(r):\n\n    return f(r - 1) + len(r)\n", 1, set()),
        ("def f(r):\n    import math\n\n    return math.pi\n", 2, set()),
        ("def f(r):\n\n    try:\n        pass\n    except E as e:\n        print(e)\n", 1, {"E"}),
        ("def f(r):\n\n    print(early)\n    early = 1\n", 1, {"early"}),
        ("def f(r):\n    print(early)\n\n    print(r)\n", 2, set()),
        ("def f(r:\n\n    return area\n", 1, set()),
        ("def f(xs):\n    \n        total += x\n    return total\n", 1, {"x", "total"}),
        ("def f(xs):\n    \n        print(x\n", 1, set()),
    ],
    ids=[
        "read-never-bound",
        "bound-above",
        "updated-in-a-loop-before-any-binding",
        "a-method-read-before-any-binding",
        "bound-below-before-the-read",
        "an-assignment-reads-its-value-before-it-binds",
        "read-on-the-right-in-a-loop",
        "a-loop-reads-its-iterable-before-it-binds",
        "bound-before-the-assignment-that-reads-it",
        "in-a-comprehension",
        "in-a-nested-function",
        "the-function-itself",
        "imported-above",
        "exception-names",
        "read-first-bound-later",
        "read-only-above",
        "does-not-parse",
        "the-body-of-a-header-still-to-come",
        "a-body-that-does-not-parse-either",
    ],
)
def test_python_names_read_before_bound(code: str, row: int, names: set[str]) -> None:
    assert python_names_read_before_bound(code, row) == names


def bind(prefix: str, suffix: str, before: str = "", after: str = "") -> tuple[str, ...]:
    document = before + prefix + suffix + after
    return names_to_bind(PYTHON, before + prefix, suffix + after, document)


def test_a_name_the_code_below_reads_and_nothing_binds_is_to_be_bound() -> None:
    assert bind("def area_of(l, b):\n    ", "\n    return area\n") == ("area",)


def test_names_bound_above_read_only_above_or_defined_elsewhere_are_not() -> None:
    prefix = "def f(values):\n    seen = set()\n    print(early)\n    "
    suffix = "\n    return helper(seen) + np.sum(values)\n"
    after = "\n\ndef helper(x):\n    return x\n"
    assert bind(prefix, suffix, before="import numpy as np\n", after=after) == ()


def test_a_name_that_appears_outside_the_window_counts_as_bound() -> None:
    prefix, suffix = "def f(values):\n    ", "\n    return scale * len(values)\n"
    assert names_to_bind(PYTHON, prefix, suffix, "scale = 2\n\n" + prefix + suffix) == ()


def test_a_counter_the_loop_below_updates_is_to_be_bound() -> None:
    prefix = "def count_even(values):\n    "
    suffix = "\n    for value in values:\n        if value % 2 == 0:\n            count += 1\n"
    assert bind(prefix, suffix + "    return count\n") == ("count",)


def test_only_inside_a_function_and_only_for_a_language_that_can_tell() -> None:
    assert bind("for x in items:\n    ", "\n    total += x\nprint(total)\n") == ()
    javascript = profile_for("javascript")
    prefix, suffix = "function f(l, b) {\n  ", "\n  return area;\n}\n"
    assert names_to_bind(javascript, prefix, suffix, prefix + suffix) == ()


def test_above_a_body_the_builder_passes_what_the_body_reads_unbound() -> None:
    workspace = Workspace()
    text = "def total_of(values):\n    total = 0\n    \n        total += value\n    return total\n"
    document = workspace.open("file:///project/sums.py", "python", 1, text)
    built = ContextBuilder(workspace).build(document, 2, 4, OPTIONS)
    assert built is not None and built.cursor.header_only
    assert built.cursor.names_to_bind == ("value",)


def test_the_builder_passes_them_on_a_blank_line_only() -> None:
    workspace = Workspace()
    text = "def area_of(l, b):\n    \n    half = l / 2\n    return area\n"
    document = workspace.open("file:///project/shapes.py", "python", 1, text)
    builder = ContextBuilder(workspace)
    blank = builder.build(document, 1, 4, OPTIONS)
    assert blank is not None and blank.cursor.names_to_bind == ("area",)
    line_end = builder.build(document, 2, len("    half = l / 2"), OPTIONS)
    assert line_end is not None and line_end.cursor.names_to_bind == ()


def test_the_whole_function_counts_where_the_window_cuts_it() -> None:
    """The window's lower edge falls inside the loop; cut there, the function's code below
    the cursor does not parse, and the name it reads at the end would go unseen."""
    workspace = Workspace()
    branches = "".join(
        f"        elif grade > {limit}:\n            letters.append('{letter}')\n"
        for limit, letter in zip(range(90, 0, -10), "ABCDEFGHI", strict=False)
    )
    text = (
        "def letters_of(grades):\n    letters = []\n    \n    for grade in grades:\n"
        f"        if grade == 100:\n            letters.append('A+')\n{branches}"
        "    return letters, best\n"
    )
    document = workspace.open("file:///project/grades.py", "python", 1, text)
    options = ContextOptions(budget=Budget(256), max_lines=8)
    built = ContextBuilder(workspace).build(document, 2, 4, options)
    assert built is not None and "best" not in built.window.suffix
    assert built.cursor.names_to_bind == ("best",)
