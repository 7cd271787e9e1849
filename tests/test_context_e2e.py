"""Syntax-aware context and post-processing, end to end through the real server."""

from __future__ import annotations

import asyncio

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import StartSpark, cerebras_options, eventually, inline, open_document

GEOMETRY = "def area(width: float, height: float) -> float:\n    return width * height\n"


def prompt_of(server: CerebrasTestServer) -> str:
    return server.completion_requests[-1].body["messages"][-1]["content"]


async def test_definitions_from_other_open_files_reach_the_prompt(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras))
    open_document(client, GEOMETRY, uri="file:///work/geometry.py")
    uri = open_document(client, "from geometry import area\n\nsize = area(\n")
    await asyncio.sleep(0.5)
    await inline(client, uri, 2, 12)
    prompt = prompt_of(cerebras)
    assert "# geometry.py\ndef area(width: float, height: float) -> float:" in prompt
    assert "return width * height" not in prompt


async def test_imports_and_enclosing_header_survive_a_small_budget(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    body = "".join(f"    step_{n} = prepare({n})\n" for n in range(120))
    text = f"import os\nimport json\n\n\ndef pipeline(config: dict) -> None:\n{body}    \n"
    client = await start_spark(cerebras_options(cerebras, contextTokens=300))
    uri = open_document(client, text)
    await asyncio.sleep(0.5)
    await inline(client, uri, 125, 4)
    prompt = prompt_of(cerebras)
    code = prompt.split("<CURSOR>")[0]
    assert "step_0 =" not in code
    assert "import os\nimport json" in code
    assert "def pipeline(config: dict) -> None:" in code


async def test_no_request_when_the_cursor_is_inside_a_word(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "total = compute_sum(values)\n")
    result = await inline(client, uri, 0, 12)
    assert result.items == ()
    assert cerebras.completion_requests == []


async def test_comments_can_be_left_alone(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras, suggestInComments=False))
    uri = open_document(client, "# explain the \nx = 1\n")
    assert (await inline(client, uri, 0, 14)).items == ()
    assert cerebras.completion_requests == []


async def test_block_suggestions_use_the_documents_indentation_and_stop_at_the_block_end(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.tokens_per_second = 200
    cerebras.config.queue_replies(
        "if width < 0:\n\t\traise ValueError('negative')\n\treturn width * 2\n"
        "\ndef unrelated():\n\tpass\n" + "# filler\n" * 40
    )
    client = await start_spark(cerebras_options(cerebras))
    text = "def double(width):\n  \n\n\ndef other():\n  return 1\n"
    uri = open_document(client, text)
    result = await inline(client, uri, 1, 2)
    assert result.items[0].insert_text == (
        "if width < 0:\n    raise ValueError('negative')\n  return width * 2"
    )
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up)


async def test_a_suggestion_that_breaks_the_syntax_is_not_shown(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("value = compute(\nreturn value")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "def f():\n    \n")
    assert (await inline(client, uri, 1, 4)).items == ()


async def test_half_typed_code_still_gets_a_suggestion(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("value = compute(")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "def f():\n    result = (\n    \n")
    result = await inline(client, uri, 2, 4)
    assert [item.insert_text for item in result.items] == ["value = compute("]
