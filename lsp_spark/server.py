"""LSP handlers: translate messages into calls on the pipeline and back, nothing more."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import logging
import re
from collections.abc import Callable, Coroutine, Generator
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from cattrs import transform_error
from cattrs.errors import BaseValidationError
from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pygls.uris import to_fs_path

from lsp_spark import __version__, settings
from lsp_spark.actions import (
    APPLY_COMMAND,
    EDIT_COMMAND,
    QUICKFIX,
    REWRITE,
    TESTS_KIND,
    ActionRequest,
    ActionService,
    ClientSupport,
    Outcome,
    Reporter,
    SecurityReview,
    Silent,
    WorkDone,
)
from lsp_spark.backends.holder import BackendHolder
from lsp_spark.documents import Change, Document, PositionEncoding
from lsp_spark.hotpath import HotPath, JsonAnswer
from lsp_spark.nextedit.engine import ACCEPT_COMMAND as ACCEPT_NEXT_EDIT
from lsp_spark.nextedit.engine import NextEditService
from lsp_spark.pipeline import CompletionEngine, Suggestion
from lsp_spark.privacy import rule_set
from lsp_spark.stats import STATS_METHOD, Stats
from lsp_spark.workspace import Workspace

log = logging.getLogger(__name__)

STATS_COMMAND = "lspSpark.stats"
ACCEPTED_COMMAND = "lspSpark.accepted"
DID_SHOW = "textDocument/didShowCompletion"
DID_PARTIALLY_ACCEPT = "textDocument/didPartiallyAcceptCompletion"
NEXT_EDIT_METHOD = "textDocument/copilotInlineEdit"
DID_SHOW_NEXT_EDIT = "textDocument/didShowInlineEdit"
DIAGNOSTICS_METHOD = "lspSpark/diagnostics"
LABEL_LENGTH = 60
NO_GHOST_TEXT: dict[str, Any] = {"items": []}
NO_COMPLETIONS: dict[str, Any] = {"isIncomplete": False, "items": []}


async def settled(answer: JsonAnswer) -> dict[str, Any]:
    return answer if isinstance(answer, dict) else await answer


class Cursor(NamedTuple):
    document: Document
    row: int
    column: int
    """Code points into the row."""
    start: dict[str, int]
    """The cursor as an LSP position in the negotiated encoding, clamped to the document."""


SETTLED = object()
"""A message dealt with while being read: answered with an error, or dropped."""
MAX_PARAMS_DEPTH = 128
"""How deeply a message's params may nest. LSP's own structures nest a dozen levels; far
deeper free-form values (a diagnostic's `data`, say) exhaust the recursion limit when the
params are read or echoed in the reply, and then the request would get no answer."""
SNAKE_CASE_STEP = re.compile(r"_([a-z])")
WORK_DONE_TOKEN: contextvars.ContextVar[types.ProgressToken | None] = contextvars.ContextVar(
    "work_done_token", default=None
)
"""The progress token of the executeCommand request being handled (commands get only
their arguments)."""


def _nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels in `value`: walked level by
    level rather than recursively, so any depth the JSON parser accepts can be measured."""
    level = [value] if type(value) is dict or type(value) is list else []
    for _ in range(limit):
        if not level:
            return False
        level = [
            child
            for container in level
            for child in (container.values() if type(container) is dict else container)
            if type(child) is dict or type(child) is list
        ]
    return bool(level)


def _validation_problem(failure: BaseValidationError) -> str:
    """What is wrong with params, in the client's field names, on one line."""
    problems = transform_error(failure, path="$")
    return SNAKE_CASE_STEP.sub(lambda step: step.group(1).upper(), "; ".join(problems))


class SparkProtocol(LanguageServerProtocol):
    """Document sync goes to our own store; pygls' workspace copy would double the work.
    (Plain methods, not generators: pygls files every generator notification under a fresh
    id and never forgets it, a leak per keystroke.)

    The lifecycle is the spec's, for every message, whichever path serves it: before
    `initialize` only `initialize` and `exit` are taken, `initialize` only once, and after
    `shutdown` only `exit`. The keystroke shortcut (`HotPath`) serves nothing unless the
    server is `running`, so every message outside that state is read here.

    Every request gets exactly one answer: pygls drops a request whose params fail to
    deserialize, and one whose result cannot be written as JSON, without replying, which
    would leave the editor waiting forever.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancel_hooks: dict[Any, Callable[[], object]] = {}
        """Per request id, what stops the work a `$/cancelRequest` for it should stop."""
        self.running = False
        """Between the answer to `initialize` and a `shutdown` request: the only time
        anything but `exit` is served."""
        self.shutdown_requested = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        """The typed message, or SETTLED for one the lifecycle rules out or whose params
        cannot be read. pygls' own reader (TCP) passes every nested object through here too,
        and those have no `jsonrpc` member."""
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        if method is not None:
            if not self._admitted(method, data):
                return SETTLED
            if "id" in data and "params" not in data:
                data = {**data, "params": None}
            if _nests_deeper_than(data.get("params"), MAX_PARAMS_DEPTH):
                problem = f"params nest more than {MAX_PARAMS_DEPTH} levels deep"
                return self._refuse(data, JsonRpcInvalidParams(problem))
        try:
            return self._converter.structure(data, self._message_type(data))
        except BaseValidationError as failure:
            problem = f"invalid params: {_validation_problem(failure)}"
            return self._refuse(data, JsonRpcInvalidParams(problem))
        except Exception as failure:
            log.debug("reading %s failed", method, exc_info=failure)
            problem = f"unreadable message: {type(failure).__name__}: {failure}"
            return self._refuse(data, JsonRpcInternalError(problem))

    def _admitted(self, method: str, data: dict[str, Any]) -> bool:
        """Whether the lifecycle lets this message through; if not, it is refused here."""
        if self.running:
            if method != types.INITIALIZE or "id" not in data:
                return True
            error: JsonRpcException = JsonRpcInvalidRequest("initialize may only be sent once")
        elif method == types.EXIT:
            return True
        elif self.shutdown_requested:
            error = JsonRpcInvalidRequest("the server is shutting down: only exit is accepted")
        elif method == types.INITIALIZE:
            return True
        else:
            error = JsonRpcServerNotInitialized("the server is not initialized yet")
        self._refuse(data, error)
        return False

    def _refuse(self, data: dict[str, Any], error: JsonRpcException) -> object:
        """Answer a request with `error`, fail the wait for a response that cannot be read,
        drop a notification: one line in the log each, a traceback never."""
        method = data.get("method")
        if "id" not in data:
            log.warning("ignored notification %s: %s", method, error.message)
        elif method is None:
            log.warning("unreadable response to request %r: %s", data["id"], error.message)
            self._handle_response(data["id"], None, error.to_response_error())
        else:
            log.warning("refused request %s: %s", method, error.message)
            self._send_response(data["id"], None, error.to_response_error())
        return SETTLED

    def _message_type(self, data: dict[str, Any]) -> Any:
        """The type pygls reads a message as (its `structure_message`, which logs every
        unreadable message with a traceback at ERROR level)."""
        if "id" not in data:
            return self.get_message_type(data.get("method", "")) or JsonRPCNotification
        if "error" in data:
            return types.ResponseErrorMessage
        if "method" in data:
            return self.get_message_type(data["method"]) or JsonRPCRequestMessage
        return self._result_types.pop(data["id"], None) or JsonRPCResponseMessage

    def handle_message(self, message: Any) -> None:
        if message is not SETTLED:
            super().handle_message(message)

    def _send_data(self, data: Any) -> None:
        """Strict JSON (no NaN), and for a response that cannot be written as JSON an
        InternalError for its id instead: pygls logs the failure and sends nothing."""
        writer = self.writer
        if not data or writer is None:  # no writer: after `exit`
            return
        try:
            body = json.dumps(data, default=self._serialize_message, allow_nan=False)
        except Exception as failure:
            unsendable = self._unsendable_answer(data, failure)
            if unsendable is None:
                return
            body = unsendable
        try:
            writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body.encode()))
        except BrokenPipeError:
            raise
        except Exception:
            log.exception("sending a message failed")

    def _unsendable_answer(self, data: Any, failure: Exception) -> str | None:
        """The InternalError that replaces a response JSON cannot carry; None for a
        request or notification of ours, which has no one waiting on this side."""
        if isinstance(data, dict):
            message_id, is_response = data.get("id"), "method" not in data
        else:
            message_id, is_response = getattr(data, "id", None), not hasattr(data, "method")
        if not is_response or message_id is None:
            log.error("a message could not be written as JSON", exc_info=failure)
            return None
        log.error("the answer to request %r could not be written as JSON", message_id)
        log.debug("writing the answer to request %r failed", message_id, exc_info=failure)
        message = f"the answer could not be written as JSON: {type(failure).__name__}: {failure}"
        error = {"code": JsonRpcInternalError.CODE, "message": message}
        return json.dumps({"jsonrpc": "2.0", "id": message_id, "error": error})

    def _run_generator(
        self, future: Any, *, gen: Generator[Any, Any, Any], result_future: Any
    ) -> None:
        """pygls' next step of a generator handler reads the result of the handler it
        yielded to; when that was cancelled (a handler still running at `exit`), reading it
        raises CancelledError out of a loop callback, logged as an error with a traceback.
        The request is cancelled instead."""
        if future is not None and future.cancelled():
            result_future.cancel()
            return
        super()._run_generator(future, gen=gen, result_future=result_future)

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls files the future of every asynchronous handler under its message's id (a
        fresh one for a notification, or for each step of a generator handler) but forgets
        only a request's: the rest would stay for the life of the process."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(partial(self._forget_future, msg_id))

    def _forget_future(self, msg_id: Any, future: Any) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """pygls forgets a request by its id once it is answered: when a client reuses the
        id of a request still running, the older one's answer would forget the newer one,
        and a `$/cancelRequest` for that id would then find nothing to cancel."""
        newer = self._request_futures.get(msg_id)
        super()._send_handler_result(future, msg_id=msg_id)
        if newer is not None and newer is not future:
            self._request_futures[msg_id] = newer

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """An answer to a request of ours that nobody waits for any more (the command that
        sent `workspace/applyEdit` was cancelled meanwhile) is dropped with a line at debug
        level: pygls would set the result of the cancelled future and log the failure with a
        traceback at ERROR."""
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            del self._request_futures[msg_id]
            log.debug("dropped the answer to request %r: its sender was cancelled", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        """pygls cancels a command's request but not the coroutine the command runs in."""
        super()._handle_cancel_notification(msg_id)
        if (cancel := self.cancel_hooks.pop(msg_id, None)) is not None:
            cancel()

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        """Running from here on: pygls answers `initialize` within this same call (our
        handler is synchronous), so no message can arrive in between."""
        result = yield from super().lsp_initialize(params)
        self.running = True
        return result

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """Shut down from the request's arrival: the handler awaits the backend's closing,
        and requests meanwhile must already be refused."""
        self.running, self.shutdown_requested = False, True
        return (yield from super().lsp_shutdown(*args))

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> NoReturn:
        """Exit code 0 after a shutdown request, 1 without one (pygls counts a shutdown only
        once its handler has finished, which a client that sends `exit` right after
        `shutdown` does not wait for). Nothing is sent after `exit`: requests still running
        are cancelled as the event loop closes, and their answers would go to a client that
        has left, through a stdout pygls would have closed."""
        self.writer = None
        raise SystemExit(0 if self.shutdown_requested else 1)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        WORK_DONE_TOKEN.set(params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            handler(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            handler(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            handler(params)


class SparkServer(LanguageServer):
    protocol: SparkProtocol

    def __init__(self) -> None:
        super().__init__("lsp-spark", __version__, protocol_cls=SparkProtocol)
        self.files = Workspace()
        self.stats = Stats()
        self.backends = BackendHolder(self.show)
        self.engine = CompletionEngine(self.show, self.files, self.backends, self.stats)
        self.actions = ActionService(self.files, self.backends, self.stats, self.workspace_folders)
        self.next_edits = NextEditService(
            self.files, self.backends, self.stats, self.engine.related_code
        )
        self.review = SecurityReview(self.files, self.backends, self.stats, self.publish)
        self.hot = HotPath(self)
        self.initialization_options: Any = None
        self.encoding = PositionEncoding.UTF16
        self._told_settings: set[str] = set()

    def workspace_folders(self) -> list[Path]:
        """The editor's workspace folders as they are now (pygls follows
        `workspace/didChangeWorkspaceFolders`), else the root `initialize` named (rootUri,
        or rootPath), else none. Only folders on disk: a `file:` URI."""
        folders = [folder.uri for folder in self.workspace.folders.values()]
        if not folders and self.workspace.root_uri:
            folders = [self.workspace.root_uri]
        paths = (to_fs_path(uri) for uri in folders if uri.startswith("file:"))
        return [Path(path) for path in paths if path]

    def show(self, message: str, error: bool = True) -> None:
        kind = types.MessageType.Error if error else types.MessageType.Warning
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def reporter(
        self, token: types.ProgressToken | None = None, resolving: bool = False
    ) -> Reporter:
        """Progress for an action: on the client's token, or on one we create if it can show
        it (while `resolving` a code action, only if it handles our requests meanwhile)."""
        support = self.actions.support
        create = support.progress and not (resolving and support.blocks_on_resolve)
        if token is None and not create:
            return Silent()
        return WorkDone(self.work_done_progress, token, create=create)

    def tell(self, outcome: Outcome) -> None:
        """Why an action made no edit (or the editor did not apply it), unless the user
        cancelled it themselves."""
        if outcome.message and not outcome.quiet:
            self.show(outcome.message, error=False)

    async def run_command(self, request: ActionRequest | None) -> dict[str, Any]:
        """Compute an action's edit and have the client apply it; a $/cancelRequest for the
        command cancels the work (and so the model's stream)."""
        hooks = self.protocol.cancel_hooks
        request_id = self.protocol.msg_id
        task = asyncio.current_task()
        cancel = task.cancel if request_id is not None and task is not None else None
        if cancel is not None:
            hooks[request_id] = cancel
        try:
            outcome, applied = await self.actions.run_and_apply(
                request, self.reporter(WORK_DONE_TOKEN.get()), self.apply_edit
            )
        finally:
            # A newer request under the same id (a client reusing ids) has its own hook.
            if cancel is not None and hooks.get(request_id) is cancel:
                del hooks[request_id]
        self.tell(outcome)
        return {"applied": applied, "message": outcome.message}

    async def apply_edit(self, edit: types.WorkspaceEdit) -> tuple[bool, str]:
        """Whether the client applied the edit, and why not; declining answers an error."""
        try:
            result = await self.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label="lsp-spark")
            )
        except JsonRpcException as error:
            return False, str(error)
        return result.applied, result.failure_reason or "the editor declined it"

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Out-of-band errors go to the log; the user hears about each kind once."""
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    async def apply_settings(self, client_settings: Any = None) -> None:
        """Settings the editor pushes are whole: they replace the initialization options, so
        a setting the user removes goes back to its default rather than its start value."""
        if settings.client_section(client_settings):
            self.initialization_options = None
        loaded, problems = settings.load(self.initialization_options, client_settings)
        logging.getLogger("lsp_spark").setLevel(loaded.log_level.upper())
        fresh = [problem for problem in problems if problem not in self._told_settings]
        if fresh:
            self._told_settings.update(fresh)
            self.show("lsp-spark ignored settings: " + "; ".join(fresh), error=False)
        await self.engine.configure(loaded)
        self.review.configure()

    def close_document(self, uri: str) -> None:
        self.engine.forget(uri)
        self.next_edits.forget(uri)
        self.review.closed(uri)
        self.files.close(uri)

    def client_left(self) -> None:
        """A TCP client gone without `exit` ends its session: its requests in flight stop
        (their answers, under ids the next client may reuse, must not reach it), its
        documents close, and the next client starts over with `initialize`, as a restarted
        editor does."""
        self.hot.cancel_all()
        for future in list(self.protocol._request_futures.values()):
            future.cancel()
        for uri in [document.uri for document in self.files.documents]:
            self.close_document(uri)
        self.protocol.running = self.protocol.shutdown_requested = False

    def locate(self, uri: str, line: int, character: int) -> Cursor | None:
        """Where a client position falls in an open document; None for an unknown one."""
        document = self.files.documents.get(uri)
        if document is None:
            return None
        self.next_edits.focus(uri)
        row, column, character = document.clamp(line, character, self.encoding)
        return Cursor(document, row, column, {"line": row, "character": character})

    def replaced_range(self, cursor: Cursor, chars: int, before: int = 0) -> dict[str, Any]:
        """The range over `chars` code points of the cursor's line right of it, starting
        `before` code points left of it."""
        start = cursor.start if before == 0 else self._position(cursor, -before)
        return {"start": start, "end": self._position(cursor, chars)}

    def _position(self, cursor: Cursor, chars: int) -> dict[str, int]:
        """The LSP position `chars` code points right (or left) of the cursor, on its line."""
        document = cursor.document
        offset = document.offset_at(cursor.row, cursor.column + chars, PositionEncoding.UTF32)
        line, character = document.position_at(offset, self.encoding)
        return {"line": line, "character": character}

    def change_document(self, uri: str, version: int, changes: list[Change]) -> None:
        self.engine.keystroke()
        document = self.files.documents.get(uri)
        if document is None:
            log.warning("change for a document that was never opened: %s", uri)
            return
        for change in changes:
            self._change(document, version, change)
        self.review.changed(uri)

    def _change(self, document: Document, version: int, change: Change) -> None:
        """Apply one content change; with next edits on, also tell them which rows read
        what before and after it, and where it left the cursor."""
        if not self.next_edits.enabled:
            self.files.change(document.uri, version, [change], self.encoding)
            return
        start, end, text = change
        if start is None or end is None:
            old = document.lines(0, document.line_count)
            self.files.change(document.uri, version, [change], self.encoding)
            new = document.lines(0, document.line_count)
            row = next(
                (i for i, pair in enumerate(zip(old, new, strict=False)) if pair[0] != pair[1]), 0
            )
            self.next_edits.changed(document.uri, 0, old, new, (row, 0))
            return
        offsets = sorted(document.offset_at(*point, self.encoding) for point in (start, end))
        first = document.position_at(offsets[0], PositionEncoding.UTF32)[0]
        last = document.position_at(offsets[1], PositionEncoding.UTF32)[0]
        old = document.lines(first, last + 1)
        self.files.change(document.uri, version, [change], self.encoding)
        row, column = document.position_at(offsets[0] + len(text), PositionEncoding.UTF32)
        new = document.lines(first, row + 1)
        self.next_edits.changed(document.uri, first, old, new, (row, column))

    def _answer(
        self,
        uri: str,
        line: int,
        character: int,
        empty: dict[str, Any],
        render: Callable[[Cursor, Suggestion | None], dict[str, Any]],
        upstream: Callable[[Cursor], Coroutine[Any, Any, dict[str, Any]]],
    ) -> JsonAnswer:
        """At once when memory has the answer (a hit costs no task), else a coroutine that
        asks the pipeline."""
        cursor = self.locate(uri, line, character)
        if cursor is None:
            return empty
        remembered = self.engine.recall(cursor.document, cursor.row, cursor.column)
        if remembered is not None:
            # Once the answer is out, while the user reads it: a tree kept current keystroke
            # by keystroke costs a small reparse each time, and the next row's context (or
            # the check of its suggestion) none.
            self.files.parse_soon(uri)
            return render(cursor, remembered)
        return upstream(cursor)

    def ghost_text(
        self, uri: str, line: int, character: int, *, invoked: bool = False
    ) -> JsonAnswer:
        """An `InlineCompletionList`: the suggestion, and when the user asked for ghost text
        explicitly (the cycle keys send `triggerKind` Invoked) the alternatives after it."""
        if invoked and self.engine.settings.alternatives:
            cursor = self.locate(uri, line, character)
            return NO_GHOST_TEXT if cursor is None else self._ghost_alternatives(cursor)
        return self._answer(
            uri, line, character, NO_GHOST_TEXT, self._ghost_list, self._ghost_text_upstream
        )

    async def _ghost_alternatives(self, cursor: Cursor) -> dict[str, Any]:
        """The suggestion, then the alternatives, all within one `requestTimeoutMs`."""
        document, row, column = cursor.document, cursor.row, cursor.column
        deadline = self.engine.deadline()
        first = await self.engine.suggest(document, row, column, deadline)
        shown = first if first is not None and first.text else None
        others = await self.engine.alternatives(document, row, column, shown, deadline)
        items = [
            self._ghost_item(cursor, suggestion)
            for suggestion in (shown, *others)
            if suggestion is not None
        ]
        return {"items": items} if items else NO_GHOST_TEXT

    async def _ghost_text_upstream(self, cursor: Cursor) -> dict[str, Any]:
        suggestion = await self.engine.fetch(cursor.document, cursor.row, cursor.column)
        return self._ghost_list(cursor, suggestion)

    def _ghost_list(self, cursor: Cursor, suggestion: Suggestion | None) -> dict[str, Any]:
        if suggestion is None or not suggestion.text:
            return self._next_edit_as_ghost_text(cursor)
        return {"items": [self._ghost_item(cursor, suggestion)]}

    def _next_edit_as_ghost_text(self, cursor: Cursor) -> dict[str, Any]:
        """A predicted next edit right of the cursor on its line, when nothing else is."""
        found = self.next_edits.at_cursor(cursor.document, cursor.row, cursor.column)
        if found is None:
            return NO_GHOST_TEXT
        replaced, text = found
        return {
            "items": [
                {
                    "insertText": text,
                    "range": self.replaced_range(cursor, replaced),
                    "command": {
                        "title": "Accept next edit",
                        "command": ACCEPT_NEXT_EDIT,
                        "arguments": [cursor.document.uri, 0],
                    },
                }
            ]
        }

    def _ghost_item(self, cursor: Cursor, suggestion: Suggestion) -> dict[str, Any]:
        return {
            "insertText": suggestion.text,
            "range": self.replaced_range(cursor, suggestion.replace_chars),
            "command": {
                "title": "Accept suggestion",
                "command": ACCEPTED_COMMAND,
                "arguments": [cursor.document.uri],
            },
        }

    def completion_list(self, uri: str, line: int, character: int) -> JsonAnswer:
        """A `CompletionList`, for clients without ghost text: within `completionDeadlineMs`
        no matter what, so other servers' items are never held back."""
        return self._answer(
            uri,
            line,
            character,
            NO_COMPLETIONS,
            self._completion_list,
            self._completion_list_upstream,
        )

    async def _completion_list_upstream(self, cursor: Cursor) -> dict[str, Any]:
        job = asyncio.get_running_loop().create_task(
            self.engine.fetch(cursor.document, cursor.row, cursor.column)
        )
        deadline = self.engine.settings.completion_deadline_ms / 1000
        done, _ = await asyncio.wait({job}, timeout=deadline)
        if not done or job.cancelled():
            return {"isIncomplete": True, "items": []}
        return self._completion_list(cursor, job.result())

    def _completion_list(self, cursor: Cursor, suggestion: Suggestion | None) -> dict[str, Any]:
        if suggestion is None or not suggestion.text:
            return NO_COMPLETIONS
        word = word_before(cursor.document.line(cursor.row), cursor.column)
        edit_range = self.replaced_range(cursor, suggestion.replace_chars, before=len(word))
        return {"isIncomplete": False, "items": [completion_item(suggestion, word, edit_range)]}


server = SparkServer()


def client_debounces(capabilities: types.ClientCapabilities) -> bool:
    """Whether the client declares that it debounces inline completion requests itself
    (`experimental.lspSpark.debouncesInlineCompletion`, sent by the VS Code extension)."""
    experimental = capabilities.experimental
    declared = experimental.get("lspSpark") if isinstance(experimental, dict) else None
    return isinstance(declared, dict) and declared.get("debouncesInlineCompletion") is True


@server.feature(types.INITIALIZE)
def initialize(ls: SparkServer, params: types.InitializeParams) -> None:
    ls.initialization_options = params.initialization_options
    negotiated = ls.workspace.position_encoding
    ls.encoding = PositionEncoding(getattr(negotiated, "value", negotiated) or "utf-16")
    ls.actions.encoding = ls.review.encoding = ls.next_edits.encoding = ls.encoding
    ls.actions.support = ClientSupport.of(params.capabilities, params.client_info)
    ls.engine.debounce.client_debounces = client_debounces(params.capabilities)


@server.feature(types.INITIALIZED)
async def initialized(ls: SparkServer, _: types.InitializedParams) -> None:
    await ls.apply_settings()
    # Built now (importing detect-secrets' plugins takes 0.2-0.3 s) rather than on the
    # first prompt, and frozen with the rest.
    rule_set.rule_set()
    # What exists by now (modules, grammars, the backend's client) lives as long as the
    # process: frozen, the collector never walks it again, and a full collection over it
    # does not land on whichever keystroke triggers it.
    gc.freeze()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(
    ls: SparkServer, params: types.DidChangeConfigurationParams
) -> None:
    client_settings = params.settings
    pull = get_capability(ls.client_capabilities, "workspace.configuration", False)
    if not client_settings and pull:
        answers = await ls.workspace_configuration_async(
            types.ConfigurationParams(
                items=[types.ConfigurationItem(section=settings.SETTINGS_SECTION)]
            )
        )
        client_settings = answers[0] if answers else None
    await ls.apply_settings(client_settings)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: SparkServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    ls.files.open(item.uri, item.language_id, item.version, item.text)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: SparkServer, params: types.DidChangeTextDocumentParams) -> None:
    changes: list[Change] = [
        (
            (change.range.start.line, change.range.start.character),
            (change.range.end.line, change.range.end.character),
            change.text,
        )
        if isinstance(change, types.TextDocumentContentChangePartial)
        else (None, None, change.text)
        for change in params.content_changes
    ]
    ls.change_document(params.text_document.uri, params.text_document.version, changes)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: SparkServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.review.saved(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: SparkServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.close_document(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def inline_completion(ls: SparkServer, params: types.InlineCompletionParams) -> Any:
    position = params.position
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    return await settled(
        ls.ghost_text(params.text_document.uri, position.line, position.character, invoked=invoked)
    )


def word_before(line: str, column: int) -> str:
    """The word characters (letters, digits, `_`) right before code point `column`: what
    clients filter a completion menu by, and so what an item's text must start with."""
    start = column
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    return line[start:column]


def completion_item(
    suggestion: Suggestion, word: str, edit_range: dict[str, Any]
) -> dict[str, Any]:
    """One item that replaces the `word` typed before the cursor with that word and the
    suggestion: clients filter their menu by that word (Helix, Neovim, VS Code), so the
    filter text starts with it. Plain text of kind Text, inserted as is (its later lines
    carry their own indentation): an item of kind Snippet is parsed as a snippet, losing
    backslashes and `$` signs, and re-indented line by line (Helix does both)."""
    first_line = suggestion.text.split("\n", 1)[0]
    if first_line.strip():
        shown = (word + first_line).strip()  # the cursor's line as accepting leaves it
    else:
        shown = suggestion.text.strip().split("\n", 1)[0]  # it starts on the next line
    label = shown if len(shown) <= LABEL_LENGTH else shown[: LABEL_LENGTH - 1] + "…"
    return {
        "label": label,
        "kind": types.CompletionItemKind.Text.value,
        "detail": f"lsp-spark ({suggestion.backend})",
        "documentation": {
            "kind": types.MarkupKind.Markdown.value,
            "value": f"```\n{suggestion.text}\n```",
        },
        "textEdit": {"range": edit_range, "newText": word + suggestion.text},
        "insertTextFormat": types.InsertTextFormat.PlainText.value,
        "insertTextMode": types.InsertTextMode.AsIs.value,
        "filterText": shown if shown.startswith(word) else word,
        "sortText": "~lsp-spark",
    }


@server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(resolve_provider=False))
async def completion(ls: SparkServer, params: types.CompletionParams) -> Any:
    position = params.position
    uri = params.text_document.uri
    return await settled(ls.completion_list(uri, position.line, position.character))


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[QUICKFIX, REWRITE, TESTS_KIND], resolve_provider=True
    ),
)
def code_action(
    ls: SparkServer, params: types.CodeActionParams
) -> list[types.CodeAction | types.Command]:
    """Instant: what is offered is computed from the syntax tree; the model runs on resolve.
    Asked automatically (as the cursor moves), only fixes are offered, so the editor's light
    bulb means there is something to fix."""
    context = params.context
    automatic = context.trigger_kind == types.CodeActionTriggerKind.Automatic
    only = context.only or ([QUICKFIX] if automatic else None)
    uri = params.text_document.uri
    ls.next_edits.focus(uri)
    if context.diagnostics:
        found = [ls.protocol._converter.unstructure(d) for d in context.diagnostics]
        ls.next_edits.add_problems(uri, found)
    offers = ls.actions.offers(uri, params.range, context.diagnostics, only)
    document = ls.files.documents.get(uri)
    edit = ls.next_edits.workspace_edit(document) if document is not None else None
    if edit is None or (only and not any(QUICKFIX.startswith(kind) for kind in only)):
        return offers
    apply_next = types.CodeAction(
        title="Apply next edit",
        kind=QUICKFIX,
        is_preferred=True,
        edit=ls.protocol._converter.structure(edit, types.WorkspaceEdit),
    )
    return [apply_next, *offers]


