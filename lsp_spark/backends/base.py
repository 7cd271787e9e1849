"""The one interface every model backend implements: an async stream of text deltas."""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field


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
    context: str = field(default="")
    """Material from elsewhere (imports, definitions, other files) placed before the prefix."""


class FailureKind(enum.Enum):
    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    UNAVAILABLE = "unavailable"
    BAD_RESPONSE = "bad_response"
    MISCONFIGURED = "misconfigured"


class BackendError(Exception):
    """A failure the user may need to hear about once; never carries secrets."""

    def __init__(self, kind: FailureKind, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


@dataclass(slots=True)
class StreamUsage:
    """Token counts for the last stream, as reported by the backend when it does."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


class Backend(ABC):
    """A source of completions.

    `stream` is an async generator: closing it early (``aclose``) must close the
    upstream connection or stop local generation at once, so no token is paid for
    after the caller loses interest.
    """

    name: str = "backend"
    context_tokens = 2048
    """The prompt budget that suits this backend when the settings do not say."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.last_usage = StreamUsage()

    @abstractmethod
    def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        """Yield text deltas of the completion as they arrive."""

    @property
    def count_tokens(self) -> Callable[[str], int] | None:
        """The backend's own tokenizer, when it has one at hand; else budgets are estimated."""
        return None

    async def warm(self) -> None:
        """Pay connection or load costs ahead of the first keystroke."""

    async def list_models(self) -> list[str]:
        return [self.model]

    async def aclose(self) -> None:
        """Release connections, threads and memory."""
