"""One completion request, top to bottom: memory → the document's session → context →
prompt → backend stream → filters → the suggestion.

`CompletionEngine.recall` answers from memory before any task exists; `fetch` is everything
else, and `_complete` is the one upstream request, read in order. The backend (and what to do
when it fails) lives in `BackendHolder`; the scheduling of a document's requests (the one in
flight, riding on it, the prefetch) in `DocumentSession`; everything else a stage needs is
in its own module.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from lsp_spark.backends import Backend, BackendError, CompletionRequest
from lsp_spark.backends.holder import BackendHolder
from lsp_spark.context.budget import ESTIMATED_CHARS_PER_TOKEN, Budget
from lsp_spark.context.builder import BuiltContext, ContextBuilder, ContextOptions
from lsp_spark.context.sources import filename_of
from lsp_spark.documents import Document
from lsp_spark.postprocess import SuggestionStream
from lsp_spark.privacy.exclusion import Exclusions
from lsp_spark.privacy.redaction import contains_placeholder, redact_request
from lsp_spark.scheduler.cache import LineState, SuggestionCache
from lsp_spark.scheduler.debounce import AdaptiveDebounce
from lsp_spark.scheduler.session import DocumentSession, Inflight, Prefetch
from lsp_spark.settings import Settings
from lsp_spark.stats import Stats
from lsp_spark.workspace import Workspace

log = logging.getLogger(__name__)

PREFETCH_DELAY = 0.01
"""Seconds between delivering a suggestion and fetching its continuation: enough for the
answer to leave first. Any later and an accept, which comes a fraction of a second after the
suggestion appears, would find the continuation still on its way."""
WAIT_REPARSE_DELAY = 0.002
"""Seconds a block request waits for the model before its document is reparsed: a hosted
model's first token takes tens of milliseconds, so the reparse still happens while it
waits, but an answer back sooner than this is not held up by it (the tree is then
brought up to date only if the suggestion's check needs it, or after the answer)."""


@dataclass(frozen=True, slots=True)
class Suggestion:
    text: str
    replace_chars: int
    """How many code points after the cursor, on its line, the text replaces."""
    backend: str
    model: str
    cached: bool = False


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


class CompletionEngine:
    def __init__(
        self,
        show_message: Callable[[str, bool], None],
        workspace: Workspace,
        backends: BackendHolder | None = None,
        stats: Stats | None = None,
    ) -> None:
        self.workspace = workspace
        self.contexts = ContextBuilder(workspace)
        self.backends = backends or BackendHolder(show_message)
        self.stats = stats or Stats()
        self.cache = SuggestionCache()
        self.debounce = AdaptiveDebounce()
        self.sessions: dict[str, DocumentSession] = {}
        self._configured = False
        self._options: tuple[Backend, Settings, ContextOptions] | None = None

    @property
    def settings(self) -> Settings:
        return self.backends.settings

    async def configure(self, settings: Settings) -> None:
        """Apply new settings; what was remembered or is running for an older backend, or
        under other exclusions, is dropped."""
        previous = self.settings
        exclusions_changed = (previous.exclude, previous.default_excludes) != (
            settings.exclude,
            settings.default_excludes,
        )
        if exclusions_changed or not self._configured:
            self.workspace.set_exclusions(
                Exclusions(settings.exclude, defaults=settings.default_excludes)
            )
            self.cache.clear()
        self._configured = True
        if self.backends.configure(settings):
            self.cache.clear()
            for session in self.sessions.values():
                session.close()

    def session(self, uri: str) -> DocumentSession:
        session = self.sessions.get(uri)
        if session is None:
            session = self.sessions[uri] = DocumentSession(uri)
        return session

    def recall(self, document: Document, row: int, column: int) -> Suggestion | None:
        """Answer from memory, before any task, debounce or context work."""
        return self._recall(line_state(document, row, column))

    def _recall(self, state: LineState) -> Suggestion | None:
        """A remembered answer; one with empty text means "known: nothing to suggest"."""
        backend = self.backends.backend
        if backend is None or not self.settings.enable or not self.settings.cache:
            return None
        found = self.cache.recall(state)
        if found is None:
            return None
        if (session := self.sessions.get(state.uri)) is not None:
            session.superseded()
        self.stats.requests += 1
        self.stats.cache_hits += 1
        self.stats.type_through_hits += found.origin == "typed"
        self.stats.prefetch_hits += found.origin == "prefetch"
        self.stats.tokens_saved += int(len(found.text) / ESTIMATED_CHARS_PER_TOKEN) + 1
        if found.text:
            self.stats.shown += 1
        else:
            self.stats.empty += 1
        return Suggestion(found.text, found.replace_chars, backend.name, backend.model, True)

    async def suggest(self, document: Document, row: int, column: int) -> Suggestion | None:
        """From memory if possible, else `fetch`."""
        remembered = self.recall(document, row, column)
        if remembered is not None:
            return remembered
        return await self.fetch(document, row, column)

    async def fetch(self, document: Document, row: int, column: int) -> Suggestion | None:
        """For a state memory could not answer: the document's session rides on a request
        already running that this keystroke merely extends, or else asks upstream,
        superseding what is in flight."""
        settings = self.settings
        return await self.session(document.uri).fetch(
            partial(line_state, document, row, column),
            self._recall,
            partial(self._complete, document, row, column),
            supersede=settings.supersede,
            ride=settings.cache and settings.supersede,
        )

    async def _complete(
        self, document: Document, row: int, column: int, inflight: Inflight
    ) -> Suggestion | None:
        """One upstream request: context → prompt → backend stream → filters → suggestion."""
        started = time.perf_counter()
        settings = self.settings
        self.stats.requests += 1
        if not settings.enable or self.workspace.excluded(document.uri):
            return None
        backend = self.backends.ready()
        if backend is None:
            return None
        built = self.contexts.build(document, row, column, self._context_options(backend))
        context_ms = (time.perf_counter() - started) * 1000
        if built is None:
            self.stats.empty += 1
            return None
        if built.cursor.multiline:
            # A block suggestion may be checked against the syntax tree: reparse while this
            # request waits for the model. (A line's rarely is.)
            self.workspace.parse_soon(document.uri, WAIT_REPARSE_DELAY)
        if delay := self.debounce.seconds(settings.debounce_ms):
            await asyncio.sleep(delay)
        request = self._prompt(document, built)
        assembled = SuggestionStream(built.cursor, skip=frozenset(settings.disabled_filters))
        result = await self._stream(backend, request, assembled, started, context_ms, inflight)
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
                self._remember,
                backend,
                inflight.state,
                text,
                replace_chars,
                built,
                request,
                suggestion,
            )
        return suggestion

    async def alternatives(
        self, document: Document, row: int, column: int, shown: Suggestion | None
    ) -> list[Suggestion]:
        """Other suggestions at this cursor, for a user who asks for them (the cycle keys):
        sampled at `alternativesTemperature`, one upstream request each, distinct from
        `shown` and from each other. Outside the session and the cache: nothing typed
        rides on them, and the usual suggestion stays the one remembered."""
        settings = self.settings
        if not settings.enable or self.workspace.excluded(document.uri):
            return []
        backend = self.backends.ready()
        if backend is None:
            return []
        built = self.contexts.build(document, row, column, self._context_options(backend))
        if built is None:
            return []
        request = dataclasses.replace(
            self._prompt(document, built), temperature=settings.alternatives_temperature
        )
        seen = {shown.text} if shown is not None else set()
        found: list[Suggestion] = []
        for _ in range(settings.alternatives):
            started = time.perf_counter()
            assembled = SuggestionStream(built.cursor, skip=frozenset(settings.disabled_filters))
            result = await self._stream(backend, request, assembled, started)
            if result is None:
                break
            text, replace_chars = result
            if text in seen or contains_placeholder(text):
                continue
            seen.add(text)
            if (suggestion := self._deliver(text, replace_chars, backend, started)) is not None:
                found.append(suggestion)
        return found

    def _prompt(self, document: Document, built: BuiltContext) -> CompletionRequest:
        """What the backend is asked, secrets taken out."""
        settings = self.settings
        multiline = built.cursor.multiline
        request = CompletionRequest(
            prefix=built.window.prefix,
            suffix=built.window.suffix,
            language=document.language_id,
            filename=filename_of(document.uri),
            max_tokens=settings.max_tokens,
            stop=("\n\n\n",) if multiline else ("\n",),
            temperature=settings.temperature,
            multiline=multiline,
            header_only=built.cursor.header_only,
            headers_that_fit=built.cursor.headers_that_fit,
            names_to_bind=built.cursor.names_to_bind,
            context=built.related,
        )
        if settings.redact_secrets:
            request, redactions = redact_request(request)
            self.stats.redactions.add(redactions)
        return request

    async def _stream(
        self,
        backend: Backend,
        request: CompletionRequest,
        assembled: SuggestionStream,
        started: float,
        context_ms: float = 0.0,
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
                    if (
                        inflight is not None
                        and inflight.typed
                        and inflight.contradicts(assembled.suggestion()[0])
                    ):
                        self.stats.superseded += 1
                        closed = "contradicted"
                        return None
        except BackendError as failure:
            self.stats.upstream_errors += 1
            closed = "failed"
            self.backends.failed(failure)
            if inflight is not None:
                inflight.failed = True
            return None
        except asyncio.CancelledError:
            self.stats.superseded += 1
            closed = "cancelled"
            raise
        finally:
            self.stats.tokens_received += tokens
            if closed is not None:
                self.stats.stream_closes.append((time.monotonic(), closed))
            self.backends.used()
        self.backends.succeeded()
        done = time.perf_counter()
        result = assembled.suggestion()
        self._record_timing(started, context_ms, sent, first, done, tokens, inflight is None)
        return result

    def _record_timing(
        self,
        started: float,
        context_ms: float,
        sent: float,
        first: float | None,
        done: float,
        tokens: int,
        prefetch: bool,
    ) -> None:
        """Timings for stats, and for the debug log the request broken down by stage."""
        first = first or done
        rate = (tokens - 1) / (done - first) if tokens > 1 and done > first else 0.0
        if tokens:
            self.stats.first_token_ms.append((first - sent) * 1000)
        if rate:
            self.stats.tokens_per_second.append(rate)
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

    def _deliver(
        self, text: str, replace_chars: int, backend: Backend, started: float
    ) -> Suggestion | None:
        self.stats.latencies_ms.append((time.perf_counter() - started) * 1000)
        if not text.strip():
            self.stats.empty += 1
            return None
        self.stats.shown += 1
        return Suggestion(text, replace_chars, backend.name, backend.model)

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
        if suggestion is not None and self.settings.prefetch and backend is self.backends.backend:
            accepted = _accepted_state(state, suggestion)
            fetch = partial(self._prefetch, backend, state, accepted, built, request, suggestion)
            self.session(state.uri).plan_prefetch(Prefetch(accepted, fetch), PREFETCH_DELAY)

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
            header_only=False,
            stop=("\n\n\n",),
        )
        cursor = dataclasses.replace(
            built.cursor,
            line_prefix=line_prefix,
            line_suffix=rest,
            multiline=True,
            header_only=False,
            new_errors=None,
            parses_at_cursor=None,
        )
        assembled = SuggestionStream(cursor, skip=frozenset(self.settings.disabled_filters))
        self.stats.prefetches += 1
        result = await self._stream(backend, continuation, assembled, time.perf_counter())
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
            max_lines=settings.max_lines or backend.max_lines,
            sources=frozenset(settings.context_sources),
            in_comments=settings.suggest_in_comments,
            in_strings=settings.suggest_in_strings,
            indent_unit=indent_unit,
        )
        self._options = (backend, settings, options)
        return options

    def related_code(self, document: Document, row: int, column: int) -> str:
        """The related code a completion at this cursor would get, for other prompts."""
        backend = self.backends.ready()
        if backend is None:
            return ""
        built = self.contexts.build(document, row, column, self._context_options(backend))
        return built.related if built is not None else ""

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
        if (session := self.sessions.get(uri)) is not None:
            session.accepted()

    def forget(self, uri: str) -> None:
        if (session := self.sessions.pop(uri, None)) is not None:
            session.close()
        self.cache.forget(uri)
        self.contexts.forget(uri)

    async def aclose(self) -> None:
        for session in self.sessions.values():
            session.close()
        await self.backends.aclose()
