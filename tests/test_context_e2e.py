"""Syntax-aware context and post-processing, end to end through the real server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pytest_lsp import LanguageClient

from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault, tokenize
from tests.conftest import SEEN, StartSpark, cerebras_options, eventually, inline, open_document

GEOMETRY = "def area(width: float, height: float) -> float:\n    return width * height\n"


def prompt_of(server: CerebrasTestServer) -> str:
    return server.completion_requests[-1].body["messages"][-1]["content"]


async def prompt_showing(
    client: LanguageClient,
    server: CerebrasTestServer,
    uri: str,
    line: int,
    character: int,
    shown: Callable[[str], bool],
) -> str:
    """The prompt of a completion asked at the cursor, asked again until it shows what
    `shown` looks for: outlines (imports, definitions) are refreshed in the server once
    typing pauses, and each request reads them as they are then. The cache must be off.
    (Bounded: a hang guard, not a measure of how soon.)"""
    for _ in range(200):
        await inline(client, uri, line, character)
        prompt = prompt_of(server)
        if shown(prompt):
            return prompt
        await asyncio.sleep(0.05)
    raise AssertionError(f"never shown; the last prompt:\n{prompt}")


async def test_definitions_from_other_open_files_reach_the_prompt(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras, cache=False))
    open_document(client, GEOMETRY, uri="file:///work/geometry.py")
    uri = open_document(client, "from geometry import area\n\nsize = area(\n")
    signature = "# geometry.py\ndef area(width: float, height: float) -> float:"
    prompt = await prompt_showing(client, cerebras, uri, 2, 12, lambda p: signature in p)
    assert "return width * height" not in prompt


async def test_imports_and_enclosing_header_survive_a_small_budget(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    body = "".join(f"    step_{n} = prepare({n})\n" for n in range(120))
    text = f"import os\nimport json\n\n\ndef pipeline(config: dict) -> None:\n{body}    \n"
    client = await start_spark(cerebras_options(cerebras, contextTokens=300, cache=False))
    uri = open_document(client, text)
    prompt = await prompt_showing(
        client, cerebras, uri, 125, 4, lambda p: "import os\nimport json" in p.split("<CURSOR>")[0]
    )
    code = prompt.split("<CURSOR>")[0]
    assert "step_0 =" not in code
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
    said = (
        "if width < 0:\n\t\traise ValueError('negative')\n\treturn width * 2\n"
        "\ndef unrelated():\n\tpass\n"
    )
    cerebras.config.queue_replies(said + "# filler\n" * 40)
    # Then a stall: only closing the stream at the block's end answers.
    cerebras.config.queue_faults(Fault.stall_after(len(tokenize(said))))
    client = await start_spark(cerebras_options(cerebras, requestTimeoutMs=120000))
    text = "def double(width):\n  \n\n\ndef other():\n  return 1\n"
    uri = open_document(client, text)
    result = await asyncio.wait_for(inline(client, uri, 1, 2), SEEN)
    assert result.items[0].insert_text == (
        "if width < 0:\n    raise ValueError('negative')\n  return width * 2"
    )
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)


async def test_tabs_left_by_the_editor_on_the_only_indented_line_indent_the_block(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies("numbers = re.findall('[0-9]+', text)\n    return max(numbers)")
    client = await start_spark(cerebras_options(cerebras))
    uri = open_document(client, "import re\ndef extract_max(text):\n\t\n")
    result = await inline(client, uri, 2, 1)
    assert [item.insert_text for item in result.items] == [
        "numbers = re.findall('[0-9]+', text)\n\treturn max(numbers)"
    ]


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
