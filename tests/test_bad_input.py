"""Bad input at the JSON-RPC level (issue 7): whatever a client sends, every request gets a
proper error or a valid result, the server stays up with bounded memory, and its view of a
document always equals the client's.

One server process per test; hypothesis drives many examples through it, and each example
ends by checking that the server still answers. The server's view of a document is read from
the chat prompt it sends to the loopback model for an inline completion at the document's end.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from lsp_spark.prompts.chat import HOLE
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import SEEN, TEST_KEY, cerebras_options
from tests.raw_client import RawClient

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
UINTEGER_MAX = 2**31 - 1
WAIT = SEEN
"""Seconds any answer may take, even for a 5 MB document."""
MAX_RSS_MIB = 300
MAX_PROMPT_CHARS = 200_000
MAX_CHARS = 1500
"""Documents in the consistency tests stay this small, so the whole text fits the prompt."""

INLINE = "textDocument/inlineCompletion"
COMPLETION = "textDocument/completion"
STATS = "lspSpark/stats"
EDIT_COMMAND = "lspSpark.editWithInstruction"
STATS_COMMAND = "lspSpark.stats"
ACCEPTED_COMMAND = "lspSpark.accepted"
APPLY_COMMAND = "lspSpark.applyAction"

TERMINATOR = re.compile(r"\r\n|\r|\n")
LINE_ENDS = re.compile(r"(?<=\n)")
"""Where lines split in the huge documents, which end lines with \\n only."""
CODE = ("a", "Zz", "_", " ", "    ", "\t", "(", ")", ":", "#", "'", '"', "def f():", "return")
WIDE = ("\u00e9", "\u00df", "\u4e2d", "\U0001f600", "\U0001d518", "\u200d", "\x00")
BREAKS = ("\n", "\r\n", "\r", "\x0c", "\u2028", "\x85")
TOKENS = (*CODE, *WIDE, *BREAKS)
"""Pieces of documents and edits: ASCII, two-byte, three-byte and astral (surrogate pair in
UTF-16) characters, all three LSP line terminators and characters that other line splitters
(but not LSP) treat as line breaks."""

texts = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
snippets = st.lists(st.sampled_from(TOKENS), max_size=6).map("".join)
languages = st.sampled_from(["python", "javascript", "plaintext"])
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


def examples(count: int, shrink: bool = True) -> settings:
    """Deterministic for CI. Tests whose examples build on what earlier ones left in the
    server do not shrink: a smaller example replayed against that server proves nothing."""
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])
    return settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        database=None,
        phases=phases,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )


class ServerGone(BaseException):
    """The server hung or exited. A BaseException so hypothesis stops at once instead of
    shrinking against a dead process (every later example would fail for that reason)."""


# Positions, in the client's model of a document: code point offsets and LSP positions.


def line_spans(text: str) -> list[tuple[int, int]]:
    """Start and content end (before the terminator) of each line, split as LSP splits."""
    spans = []
    start = 0
    for match in TERMINATOR.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def units(char: str) -> int:
    return 2 if ord(char) > 0xFFFF else 1


def position_of(text: str, offset: int) -> dict[str, int]:
    """The UTF-16 position of a code point offset that is not inside a line terminator."""
    for line, (start, end) in enumerate(line_spans(text)):
        if start <= offset <= end:
            return {"line": line, "character": sum(map(units, text[start:offset]))}
    raise ValueError(f"offset {offset} is inside a line terminator")


def word_start(text: str, offset: int) -> int:
    """Where the word (letters, digits, `_`) right before `offset` starts."""
    while offset > 0 and (text[offset - 1].isalnum() or text[offset - 1] == "_"):
        offset -= 1
    return offset


def offsets(text: str) -> list[int]:
    """Every offset an LSP position can name."""
    return [offset for start, end in line_spans(text) for offset in range(start, end + 1)]


def clamped_offset(text: str, line: int, character: int) -> int:
    """Where the server puts a position (lsp_spark.documents: Document.offset_at): past the
    last line is the end of the text, past a line's content is its end, and inside a
    surrogate pair is the start of its character."""
    spans = line_spans(text)
    if line >= len(spans):
        return len(text)
    start, end = spans[line]
    counted = 0
    for offset in range(start, end):
        counted += units(text[offset])
        if counted > character:
            return offset
    return end


def is_valid_position(text: str, position: Any) -> bool:
    """A position inside the document that does not split a surrogate pair."""
    spans = line_spans(text)
    line, character = position["line"], position["character"]
    if not 0 <= line < len(spans):
        return False
    start, end = spans[line]
    boundaries = itertools.accumulate(map(units, text[start:end]), initial=0)
    return character in set(boundaries)


def end_of(text: str) -> dict[str, int]:
    return position_of(text, len(text))


def normalized(text: str) -> str:
    """The text as the prompt shows it: lines joined by \\n whatever their terminator."""
    return TERMINATOR.sub("\n", text)


def at(uri: str, position: dict[str, int]) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": position,
        "context": {"triggerKind": 2},
    }


def changed_range(text: str, start: int, end: int) -> dict[str, Any]:
    return {"start": position_of(text, start), "end": position_of(text, end)}


class Spark:
    """One server process with the loopback model behind it, and its log for reports."""

    def __init__(self, model: CerebrasTestServer, log: Path) -> None:
        self.model = model
        self.log = log
        # Random text compared with the prompt must reach it unredacted; only the user's
        # own configuration may turn redaction off.
        self.client = RawClient(
            args=["--log-file", str(log)], env={"LSP_SPARK_REDACT_SECRETS": "false"}
        )
        self.sent: deque[str] = deque(maxlen=12)
        self._ids = itertools.count(1)
        self.client.initialize(cerebras_options(model, cache=False, contextSources=[]))
        self._await_backend()

    def _await_backend(self) -> None:
        """`initialized` configures the backend asynchronously; requests before that see none."""
        deadline = time.monotonic() + WAIT
        while self.request(STATS)["result"]["backend"] != "cerebras":
            if time.monotonic() > deadline:
                raise self.gone("the backend was never configured")
            time.sleep(0.02)

    def gone(self, what: str) -> ServerGone:
        sent = "\n".join(self.sent)
        tail = self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""
        return ServerGone(f"{what}\n--- last messages sent:\n{sent}\n--- server log:\n{tail}")

    def write(self, data: bytes) -> None:
        self.sent.append(repr(data[:300]))
        try:
            self.client.write(data)
        except (BrokenPipeError, ValueError) as error:
            raise self.gone(f"the server stopped reading: {error!r}") from None

    def send(self, message: dict[str, Any]) -> None:
        self.sent.append(repr(message)[:300])
        try:
            self.client.send(message)
        except (BrokenPipeError, ValueError) as error:
            raise self.gone(f"the server stopped reading: {error!r}") from None

    def messages_until(self, request_id: Any, timeout: float = WAIT) -> list[dict[str, Any]]:
        try:
            return self.client.messages_until(request_id, timeout)
        except (TimeoutError, EOFError) as error:
            raise self.gone(str(error)) from None

    def exchange(
        self, method: str, params: Any = None, timeout: float = WAIT
    ) -> list[dict[str, Any]]:
        """Send a request; everything the server sent until its response, which comes last."""
        request_id = f"spark-{next(self._ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.messages_until(request_id, timeout)

    def request(self, method: str, params: Any = None, timeout: float = WAIT) -> dict[str, Any]:
        return self.exchange(method, params, timeout)[-1]

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def responses_to_this_and_stats(self) -> list[dict[str, Any]]:
        """The responses (not notifications) the server sends until it answers a stats
        request sent now; that answer comes last."""
        request_id = f"spark-{next(self._ids)}"
        self.send({"jsonrpc": "2.0", "id": request_id, "method": STATS})
        return [m for m in self.messages_until(request_id) if "method" not in m]

    def assert_alive(self) -> None:
        """Every example ends here: the server still answers a plain request."""
        assert isinstance(self.request(STATS).get("result"), dict)

    def open(self, text: str, language: str = "python") -> str:
        uri = f"file:///work/doc-{next(self._ids)}.py"
        item = {"uri": uri, "languageId": language, "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})
        return uri

    def change(self, uri: str, version: int, changes: list[dict[str, Any]]) -> None:
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes},
        )

    def prompt_code(self, uri: str, position: dict[str, int]) -> str:
        """The document text the server put in the prompt around `position`, without the
        header and the cursor marker and scope sentence after it."""
        before = len(self.model.completion_requests)
        reply = self.request(INLINE, at(uri, position))
        assert "result" in reply, reply
        assert len(self.model.completion_requests) == before + 1, "no prompt was sent"
        content = self.model.completion_requests[-1].body["messages"][-1]["content"]
        header, _, rest = content.partition("\n\n")
        assert header.startswith("File: "), content
        code, marker, scope = rest.rpartition(HOLE + "\n\n")
        assert marker and HOLE not in code and "\n\n" not in scope, content
        return code

    def server_text(self, uri: str, client_text: str) -> str:
        """The server's whole view of a small document, from a prompt at its end."""
        return self.prompt_code(uri, end_of(client_text))

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def logged_since(self, since: int) -> str:
        """What the server logged from byte `since` of the log on."""
        with self.log.open("rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace")

    def assert_quiet_log(self, since: int) -> None:
        """Valid input must not make the server log errors (from byte `since` of the log on)."""
        written = self.logged_since(since)
        assert "Traceback" not in written and " ERROR " not in written, written[-4000:]

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def spark(tmp_path: Path, cerebras: CerebrasTestServer) -> Iterator[Spark]:
    cerebras.config.default_reply = "value"
    server = Spark(cerebras, tmp_path / "server.log")
    yield server
    server.close()


