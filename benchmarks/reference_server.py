"""The yardstick for server overhead: the plainest ghost-text server one would write.

The latency issue measured "a bare pygls handler that streams one chat completion through
the SDK" at 3.5 ms overhead on this machine, and set lsp-spark's target (2 ms) against it.
The machine's speed drifts by a quarter between hours, so `replay.py` runs this server on
the same traces in the same run: the ratio of the two overheads is what a change moves.

Typical of such a server: pygls' typed handlers and its workspace for the text, the Cerebras
SDK for the stream, no cache, no debounce, no syntax tree. It sends the prompt lsp-spark
sends (the test server's oracle reads it), so only the work around the call differs.
Run by the replay as ``python benchmarks/reference_server.py``; not part of the product.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cerebras.cloud.sdk import AsyncCerebras
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from lsp_spark.backends.base import CompletionRequest
from lsp_spark.prompts.chat import chat_messages
from lsp_spark.settings import DEFAULT_CEREBRAS_MODEL

PREFIX_CHARS = 4000
SUFFIX_CHARS = 1000
MAX_TOKENS = 128
STATS = "lspSpark/stats"
"""Answered with nothing, so the replay's round-trip probe times pygls' own path."""


class ReferenceServer(LanguageServer):
    """pygls' server, holding the SDK client `initialize` makes from the replay's options."""

    cerebras: AsyncCerebras


server = ReferenceServer("lsp-spark-reference", "1")


@server.feature(types.INITIALIZE)
def initialize(params: types.InitializeParams) -> None:
    options: dict[str, Any] = params.initialization_options or {}
    server.cerebras = AsyncCerebras(
        api_key=options["apiKey"],
        base_url=options["baseUrl"],
        max_retries=0,
        warm_tcp_connection=False,
    )


@server.feature(STATS)
def stats(_: Any) -> dict[str, Any]:
    return {}


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def inline_completion(
    params: types.InlineCompletionParams,
) -> types.InlineCompletionList:
    document = server.workspace.get_text_document(params.text_document.uri)
    offset = document.offset_at_position(params.position)
    prefix, suffix = document.source[:offset], document.source[offset:]
    multiline = not suffix.split("\n", 1)[0].strip()
    request = CompletionRequest(
        prefix=prefix[-PREFIX_CHARS:],
        suffix=suffix[:SUFFIX_CHARS],
        language=document.language_id or "plaintext",
        filename=Path(document.path).name,
        max_tokens=MAX_TOKENS,
        stop=("\n\n\n",) if multiline else ("\n",),
        multiline=multiline,
    )
    stream = await server.cerebras.chat.completions.create(
        model=DEFAULT_CEREBRAS_MODEL,
        messages=chat_messages(request),  # type: ignore[arg-type]
        stream=True,
        max_completion_tokens=MAX_TOKENS,
        stop=list(request.stop),
    )
    text = "".join([_delta_text(chunk) async for chunk in stream])  # type: ignore[union-attr]
    if not text.strip():
        return types.InlineCompletionList(items=[])
    return types.InlineCompletionList(
        items=[
            types.InlineCompletionItem(
                insert_text=text, range=types.Range(params.position, params.position)
            )
        ]
    )


def _delta_text(chunk: Any) -> str:
    """A stream chunk's text (the SDK types chunks and whole responses as one union)."""
    return (chunk.choices[0].delta.content or "") if chunk.choices else ""


if __name__ == "__main__":
    server.start_io()
