"""The one place that owns the backend: creating it from settings, warming it, rebuilding it
when its own settings change, pausing after failures and telling the user about them once.

Completions, code actions and the security review all get the backend from this holder, so
they share one backend, its warm connections and its request budget (budget.py: how many
requests it serves at once, ghost text first). Completions, asked on every keystroke, pause
after failures (`ready`); a code action or a review, asked for once, always goes out
(`current`) and tells its own failure.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from lsp_spark.backends import Backend, BackendError, FailureKind, create_backend
from lsp_spark.backends.budget import BudgetedBackend
from lsp_spark.scheduler import Deadline, cancel_once
from lsp_spark.settings import Settings

log = logging.getLogger(__name__)

IDLE_REWARM = 45.0
"""Servers drop idle keep-alive connections after about a minute; re-open before that."""
UNAVAILABLE_BACKOFF = (0.5, 30.0)
"""After failures in a row the backend is left alone, from the first to the second number of
seconds, doubling each time, instead of being asked on every keystroke."""
RATE_LIMIT_BACKOFF = 2.0
"""Seconds to wait after a 429 that says nothing of when to come back."""
BACKEND_SETTINGS = (
    "backend",
    "api_key",
    "base_url",
    "model",
    "reasoning_effort",
    "openai_mode",
    "fim_template",
    "local_model_path",
    "local_threads",
    "request_timeout_ms",
    "actions_timeout_ms",
    "concurrent_requests",
)
"""The settings a backend is built from: changing any other one keeps the backend (and its
warm connections)."""
TOLD_AT_ONCE = frozenset({FailureKind.TIMED_OUT, FailureKind.NOT_AN_API})
"""Failures the user hears of the first time: a request cut at its deadline kept them waiting,
and a base URL that is not the API does not change by retrying."""


class Notifier:
    """Tells the user about each kind of failure once, not once per keystroke."""

    def __init__(self, show: Callable[[str, bool], None]) -> None:
        self._show = show
        self._told: set[str] = set()

    def tell(self, key: str, message: str, error: bool = True) -> None:
        if key not in self._told:
            self._told.add(key)
            self._show(message, error)

    def forget(self) -> None:
        self._told.clear()


class BackendHolder:
    def __init__(self, show_message: Callable[[str, bool], None]) -> None:
        self.settings = Settings()
        self.notifier = Notifier(show_message)
        self.backend: Backend | None = None
        """None when there is none: `failure` says why."""
        self.failure: BackendError | None = None
        self.last_failure: BackendError | None = None
        """What the last request's failure was, until a request succeeds or settings change:
        `lsp-spark complete` reports it."""
        self.prepared = asyncio.Event()
        """Set once the backend has finished warming (the embedded model loaded, the
        connection opened), or when there is none to warm; `lspSpark/stats` reports it."""
        self._paused_until = 0.0
        self._unavailable_streak = 0
        self._idle = Deadline(self._rewarm_after_idle)
        self._background: set[asyncio.Task[Any]] = set()

    def current(self) -> Backend:
        """The backend, for code actions and reviews; raises why there is none."""
        if self.backend is None:
            raise self.failure or BackendError(
                FailureKind.MISCONFIGURED, "lsp-spark has no backend configured yet."
            )
        return self.backend

    def ready(self) -> Backend | None:
        """The backend, if it may be asked now: none configured (said once), or paused after
        failures, is None."""
        if self.backend is None:
            if self.failure is not None:
                self.notifier.tell(self.failure.kind.value, self.failure.args[0])
            return None
        if time.monotonic() < self._paused_until:
            return None
        return self.backend

    @property
    def name(self) -> str:
        return self.backend.name if self.backend else "none"

    @property
    def model(self) -> str:
        return self.backend.model if self.backend else ""

    def gave_way(self, task: asyncio.Task[Any]) -> bool:
        """Whether `task` was cancelled only to free its request slot for ghost text."""
        return isinstance(self.backend, BudgetedBackend) and self.backend.budget.gave_way(task)

    @property
    def budget(self) -> dict[str, int]:
        """The request budget's state, for `lspSpark/stats`."""
        if not isinstance(self.backend, BudgetedBackend):
            return {}
        budget = self.backend.budget
        return {
            "slots": budget.slots,
            "inUse": budget.in_use,
            "waiting": budget.waiting,
            "queued": budget.queued,
            "preempted": budget.preempted,
        }

    @property
    def connections(self) -> tuple[int, int]:
        return self.backend.connections if self.backend else (0, 0)

    def configure(self, settings: Settings) -> bool:
        """Apply new settings: failures are forgotten and, when the backend's own settings
        changed, the backend is rebuilt (swapped at once, so a request right behind the
        change already uses it; the old one closes in the background). True when rebuilt."""
        previous, self.settings = self.settings, settings
        if settings == previous and (self.backend or self.failure):
            # The same settings pushed again (editors send them after `initialized` too):
            # what the user was told stays told.
            return False
        self.notifier.forget()
        self.last_failure = None
        self._paused_until = 0.0
        self._unavailable_streak = 0
        unchanged = all(
            getattr(previous, name) == getattr(settings, name) for name in BACKEND_SETTINGS
        )
        if unchanged and (self.backend or self.failure):
            return False
        old = self.backend
        try:
            created = create_backend(settings)
            created.tell = self._tell_once
            slots = settings.concurrent_requests or created.concurrent_requests
            self.backend, self.failure = BudgetedBackend(created, slots), None
        except BackendError as failure:
            self.backend, self.failure = None, failure
            self.notifier.tell(failure.kind.value, failure.args[0])
        if old is not None:
            self.in_background(old.aclose())
        if self.backend is None:
            self.prepared.set()
        else:
            self.prepared.clear()
            self.in_background(self._prepare(self.backend))
        return True

    def _tell_once(self, message: str) -> None:
        """What the backend says of itself (a mode given up), told once as a warning."""
        self.notifier.tell(f"backend:{message}", message, error=False)

    async def _prepare(self, backend: Backend) -> None:
        """Warm the connection (or load the model) and check the model name, off the hot path."""
        try:
            await backend.warm()
            if backend.name != "local":
                models = await backend.list_models()
                # A server of one model (llama.cpp, llama-cpp-python) answers with it
                # whatever the request names: no model set is no mistake there.
                unnamed = self.settings.model is None and len(models) == 1
                if models and backend.model not in models and not unnamed:
                    self.notifier.tell(
                        "model",
                        f"lsp-spark: model {backend.model!r} is not offered by the "
                        f"{backend.name} backend; available: {', '.join(sorted(models))}.",
                    )
        except BackendError as failure:
            log.info("preparing the %s backend: %s", backend.name, failure)
            if failure.kind in (
                FailureKind.MISCONFIGURED,
                FailureKind.AUTH,
                FailureKind.NOT_AN_API,
            ):
                self.failed(failure)
        finally:
            if backend is self.backend:
                self.prepared.set()

    def failed(self, failure: BackendError) -> None:
        """Back off as the failure asks, and say so once."""
        self.last_failure = failure
        now = time.monotonic()
        if failure.kind is FailureKind.AUTH or failure.kind is FailureKind.MISCONFIGURED:
            self._paused_until = float("inf")
            message = f"lsp-spark: {failure.args[0]} Suggestions are paused until settings change."
        elif failure.kind is FailureKind.RATE_LIMIT:
            self._paused_until = now + (failure.retry_after or RATE_LIMIT_BACKOFF)
            message = f"lsp-spark: {failure.args[0]} Waiting before asking again."
        else:
            # One dropped stream costs nothing: the next keystroke asks again. Failures in a
            # row back off exponentially and are told once.
            low, high = UNAVAILABLE_BACKOFF
            self._unavailable_streak += 1
            if self._unavailable_streak > 1:
                self._paused_until = now + min(high, low * 2 ** (self._unavailable_streak - 2))
            elif failure.kind not in TOLD_AT_ONCE:
                return
            message = f"lsp-spark: {failure.args[0]} Retrying with backoff."
        self.notifier.tell(failure.kind.value, message)

    def succeeded(self) -> None:
        self.last_failure = None
        if self._unavailable_streak:
            self._unavailable_streak = 0
            self.notifier.forget()

    def used(self) -> None:
        """The connection was just used: re-warm once it has idled for IDLE_REWARM."""
        self._idle.push(asyncio.get_running_loop().time() + IDLE_REWARM)

    def _rewarm_after_idle(self) -> None:
        if self.backend is not None:
            self.in_background(self.backend.warm())

    def in_background(self, job: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(job)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        self._idle.cancel()
        for task in list(self._background):
            cancel_once(task)
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self.backend is not None:
            await self.backend.aclose()
            self.backend = None