def replay_edits(
    spark: Spark, data: st.DataObject, versions: st.SearchStrategy[int] | None = None
) -> None:
    """Open a document, apply random valid incremental edits computed on the client's copy,
    and check that the server's copy is the same."""
    text = data.draw(texts, label="text")
    uri = spark.open(text, data.draw(languages, label="language"))
    version = 1
    for _ in range(data.draw(st.integers(1, 12), label="batches")):
        changes: list[dict[str, Any]] = []
        for _ in range(data.draw(st.integers(1, 3), label="changes")):
            if data.draw(st.integers(0, 19)) == 0:
                text = data.draw(texts, label="whole text")
                changes.append({"text": text})
                continue
            places = offsets(text)
            first = data.draw(st.integers(0, len(places) - 1), label="start")
            last = min(first + data.draw(st.integers(0, 8), label="length"), len(places) - 1)
            start, end = places[first], places[last]
            new = data.draw(snippets, label="new text") if len(text) < MAX_CHARS else ""
            changes.append({"range": changed_range(text, start, end), "text": new})
            text = text[:start] + new + text[end:]
        version = data.draw(versions, label="version") if versions is not None else version + 1
        spark.change(uri, version, changes)
    assert spark.server_text(uri, text) == normalized(text)
    spark.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    spark.assert_alive()


