"""The security review end to end: real server, loopback Cerebras, scripted JSON findings."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import (
    StartSpark,
    cerebras_options,
    edit_text,
    eventually,
    inline,
    open_document,
)
from tests.test_actions import WAIT, code_actions, wait_until

URI = "file:///work/users.py"
SOURCE = """import sqlite3


def find_user(db, name):
    query = "SELECT * FROM users WHERE name = '" + name + "'"
    return db.execute(query).fetchall()


def count_users(db):
    return db.execute("SELECT COUNT(*) FROM users").fetchone()[0]
"""
UNSAFE_LINE = 4
SAFE_QUERY = '    return db.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchall()'
FINDING = {
    "findings": [
        {
            "function": 1,
            "line": 2,
            "kind": "sql-injection",
            "message": "name is pasted into the SQL; pass it as a query parameter.",
        }
    ]
}
NOTHING = '{"findings": []}'


def review_options(cerebras: CerebrasTestServer) -> dict[str, object]:
    return cerebras_options(
        cerebras, securityReview=True, securityReviewDelayMs=100, actionsModel="qwen-3.8-27b"
    )


def save(client: LanguageClient, uri: str = URI) -> None:
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
    )


def replace_lines(
    client: LanguageClient, version: int, first: int, last: int, text: str, uri: str = URI
) -> None:
    """Replace lines first..last (inclusive, without the last one's newline) with `text`."""
    edit_text(client, uri, version, (first, 0), (last + 1, 0), text)


def published(client: LanguageClient) -> list[types.Diagnostic] | None:
    """The diagnostics last published for the file; None before any were."""
    found = client.diagnostics.get(URI)
    return None if found is None else list(found)


def prompt(cerebras: CerebrasTestServer, index: int = -1) -> str:
    return str(cerebras.completion_requests[index].body["messages"][-1]["content"])


async def review_cache_hits(client: LanguageClient) -> int:
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    return int(stats.securityReview.cacheHits)


async def wait_until_stats(
    client: LanguageClient, condition: Callable[[Any], bool], timeout: float = WAIT
) -> None:
    """Until `lspSpark/stats` shows what `condition` looks for (bounded: a hang guard)."""
    for _ in range(int(timeout / 0.01)):
        if condition(await client.protocol.send_request_async("lspSpark/stats", None)):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the stats never showed it")


async def reviewed(client: LanguageClient, cerebras: CerebrasTestServer) -> types.Diagnostic:
    """Save, and wait for the finding of the scripted review."""
    cerebras.config.queue_replies(json.dumps(FINDING))
    save(client)
    await wait_until(lambda: bool(published(client)))
    [diagnostic] = published(client) or []
    return diagnostic


async def test_saving_reviews_the_file_and_publishes_findings_with_a_fix(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(review_options(cerebras))
    open_document(client, SOURCE, uri=URI)
    diagnostic = await reviewed(client, cerebras)
    assert diagnostic.range.start == types.Position(UNSAFE_LINE, 4)
    assert diagnostic.range.end == types.Position(UNSAFE_LINE, len(SOURCE.split("\n")[4]))
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.source == "lsp-spark"
    assert diagnostic.code == "sql-injection"
    [request] = cerebras.completion_requests
    assert request.body["model"] == "qwen-3.8-27b", "reviews use the actions model"
    assert "prediction" not in request.body
    assert "def find_user(db, name):" in prompt(cerebras)
    assert "def count_users(db):" in prompt(cerebras)
    actions = await code_actions(client, URI, diagnostic.range, [diagnostic])
    fix = actions[0]
    assert fix.title == f"Fix with lsp-spark: {diagnostic.message}"
    assert fix.kind == types.CodeActionKind.QuickFix
    assert list(fix.diagnostics or []) == [diagnostic]
    assert len(cerebras.completion_requests) == 1, "offering the fix asks nothing"


async def test_only_changed_functions_are_sent_and_findings_follow_the_code(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Fixing the function clears its finding; undoing the fix brings the finding back from
    the cache without asking again; code inserted above moves the finding, unasked."""
    client = await start_spark(review_options(cerebras))
    open_document(client, SOURCE, uri=URI)
    await reviewed(client, cerebras)

    cerebras.config.queue_replies(NOTHING)
    replace_lines(client, 2, 4, 5, SAFE_QUERY + "\n")
    await wait_until(lambda: published(client) == [])  # a changed function's findings go at once
    assert await eventually(
        cerebras,
        lambda: len(cerebras.completion_requests) == 2 and cerebras.completion_requests[1].finished,
    )
    # A save reviews again once that review is over (the functions now come from the cache):
    # by then what that review found is published.
    hits = await review_cache_hits(client)
    save(client)
    await wait_until_stats(client, lambda stats: stats.securityReview.cacheHits >= hits + 2)
    assert published(client) == [], "the review of the fixed function finds nothing"
    changed = prompt(cerebras)
    assert "SELECT * FROM users WHERE name = ?" in changed
    assert "count_users" not in changed, "an unchanged function is never sent again"

    unsafe = "\n".join(SOURCE.split("\n")[4:6]) + "\n"
    replace_lines(client, 3, 4, 4, unsafe)
    await wait_until(lambda: bool(published(client)))
    assert published(client)[0].range.start.line == UNSAFE_LINE
    assert len(cerebras.completion_requests) == 2, "the undone fix is answered from the cache"

    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=4),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(1, 0), types.Position(1, 0)),
                    text="import os\nimport re\n",
                )
            ],
        )
    )
    await wait_until(
        lambda: bool(published(client)) and published(client)[0].range.start.line == UNSAFE_LINE + 2
    )
    assert len(cerebras.completion_requests) == 2
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.securityReview.requests == 2
    assert stats.securityReview.functionsReviewed == 3
    assert stats.securityReview.cacheHits >= 4
    assert stats.securityReview.findings == 1


async def test_the_review_is_off_unless_asked_for(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Timers on the server's one event loop fire in the order they come due: once a
    completion asked after the edit and debounced for 200 ms has gone upstream, a review
    due 100 ms after the edit would have begun."""
    client = await start_spark(
        cerebras_options(cerebras, securityReviewDelayMs=100, debounceMs=200)
    )
    open_document(client, SOURCE, uri=URI)
    save(client)
    replace_lines(client, 2, 8, 8, "def count_users(database):\n")
    await inline(client, URI, 10, 0)
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.securityReview.requests == 0
    [completion] = cerebras.completion_requests
    assert "<CURSOR>" in completion.body["messages"][-1]["content"], "only the completion"
    assert URI not in client.diagnostics


async def test_switching_the_review_off_clears_its_findings(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    options = review_options(cerebras)
    client = await start_spark(options)
    open_document(client, SOURCE, uri=URI)
    await reviewed(client, cerebras)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"lspSpark": {**options, "securityReview": False}}
        )
    )
    await wait_until(lambda: published(client) == [])
