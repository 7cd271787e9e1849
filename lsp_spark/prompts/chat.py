"""Fill-in-the-middle through a chat model, for APIs that ignore `suffix` (Cerebras)."""

from __future__ import annotations

from lsp_spark.backends.base import CompletionRequest

HOLE = "<CURSOR>"

SYSTEM_PROMPT = (
    "You are a code completion engine inside an editor. You receive a source file in which "
    f"the text cursor is marked {HOLE}. Reply with exactly the text to insert at {HOLE} so "
    "that the code before and after it reads as correct, idiomatic code. Rules: output code "
    "only, with no explanation, no Markdown and no code fences; never repeat text that already "
    f"comes before or after {HOLE}; keep the file's indentation style; if nothing should be "
    "inserted, reply with nothing."
)


def chat_messages(request: CompletionRequest) -> list[dict[str, str]]:
    """Static material first so that providers' prompt caching can reuse the start."""
    scope = (
        "Complete the current line only."
        if not request.multiline
        else "Complete the current statement or block; stop where the code after the cursor "
        "takes over."
    )
    parts = [f"File: {request.filename or 'untitled'} ({request.language})"]
    if request.context:
        parts.append(f"Related code from the project:\n{request.context}")
    parts.append(f"{request.prefix}{HOLE}{request.suffix}")
    parts.append(scope)
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
