"""Helix's side of the LSP conversation, replayed against the real server over its stdio.

Helix itself cannot be installed here (no package in PyPI, npm or Debian bookworm), so this
client sends what Helix sends, byte for byte where it matters, and applies the server's answers
to its own copy of the document the way Helix does. Everything below was read from
helix-editor/helix at commit 079a789e8cb08ead67f19e1971a1b7438b37354b (2026-07-23, the 25.07.1
development line), chiefly:

- helix-lsp/src/client.rs: the `initialize` params, every request's params, `changeset_to_changes`;
- helix-lsp/src/transport.rs: `initialized` goes out at once, other notifications sent before
  the answer to `initialize` are dropped;
- helix-term/src/application.rs: `workspace/didChangeConfiguration` with the `config` table right
  after `initialized`, and the answers to the server's requests;
- helix-view/src/handlers/lsp.rs, helix-view/src/editor.rs: `didOpen` once the server is ready,
  `didChange` per transaction, how a `WorkspaceEdit` is applied (versions checked);
- helix-term/src/handlers/completion*.rs, helix-term/src/ui/completion.rs: when completion is
  asked for and how the menu filters, previews and applies an item;
- helix-lsp/src/lib.rs (`util`): position conversion, completion and text edits as transactions;
- helix-core/src/snippets/*.rs: how an item of kind Snippet (or snippet format) is parsed and
  rendered (re-indented) before it is inserted;
- helix-view/src/action.rs, helix-term/src/commands/lsp.rs: code actions, resolved on the UI thread.

Helix never sends `$/cancelRequest`: a completion it no longer wants is dropped on its side. On
quit it sends `shutdown` and `exit` back to back without waiting for the answer.

Not replayed, because no test needs them yet: auto-pairs and tree-sitter indentation when
typing (`type` refuses brackets, quotes and newlines), the ranking of several matching menu
items, typing while the menu is open (its filter, re-asking an incomplete list), code action
hints (off by default), file operations in a workspace edit (noted as a problem), and the
character-level diff Helix makes of a whole-document edit (a line diff: the same text).

The JSON-RPC framing is written here rather than taken from pygls, whose client turns every
message into lsprotocol objects: Helix's exact wire form (ids counting from 0, no `params` on
`shutdown`, fields left out rather than null) is what is being replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import itertools
import json
import os
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

HELIX_COMMIT = "079a789e8cb08ead67f19e1971a1b7438b37354b"
HELIX_VERSION = "25.07.1 (079a789e)"
"""`VERSION_AND_GIT_HASH` as Helix's build script writes it: calendar version, short hash."""

REQUEST_TIMEOUT = 20.0
"""A language server's `timeout` in languages.toml: Helix gives up on a request after it."""
COMPLETION_TIMEOUT = 0.25
"""`editor.completion-timeout`: idle time after typing before completion is asked for."""
COMPLETION_TRIGGER_LEN = 2
"""`editor.completion-trigger-len`: word characters before the cursor that start it."""
RESOLVE_DEBOUNCE = 0.15
"""A selected menu item is resolved after this pause (`ResolveTimeout`)."""
EXIT_GRACE = 10.0
"""How long the replay waits for the server to exit after `exit`. Helix itself kills it
after at most a second, so a server still running then would be cut off mid-work."""

Encoding = Literal["utf-8", "utf-16", "utf-32"]
OFFERED_ENCODINGS: tuple[Encoding, ...] = ("utf-8", "utf-32", "utf-16")
"""`general.positionEncodings`, in Helix's order."""

SYMBOL_KINDS = list(range(1, 27))
CODE_ACTION_KINDS = [
    "",
    "quickfix",
    "refactor",
    "refactor.extract",
    "refactor.inline",
    "refactor.rewrite",
    "source",
    "source.organizeImports",
    "source.fixAll",
]
METHOD_NOT_FOUND = -32601
INVOKED = 1
TRIGGER_CHARACTER = 2
SNIPPET_KIND = 15
SNIPPET_FORMAT = 2

AUTOMATIC_FEATURES = {
    "signatureHelpProvider": "textDocument/signatureHelp as the user types (auto-signature-help)",
    "colorProvider": "textDocument/documentColor on open and change (display-color-swatches)",
    "documentLinkProvider": "textDocument/documentLink on open and change",
    "diagnosticProvider": "textDocument/diagnostic on open and change (pull diagnostics)",
}
"""Server capabilities that make Helix (with its default settings) send requests on its own,
which this replay does not send: a server that starts advertising one must be replayed with it."""


PYTHON_ROOTS = ("pyproject.toml", "setup.py", "poetry.lock", "pyrightconfig.json")
"""Python's `roots` in Helix's languages.toml."""


class HelixRefusal(AssertionError):
    """The server sent something Helix would reject or silently mangle (it logs an error and
    carries on), so what the user gets is not what the server meant."""


def client_capabilities(enable_snippets: bool = True) -> dict[str, Any]:
    """`ClientCapabilities` exactly as Helix serializes them (unset options are left out)."""
    return {
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {
                "documentChanges": True,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort",
                "normalizesLineEndings": False,
            },
            "didChangeConfiguration": {"dynamicRegistration": False},
            "didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True},
            "symbol": {"dynamicRegistration": False, "symbolKind": {"valueSet": SYMBOL_KINDS}},
            "executeCommand": {"dynamicRegistration": False},
            "workspaceFolders": True,
            "configuration": True,
            "inlayHint": {"refreshSupport": False},
            "fileOperations": {
                "didCreate": True,
                "willCreate": True,
                "didRename": True,
                "willRename": True,
                "didDelete": True,
                "willDelete": True,
            },
            "diagnostic": {"refreshSupport": True},
        },
        "textDocument": {
            "completion": {
                "completionItem": {
                    "snippetSupport": enable_snippets,
                    "deprecatedSupport": True,
                    "tagSupport": {"valueSet": [1]},
                    "insertReplaceSupport": True,
                    "resolveSupport": {
                        "properties": ["documentation", "detail", "additionalTextEdits"]
                    },
                },
                "completionItemKind": {},
            },
            "hover": {"contentFormat": ["markdown"]},
            "signatureHelp": {
                "signatureInformation": {
                    "documentationFormat": ["markdown"],
                    "parameterInformation": {"labelOffsetSupport": True},
                    "activeParameterSupport": True,
                }
            },
            "documentSymbol": {
                "dynamicRegistration": False,
                "symbolKind": {"valueSet": SYMBOL_KINDS},
                "hierarchicalDocumentSymbolSupport": False,
            },
            "formatting": {"dynamicRegistration": False},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": CODE_ACTION_KINDS}},
                "isPreferredSupport": True,
                "disabledSupport": True,
                "dataSupport": True,
                "resolveSupport": {"properties": ["edit", "command"]},
            },
            "documentLink": {"dynamicRegistration": False, "tooltipSupport": False},
            "rename": {
                "dynamicRegistration": False,
                "prepareSupport": True,
                "honorsChangeAnnotations": False,
            },
            "publishDiagnostics": {"tagSupport": {"valueSet": [1, 2]}, "versionSupport": True},
            "callHierarchy": {"dynamicRegistration": False},
            "inlayHint": {"dynamicRegistration": False},
            "diagnostic": {"dynamicRegistration": False, "relatedDocumentSupport": True},
        },
        "window": {
            "workDoneProgress": True,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}},
            "showDocument": {"support": True},
        },
        "general": {"positionEncodings": list(OFFERED_ENCODINGS)},
    }


