"""Scheduling: only the newest request for a document keeps running; deadlines that
typing keeps pushing back."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def cancel_once(task: asyncio.Task[Any]) -> None:
    """Cancel a task unless it is already being cancelled. A second cancellation lands while
    the first is still closing the upstream stream and interrupts that: the HTTP connection
    then stays marked in use, and after ten of them the pool has none left."""
    if not task.done() and not task.cancelling():
        task.cancel()


class Deadline:
    """Calls `action` once the loop's clock passes the latest `due` pushed. Pushing it back,
    as every keystroke or read does, only stores a number: the one timer re-arms itself
    when it fires early, instead of a timer being cancelled and another made each time."""

    def __init__(self, action: Callable[[], object]) -> None:
        self._action = action
        self._due = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def push(self, due: float) -> None:
        self._due = due
        if self._timer is None or due < self._timer.when():
            self.cancel()
            self._timer = asyncio.get_running_loop().call_at(due, self._fire)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self._due:
            self._timer = loop.call_at(self._due, self._fire)
            return
        self._timer = None
        self._action()


class LatestOnly:
    """A newer job for the same key cancels the older one.

    Editors such as Neovim send a new request per keystroke without cancelling the
    previous one; without this, every keystroke would keep a stream open upstream.
    """

    def __init__(self) -> None:
        self._jobs: dict[str, asyncio.Task[Any]] = {}
        self._running: set[asyncio.Task[Any]] = set()
        self._stopped: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        """Tasks cancelled here (superseded, or no longer wanted), not by their caller."""

    def submit(
        self, key: str, job: Coroutine[Any, Any, T], *, supersede: bool = True
    ) -> asyncio.Task[T]:
        """Start `job`; with `supersede` off (for measuring its gain) older jobs run on."""
        if supersede:
            self.cancel(key)
        task = asyncio.get_running_loop().create_task(job)
        self._jobs[key] = task
        self._running.add(task)
        task.add_done_callback(lambda done: self._forget(key, done))
        return task

    async def run_here(
        self, key: str, job: Coroutine[Any, Any, T], *, supersede: bool = True
    ) -> T | None:
        """Run `job` in the calling task, which becomes the newest job for `key`: no task of
        its own, and no hop between tasks when it ends. Superseded, it yields None; a
        cancellation of the caller itself propagates."""
        task = asyncio.current_task()
        assert task is not None
        if supersede:
            self.cancel(key)
        self._jobs[key] = task
        self._running.add(task)
        try:
            return await job
        except asyncio.CancelledError:
            if task in self._stopped and task.cancelling() == 1:
                task.uncancel()
                return None
            raise
        finally:
            self._forget(key, task)

    def _forget(self, key: str, task: asyncio.Task[Any]) -> None:
        self._running.discard(task)
        if self._jobs.get(key) is task:
            del self._jobs[key]

    def cancel(self, key: str) -> None:
        task = self._jobs.pop(key, None)
        if task is not None:
            self._stop(task)

    def cancel_all(self) -> None:
        self._jobs.clear()
        for task in list(self._running):
            self._stop(task)

    def _stop(self, task: asyncio.Task[Any]) -> None:
        if not task.done() and not task.cancelling():
            self._stopped.add(task)
            task.cancel()

    def __len__(self) -> int:
        return len(self._jobs)
