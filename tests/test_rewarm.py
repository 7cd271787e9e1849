"""The warm connection is re-opened after the typist goes quiet, not on every request."""

from __future__ import annotations

import asyncio

import pytest

from lsp_spark.backends import holder
from lsp_spark.pipeline import CompletionEngine
from lsp_spark.settings import Settings
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.workspace import Workspace
from tests.conftest import TEST_KEY, eventually

IDLE = 0.3


async def test_the_connection_is_warmed_again_once_requests_stop(
    cerebras: CerebrasTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(holder, "IDLE_REWARM", IDLE)

    def warmings() -> int:
        return sum(1 for request in cerebras.requests if request.path.endswith("tcp_warming"))

    engine = CompletionEngine(lambda message, error: None, Workspace())
    await engine.configure(
        Settings(backend="cerebras", api_key=TEST_KEY, base_url=cerebras.base_url)
    )
    assert await eventually(cerebras, lambda: warmings() == 1), "warmed at start"
    for _ in range(4):
        engine.backends.used()  # what every upstream request does as it ends
        await asyncio.sleep(IDLE / 3)
    assert warmings() == 1, "requests kept coming: no re-warm yet"
    assert await eventually(cerebras, lambda: warmings() == 2, timeout=IDLE * 5)
    await asyncio.sleep(IDLE * 1.5)
    assert warmings() == 2, "one re-warm per quiet spell"
    await engine.aclose()
