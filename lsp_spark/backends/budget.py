"""How many requests the backend serves at once, and who goes first when they are all taken.

Local model servers (llama.cpp with one slot, llama-cpp-python, Ollama per model) serve one
request at a time: llama-cpp-python aborts the running request when another arrives, the
others queue until their answers time out. Every upstream request therefore takes a slot of
the backend's budget. Waiting requests go in priority order: ghost text, then code actions,
then next-edit predictions. A next-edit prediction holding a slot that more urgent work needs
is cancelled, so ghost text never waits behind one; a superseded ghost-text request is
cancelled by its document's session and gives its slot up as it unwinds.

The priority travels in a context variable, set once where a kind of work starts (a next-edit
task, a code action), so the backends' interface stays as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import heapq
import itertools
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from lsp_spark.backends.base import Backend, ChatUsage, CompletionRequest, Message
from lsp_spark.scheduler import cancel_once


class Priority(enum.IntEnum):
    """Lower goes first."""

    GHOST_TEXT = 0
    ACTION = 1
    NEXT_EDIT = 2
    """Speculative: takes a slot nothing more urgent wants, and gives it up when asked."""


REQUEST_PRIORITY: ContextVar[Priority] = ContextVar(
    "lsp_spark_request_priority", default=Priority.GHOST_TEXT
)
"""The priority of the requests the current task makes."""


@contextlib.contextmanager
def requests_at(priority: Priority) -> Iterator[None]:
    """The body's upstream requests go at `priority`."""
    token = REQUEST_PRIORITY.set(priority)
    try:
        yield
    finally:
        REQUEST_PRIORITY.reset(token)


@dataclass(slots=True)
class _Held:
    priority: Priority
    task: asyncio.Task[Any] | None


@dataclass(order=True, slots=True)
class _Waiter:
    priority: Priority
    order: int
    granted: asyncio.Future[_Held] = field(compare=False)
    task: asyncio.Task[Any] | None = field(compare=False)


class RequestBudget:
    """A priority semaphore whose least urgent holders can be preempted."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._held: list[_Held] = []
        self._waiting: list[_Waiter] = []
        self._order = itertools.count()
        self.queued = 0
        """Requests that found every slot taken and waited."""
        self.preempted = 0
        """Next-edit predictions cancelled to free a slot for more urgent work."""
        self._gave_way: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()

    @property
    def in_use(self) -> int:
        return len(self._held)

    @property
    def waiting(self) -> int:
        return sum(1 for waiter in self._waiting if not waiter.granted.done())

    @contextlib.asynccontextmanager
    async def slot(self, priority: Priority) -> AsyncIterator[None]:
        """Hold a slot for the body's duration; cancelled while waiting, nothing is held."""
        held = await self._acquire(priority)
        try:
            yield
        finally:
            self._release(held)

    async def _acquire(self, priority: Priority) -> _Held:
        task = asyncio.current_task()
        if len(self._held) < self.slots and not self._waiting:
            held = _Held(priority, task)
            self._held.append(held)
            return held
        self.queued += 1
        granted = asyncio.get_running_loop().create_future()
        waiter = _Waiter(priority, next(self._order), granted, task)
        heapq.heappush(self._waiting, waiter)
        if priority < Priority.NEXT_EDIT:
            self._preempt_one()
        try:
            return await waiter.granted
        except asyncio.CancelledError:
            if waiter.granted.done() and not waiter.granted.cancelled():
                # Granted just as it was cancelled: the slot goes on to the next in line.
                self._release(waiter.granted.result())
            else:
                waiter.granted.cancel()
                self._grant()
            raise

    def _release(self, held: _Held) -> None:
        self._held.remove(held)
        self._grant()

    def _grant(self) -> None:
        """Hand free slots to the most urgent waiters, dropping those cancelled meanwhile."""
        while self._waiting and len(self._held) < self.slots:
            waiter = heapq.heappop(self._waiting)
            if waiter.granted.done():
                continue
            held = _Held(waiter.priority, waiter.task)
            self._held.append(held)
            waiter.granted.set_result(held)
        while self._waiting and self._waiting[0].granted.done():
            heapq.heappop(self._waiting)

    def _preempt_one(self) -> None:
        """Cancel a next-edit prediction holding a slot, unless one is already giving its
        slot up; its task unwinds, closing its stream, and the slot comes to the waiter."""
        candidates = [
            held.task
            for held in self._held
            if held.priority is Priority.NEXT_EDIT and held.task is not None
        ]
        if any(task.cancelling() for task in candidates):
            return
        if candidates:
            self.preempted += 1
            self._gave_way.add(candidates[0])
            cancel_once(candidates[0])

    def gave_way(self, task: asyncio.Task[Any]) -> bool:
        """Whether `task` was cancelled here to free its slot (asked once: it may wait for
        a slot again and be asked to give it up again)."""
        if task in self._gave_way:
            self._gave_way.discard(task)
            return True
        return False


class BudgetedBackend(Backend):
    """A backend whose every request takes a slot of its budget; everything else is the
    wrapped backend's own."""

    def __init__(self, backend: Backend, slots: int) -> None:
        self.inner = backend
        super().__init__(backend.model)
        self.budget = RequestBudget(slots)
        self.name = backend.name
        self.remote = backend.remote
        self.context_tokens = backend.context_tokens
        self.max_lines = backend.max_lines
        self.action_context_chars = backend.action_context_chars

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        async with (
            self.budget.slot(REQUEST_PRIORITY.get()),
            contextlib.aclosing(self.inner.stream(request)) as deltas,
        ):
            async for delta in deltas:
                yield delta

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        model: str | None = None,
        prediction: str | None = None,
        usage: ChatUsage | None = None,
    ) -> AsyncGenerator[str, None]:
        async with self.budget.slot(REQUEST_PRIORITY.get()):
            answer = self.inner.chat(
                messages, max_tokens=max_tokens, model=model, prediction=prediction, usage=usage
            )
            async with contextlib.aclosing(answer) as deltas:
                async for delta in deltas:
                    yield delta

    @property  # type: ignore[override]
    def model(self) -> str:
        """The wrapped backend's model, which may change as it warms (the embedded model
        names the 8-bit copy it loaded)."""
        return self.inner.model

    @model.setter
    def model(self, value: str) -> None:
        self.inner.model = value

    @property
    def count_tokens(self) -> Callable[[str], int] | None:
        return self.inner.count_tokens

    @property
    def connections(self) -> tuple[int, int]:
        return self.inner.connections

    async def warm(self) -> None:
        """A slot too: llama-cpp-python aborts a running answer for any request, its model
        list included."""
        async with self.budget.slot(REQUEST_PRIORITY.get()):
            await self.inner.warm()

    async def list_models(self) -> list[str]:
        async with self.budget.slot(REQUEST_PRIORITY.get()):
            return await self.inner.list_models()

    async def aclose(self) -> None:
        await self.inner.aclose()
