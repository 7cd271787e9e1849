"""Code actions end to end: offer them instantly, then ask the model, check its answer, and
turn it into the smallest edit.

Offering reads only the syntax tree. Running an action streams the model's rewrite of one
scope, keeps the old scope's indentation and line endings, diffs it against the old one so
only changed lines are sent, and refuses output that is empty or breaks the file's parse.
A second action on code that overlaps a running one supersedes it (its stream is closed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from tree_sitter import Parser

import lsp_spark.actions.catalog as catalog
from lsp_spark.actions.diffing import Replacement, apply, line_ending, region_edits
from lsp_spark.actions.progress import Reporter
from lsp_spark.actions.prompting import EditTask, Outbound, WriteTestsTask, build_messages
from lsp_spark.actions.requests import ActionRequest, ClientSupport, diagnostic_data
from lsp_spark.actions.rewrite import block_closed, extract_code, reindent, restore_redacted
from lsp_spark.actions.targets import Target, is_cursor, target_at
from lsp_spark.actions.testfiles import TEST_LANGUAGES, TestFile, test_file_for
from lsp_spark.backends import Backend, BackendError
from lsp_spark.backends.base import ChatUsage
from lsp_spark.backends.budget import Priority, requests_at
from lsp_spark.context.budget import ESTIMATED_CHARS_PER_TOKEN
from lsp_spark.context.sources import filename_of
from lsp_spark.documents import Document, PositionEncoding
from lsp_spark.privacy import disk
from lsp_spark.privacy.redaction import PLACEHOLDER
from lsp_spark.scheduler import cancel_once
from lsp_spark.stats import ActionStats
from lsp_spark.syntax.grammars import canonical, language_for
from lsp_spark.syntax.outline import error_count
from lsp_spark.workspace import Workspace

if TYPE_CHECKING:
    from lsp_spark.backends.holder import BackendHolder
    from lsp_spark.stats import Stats

log = logging.getLogger(__name__)

APPLY_COMMAND = "lspSpark.applyAction"
EDIT_COMMAND = "lspSpark.editWithInstruction"
MAX_SCOPE_LINES = 600
"""A longer scope is not sent whole: the user is asked to select the part to edit."""
AFTER_SHARE = 0.25
REWRITE_HEADROOM_TOKENS = 512
INSERTION = "insertion"
"""The kind of target that is a blank line to write new code on."""
"""Of the context budget, the part given to code below the scope; the rest goes above."""

ApplyEdit = Callable[[types.WorkspaceEdit], Awaitable[tuple[bool, str]]]


class Refused(Exception):
    """The action produced no edit; the message says why, for the user."""


@dataclass(frozen=True, slots=True)
class Outcome:
    edit: types.WorkspaceEdit | None
    message: str = ""
    """Why there is no edit; empty when there is one."""
    quiet: bool = False
    """The user cancelled or replaced the action: nothing to tell them."""


@dataclass(slots=True)
class _Job:
    target: Target
    task: asyncio.Task[Outcome]
    superseded: bool = False


class ActionService:
    def __init__(
        self,
        workspace: Workspace,
        backends: BackendHolder,
        stats: Stats,
        folders: Callable[[], Sequence[Path]],
    ) -> None:
        self.workspace = workspace
        self.backends = backends
        self._stats = stats
        self.folders = folders
        """The workspace folders as they are now: test files are found, read and edited
        only inside them."""
        self.encoding = PositionEncoding.UTF16
        self.support = ClientSupport()
        self._jobs: dict[str, list[_Job]] = {}

    @property
    def stats(self) -> ActionStats:
        return self._stats.actions

    def offers(
        self,
        uri: str,
        selection: types.Range,
        diagnostics: Sequence[types.Diagnostic],
        only: Sequence[str] | None = None,
    ) -> list[types.CodeAction | types.Command]:
        """The actions for a selection or cursor, without asking the model anything."""
        document = self.workspace.documents.get(uri)
        if document is None or self.workspace.excluded(uri):
            return []
        kinds = list(only) if only else None
        offered: list[types.CodeAction | types.Command] = []
        if catalog.wanted(catalog.QUICKFIX, kinds):
            for diagnostic in diagnostics:
                at = (diagnostic.range.start.line, diagnostic.range.start.character)
                request = ActionRequest(
                    uri, catalog.FIX.id, at, at, diagnostic=diagnostic_data(diagnostic)
                )
                title = catalog.fix_title(diagnostic.message, diagnostic.source)
                offered.append(self._offer(catalog.FIX, title, request, [diagnostic]))
        start = (selection.start.line, selection.start.character)
        end = (selection.end.line, selection.end.character)
        target = target_at(
            document,
            self.workspace.tree(uri),
            self._point(document, start),
            self._point(document, end),
        )
        if target is None:
            return offered
        language = canonical(document.language_id)
        for action in catalog.rewrites_for(language):
            if catalog.wanted(action.kind, kinds):
                request = ActionRequest(uri, action.id, start, end)
                offered.append(self._offer(action, action.title, request))
        if (
            target.is_function
            and catalog.wanted(catalog.TESTS.kind, kinds)
            and self._can_write_tests(document)
        ):
            request = ActionRequest(uri, catalog.TESTS.id, start, end)
            offered.append(self._offer(catalog.TESTS, catalog.TESTS.title, request))
        return offered

    async def run(self, request: ActionRequest, progress: Reporter) -> Outcome:
        """Compute the action's edit; a newer action on overlapping code cancels this one."""
        self.stats.requested += 1
        started = time.perf_counter()
        document = self.workspace.documents.get(request.uri)
        target = None if document is None else self._target(document, request)
        if document is None or target is None:
            self.stats.refused += 1
            return Outcome(None, "lsp-spark: there is no code to edit here.")
        if self.workspace.excluded(request.uri):
            self.stats.refused += 1
            return Outcome(None, "lsp-spark: this file is excluded, so none of it is sent.")
        self._supersede(request.uri, target)
        task = asyncio.get_running_loop().create_task(
            self._compute(document, target, request, progress)
        )
        job = _Job(target, task)
        self._jobs.setdefault(request.uri, []).append(job)
        try:
            progress.begin(self._title(request, target), lambda: cancel_once(task))
            outcome = await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if job.superseded:
                self.stats.superseded += 1
            else:
                self.stats.cancelled += 1
            if current is not None and current.cancelling():
                cancel_once(task)
                raise
            return Outcome(None, "lsp-spark: the edit was cancelled.", quiet=True)
        finally:
            cancel_once(task)
            progress.end("done")
            jobs = self._jobs.get(request.uri, [])
            if job in jobs:
                jobs.remove(job)
            if not jobs:
                self._jobs.pop(request.uri, None)
        self.stats.latencies_ms.append((time.perf_counter() - started) * 1000)
        if outcome.edit is None:
            self.stats.refused += 1
        else:
            self.stats.edited += 1
        return outcome

    async def run_and_apply(
        self, request: ActionRequest | None, progress: Reporter, apply_edit: ApplyEdit
    ) -> tuple[Outcome, bool]:
        """For clients that do not resolve: compute the edit, then have the client apply it."""
        if request is None:
            return (
                Outcome(
                    None,
                    "lsp-spark: expected one of its code actions, or {uri, range, instruction}.",
                ),
                False,
            )
        outcome = await self.run(request, progress)
        if outcome.edit is None:
            return outcome, False
        applied, reason = await apply_edit(outcome.edit)
        if applied:
            self.stats.applied += 1
            return outcome, True
        return Outcome(
            outcome.edit, f"lsp-spark: the editor did not apply the edit: {reason}"
        ), False

    def _offer(
        self,
        action: catalog.ActionKind,
        title: str,
        request: ActionRequest,
        diagnostics: list[types.Diagnostic] | None = None,
    ) -> types.CodeAction:
        data = request.data()
        offered = types.CodeAction(
            title=title, kind=action.kind, diagnostics=diagnostics, data=data
        )
        if not self.support.resolve:
            offered.command = types.Command(title=title, command=APPLY_COMMAND, arguments=[data])
        return offered

    def _target(self, document: Document, request: ActionRequest) -> Target | None:
        """What the request edits; an instruction at a cursor on a blank line outside any
        scope inserts code there."""
        start = self._point(document, request.start)
        end = self._point(document, request.end)
        found = target_at(document, self.workspace.tree(document.uri), start, end)
        if found is not None or request.action != catalog.INSTRUCTION.id:
            return found
        row = min(start, end)[0]
        blank = row < document.line_count and not document.line(row).strip()
        if blank and is_cursor(document, start, end):
            return Target(row, row + 1, INSERTION)
        return None

    def _supersede(self, uri: str, target: Target) -> None:
        for job in self._jobs.get(uri, []):
            if job.target.overlaps(target) and not job.task.done():
                job.superseded = True
                cancel_once(job.task)

    def _title(self, request: ActionRequest, target: Target) -> str:
        action = catalog.BY_ID.get(request.action, catalog.INSTRUCTION)
        where = f" {target.name}" if target.name else ""
        return f"lsp-spark: {action.title.lower()}{where}"

    async def _compute(
        self, document: Document, target: Target, request: ActionRequest, progress: Reporter
    ) -> Outcome:
        try:
            if target.end_row - target.start_row > MAX_SCOPE_LINES:
                raise Refused(
                    f"lsp-spark: this scope has over {MAX_SCOPE_LINES} lines; select the part "
                    "to edit."
                )
            backend = self.backends.current()
            with requests_at(Priority.ACTION):
                if request.action == catalog.TESTS.id:
                    return await self._write_tests(backend, document, target, progress)
                return await self._rewrite(backend, document, target, request, progress)
        except Refused as refusal:
            log.info("%s action on %s refused: %s", request.action, document.uri, refusal)
            return Outcome(None, str(refusal))
        except BackendError as failure:
            log.info("%s action on %s failed: %s", request.action, document.uri, failure)
            return Outcome(None, f"lsp-spark: {failure.args[0]}")

    async def _rewrite(
        self,
        backend: Backend,
        document: Document,
        target: Target,
        request: ActionRequest,
        progress: Reporter,
    ) -> Outcome:
        version = document.version
        old = document.lines(target.start_row, target.end_row)
        before, after = self._surroundings(document, target, backend.action_context_chars)
        task = EditTask(
            language=canonical(document.language_id),
            filename=self._filename(document.uri),
            instruction=self._instruction(document, request, target, old),
            code="\n".join(old),
            before=before,
            after=after,
        )
        # A rewrite is rarely twice the scope: a model that rambles on is cut off there.
        limit = int(2 * len(task.code) / ESTIMATED_CHARS_PER_TOKEN) + REWRITE_HEADROOM_TOKENS
        reply = await self._ask(backend, self._outbound(task), progress, limit)
        self._unchanged_since(document, version)
        code = extract_code(reply)
        if not code.strip():
            raise Refused("lsp-spark: the model returned no code, so nothing was changed.")
        new = restore_redacted(reindent(code.split("\n"), old), old)
        if any(PLACEHOLDER.search(line) for line in new):
            raise Refused(
                "lsp-spark: the model's edit would write a redaction placeholder into the "
                "file, so it was not applied."
            )
        text = document.text
        start = document.offset_at(target.start_row, 0, PositionEncoding.UTF32)
        end = document.offset_at(target.end_row, 0, PositionEncoding.UTF32)
        region = text[start:end]
        replacements = region_edits(region, new, line_ending(region, line_ending(text)))
        if not replacements:
            raise Refused("lsp-spark: the model left the code as it was.")
        self._check_parse(document.language_id, text, apply(text, replacements, start))
        self.stats.lines_changed += _lines_changed(region, replacements)
        edits = [
            types.TextEdit(
                range=types.Range(
                    self._position(document, start + replacement.start),
                    self._position(document, start + replacement.end),
                ),
                new_text=replacement.text,
            )
            for replacement in replacements
        ]
        return Outcome(self._document_edit(document.uri, version, edits))

    async def _write_tests(
        self, backend: Backend, document: Document, target: Target, progress: Reporter
    ) -> Outcome:
        found = self._test_file(document)
        if found is None:
            raise Refused("lsp-spark: there is no test file convention for this file here.")
        test_uri = from_fs_path(str(found.path)) or found.path.as_uri()
        if not found.same_file:
            self._check_test_file(document, found.path, test_uri)
        existing = document if found.same_file else self.workspace.documents.get(test_uri)
        on_disk = None if existing is not None else self._read(found.path, test_uri)
        current = existing.text if existing is not None else on_disk or ""
        version = existing.version if existing is not None else None
        task = WriteTestsTask(
            language=canonical(document.language_id),
            filename=self._filename(document.uri),
            code="\n".join(document.lines(target.start_row, target.end_row)),
            name=target.name or "this function",
            test_filename=self._filename(test_uri),
            test_file=current,
            module=found.module,
            same_file=found.same_file,
        )
        reply = await self._ask(backend, self._outbound(task), progress)
        if existing is not None:
            self._unchanged_since(existing, version)
        code = extract_code(reply)
        if not code.strip():
            raise Refused("lsp-spark: the model returned no tests, so nothing was changed.")
        if PLACEHOLDER.search(code):
            raise Refused(
                "lsp-spark: the model's tests contain a redaction placeholder, so they were "
                "not added."
            )
        eol = line_ending(current, line_ending(document.text))
        addition = _appended(current, code.split("\n"), eol)
        self._check_parse(document.language_id, current, current + addition)
        self.stats.lines_changed += addition.count(eol)
        shown = existing or Document(test_uri, document.language_id, 0, current)
        end = self._position(shown, len(current))
        insert = types.TextEdit(range=types.Range(end, end), new_text=addition)
        if existing is not None or on_disk is not None:
            return Outcome(self._document_edit(test_uri, version, [insert]))
        return Outcome(
            types.WorkspaceEdit(
                document_changes=[
                    types.CreateFile(
                        uri=test_uri, options=types.CreateFileOptions(ignore_if_exists=True)
                    ),
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=test_uri, version=None
                        ),
                        edits=[insert],
                    ),
                ]
            )
        )

    def _check_test_file(self, document: Document, path: Path, uri: str) -> None:
        """Refuse a test file (open in the editor or not) outside the workspace folders,
        reached through a symbolic link, or excluded: its text would go upstream and the
        edit would write to it. With no workspace folder, the source's own folder stands in.
        A Rust test module goes into the source document itself, which needs no check."""
        source = _path_of(document.uri)
        folders = self.folders() or ([source.parent] if source is not None else [])
        try:
            disk.check(path, folders, self.workspace.excluded)
        except disk.OffLimits as refusal:
            raise Refused(self._off_limits(uri, refusal)) from refusal

    def _read(self, path: Path, uri: str) -> str | None:
        """The test file's text from disk; None when it is still to be created."""
        try:
            return disk.read(path)
        except disk.OffLimits as refusal:
            raise Refused(self._off_limits(uri, refusal)) from refusal

    def _off_limits(self, uri: str, refusal: disk.OffLimits) -> str:
        return (
            f"lsp-spark: the test file {self._filename(uri)} is neither read nor edited: {refusal}."
        )

    def _outbound(self, task: EditTask | WriteTestsTask) -> Outbound:
        outbound = build_messages(task, redact_secrets=self.backends.settings.redact_secrets)
        self._stats.redactions.add(outbound.redactions)
        return outbound

    async def _ask(
        self, backend: Backend, outbound: Outbound, progress: Reporter, limit: int | None = None
    ) -> str:
        """The model's answer, streamed until its code block closes (what follows would be
        commentary); cancelling closes the stream, and so does stopping early."""
        settings = self.backends.settings
        usage = ChatUsage()
        received: list[str] = []
        chat = backend.chat(
            outbound.messages,
            max_tokens=min(settings.actions_max_tokens, limit or settings.actions_max_tokens),
            model=settings.actions_model,
            prediction=outbound.prediction,
            usage=usage,
        )
        try:
            async with contextlib.aclosing(chat) as deltas:
                async for delta in deltas:
                    received.append(delta)
                    progress.report(f"{sum(map(len, received))} characters")
                    if "\n" in delta and block_closed("".join(received)):
                        break
        finally:
            self.stats.accepted_prediction_tokens += usage.accepted_prediction_tokens
            self.stats.rejected_prediction_tokens += usage.rejected_prediction_tokens
        return "".join(received)

    def _instruction(
        self, document: Document, request: ActionRequest, target: Target, old: list[str]
    ) -> str:
        language = canonical(document.language_id)
        if request.action == catalog.INSTRUCTION.id and target.kind == INSERTION:
            return f"{request.instruction} (The scope is empty: write the code to put there.)"
        if request.action == catalog.INSTRUCTION.id:
            return request.instruction
        if request.action != catalog.FIX.id:
            return catalog.instruction_for(request.action, language, target.name)
        diagnostic = dict(request.diagnostic or {})
        described = str(diagnostic.get("message", "")).strip()
        origin = " ".join(str(diagnostic.get(key) or "") for key in ("source", "code")).strip()
        if origin:
            described += f" ({origin})"
        line = diagnostic.get("line")
        if isinstance(line, int) and target.start_row <= line < target.end_row:
            text = old[line - target.start_row].strip()
            described += f", at line {line - target.start_row + 1} of the scope: `{text}`"
        return catalog.instruction_for(catalog.FIX.id, language, target.name, described)

    def _surroundings(self, document: Document, target: Target, budget: int) -> tuple[str, str]:
        """Whole lines above and below the scope, nearest first, within `budget` characters."""
        if budget <= 0:
            return "", ""
        above = _lines_within(
            document.lines(0, target.start_row)[::-1], int(budget * (1 - AFTER_SHARE))
        )
        below = _lines_within(
            document.lines(target.end_row, document.line_count), int(budget * AFTER_SHARE)
        )
        return "\n".join(above[::-1]).strip("\n"), "\n".join(below).strip("\n")

    def _unchanged_since(self, document: Document, version: int | None) -> None:
        if self.workspace.documents.get(document.uri) is not document or (
            version is not None and document.version != version
        ):
            raise Refused(
                "lsp-spark: the file changed while the edit was being made; nothing was changed."
            )

    def _check_parse(self, language_id: str, old: str, new: str) -> None:
        """Refuse a rewrite that adds syntax errors (a file that parsed must still parse)."""
        language = language_for(language_id)
        if language is None:
            return
        parser = Parser(language)
        before = error_count(parser.parse(old.encode("utf-8", "surrogatepass")))
        after = error_count(parser.parse(new.encode("utf-8", "surrogatepass")))
        if after > before:
            raise Refused(
                "lsp-spark: the model's edit does not parse (it adds syntax errors), so it was "
                "not applied."
            )

    def _can_write_tests(self, document: Document) -> bool:
        if canonical(document.language_id) not in TEST_LANGUAGES:
            return False
        found = self._test_file(document)
        if found is None:
            return False
        if found.same_file or found.path.exists():
            return True
        uri = from_fs_path(str(found.path)) or ""
        return uri in self._open_uris() or (
            self.support.document_changes and self.support.create_files
        )

    def _open_uris(self) -> set[str]:
        return {document.uri for document in self.workspace.documents}

    def _test_file(self, document: Document) -> TestFile | None:
        path = _path_of(document.uri)
        if path is None:
            return None
        return test_file_for(path, canonical(document.language_id), self._root_of(path))

    def _root_of(self, path: Path) -> Path | None:
        """The workspace folder `path` is in: where its tests folder and module path start."""
        return disk.containing_folder(path, self.folders())

    def _document_edit(
        self, uri: str, version: int | None, edits: list[types.TextEdit]
    ) -> types.WorkspaceEdit:
        if self.support.document_changes:
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            return types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)]
            )
        return types.WorkspaceEdit(changes={uri: edits})

    def _filename(self, uri: str) -> str:
        path = _path_of(uri)
        root = None if path is None else self._root_of(path)
        if path is not None and root is not None:
            with contextlib.suppress(ValueError):
                return path.relative_to(root).as_posix()
        return filename_of(uri)

    def _point(self, document: Document, position: tuple[int, int]) -> tuple[int, int]:
        """(row, code point column) of an LSP position."""
        offset = document.offset_at(position[0], position[1], self.encoding)
        return document.position_at(offset, PositionEncoding.UTF32)

    def _position(self, document: Document, offset: int) -> types.Position:
        line, character = document.position_at(offset, self.encoding)
        return types.Position(line=line, character=character)


def _lines_within(lines: list[str], budget: int) -> list[str]:
    kept: list[str] = []
    used = 0
    for line in lines:
        used += len(line) + 1
        if used > budget:
            break
        kept.append(line)
    return kept


def _lines_changed(region: str, replacements: list[Replacement]) -> int:
    return sum(
        max(region[edit.start : edit.end].count("\n"), edit.text.count("\n"), 1)
        for edit in replacements
    )


def _appended(current: str, lines: list[str], eol: str) -> str:
    """The text that appends `lines` to a file, one blank line after what it has."""
    body = eol.join(lines) + eol
    if not current.strip():
        return body
    ending = current[len(current.rstrip("\r\n")) :]
    newlines = ending.count("\n") + ending.replace("\r\n", "").count("\r")
    return eol * max(2 - newlines, 0) + body


def _path_of(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None