@given(data=st.data())
@examples(300)
def test_the_servers_text_equals_the_clients_after_random_edits(
    spark: Spark, data: st.DataObject
) -> None:
    logged = spark.log_size()
    replay_edits(spark, data)
    spark.assert_quiet_log(logged)


@given(data=st.data())
@examples(100)
def test_regressing_duplicate_and_odd_versions_do_not_lose_edits(
    spark: Spark, data: st.DataObject
) -> None:
    """Versions are the client's bookkeeping; the text must follow the changes regardless."""
    versions = st.sampled_from([0, 1, 2, -1, -(2**31), UINTEGER_MAX, 7, 7, 3])
    logged = spark.log_size()
    replay_edits(spark, data, versions)
    spark.assert_quiet_log(logged)


@given(data=st.data())
@examples(200)
def test_ranges_past_the_end_inside_surrogate_pairs_reversed_or_overlapping_are_clamped(
    spark: Spark, data: st.DataObject
) -> None:
    """Each change of a batch is aimed at the text before the batch, as a confused client
    would: later ranges overlap or miss the text the earlier ones left."""
    text = data.draw(texts.map(lambda text: "\U0001f600x\U0001f600\r\n" + text), label="text")
    uri = spark.open(text)
    for version in range(2, 2 + data.draw(st.integers(1, 4), label="batches")):
        spans = line_spans(text)
        widest = max(sum(map(units, text[start:end])) for start, end in spans)
        lines = st.integers(0, len(spans) + 1) | st.just(UINTEGER_MAX)
        characters = st.integers(0, widest + 2) | st.just(UINTEGER_MAX)
        changes: list[dict[str, Any]] = []
        for _ in range(data.draw(st.integers(1, 3), label="changes")):
            start = {"line": data.draw(lines), "character": data.draw(characters)}
            end = {"line": data.draw(lines), "character": data.draw(characters)}
            changes.append({"range": {"start": start, "end": end}, "text": data.draw(snippets)})
        for change in changes:
            ends = sorted(
                clamped_offset(text, point["line"], point["character"])
                for point in change["range"].values()
            )
            text = text[: ends[0]] + change["text"] + text[ends[1] :]
        spark.change(uri, version, changes)
    assert spark.server_text(uri, text) == normalized(text)
    spark.assert_alive()


