"""Warming the backend: once when it is built, which the server reports when done, and
again after the typist goes quiet, not on every request."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest

from lsp_spark.backends import holder
from lsp_spark.pipeline import CompletionEngine
from lsp_spark.settings import Settings
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.workspace import Workspace
from tests.conftest import SEEN, TEST_KEY, LoopClock, eventually


async def test_the_backend_is_prepared_once_its_warming_ends(
    cerebras: CerebrasTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = CompletionEngine(lambda message, error: None, Workspace())
    await engine.configure(
        Settings(backend="cerebras", api_key=TEST_KEY, base_url=cerebras.base_url)
    )
    backend = engine.backends.backend
    assert backend is not None
    # Preparing ends by listing the models: held here until the test has looked.
    listing, release = asyncio.Event(), asyncio.Event()
    list_models = backend.list_models

    async def held_list_models() -> list[str]:
        listing.set()
        await release.wait()
        return await list_models()

    monkeypatch.setattr(backend, "list_models", held_list_models)
    await asyncio.wait_for(listing.wait(), SEEN)
    assert not engine.backends.prepared.is_set(), "still warming"
    release.set()
    await asyncio.wait_for(engine.backends.prepared.wait(), SEEN)
    await engine.aclose()


async def test_with_no_backend_there_is_nothing_to_wait_for() -> None:
    engine = CompletionEngine(lambda message, error: None, Workspace())
    # Without a key and at Cerebras' own address there is nothing to ask (elsewhere a
    # gateway may add its own key: see settings.guard).
    await engine.configure(Settings(backend="cerebras", api_key=""))
    assert engine.backends.backend is None
    assert engine.backends.prepared.is_set()
    await engine.aclose()


IDLE = 600.0
"""Seconds of quiet before a re-warm: minutes, so only the test moving the event loop's clock
brings them about, never a pause of a busy machine."""


async def test_the_connection_is_warmed_again_once_requests_stop(
    cerebras: CerebrasTestServer, monkeypatch: pytest.MonkeyPatch, loop_clock: LoopClock
) -> None:
    monkeypatch.setattr(holder, "IDLE_REWARM", IDLE)

    def warmings() -> int:
        return sum(1 for request in cerebras.requests if request.path.endswith("tcp_warming"))

    engine = CompletionEngine(lambda message, error: None, Workspace())
    await engine.configure(
        Settings(backend="cerebras", api_key=TEST_KEY, base_url=cerebras.base_url)
    )
    assert await eventually(cerebras, lambda: warmings() == 1), "warmed at start"
    # Preparing the backend ends by listing the models: done before the clock moves on.
    assert await eventually(
        cerebras, lambda: any(r.path == "/v1/models" and r.completed_at for r in cerebras.requests)
    )
    backend = engine.backends.backend
    assert backend is not None
    rewarms = 0
    warm = backend.warm

    def counted_warm() -> Coroutine[Any, Any, None]:
        nonlocal rewarms
        rewarms += 1
        return warm()

    monkeypatch.setattr(backend, "warm", counted_warm)
    for _ in range(4):
        engine.backends.used()  # what every upstream request does as it ends
        await loop_clock.advance(IDLE / 3)
    assert rewarms == 0, "requests kept coming: no re-warm yet"
    await loop_clock.advance(IDLE)
    assert rewarms == 1, "quiet for IDLE: warmed again"
    assert await eventually(cerebras, lambda: warmings() == 2)
    await loop_clock.advance(IDLE * 10)
    assert rewarms == 1 and warmings() == 2, "one re-warm per quiet spell"
    await engine.aclose()
