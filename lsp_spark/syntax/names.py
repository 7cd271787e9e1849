"""Which names a piece of code reads before it binds them, where the language's own
standard library can tell (Python's `ast`)."""

from __future__ import annotations

import ast
import builtins
from typing import NamedTuple

NESTED_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


class Use(NamedTuple):
    """One name on one row of a function, where the function's own scope sees it; a
    function's uses are listed in the order it meets them running (`_visit`)."""

    row: int
    name: str
    binds: bool


def python_names_read_before_bound(function: str, row: int) -> frozenset[str]:
    """The names the lines of `function` (one function's code, dedented) below `row` read
    before anything binds them, that nothing above `row` binds, and that are not builtins;
    empty when the code does not parse. Running the function, such a read fails unless
    the line at `row` binds the name (`count = 0` above `count += 1`, `area = l * b` above
    `return area`); a name read only in a nested scope (a comprehension, a lambda, a
    nested function) counts as read where that scope reads it."""
    module = _parsed(function, row)
    definition = module.body[0] if module is not None and module.body else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return frozenset()
    uses = _uses(definition)
    bound_above = {use.name for use in uses if use.row < row and use.binds}
    first_below: dict[str, bool] = {}
    for use in uses:
        if use.row > row:
            first_below.setdefault(use.name, use.binds)
    return frozenset(
        name
        for name, binds in first_below.items()
        if not binds and name not in bound_above and not hasattr(builtins, name)
    )


def _parsed(function: str, row: int) -> ast.Module | None:
    """The function's tree; where its blank line at `row` sits above deeper code (the body
    of a header still to be written there), with a header that binds nothing in its place."""
    try:
        return ast.parse(function)
    except (SyntaxError, ValueError):
        pass
    lines = function.split("\n")
    if row >= len(lines) or lines[row].strip():
        return None
    lines[row] += "if True:"
    try:
        return ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return None


def _uses(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Use]:
    header = definition.lineno - 1
    uses = [Use(header, definition.name, True)]
    uses.extend(Use(header, name, True) for name in _arguments(definition.args))
    for statement in definition.body:
        _visit(statement, uses)
    return uses


def _visit(node: ast.AST, uses: list[Use]) -> None:
    """The function's own names in `node`, in the order Python meets them running it: an
    assignment evaluates its value before it binds its targets (`total = total + x` reads
    `total` first, as `total += x` does), a loop its iterable before its target."""
    if isinstance(node, NESTED_SCOPES):
        _visit_nested(node, uses)
        return
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        uses.append(_use(node.target, node.target.id, binds=False))
        _visit(node.value, uses)
        return
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
        for child in _in_evaluation_order(node):
            _visit(child, uses)
        return
    if isinstance(node, ast.Name):
        uses.append(_use(node, node.id, binds=not isinstance(node.ctx, ast.Load)))
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        uses.extend(
            _use(node, (alias.asname or alias.name).partition(".")[0], binds=True)
            for alias in node.names
        )
    elif isinstance(node, ast.ExceptHandler) and node.name:
        uses.append(_use(node, node.name, binds=True))
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        uses.extend(_use(node, name, binds=True) for name in node.names)
    for child in ast.iter_child_nodes(node):
        _visit(child, uses)


def _in_evaluation_order(
    node: ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.For | ast.AsyncFor,
) -> list[ast.AST]:
    """The parts of a statement that binds what it computes, value first."""
    if isinstance(node, ast.Assign):
        return [node.value, *node.targets]
    if isinstance(node, ast.AnnAssign):
        return [*([node.value] if node.value is not None else []), node.target]
    if isinstance(node, ast.NamedExpr):
        return [node.value, node.target]
    return [node.iter, node.target, *node.body, *node.orelse]


def _visit_nested(node: ast.AST, uses: list[Use]) -> None:
    """A nested scope binds its name (if it has one) where it starts, and reads, where it
    reads them, the names it does not bind itself."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        uses.append(_use(node, node.name, binds=True))
    own: set[str] = set()
    names: list[ast.Name] = []
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            own.update(_arguments(inner.args))
        if isinstance(inner, ast.Name):
            names.append(inner)
            if not isinstance(inner.ctx, ast.Load):
                own.add(inner.id)
    uses.extend(_use(name, name.id, binds=False) for name in names if name.id not in own)


def _arguments(arguments: ast.arguments) -> list[str]:
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every.extend(extra for extra in (arguments.vararg, arguments.kwarg) if extra is not None)
    return [argument.arg for argument in every]


def _use(node: ast.AST, name: str, *, binds: bool) -> Use:
    return Use(getattr(node, "lineno", 1) - 1, name, binds)
