"""Latest-only scheduling: supersession and caller cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from lsp_spark.scheduler import Deadline, LatestOnly
from tests.conftest import LoopClock


def closing_job(closed: list[str]) -> Callable[[str], Coroutine[Any, Any, str]]:
    """A job that waits until cancelled, noting its name in `closed` as it ends."""

    async def job(name: str) -> str:
        try:
            await asyncio.sleep(10)
        finally:
            closed.append(name)
        return name

    return job


async def test_a_newer_job_cancels_the_older_one() -> None:
    jobs = LatestOnly()
    closed: list[str] = []
    job = closing_job(closed)

    first = jobs.submit("doc", job("first"))
    await asyncio.sleep(0)
    second = jobs.submit("doc", asyncio.sleep(0, result="second"))
    await asyncio.gather(first, return_exceptions=True)
    assert first.cancelled()
    assert await second == "second"
    assert closed == ["first"]
    await asyncio.sleep(0)  # done callbacks run on the loop's next turn
    assert len(jobs) == 0


async def test_jobs_for_different_documents_run_side_by_side() -> None:
    jobs = LatestOnly()
    a = jobs.submit("a", asyncio.sleep(0.01, result="a"))
    b = jobs.submit("b", asyncio.sleep(0.01, result="b"))
    assert await asyncio.gather(a, b) == ["a", "b"]


async def test_a_job_cancelled_by_its_caller_and_by_a_newer_job_is_cancelled_once() -> None:
    """The second cancellation would land while the first is still closing the upstream
    stream and interrupt that close, leaving the HTTP connection marked in use."""
    jobs = LatestOnly()
    interrupted_closes = 0
    started = asyncio.Event()
    closing = asyncio.Event()
    closed = asyncio.Event()

    async def streaming() -> None:
        nonlocal interrupted_closes
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            closing.set()
            try:
                await closed.wait()  # closing the upstream stream, until the test says
            except asyncio.CancelledError:
                interrupted_closes += 1
            raise

    caller = asyncio.create_task(jobs.run_here("file:///a.py", streaming()))
    await started.wait()
    caller.cancel()
    await closing.wait()
    jobs.submit("file:///a.py", asyncio.sleep(0))
    closed.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert interrupted_closes == 0


async def test_a_job_run_in_its_callers_task_yields_none_once_superseded() -> None:
    jobs = LatestOnly()
    closed: list[str] = []
    job = closing_job(closed)

    first = asyncio.ensure_future(jobs.run_here("doc", job("first")))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(jobs.run_here("doc", asyncio.sleep(0, result="second")))
    assert await first is None
    assert not first.cancelled()
    assert await second == "second"
    assert closed == ["first"]
    assert len(jobs) == 0


async def test_a_job_run_in_its_callers_task_is_cancelled_with_its_caller() -> None:
    jobs = LatestOnly()
    started = asyncio.Event()

    async def job() -> None:
        started.set()
        await asyncio.sleep(10)

    caller = asyncio.ensure_future(jobs.run_here("doc", job()))
    await started.wait()
    caller.cancel()
    await asyncio.gather(caller, return_exceptions=True)
    assert caller.cancelled(), "the caller's own cancellation is not mistaken for supersession"
    assert len(jobs) == 0


async def test_a_deadline_pushed_back_fires_once_after_the_last_push(
    loop_clock: LoopClock,
) -> None:
    loop = asyncio.get_running_loop()
    fired: list[float] = []
    deadline = Deadline(lambda: fired.append(loop.time()))
    for _ in range(3):
        last_due = loop.time() + 60
        deadline.push(last_due)
        await loop_clock.advance(36)
    assert fired == [], "each push moved it past the moment the previous one named"
    await loop_clock.advance(60)
    assert len(fired) == 1 and fired[0] >= last_due
    deadline.push(loop.time() + 10)
    deadline.cancel()
    await loop_clock.advance(60)
    assert len(fired) == 1, "cancelled"
