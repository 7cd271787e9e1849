"""Work-done progress for one action: shown where the client can show it, cancellable there."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from lsprotocol import types
from pygls.progress import Progress

from lsp_spark.scheduler import cancel_once

log = logging.getLogger(__name__)

CREATE_GRACE = 5.0
"""Seconds a created token is still waited for once the work is over: a client busy waiting
for the work's answer creates it right after that answer, and must then see it end."""
REPORT_INTERVAL = 0.2
"""Seconds between two reports: an edit streams hundreds of tokens a second."""


class Reporter(Protocol):
    def begin(self, title: str, on_cancel: Callable[[], object]) -> None: ...

    def report(self, message: str) -> None: ...

    def end(self, message: str) -> None: ...


class Silent:
    """No progress to show: the review runs unseen, and some clients show none."""

    def begin(self, title: str, on_cancel: Callable[[], object]) -> None:
        return None

    def report(self, message: str) -> None:
        return None

    def end(self, message: str) -> None:
        return None


class WorkDone:
    """`$/progress` on the client's token, or on one the server creates when the client
    supports `window.workDoneProgress`; the client's cancel calls `on_cancel`.

    Nothing waits for the client to create a token: the work starts at once and its progress
    begins when the client answers. A client that answers only once the work is over (it was
    waiting for the work's own answer) sees the progress begin and end then, so whatever it
    set up for the token is closed."""

    def __init__(self, progress: Progress, token: types.ProgressToken | None, create: bool):
        self._progress = progress
        self._token = token
        self._create = create and token is None
        self._creating: asyncio.Task[None] | None = None
        self._ended: str | None = None
        """The end's message once the work is over."""
        self._last_report = 0.0

    def begin(self, title: str, on_cancel: Callable[[], object]) -> None:
        if self._create:
            token = f"lsp-spark-{uuid.uuid4()}"
            self._creating = asyncio.get_running_loop().create_task(
                self._begin_once_created(token, title, on_cancel)
            )
        elif self._token is not None:
            self._begin(self._token, title, on_cancel)

    async def _begin_once_created(
        self, token: str, title: str, on_cancel: Callable[[], object]
    ) -> None:
        try:
            await self._progress.create_async(token)
        except Exception as error:  # the client refused: no progress
            log.debug("work done progress not created: %s", error)
            return
        self._token = token
        self._begin(token, title, on_cancel)
        if self._ended is not None:
            self._finish(self._ended)

    def _begin(
        self, token: types.ProgressToken, title: str, on_cancel: Callable[[], object]
    ) -> None:
        self._progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
        cancelled = self._progress.tokens.get(token)

        def cancel(future: Future[Any]) -> None:
            if future.cancelled():
                on_cancel()

        if cancelled is not None:
            cancelled.add_done_callback(cancel)

    def report(self, message: str) -> None:
        now = time.monotonic()
        if self._token is None or now - self._last_report < REPORT_INTERVAL:
            return
        self._last_report = now
        self._progress.report(self._token, types.WorkDoneProgressReport(message=message))

    def end(self, message: str) -> None:
        self._ended = message
        creating = self._creating
        if creating is not None and not creating.done():
            # A client that never answers is not waited for forever.
            asyncio.get_running_loop().call_later(CREATE_GRACE, cancel_once, creating)
            return
        self._finish(message)

    def _finish(self, message: str) -> None:
        if self._token is None:
            return
        self._progress.end(self._token, types.WorkDoneProgressEnd(message=message))
        self._progress.tokens.pop(self._token, None)
        self._token = None
