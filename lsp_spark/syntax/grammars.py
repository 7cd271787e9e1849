"""The grammar registry: LSP language ids to tree-sitter languages, and the queries over them.

Each grammar comes from its own official wheel first (the language's profile names it,
and its queries, in `lsp_spark/languages.py`). The long tail (Kotlin, Haskell, YAML…)
comes from the optional ``tree-sitter-language-pack`` 0.x, which bundles its grammars (1.x
downloads them at run time, so it is refused), and then from ``tree-sitter-languages``, whose
loader fails on tree-sitter >= 0.22 and so only counts where it still works. A language with no
grammar gets None, and text-only context elsewhere.
"""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from types import ModuleType
from typing import Literal

from tree_sitter import Language, Query, QueryError

from lsp_spark.languages import PROFILES, canonical, profile_for

log = logging.getLogger(__name__)

# LSP language ids whose grammar the language packs file under another name; the rest match.
PACK_NAMES = {
    "javascriptreact": "javascript",
    "typescriptreact": "tsx",
    "shellscript": "bash",
    "jsonc": "json",
    "objective-c": "objc",
    "objective-cpp": "objc",
    "makefile": "make",
    "viml": "vim",
    "vimscript": "vim",
    "proto3": "proto",
    "terraform-vars": "hcl",
    "dockercompose": "yaml",
    "restructuredtext": "rst",
    "tex": "latex",
    "emacs-lisp": "elisp",
}

# A pack name becomes a module path inside the pack, so only plain identifiers are passed on.
_PACK_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class LanguagePack:
    """A package bundling many grammars behind ``get_language(name)``."""

    module: str
    distribution: str
    refused_from_major: int | None
    """First major version that no longer bundles its grammars, if any."""


LANGUAGE_PACKS = (
    LanguagePack("tree_sitter_language_pack", "tree-sitter-language-pack", refused_from_major=1),
    LanguagePack("tree_sitter_languages", "tree-sitter-languages", refused_from_major=None),
)

QueryName = Literal["scopes", "imports", "definitions"]
QUERY_NAMES: tuple[QueryName, ...] = ("scopes", "imports", "definitions")

_QUERIES = resources.files(__name__.rpartition(".")[0]) / "queries"
_INHERITS = "; inherits:"


@cache
def language_for(language_id: str) -> Language | None:
    """The grammar for an editor's language id, or None (text-only context then)."""
    language_id = canonical(language_id)
    language = _from_wheel(language_id)
    if language is not None:
        return language
    return _from_packs(PACK_NAMES.get(language_id, language_id))


def loaded_grammars() -> dict[str, bool]:
    """Each language id with a grammar wheel and whether it loads here (for `doctor`)."""
    return {
        profile.id: language_for(profile.id) is not None
        for profile in PROFILES
        if profile.grammar is not None
    }


def query_for(language_id: str, name: QueryName) -> Query | None:
    """The language's compiled query, or None when it has no such query or no grammar."""
    return _compiled_query(canonical(language_id), name)


def query_source(directory: str, name: QueryName) -> str:
    """A query file's text, followed by the files named on a first line ``; inherits: a, b``.

    Inherited patterns come after the file's own, so where both capture the same node the
    file's own pattern (the lower pattern index) can win. In a pattern, ``#set!`` must come
    before any text predicate (``#eq?``, ``#match?``…): py-tree-sitter 0.26.1 releases a text
    predicate again when a ``#set!`` follows it, and freeing that query then crashes.
    """
    text = (_QUERIES / directory / f"{name}.scm").read_text(encoding="utf-8")
    first_line = text.partition("\n")[0]
    if not first_line.startswith(_INHERITS):
        return text
    parents = first_line.removeprefix(_INHERITS).split(",")
    return "\n".join([text, *(query_source(parent.strip(), name) for parent in parents)])


def _from_wheel(language_id: str) -> Language | None:
    grammar = profile_for(language_id).grammar
    if grammar is None:
        return None
    try:
        module = importlib.import_module(grammar.module)
        return Language(getattr(module, grammar.function)())
    except (ImportError, AttributeError, ValueError) as error:
        log.warning("grammar for %s unavailable: %s", language_id, error)
        return None


def _from_packs(name: str) -> Language | None:
    if not _PACK_NAME.match(name):
        return None
    for pack in LANGUAGE_PACKS:
        module = _importable_pack(pack)
        if module is None:
            continue
        try:
            language = module.get_language(name)
        # LookupError: not in this pack. TypeError: tree-sitter-languages on tree-sitter >= 0.22.
        # ValueError: a grammar ABI this tree-sitter cannot load.
        except (LookupError, TypeError, ValueError, AttributeError, ImportError, OSError) as error:
            log.debug("%s has no usable grammar for %s: %s", pack.distribution, name, error)
            continue
        if isinstance(language, Language):
            return language
    return None


def _importable_pack(pack: LanguagePack) -> ModuleType | None:
    """The pack's module when an installed version bundles its grammars, else None."""
    version = _installed_version(pack.distribution)
    if version is None:
        return None
    major = version.partition(".")[0]
    if pack.refused_from_major is not None and (
        not major.isdigit() or int(major) >= pack.refused_from_major
    ):
        log.warning(
            "%s %s is not used: from %d.0 on it downloads grammars at run time",
            pack.distribution,
            version,
            pack.refused_from_major,
        )
        return None
    try:
        return importlib.import_module(pack.module)
    except ImportError as error:
        log.debug("%s is installed but does not import: %s", pack.distribution, error)
        return None


def _installed_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@cache
def _compiled_query(language_id: str, name: QueryName) -> Query | None:
    language = language_for(language_id)
    directory = profile_for(language_id).queries
    if language is None or directory is None:
        return None
    try:
        return Query(language, query_source(directory, name))
    except QueryError as error:
        # A grammar wheel newer than the queries may rename a node: degrade, don't crash.
        log.warning("%s query for %s does not compile: %s", name, language_id, error)
        return None