def workspace_folder(uri: str) -> dict[str, str]:
    """`workspace_for_uri`: the folder's name is the last non-empty path segment."""
    segments = [segment for segment in uri.split("/") if segment]
    return {"uri": uri, "name": segments[-1] if segments else ""}


def find_workspace(start: Path) -> tuple[Path, bool]:
    """helix-loader's `find_workspace_in`: the nearest directory holding .git, .svn, .jj or
    .helix, or the start itself (and then it is "the cwd")."""
    for ancestor in (start, *start.parents):
        if any((ancestor / marker).exists() for marker in (".git", ".svn", ".jj", ".helix")):
            return ancestor, False
    return start, True


def find_lsp_root(document: Path, roots: tuple[str, ...], cwd: Path) -> Path | None:
    """helix-lsp's `find_lsp_workspace` without `workspace-lsp-roots`: the top-most directory
    with a root marker of the language, up to the workspace; else the workspace itself unless
    the workspace is just the working directory."""
    workspace, workspace_is_cwd = find_workspace(cwd)
    if not document.parent.is_relative_to(workspace):
        return None
    top_marker: Path | None = None
    for ancestor in (document.parent, *document.parent.parents):
        if any((ancestor / marker).exists() for marker in roots):
            top_marker = ancestor
        if ancestor == workspace:
            break
    if top_marker is not None:
        return top_marker
    return None if workspace_is_cwd else workspace


# --- Positions, as helix-lsp's `util` converts them -----------------------------------------


