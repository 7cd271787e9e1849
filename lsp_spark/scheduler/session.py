"""One document's requests: the one in flight and the line state it was asked for, the
prefetch of what follows a shown suggestion, and which keystroke is the newest.

Editors such as Neovim send a request per keystroke without cancelling the previous one. A
keystroke that only adds characters to the line waits for the request in flight (or the
prefetch that foresaw it) and is answered from memory once that lands; any other keystroke
supersedes what is in flight. Ghost text and completion items go through the same session,
so they are scheduled alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from lsp_spark.scheduler import LatestOnly, cancel_once
from lsp_spark.scheduler.cache import LineState

T = TypeVar("T")


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
    task: asyncio.Task[Any] | None
    typed: str = ""
    """Characters typed after `state` by keystrokes waiting for this request's answer."""
    failed: bool = False
    """The backend failed it: the keystrokes that waited on it do not ask again at once, so
    none of them waits for more than one request's deadline."""

    def contradicts(self, suggestion: str) -> bool:
        """The suggestion so far disagrees with what was typed since: it can help nobody.
        (Asked only once something was typed: reading the suggestion so far costs more than
        the rest of a delta's handling.)"""
        shared = min(len(suggestion), len(self.typed))
        return shared > 0 and suggestion[:shared] != self.typed[:shared]


class DocumentSession:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.inflight: Inflight | None = None
        self.prefetch: Prefetch | None = None
        self._ticket = 0
        """Counts the requests that reached this session: a request that waited on another
        goes on only if no newer one arrived meanwhile."""
        self._jobs = LatestOnly()

    async def fetch(
        self,
        read_state: Callable[[], LineState],
        recall: Callable[[LineState], T | None],
        ask: Callable[[Inflight], Coroutine[Any, Any, T | None]],
        *,
        supersede: bool,
        ride: bool,
    ) -> T | None:
        """The answer for the cursor's state: from a request already running that covers it
        (`ride`: read back with `recall` once it lands), else from `ask`, run in the calling
        task as the newest request (None once superseded, with `supersede` on)."""
        self._ticket += 1
        ticket = self._ticket
        state = read_state()
        ahead, ridden = self._answering_soon(state, ride)
        if ahead is not None:
            await asyncio.wait({ahead})
            if self._ticket != ticket or (ridden is not None and ridden.failed):
                return None
            state = read_state()
            remembered = recall(state)
            if remembered is not None:
                return remembered
        if self.prefetch is not None and not self.prefetch.answers(state):
            self.cancel_prefetch()
        inflight = self.inflight = Inflight(state, asyncio.current_task())
        return await self._jobs.run_here(self.uri, ask(inflight), supersede=supersede)

    def _answering_soon(
        self, state: LineState, ride: bool
    ) -> tuple[asyncio.Task[Any] | None, Inflight | None]:
        """A task already running whose answer will cover `state`: the prefetch for the
        state an accept produces, or the request in flight that this keystroke extends
        (returned too, to learn how it ended)."""
        prefetch = self.prefetch
        if prefetch is not None and prefetch.answers(state):
            return prefetch.begin(), None
        pending = self.inflight
        if (
            ride
            and pending is not None
            and pending.task is not None
            and not pending.task.done()
            and pending.state.extended_by(state)
        ):
            pending.typed = state.line_prefix[len(pending.state.line_prefix) :]
            return pending.task, pending
        return None, None

    def plan_prefetch(self, prefetch: Prefetch, delay: float) -> None:
        """Fetch `prefetch` after `delay`, or at once when its suggestion is accepted."""
        self.cancel_prefetch()
        prefetch.timer = asyncio.get_running_loop().call_later(delay, prefetch.begin)
        self.prefetch = prefetch

    def accepted(self) -> None:
        """The shown suggestion was accepted (or shown): its continuation is wanted now."""
        if self.prefetch is not None:
            self.prefetch.begin()

    def cancel_prefetch(self) -> None:
        if self.prefetch is not None:
            self.prefetch.cancel()
            self.prefetch = None

    def superseded(self) -> None:
        """Memory answered this keystroke: whatever is in flight answers an older one."""
        self._jobs.cancel(self.uri)

    def close(self) -> None:
        """Stop everything running for the document (closed, or the backend changed)."""
        self._jobs.cancel_all()
        self.cancel_prefetch()
        self.inflight = None
