"""Language profiles: one per language, complete, and naming grammars and queries that exist."""

from __future__ import annotations

import dataclasses
import importlib
import re
import tomllib
from pathlib import Path

import pytest
from tree_sitter import Language

from lsp_spark import languages
from lsp_spark.actions.catalog import rewrites_for
from lsp_spark.actions.testfiles import test_file_for as find_test_file
from lsp_spark.languages import (
    GENERIC,
    PROFILES,
    canonical,
    fence_tag,
    language_of_file,
    profile_for,
)
from lsp_spark.syntax.grammars import QUERY_NAMES, query_for

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ROOT / "lsp_spark" / "syntax" / "queries"
NOT_GRAMMARS = {"tree-sitter", "tree-sitter-language-pack", "tree-sitter-languages"}
WITH_GRAMMAR = [profile for profile in PROFILES if profile.grammar is not None]
WITH_QUERIES = [profile for profile in PROFILES if profile.queries is not None]


def grammar_wheels() -> set[str]:
    """The modules of the grammar wheels the project depends on."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.split(r"[<>=!~;\[ ]", requirement)[0] for requirement in project["dependencies"]}
    wheels = {name for name in names if name.startswith("tree-sitter") and name not in NOT_GRAMMARS}
    return {name.replace("-", "_") for name in wheels}


def test_every_grammar_wheel_has_a_profile() -> None:
    assert grammar_wheels()
    named = {profile.grammar.module for profile in WITH_GRAMMAR if profile.grammar is not None}
    assert grammar_wheels() <= named


def test_every_query_directory_belongs_to_a_profile() -> None:
    """Directly, or as the queries another profile's inherit (`; inherits: ecma`)."""
    used = {profile.queries for profile in WITH_QUERIES}
    for directory in list(used):
        for name in QUERY_NAMES:
            first_line = (QUERIES / str(directory) / f"{name}.scm").read_text().partition("\n")[0]
            if first_line.startswith("; inherits:"):
                used |= {parent.strip() for parent in first_line.split(":", 1)[1].split(",")}
    assert {path.name for path in QUERIES.iterdir() if path.is_dir()} == used


@pytest.mark.parametrize("profile", WITH_GRAMMAR, ids=lambda profile: profile.id)
def test_a_profiles_grammar_loads(profile: languages.LanguageProfile) -> None:
    assert profile.grammar is not None
    module = importlib.import_module(profile.grammar.module)
    assert isinstance(Language(getattr(module, profile.grammar.function)()), Language)


@pytest.mark.parametrize("profile", WITH_QUERIES, ids=lambda profile: profile.id)
def test_a_profiles_queries_exist_and_compile(profile: languages.LanguageProfile) -> None:
    assert profile.grammar is not None, "queries need a grammar to run on"
    for name in QUERY_NAMES:
        assert (QUERIES / str(profile.queries) / f"{name}.scm").is_file()
        assert query_for(profile.id, name) is not None


@pytest.mark.parametrize(
    "kind",
    [
        languages.LanguageProfile,
        languages.Syntax,
        languages.Grammar,
        languages.NestedStatements,
        languages.HeaderWords,
    ],
)
def test_no_field_of_a_profile_falls_back_to_a_default(kind: type) -> None:
    """A profile that leaves a field out does not load, rather than quietly get a value
    that fits another language."""
    for field in dataclasses.fields(kind):
        if field.init:
            assert field.default is dataclasses.MISSING, field.name
            assert field.default_factory is dataclasses.MISSING, field.name


def test_ids_and_aliases_name_one_profile_each() -> None:
    names = [name for profile in PROFILES for name in (profile.id, *profile.aliases)]
    assert len(names) == len(set(names))
    assert all(name == name.lower() for name in names)
    assert GENERIC not in PROFILES


def test_ids_resolve_through_aliases_and_case_and_unknown_ones_get_the_generic_profile() -> None:
    assert profile_for("TypeScriptReact").id == "typescriptreact"
    assert profile_for("c++").id == "cpp"
    assert canonical("JS") == "javascript"
    assert profile_for("kotlin") is GENERIC
    assert canonical("Kotlin") == "kotlin"


def test_a_file_extension_names_one_language_and_every_grammar_language_has_one() -> None:
    extensions = [extension for profile in PROFILES for extension in profile.extensions]
    assert len(extensions) == len(set(extensions))
    assert all(profile.extensions for profile in WITH_GRAMMAR)
    assert language_of_file(".TSX") == "typescriptreact"
    assert language_of_file(".h") == "c"
    assert language_of_file(".unknown") == "plaintext"


def test_fences_use_the_names_models_know_and_unknown_ids_as_they_are() -> None:
    assert fence_tag("typescriptreact") == "tsx"
    assert fence_tag("shellscript") == fence_tag("bash") == "bash"
    assert fence_tag("python") == "python"
    assert fence_tag("plaintext") == ""
    assert fence_tag("kotlin") == "kotlin"


def test_annotations_are_offered_where_they_are_optional() -> None:
    offered = {profile.id for profile in PROFILES if "annotate" in ids_of(profile.id)}
    assert offered == {"python", "typescript", "typescriptreact", "php"}


def ids_of(language: str) -> set[str]:
    return {action.id for action in rewrites_for(language)}


@pytest.mark.parametrize(
    "profile",
    [profile for profile in PROFILES if profile.test_naming is not None],
    ids=lambda profile: profile.id,
)
def test_every_test_naming_finds_a_test_file(profile: languages.LanguageProfile) -> None:
    assert find_test_file(Path("/project/src/shapes.x"), profile.id, Path("/project")) is not None


@pytest.mark.parametrize(
    ("language", "line", "opens_block"),
    [
        ("python", "def area(w, h):", True),
        ("python", "if ready:  # soon", True),
        ("python", "total = sum(", False),
        ("python", "items.each do", False),
        ("javascript", "if (ready) {", True),
        ("javascript", "const f = () =>", True),
        ("javascript", "  case 1:", True),
        ("rust", "Some(x) =>", True),
        ("ruby", "items.each do", True),
        ("ruby", "total = 1 # so:", False),
        ("lua", "if ready then -- go", True),
        ("shellscript", "for x in a b; do", True),
        ("go", "x := f(", False),
        ("go", "x := f(a,", False),
    ],
)
def test_what_opens_a_block_is_the_languages(language: str, line: str, opens_block: bool) -> None:
    assert profile_for(language).opens_block(line) is opens_block


BELOW_IF_BODY = "\n        return high\n    elif low == 1:\n        return 1\n"


@pytest.mark.parametrize(
    ("below", "fitting"),
    [
        (BELOW_IF_BODY, ("if", "elif")),
        (
            "\n        return high\n\n    else:\n        return 1\n",
            ("if", "elif", "for", "while", "except"),
        ),
        (
            "\n        return int(text)\n    except ValueError:\n        return None\n",
            ("try", "except"),
        ),
        ("\n        close()\n    finally:\n        done()\n", ("try", "except", "else")),
        ("\n        return high\n    return low\n", ()),
        ("\n        return high\nelif low == 1:\n    pass\n", ()),
        ("\n        return high\n", ()),
        ("\n        return high\n    elifant = 1\n", ()),
    ],
    ids=["elif", "else", "except", "finally", "statement", "shallower", "end", "not-a-clause"],
)
def test_above_a_body_a_clause_allows_only_the_headers_it_follows(
    below: str, fitting: tuple[str, ...]
) -> None:
    headers = languages.profile_for("python").headers
    assert headers is not None
    assert headers.fitting_above(below, 4) == fitting
