"""The grammar registry: LSP language ids to tree-sitter languages from official wheels.

`tree-sitter-languages` fails on tree-sitter >= 0.22 and `tree-sitter-language-pack`
>= 1.0 downloads grammars at run time, so each grammar comes from its own wheel.
"""

from __future__ import annotations

import importlib
import logging
from functools import cache

from tree_sitter import Language, Parser

log = logging.getLogger(__name__)

# language id -> (module, function returning the grammar pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "javascriptreact": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "typescriptreact": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "lua": ("tree_sitter_lua", "language"),
    "shellscript": ("tree_sitter_bash", "language"),
    "json": ("tree_sitter_json", "language"),
}

ALIASES = {
    "js": "javascript",
    "jsx": "javascriptreact",
    "ts": "typescript",
    "tsx": "typescriptreact",
    "sh": "shellscript",
    "bash": "shellscript",
    "c++": "cpp",
    "cs": "csharp",
    "py": "python",
}


def canonical(language_id: str) -> str:
    language_id = language_id.lower()
    return ALIASES.get(language_id, language_id)


@cache
def language_for(language_id: str) -> Language | None:
    """The grammar for an editor's language id, or None (text-only context then)."""
    entry = GRAMMARS.get(canonical(language_id))
    if entry is None:
        return None
    module_name, function = entry
    try:
        module = importlib.import_module(module_name)
        return Language(getattr(module, function)())
    except (ImportError, AttributeError, ValueError) as error:
        log.warning("grammar for %s unavailable: %s", language_id, error)
        return None


def parser_for(language_id: str) -> Parser | None:
    language = language_for(language_id)
    return Parser(language) if language is not None else None


def loaded_grammars() -> dict[str, bool]:
    """Each known language id and whether its grammar loads here (for `doctor`)."""
    return {language_id: language_for(language_id) is not None for language_id in GRAMMARS}