DOCUMENTS = (
    "x = '\U0001f600\U0001f600'\ny = 1\n",
    "# \u4e2d\u6587 \U0001d518\r\nvalue = \u00e9\r\n",
    "",
    "no newline \U0001f600",
    "lone \ud800 surrogates \udc00 here\n",
)


@pytest.fixture
def documents(spark: Spark) -> dict[str, str]:
    return {spark.open(text): text for text in DOCUMENTS}


@given(data=st.data())
@examples(200, shrink=False)
def test_any_position_gets_a_result_or_invalid_params(
    spark: Spark, documents: dict[str, str], data: st.DataObject
) -> None:
    """Past the end, huge, negative, inside a surrogate pair: in-range numbers clamp (and a
    suggestion's range starts at the clamped cursor, or the word before it for a completion
    item), others are InvalidParams."""
    uri = data.draw(st.sampled_from(sorted(documents)), label="uri")
    text = documents[uri]
    odd = st.sampled_from([UINTEGER_MAX, UINTEGER_MAX + 1, 2**53, -1, -(2**31)])
    line = data.draw(st.integers(0, 4) | odd, label="line")
    character = data.draw(st.integers(0, 14) | odd, label="character")
    method = data.draw(st.sampled_from([INLINE, COMPLETION]), label="method")
    params = at(uri, {"line": line, "character": character})
    if method == COMPLETION:
        del params["context"]
    reply = spark.request(method, params)
    if not (0 <= line <= UINTEGER_MAX and 0 <= character <= UINTEGER_MAX):
        assert reply.get("error", {}).get("code") == INVALID_PARAMS, reply
    else:
        assert "result" in reply, reply
        offset = clamped_offset(text, line, character)
        # A completion item's edit also replaces the word typed before the cursor.
        start = position_of(text, offset if method == INLINE else word_start(text, offset))
        items = reply["result"]["items"]
        for item in items:
            edit_range = item["range"] if method == INLINE else item["textEdit"]["range"]
            assert edit_range["start"] == start, (reply, start)
            assert is_valid_position(text, edit_range["end"]), reply
    spark.assert_alive()


@pytest.fixture
def closed(spark: Spark) -> str:
    """A document that was open once."""
    uri = spark.open("x = 1\n")
    spark.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return uri


@given(data=st.data())
@examples(60, shrink=False)
def test_changes_to_documents_never_opened_are_ignored(
    spark: Spark, closed: str, data: st.DataObject
) -> None:
    """No phantom document appears: an inline completion there is empty and asks no model."""
    uri = data.draw(
        st.sampled_from([closed, "", "untitled:Untitled-1", "file:///%zz", "not a uri"])
        | st.text(max_size=30),
        label="uri",
    )
    small = st.integers(0, 3)
    edit: dict[str, Any] = {
        "range": {
            "start": {"line": data.draw(small), "character": data.draw(small)},
            "end": {"line": data.draw(small), "character": data.draw(small)},
        },
        "text": data.draw(snippets),
    }
    changes: list[dict[str, Any]] = data.draw(
        st.sampled_from([[edit], [{"text": "y = 2\n"}], [edit, edit]])
    )
    spark.change(uri, data.draw(st.integers(-3, 9)), changes)
    asked = len(spark.model.completion_requests)
    reply = spark.request(INLINE, at(uri, {"line": 0, "character": 0}))
    assert reply.get("result") == {"items": []}, reply
    assert len(spark.model.completion_requests) == asked
    spark.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    spark.assert_alive()


