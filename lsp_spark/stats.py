"""Counters the user can ask for (`lspSpark/stats`) to see where time and tokens go."""

from __future__ import annotations

import statistics
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from lsp_spark.privacy.redaction import RedactionTally

STATS_METHOD = "lspSpark/stats"
"""The request that returns `Stats.snapshot` (the server answers it, the demo asks it)."""
WINDOW = 500
CLOSES_KEPT = 1024


def _percentile(samples: deque[float], fraction: float) -> float | None:
    if not samples:
        return None
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[round(fraction * 100) - 1]


def _latency_summary(samples: deque[float]) -> dict[str, float | None]:
    """The median and the 95th percentile of recent latencies, as stats report them."""
    return {"p50": _percentile(samples, 0.5), "p95": _percentile(samples, 0.95)}


@dataclass
class ActionStats:
    """Code actions and security reviews: how many, how fast, and what predictions saved."""

    requested: int = 0
    edited: int = 0
    """Actions that produced an edit (the client may still decline to apply it)."""
    applied: int = 0
    """Edits the client confirmed applying (the command path, through workspace/applyEdit)."""
    refused: int = 0
    """Model output rejected (empty, or it broke the parse) or the backend failed."""
    cancelled: int = 0
    superseded: int = 0
    lines_changed: int = 0
    accepted_prediction_tokens: int = 0
    rejected_prediction_tokens: int = 0
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    reviews: int = 0
    """Review requests sent upstream."""
    reviewed_functions: int = 0
    review_cache_hits: int = 0
    """Functions whose review came from the cache (unchanged content), never re-sent."""
    findings: int = 0

    def snapshot(self) -> dict[str, Any]:
        return {
            "actions": {
                "requested": self.requested,
                "edited": self.edited,
                "applied": self.applied,
                "refused": self.refused,
                "cancelled": self.cancelled,
                "superseded": self.superseded,
                "linesChanged": self.lines_changed,
                "latencyMs": _latency_summary(self.latencies_ms),
            },
            "predictionTokens": {
                "accepted": self.accepted_prediction_tokens,
                "rejected": self.rejected_prediction_tokens,
            },
            "securityReview": {
                "requests": self.reviews,
                "functionsReviewed": self.reviewed_functions,
                "cacheHits": self.review_cache_hits,
                "findings": self.findings,
            },
        }


@dataclass
class NextEditStats:
    """Next-edit predictions: what they cost in output tokens, and what came of them."""

    predictions: int = 0
    with_edits: int = 0
    output_tokens: int = 0
    shown: int = 0
    accepted: int = 0
    cancelled: int = 0
    failed: int = 0
    """Predictions the backend failed (dropped, timed out, refused)."""
    contradicted: int = 0
    history_rows: int = 0
    """Rows the edit history holds now (bounded, however large the edits were)."""
    documents_with_problems: int = 0
    """Documents whose editor diagnostics are kept now (bounded for those never opened)."""
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    """From asking the model to a prediction with edits."""

    def snapshot(self) -> dict[str, Any]:
        return {
            "predictions": self.predictions,
            "withEdits": self.with_edits,
            "outputTokens": self.output_tokens,
            "outputTokensPerPrediction": (
                self.output_tokens / self.predictions if self.predictions else None
            ),
            "outputTokensPerAccepted": self.output_tokens / self.accepted
            if self.accepted
            else None,
            "shown": self.shown,
            "accepted": self.accepted,
            "cancelled": self.cancelled,
            "failed": self.failed,
            "contradicted": self.contradicted,
            "historyRows": self.history_rows,
            "documentsWithProblems": self.documents_with_problems,
            "latencyMs": _latency_summary(self.latencies_ms),
        }


@dataclass
class Stats:
    requests: int = 0
    empty: int = 0
    cache_hits: int = 0
    type_through_hits: int = 0
    prefetch_hits: int = 0
    prefetches: int = 0
    tokens_saved: int = 0
    shown: int = 0
    """Answers that carried a suggestion (reported as both `suggestions` and `shown`, the
    names the editor clients read)."""
    accepted: int = 0
    partially_accepted: int = 0
    upstream_requests: int = 0
    upstream_errors: int = 0
    superseded: int = 0
    early_stops: int = 0
    tokens_received: int = 0
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    first_token_ms: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    tokens_per_second: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    stream_closes: deque[tuple[float, str]] = field(
        default_factory=lambda: deque(maxlen=CLOSES_KEPT)
    )
    """When (monotonic seconds) and why the server closed upstream streams before their
    end: "earlyStop" (the suggestion was complete), "contradicted" (what was typed since
    disagrees with it), "cancelled" (superseded, or cancelled by the editor), "failed",
    "deadline" (the request's one deadline passed, an explicit request's alternatives
    included)."""
    redactions: RedactionTally = field(default_factory=RedactionTally)
    actions: ActionStats = field(default_factory=ActionStats)
    next_edit: NextEditStats = field(default_factory=NextEditStats)

    def snapshot(self, backend: str, model: str) -> dict[str, Any]:
        looked_up = self.cache_hits + self.upstream_requests - self.prefetches
        return {
            "backend": backend,
            "model": model,
            "requests": self.requests,
            "suggestions": self.shown,
            "empty": self.empty,
            "cacheHits": self.cache_hits,
            "cacheHitRate": self.cache_hits / looked_up if looked_up else 0.0,
            "typeThroughHits": self.type_through_hits,
            "prefetchHits": self.prefetch_hits,
            "prefetches": self.prefetches,
            "tokensSaved": self.tokens_saved,
            "shown": self.shown,
            "accepted": self.accepted,
            "partiallyAccepted": self.partially_accepted,
            "upstreamRequests": self.upstream_requests,
            "upstreamErrors": self.upstream_errors,
            "superseded": self.superseded,
            "earlyStops": self.early_stops,
            "tokensReceived": self.tokens_received,
            "streamCloses": dict(Counter(reason for _, reason in self.stream_closes)),
            "recentStreamCloses": [[at, reason] for at, reason in self.stream_closes],
            "latencyMs": _latency_summary(self.latencies_ms),
            "firstTokenMs": _latency_summary(self.first_token_ms),
            "tokensPerSecond": {"p50": _percentile(self.tokens_per_second, 0.5)},
            "lastLatencyMs": self.latencies_ms[-1] if self.latencies_ms else None,
            "lastTokensPerSecond": self.tokens_per_second[-1] if self.tokens_per_second else None,
            "redactions": {
                "prompts": self.redactions.prompts,
                "secrets": self.redactions.total,
                "byKind": self.redactions.snapshot(),
            },
            **self.actions.snapshot(),
            "nextEdit": self.next_edit.snapshot(),
        }
