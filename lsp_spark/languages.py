"""What the server knows about each language: one profile per language, all here.

Adding a language is one `LanguageProfile` in `PROFILES` and, with a grammar, its queries
in `syntax/queries/<queries>/{scopes,imports,definitions}.scm`. Every field is required,
so a profile cannot leave one out silently, and tests/test_languages.py fails when a
grammar wheel or a query directory has no profile, or a profile names a grammar or queries
that do not exist. A language with no profile of its own gets `GENERIC`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from lsp_spark.syntax.names import python_names_read_before_bound


@dataclass(frozen=True, slots=True)
class Syntax:
    """How a language writes comments and strings, as far as telling code from them needs."""

    line_comments: tuple[str, ...]
    """Markers of comments that end with their line; the first is the one prompts use."""
    block_comment: tuple[str, str] | None
    quotes: str
    """Quotes whose strings end on their line."""
    long_quotes: tuple[str, ...]
    """Delimiters of strings that may span lines."""
    char_literals: bool
    """`'` opens a one-character literal, when it is not in `quotes`."""
    scanner: re.Pattern[str] = field(init=False, repr=False, compare=False)
    """What a bracket scan stops at, derived: see `__post_init__`."""

    def __post_init__(self) -> None:
        # The alternatives in their order of precedence (a block comment before a line
        # comment, a long quote before its quote character): the regex engine skips the
        # plain text between them, which a loop per character did in Python.
        openers = [
            *((self.block_comment[0],) if self.block_comment else ()),
            *self.line_comments,
            *self.long_quotes,
            *self.quotes,
            *(("'",) if self.char_literals else ()),
        ]
        pattern = "".join(re.escape(opener) + "|" for opener in openers) + r"[()\[\]{},;]"
        object.__setattr__(self, "scanner", re.compile(pattern))


@dataclass(frozen=True, slots=True)
class Grammar:
    """A language's tree-sitter grammar in its official wheel."""

    module: str
    function: str
    """The module's function that returns the grammar (one wheel may hold several)."""


@dataclass(frozen=True, slots=True)
class NestedStatements:
    """How a statement cut out of a nested block parses on its own as it did in its file:
    under a header that opens a block, in an indentation language."""

    header: bytes
    parents: frozenset[str]
    """Node kinds whose children are such statements."""


@dataclass(frozen=True, slots=True)
class HeaderWords:
    """The words a block's header starts with, in an indentation language."""

    statements: tuple[str, ...]
    """A statement's (`if`, `for`…): the header where only one fits."""
    definitions: tuple[str, ...]
    """A definition's."""
    functions: tuple[str, ...]
    """A function's: in its body no definition is started on a blank line."""
    clauses: tuple[tuple[str, tuple[str, ...]], ...]
    """Each clause that carries a statement on at its header's level (`elif`, `except`),
    with the headers it can follow."""
    loop: str
    """The header that binds a name for its body (`for`): the one a body needs that reads
    a name nothing else binds."""

    def fitting_above(self, below: str, width: int) -> tuple[str, ...]:
        """The headers that fit on a blank line `width` characters deep whose body is the
        deeper code at the start of `below` (the text after the line), where the line after
        that body is a clause of the same statement: only those the clause can follow
        (`if` or `elif` where an `elif` comes next). Empty where any header fits."""
        for line in below.split("\n"):
            text = line.lstrip()
            depth = len(line) - len(text)
            if not text or depth > width:
                continue
            if depth < width:
                return ()
            return next(
                (follows for clause, follows in self.clauses if self.starts(text, (clause,))), ()
            )
        return ()

    def enclosing_function(self, prefix: str) -> int | None:
        """The row of the definition whose body holds the last line of `prefix` (the
        cursor's), if that is a function's: the lines above that are shallower than the
        cursor's are its enclosing headers, and the nearest definition among them decides."""
        *above, cursor_line = prefix.split("\n")
        width = len(cursor_line) - len(cursor_line.lstrip())
        for row in range(len(above) - 1, -1, -1):
            line = above[row]
            text = line.lstrip()
            if not text or len(line) - len(text) >= width:
                continue
            width = len(line) - len(text)
            if self.starts(text, self.definitions):
                return row if self.starts(text, self.functions) else None
        return None

    @staticmethod
    def starts(text: str, words: tuple[str, ...]) -> bool:
        """Whether the text starts with one of the words as a whole word (`def f`, not
        `default`)."""
        return any(
            text.startswith(word) and not text[len(word) : len(word) + 1].isidentifier()
            for word in words
        )