MALFORMED_CHANGES: dict[str, Callable[[str], Any]] = {
    "wrong-types": lambda uri: {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [
            {
                "range": {"start": {"line": "0", "character": 0}, "end": {"line": 0}},
                "text": 5,
            }
        ],
    },
    "changes-not-a-list": lambda uri: {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": {"text": "y = 2\n"},
    },
    "no-document": lambda uri: {"contentChanges": [{"text": "y = 2\n"}]},
    "null-params": lambda uri: None,
    "never-opened": lambda uri: {
        "textDocument": {"uri": uri + ".never-opened", "version": 2},
        "contentChanges": [{"text": "y = 2\n"}],
    },
}


@pytest.mark.parametrize("case", MALFORMED_CHANGES)
def test_a_malformed_change_logs_one_warning_line_and_changes_nothing(
    spark: Spark, case: str
) -> None:
    """What was wrong, on one line; a traceback (for pygls' params reader, several KB at
    ERROR level each time) would bury the log of a client that keeps sending them."""
    text = "x = 1\n"
    uri = spark.open(text)
    spark.assert_alive()
    logged = spark.log_size()
    spark.notify("textDocument/didChange", MALFORMED_CHANGES[case](uri))
    spark.assert_alive()
    written = spark.logged_since(logged).splitlines()
    assert len(written) == 1 and " WARNING " in written[0], written
    assert spark.server_text(uri, text) == text


def mutated(data: st.DataObject, value: Any) -> Any:
    """`value` with one part replaced by junk or one key removed."""
    if not isinstance(value, dict | list) or not value or data.draw(st.integers(0, 3)) == 0:
        return data.draw(json_values, label="junk")
    if isinstance(value, list):
        index = data.draw(st.integers(0, len(value) - 1))
        return [*value[:index], mutated(data, value[index]), *value[index + 1 :]]
    key = data.draw(st.sampled_from(sorted(value)))
    if data.draw(st.integers(0, 4)) == 0:
        return {name: part for name, part in value.items() if name != key}
    return {**value, key: mutated(data, value[key])}


def request_templates(uri: str) -> dict[str, Any]:
    position = {"line": 0, "character": 5}
    span = {"start": position, "end": {"line": 1, "character": 0}}
    return {
        INLINE: at(uri, position),
        COMPLETION: {"textDocument": {"uri": uri}, "position": position},
        "textDocument/codeAction": {
            "textDocument": {"uri": uri},
            "range": span,
            "context": {"diagnostics": []},
        },
        "codeAction/resolve": {"title": "Rewrite", "data": {"uri": uri, "range": span}},
        "workspace/executeCommand": {"command": STATS_COMMAND, "arguments": [uri]},
        STATS: {},
    }


def notification_templates(uri: str) -> dict[str, Any]:
    span = {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 2}}
    item = {
        "insertText": "x",
        "command": {"title": "Accept", "command": ACCEPTED_COMMAND, "arguments": [uri]},
    }
    other = "file:///work/junk-target.py"
    return {
        "textDocument/didOpen": {
            "textDocument": {"uri": other, "languageId": "python", "version": 1, "text": "x\n"}
        },
        "textDocument/didChange": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": span, "text": "y"}],
        },
        "textDocument/didClose": {"textDocument": {"uri": other}},
        "textDocument/didSave": {"textDocument": {"uri": uri}},
        "textDocument/didShowCompletion": {"item": item},
        "textDocument/didPartiallyAcceptCompletion": {"item": item, "acceptedLength": 1},
        "$/cancelRequest": {"id": "spark-1"},
        "$/setTrace": {"value": "off"},
        "window/workDoneProgress/cancel": {"token": "t"},
        "workspace/didChangeWatchedFiles": {"changes": []},
        "workspace/didChangeWorkspaceFolders": {"event": {"added": [], "removed": []}},
    }


MISSING = object()


@pytest.fixture
def target(spark: Spark) -> str:
    return spark.open("import os\nvalue = os.getcwd()\n")


