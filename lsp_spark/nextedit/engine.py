"""Next-edit predictions: after an edit, the edits that follow it near the cursor.

One prediction, top to bottom (`_predict`): the editable region around the cursor, the
prompt (recent edits, related code, problems reported, the numbered region), the model's
answer read as line edits, the region rewritten, and the minimal edits between the two,
less those that undo the user's latest edit or add syntax errors. A prediction is kept as
the region's target text: as the user accepts or types its edits, the edits still to make
are the difference between the region now and that target, so walking a rename's uses
with Tab needs no second model call. An edit that moves away from the target drops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from lsp_spark.actions.diffing import line_ending
from lsp_spark.backends.base import Backend, BackendError, ChatUsage
from lsp_spark.backends.budget import REQUEST_PRIORITY, Priority
from lsp_spark.backends.holder import BackendHolder
from lsp_spark.context.sources import filename_of
from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.nextedit.history import EditHistory
from lsp_spark.nextedit.hunks import Hunk, breaks_syntax, hunks_between, undoes
from lsp_spark.nextedit.prompt import next_edit_messages, numbered, parse_answer, rewritten
from lsp_spark.nextedit.region import editable_region
from lsp_spark.privacy.redaction import contains_placeholder, redact
from lsp_spark.stats import Stats
from lsp_spark.workspace import Workspace

log = logging.getLogger(__name__)

ACCEPT_COMMAND = "lspSpark.acceptNextEdit"
NEARBY_PROBLEM_ROWS = 3
PROBLEMS_SHOWN = 8
PROBLEMS_KEPT = 1000
"""Diagnostics kept per document; the editor's first ones when it sends more."""
UNOPENED_WITH_PROBLEMS = 32
"""Documents not open whose diagnostics are kept, those reported last: they may come before
the document is opened, but an editor that reports a whole project's must not fill memory."""


@dataclass(slots=True)
class Prediction:
    """The region rows [start, end) of `uri` should come to read `target`."""

    id: int
    uri: str
    start: int
    end: int
    target: list[str]
    distance: int


@dataclass(slots=True)
class _Asked:
    """A prediction being computed for one document version; `now` ends its debounce early
    (the editor asked for it)."""

    version: int
    task: asyncio.Task[Prediction | None]
    now: asyncio.Event


