"""The request budget: how many requests a backend serves at once, ghost text first, next-edit
predictions giving their slot up (lsp_spark/backends/budget.py). Synchronised on the budget's
own state, never on time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import pytest

from lsp_spark.backends.base import Backend, ChatUsage, CompletionRequest, Message
from lsp_spark.backends.budget import BudgetedBackend, Priority, RequestBudget, requests_at
from lsp_spark.backends.holder import BackendHolder
from lsp_spark.settings import Settings
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import TEST_KEY


async def settled() -> None:
    """Let every task that can run, run (bounded: each turn of the loop runs the ready ones)."""
    for _ in range(10):
        await asyncio.sleep(0)


class Held:
    """A request that holds its slot until the test releases it."""

    def __init__(self, budget: RequestBudget, priority: Priority, log: list[str], name: str):
        self.release = asyncio.Event()
        self.holding = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run(budget, priority, log, name))

    async def _run(self, budget: RequestBudget, priority: Priority, log: list[str], name: str):
        async with budget.slot(priority):
            log.append(name)
            self.holding.set()
            await self.release.wait()


async def test_requests_within_the_budget_go_at_once() -> None:
    budget, log = RequestBudget(2), []
    first = Held(budget, Priority.GHOST_TEXT, log, "a")
    second = Held(budget, Priority.NEXT_EDIT, log, "b")
    await settled()
    assert log == ["a", "b"] and budget.in_use == 2 and budget.queued == 0
    first.release.set()
    second.release.set()
    await asyncio.gather(first.task, second.task)
    assert budget.in_use == 0


async def test_waiting_requests_go_by_priority_then_arrival() -> None:
    budget, log = RequestBudget(1), []
    running = Held(budget, Priority.ACTION, log, "running")
    await running.holding.wait()
    queued = [
        Held(budget, Priority.NEXT_EDIT, log, "next edit"),
        Held(budget, Priority.ACTION, log, "action"),
        Held(budget, Priority.GHOST_TEXT, log, "ghost 1"),
        Held(budget, Priority.GHOST_TEXT, log, "ghost 2"),
    ]
    await settled()
    assert budget.waiting == 4 and log == ["running"]
    running.release.set()
    for request in queued:
        request.release.set()
    await asyncio.gather(running.task, *(request.task for request in queued))
    assert log == ["running", "ghost 1", "ghost 2", "action", "next edit"]
    assert budget.in_use == 0 and budget.waiting == 0


async def test_ghost_text_takes_the_slot_of_a_next_edit() -> None:
    budget, log = RequestBudget(1), []
    next_edit = Held(budget, Priority.NEXT_EDIT, log, "next edit")
    await next_edit.holding.wait()
    ghost = Held(budget, Priority.GHOST_TEXT, log, "ghost")
    await ghost.holding.wait()
    assert next_edit.task.cancelled(), "the prediction gave its slot up"
    assert budget.preempted == 1
    ghost.release.set()
    await ghost.task


async def test_a_next_edit_waits_rather_than_taking_a_busy_slot() -> None:
    budget, log = RequestBudget(1), []
    ghost = Held(budget, Priority.GHOST_TEXT, log, "ghost")
    await ghost.holding.wait()
    next_edit = Held(budget, Priority.NEXT_EDIT, log, "next edit")
    await settled()
    assert log == ["ghost"] and not ghost.task.done() and budget.preempted == 0
    ghost.release.set()
    await next_edit.holding.wait()
    next_edit.release.set()
    await next_edit.task


async def test_a_request_cancelled_while_waiting_leaves_the_queue() -> None:
    budget, log = RequestBudget(1), []
    running = Held(budget, Priority.GHOST_TEXT, log, "running")
    await running.holding.wait()
    superseded = Held(budget, Priority.GHOST_TEXT, log, "superseded")
    newest = Held(budget, Priority.GHOST_TEXT, log, "newest")
    await settled()
    superseded.task.cancel()
    running.task.cancel()  # superseded too: its slot goes to the newest at once
    await newest.holding.wait()
    assert log == ["running", "newest"] and budget.waiting == 0
    newest.release.set()
    await newest.task
    assert budget.in_use == 0


class Streaming(Backend):
    """Streams one delta, then waits for the test, as a model still generating does."""

    name = "openai"

    def __init__(self) -> None:
        super().__init__("m")
        self.more = asyncio.Event()

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        yield "ghost"
        await self.more.wait()

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        model: str | None = None,
        prediction: str | None = None,
        usage: ChatUsage | None = None,
    ) -> AsyncGenerator[str, None]:
        yield "edit"
        await self.more.wait()


async def test_the_backend_takes_the_priority_of_the_task_asking() -> None:
    """A next-edit task's chat gives its slot to ghost text; streams close as they end."""
    backend = BudgetedBackend(Streaming(), 1)
    edit_started = asyncio.Event()

    async def next_edit() -> None:
        with requests_at(Priority.NEXT_EDIT):
            async for _ in backend.chat([], max_tokens=8):
                edit_started.set()

    predicting = asyncio.get_running_loop().create_task(next_edit())
    await edit_started.wait()
    deltas = backend.stream(CompletionRequest("x = ", ""))
    assert await anext(deltas) == "ghost"
    assert predicting.cancelled() and backend.budget.in_use == 1
    await deltas.aclose()
    assert backend.budget.in_use == 0


@pytest.mark.parametrize(
    ("settings", "slots"),
    [
        ({"backend": "cerebras", "api_key": TEST_KEY}, 8),
        ({"backend": "openai"}, 1),
        ({"backend": "openai", "concurrent_requests": 3}, 3),
    ],
)
async def test_the_budget_defaults_per_backend_kind(
    cerebras: CerebrasTestServer, settings: dict[str, Any], slots: int
) -> None:
    holder = BackendHolder(lambda message, error: None)
    holder.configure(Settings(base_url=cerebras.base_url, **settings))
    assert holder.budget["slots"] == slots
    await holder.aclose()


async def test_the_wrapper_names_the_model_the_backend_names_once_warmed() -> None:
    """The embedded model names the 8-bit copy it loaded only once it has warmed: what the
    stats and the demo show is the wrapped backend's name at that time, and where it runs."""
    inner = Streaming()
    inner.remote = False
    wrapped = BudgetedBackend(inner, 1)
    inner.model = "weights.Q8_0"
    assert wrapped.model == "weights.Q8_0"
    assert wrapped.remote is False