@given(data=st.data())
@examples(300, shrink=False)
def test_missing_null_and_wrong_params_get_invalid_params_or_a_result(
    spark: Spark, target: str, data: st.DataObject
) -> None:
    """Requests are answered (a result or InvalidParams, never an internal error); a
    notification is never answered."""
    uri = target
    is_request = data.draw(st.booleans(), label="request")
    templates = request_templates(uri) if is_request else notification_templates(uri)
    method = data.draw(st.sampled_from(sorted(templates)), label="method")
    template = templates[method]
    if method == "workspace/executeCommand":
        commands = [STATS_COMMAND, ACCEPTED_COMMAND, EDIT_COMMAND, APPLY_COMMAND, "nope"]
        template = {"command": data.draw(st.sampled_from(commands)), "arguments": [uri]}
        if template["command"] in (EDIT_COMMAND, APPLY_COMMAND):
            template["arguments"] = data.draw(st.lists(json_values, max_size=2))
    kind = data.draw(st.sampled_from(["missing", "null", "junk", "mutated"]), label="params")
    params: Any = MISSING if kind == "missing" else None
    if kind == "junk":
        params = data.draw(json_values, label="junk params")
    elif kind == "mutated":
        params = mutated(data, template)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not MISSING:
        message["params"] = params
    if is_request:
        message["id"] = f"junk-{data.draw(st.integers(0, 10**6))}"
        spark.send(message)
        reply = spark.messages_until(message["id"])[-1]
        assert "result" in reply or reply.get("error", {}).get("code") == INVALID_PARAMS, reply
        spark.assert_alive()
    else:
        spark.send(message)
        answers = spark.responses_to_this_and_stats()
        assert len(answers) == 1 and "result" in answers[0], answers


WHERE = {"textDocument": {"uri": "file:///work/any.py"}, "position": {"line": 0, "character": 0}}
UNIMPLEMENTED = {
    "textDocument/hover": WHERE,
    "textDocument/definition": WHERE,
    "textDocument/references": {**WHERE, "context": {"includeDeclaration": True}},
    "textDocument/rename": {**WHERE, "newName": "renamed"},
    "workspace/symbol": {"query": "f"},
}
"""LSP methods the server does not offer, with valid params: only the method is wrong."""


@given(data=st.data())
@examples(150, shrink=False)
def test_unknown_methods_get_method_not_found_and_unknown_notifications_are_ignored(
    spark: Spark, data: st.DataObject
) -> None:
    method = data.draw(
        st.text(min_size=1, max_size=20).map(lambda name: "x-unknown/" + name)
        | st.text(min_size=1, max_size=20).map(lambda name: "$/x-" + name)
        | st.sampled_from(sorted(UNIMPLEMENTED)),
        label="method",
    )
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if method in UNIMPLEMENTED:
        message["params"] = UNIMPLEMENTED[method]
    elif data.draw(st.booleans(), label="with params"):
        message["params"] = data.draw(json_values, label="params")
    if data.draw(st.booleans(), label="request"):
        message["id"] = data.draw(st.integers(0, 10**6) | st.text(max_size=8), label="id")
        spark.send(message)
        reply = spark.messages_until(message["id"])[-1]
        assert reply.get("error", {}).get("code") == METHOD_NOT_FOUND, reply
        spark.assert_alive()
    else:
        spark.send(message)
        answers = spark.responses_to_this_and_stats()
        assert len(answers) == 1 and "result" in answers[0], answers


STATS_BODY = b'{"jsonrpc": "2.0", "id": "truncated", "method": "lspSpark/stats"}'


