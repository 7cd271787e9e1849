"""One completion request, end to end: cache → debounce → context → backend stream → filters."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any

from lsp_spark.backends import Backend, BackendError, CompletionRequest, FailureKind, create_backend
from lsp_spark.context.budget import ESTIMATED_CHARS_PER_TOKEN, Budget
from lsp_spark.context.builder import BuiltContext, ContextOptions, build_context
from lsp_spark.context.sources import filename_of
from lsp_spark.documents import Document
from lsp_spark.postprocess import SuggestionStream
from lsp_spark.privacy.exclusion import Exclusions
from lsp_spark.privacy.redaction import contains_placeholder, redact_request
from lsp_spark.scheduler import Deadline, LatestOnly, cancel_once
from lsp_spark.scheduler.cache import LineState, SuggestionCache
from lsp_spark.scheduler.debounce import AdaptiveDebounce
from lsp_spark.settings import Settings
from lsp_spark.stats import Stats
from lsp_spark.workspace import Workspace

log = logging.getLogger(__name__)

PREFETCH_DELAY = 0.01
"""Seconds between delivering a suggestion and fetching its continuation: enough for the
answer to leave first. Any later and an accept, which comes about 150 ms after the
suggestion appears, would find the continuation still on its way."""
WAIT_REPARSE_DELAY = 0.002
"""Seconds a block request waits for the model before its document is reparsed: a hosted
model's first token takes tens of milliseconds, so the reparse still happens while it
waits, but an answer back sooner than this is not held up by it (the tree is then
brought up to date only if the suggestion's check needs it, or after the answer)."""
IDLE_REWARM = 45.0
"""Servers drop idle keep-alive connections after about a minute; re-open before that."""
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
    "actions_timeout_ms",
)


@dataclass(frozen=True, slots=True)
class Suggestion:
    text: str
    replace_chars: int
    """How many code points after the cursor, on its line, the text replaces."""
    backend: str
    model: str
    cached: bool = False


@dataclass(slots=True)
class Prefetch:
    """A continuation to fetch once its suggestion has been on screen a moment (or at once
    when it is accepted), and the states it will answer."""

    accepted: LineState
    """The cursor's line right after accepting the shown suggestion."""
    fetch: Callable[[], Coroutine[Any, Any, None]]
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task[None] | None = None

    def begin(self) -> asyncio.Task[None]:
        if self.task is None:
            if self.timer is not None:
                self.timer.cancel()
            self.task = asyncio.get_running_loop().create_task(self.fetch())
        return self.task

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.task is not None:
            cancel_once(self.task)

    def answers(self, state: LineState) -> bool:
        """The accepted state itself, or the blank line Enter opens right after it."""
        accepted = self.accepted
        return state == accepted or (
            state.uri == accepted.uri
            and state.row == accepted.row + 1
            and state.previous_line == accepted.line_prefix + accepted.line_suffix
            and not (state.line_prefix.strip() or state.line_suffix.strip())
        )


@dataclass(slots=True)
class Inflight:
    """The upstream request running for a document, and what the user has typed since."""

    state: LineState
    task: asyncio.Task[Suggestion | None] | None = None
    typed: str = ""
    """Characters typed after `state` by keystrokes waiting for this request's answer."""

    def contradicted_by(self, assembled: SuggestionStream) -> bool:
        """The suggestion so far disagrees with what was typed since: it can help nobody."""
        if not self.typed:
            return False
        text, _ = assembled.suggestion()
        shared = min(len(text), len(self.typed))
        return shared > 0 and text[:shared] != self.typed[:shared]


def line_state(document: Document, row: int, column: int) -> LineState:
    line = document.line(row)
    return LineState(
        document.uri, row, line[:column], line[column:], document.line(row - 1) if row else ""
    )


