"""Latest-only scheduling: supersession and caller cancellation."""

from __future__ import annotations

import asyncio

from lsp_spark.scheduler import LatestOnly, outcome


async def test_a_newer_job_cancels_the_older_one() -> None:
    jobs = LatestOnly()
    closed: list[str] = []

    async def job(name: str) -> str:
        try:
            await asyncio.sleep(10)
        finally:
            closed.append(name)
        return name

    first = jobs.submit("doc", job("first"))
    await asyncio.sleep(0)
    second = jobs.submit("doc", asyncio.sleep(0, result="second"))
    assert await outcome(first) is None
    assert await outcome(second) == "second"
    assert closed == ["first"]
    assert len(jobs) == 0


async def test_cancelling_the_caller_cancels_the_job() -> None:
    jobs = LatestOnly()
    started = asyncio.Event()

    async def job() -> None:
        started.set()
        await asyncio.sleep(10)

    task = jobs.submit("doc", job())
    caller = asyncio.ensure_future(outcome(task))
    await started.wait()
    caller.cancel()
    await asyncio.gather(caller, return_exceptions=True)
    assert caller.cancelled()
    assert task.cancelled()


async def test_jobs_for_different_documents_run_side_by_side() -> None:
    jobs = LatestOnly()
    a = jobs.submit("a", asyncio.sleep(0.01, result="a"))
    b = jobs.submit("b", asyncio.sleep(0.01, result="b"))
    assert await asyncio.gather(outcome(a), outcome(b)) == ["a", "b"]