@given(data=st.data())
@examples(150, shrink=False)
def test_binary_junk_and_invalid_json_never_get_a_result(spark: Spark, data: st.DataObject) -> None:
    """A body that is no request may earn an error, but never a result, and the server
    keeps reading the messages after it."""
    body = data.draw(
        st.binary(max_size=300)
        | st.text(max_size=100).map(str.encode)
        | st.integers(0, len(STATS_BODY) - 1).map(lambda cut: STATS_BODY[:cut])
        | json_values.map(lambda value: repr(value).encode()),
        label="body",
    )
    spark.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answers = spark.responses_to_this_and_stats()
    assert all("result" not in m for m in answers[:-1]), answers
    assert "result" in answers[-1], answers


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spark]:
    """One server for the protocol checks below: each sends one well-framed message and
    then checks that the server still answers, so they cannot disturb one another."""
    with CerebrasTestServer(api_key=TEST_KEY, models=["gpt-oss-120b"]) as model:
        server = Spark(model, tmp_path_factory.mktemp("protocol") / "server.log")
        yield server
        server.close()


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"jsonrpc": "2.0", "id": 1, "method": ', b"\xff\xfe\x00\x01"],
    ids=["unquoted", "truncated", "binary"],
)
def test_invalid_json_is_answered_with_a_parse_error(shared: Spark, body: bytes) -> None:
    """JSON-RPC 2.0 section 5: a body that is not JSON gets a Parse error with a null id."""
    shared.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answers = shared.responses_to_this_and_stats()
    errors = [m for m in answers if m.get("id") is None]
    assert [m.get("error", {}).get("code") for m in errors] == [PARSE_ERROR], answers


@pytest.mark.parametrize(
    ("message", "request_id"),
    [
        ({"jsonrpc": "2.0", "id": 9, "method": 5}, 9),
        ({"jsonrpc": "2.0", "id": {"an": "object"}, "method": STATS}, None),
        ({"jsonrpc": "2.0", "id": [1], "method": STATS}, None),
    ],
    ids=["method-not-a-string", "id-an-object", "id-an-array"],
)
def test_a_malformed_request_is_answered_with_invalid_request(
    shared: Spark, message: dict[str, Any], request_id: Any
) -> None:
    """JSON-RPC 2.0 section 5: a message that is no valid request gets Invalid Request, with
    its id when that can be read and null otherwise."""
    shared.send(message)
    answers = shared.responses_to_this_and_stats()
    errors = [m for m in answers[:-1] if m.get("id") == request_id]
    assert [m.get("error", {}).get("code") for m in errors] == [INVALID_REQUEST], answers
    shared.assert_alive()


@pytest.mark.parametrize(
    "message",
    [
        {"id": 11, "method": STATS},
        {"jsonrpc": "1.0", "id": 11, "method": STATS},
        {"jsonrpc": "2.0", "id": 11, "method": "$/cancelRequest", "params": {"id": 1}},
    ],
    ids=["no-jsonrpc-member", "jsonrpc-1.0", "notification-method-with-an-id"],
)
def test_every_message_with_an_id_gets_an_answer(shared: Spark, message: dict[str, Any]) -> None:
    """A client waits for the response to anything it sent with an id: a result or an error,
    but something."""
    shared.send(message)
    answers = shared.responses_to_this_and_stats()
    assert [m.get("id") for m in answers[:-1]] == [11], answers


JUNK_SETTINGS: list[tuple[Any, bool]] = [
    (None, False),
    (5, False),
    ([], False),
    ({"lspSpark": 5}, False),
    ({"lspSpark": {"debounceMs": "soon", "maxTokens": -1, "backend": "nope"}}, True),
    ({"lspSpark": {"enable": None, "contextSources": 7, "exclude": {"a": 1}}}, True),
]
"""Settings pushes with the wrong shape, and whether the user must hear about them."""


def test_junk_settings_leave_a_working_server(spark: Spark) -> None:
    """Invalid values fall back to defaults, and the user is told which were ignored. The
    pushes that carry settings at all keep the loopback model's address and key, so the
    answer comes from it in every round (without them `auto` means the embedded model,
    whose first load on a busy machine can take longer than an answer may)."""
    connection = {"apiKey": TEST_KEY, "baseUrl": spark.model.base_url}
    for settings_value, told in JUNK_SETTINGS:
        pushed = settings_value
        if isinstance(settings_value, dict) and isinstance(settings_value.get("lspSpark"), dict):
            pushed = {"lspSpark": {**connection, **settings_value["lspSpark"]}}
        spark.notify("workspace/didChangeConfiguration", {"settings": pushed})
        uri = spark.open("def add(a, b):\n    ")
        messages = spark.exchange(INLINE, at(uri, {"line": 1, "character": 4}))
        assert "result" in messages[-1], (settings_value, messages[-1])
        shown = [
            m["params"]["message"] for m in messages if m.get("method") == "window/showMessage"
        ]
        assert any("ignored settings" in text for text in shown) == told, (settings_value, shown)
        assert spark.request(STATS)["result"]["backend"] == "cerebras", settings_value
        spark.assert_alive()


