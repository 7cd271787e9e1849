"""The package's modules import one another without a cycle.

A cycle works only while the modules happen to be imported in one order: a new import of
one of them elsewhere, or a name moved between them, turns it into an ImportError on a
partially initialised module. The graph is read from the source, as written: `from P import
N` depends on P (its `__init__` runs) and, when N is a module, on P.N; imports inside
functions and under `TYPE_CHECKING` run later or never, so they are left out.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import lsp_spark

PACKAGE = Path(lsp_spark.__file__).parent


def module_files() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("lsp_spark", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported_at_load(body: Sequence[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is loaded."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                yield from imported_at_load(node.body)
            yield from imported_at_load(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from imported_at_load(block)
            for handler in node.handlers:
                yield from imported_at_load(handler.body)


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        needs: set[str] = set()
        for node in imported_at_load(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                needs.update(alias.name for alias in node.names)
            elif node.level == 0 and node.module is not None:
                needs.add(node.module)
                needs.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {other for other in needs if other in modules and other != name}
    return graph


def test_no_module_imports_one_that_imports_it_back() -> None:
    modules = module_files()
    assert "lsp_spark.actions.service" in modules
    try:
        order = list(graphlib.TopologicalSorter(import_graph(modules)).static_order())
    except graphlib.CycleError as cycle:
        raise AssertionError(f"import cycle: {' -> '.join(cycle.args[1])}") from None
    assert len(order) == len(modules)
