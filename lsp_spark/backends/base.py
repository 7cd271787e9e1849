"""The one interface every model backend implements: an async stream of text deltas."""

from __future__ import annotations

import enum
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """What to fill in at the cursor; the backend picks the prompt format it needs."""

    prefix: str
    suffix: str
    language: str = "plaintext"
    filename: str = ""
    max_tokens: int = 128
    stop: tuple[str, ...] = ()
    temperature: float = 0.0
    multiline: bool = True
    header_only: bool = False
    """Only a block header fits at the cursor, the code below being its body: a model that
    does not see the suffix is held to starting one."""
    headers_that_fit: tuple[str, ...] = ()
    """Where the code below goes on with a clause (`elif`), the headers it can follow."""
    names_to_bind: tuple[str, ...] = ()
    """On a blank line in a function, the names its code below reads and nothing binds: a
    model that does not see the suffix is held to starting the line with one, or, where
    only a header fits, to a loop that binds one."""
    context: str = field(default="")
    """Material from elsewhere (imports, definitions, other files) placed before the prefix."""


class FailureKind(enum.Enum):
    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    UNAVAILABLE = "unavailable"
    BAD_RESPONSE = "bad_response"
    MISCONFIGURED = "misconfigured"
    TIMED_OUT = "timed_out"
    """The whole request took longer than its deadline, however steadily bytes arrived."""
    NOT_AN_API = "not_an_api"
    """The base URL answers, but not as the API does (a web page, a different service)."""


class BackendError(Exception):
    """A failure the user may need to hear about once; never carries secrets."""

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        retry_after: float | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status
        """The HTTP status, when the failure is an HTTP answer."""


def _count(reported: Mapping[str, Any], key: str) -> int:
    """A token count as reported, or 0 when the backend sent something that is not one."""
    value = reported.get(key)
    return value if type(value) is int and value >= 0 else 0


@dataclass(slots=True)
class ChatUsage:
    """What one chat call cost, filled in by the backend as the stream reports it; one object
    per call, so concurrent calls (a completion and an edit) never mix their counts."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    accepted_prediction_tokens: int = 0
    rejected_prediction_tokens: int = 0
    predicted: bool = False
    """Whether the request carried a prediction (a backend drops it where unsupported)."""

    def record(self, reported: Mapping[str, Any]) -> None:
        """Counts in the OpenAI format; prediction counts under completion_tokens_details."""
        self.prompt_tokens = _count(reported, "prompt_tokens")
        self.completion_tokens = _count(reported, "completion_tokens")
        details = reported.get("completion_tokens_details")
        details = details if isinstance(details, dict) else {}
        self.accepted_prediction_tokens = _count(details, "accepted_prediction_tokens")
        self.rejected_prediction_tokens = _count(details, "rejected_prediction_tokens")


Message = Mapping[str, str]
"""One chat message: ``{"role": ..., "content": ...}``."""


class Backend(ABC):
    """A source of completions.

    `stream` is an async generator: closing it early (``aclose``) must close the
    upstream connection or stop local generation at once, so no token is paid for
    after the caller loses interest.
    """

    name: str = "backend"
    remote = True
    """Whether requests leave the machine (a server, over the network); an embedded model's
    work stays on it, and its time is spent loading and computing, not waiting on a peer."""
    context_tokens = 2048
    """The prompt budget that suits this backend when the settings do not say."""
    max_lines = 12
    """The longest multi-line suggestion that suits this backend when the settings do not say."""
    action_context_chars = 8000
    """How much of the code around an edited scope a code action's prompt may show."""
    concurrent_requests = 1
    """How many requests the backend serves at once when the settings do not say: local
    servers and the embedded model serve one at a time."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.tell: Callable[[str], None] = log.warning
        """How the backend tells the user something once (a mode it gave up for another);
        the holder points it at its notifier."""

    @abstractmethod
    def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        """Yield text deltas of the completion as they arrive."""

    @abstractmethod
    def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        model: str | None = None,
        prediction: str | None = None,
        usage: ChatUsage | None = None,
    ) -> AsyncGenerator[str, None]:
        """Yield text deltas of a chat answer (code actions, reviews), as they arrive.

        `model` overrides the backend's own where the backend serves several; `prediction`
        is text the answer will mostly repeat (Predicted Outputs), ignored where unsupported.
        Closing the generator early must stop generation, as for `stream`.
        """

    @property
    def count_tokens(self) -> Callable[[str], int] | None:
        """The backend's own tokenizer, when it has one at hand; else budgets are estimated."""
        return None

    @property
    def connections(self) -> tuple[int, int]:
        """Open upstream connections and how many are in use; (0, 0) where not tracked."""
        return 0, 0

    async def warm(self) -> None:
        """Pay connection or load costs ahead of the first keystroke."""

    async def list_models(self) -> list[str]:
        return [self.model]

    async def aclose(self) -> None:
        """Release connections, threads and memory."""