@server.feature(types.CODE_ACTION_RESOLVE)
async def resolve_code_action(ls: SparkServer, action: types.CodeAction) -> types.CodeAction:
    request = ActionRequest.from_data(action.data)
    if request is None:
        return action
    outcome = await ls.actions.run(request, ls.reporter(resolving=True))
    ls.tell(outcome)
    action.edit = outcome.edit
    return action


@server.command(APPLY_COMMAND)
async def apply_action(ls: SparkServer, *arguments: Any) -> dict[str, Any]:
    """A code action for clients that do not resolve: its data comes back as the argument."""
    return await ls.run_command(ActionRequest.from_data(arguments[0] if arguments else None))


@server.command(EDIT_COMMAND)
async def edit_with_instruction(ls: SparkServer, *arguments: Any) -> dict[str, Any]:
    """`{uri, range, instruction}`: rewrite the selection (or the scope at an empty range)."""
    return await ls.run_command(ActionRequest.from_instruction(arguments[0] if arguments else None))


@server.feature(STATS_METHOD)
def stats_request(ls: SparkServer, _: Any = None) -> dict[str, Any]:
    """The engine's counters, and what a long session could leak (for the soak run)."""
    stats = ls.stats.snapshot(ls.backends.name, ls.backends.model)
    open_connections, busy_connections = ls.backends.connections
    stats["openTasks"] = len(asyncio.all_tasks())
    stats["pendingRequests"] = len(ls.protocol._request_futures) + ls.hot.pending
    stats["openConnections"] = open_connections
    stats["activeConnections"] = busy_connections
    stats["backendPrepared"] = ls.backends.prepared.is_set()
    stats["requestBudget"] = ls.backends.budget
    return stats