class TestNaming(enum.Enum):
    """How a language's tests are named and placed (`actions/testfiles.py`)."""

    PYTHON = "test_<name>.py, in a tests folder if there is one"
    JAVASCRIPT = "<name>.test.<ext>, <name>.spec.<ext> or __tests__/<name>.test.<ext>"
    GO = "<name>_test.go beside the source"
    RUST = "a #[cfg(test)] module in the source file"


@dataclass(frozen=True)
class LanguageProfile:
    """One language, everything about it the server uses."""

    id: str
    """The LSP language id."""
    aliases: tuple[str, ...]
    """Other ids editors send for it."""
    syntax: Syntax
    block_openers: tuple[str, ...]
    """What ends a line that opens a block (`:` in Python, `{`, `do`, `then`…), a
    trailing comment aside."""
    braces: bool
    """Blocks end at a closing brace: a suggestion stops at the one that leaves its block."""
    definitions: bool
    """A second definition at the block's level ends a suggestion (see `postprocess/scope.py`)."""
    nested_statements: NestedStatements | None
    """How a nested statement is checked on its own (None: only top-level ones are)."""
    blank_lines_ignored: bool
    """Blank lines after a line's code change nothing in the grammar's tree before them, so
    the tree need not be reparsed after Enter below valid code (see `SyntaxTree.tree_before`)."""
    prose: bool
    """Text rather than code: a Markdown fence in it is content, not the end of an answer."""
    grammar: Grammar | None
    """Its official grammar wheel; None: only the optional language packs may have one."""
    queries: str | None
    """Its directory under syntax/queries/, or None without queries."""
    test_naming: TestNaming | None
    optional_types: bool
    """Type annotations are optional: adding them is an edit worth offering."""
    fence: str
    """Its name after a Markdown fence (```tsx), as models know it."""
    extensions: tuple[str, ...]
    """File extensions that mean this language, for files opened outside an editor."""
    headers: HeaderWords | None
    """The words its headers start with, for a model that sees only the code above to be
    held to (or from) on a blank line (None: it is not held)."""
    names_read_before_bound: Callable[[str, int], frozenset[str]] | None
    """The names a function's code (dedented) reads below a row before anything binds
    them, where the language can tell: a blank line at that row is where one of them is
    about to be bound."""
    _block_end: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # What may end a line that opens a block: an opener, then blanks and
        # the language's own trailing comment; compiled once, read on every keystroke.
        comment = "".join(f"|{re.escape(marker)}.*" for marker in self.syntax.line_comments)
        if self.syntax.block_comment is not None:
            opening, closing = map(re.escape, self.syntax.block_comment)
            comment += f"|{opening}.*{closing}"
        tail = rf"\s*(?:{comment[1:]})?$" if comment else r"\s*$"
        openers = [
            rf"\b{re.escape(token)}" if token[0].isalnum() else re.escape(token)
            for token in self.block_openers
        ]
        block_end = "|".join(openers) or "(?!)"  # no opener: a pattern that never matches
        object.__setattr__(self, "_block_end", re.compile(f"(?:{block_end}){tail}"))

    @property
    def offside(self) -> bool:
        """Blocks are made by indentation alone (Python): a header's body must be deeper."""
        return self.nested_statements is not None

    def opens_block(self, line: str) -> bool:
        """Whether the line ends by opening a block, so the next one is indented deeper."""
        return self._block_end.search(line) is not None


C_SYNTAX = Syntax(
    line_comments=("//",),
    block_comment=("/*", "*/"),
    quotes='"',
    long_quotes=(),
    char_literals=True,
)
ECMA_SYNTAX = Syntax(
    line_comments=("//",),
    block_comment=("/*", "*/"),
    quotes="\"'",
    long_quotes=("`",),
    char_literals=False,
)
ECMA_OPENERS = ("{", "=>", ":")
BRACE_OPENERS = ("{", ":")
"""`:` ends `case` and `default` labels, which open blocks of their own."""
KEYWORD_OPENERS = ("do", "then", "else")

GENERIC = LanguageProfile(
    id="generic",
    aliases=(),
    syntax=Syntax(
        line_comments=("//",),
        block_comment=None,
        quotes="\"'",
        long_quotes=(),
        char_literals=False,
    ),
    block_openers=(":", "{", "=>", "do", "then", "else"),
    braces=False,
    definitions=False,
    nested_statements=None,
    blank_lines_ignored=False,
    prose=False,
    grammar=None,
    queries=None,
    test_naming=None,
    optional_types=False,
    fence="",
    extensions=(),
    headers=None,
    names_read_before_bound=None,
)
"""A language with no profile of its own: C-style line comments, as most have, and any
of the common block openers; nothing else assumed."""


