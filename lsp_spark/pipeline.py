"""One completion request, end to end: cache → debounce → context → backend stream → filters."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from cachetools import LRUCache

from lsp_spark.backends import Backend, BackendError, CompletionRequest, FailureKind, create_backend
from lsp_spark.context.budget import Budget
from lsp_spark.context.builder import ContextOptions, build_context
from lsp_spark.documents import Document
from lsp_spark.postprocess import SuggestionStream
from lsp_spark.scheduler import LatestOnly, outcome
from lsp_spark.settings import Settings
from lsp_spark.stats import Stats
from lsp_spark.workspace import Workspace

log = logging.getLogger(__name__)

CACHE_SIZE = 512
# After a failure the backend is left alone for a while instead of being asked on every keystroke.
UNAVAILABLE_BACKOFF = (0.5, 30.0)
RATE_LIMIT_BACKOFF = 2.0
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
)


@dataclass(frozen=True, slots=True)
class Suggestion:
    text: str
    replace_chars: int
    """How many code points after the cursor, on its line, the text replaces."""
    backend: str
    model: str
    cached: bool = False


def filename_of(uri: str) -> str:
    return posixpath.basename(unquote(urlparse(uri).path)) or uri


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


class CompletionEngine:
    def __init__(self, show_message: Callable[[str, bool], None], workspace: Workspace) -> None:
        self.workspace = workspace
        self.settings = Settings()
        self.stats = Stats()
        self.jobs = LatestOnly()
        self.notifier = Notifier(show_message)
        self._backend: Backend | None = None
        self._backend_failure: BackendError | None = None
        self._cache: LRUCache[tuple[Any, ...], tuple[str, int]] = LRUCache(CACHE_SIZE)
        self._paused_until = 0.0
        self._unavailable_streak = 0
        self._background: set[asyncio.Task[Any]] = set()

    @property
    def backend_name(self) -> str:
        return self._backend.name if self._backend else "none"

    @property
    def model_name(self) -> str:
        return self._backend.model if self._backend else ""

    def in_background(self, job: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(job)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def configure(self, settings: Settings) -> None:
        """Apply new settings; rebuild the backend only when its own settings changed."""
        previous, self.settings = self.settings, settings
        self.notifier.forget()
        self._paused_until = 0.0
        unchanged = all(
            getattr(previous, name) == getattr(settings, name) for name in BACKEND_SETTINGS
        )
        if unchanged and (self._backend or self._backend_failure):
            return
        old, self._backend, self._backend_failure = self._backend, None, None
        self._cache.clear()
        self.jobs.cancel_all()
        if old is not None:
            await old.aclose()
        try:
            self._backend = create_backend(settings)
        except BackendError as failure:
            self._backend_failure = failure
            self.notifier.tell(failure.kind.value, failure.args[0])
            return
        self.in_background(self._prepare(self._backend))

    async def _prepare(self, backend: Backend) -> None:
        """Warm the connection (or load the model) and check the model name, off the hot path."""
        try:
            await backend.warm()
            if backend.name != "local":
                models = await backend.list_models()
                if models and backend.model not in models:
                    self.notifier.tell(
                        "model",
                        f"lsp-spark: model {backend.model!r} is not offered by the "
                        f"{backend.name} backend; available: {', '.join(sorted(models))}.",
                    )
        except BackendError as failure:
            log.info("preparing the %s backend: %s", backend.name, failure)
            if failure.kind in (FailureKind.MISCONFIGURED, FailureKind.AUTH):
                self._fail(failure)

    def submit(self, document: Document, row: int, column: int) -> asyncio.Task[Suggestion | None]:
        """Start a request; it supersedes any earlier one still running for this document."""
        self.stats.requests += 1
        return self.jobs.submit(document.uri, self._suggest(document, row, column))

    async def suggest(self, document: Document, row: int, column: int) -> Suggestion | None:
        return await outcome(self.submit(document, row, column))

    async def _suggest(self, document: Document, row: int, column: int) -> Suggestion | None:
        started = time.perf_counter()
        settings = self.settings
        backend = self._backend
        if not settings.enable:
            return None
        if backend is None:
            if self._backend_failure is not None:
                self.notifier.tell(self._backend_failure.kind.value, self._backend_failure.args[0])
            return None
        built = build_context(self.workspace, document, row, column, self._context_options(backend))
        if built is None:
            self.stats.empty += 1
            return None
        window = built.window
        key = (backend.name, backend.model, built.related, window.prefix, window.suffix)
        cached = self._cache.get(key)
        if cached is not None:
            self.stats.cache_hits += 1
            return self._deliver(*cached, backend, started, cached=True)
        if time.monotonic() < self._paused_until:
            return None
        if settings.debounce_ms:
            await asyncio.sleep(settings.debounce_ms / 1000)
        multiline = built.cursor.multiline
        request = CompletionRequest(
            prefix=window.prefix,
            suffix=window.suffix,
            language=document.language_id,
            filename=filename_of(document.uri),
            max_tokens=settings.max_tokens,
            stop=("\n\n\n",) if multiline else ("\n",),
            temperature=settings.temperature,
            multiline=multiline,
            context=built.related,
        )
        assembled = SuggestionStream(built.cursor, skip=frozenset(settings.disabled_filters))
        if not await self._generate(backend, request, assembled, started):
            return None
        self._cache[key] = result = assembled.suggestion()
        return self._deliver(*result, backend, started)

    def _context_options(self, backend: Backend) -> ContextOptions:
        settings = self.settings
        indent_unit = None
        if settings.insert_spaces is False:
            indent_unit = "\t"
        elif settings.tab_size:
            indent_unit = " " * settings.tab_size
        return ContextOptions(
            budget=Budget(settings.context_tokens or backend.context_tokens, backend.count_tokens),
            max_lines=settings.max_lines,
            sources=frozenset(settings.context_sources),
            in_comments=settings.suggest_in_comments,
            in_strings=settings.suggest_in_strings,
            indent_unit=indent_unit,
        )

    async def _generate(
        self,
        backend: Backend,
        request: CompletionRequest,
        assembled: SuggestionStream,
        started: float,
    ) -> bool:
        """Stream into `assembled`, closing upstream as soon as the suggestion is complete."""
        self.stats.upstream_requests += 1
        sent = time.perf_counter()
        first: float | None = None
        tokens = 0
        try:
            async with contextlib.aclosing(backend.stream(request)) as deltas:
                async for delta in deltas:
                    tokens += 1
                    first = first or time.perf_counter()
                    if assembled.feed(delta):
                        self.stats.early_stops += 1
                        break
        except BackendError as failure:
            self.stats.upstream_errors += 1
            self._fail(failure)
            return False
        except asyncio.CancelledError:
            self.stats.superseded += 1
            raise
        finally:
            self.stats.tokens_received += tokens
        self._succeeded()
        done = time.perf_counter()
        if first is not None:
            self.stats.first_token_ms.append((first - sent) * 1000)
            if done > first and tokens > 1:
                self.stats.tokens_per_second.append((tokens - 1) / (done - first))
        log.debug(
            "completion: wait+context %.1f ms, first token %.1f ms, generation %.1f ms, %d tokens",
            (sent - started) * 1000,
            ((first or done) - sent) * 1000,
            (done - (first or done)) * 1000,
            tokens,
        )
        return True

    def _deliver(
        self, text: str, replace_chars: int, backend: Backend, started: float, cached: bool = False
    ) -> Suggestion | None:
        self.stats.latencies_ms.append((time.perf_counter() - started) * 1000)
        if not text.strip():
            self.stats.empty += 1
            return None
        self.stats.suggestions += 1
        return Suggestion(text, replace_chars, backend.name, backend.model, cached)

    def _fail(self, failure: BackendError) -> None:
        """Back off as the failure asks, and say so once."""
        now = time.monotonic()
        if failure.kind is FailureKind.AUTH or failure.kind is FailureKind.MISCONFIGURED:
            self._paused_until = float("inf")
            message = f"lsp-spark: {failure.args[0]} Suggestions are paused until settings change."
        elif failure.kind is FailureKind.RATE_LIMIT:
            self._paused_until = now + (failure.retry_after or RATE_LIMIT_BACKOFF)
            message = f"lsp-spark: {failure.args[0]} Waiting before asking again."
        else:
            low, high = UNAVAILABLE_BACKOFF
            self._unavailable_streak += 1
            self._paused_until = now + min(high, low * 2 ** (self._unavailable_streak - 1))
            message = f"lsp-spark: {failure.args[0]}"
        self.notifier.tell(failure.kind.value, message)

    def _succeeded(self) -> None:
        if self._unavailable_streak:
            self._unavailable_streak = 0
            self.notifier.forget()

    async def aclose(self) -> None:
        self.jobs.cancel_all()
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._backend is not None:
            await self._backend.aclose()
            self._backend = None
