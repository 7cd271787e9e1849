"""The API key never appears in logs, messages, stats or errors, even at debug level and
when the provider rejects it; requests go only to the configured base URL."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types

from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault
from tests.conftest import StartSpark, cerebras_options, inline, open_document

KEY = "csk-" + "9" * 8 + "not-a-real-key-" + "7" * 12


async def test_the_key_leaks_nowhere_the_user_or_a_log_can_see(
    start_spark: StartSpark, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    log_file = tmp_path / "server.log"
    cerebras.config.api_key = KEY
    cerebras.config.queue_replies("1")
    cerebras.config.queue_faults(None, Fault.unauthorized())  # type: ignore[arg-type]
    options = cerebras_options(cerebras, apiKey=KEY, logLevel="debug", colour="red", cache=False)
    client = await start_spark(options, args=["--log-file", str(log_file)])
    uri = open_document(client, "x = \n")
    assert (await inline(client, uri, 0, 4)).items
    await inline(client, uri, 0, 4)
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    command_stats = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="lspSpark.stats")
    )
    seen = [
        log_file.read_text(),
        json.dumps([m.message for m in client.messages]),
        json.dumps([m.message for m in client.log_messages]),
        repr(stats),
        repr(command_stats),
    ]
    assert any("API key" in text for text in seen), "the 401 was reported"
    for text in seen:
        assert KEY not in text
        assert KEY[4:20] not in text, "not even part of it"
    headers = [request.headers.get("authorization") for request in cerebras.completion_requests]
    assert headers and all(header == f"Bearer {KEY}" for header in headers)
    assert all(
        request.headers.get("host", "").startswith("127.0.0.1") for request in cerebras.requests
    )