FUNCTIONS = "".join(f"def f_{n}(x):\n    return x + {n}\n" for n in range(25_000))
HUGE_DOCUMENTS = {
    "50000-lines": ("python", FUNCTIONS),
    "5-MB": ("python", "value = 'abcdefghij' * 3  # \u00e9\U0001f600 comment\n" * 130_000),
    "5-MB-one-line": ("javascript", "var x=[" + "1," * 2_600_000 + "];\n"),
}


@pytest.mark.parametrize("name", sorted(HUGE_DOCUMENTS))
def test_huge_documents_are_answered_in_time_and_memory_is_returned(
    spark: Spark, name: str
) -> None:
    """Open, edit and complete in a huge document: every answer within WAIT, the prompt a
    window of the text before the cursor rather than the file, and the memory given back
    after closing it."""
    language, text = HUGE_DOCUMENTS[name]
    uri = spark.open(text, language)
    spark.assert_alive()
    lines = LINE_ENDS.split(text)
    middle = len(lines) // 2
    edits = [(0, 0), (middle, 0), (len(lines) - 2, 3), (len(lines) - 1, 0)]
    for version, (row, column) in enumerate(edits * 3, start=2):
        point = {"line": row, "character": column}
        spark.change(uri, version, [{"range": {"start": point, "end": point}, "text": "z"}])
        lines[row] = lines[row][:column] + "z" + lines[row][column:]
        spark.assert_alive()
    longest = max(range(len(lines)), key=lambda row: len(lines[row]))
    content = lines[longest].rstrip("\r\n")
    cursors = [(middle, 0), (longest, len(content)), (len(lines) - 1, len(lines[-1]))]
    for row, column in cursors:
        cursor = {"line": row, "character": sum(map(units, lines[row][:column]))}
        asked = len(spark.model.completion_requests)
        reply = spark.request(INLINE, at(uri, cursor))
        assert "items" in reply.get("result", {}), reply
        if len(spark.model.completion_requests) > asked:
            prompt = spark.model.completion_requests[-1].body["messages"][-1]["content"]
            assert len(prompt) < MAX_PROMPT_CHARS, (cursor, len(prompt))
            code = prompt.partition("\n\n")[2].rpartition(HOLE)[0]
            before = normalized("".join(lines[:row]) + lines[row][:column])
            assert code and before.endswith(code), cursor
    spark.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    spark.assert_alive()
    assert spark.client.rss_mib() < MAX_RSS_MIB


# Framing errors desynchronise the stream, so each runs last, in a process of its own.


@pytest.mark.parametrize(
    "header",
    [b"Content-Length: 200\r\n\r\n", b"Content-Length: 20\r\n\r\n"],
    ids=["body-shorter-than-content-length", "body-longer-than-content-length"],
)
def test_a_wrong_content_length_is_survived_or_ends_the_server(spark: Spark, header: bytes) -> None:
    """After a broken frame the server either answers again or exits; it must never sit
    alive but deaf. And it exits when the client closes the stream."""
    spark.write(header + b'{"jsonrpc": "2.0", "id": "lost", "method": "lspSpark/stats"}')
    # The stream is bytes, not timing: five requests at once frame as they would one by one.
    # A frame too long swallows the first of them; the server resynchronises on a later one.
    again = [f"again-{attempt}" for attempt in range(5)]
    try:
        for request_id in again:
            spark.client.send({"jsonrpc": "2.0", "id": request_id, "method": STATS})
    except BrokenPipeError:
        pass
    try:
        spark.client.read_until(
            lambda message: message.get("id") in again, "an answer to any of them", WAIT
        )
    except EOFError:
        pass  # it exited
    except TimeoutError:
        pytest.fail("the server neither answers nor exits after a broken frame")
    exited = spark.client.process.poll() is not None
    if not exited:
        assert spark.client.process.stdin is not None
        spark.client.process.stdin.close()
        spark.client.process.wait(timeout=WAIT)
