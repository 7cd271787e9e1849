"""Plain left-to-right continuation for small instruct models that were never FIM-trained.

SmolLM2-135M-Instruct garbles FIM markers and, asked through its chat template to fill
a hole, repeats the whole file; fed a file header plus the code before the cursor, it
continues the code sensibly. The suffix can only steer where the completion stops.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from lsp_spark.backends.base import CompletionRequest
from lsp_spark.languages import profile_for

TRIM_STEP_LINES = 16
"""Trimmed text starts on a multiple of this many lines, so the prompt's start stays
put while the user types and the model's KV cache can be reused."""


def continuation_prompt(request: CompletionRequest, *, max_chars: int | None = None) -> str:
    """A header comment naming the file, then the context and the prefix, ended raw.

    When `max_chars` is given, the oldest lines of context and prefix are dropped so
    the prompt fits; the text nearest the cursor is always kept.
    """
    header = _header(request)
    body = f"{request.context}\n{request.prefix}" if request.context else request.prefix
    if max_chars is not None and len(header) + len(body) > max_chars:
        body = _keep_end(body, max(max_chars - len(header), 0))
    return header + body


def continuation_stops(request: CompletionRequest) -> tuple[str, ...]:
    """Stop strings that end a continuation where a FIM model would have ended the hole.

    The chat-tuned model likes to close a markdown fence and explain itself, and it cannot
    see the suffix, so generation stops when it starts writing the suffix's next line.
    """
    stops = list(request.stop)
    if not profile_for(request.language).prose:
        stops.append("\n```")
    rest_of_line, _, after = request.suffix.partition("\n")
    if not rest_of_line.strip():
        next_line = next((line for line in after.split("\n") if line.strip()), "")
        if next_line:
            stops.append("\n" + next_line.rstrip())
    return tuple(dict.fromkeys(stop for stop in stops if stop))


def line_comment(language: str) -> str:
    """The marker that starts a line comment in `language`, for labelling related code
    (`//` in a language without comments, which most models read as one)."""
    markers = profile_for(language).syntax.line_comments
    return markers[0] if markers else "//"


def _header(request: CompletionRequest) -> str:
    language = request.language
    markers = profile_for(language).syntax.line_comments
    if not markers:
        return ""
    marker = markers[0]
    name = PurePosixPath(request.filename.replace("\\", "/")).name if request.filename else ""
    return f"{marker} {name} ({language})\n" if name else f"{marker} language: {language}\n"


def _keep_end(text: str, budget: int) -> str:
    if budget <= 0:
        return ""
    lines = text.splitlines(keepends=True)
    kept = 0
    start = len(lines)
    for index in range(len(lines) - 1, -1, -1):
        kept += len(lines[index])
        if kept > budget:
            break
        start = index
    aligned = -(-start // TRIM_STEP_LINES) * TRIM_STEP_LINES
    if aligned < len(lines):
        return "".join(lines[aligned:])
    return text[-budget:]
