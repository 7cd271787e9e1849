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

log = logging.getLogger(__name__)

CREATE_TIMEOUT = 2.0
REPORT_INTERVAL = 0.2
"""Seconds between two reports: an edit streams hundreds of tokens a second."""


class Reporter(Protocol):
    async def begin(self, title: str, on_cancel: Callable[[], object]) -> None: ...

    def report(self, message: str) -> None: ...

    def end(self, message: str) -> None: ...


class Silent:
    """No progress to show: the review runs unseen, and some clients show none."""

    async def begin(self, title: str, on_cancel: Callable[[], object]) -> None:
        return None

    def report(self, message: str) -> None:
        return None

    def end(self, message: str) -> None:
        return None


class WorkDone:
    """`$/progress` on the client's token, or on one the server creates when the client
    supports `window.workDoneProgress`; the client's cancel calls `on_cancel`."""

    def __init__(self, progress: Progress, token: types.ProgressToken | None, create: bool):
        self._progress = progress
        self._token = token
        self._create = create and token is None
        self._last_report = 0.0

    async def begin(self, title: str, on_cancel: Callable[[], object]) -> None:
        if self._create:
            token = f"lsp-spark-{uuid.uuid4()}"
            try:
                await asyncio.wait_for(self._progress.create_async(token), CREATE_TIMEOUT)
            except Exception as error:  # the client refused or never answered: no progress
                log.debug("work done progress not created: %s", error)
                return
            self._token = token
        if self._token is None:
            return
        self._progress.begin(
            self._token, types.WorkDoneProgressBegin(title=title, cancellable=True)
        )
        cancelled = self._progress.tokens.get(self._token)

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
        if self._token is None:
            return
        self._progress.end(self._token, types.WorkDoneProgressEnd(message=message))
        self._progress.tokens.pop(self._token, None)
        self._token = None