def distance(current: Sequence[str], target: Sequence[str]) -> int:
    """Characters to delete and insert to turn `current` into `target`, counted within the
    lines that differ (a character diff of the whole region costs far more)."""
    total = 0
    matcher = SequenceMatcher(None, list(current), list(target), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a, b = "\n".join(current[i1:i2]), "\n".join(target[j1:j2])
        blocks = SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        total += len(a) + len(b) - 2 * sum(block.size for block in blocks) + 1
    return total


class NextEditService:
    def __init__(
        self,
        workspace: Workspace,
        backends: BackendHolder,
        stats: Stats,
        related: Callable[[Document, int, int], str],
    ) -> None:
        self.workspace = workspace
        self.backends = backends
        self.stats = stats
        self.related = related
        self.encoding = PositionEncoding.UTF16
        self.history = EditHistory()
        self.problems: dict[str, list[dict[str, Any]]] = {}
        """The editor's diagnostics per document, as LSP Diagnostic objects."""
        self.focused: str | None = None
        """The document the editor last asked about at a position: the one the user works
        in. Edits elsewhere (a settings file the editor rewrote) are predicted only when
        asked for."""
        self._unfocused_edits: dict[str, tuple[int, int]] = {}
        """Documents edited while another had the focus, with where their last edit ended:
        predicted once the editor asks about them."""
        self._predictions: dict[str, Prediction] = {}
        self._asked: dict[str, _Asked] = {}
        self._ids = itertools.count(1)

    @property
    def enabled(self) -> bool:
        """On for hosted models; the embedded one is too small to predict edits well."""
        settings = self.backends.settings
        if settings.next_edit is not None:
            return settings.next_edit
        return self.backends.name != "local"

    # Following the document.

    def changed(
        self, uri: str, first: int, old: list[str], new: list[str], cursor: tuple[int, int]
    ) -> None:
        """Rows `first`.. of `uri` read `old` and now `new`; the cursor is where the change ends."""
        if self.workspace.excluded(uri):
            return
        self.history.record(uri, first, old, new)
        self.stats.next_edit.history_rows = self.history.rows()
        self._cancel(uri)
        prediction = self._predictions.get(uri)
        if prediction is not None and self._follow(prediction, first, old, new):
            return
        fulfilled = prediction is not None and prediction.distance == 0
        self._predictions.pop(uri, None)
        if not self.enabled:
            return
        if uri != self.focused:
            self._unfocused_edits[uri] = cursor
            return
        delay = 0.0 if fulfilled else self.backends.settings.next_edit_debounce_ms / 1000
        self._ask(uri, cursor, delay)

    def focus(self, uri: str) -> None:
        """The editor asked about `uri` at a position: it is the document the user works in.
        An edit it had before that is predicted now."""
        self.focused = uri
        cursor = self._unfocused_edits.pop(uri, None)
        asked = self._asked.get(uri)
        in_flight = asked is not None and not asked.task.done()
        if cursor is not None and not in_flight and uri not in self._predictions:
            self._ask(uri, cursor, self.backends.settings.next_edit_debounce_ms / 1000)

    def _follow(self, prediction: Prediction, first: int, old: list[str], new: list[str]) -> bool:
        """Whether the prediction still has edits to offer after rows `first`.. changed from
        `old` to `new`. A change inside its region must bring the region closer to the
        target; a change elsewhere means the user has moved on, and what comes next is
        predicted from there."""
        if first < prediction.start or first + len(old) > prediction.end:
            return False
        prediction.end += len(new) - len(old)
        document = self.workspace.documents.get(prediction.uri)
        if document is None:
            return False
        now = distance(document.lines(prediction.start, prediction.end), prediction.target)
        if now >= prediction.distance:
            self.stats.next_edit.contradicted += 1
            return False
        prediction.distance = now
        return now > 0

    def forget(self, uri: str) -> None:
        self._cancel(uri)
        self._unfocused_edits.pop(uri, None)
        self._predictions.pop(uri, None)
        self.history.forget(uri)
        self.stats.next_edit.history_rows = self.history.rows()
        self.problems.pop(uri, None)
        self.stats.next_edit.documents_with_problems = len(self.problems)

    def set_problems(self, uri: str, diagnostics: Sequence[Any]) -> None:
        """The editor's diagnostics for `uri`, replacing those it sent before."""
        self.problems.pop(uri, None)
        self.problems[uri] = [d for d in diagnostics if isinstance(d, dict)][:PROBLEMS_KEPT]
        self._drop_problems_of_unopened()

    def add_problems(self, uri: str, diagnostics: Sequence[Any]) -> None:
        """Diagnostics a code action request carried, beside those the editor sent."""
        known = self.problems.pop(uri, [])
        self.problems[uri] = known
        known.extend(d for d in diagnostics if isinstance(d, dict) and d not in known)
        del known[: max(0, len(known) - PROBLEMS_KEPT)]
        self._drop_problems_of_unopened()

    def _drop_problems_of_unopened(self) -> None:
        """Keep the diagnostics of the `UNOPENED_WITH_PROBLEMS` documents not open that got
        them last; those of open documents stay until the document is closed."""
        unopened = [uri for uri in self.problems if self.workspace.documents.get(uri) is None]
        for uri in unopened[: max(0, len(unopened) - UNOPENED_WITH_PROBLEMS)]:
            del self.problems[uri]
        self.stats.next_edit.documents_with_problems = len(self.problems)

    # Answers.

    async def edits(self, uri: str, row: int, column: int) -> list[dict[str, Any]]:
        """Copilot's `textDocument/copilotInlineEdit` items for the cursor: a prediction
        ready or in flight for this version, else one computed now."""
        document = self.workspace.documents.get(uri)
        if document is None or self.workspace.excluded(uri) or not self.enabled:
            return []
        if uri not in self._predictions:
            asked = self._asked.get(uri)
            if asked is None or asked.version != document.version:
                self._cancel(uri)
                asked = self._ask(uri, (row, column), 0.0)
            asked.now.set()
            timeout = self.backends.settings.request_timeout_ms / 1000
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(asked.task), timeout)
            if document.version != asked.version:
                return []
        return self.items(document, row)

    def items(self, document: Document, row: int) -> list[dict[str, Any]]:
        prediction = self._predictions.get(document.uri)
        if prediction is None:
            return []
        hunks = self.hunks(document, prediction)
        hunks.sort(key=lambda hunk: (abs(hunk.start_row - row), hunk.start_row, hunk.start_column))
        return [self._item(document, prediction, hunk) for hunk in hunks]

    def hunks(self, document: Document, prediction: Prediction) -> list[Hunk]:
        current = document.lines(prediction.start, prediction.end)
        at_end = prediction.end >= document.line_count
        return hunks_between(current, prediction.target, prediction.start, at_end)

    def at_cursor(self, document: Document, row: int, column: int) -> tuple[int, str] | None:
        """A predicted edit on the cursor's line at or right of the cursor, as ghost text:
        (code points it replaces right of the cursor, the text to insert at the cursor)."""
        prediction = self._predictions.get(document.uri)
        if prediction is None:
            return None
        line = document.line(row)
        for hunk in self.hunks(document, prediction):
            on_line = hunk.start_row == hunk.end_row == row and "\n" not in hunk.text
            if on_line and hunk.start_column >= column:
                return hunk.end_column - column, line[column : hunk.start_column] + hunk.text
        return None

    def workspace_edit(self, document: Document) -> dict[str, Any] | None:
        """Every edit of the prediction for `document`, for a code action."""
        prediction = self._predictions.get(document.uri)
        if prediction is None:
            return None
        edits = [self._text_edit(document, hunk) for hunk in self.hunks(document, prediction)]
        return {"changes": {document.uri: edits}} if edits else None

    def shown(self) -> None:
        self.stats.next_edit.shown += 1

    def accepted(self, uri: str) -> None:
        self.stats.next_edit.accepted += 1

    # Computing.

    def _ask(self, uri: str, cursor: tuple[int, int], delay: float) -> _Asked:
        document = self.workspace.documents.get(uri)
        version = document.version if document is not None else -1
        now = asyncio.Event()
        task = asyncio.get_running_loop().create_task(self._predict_later(uri, cursor, delay, now))
        asked = self._asked[uri] = _Asked(version, task, now)
        return asked

    def _cancel(self, uri: str) -> None:
        asked = self._asked.pop(uri, None)
        if asked is not None and not asked.task.done():
            asked.task.cancel()
            self.stats.next_edit.cancelled += 1

    async def _predict_later(
        self, uri: str, cursor: tuple[int, int], delay: float, now: asyncio.Event
    ) -> Prediction | None:
        if delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(now.wait(), delay)
        # This task's own: a prediction waits for a slot nothing more urgent wants, and
        # gives it up when ghost text needs it (the task is then cancelled), to ask again
        # once a slot is free.
        REQUEST_PRIORITY.set(Priority.NEXT_EDIT)
        while True:
            try:
                prediction = await self._predict(uri, *cursor)
                break
            except BackendError as error:
                self.stats.next_edit.failed += 1
                log.info("next edit: %s", error)
                return None
            except asyncio.CancelledError:
                if not self._gave_way():
                    raise
        if prediction is not None:
            self._predictions[uri] = prediction
        return prediction

    def _gave_way(self) -> bool:
        """Whether this task was cancelled only to free its request slot for ghost text
        (then the cancellation is taken back: the prediction is still wanted)."""
        task = asyncio.current_task()
        if task is None or task.cancelling() != 1 or not self.backends.gave_way(task):
            return False
        task.uncancel()
        return True

    async def _predict(self, uri: str, row: int, column: int) -> Prediction | None:
        document = self.workspace.documents.get(uri)
        backend = self.backends.ready()
        if document is None or backend is None:
            return None
        started = time.perf_counter()
        settings = self.backends.settings
        version = document.version
        # A tree that would need a costly reparse is not waited for: the region is then a
        # window of rows around the cursor.
        syntax = self.workspace.cheap_tree(uri)
        region = editable_region(document, syntax, row, column, settings.next_edit_region_lines)
        lines = document.lines(region.start, region.end)
        messages = self._messages(document, region.start, region.end, lines, (row, column))
        answer, tokens = await self._ask_model(backend, messages, settings.next_edit_max_tokens)
        self.stats.next_edit.predictions += 1
        self.stats.next_edit.output_tokens += tokens
        if document.version != version or contains_placeholder(answer):
            return None
        edits = parse_answer(answer, region.start, lines, _rows_of_code_after(document, region.end))
        target = rewritten(lines, region.start, edits)
        at_end = region.end >= document.line_count
        kept = [
            hunk
            for hunk in hunks_between(lines, target, region.start, at_end)
            if not self._rejected(document, hunk)
        ]
        if not kept:
            return None
        target = _with_hunks(lines, region.start, kept)
        self.stats.next_edit.with_edits += 1
        self.stats.next_edit.latencies_ms.append((time.perf_counter() - started) * 1000)
        return Prediction(
            next(self._ids), uri, region.start, region.end, target, distance(lines, target)
        )

    def _rejected(self, document: Document, hunk: Hunk) -> bool:
        if undoes(hunk, document, self.history.latest(document.uri)):
            return True
        return breaks_syntax(self.workspace.tree(document.uri), document, hunk)

    def _messages(
        self, document: Document, start: int, end: int, lines: list[str], cursor: tuple[int, int]
    ) -> list[dict[str, str]]:
        names = {
            doc.uri: filename_of(doc.uri)
            for doc in self.workspace.documents
            if not self.workspace.excluded(doc.uri)
        }
        messages = next_edit_messages(
            filename=filename_of(document.uri),
            language=document.language_id,
            diffs=self.history.diffs(names),
            related=self.related(document, *cursor),
            diagnostics=self._problems_near(document.uri, start, end),
            region_text=numbered(lines, start, cursor),
            first_line=start + 1,
            last_line=end,
            line_count=document.line_count,
        )
        if not self.backends.settings.redact_secrets:
            return messages
        redacted = []
        for message in messages:
            cleaned = redact(message["content"])
            self.stats.redactions.add(cleaned.counts)
            redacted.append({**message, "content": cleaned.text})
        return redacted

    def _problems_near(self, uri: str, start: int, end: int) -> list[str]:
        shown = []
        for problem in self.problems.get(uri, []):
            line = ((problem.get("range") or {}).get("start") or {}).get("line")
            if (
                not isinstance(line, int)
                or not start - NEARBY_PROBLEM_ROWS <= line < end + NEARBY_PROBLEM_ROWS
            ):
                continue
            origin = str(problem.get("source") or "").strip()
            message = str(problem.get("message") or "").strip().replace("\n", " ")
            shown.append(f"line {line + 1}: {message}" + (f" ({origin})" if origin else ""))
        return shown[:PROBLEMS_SHOWN]

    async def _ask_model(
        self, backend: Backend, messages: list[dict[str, str]], max_tokens: int
    ) -> tuple[str, int]:
        """The whole answer; cancelling the task closes the stream."""
        usage = ChatUsage()
        received: list[str] = []
        chat = backend.chat(
            messages, max_tokens=max_tokens, model=self.backends.settings.actions_model, usage=usage
        )
        async with contextlib.aclosing(chat) as deltas:
            async for delta in deltas:
                received.append(delta)
        return "".join(received), usage.completion_tokens or len(received)

    # Rendering.

    def _position(self, document: Document, row: int, column: int) -> dict[str, int]:
        offset = document.offset_at(row, column, PositionEncoding.UTF32)
        line, character = document.position_at(offset, self.encoding)
        return {"line": line, "character": character}

    def _text_edit(self, document: Document, hunk: Hunk) -> dict[str, Any]:
        return {
            "range": {
                "start": self._position(document, hunk.start_row, hunk.start_column),
                "end": self._position(document, hunk.end_row, hunk.end_column),
            },
            "newText": hunk.text.replace("\n", line_ending(document.text)),
        }

    def _item(self, document: Document, prediction: Prediction, hunk: Hunk) -> dict[str, Any]:
        edit = self._text_edit(document, hunk)
        return {
            "text": edit["newText"],
            "range": edit["range"],
            "textDocument": {"uri": document.uri, "version": document.version},
            "command": {
                "title": "Accept next edit",
                "command": ACCEPT_COMMAND,
                "arguments": [document.uri, prediction.id],
            },
        }


def _rows_of_code_after(document: Document, row: int) -> int:
    """Rows from `row` to the file's last non-blank one."""
    last = document.line_count
    while last > row and not document.line(last - 1).strip():
        last -= 1
    return last - row


def _with_hunks(lines: Sequence[str], start_row: int, hunks: Sequence[Hunk]) -> list[str]:
    """`lines` (rows `start_row`..) with `hunks` applied (in order; equal starts keep it)."""
    text = "".join(line + "\n" for line in lines)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    ordered = sorted(
        enumerate(hunks), key=lambda item: (item[1].start_row, item[1].start_column, item[0])
    )
    for _, hunk in reversed(ordered):
        begin = starts[hunk.start_row - start_row] + hunk.start_column
        finish = starts[hunk.end_row - start_row] + hunk.end_column
        text = text[:begin] + hunk.text + text[finish:]
    return text.removesuffix("\n").split("\n")
