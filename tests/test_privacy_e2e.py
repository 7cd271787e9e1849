"""Excluded files and secrets, end to end: what must not leave the machine does not reach the
loopback server's prompts."""

from __future__ import annotations

import random
import string

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import StartSpark, cerebras_options, inline, open_document, type_text
from tests.test_context_e2e import GEOMETRY, prompt_of, prompt_showing
from tests.test_privacy import SECRETS
from tests.test_secret_kinds import SECRET_KINDS

SHAPES = "def perimeter(width: float, height: float) -> float:\n    return 2 * (width + height)\n"
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
    """A file opened after the excluded one was edited lends its definition: its outline
    refresh comes due after any the edit could have scheduled (the server's timers fire in
    order), so once the prompt shows it, the excluded file had its chance to show too."""
    client = await start_spark(cerebras_options(cerebras, exclude=["**/private/**"], cache=False))
    open_document(client, GEOMETRY, uri="file:///work/private/geometry.py")
    text = "from geometry import area\nfrom shapes import perimeter\n\nsize = area(\n"
    uri = open_document(client, text)
    type_text(client, "file:///work/private/geometry.py", 2, 1, 0, "    # tuned\n")
    open_document(client, SHAPES, uri="file:///work/shapes.py")
    prompt = await prompt_showing(client, cerebras, uri, 3, 12, lambda p: "def perimeter" in p)
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


async def test_a_key_typed_one_character_at_a_time_never_reaches_the_upstream_request(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """Every keystroke asks for a completion; from `csk-` and eight more characters on, what
    is sent holds the placeholder instead of the key typed so far."""
    key = SECRETS["cerebras-key"]
    client = await start_spark(cerebras_options(cerebras, cache=False))
    line = "conn = cerebras.connect("
    uri = open_document(client, f'import cerebras\n\n{line}"")\n')
    column = len(line) + 1
    for typed, char in enumerate(key, start=1):
        type_text(client, uri, typed + 1, 2, column + typed - 1, char)
        await inline(client, uri, 2, column + typed)
    requests = cerebras.completion_requests
    assert len(requests) == len(key)
    first_hidden = len("csk-") + 8
    assert not any(key[:first_hidden].encode() in request.raw_body for request in requests)
    # One character short of that, what was typed still goes out: the threshold is exact.
    assert key[: first_hidden - 1].encode() in requests[first_hidden - 2].raw_body
    placeholder = 'connect("<redacted:cerebras-key><CURSOR>")'
    assert all(
        placeholder in request.body["messages"][-1]["content"]
        for request in requests[first_hidden - 1 :]
    )


async def test_secrets_of_the_maintained_rule_set_are_redacted_from_the_prompt(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    """A kind that only detect-secrets' rules know (a SendGrid key) and kinds added by hand
    beside them (a `PGPASSWORD`, an Azure account key) in one file: none reaches the
    upstream request."""
    kinds = ("sendgrid", "pgpassword", "azure-account-key")
    client = await start_spark(cerebras_options(cerebras))
    text = "".join(SECRET_KINDS[kind][0] for kind in kinds)
    uri = open_document(client, f"{text}\nclient = \n")
    await inline(client, uri, text.count("\n") + 1, 9)
    [request] = cerebras.completion_requests
    assert not any(SECRET_KINDS[kind][1].encode() in request.raw_body for kind in kinds)
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.redactions.secrets == len(kinds)
