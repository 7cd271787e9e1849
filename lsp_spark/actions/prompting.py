"""Every prompt that leaves the machine for code actions and reviews is assembled here.

One function, `build_messages`, turns a task into the messages (and the prediction) sent
upstream, so whatever must happen to outgoing text (redaction, say) happens in one place.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from lsp_spark.languages import fence_tag
from lsp_spark.privacy.redaction import redact
from lsp_spark.prompts.actions import EDIT_SYSTEM, REVIEW_SYSTEM, TESTS_SYSTEM

_BACKTICKS = re.compile(r"`{3,}")


@dataclass(frozen=True, slots=True)
class EditTask:
    """Rewrite one scope as instructed."""

    language: str
    filename: str
    instruction: str
    code: str
    """The scope, lines joined by "\\n"."""
    before: str = ""
    """Code above the scope, shown for reference only."""
    after: str = ""


@dataclass(frozen=True, slots=True)
class WriteTestsTask:
    """Write tests for one function, to append to its test file."""

    language: str
    filename: str
    code: str
    name: str
    test_filename: str
    test_file: str
    """The test file's current text; empty when it is to be created."""
    module: str | None = None
    """How the tests import the code under test (a Python module path), when known."""
    same_file: bool = False
    """The tests go at the end of the source file itself (Rust)."""


@dataclass(frozen=True, slots=True)
class ReviewTask:
    """Review changed functions of one file for security flaws."""

    language: str
    filename: str
    functions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Outbound:
    """What is sent: the chat messages, and the text the answer is predicted to repeat."""

    messages: list[dict[str, str]]
    prediction: str | None = None
    redactions: dict[str, int] = field(default_factory=dict)
    """Secrets taken out, by kind."""


def build_messages(
    task: EditTask | WriteTestsTask | ReviewTask, *, redact_secrets: bool = True
) -> Outbound:
    """The messages for `task`, with secrets replaced by placeholders unless told not to
    (the prediction the same way, so it still matches the code in the prompt)."""
    if isinstance(task, EditTask):
        outbound = _edit(task)
    elif isinstance(task, WriteTestsTask):
        outbound = _tests(task)
    else:
        outbound = _review(task)
    if not redact_secrets:
        return outbound
    counts: Counter[str] = Counter()
    messages = []
    for message in outbound.messages:
        redacted = redact(message["content"])
        counts.update(redacted.counts)
        messages.append({**message, "content": redacted.text})
    prediction = redact(outbound.prediction).text if outbound.prediction else None
    return Outbound(messages, prediction, dict(counts))


def fenced(code: str, language: str) -> str:
    """A Markdown code block around `code`, its fence longer than any backtick run inside."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{fence_tag(language)}\n{code}\n{fence}"


def _edit(task: EditTask) -> Outbound:
    parts = [f"File: {task.filename} ({task.language})"]
    if task.before or task.after:
        around = "\n".join(
            part for part in (task.before, "<<the scope below goes here>>", task.after) if part
        )
        parts.append(
            "Code around the scope, for reference only (do not return it):\n"
            + fenced(around, task.language)
        )
    parts.append("The scope:\n" + fenced(task.code, task.language))
    parts.append(f"Instruction: {task.instruction}")
    return Outbound(
        [
            {"role": "system", "content": EDIT_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)},
        ],
        prediction=fenced(task.code, task.language) if task.code.strip() else None,
    )


def _tests(task: WriteTestsTask) -> Outbound:
    imported = f", imported as `{task.module}`" if task.module else ""
    parts = [
        f"Code under test, from {task.filename} ({task.language}){imported}:\n"
        + fenced(task.code, task.language)
    ]
    if task.same_file:
        parts.append(
            "The tests go at the end of this same file, in a new test module of their own "
            f"named tests_{task.name} (`#[cfg(test)] mod tests_{task.name}`) that uses super::*."
        )
    elif task.test_file.strip():
        parts.append(
            f"The test file {task.test_filename} so far:\n" + fenced(task.test_file, task.language)
        )
    else:
        parts.append(f"The test file {task.test_filename} does not exist yet: start it.")
    parts.append(f"Instruction: Write unit tests for {task.name}.")
    return Outbound(
        [
            {"role": "system", "content": TESTS_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
    )


def _review(task: ReviewTask) -> Outbound:
    parts = [f"File: {task.filename} ({task.language})"]
    for number, code in enumerate(task.functions, start=1):
        numbered = "\n".join(f"{row}| {line}" for row, line in enumerate(code.split("\n"), start=1))
        parts.append(f"Function {number}:\n" + fenced(numbered, task.language))
    return Outbound(
        [
            {"role": "system", "content": REVIEW_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
    )