def _accepted_state(state: LineState, suggestion: Suggestion) -> LineState:
    lines = (state.line_prefix + suggestion.text).split("\n")
    return LineState(
        state.uri,
        state.row + len(lines) - 1,
        lines[-1],
        state.line_suffix[suggestion.replace_chars :],
        lines[-2] if len(lines) > 1 else state.previous_line,
    )


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
        self.cache = SuggestionCache()
        self.debounce = AdaptiveDebounce()
        self._prefetches: dict[str, Prefetch] = {}
        self._inflight: dict[str, Inflight] = {}
        """Per document, the upstream request running now and the state it was asked for."""
        self._tickets: dict[str, int] = {}
        self._idle = Deadline(self._rewarm_after_idle)
        self._paused_until = 0.0
        self._unavailable_streak = 0
        self._background: set[asyncio.Task[Any]] = set()
        self._configured = False
        self._options: tuple[Backend, Settings, ContextOptions] | None = None

    def backend(self) -> Backend:
        """The configured backend, for other pipelines (code actions); raises why there is none."""
        if self._backend is None:
            raise self._backend_failure or BackendError(
                FailureKind.MISCONFIGURED, "lsp-spark has no backend configured yet."
            )
        return self._backend

    @property
    def connections(self) -> tuple[int, int]:
        return self._backend.connections if self._backend else (0, 0)

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
        if (previous.exclude, previous.default_excludes) != (
            settings.exclude,
            settings.default_excludes,
        ) or not self._configured:
            self.workspace.set_exclusions(
                Exclusions(settings.exclude, defaults=settings.default_excludes)
            )
            self.cache.clear()
        self._configured = True
        self.notifier.forget()
        self._paused_until = 0.0
        unchanged = all(
            getattr(previous, name) == getattr(settings, name) for name in BACKEND_SETTINGS
        )
        if unchanged and (self._backend or self._backend_failure):
            return
        # Swap before any await, so a request right behind the change already uses it.
        old = self._backend
        try:
            self._backend, self._backend_failure = create_backend(settings), None
        except BackendError as failure:
            self._backend, self._backend_failure = None, failure
            self.notifier.tell(failure.kind.value, failure.args[0])
        self.cache.clear()
        self.jobs.cancel_all()
        if old is not None:
            self.in_background(old.aclose())
        if self._backend is not None:
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
            if failure.kind in (
                FailureKind.MISCONFIGURED,
                FailureKind.AUTH,
                FailureKind.NOT_AN_API,
            ):
                self._fail(failure)

    def recall(self, document: Document, row: int, column: int) -> Suggestion | None:
        """Answer from memory, before any task, debounce or context work."""
        return self._recall(line_state(document, row, column))

    def _recall(self, state: LineState) -> Suggestion | None:
        """A remembered answer; one with empty text means "known: nothing to suggest"."""
        backend = self._backend
        if backend is None or not self.settings.enable or not self.settings.cache:
            return None
        found = self.cache.recall(state)
        if found is None:
            return None
        self.jobs.cancel(state.uri)
        self.stats.requests += 1
        self.stats.cache_hits += 1
        self.stats.type_through_hits += found.origin == "typed"
        self.stats.prefetch_hits += found.origin == "prefetch"
        self.stats.tokens_saved += int(len(found.text) / ESTIMATED_CHARS_PER_TOKEN) + 1
        if found.text:
            self.stats.suggestions += 1
            self.stats.shown += 1
        else:
            self.stats.empty += 1
        return Suggestion(found.text, found.replace_chars, backend.name, backend.model, True)

    def submit(self, document: Document, row: int, column: int) -> asyncio.Task[Suggestion | None]:
        """Start a request; it supersedes any earlier one still running for this document."""
        inflight = self._inflight_for(document, row, column)
        task = self.jobs.submit(
            document.uri,
            self._suggest(document, row, column, inflight),
            supersede=self.settings.supersede,
        )
        inflight.task = task
        return task

    async def _ask(
        self, document: Document, row: int, column: int, state: LineState | None
    ) -> Suggestion | None:
        """`submit`, run in the calling task: None once superseded. (`state`: the cursor's,
        when the caller has it already.)"""
        inflight = self._inflight_for(document, row, column, state)
        inflight.task = asyncio.current_task()
        return await self.jobs.run_here(
            document.uri,
            self._suggest(document, row, column, inflight),
            supersede=self.settings.supersede,
        )

    def _inflight_for(
        self, document: Document, row: int, column: int, state: LineState | None = None
    ) -> Inflight:
        self.stats.requests += 1
        if state is None:
            state = line_state(document, row, column)
        pending = self._prefetches.get(document.uri)
        if pending is not None and not pending.answers(state):
            self._cancel_prefetch(document.uri)
        inflight = self._inflight[document.uri] = Inflight(state)
        return inflight

    async def suggest(self, document: Document, row: int, column: int) -> Suggestion | None:
        """From memory if possible, else `fetch`."""
        remembered = self.recall(document, row, column)
        if remembered is not None:
            return remembered
        return await self.fetch(document, row, column)

    async def fetch(self, document: Document, row: int, column: int) -> Suggestion | None:
        """For a state memory could not answer: ride on a request already in flight that this
        keystroke merely extends (answering from memory once it lands), else ask upstream,
        superseding what is in flight."""
        state = line_state(document, row, column)
        ticket = self._tickets[document.uri] = self._tickets.get(document.uri, 0) + 1
        ahead = self._answering_soon(state)
        if ahead is not None:
            await asyncio.wait({ahead})
            if self._tickets.get(document.uri) != ticket:
                return None
            remembered = self._recall(state)
            if remembered is not None:
                return remembered
        return await self._ask(document, row, column, None if ahead else state)

    def _answering_soon(self, state: LineState) -> asyncio.Task[Any] | None:
        """A task already running whose answer will cover `state`: the prefetch for the
        state an accept produces, or the request in flight that this keystroke extends."""
        prefetch = self._prefetches.get(state.uri)
        if prefetch is not None and prefetch.answers(state):
            return prefetch.begin()
        pending = self._inflight.get(state.uri)
        if (
            pending is not None
            and pending.task is not None
            and not pending.task.done()
            and self.settings.cache
            and self.settings.supersede
            and pending.state.extended_by(state)
        ):
            pending.typed = state.line_prefix[len(pending.state.line_prefix) :]
            return pending.task
        return None

    def keystroke(self) -> None:
        self.debounce.keystroke()

    def accepted(self, uri: str, partially: bool = False) -> None:
        """The user took a suggestion: fetch what follows it now rather than after a delay."""
        if partially:
            self.stats.partially_accepted += 1
        else:
            self.stats.accepted += 1
        self.shown(uri)

    def shown(self, uri: str) -> None:
        if (pending := self._prefetches.get(uri)) is not None:
            pending.begin()

    def forget(self, uri: str) -> None:
        self.jobs.cancel(uri)
        self._inflight.pop(uri, None)
        self._tickets.pop(uri, None)
        self._cancel_prefetch(uri)
        self.cache.forget(uri)

    async def _suggest(
        self, document: Document, row: int, column: int, inflight: Inflight
    ) -> Suggestion | None:
        state = inflight.state
        started = time.perf_counter()
        settings = self.settings
        backend = self._backend
        if not settings.enable or self.workspace.excluded(document.uri):
            return None
        if backend is None:
            if self._backend_failure is not None:
                self.notifier.tell(self._backend_failure.kind.value, self._backend_failure.args[0])
            return None
        built = build_context(self.workspace, document, row, column, self._context_options(backend))
        context_ms = (time.perf_counter() - started) * 1000
        if built is None:
            self.stats.empty += 1
            return None
        if built.cursor.multiline:
            # A block suggestion may be checked against the syntax tree: reparse while this
            # request waits for the model. (A line's rarely is.)
            self.workspace.parse_soon(document.uri, WAIT_REPARSE_DELAY)
        if time.monotonic() < self._paused_until:
            return None
        if delay := self.debounce.seconds(settings.debounce_ms):
            await asyncio.sleep(delay)
        window = built.window
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
        if settings.redact_secrets:
            request, redactions = redact_request(request)
            self.stats.redactions.add(redactions)
        assembled = SuggestionStream(built.cursor, skip=frozenset(settings.disabled_filters))
        result = await self._generate(
            backend, request, assembled, started, context_ms, inflight=inflight
        )
        if result is None:
            return None
        text, replace_chars = result
        if contains_placeholder(text):
            text, replace_chars = "", 0
        suggestion = self._deliver(text, replace_chars, backend, started)
        if settings.cache:
            # Once the answer is on its way (it is sent in this same step of the task): still
            # before any later keystroke, or a keystroke riding on this request, is read.
            asyncio.get_running_loop().call_soon(
                self._remember, backend, state, text, replace_chars, built, request, suggestion
            )
        return suggestion

    def _remember(
        self,
        backend: Backend,
        state: LineState,
        text: str,
        replace_chars: int,
        built: BuiltContext,
        request: CompletionRequest,
        suggestion: Suggestion | None,
    ) -> None:
        self.cache.remember(state, text, replace_chars)
        if suggestion is not None and self.settings.prefetch and backend is self._backend:
            self._plan_prefetch(backend, state, built, request, suggestion)

    def _plan_prefetch(
        self,
        backend: Backend,
        state: LineState,
        built: BuiltContext,
        request: CompletionRequest,
        suggestion: Suggestion,
    ) -> None:
        self._cancel_prefetch(state.uri)
        accepted = _accepted_state(state, suggestion)
        prefetch = Prefetch(
            accepted, partial(self._prefetch, backend, state, accepted, built, request, suggestion)
        )
        prefetch.timer = asyncio.get_running_loop().call_later(PREFETCH_DELAY, prefetch.begin)
        self._prefetches[state.uri] = prefetch

    def _cancel_prefetch(self, uri: str) -> None:
        if (pending := self._prefetches.pop(uri, None)) is not None:
            pending.cancel()

    async def _prefetch(
        self,
        backend: Backend,
        state: LineState,
        accepted: LineState,
        built: BuiltContext,
        request: CompletionRequest,
        suggestion: Suggestion,
    ) -> None:
        """Fetch what the model would suggest once this suggestion is accepted.

        The result is remembered for the line state that accepting produces, and for the
        blank line that Enter would open after it, so accepting and going on is instant.
        """
        rest = accepted.line_suffix
        line_prefix = accepted.line_prefix
        continuation = dataclasses.replace(
            request,
            prefix=request.prefix + suggestion.text,
            suffix=rest + request.suffix[len(state.line_suffix) :],
            multiline=True,
            stop=("\n\n\n",),
        )
        cursor = dataclasses.replace(
            built.cursor,
            line_prefix=line_prefix,
            line_suffix=rest,
            multiline=True,
            new_errors=None,
            parses_at_cursor=True,
        )
        assembled = SuggestionStream(cursor, skip=frozenset(self.settings.disabled_filters))
        self.stats.prefetches += 1
        result = await self._generate(
            backend, continuation, assembled, time.perf_counter(), prefetch=True
        )
        if result is None:
            return
        text, replace_chars = result
        if text.startswith("\n"):
            self.cache.remember(accepted, "", 0, "prefetch")
            self.cache.remember_next_line(state.uri, accepted.row + 1, line_prefix + rest, text[1:])
        else:
            self.cache.remember(accepted, text.split("\n", 1)[0], replace_chars, "prefetch")

    def _context_options(self, backend: Backend) -> ContextOptions:
        """Built once per backend and settings: the context builder reuses what it read for
        a row only under the same options."""
        settings = self.settings
        known = self._options
        if known is not None and known[0] is backend and known[1] is settings:
            return known[2]
        indent_unit = None
        if settings.insert_spaces is False:
            indent_unit = "\t"
        elif settings.tab_size:
            indent_unit = " " * settings.tab_size
        options = ContextOptions(
            budget=Budget(settings.context_tokens or backend.context_tokens, backend.count_tokens),
            max_lines=settings.max_lines,
            sources=frozenset(settings.context_sources),
            in_comments=settings.suggest_in_comments,
            in_strings=settings.suggest_in_strings,
            indent_unit=indent_unit,
        )
        self._options = (backend, settings, options)
        return options

    async def _generate(
        self,
        backend: Backend,
        request: CompletionRequest,
        assembled: SuggestionStream,
        started: float,
        context_ms: float = 0.0,
        prefetch: bool = False,
        inflight: Inflight | None = None,
    ) -> tuple[str, int] | None:
        """Stream into `assembled`, closing upstream as soon as the suggestion is complete;
        the cleaned suggestion and its replace length, or None when the backend failed or
        the user has since typed something the suggestion contradicts."""
        self.stats.upstream_requests += 1
        sent = time.perf_counter()
        first: float | None = None
        tokens = 0
        closed: str | None = None
        try:
            async with contextlib.aclosing(backend.stream(request)) as deltas:
                async for delta in deltas:
                    tokens += 1
                    first = first or time.perf_counter()
                    if assembled.feed(delta):
                        self.stats.early_stops += 1
                        closed = "earlyStop"
                        break
                    if inflight is not None and inflight.contradicted_by(assembled):
                        self.stats.superseded += 1
                        closed = "contradicted"
                        return None
        except BackendError as failure:
            self.stats.upstream_errors += 1
            closed = "failed"
            self._fail(failure)
            return None
        except asyncio.CancelledError:
            self.stats.superseded += 1
            closed = "cancelled"
            raise
        finally:
            self.stats.tokens_received += tokens
            if closed is not None:
                self.stats.stream_closes.append((time.monotonic(), closed))
            self._keep_warm()
        self._succeeded()
        done = time.perf_counter()
        first = first or done
        rate = (tokens - 1) / (done - first) if tokens > 1 and done > first else 0.0
        if tokens:
            self.stats.first_token_ms.append((first - sent) * 1000)
        if rate:
            self.stats.tokens_per_second.append(rate)
        result = assembled.suggestion()
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s: context %.2f ms, waited %.1f ms, first token %.1f ms, generation %.1f ms, "
                "post-processing %.2f ms, %d tokens at %.0f tokens/s",
                "prefetch" if prefetch else "completion",
                context_ms,
                (sent - started) * 1000 - context_ms,
                (first - sent) * 1000,
                (done - first) * 1000,
                (time.perf_counter() - done) * 1000,
                tokens,
                rate,
            )
        return result

    def _keep_warm(self) -> None:
        """Re-warm once the connection has idled for IDLE_REWARM."""
        self._idle.push(asyncio.get_running_loop().time() + IDLE_REWARM)

    def _rewarm_after_idle(self) -> None:
        if self._backend is not None:
            self.in_background(self._backend.warm())

    def _deliver(
        self, text: str, replace_chars: int, backend: Backend, started: float, cached: bool = False
    ) -> Suggestion | None:
        self.stats.latencies_ms.append((time.perf_counter() - started) * 1000)
        if not text.strip():
            self.stats.empty += 1
            return None
        self.stats.suggestions += 1
        self.stats.shown += 1
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
            # One dropped stream costs nothing: the next keystroke asks again. Failures in a
            # row back off exponentially and are told once. A request cut at its deadline
            # kept the user waiting, and a base URL that is not the API will not change by
            # retrying: both are told at once.
            low, high = UNAVAILABLE_BACKOFF
            self._unavailable_streak += 1
            if self._unavailable_streak > 1:
                self._paused_until = now + min(high, low * 2 ** (self._unavailable_streak - 2))
            elif failure.kind not in (FailureKind.TIMED_OUT, FailureKind.NOT_AN_API):
                return
            message = f"lsp-spark: {failure.args[0]} Retrying with backoff."
        self.notifier.tell(failure.kind.value, message)

    def _succeeded(self) -> None:
        if self._unavailable_streak:
            self._unavailable_streak = 0
            self.notifier.forget()

    async def aclose(self) -> None:
        self.jobs.cancel_all()
        for uri in list(self._prefetches):
            self._cancel_prefetch(uri)
        self._idle.cancel()
        for task in list(self._background):
            cancel_once(task)
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._backend is not None:
            await self._backend.aclose()
            self._backend = None
