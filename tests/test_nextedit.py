"""Next-edit predictions through the real server and the loopback Cerebras server."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.client import LanguageClient

from lsp_spark.nextedit.engine import UNOPENED_WITH_PROBLEMS
from lsp_spark.nextedit.history import EDITS_KEPT, ROWS_KEPT
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.testing.nextedit_model import is_next_edit_request, scripted_reply
from tests.conftest import QUIET, SEEN, TEST_KEY, cerebras_options, edit_text, open_document
from tests.test_actions import close, launch

pytestmark = pytest.mark.asyncio(loop_scope="module")
FILES = itertools.count(1)

AREA = """def area(width, height):
    \"\"\"The rectangle's area.\"\"\"
    if width < 0:
        raise ValueError("negative width")
    return width * height


def total(rows):
    return sum(area(w, h) for w, h in rows)
"""
RENAMED = AREA.replace("width", "w").replace("negative w", "negative width")


@pytest.fixture(scope="module")
def shared_cerebras() -> Iterator[CerebrasTestServer]:
    with CerebrasTestServer(api_key=TEST_KEY) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_server(shared_cerebras: CerebrasTestServer) -> AsyncIterator[LanguageClient]:
    """One server for the module: each test works on a file of its own."""
    client = await launch(cerebras_options(shared_cerebras, nextEdit=True))
    yield client
    await close(client)


Spark = tuple[LanguageClient, CerebrasTestServer, str]


@pytest_asyncio.fixture(loop_scope="module")
async def spark(shared_server: LanguageClient, shared_cerebras: CerebrasTestServer) -> Spark:
    """The shared server, the loopback server's records cleared, and a new file's URI."""
    shared_cerebras.reset()
    return shared_server, shared_cerebras, f"file:///work/shapes{next(FILES)}.py"


def scripted(server: CerebrasTestServer, expected: str) -> None:
    def reply(request: dict[str, Any]) -> str:
        return scripted_reply(request, expected) if is_next_edit_request(request) else ""

    server.config.reply_fn = reply


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


async def ask(client: LanguageClient, uri: str, line: int, character: int) -> list[dict[str, Any]]:
    result = await client.protocol.send_request_async(
        "textDocument/copilotInlineEdit",
        {
            "textDocument": {"uri": uri, "version": 0},
            "position": {"line": line, "character": character},
        },
    )
    return plain(result)["edits"]


async def stats(client: LanguageClient) -> dict[str, Any]:
    return plain(await client.protocol.send_request_async("lspSpark/stats", None))


def apply(text: str, edit: dict[str, Any], eol: str = "\n", encoding: str = "utf-16") -> str:
    """`edit` applied to `text`, its columns counted in `encoding` code units."""
    lines = text.split(eol)
    width = 2 if encoding == "utf-16" else 4

    def offset(position: dict[str, int]) -> int:
        line, remaining, column = lines[position["line"]], position["character"], 0
        while remaining > 0:
            remaining -= width if ord(line[column]) > 0xFFFF else 1
            column += 1
        return sum(len(row) + len(eol) for row in lines[: position["line"]]) + column

    start, end = edit["range"]["start"], edit["range"]["end"]
    return text[: offset(start)] + edit["text"] + text[offset(end) :]


def send_edit(client: LanguageClient, uri: str, version: int, edit: dict[str, Any]) -> None:
    start, end = edit["range"]["start"], edit["range"]["end"]
    position = (start["line"], start["character"]), (end["line"], end["character"])
    edit_text(client, uri, version, *position, edit["text"])


async def renamed_width(spark: Spark, expected: str) -> None:
    """The user renamed `width` on line 0 of AREA; the model will predict `expected`."""
    client, cerebras, uri = spark
    scripted(cerebras, expected)
    open_document(client, AREA, uri)
    edit_text(client, uri, 2, (0, 9), (0, 14), "w")


async def test_a_rename_is_offered_at_each_use_and_walked_with_one_model_call(spark: Spark) -> None:
    client, cerebras, uri = spark
    await renamed_width(spark, RENAMED)
    text = AREA.replace("area(width", "area(w")
    version = 2
    asked = []
    for _ in range(2):
        edits = await ask(client, uri, 0, 10)
        asked.append(sum(is_next_edit_request(r.body) for r in cerebras.completion_requests))
        first = edits[0]
        assert first["textDocument"] == {"uri": uri, "version": version}
        assert first["text"] == "w", edits
        text = apply(text, first)
        version += 1
        send_edit(client, uri, version, first)
    assert text == RENAMED
    assert asked == [1, 1], "the second use comes from the same prediction"


async def test_positions_count_in_the_negotiated_encoding_and_keep_crlf(spark: Spark) -> None:
    """A line with an emoji (two UTF-16 units, four UTF-8 bytes) before the renamed use."""
    shared, cerebras, uri = spark
    before = 'def greet(name):\r\n    print("🙂 hi", name)\r\n    return name\r\n'
    expected = before.replace("name", "who")
    scripted(cerebras, expected)
    utf8 = await launch(cerebras_options(cerebras, nextEdit=True), encodings=["utf-8"])
    try:
        for client, encoding, column in ((shared, "utf-16", 19), (utf8, "utf-8", 21)):
            open_document(client, before, uri)
            edit_text(client, uri, 2, (0, 10), (0, 14), "who")
            text = before.replace("greet(name", "greet(who")
            edits = await ask(client, uri, 0, 13)
            assert [(e["range"]["start"], e["range"]["end"], e["text"]) for e in edits] == [
                ({"line": 1, "character": column}, {"line": 1, "character": column + 4}, "who"),
                ({"line": 2, "character": 11}, {"line": 2, "character": 15}, "who"),
            ]
            for edit in reversed(edits):
                text = apply(text, edit, "\r\n", encoding)
            assert text == expected
    finally:
        await close(utf8)


async def test_a_keystroke_cancels_the_prediction_and_closes_its_stream(spark: Spark) -> None:
    client, cerebras, uri = spark
    cerebras.config.ttft = QUIET
    try:
        open_document(client, AREA, uri)
        edit_text(client, uri, 2, (0, 9), (0, 14), "w")
        asked = asyncio.ensure_future(ask(client, uri, 0, 10))
        await cerebras.wait_for_async(lambda: len(cerebras.completion_requests) == 1, SEEN)
        cancelled = (await stats(client))["nextEdit"]["cancelled"]
        edit_text(client, uri, 3, (0, 10), (0, 10), "i")
        await cerebras.wait_for_async(lambda: len(cerebras.completion_requests) == 2, SEEN)
        first = cerebras.completion_requests[0]
        await cerebras.wait_for_async(lambda: first.client_hung_up, SEEN)
        assert first.tokens_sent == 0
        assert (await stats(client))["nextEdit"]["cancelled"] == cancelled + 1
        assert await asyncio.wait_for(asked, SEEN) == [], "an answer for an older version"
    finally:
        cerebras.config.ttft = 0.0
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
        )


async def test_an_edit_that_undoes_the_users_or_breaks_the_syntax_is_not_offered(
    spark: Spark,
) -> None:
    client, cerebras, uri = spark
    await renamed_width(spark, AREA.replace("return width * height", "return width * (height"))
    assert await ask(client, uri, 0, 10) == []
    assert len(cerebras.completion_requests) == 1


async def test_typing_against_the_prediction_drops_it_and_asks_again(spark: Spark) -> None:
    client, cerebras, uri = spark
    await renamed_width(spark, RENAMED)
    assert [edit["text"] for edit in await ask(client, uri, 0, 10)] == ["w", "w"]
    contradicted = (await stats(client))["nextEdit"]["contradicted"]
    edit_text(client, uri, 3, (2, 7), (2, 12), "size")  # not the name the prediction wants
    edits = await ask(client, uri, 2, 11)
    assert len(cerebras.completion_requests) == 2
    assert (await stats(client))["nextEdit"]["contradicted"] == contradicted + 1
    assert [edit["range"]["start"]["line"] for edit in edits] == [2, 4]


async def test_editors_without_next_edit_get_it_as_ghost_text_and_as_a_code_action(
    spark: Spark,
) -> None:
    client, _, uri = spark
    await renamed_width(spark, RENAMED)
    assert len(await ask(client, uri, 0, 10)) == 2
    ghost = await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(2, 7),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        )
    )
    assert ghost is not None
    [item] = ghost.items
    assert item.insert_text == "w"
    assert item.range == types.Range(types.Position(2, 7), types.Position(2, 12))
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(4, 0), types.Position(4, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions
    first = actions[0]
    assert isinstance(first, types.CodeAction) and first.title == "Apply next edit"
    assert first.edit is not None and first.edit.changes is not None
    text = AREA.replace("area(width", "area(w")
    edits = first.edit.changes[uri]
    for edit in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        text = apply(
            text,
            {
                "range": plain(client.protocol._converter.unstructure(edit.range)),
                "text": edit.new_text,
            },
        )
    assert text == RENAMED


async def test_the_editors_diagnostics_reach_the_prompt_and_tokens_are_counted(
    spark: Spark,
) -> None:
    client, cerebras, uri = spark
    scripted(cerebras, RENAMED)
    open_document(client, AREA, uri)
    problem = {
        "range": {"start": {"line": 2, "character": 7}, "end": {"line": 2, "character": 12}},
        "message": '"width" is not defined',
        "severity": 1,
        "source": "pyright",
    }
    client.protocol.notify("lspSpark/diagnostics", {"uri": uri, "diagnostics": [problem]})
    before = (await stats(client))["nextEdit"]
    edit_text(client, uri, 2, (0, 9), (0, 14), "w")
    assert len(await ask(client, uri, 0, 10)) == 2
    prompt = cerebras.completion_requests[0].body["messages"][-1]["content"]
    assert 'line 3: "width" is not defined (pyright)' in prompt
    assert "-def area(width, height):\n+def area(w, height):" in prompt
    after = (await stats(client))["nextEdit"]
    assert after["predictions"] == before["predictions"] + 1
    assert after["outputTokens"] > before["outputTokens"]


async def test_a_substitution_over_the_whole_file_leaves_the_history_small(spark: Spark) -> None:
    """`:%s/value/amount/g` over 1,800 lines, sent as one change of the whole text, then a
    keystroke: the prediction's prompt shows the substitution's first lines, cut, and the
    history holds a bounded record, not the file twice over."""
    client, cerebras, uri = spark
    cerebras.config.reply_fn = lambda request: "<none/>" if is_next_edit_request(request) else ""
    block = ["def scale(value, factor):", "    if factor is None:", "        return value", ""]
    text = "\n".join(block * 450) + "\n"
    open_document(client, text, uri)
    changed = text.replace("value", "amount")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(changed)],
        )
    )
    edit_text(client, uri, 3, (901, 10), (901, 10), "x")
    try:
        assert await ask(client, uri, 901, 11) == []

        def predicted() -> list[Any]:
            return [r for r in cerebras.completion_requests if is_next_edit_request(r.body)]

        await cerebras.wait_for_async(lambda: len(predicted()) == 1, SEEN)
        [request] = predicted()
        prompt = request.body["messages"][-1]["content"]
        assert "-def scale(value, factor):\n+def scale(amount, factor):" in prompt
        assert "…" in prompt
        rows = (await stats(client))["nextEdit"]["historyRows"]
        assert rows <= EDITS_KEPT * 2 * ROWS_KEPT, "each record holds ROWS_KEPT rows a side"
    finally:
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
        )


async def test_diagnostics_of_files_never_opened_do_not_pile_up(spark: Spark) -> None:
    """An editor reporting diagnostics for a whole project: the server keeps those of the
    few files not open it heard of last, not every one."""
    client, _, _ = spark
    before = (await stats(client))["nextEdit"]["documentsWithProblems"]
    problem = {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
        "message": "unused import",
    }
    for index in range(3 * UNOPENED_WITH_PROBLEMS):
        uri = f"file:///work/never-opened{index}.py"
        client.protocol.notify("lspSpark/diagnostics", {"uri": uri, "diagnostics": [problem]})
    after = (await stats(client))["nextEdit"]["documentsWithProblems"]
    assert UNOPENED_WITH_PROBLEMS <= after <= before + UNOPENED_WITH_PROBLEMS


async def test_a_model_that_writes_the_whole_file_again_is_understood(spark: Spark) -> None:
    """A model (or a server) that ignores the edit format and answers the file as it should
    read: the differences inside the region are still the edits offered."""
    client, cerebras, uri = spark
    open_document(client, AREA, uri)
    cerebras.config.reply_fn = lambda request: f"```python\n{RENAMED}```"
    edit_text(client, uri, 2, (0, 9), (0, 14), "w")
    edits = await ask(client, uri, 0, 10)
    assert [(edit["range"]["start"]["line"], edit["text"]) for edit in edits] == [
        (2, "w"),
        (4, "w"),
    ]


async def test_with_next_edits_off_nothing_is_asked_of_the_model(
    shared_cerebras: CerebrasTestServer,
) -> None:
    shared_cerebras.reset()
    scripted(shared_cerebras, RENAMED)
    client = await launch(cerebras_options(shared_cerebras))  # nextEdit off
    try:
        uri = f"file:///work/shapes{next(FILES)}.py"
        open_document(client, AREA, uri)
        edit_text(client, uri, 2, (0, 9), (0, 14), "w")
        assert await ask(client, uri, 0, 10) == []
        assert shared_cerebras.completion_requests == []
    finally:
        await close(client)


async def test_bad_next_edit_messages_get_an_error_or_nothing_and_the_server_goes_on(
    spark: Spark,
) -> None:
    client, _, uri = spark
    with pytest.raises(JsonRpcInvalidParams):
        await client.protocol.send_request_async("textDocument/copilotInlineEdit", {"position": 3})
    unknown = {
        "textDocument": {"uri": "file:///nowhere.py"},
        "position": {"line": 0, "character": 0},
    }
    assert plain(
        await client.protocol.send_request_async("textDocument/copilotInlineEdit", unknown)
    ) == {"edits": []}
    client.protocol.notify("lspSpark/diagnostics", {"uri": 5, "diagnostics": "no"})
    client.protocol.notify("textDocument/didShowInlineEdit", {"item": None})
    open_document(client, AREA, uri)
    assert await ask(client, uri, 99, 99) == []
