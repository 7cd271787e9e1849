"""Security review (opt-in): on save, or once typing pauses, the functions changed since the
last review are sent, and the findings come back as diagnostics.

Each function's findings are cached by a hash of its content, so unchanged code is never sent
again, and code that comes back (an undo) is answered from the cache. Findings are stored
relative to their function, so they follow it as code above it moves.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_spark.actions.catalog import OWN_SOURCE
from lsp_spark.actions.findings import Finding, parse_findings
from lsp_spark.actions.prompting import ReviewTask, build_messages
from lsp_spark.actions.targets import Function, functions
from lsp_spark.backends import Backend, BackendError
from lsp_spark.backends.budget import Priority, requests_at
from lsp_spark.context.sources import filename_of
from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.scheduler import cancel_once
from lsp_spark.syntax.grammars import canonical
from lsp_spark.workspace import Workspace

if TYPE_CHECKING:
    from lsp_spark.backends.holder import BackendHolder
    from lsp_spark.stats import Stats

log = logging.getLogger(__name__)

CACHE_SIZE = 4096
BATCH_CHARS = 12_000
BATCH_FUNCTIONS = 8
"""Functions sent in one request at most: a few per request keeps answers precise."""
REVIEW_BASE_TOKENS = 256
REVIEW_TOKENS_PER_FUNCTION = 128

Publish = Callable[[str, int | None, list[types.Diagnostic]], None]


@dataclass(slots=True)
class _Document:
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task[None] | None = None
    again: bool = False
    """Changed during a review: review again once it ends."""
    published: bool = False


class SecurityReview:
    def __init__(
        self, workspace: Workspace, backends: BackendHolder, stats: Stats, publish: Publish
    ) -> None:
        self.workspace = workspace
        self.backends = backends
        self.stats = stats
        self.encoding = PositionEncoding.UTF16
        self._publish_diagnostics = publish
        self._cache: OrderedDict[str, tuple[Finding, ...]] = OrderedDict()
        self._documents: dict[str, _Document] = {}
        self._configured = False
        self._early: dict[str, bool] = {}
        """Documents changed (False) or saved (True) before the settings arrived, which
        say whether they are to be reviewed."""

    @property
    def enabled(self) -> bool:
        return self.backends.settings.security_review

    def changed(self, uri: str) -> None:
        """Typing: review once it pauses for `securityReviewDelayMs`."""
        if not self._configured:
            self._early[uri] = self._early.get(uri, False)
        elif self.enabled:
            self._schedule(uri, self.backends.settings.security_review_delay_ms / 1000)

    def saved(self, uri: str) -> None:
        if not self._configured:
            self._early[uri] = True
        elif self.enabled:
            self._schedule(uri, 0.0)

    def closed(self, uri: str) -> None:
        self._early.pop(uri, None)
        state = self._documents.pop(uri, None)
        if state is None:
            return
        self._stop(state)
        if state.published:
            self._publish_diagnostics(uri, None, [])

    def configure(self) -> None:
        """Settings changed: switched off, every review stops and its diagnostics go. The
        first settings also decide about edits and saves that came before them."""
        self._configured = True
        early, self._early = self._early, {}
        if self.enabled:
            for uri, saved in early.items():
                if saved:
                    self.saved(uri)
                else:
                    self.changed(uri)
            return
        for uri in list(self._documents):
            self.closed(uri)

    async def aclose(self) -> None:
        tasks = [state.task for state in self._documents.values() if state.task is not None]
        for state in self._documents.values():
            self._stop(state)
        self._documents.clear()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _schedule(self, uri: str, delay: float) -> None:
        state = self._documents.setdefault(uri, _Document())
        if state.task is not None and not state.task.done():
            state.again = True
            return
        if state.timer is not None:
            state.timer.cancel()
        state.timer = asyncio.get_running_loop().call_later(delay, self._start, uri)

    def _start(self, uri: str) -> None:
        state = self._documents.get(uri)
        if state is None:
            return
        state.timer = None
        task = asyncio.get_running_loop().create_task(self._review(uri))
        state.task = task
        task.add_done_callback(lambda _: self._finished(uri, task))

    def _finished(self, uri: str, task: asyncio.Task[None]) -> None:
        state = self._documents.get(uri)
        if not task.cancelled() and task.exception() is not None:
            log.error("security review of %s failed", uri, exc_info=task.exception())
        if state is not None and state.task is task and state.again:
            state.again = False
            self.changed(uri)

    def _stop(self, state: _Document) -> None:
        if state.timer is not None:
            state.timer.cancel()
        if state.task is not None:
            cancel_once(state.task)

    async def _review(self, uri: str) -> None:
        document = self.workspace.documents.get(uri)
        syntax = self.workspace.tree(uri)
        if document is None or syntax is None or self.workspace.excluded(uri):
            return
        language = canonical(document.language_id)
        pending: dict[str, Function] = {}
        for function in functions(syntax):
            key = _key(language, function.text)
            if key in self._cache:
                self._cache.move_to_end(key)
                self.stats.actions.review_cache_hits += 1
            else:
                pending.setdefault(key, function)
        self._publish(uri)
        if not pending:
            return
        try:
            backend = self.backends.current()
            for batch in _batches(list(pending.items())):
                task = ReviewTask(language, filename_of(uri), tuple(f.text for _, f in batch))
                with requests_at(Priority.ACTION):
                    reply = await self._ask(backend, task)
                found = parse_findings(reply, len(batch))
                for number, (key, _) in enumerate(batch, start=1):
                    self._remember(key, tuple(found[number]))
        except BackendError as failure:
            self.backends.notifier.tell(
                f"review-{failure.kind.value}", f"lsp-spark security review: {failure.args[0]}"
            )
        self._publish(uri)

    async def _ask(self, backend: Backend, task: ReviewTask) -> str:
        settings = self.backends.settings
        outbound = build_messages(task, redact_secrets=settings.redact_secrets)
        self.stats.redactions.add(outbound.redactions)
        # Findings are short: a tight limit keeps a model that rambles from holding the backend
        # (the embedded model generates for one caller at a time, ghost text included).
        limit = REVIEW_BASE_TOKENS + REVIEW_TOKENS_PER_FUNCTION * len(task.functions)
        chat = backend.chat(
            outbound.messages,
            max_tokens=min(settings.actions_max_tokens, limit),
            model=settings.actions_model,
        )
        stats = self.stats.actions
        stats.reviews += 1
        stats.reviewed_functions += len(task.functions)
        async with contextlib.aclosing(chat) as deltas:
            return "".join([delta async for delta in deltas])

    def _remember(self, key: str, findings: tuple[Finding, ...]) -> None:
        self._cache[key] = findings
        self.stats.actions.findings += len(findings)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    def _publish(self, uri: str) -> None:
        """Diagnostics for the functions as they are now: findings of a changed function are
        gone until it is reviewed again."""
        document = self.workspace.documents.get(uri)
        syntax = self.workspace.tree(uri)
        state = self._documents.get(uri)
        if document is None or syntax is None or state is None:
            return
        language = canonical(document.language_id)
        diagnostics = [
            self._diagnostic(document, function, finding)
            for function in functions(syntax)
            for finding in self._cache.get(_key(language, function.text), ())
        ]
        if diagnostics or state.published:
            self._publish_diagnostics(uri, document.version, diagnostics)
            state.published = bool(diagnostics)

    def _diagnostic(
        self, document: Document, function: Function, finding: Finding
    ) -> types.Diagnostic:
        row = min(function.start_row + finding.line - 1, function.end_row - 1)
        line = document.line(row)
        start = len(line) - len(line.lstrip())
        return types.Diagnostic(
            range=types.Range(
                self._position(document, row, start), self._position(document, row, len(line))
            ),
            message=finding.message,
            severity=types.DiagnosticSeverity.Warning,
            source=OWN_SOURCE,
            code=finding.kind,
        )

    def _position(self, document: Document, row: int, column: int) -> types.Position:
        offset = document.offset_at(row, column, PositionEncoding.UTF32)
        line, character = document.position_at(offset, self.encoding)
        return types.Position(line=line, character=character)


def _key(language: str, text: str) -> str:
    return hashlib.sha256(f"{language}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _batches(pending: list[tuple[str, Function]]) -> Iterator[list[tuple[str, Function]]]:
    batch: list[tuple[str, Function]] = []
    size = 0
    for item in pending:
        length = len(item[1].text)
        if batch and (size + length > BATCH_CHARS or len(batch) >= BATCH_FUNCTIONS):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += length
    if batch:
        yield batch
