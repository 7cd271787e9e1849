"""Which names a piece of code reads without binding them, where the language's own
standard library can tell (Python's `symtable`)."""

from __future__ import annotations

import builtins
import symtable


def python_unbound_names(code: str) -> frozenset[str]:
    """The names `code` reads, in any of its scopes, that it never binds and that are not
    builtins; empty when it does not compile."""
    try:
        module = symtable.symtable(code, "<cursor>", "exec")
    except (SyntaxError, ValueError):
        return frozenset()
    bound_at_top = {symbol.get_name() for symbol in module.get_symbols() if _binds(symbol)}
    unbound: set[str] = set()
    tables = [module]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        unbound.update(
            symbol.get_name()
            for symbol in table.get_symbols()
            if symbol.is_referenced() and symbol.is_global() and not symbol.is_declared_global()
        )
    return frozenset(
        name for name in unbound if name not in bound_at_top and not hasattr(builtins, name)
    )


def _binds(symbol: symtable.Symbol) -> bool:
    return symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()