@server.command(STATS_COMMAND)
def stats_command(ls: SparkServer, *_: Any) -> dict[str, Any]:
    return stats_request(ls)


@server.command(ACCEPTED_COMMAND)
def accepted_command(ls: SparkServer, uri: Any = None, *_: Any) -> None:
    ls.engine.accepted(str(uri))


def _uri_of_item(params: Any) -> str | None:
    """Copilot-style notifications carry the item; our accept command names the document."""
    command = getattr(getattr(params, "item", None), "command", None)
    arguments = getattr(command, "arguments", None) or []
    return str(arguments[0]) if arguments else None


@server.feature(DID_SHOW)
def did_show(ls: SparkServer, params: Any) -> None:
    if (uri := _uri_of_item(params)) is not None:
        ls.engine.shown(uri)


@server.feature(DID_PARTIALLY_ACCEPT)
def did_partially_accept(ls: SparkServer, params: Any) -> None:
    if (uri := _uri_of_item(params)) is not None:
        ls.engine.accepted(uri, partially=True)


@server.feature(NEXT_EDIT_METHOD)
async def next_edit(ls: SparkServer, params: Any) -> dict[str, Any]:
    """Copilot's `textDocument/copilotInlineEdit`: the predicted edits near the cursor."""
    uri = getattr(getattr(params, "textDocument", None), "uri", None)
    position = getattr(params, "position", None)
    line, character = getattr(position, "line", None), getattr(position, "character", None)
    if not isinstance(uri, str) or not isinstance(line, int) or not isinstance(character, int):
        raise JsonRpcInvalidParams("copilotInlineEdit needs textDocument.uri and a position")
    cursor = ls.locate(uri, line, character)
    if cursor is None:
        return {"edits": []}
    return {"edits": await ls.next_edits.edits(uri, cursor.row, cursor.column)}


@server.feature(DID_SHOW_NEXT_EDIT)
def did_show_next_edit(ls: SparkServer, _: Any) -> None:
    ls.next_edits.shown()


@server.command(ACCEPT_NEXT_EDIT)
def accept_next_edit(ls: SparkServer, uri: Any = None, *_: Any) -> None:
    ls.next_edits.accepted(str(uri))


@server.feature(DIAGNOSTICS_METHOD)
def editor_diagnostics(ls: SparkServer, params: Any) -> None:
    """The editor's diagnostics for a document (from its other servers), for predictions."""
    uri = getattr(params, "uri", None)
    found = getattr(params, "diagnostics", None)
    if isinstance(uri, str) and isinstance(found, list):
        ls.next_edits.set_problems(uri, [_plain(item) for item in found])


def _plain(value: Any) -> Any:
    """A message's params object (pygls gives unknown methods' params as named tuples) as
    plain dicts and lists."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


@server.feature(types.SHUTDOWN)
async def shutdown(ls: SparkServer, _: Any) -> None:
    await ls.review.aclose()
    await ls.engine.aclose()