def _comments_only(id: str, marker: str) -> LanguageProfile:
    """A language known here by its line comments only (its grammar may come from the
    optional language packs)."""
    syntax = replace(GENERIC.syntax, line_comments=(marker,))
    return replace(GENERIC, id=id, syntax=syntax, fence=id)


def _prose(id: str, aliases: tuple[str, ...]) -> LanguageProfile:
    syntax = replace(GENERIC.syntax, line_comments=())
    fence = "" if id == "plaintext" else id
    return replace(GENERIC, id=id, aliases=aliases, syntax=syntax, prose=True, fence=fence)


HASH_COMMENTED = (
    "perl", "r", "yaml", "toml", "dockerfile", "makefile", "elixir", "julia", "powershell",
    "coffeescript", "nim",
)  # fmt: skip
DASH_COMMENTED = ("sql", "haskell", "elm", "ada")

PROFILES: tuple[LanguageProfile, ...] = (
    LanguageProfile(
        id="python",
        aliases=("py",),
        syntax=Syntax(
            line_comments=("#",),
            block_comment=None,
            quotes="\"'",
            long_quotes=('"""', "'''"),
            char_literals=False,
        ),
        block_openers=(":",),
        braces=False,
        definitions=True,
        nested_statements=NestedStatements(b"if True:\n", frozenset({"block", "module"})),
        blank_lines_ignored=True,
        prose=False,
        grammar=Grammar("tree_sitter_python", "language"),
        queries="python",
        test_naming=TestNaming.PYTHON,
        optional_types=True,
        fence="python",
        extensions=(".py",),
        headers=HeaderWords(
            statements=("if", "elif", "else", "for", "while", "try", "except", "finally", "with"),
            definitions=("def", "class", "async def"),
            functions=("def", "async def"),
            clauses=(
                ("elif", ("if", "elif")),
                ("else", ("if", "elif", "for", "while", "except")),
                ("except", ("try", "except")),
                ("finally", ("try", "except", "else")),
            ),
            loop="for",
        ),
        names_read_before_bound=python_names_read_before_bound,
    ),
    LanguageProfile(
        id="javascript",
        aliases=("js",),
        syntax=ECMA_SYNTAX,
        block_openers=ECMA_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_javascript", "language"),
        queries="javascript",
        test_naming=TestNaming.JAVASCRIPT,
        optional_types=False,
        fence="javascript",
        extensions=(".js", ".mjs", ".cjs"),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="javascriptreact",
        aliases=("jsx",),
        syntax=ECMA_SYNTAX,
        block_openers=ECMA_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_javascript", "language"),
        queries="javascript",
        test_naming=TestNaming.JAVASCRIPT,
        optional_types=False,
        fence="jsx",
        extensions=(".jsx",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="typescript",
        aliases=("ts",),
        syntax=ECMA_SYNTAX,
        block_openers=ECMA_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_typescript", "language_typescript"),
        queries="typescript",
        test_naming=TestNaming.JAVASCRIPT,
        optional_types=True,
        fence="typescript",
        extensions=(".ts", ".mts", ".cts"),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="typescriptreact",
        aliases=("tsx",),
        syntax=ECMA_SYNTAX,
        block_openers=ECMA_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_typescript", "language_tsx"),
        queries="tsx",
        test_naming=TestNaming.JAVASCRIPT,
        optional_types=True,
        fence="tsx",
        extensions=(".tsx",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="go",
        aliases=(),
        syntax=Syntax(
            line_comments=("//",),
            block_comment=("/*", "*/"),
            quotes='"',
            long_quotes=("`",),
            char_literals=True,
        ),
        block_openers=BRACE_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_go", "language"),
        queries="go",
        test_naming=TestNaming.GO,
        optional_types=False,
        fence="go",
        extensions=(".go",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="rust",
        aliases=(),
        syntax=C_SYNTAX,
        block_openers=("{", "=>"),
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_rust", "language"),
        queries="rust",
        test_naming=TestNaming.RUST,
        optional_types=False,
        fence="rust",
        extensions=(".rs",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="java",
        aliases=(),
        syntax=Syntax(
            line_comments=("//",),
            block_comment=("/*", "*/"),
            quotes='"',
            long_quotes=('"""',),
            char_literals=True,
        ),
        block_openers=BRACE_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_java", "language"),
        queries="java",
        test_naming=None,
        optional_types=False,
        fence="java",
        extensions=(".java",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="c",
        aliases=(),
        syntax=C_SYNTAX,
        block_openers=BRACE_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_c", "language"),
        queries="c",
        test_naming=None,
        optional_types=False,
        fence="c",
        extensions=(".c", ".h"),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="cpp",
        aliases=("c++",),
        syntax=C_SYNTAX,
        block_openers=BRACE_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_cpp", "language"),
        queries="cpp",
        test_naming=None,
        optional_types=False,
        fence="cpp",
        extensions=(".cc", ".cpp", ".cxx", ".hpp", ".hh"),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="csharp",
        aliases=("cs",),
        syntax=C_SYNTAX,
        block_openers=BRACE_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_c_sharp", "language"),
        queries="c_sharp",
        test_naming=None,
        optional_types=False,
        fence="cs",
        extensions=(".cs",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="php",
        aliases=(),
        syntax=Syntax(
            line_comments=("//", "#"),
            block_comment=("/*", "*/"),
            quotes="\"'",
            long_quotes=(),
            char_literals=False,
        ),
        block_openers=BRACE_OPENERS,
        braces=True,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_php", "language_php"),
        queries="php",
        test_naming=None,
        optional_types=True,
        fence="php",
        extensions=(".php",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="ruby",
        aliases=(),
        syntax=Syntax(
            line_comments=("#",),
            block_comment=None,
            quotes="\"'",
            long_quotes=(),
            char_literals=False,
        ),
        block_openers=KEYWORD_OPENERS,
        braces=False,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_ruby", "language"),
        queries="ruby",
        test_naming=None,
        optional_types=False,
        fence="ruby",
        extensions=(".rb",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="lua",
        aliases=(),
        syntax=Syntax(
            line_comments=("--",),
            block_comment=None,
            quotes="\"'",
            long_quotes=(),
            char_literals=False,
        ),
        block_openers=KEYWORD_OPENERS,
        braces=False,
        definitions=True,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_lua", "language"),
        queries="lua",
        test_naming=None,
        optional_types=False,
        fence="lua",
        extensions=(".lua",),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="shellscript",
        aliases=("sh", "bash"),
        syntax=Syntax(
            line_comments=("#",),
            block_comment=None,
            quotes="\"'",
            long_quotes=(),
            char_literals=False,
        ),
        block_openers=(*KEYWORD_OPENERS, "{"),
        braces=False,
        definitions=False,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_bash", "language"),
        queries="bash",
        test_naming=None,
        optional_types=False,
        fence="bash",
        extensions=(".sh", ".bash"),
        headers=None,
        names_read_before_bound=None,
    ),
    LanguageProfile(
        id="json",
        aliases=(),
        syntax=Syntax(
            line_comments=(),
            block_comment=None,
            quotes='"',
            long_quotes=(),
            char_literals=False,
        ),
        block_openers=(),
        braces=False,
        definitions=False,
        nested_statements=None,
        blank_lines_ignored=False,
        prose=False,
        grammar=Grammar("tree_sitter_json", "language"),
        queries=None,
        test_naming=None,
        optional_types=False,
        fence="json",
        extensions=(".json",),
        headers=None,
        names_read_before_bound=None,
    ),
    _prose("plaintext", ("",)),
    _prose("markdown", ()),
    *(_comments_only(id, "#") for id in HASH_COMMENTED),
    *(_comments_only(id, "--") for id in DASH_COMMENTED),
)

_BY_ID = {name: profile for profile in PROFILES for name in (profile.id, *profile.aliases)}


@lru_cache(maxsize=256)
def profile_for(language_id: str) -> LanguageProfile:
    """The profile of an editor's language id (any case, or an alias), else `GENERIC`."""
    return _BY_ID.get(language_id.lower(), GENERIC)


def canonical(language_id: str) -> str:
    """The id the profiles use for an editor's language id; an unknown id, lower-cased."""
    profile = _BY_ID.get(language_id.lower())
    return language_id.lower() if profile is None else profile.id


_BY_EXTENSION = {extension: profile.id for profile in PROFILES for extension in profile.extensions}


def language_of_file(suffix: str) -> str:
    """The language id of a file with this extension (".py"), else "plaintext"."""
    return _BY_EXTENSION.get(suffix.lower(), "plaintext")


def fence_tag(language_id: str) -> str:
    """What follows a Markdown fence for this language: its profile's name for it, or the
    editor's id for a language without a profile."""
    profile = _BY_ID.get(language_id.lower())
    return language_id if profile is None else profile.fence
