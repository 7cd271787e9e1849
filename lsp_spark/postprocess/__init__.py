"""Post-processing: turn a model's streamed text into a suggestion, and stop it early."""

from __future__ import annotations

from lsp_spark.postprocess.filters import (
    SPECIAL_TOKEN,
    CursorContext,
    clean,
    replaced_suffix_length,
)

__all__ = ["CursorContext", "SuggestionStream"]


class SuggestionStream:
    """Accumulates deltas and says as soon as reading more cannot change the result."""

    def __init__(self, context: CursorContext) -> None:
        self.context = context
        self.raw = ""
        self._single_line = not context.multiline

    def feed(self, delta: str) -> bool:
        """Add a delta; True means the suggestion is complete and the stream can close."""
        self.raw += delta
        if SPECIAL_TOKEN.search(self.raw):
            return True
        body = self.raw.lstrip()
        if body.startswith("```"):
            _, newline, body = body.partition("\n")
            if not newline:
                return False
            if "```" in body:
                return True
            body = body.lstrip()
        if self._single_line:
            return "\n" in body
        return body.count("\n") > self.context.max_lines

    def suggestion(self) -> tuple[str, int]:
        """The cleaned text, and how many characters after the cursor it replaces."""
        text = clean(self.raw, self.context)
        return text, replaced_suffix_length(text, self.context)
