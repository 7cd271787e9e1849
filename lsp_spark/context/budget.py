"""Token budgets: counted with the backend's tokenizer when it has one, else estimated."""

from __future__ import annotations

from collections.abc import Callable

ESTIMATED_CHARS_PER_TOKEN = 3.8
"""Calibrated on standard-library Python: SmolLM2's tokenizer gives 3.8-4.5 characters a
token; the lower end keeps estimates on the safe side for other tokenizers."""

SUFFIX_SHARE = 0.15
RELATED_SHARE = 0.25


class Budget:
    """Splits a token budget between the text around the cursor and related code."""

    def __init__(self, tokens: int, count: Callable[[str], int] | None = None) -> None:
        self.tokens = tokens
        self._count = count

    def count(self, text: str) -> int:
        if self._count is not None:
            return self._count(text)
        return int(len(text) / ESTIMATED_CHARS_PER_TOKEN) + 1

    def chars(self, tokens: int) -> int:
        """Characters that fit in `tokens`, for sizing windows before any text is read."""
        return int(tokens * ESTIMATED_CHARS_PER_TOKEN)

    @property
    def suffix_tokens(self) -> int:
        return int(self.tokens * SUFFIX_SHARE)

    @property
    def related_tokens(self) -> int:
        return int(self.tokens * RELATED_SHARE)
