"""Excluded files and secrets, end to end: what must not leave the machine does not reach the
loopback server's prompts."""

from __future__ import annotations

import asyncio
import random
import string

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import StartSpark, cerebras_options, inline, open_document, type_text
from tests.test_context_e2e import GEOMETRY, prompt_of

# Assembled at run time so no scanner mistakes this test for a leaked key.
FAKE_ACCESS_KEY = "AK" + "IA" + "".join(random.Random(7).choices(string.ascii_uppercase, k=16))


async def test_an_excluded_file_gets_no_suggestion_and_no_upstream_call(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "API_TOKEN=\n", uri="file:///work/app/.env", language="dotenv")
    assert (await inline(client, uri, 0, 10)).items == ()
    key = open_document(client, "-----BEGIN", uri="file:///work/certs/server.pem")
    assert (await inline(client, key, 0, 10)).items == ()
    assert cerebras.completion_requests == []


async def test_an_excluded_file_lends_no_context_to_others(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras, exclude=["**/private/**"]))
    open_document(client, GEOMETRY, uri="file:///work/private/geometry.py")
    uri = open_document(client, "from geometry import area\n\nsize = area(\n")
    type_text(client, "file:///work/private/geometry.py", 2, 1, 0, "    # tuned\n")
    await asyncio.sleep(0.5)
    await inline(client, uri, 2, 12)
    prompt = prompt_of(cerebras)
    assert "def area" not in prompt and "tuned" not in prompt
    assert "geometry.py" not in prompt.replace("from geometry import", "")


async def test_secrets_are_redacted_from_the_prompt_and_counted(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("boto3.client('s3')")
    client = await start_spark(cerebras_options(cerebras))
    text = f'import boto3\n\nACCESS_KEY = "{FAKE_ACCESS_KEY}"\nclient = \n'
    uri = open_document(client, text)
    result = await inline(client, uri, 3, 9)
    assert result.items[0].insert_text == "boto3.client('s3')"
    prompt = prompt_of(cerebras)
    assert FAKE_ACCESS_KEY not in prompt
    assert "ACCESS_KEY = " in prompt, "the code around the secret keeps its shape"
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.redactions.secrets >= 1


async def test_a_suggestion_that_repeats_a_placeholder_is_not_shown(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, f'ACCESS_KEY = "{FAKE_ACCESS_KEY}"\nCOPY = \n')
    await inline(client, uri, 1, 7)
    prompt = prompt_of(cerebras)
    placeholder = prompt[prompt.index('ACCESS_KEY = "') + 14 :].split('"')[0]
    assert placeholder != FAKE_ACCESS_KEY
    cerebras.config.queue_replies(f'"{placeholder}"')
    type_text(client, uri, 2, 1, 7, " ")
    assert (await inline(client, uri, 1, 8)).items == ()