def unit_length(char: str, encoding: Encoding) -> int:
    if encoding == "utf-8":
        return len(char.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(char.encode("utf-16-le", "surrogatepass")) // 2
    return 1


def units(text: str, encoding: Encoding) -> int:
    return sum(unit_length(char, encoding) for char in text)


def line_starts(text: str) -> list[int]:
    """Where each line starts. Helix builds ropey without `unicode_lines` and `cr_lines`, so
    only "\\n" (alone or after "\\r") ends a line."""
    return [0, *(index + 1 for index, char in enumerate(text) if char == "\n")]


def line_end(text: str, starts: list[int], line: int) -> int:
    """The line's end before its line break (`line_end_char_index`)."""
    end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
    if end > starts[line] and line + 1 < len(starts) and text[end - 1] == "\r":
        end -= 1
    return end


def char_to_line(starts: list[int], offset: int) -> int:
    line = 0
    while line + 1 < len(starts) and starts[line + 1] <= offset:
        line += 1
    return line


def pos_to_lsp_pos(text: str, offset: int, encoding: Encoding) -> dict[str, int]:
    starts = line_starts(text)
    line = char_to_line(starts, offset)
    return {"line": line, "character": units(text[starts[line] : offset], encoding)}


def lsp_pos_to_pos(
    text: str, position: Mapping[str, int], encoding: Encoding, problems: list[str]
) -> int:
    """A character offset for an LSP position, as Helix computes it: a line past the end is
    the end of the document, a character past the line's end is the line's end. Each clamp
    Helix makes without a word, and a position inside a character, is noted in `problems`."""
    starts = line_starts(text)
    line, character = position["line"], position["character"]
    if line > len(starts) - 1:
        problems.append(f"line {line} is past the document's last line; Helix uses its end")
        return len(text)
    start, end = starts[line], line_end(text, starts, line)
    offset, counted = start, 0
    while offset < end and counted < character:
        counted += unit_length(text[offset], encoding)
        offset += 1
    if counted > character:
        problems.append(f"{position} falls inside a character in {encoding}")
        offset -= 1
    elif counted < character:
        problems.append(f"{position} is past the end of line {line}; Helix uses the line's end")
    return offset


def lsp_range_to_range(
    text: str, lsp_range: Mapping[str, Any], encoding: Encoding, problems: list[str]
) -> tuple[int, int]:
    """`lsp_range_to_range`: a range ending before it starts becomes empty at its end."""
    start, end = lsp_range["start"], lsp_range["end"]
    if (start["line"], start["character"]) > (end["line"], end["character"]):
        problems.append(f"range {lsp_range} ends before it starts; Helix empties it at its end")
        start = end
    return (
        lsp_pos_to_pos(text, start, encoding, problems),
        lsp_pos_to_pos(text, end, encoding, problems),
    )


def traverse(position: dict[str, int], text: str, encoding: Encoding) -> dict[str, int]:
    """`changeset_to_changes`' walk over deleted text: LSP counts "\\r", "\\n" and "\\r\\n"."""
    line, character = position["line"], position["character"]
    index = 0
    while index < len(text):
        char = text[index]
        if char in "\r\n":
            if char == "\r" and text[index + 1 : index + 2] == "\n":
                index += 1
            line, character = line + 1, 0
        else:
            character += unit_length(char, encoding)
        index += 1
    return {"line": line, "character": character}


# --- Transactions (helix-core's ChangeSet) ---------------------------------------------------

Operation = tuple[Literal["retain", "delete"], int] | tuple[Literal["insert"], str]
Change = tuple[int, int, str | None]
"""(from, to, replacement) in character offsets of the text the change applies to."""


class ChangeSet:
    """Helix's change set: retains, deletions and insertions in the order Helix builds them
    (an insertion always goes before the deletion it replaces)."""

    def __init__(self) -> None:
        self.operations: list[Operation] = []

    @classmethod
    def from_changes(cls, length: int, changes: list[Change]) -> ChangeSet:
        changeset, last = cls(), 0
        for start, end, replacement in changes:
            changeset.retain(start - last)
            if replacement is not None:
                changeset.insert(replacement)
            changeset.delete(end - start)
            last = end
        changeset.retain(length - last)
        return changeset

    def retain(self, count: int) -> None:
        if count == 0:
            return
        if self.operations and self.operations[-1][0] == "retain":
            self.operations[-1] = ("retain", self.operations[-1][1] + count)
        else:
            self.operations.append(("retain", count))

    def delete(self, count: int) -> None:
        if count == 0:
            return
        if self.operations and self.operations[-1][0] == "delete":
            self.operations[-1] = ("delete", self.operations[-1][1] + count)
        else:
            self.operations.append(("delete", count))

    def insert(self, fragment: str) -> None:
        if not fragment:
            return
        operations = self.operations
        if operations and operations[-1][0] == "insert":
            operations[-1] = ("insert", operations[-1][1] + fragment)
        elif (
            len(operations) >= 2 and operations[-1][0] == "delete" and operations[-2][0] == "insert"
        ):
            operations[-2] = ("insert", operations[-2][1] + fragment)
        elif operations and operations[-1][0] == "delete":
            operations.insert(len(operations) - 1, ("insert", fragment))
        else:
            operations.append(("insert", fragment))

    @property
    def is_empty(self) -> bool:
        return all(kind == "retain" for kind, _ in self.operations)

    def apply(self, text: str) -> str:
        pieces, position = [], 0
        for kind, value in self.operations:
            if kind == "retain":
                pieces.append(text[position : position + cast(int, value)])
                position += cast(int, value)
            elif kind == "delete":
                position += cast(int, value)
            else:
                pieces.append(cast(str, value))
        return "".join(pieces) + text[position:]

    def content_changes(self, old: str, new: str, encoding: Encoding) -> list[dict[str, Any]]:
        """`changeset_to_changes`: sequential incremental changes (each range in the text as
        the changes before it left it)."""
        changes: list[dict[str, Any]] = []
        old_position = new_position = 0
        operations = iter(self.operations)
        pending = next(operations, None)
        while pending is not None:
            kind, value = pending
            pending = next(operations, None)
            old_end = old_position + (cast(int, value) if kind != "insert" else 0)
            if kind == "retain":
                new_position += cast(int, value)
            elif kind == "delete":
                start = pos_to_lsp_pos(new, new_position, encoding)
                end = traverse(start, old[old_position:old_end], encoding)
                changes.append({"range": {"start": start, "end": end}, "text": ""})
            else:
                start = pos_to_lsp_pos(new, new_position, encoding)
                new_position += len(cast(str, value))
                end = start
                if pending is not None and pending[0] == "delete":
                    old_end = old_position + pending[1]
                    end = traverse(start, old[old_position:old_end], encoding)
                    pending = next(operations, None)
                changes.append({"range": {"start": start, "end": end}, "text": value})
            old_position = old_end
        return changes


def edits_changeset(
    text: str, edits: list[dict[str, Any]], encoding: Encoding, problems: list[str]
) -> ChangeSet:
    """`generate_transaction_from_edits`: edits sorted by start; one edit over the whole
    document becomes a diff of the two texts; an edit ending before it starts, or overlapping
    an earlier one, is dropped."""
    ordered = sorted(
        edits,
        key=lambda edit: (edit["range"]["start"]["line"], edit["range"]["start"]["character"]),
    )
    if len(ordered) == 1:
        probe: list[str] = []
        whole = (
            lsp_pos_to_pos(text, ordered[0]["range"]["start"], encoding, probe),
            lsp_pos_to_pos(text, ordered[0]["range"]["end"], encoding, probe),
        )
        if whole == (0, len(text)):
            return line_diff(text, ordered[0]["newText"])
    changes: list[Change] = []
    last_end = 0
    for edit in ordered:
        start = lsp_pos_to_pos(text, edit["range"]["start"], encoding, problems)
        end = lsp_pos_to_pos(text, edit["range"]["end"], encoding, problems)
        if start > end:
            problems.append(f"text edit {edit['range']} ends before it starts; Helix drops it")
            continue
        if start < last_end:
            problems.append(f"text edit {edit['range']} overlaps an earlier one; Helix drops it")
            continue
        last_end = end
        changes.append((start, end, edit["newText"] or None))
    return ChangeSet.from_changes(len(text), changes)


def line_diff(old: str, new: str) -> ChangeSet:
    """A whole-document replacement as changes to the lines that differ (Helix diffs it with
    imara-diff, then by character inside small hunks: other hunks, the same text)."""
    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    changeset = ChangeSet()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag == "equal":
            changeset.retain(sum(map(len, before[a_start:a_end])))
            continue
        changeset.insert("".join(after[b_start:b_end]))
        changeset.delete(sum(map(len, before[a_start:a_end])))
    return changeset


# --- Snippets (helix-core/src/snippets) -----------------------------------------------------

TEXT_ESCAPES = "\\}$"
CHOICE_ESCAPES = "\\|,"
CASE_CHANGES = ("upcase", "downcase", "capitalize", "pascalcase", "camelcase")
LAST_TABSTOP = 1 << 62
"""`$0` sorts after every other tabstop."""


@dataclass
class Element:
    """A parsed snippet element: "text", "tabstop" (with its placeholder or choice, if any)
    or "variable" (with its default, if any)."""

    kind: Literal["text", "tabstop", "variable"]
    text: str = ""
    tabstop: int = 0
    tabstop_kind: Literal["placeholder", "choice", "transform"] = "placeholder"
    children: list[Element] | None = None


Parsed = tuple[str, Any] | None


def _literal(source: str, word: str) -> Parsed:
    return (source[len(word) :], word) if source.startswith(word) else None


def _text(source: str, escapes: str, terminators: str) -> tuple[str, str]:
    out: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            if index + 1 < len(source) and source[index + 1] in escapes:
                out.append(source[index + 1])
                index += 2
                continue
            out.append("\\")
        elif char in terminators:
            return source[index:], "".join(out)
        else:
            out.append(char)
        index += 1
    return "", "".join(out)


def _digit(source: str) -> Parsed:
    count = 0
    while count < len(source) and source[count] in "0123456789":
        count += 1
    return (source[count:], int(source[:count])) if count else None


def _var(source: str) -> Parsed:
    count = 0
    for index, char in enumerate(source):
        ascii_letter = char.isascii() and (char.isalpha() if index == 0 else char.isalnum())
        if char != "_" and not ascii_letter:
            break
        count += 1
    return (source[count:], source[:count]) if count else None


def _sequence(source: str, *parsers: Callable[[str], Parsed]) -> Parsed:
    values = []
    for parser in parsers:
        parsed = parser(source)
        if parsed is None:
            return None
        source, value = parsed
        values.append(value)
    return source, values


def _choice(source: str, *parsers: Callable[[str], Parsed]) -> Parsed:
    for parser in parsers:
        parsed = parser(source)
        if parsed is not None:
            return parsed
    return None


def _many(source: str, parser: Callable[[str], Parsed]) -> tuple[str, list[Any]]:
    """`zero_or_more` over a parser that must consume something each time."""
    values = []
    while (parsed := parser(source)) is not None and parsed[0] != source:
        source, value = parsed
        values.append(value)
    return source, values


def _word(word: str) -> Callable[[str], Parsed]:
    return lambda source: _literal(source, word)


def _format(source: str) -> Parsed:
    def conditional_text(terminators: str) -> Callable[[str], Parsed]:
        return lambda rest: _text(rest, TEXT_ESCAPES, terminators)

    def case_change(rest: str) -> Parsed:
        return _choice(rest, *(_word(name) for name in CASE_CHANGES))

    return _choice(
        source,
        lambda rest: _sequence(rest, _word("$"), _digit),
        lambda rest: _sequence(rest, _word("${"), _digit, _word("}")),
        lambda rest: _sequence(rest, _word("${"), _digit, _word(":/"), case_change, _word("}")),
        lambda rest: _sequence(
            rest, _word("${"), _digit, _word(":+"), conditional_text("}"), _word("}")
        ),
        lambda rest: _sequence(
            rest,
            _word("${"),
            _digit,
            _word(":?"),
            conditional_text(":"),
            _word(":"),
            conditional_text("}"),
            _word("}"),
        ),
        lambda rest: _sequence(
            rest,
            _word("${"),
            _digit,
            _word(":"),
            lambda more: (more[1:], "-") if more.startswith("-") else (more, None),
            conditional_text("}"),
            _word("}"),
        ),
    )


def _regex(source: str) -> Parsed:
    """`/regex/format/options`: parsed only to be skipped, since Helix never resolves a snippet
    variable and a tabstop's transform applies only as the user edits it."""

    def replacement_item(rest: str) -> Parsed:
        return _choice(
            rest,
            _format,
            _word("$"),
            lambda more: _text(more, "\\/", "/$"),
        )

    return _sequence(
        source,
        _word("/"),
        lambda rest: _text(rest, "/", "/"),
        _word("/"),
        lambda rest: _many(rest, replacement_item),
        _word("/"),
        lambda rest: _text(rest, "", "}"),
    )


def _tabstop(source: str) -> Parsed:
    short = _sequence(source, _word("$"), _digit)
    if short is not None:
        return short[0], Element("tabstop", tabstop=short[1][1])
    long = _sequence(
        source,
        _word("${"),
        _digit,
        lambda rest: _regex(rest) or (rest, None),
        _word("}"),
    )
    if long is None:
        return None
    _, number, transform, _ = long[1]
    kind: Literal["placeholder", "transform"] = "placeholder" if transform is None else "transform"
    return long[0], Element("tabstop", tabstop=number, tabstop_kind=kind)


def _placeholder(source: str) -> Parsed:
    parsed = _sequence(
        source,
        _word("${"),
        _digit,
        _word(":"),
        lambda rest: _many(rest, lambda more: _anything(more, TEXT_ESCAPES, True)),
        _word("}"),
    )
    if parsed is None:
        return None
    return parsed[0], Element("tabstop", tabstop=parsed[1][1], children=parsed[1][3])


def _choice_tabstop(source: str) -> Parsed:
    head = _sequence(source, _word("${"), _digit, _word("|"))
    if head is None:
        return None
    rest, values = head
    rest, _ = _text(rest, CHOICE_ESCAPES, "|,")
    while rest.startswith(","):
        rest, _ = _text(rest[1:], CHOICE_ESCAPES, "|,")
    if not rest.startswith("|}"):
        return None
    return rest[2:], Element("tabstop", tabstop=values[1], tabstop_kind="choice")


def _variable(source: str) -> Parsed:
    bare = _sequence(source, _word("$"), _var)
    if bare is not None:
        return bare[0], Element("variable", text=bare[1][1])
    braced = _sequence(source, _word("${"), _var, _word("}"))
    if braced is not None:
        return braced[0], Element("variable", text=braced[1][1])
    with_default = _sequence(
        source,
        _word("${"),
        _var,
        _word(":"),
        lambda rest: _many(rest, lambda more: _anything(more, TEXT_ESCAPES, True)),
        _word("}"),
    )
    if with_default is not None:
        values = with_default[1]
        return with_default[0], Element("variable", text=values[1], children=values[3])
    transformed = _sequence(source, _word("${"), _var, _regex, _word("}"))
    if transformed is not None:
        return transformed[0], Element("variable", text=transformed[1][1])
    return None


def _anything(source: str, escapes: str, end_at_brace: bool) -> Parsed:
    terminators = "$}" if end_at_brace else "$"
    parsed = _choice(source, _tabstop, _placeholder, _choice_tabstop, _variable)
    if parsed is not None:
        return parsed
    if source.startswith("$"):
        return source[1:], Element("text", text="$")
    rest, text = _text(source, escapes, terminators)
    return rest, Element("text", text=text)


def parse_snippet(source: str) -> list[Element] | None:
    """`Snippet::parse`; None where Helix fails (it then inserts nothing)."""
    rest, elements = _many(source, lambda more: _anything(more, TEXT_ESCAPES, False))
    if not elements or rest:
        return None
    return elements


@dataclass
class RenderedSnippet:
    text: str
    cursor: int
    """Offset in `text` of the selection's head after insertion: the first tabstop's end."""


def render_snippet(
    elements: list[Element],
    indent: str,
    at_newline: bool,
    line_ending: str,
    tab_width: int,
    tabs: bool = False,
) -> RenderedSnippet:
    """Render the way `Snippet::render` does for one cursor: every line after the first gets
    the indentation of the line the snippet starts on, and each line's own leading whitespace
    keeps its width, written in the document's indent style (`tabs` or spaces)."""
    registry: dict[int, Element] = {}

    def register(items: list[Element], in_last: bool = False) -> None:
        for item in items:
            if item.kind == "tabstop":
                number = LAST_TABSTOP if item.tabstop == 0 else item.tabstop
                if item.tabstop == 0:
                    item.children = None
                if item.children:
                    register(item.children)
                registry.setdefault(number, item)
            elif item.children:
                register(item.children)

    register(elements)
    if max(registry, default=0) != LAST_TABSTOP:
        elements = [*elements, Element("tabstop", tabstop=0)]
        registry[LAST_TABSTOP] = elements[-1]
    out: list[str] = []
    ranges: dict[int, tuple[int, int]] = {}
    state = {"at_newline": at_newline}
    indent_width = 0
    for char in indent:
        indent_width += tab_width - indent_width % tab_width if char == "\t" else 1

    def push_str(text: str, newline: bool) -> None:
        if newline:
            width, original = 0, 0
            for char in text:
                if char == "\t":
                    width += tab_width - (width + indent_width) % tab_width
                elif char == " ":
                    width += 1
                else:
                    break
                original += 1
            if tabs:
                out.append("\t" * (width // tab_width))
                width %= tab_width
            out.append(" " * width)
            text = text[original:]
            if not text:
                state["at_newline"] = True
                return
        out.append(text)

    def push_multiline(text: str) -> None:
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        push_str(lines[0], state["at_newline"])
        for line in lines[1:]:
            out.append(line_ending + indent)
            push_str(line, True)

    def render(items: list[Element]) -> None:
        for item in items:
            if item.kind == "text":
                push_multiline(item.text)
            elif item.kind == "variable":
                if item.children is not None:
                    render(item.children)
            else:
                number = LAST_TABSTOP if item.tabstop == 0 else item.tabstop
                start = len("".join(out))
                source = registry[number]
                if source.tabstop_kind == "placeholder" and source.children:
                    render(source.children)
                ranges.setdefault(number, (start, len("".join(out))))

    render(elements)
    return RenderedSnippet("".join(out), ranges[min(ranges)][1])


# --- Fuzzy filter of the completion menu ------------------------------------------------------


def _folded(char: str) -> str:
    decomposed = unicodedata.normalize("NFKD", char)
    return "".join(part for part in decomposed if not unicodedata.combining(part)).casefold()


def fuzzy_matches(pattern: str, candidate: str) -> bool:
    """Whether nucleo's fuzzy atom (case ignored, diacritics folded) matches at all: every
    character of the pattern, in order. Items that do not match are not in Helix's menu."""
    remaining = iter(_folded(char) for char in candidate)
    return all(any(folded == _folded(char) for folded in remaining) for char in pattern)


def char_is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


# --- The session ------------------------------------------------------------------------------


@dataclass
class CompletionMenu:
    """What Helix's completion popup holds: `shown` are the items the user can see and pick
    (those the typed word matches), in the server's sort order."""

    items: list[dict[str, Any]]
    shown: list[dict[str, Any]]
    filter: str
    is_incomplete: bool
    cursor: int
    version: int


@dataclass
class CodeActionItem:
    title: str
    action: dict[str, Any]
    priority: int


@dataclass
class Diagnostic:
    """A diagnostic as Helix holds it: character offsets, and the fields it sends back."""

    start: int
    end: int
    message: str
    severity: int | None = None
    code: int | str | None = None
    source: str | None = None
    tags: list[int] = field(default_factory=list)
    data: Any = None
    provider: str = "lsp-spark"
    """The server that published it: Helix keeps every server's diagnostics and sends the
    ones overlapping the selection to each server it asks for code actions."""


@dataclass
class Document:
    path: Path
    uri: str
    language_id: str
    text: str
    version: int = 0
    cursor: int = 0
    selection: tuple[int, int] | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    line_ending: str = "\n"
    tab_width: int = 4
    indent_tabs: bool = False
    """Helix's indent style for the document (detected from its text, else the language's):
    spaces, 4 wide, for Python."""


class HelixClient:
    """One language server as Helix runs it, with the documents open in it."""

    def __init__(
        self, process: asyncio.subprocess.Process, config: Any, root: Path | None, cwd: Path
    ) -> None:
        self.process = process
        self.documents: dict[str, Document] = {}
        self.config = config
        self.root_path = root or find_workspace(cwd)[0]
        self.root_uri = root.as_uri() if root is not None else None
        self.workspace_folders = [workspace_folder(self.root_uri)] if self.root_uri else []
        self.capabilities: dict[str, Any] = {}
        self.encoding: Encoding = "utf-16"
        self.status: list[tuple[int, str]] = []
        """`window/showMessage`s: what Helix's status line showed (type, message)."""
        self.requests_while_blocked: list[str] = []
        """Server requests that came while Helix's UI thread waited on the server (resolving a
        code action or completion item): Helix answers them only once that wait is over."""
        self.problems: list[str] = []
        self.sent: list[dict[str, Any]] = []
        self._ids = itertools.count()
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._ui_free = asyncio.Event()
        self._ui_free.set()
        self._tasks: list[asyncio.Task[None]] = []
        self.stderr = bytearray()

    # Starting, as `hx path/to/file.py` does ---------------------------------------------

    @classmethod
    async def start(
        cls,
        command: list[str],
        path: Path,
        *,
        config: Any,
        env: Mapping[str, str],
        roots: tuple[str, ...] = PYTHON_ROOTS,
        cwd: Path | None = None,
    ) -> tuple[HelixClient, Document]:
        """`hx path`: start the server for the file's language the way Helix does (its
        `config` table from languages.toml becomes `initializationOptions`), initialize it
        and open the file. `roots` are the language's root markers."""
        cwd = cwd or path.parent
        root = find_lsp_root(path, roots, cwd)
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=root or find_workspace(cwd)[0],
        )
        client = cls(process, config, root, cwd)
        client._tasks = [
            asyncio.create_task(client._read()),
            asyncio.create_task(client._drain_stderr()),
            asyncio.create_task(client._main_loop()),
        ]
        await client._initialize()
        return client, client.open(path)

    def open(self, path: Path, language_id: str = "python") -> Document:
        """`:open path` (or the file `hx` was started with): `didOpen` at version 0."""
        text = path.read_text()
        document = Document(
            path, path.as_uri(), language_id, text, line_ending="\r\n" if "\r\n" in text else "\n"
        )
        self.documents[document.uri] = document
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": document.uri,
                    "languageId": document.language_id,
                    "version": document.version,
                    "text": document.text,
                }
            },
        )
        return document

    async def _initialize(self) -> None:
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "rootPath": str(self.root_path),
            "rootUri": self.root_uri,
            "capabilities": client_capabilities(),
            "workspaceFolders": self.workspace_folders,
            "clientInfo": {"name": "helix", "version": HELIX_VERSION},
        }
        if self.config is not None:
            params["initializationOptions"] = self.config
        result = await self.request("initialize", params)
        self.capabilities = result.get("capabilities", {})
        encoding = self.capabilities.get("positionEncoding")
        if encoding is not None and encoding not in OFFERED_ENCODINGS:
            self.problems.append(f"invalid position encoding {encoding!r}; Helix uses utf-16")
        self.encoding = encoding if encoding in OFFERED_ENCODINGS else "utf-16"
        not_replayed = [name for name in AUTOMATIC_FEATURES if self.capabilities.get(name)]
        if not_replayed:
            raise NotImplementedError(
                "the server now advertises "
                + ", ".join(
                    f"{name} (Helix sends {AUTOMATIC_FEATURES[name]})" for name in not_replayed
                )
                + ": replay those requests too"
            )
        self.notify("initialized", {})
        if self.config is not None:
            self.notify("workspace/didChangeConfiguration", {"settings": self.config})

    # Typing ------------------------------------------------------------------------------

    def place_cursor(self, document: Document, line: int, column: int) -> None:
        """Move the cursor (no message: Helix tells the server nothing about movement);
        `column` counts characters."""
        document.cursor = line_starts(document.text)[line] + column
        document.selection = None

    def select(self, document: Document, start: tuple[int, int], end: tuple[int, int]) -> None:
        """A selection in normal mode (`x`, `v`...), from (line, column) to (line, column)."""
        starts = line_starts(document.text)
        document.selection = (starts[start[0]] + start[1], starts[end[0]] + end[1])

    async def type(self, document: Document, characters: str) -> CompletionMenu | None:
        """Insert mode, keys pressed in quick succession: each character is one transaction,
        so one `didChange`. After each, Helix's auto-completion looks at the text before the
        cursor: a trigger character of the server asks for completion 5 ms later; word
        characters (`completion-trigger-len` of them) `completion-timeout` after that key,
        even if other characters follow (only a trigger character cuts that wait short). The
        request is for wherever the cursor is by then. Returns the menu that opens, if any."""
        trigger: int | None = None
        for char in characters:
            if char in "([{)]}\"'`\n":
                raise ValueError(
                    f"{char!r}: Helix auto-pairs brackets and quotes and auto-indents new "
                    "lines; type plain characters only"
                )
            offset = document.cursor
            self._apply(
                document, ChangeSet.from_changes(len(document.text), [(offset, offset, char)])
            )
            document.cursor = offset + 1
            if self._trigger_character(document) is not None:
                trigger = TRIGGER_CHARACTER
            elif trigger is None and self._word_characters_before_cursor(document):
                trigger = INVOKED
        if trigger is None:
            return None
        # Helix's own debounce timer, replayed: the request goes out when it fires.
        await asyncio.sleep(0.005 if trigger == TRIGGER_CHARACTER else COMPLETION_TIMEOUT)
        return await self._request_completion(document, manual=False)

    async def complete(self, document: Document) -> CompletionMenu | None:
        """Ctrl-x in insert mode: completion asked for at once."""
        return await self._request_completion(document, manual=True)

    def _trigger_character(self, document: Document) -> str | None:
        before = document.text[: document.cursor]
        triggers = (self.capabilities.get("completionProvider") or {}).get(
            "triggerCharacters"
        ) or []
        return next((trigger for trigger in triggers if before.endswith(trigger)), None)

    def _word_characters_before_cursor(self, document: Document) -> bool:
        """The last `completion-trigger-len` characters (fewer at the document's start) are
        word characters."""
        before = document.text[: document.cursor]
        return all(map(char_is_word, before[-COMPLETION_TRIGGER_LEN:]))

    async def _request_completion(self, document: Document, manual: bool) -> CompletionMenu | None:
        if "completionProvider" not in self.capabilities:
            return None
        trigger = None if manual else self._trigger_character(document)
        context: dict[str, Any] = {"triggerKind": INVOKED}
        if trigger is not None:
            context = {"triggerKind": TRIGGER_CHARACTER, "triggerCharacter": trigger}
        try:
            response = await self.request(
                "textDocument/completion",
                {
                    "textDocument": {"uri": document.uri},
                    "position": pos_to_lsp_pos(document.text, document.cursor, self.encoding),
                    "context": context,
                },
            )
        except (TimeoutError, ResponseError) as error:
            self.problems.append(f"completion request failed: {error}")
            return None
        if isinstance(response, list):
            items, incomplete = response, False
        elif isinstance(response, dict):
            items, incomplete = (
                list(response.get("items") or []),
                bool(response.get("isIncomplete")),
            )
        else:
            items, incomplete = [], False
        items.sort(key=lambda item: item.get("sortText") or item["label"])
        if not items and not incomplete:
            return None
        word = self._word_before_cursor(document)
        shown = [
            item for item in items if fuzzy_matches(word, item.get("filterText") or item["label"])
        ]
        if not shown:
            return None
        return CompletionMenu(items, shown, word, incomplete, document.cursor, document.version)

    def _word_before_cursor(self, document: Document) -> str:
        before = document.text[: document.cursor]
        start = len(before)
        while start > 0 and char_is_word(before[start - 1]):
            start -= 1
        return before[start:]

    async def accept(
        self, document: Document, menu: CompletionMenu, item: dict[str, Any]
    ) -> CompletionMenu | None:
        """Tab to select the item (Helix previews it in the buffer without telling the server),
        then Enter: the preview is undone, the item resolved if it needs to be, and inserted as
        one transaction; its `additionalTextEdits` follow as another. Returns the menu that a
        trigger character at the new cursor opens, if any."""
        if item not in menu.shown:
            raise HelixRefusal(
                f"{item.get('label')!r} is not in Helix's menu (filter {menu.filter!r})"
            )
        if (document.cursor, document.version) != (menu.cursor, menu.version):
            raise ValueError("the document changed since the menu opened")
        preview, _ = self._item_changes(document, item)
        if not preview.is_empty:
            document.version += 2  # the preview, then its undo: neither is sent to the server
        if not self._resolved(item) and (self.capabilities.get("completionProvider") or {}).get(
            "resolveProvider"
        ):
            await asyncio.sleep(RESOLVE_DEBOUNCE)
            with contextlib.suppress(TimeoutError, ResponseError):
                item = await self._block_on("completionItem/resolve", item)
        changes, cursor = self._item_changes(document, item)
        self._apply(document, changes)
        document.cursor = cursor
        additional = item.get("additionalTextEdits") or []
        if additional:
            self._apply(
                document, edits_changeset(document.text, additional, self.encoding, self.problems)
            )
        if self._trigger_character(document) is not None:
            await asyncio.sleep(0.005)
            return await self._request_completion(document, manual=False)
        return None

    @staticmethod
    def _resolved(item: Mapping[str, Any]) -> bool:
        documentation = item.get("documentation")
        if isinstance(documentation, Mapping):
            documentation = documentation.get("value")
        return (
            bool(documentation)
            and bool(item.get("detail"))
            and bool(item.get("additionalTextEdits"))
        )

    def _item_changes(self, document: Document, item: Mapping[str, Any]) -> tuple[ChangeSet, int]:
        """`lsp_item_to_transaction` for the one cursor: the changes, and the cursor after."""
        text, cursor = document.text, document.cursor
        edit = item.get("textEdit")
        if edit is not None:
            edit_range = edit.get("range") or edit["insert"]  # InsertReplaceEdit: insert mode
            problems: list[str] = []
            start, end = lsp_range_to_range(text, edit_range, self.encoding, problems)
            if edit_range["start"]["line"] != edit_range["end"]["line"]:
                problems.append(f"the textEdit range {edit_range} spans lines (LSP: single line)")
            if not start <= cursor <= end:
                problems.append(
                    f"the textEdit range {edit_range} does not contain the cursor "
                    f"{pos_to_lsp_pos(text, cursor, self.encoding)} (LSP requires it)"
                )
            if problems:
                raise HelixRefusal("; ".join(problems))
            new_text = edit["newText"]
        else:
            start = end = cursor
            while start > 0 and char_is_word(text[start - 1]):
                start -= 1
            new_text = item.get("insertText") or item["label"]
        if item.get("kind") == SNIPPET_KIND or item.get("insertTextFormat") == SNIPPET_FORMAT:
            elements = parse_snippet(new_text)
            if elements is None:
                raise HelixRefusal(
                    f"Helix cannot parse {new_text!r} as a snippet and inserts nothing"
                )
            starts = line_starts(text)
            line_start = starts[char_to_line(starts, start)]
            prefix = text[line_start:start]
            indent = prefix[: len(prefix) - len(prefix.lstrip(" \t"))]
            rendered = render_snippet(
                elements,
                indent,
                indent == prefix,
                document.line_ending,
                document.tab_width,
                document.indent_tabs,
            )
            changes = ChangeSet.from_changes(len(text), [(start, end, rendered.text or None)])
            return changes, start + rendered.cursor
        changes = ChangeSet.from_changes(len(text), [(start, end, new_text or None)])
        return changes, start + len(new_text)

    # Code actions ------------------------------------------------------------------------

    async def code_actions(self, document: Document) -> list[CodeActionItem]:
        """Space-a in normal mode: the actions for the selection (the character under the
        cursor when nothing is selected), with the diagnostics that overlap it, in the menu's
        order. Disabled actions are left out."""
        if not self.capabilities.get("codeActionProvider"):
            return []
        start, end = document.selection or (
            document.cursor,
            min(document.cursor + 1, len(document.text)),
        )
        overlapping = [
            diagnostic
            for diagnostic in document.diagnostics
            if start == diagnostic.start or (end > diagnostic.start and diagnostic.end > start)
        ]
        response = await self.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": document.uri},
                "range": {
                    "start": pos_to_lsp_pos(document.text, start, self.encoding),
                    "end": pos_to_lsp_pos(document.text, end, self.encoding),
                },
                "context": {
                    "diagnostics": [
                        self._lsp_diagnostic(document, diagnostic) for diagnostic in overlapping
                    ],
                    "triggerKind": INVOKED,
                },
            },
        )
        items = [
            CodeActionItem(action["title"], action, code_action_priority(action))
            for action in response or []
            if isinstance(action.get("command"), str) or action.get("disabled") is None
        ]
        items.sort(key=lambda item: -item.priority)
        return items

    def _lsp_diagnostic(self, document: Document, diagnostic: Diagnostic) -> dict[str, Any]:
        text = document.text
        found: dict[str, Any] = {
            "range": {
                "start": pos_to_lsp_pos(text, diagnostic.start, self.encoding),
                "end": pos_to_lsp_pos(text, diagnostic.end, self.encoding),
            },
            "message": diagnostic.message,
        }
        optional = {
            "severity": diagnostic.severity,
            "code": diagnostic.code,
            "source": diagnostic.source,
        }
        found |= {key: value for key, value in optional.items() if value is not None}
        if diagnostic.tags:
            found["tags"] = diagnostic.tags
        if diagnostic.data is not None:
            found["data"] = diagnostic.data
        return found

    async def choose(self, item: CodeActionItem) -> None:
        """Enter on a code action: a command is executed; an action without an edit or a
        command is first resolved, on Helix's UI thread (nothing else is handled meanwhile),
        then its edit applied and its command executed."""
        action = item.action
        if isinstance(action.get("command"), str):
            await self._execute(action)
            return
        if action.get("edit") is None or action.get("command") is None:
            provider = self.capabilities.get("codeActionProvider")
            if isinstance(provider, Mapping) and provider.get("resolveProvider"):
                with contextlib.suppress(TimeoutError, ResponseError):
                    action = await self._block_on("codeAction/resolve", action)
        if action.get("edit") is not None:
            self._apply_workspace_edit(action["edit"])
        if action.get("command") is not None:
            await self._execute(action["command"])

    async def _execute(self, command: Mapping[str, Any]) -> None:
        if "executeCommandProvider" not in self.capabilities:
            self.status.append((1, "Language server does not support executing commands"))
            return
        try:
            await self.request(
                "workspace/executeCommand",
                {"command": command["command"], "arguments": list(command.get("arguments") or [])},
            )
        except ResponseError as error:
            self.status.append((1, f"Error executing LSP command: {error}"))

    # Edits ---------------------------------------------------------------------------------

    def _apply(self, document: Document, changes: ChangeSet) -> None:
        """`Document::apply`: a transaction that changes the text bumps the version and is
        sent as one `didChange`."""
        if changes.is_empty:
            return
        old = document.text
        document.text = changes.apply(old)
        document.version += 1
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": document.uri, "version": document.version},
                "contentChanges": changes.content_changes(old, document.text, self.encoding),
            },
        )

    def _apply_workspace_edit(self, edit: Mapping[str, Any]) -> tuple[bool, str | None, int | None]:
        """`Editor::apply_workspace_edit` for open documents: `documentChanges` first (a
        version must match the document's), else `changes`."""
        document_changes = edit.get("documentChanges")
        if document_changes is not None:
            for index, change in enumerate(document_changes):
                if "kind" in change:
                    self.problems.append(
                        f"resource operation {change['kind']} on {change.get('uri')}: Helix "
                        "would carry it out; this replay does not"
                    )
                    return False, "not replayed", index
                failure = self._apply_text_edits(
                    change["textDocument"]["uri"],
                    change["textDocument"].get("version"),
                    change["edits"],
                )
                if failure is not None:
                    return False, failure, index
            return True, None, None
        for index, (uri, edits) in enumerate((edit.get("changes") or {}).items()):
            failure = self._apply_text_edits(uri, None, edits)
            if failure is not None:
                return False, failure, index
        return True, None, None

    def _apply_text_edits(
        self, uri: str, version: int | None, edits: list[dict[str, Any]]
    ) -> str | None:
        document = self.documents.get(uri)
        if document is None:
            self.problems.append(f"an edit for {uri}, which is not open")
            return "file not found"
        if version is not None and version != document.version:
            self.status.append((1, f"outdated workspace edit for {str(document.path)!r}"))
            return "document has changed"
        self._apply(document, edits_changeset(document.text, edits, self.encoding, self.problems))
        return None

    # The server's messages ---------------------------------------------------------------

    async def _main_loop(self) -> None:
        """Helix's event loop: server notifications and requests are handled in order, and
        not at all while the UI thread is blocked on a request of its own."""
        while True:
            message = await self._inbox.get()
            await self._ui_free.wait()
            if "id" in message:
                self._answer(message)
            else:
                self._notified(message)

    def _notified(self, message: Mapping[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        if method == "window/showMessage":
            self.status.append((params["type"], params["message"]))
        elif method == "textDocument/publishDiagnostics":
            self._published(params)

    def _published(self, params: Mapping[str, Any]) -> None:
        document = self.documents.get(params["uri"])
        if document is None:
            return
        if params.get("version") is not None and params["version"] != document.version:
            return
        kept = [
            diagnostic for diagnostic in document.diagnostics if diagnostic.provider != "lsp-spark"
        ]
        for found in params["diagnostics"]:
            start, end = lsp_range_to_range(
                document.text, found["range"], self.encoding, self.problems
            )
            kept.append(
                Diagnostic(
                    start,
                    end,
                    found["message"],
                    found.get("severity"),
                    found.get("code"),
                    found.get("source"),
                    list(found.get("tags") or []),
                    found.get("data"),
                )
            )
        document.diagnostics = kept

    def _answer(self, message: Mapping[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        result: Any = None
        error: dict[str, Any] | None = None
        if method == "workspace/applyEdit":
            applied, reason, index = self._apply_workspace_edit(params["edit"])
            result = {"applied": applied}
            if reason is not None:
                result |= {"failureReason": reason, "failedChange": index}
        elif method == "workspace/workspaceFolders":
            result = self.workspace_folders
        elif method == "workspace/configuration":
            result = [self._configuration(item.get("section")) for item in params["items"]]
        elif method == "window/showMessageRequest":
            self.status.append((params["type"], params["message"]))
            result = None  # the user dismisses Helix's prompt
        elif method == "window/showDocument":
            # Helix opens the file in a view, which succeeds when the file can be read.
            result = {"success": Path(params["uri"].removeprefix("file://")).is_file()}
        elif method not in (
            "window/workDoneProgress/create",
            "client/registerCapability",
            "client/unregisterCapability",
            "workspace/diagnostic/refresh",
        ):
            error = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        reply |= {"error": error} if error is not None else {"result": result}
        self._send(reply)

    def _configuration(self, section: str | None) -> Any:
        """The `config` table, walked down a dotted section; null where a part is missing."""
        found = self.config
        for part in section.split(".") if section else []:
            if not isinstance(found, Mapping) or part not in found:
                return None
            found = found[part]
        return found

    # JSON-RPC ----------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result, for at most Helix's request timeout."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": request_id}
        if params is not None:
            message["params"] = params
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._send(message)
        try:
            response = await asyncio.wait_for(future, REQUEST_TIMEOUT)
        except EOFError:
            # What the server said before it went is in its stderr, read to the end here.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._tasks[1]), EXIT_GRACE)
            raise EOFError(
                f"the server exited; its stderr:\n{self.stderr.decode()[-4000:]}"
            ) from None
        finally:
            self._pending.pop(request_id, None)
        if "error" in response:
            raise ResponseError(method, response["error"])
        return response.get("result")

    async def _block_on(self, method: str, params: Any) -> Any:
        """A request made with `helix_lsp::block_on` on the UI thread: until it is answered,
        the server's own requests and notifications wait."""
        self._ui_free.clear()
        try:
            return await self.request(method, params)
        finally:
            self._ui_free.set()

    async def _read(self) -> None:
        reader = self.process.stdout
        assert reader is not None
        while True:
            length = None
            while (header := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = header.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if not header or length is None:
                for future in self._pending.values():
                    if not future.done():
                        future.set_exception(EOFError("the server closed its output"))
                return
            message = json.loads(await reader.readexactly(length))
            if "method" not in message:
                waiting = self._pending.get(message.get("id"))
                if waiting is not None and not waiting.done():
                    waiting.set_result(message)
                continue
            if "id" in message and not self._ui_free.is_set():
                self.requests_while_blocked.append(message["method"])
            self._inbox.put_nowait(message)

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(65536):
            self.stderr += chunk[: max(0, 1_000_000 - len(self.stderr))]

    async def catch_up(self) -> None:
        """Let Helix's event loop handle what the server has sent so far (after a wait on
        the UI thread, say)."""
        await self._ui_free.wait()
        while not self._inbox.empty():
            await asyncio.sleep(0)
        await asyncio.sleep(0)

    async def quit(self) -> int:
        """`:quit`: `shutdown` and `exit` back to back, without waiting for the answer to
        `shutdown`. Returns the server's exit status once it has exited by itself."""
        self._send({"jsonrpc": "2.0", "method": "shutdown", "id": next(self._ids)})
        self.notify("exit")
        assert self.process.stdin is not None
        with contextlib.suppress(ConnectionError):
            await self.process.stdin.drain()
        try:
            status = await asyncio.wait_for(self.process.wait(), EXIT_GRACE)
        finally:
            await self.close()
        return status

    async def close(self) -> None:
        """Stop the server if it still runs (Helix kills it on exit), and the reading tasks."""
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class ResponseError(Exception):
    def __init__(self, method: str, error: Mapping[str, Any]) -> None:
        super().__init__(f"{method}: {error.get('code')} {error.get('message')}")
        self.error = error


def code_action_priority(action: Mapping[str, Any]) -> int:
    """`lsp_code_action_priority`: by kind, then fixing a diagnostic, then preferred."""
    kind = action.get("kind")
    category = 0
    if isinstance(kind, str):
        parts = kind.split(".")
        if parts[0] == "quickfix":
            category = 7
        elif parts[0] == "refactor":
            sub = parts[1] if len(parts) > 1 else ""
            category = {"extract": 6, "inline": 5, "rewrite": 4, "move": 3, "surround": 2}.get(
                sub, 1
            )
        elif parts[0] == "source":
            category = 1
    priority = category * 4
    if action.get("diagnostics"):
        priority += 2
    if action.get("isPreferred") is True:
        priority += 1
    return priority
