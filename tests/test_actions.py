"""Code actions end to end: the real server process, the loopback Cerebras, scripted replies.

Each fixture under fixtures/actions/<case> holds a file before, the model's scripted reply, the
file the edit must produce, and case.json: the action, where it is asked for, and how many
TextEdits (hunks) the edit may have.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lsp_spark.stats import STATS_METHOD
from lsp_spark.testing.cerebras_server import CerebrasTestServer, Fault, tokenize
from lsp_spark.testing.edits import apply_edits, edited_spans, text_edits
from tests.conftest import (
    QUIET,
    SEEN,
    SERVER_COMMAND,
    SERVER_ENV,
    TEST_KEY,
    Hold,
    StartSpark,
    cerebras_options,
    eventually,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "actions"
APPLY_COMMAND = "lspSpark.applyAction"
EDIT_COMMAND = "lspSpark.editWithInstruction"
WAIT = SEEN
REQUEST_IDS = itertools.count()

StartEditor = Callable[..., Awaitable[LanguageClient]]
Session = tuple[LanguageClient, CerebrasTestServer]


@dataclass(frozen=True)
class Case:
    name: str
    spec: dict[str, Any]
    before: str
    after: str
    reply: str
    suffix: str

    @property
    def range(self) -> types.Range:
        if "range" in self.spec:
            (a, b), (c, d) = self.spec["range"]
            return types.Range(types.Position(a, b), types.Position(c, d))
        line, character = self.spec["cursor"]
        return types.Range(types.Position(line, character), types.Position(line, character))


def load_case(folder: Path) -> Case:
    spec = json.loads((folder / "case.json").read_text())
    before = next(folder.glob("before.*"))
    eol = spec.get("line_ending", "\n")
    return Case(
        folder.name,
        spec,
        before.read_text().replace("\n", eol),
        next(folder.glob("after.*")).read_text().replace("\n", eol),
        (folder / "reply.txt").read_text(),
        before.suffix,
    )


CASES = [load_case(folder) for folder in sorted(FIXTURES.iterdir()) if folder.is_dir()]


def apply_edit(text: str, edit: types.WorkspaceEdit, uri: str, encoding: str = "utf-16") -> str:
    return apply_edits(text, edited_spans(text, text_edits(edit, uri), encoding))


async def launch(
    options: dict[str, Any],
    client: str = "visual-studio-code",
    root: Path | None = None,
    encodings: list[str] | None = None,
    answer: Callable[[], types.ApplyWorkspaceEditResult] | None = None,
    folders: list[Path] | None = None,
) -> LanguageClient:
    """A real server process for a client with the given capabilities, which records the
    edits the server asks it to apply (and says it applied them, unless `answer` says)."""
    config = ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV)
    editor = await config.start()
    assert isinstance(editor, LanguageClient)
    editor.applied = []  # type: ignore[attr-defined]

    @editor.feature(types.WORKSPACE_APPLY_EDIT)
    def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        editor.applied.append(params)  # type: ignore[attr-defined]
        return answer() if answer else types.ApplyWorkspaceEditResult(applied=True)

    capabilities = client_capabilities(client)
    if encodings is not None:
        capabilities.general = types.GeneralClientCapabilities(position_encodings=encodings)
    await editor.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            initialization_options=options,
            root_uri=root.as_uri() if root else None,
            workspace_folders=[types.WorkspaceFolder(f.as_uri(), f.name) for f in folders]
            if folders is not None
            else None,
        )
    )
    return editor


async def close(editor: LanguageClient) -> None:
    if editor._server is not None and editor._server.returncode is None:
        await editor.shutdown_session()
    await editor.stop()


@pytest_asyncio.fixture
async def start_editor() -> AsyncIterator[StartEditor]:
    """Server processes of the test's own, each shut down afterwards."""
    started: list[LanguageClient] = []

    async def start(options: dict[str, Any], **settings: Any) -> LanguageClient:
        started.append(await launch(options, **settings))
        return started[-1]

    yield start
    for editor in started:
        await close(editor)


@pytest.fixture(scope="module")
def shared_cerebras() -> Iterator[CerebrasTestServer]:
    with CerebrasTestServer(api_key=TEST_KEY, models=["gpt-oss-120b"]) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_editor(shared_cerebras: CerebrasTestServer) -> AsyncIterator[LanguageClient]:
    """One editor session for the tests that need no fresh server, as an editor works
    through one file after another; a process start per test would double their time."""
    editor = await launch(cerebras_options(shared_cerebras))
    yield editor
    await close(editor)


@pytest_asyncio.fixture(loop_scope="module")
async def session(shared_editor: LanguageClient, shared_cerebras: CerebrasTestServer) -> Session:
    """The shared session, with the loopback's scripts and records and what the editor saw
    (messages, progress, applied edits) cleared, once the last test's progress has ended."""
    await wait_until(lambda: progress_over(shared_editor))
    shared_cerebras.reset()
    shared_editor.applied.clear()  # type: ignore[attr-defined]
    shared_editor.messages.clear()
    shared_editor.progress_reports.clear()
    return shared_editor, shared_cerebras


def open_file(client: LanguageClient, uri: str, language: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language, 1, text))
    )


async def code_actions(
    client: LanguageClient,
    uri: str,
    at: types.Range,
    diagnostics: list[types.Diagnostic] | None = None,
    only: list[str] | None = None,
    trigger: types.CodeActionTriggerKind | None = None,
) -> list[types.CodeAction]:
    """The code actions offered, read from the JSON as sent: pygls' client would read a
    CodeAction that carries a command as a Command."""
    request_id = f"actions-{next(REQUEST_IDS)}"
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=at,
        context=types.CodeActionContext(
            diagnostics=diagnostics or [], only=only, trigger_kind=trigger
        ),
    )
    pending = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.TEXT_DOCUMENT_CODE_ACTION, params, msg_id=request_id
        )
    )
    await asyncio.sleep(0)  # the request is sent now; its answer cannot be in yet
    client.protocol._result_types.pop(request_id)
    found = await pending or []
    converter = client.protocol._converter
    return [converter.structure(item, types.CodeAction) for item in found]


def cursor(line: int, character: int) -> types.Range:
    return types.Range(types.Position(line, character), types.Position(line, character))


def pick(actions: list[types.CodeAction], action: str) -> types.CodeAction:
    [chosen] = [a for a in actions if isinstance(a.data, dict) and a.data["action"] == action]
    return chosen


def diagnostic_of(spec: dict[str, Any]) -> types.Diagnostic:
    (a, b), (c, d) = spec["range"]
    return types.Diagnostic(
        range=types.Range(types.Position(a, b), types.Position(c, d)),
        message=spec["message"],
        source=spec["source"],
        code=spec["code"],
        severity=types.DiagnosticSeverity.Error,
    )


COUNTS = ("requested", "edited", "applied", "refused", "cancelled", "superseded")


async def action_counts(client: LanguageClient) -> dict[str, int]:
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    return {name: getattr(stats.actions, name) for name in COUNTS}


def counted(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The action counters that moved, and by how much."""
    return {name: after[name] - before[name] for name in COUNTS if after[name] != before[name]}


def progress_over(client: LanguageClient) -> bool:
    """Whether every progress the client made a token for has ended. An action's progress
    begins once the client has made the token, so a quick action's may end after its answer."""
    return all(
        reports and isinstance(reports[-1], types.WorkDoneProgressEnd)
        for reports in client.progress_reports.values()
    )


async def wait_until(condition: Callable[[], object], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_each_action_edits_the_fixture_into_the_expected_file(
    session: Session, case: Case
) -> None:
    """Listing asks the model nothing; the edit is a few hunks, not the whole scope; line
    endings stay as they were; the request carries the scope as its prediction."""
    client, cerebras = session
    cerebras.config.queue_replies(case.reply)
    uri = f"file:///work/{case.name}{case.suffix}"
    open_file(client, uri, case.spec["language"], case.before)
    if case.spec["action"] == "instruction":
        argument = {
            "uri": uri,
            "range": client.protocol._converter.unstructure(case.range),
            "instruction": case.spec["instruction"],
        }
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=EDIT_COMMAND, arguments=[argument])
        )
        assert result == {"applied": True, "message": ""}
        [applied] = client.applied  # type: ignore[attr-defined]
        edit = applied.edit
    else:
        diagnostics = [diagnostic_of(case.spec["diagnostic"])] if "diagnostic" in case.spec else []
        actions = await code_actions(client, uri, case.range, diagnostics)
        assert cerebras.completion_requests == [], "listing actions must not ask the model"
        chosen = pick(actions, case.spec["action"])
        assert chosen.edit is None and chosen.command is None
        resolved = await client.code_action_resolve_async(chosen)
        assert resolved.edit is not None, [m.message for m in client.messages]
        edit = resolved.edit
    assert apply_edit(case.before, edit, uri) == case.after
    hunks = text_edits(edit, uri)
    assert len(hunks) == case.spec["edits"]
    replaced = sum(hunk.range.end.line - hunk.range.start.line for hunk in hunks)
    assert replaced == case.spec["replaced_lines"]
    assert replaced < case.spec["scope_lines"] or case.spec["scope_lines"] == 1
    eol = case.spec.get("line_ending", "\n")
    assert all(hunk.new_text.count("\n") == hunk.new_text.count(eol) for hunk in hunks)
    [request] = cerebras.completion_requests
    assert request.body["model"] == "gpt-oss-120b"
    if "diagnostic" in case.spec:
        prompt = request.body["messages"][-1]["content"]
        assert case.spec["diagnostic"]["message"] in prompt
        assert case.spec["diagnostic"]["source"] in prompt
    prediction = request.body["prediction"]
    assert prediction["type"] == "content"
    scope_start = case.range.start.line
    assert (
        case.before.replace("\r\n", "\n").split("\n")[scope_start].strip() in prediction["content"]
    )


PYTHON = """import json


def load(path):
    with open(path) as handle:
        return json.load(handle)


def save(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle)
"""
LOAD_WITH_ERRORS = """```python
def load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except OSError:
        return None
```"""


@pytest.mark.asyncio(loop_scope="module")
async def test_listing_asks_the_model_nothing_and_offers_every_action_for_the_function(
    session: Session, tmp_path: Path
) -> None:
    client, cerebras = session
    uri = (tmp_path / "store.py").as_uri()
    open_file(client, uri, "python", PYTHON)
    actions = await code_actions(client, uri, cursor(4, 8))
    assert [action.title for action in actions] == [
        "Add error handling",
        "Add docstring/comments",
        "Add type annotations",
        "Simplify",
        "Write tests for this function",
    ]
    assert {action.kind for action in actions} == {"refactor.rewrite", "refactor.tests"}
    assert all(action.edit is None and action.data["uri"] == uri for action in actions)
    on_import = await code_actions(client, uri, cursor(0, 3))
    assert "Write tests for this function" not in [action.title for action in on_import]
    assert await code_actions(client, uri, cursor(2, 0)) == []
    assert await code_actions(client, uri, cursor(4, 8), only=["quickfix"]) == []
    automatic = types.CodeActionTriggerKind.Automatic
    assert await code_actions(client, uri, cursor(4, 8), trigger=automatic) == [], (
        "as the cursor moves, only fixes are offered"
    )
    problem = types.Diagnostic(range=cursor(4, 8), message="bad", source="mypy")
    [fix] = await code_actions(client, uri, cursor(4, 8), [problem], trigger=automatic)
    assert fix.title == "Fix: bad" and fix.kind == "quickfix"
    assert len(await code_actions(client, uri, cursor(4, 8), only=["refactor"])) == 5
    assert cerebras.completion_requests == []


async def test_clients_that_do_not_resolve_run_a_command_that_applies_the_edit(
    start_editor: StartEditor, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies(LOAD_WITH_ERRORS)
    client = await start_editor(cerebras_options(cerebras), client="emacs")
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    chosen = pick(await code_actions(client, uri, cursor(4, 8)), "error_handling")
    assert chosen.command is not None and chosen.command.command == APPLY_COMMAND
    assert "Write tests for this function" not in [
        action.title for action in await code_actions(client, uri, cursor(4, 8))
    ], "emacs cannot create files, and there is no test file to add to"
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=chosen.command.command, arguments=chosen.command.arguments
        )
    )
    assert result == {"applied": True, "message": ""}
    [applied] = client.applied  # type: ignore[attr-defined]
    assert apply_edit(PYTHON, applied.edit, uri) == PYTHON.replace(
        "    with open(path) as handle:\n        return json.load(handle)\n",
        "    try:\n        with open(path) as handle:\n            return json.load(handle)\n"
        "    except OSError:\n        return None\n",
        1,
    )
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.actions.requested == 1
    assert stats.actions.edited == 1
    assert stats.actions.applied == 1


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    ("reply", "told"),
    [
        ("```python\ndef load(path:\n    return json.load(open(path)\n```", "does not parse"),
        ("```python\n```", "no code"),
        ("I cannot help with that.", "does not parse"),
        (
            '```python\ndef load(path, key="<redacted:token>"):\n'
            "    with open(path) as handle:\n        return json.load(handle)\n```",
            "placeholder",
        ),
    ],
    ids=["broken", "empty", "prose", "placeholder"],
)
async def test_a_rewrite_that_breaks_the_parse_or_is_empty_is_refused_with_a_message(
    session: Session, reply: str, told: str
) -> None:
    client, cerebras = session
    before = await action_counts(client)
    cerebras.config.queue_replies(reply)
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    resolved = await client.code_action_resolve_async(
        pick(await code_actions(client, uri, cursor(4, 8)), "simplify")
    )
    assert resolved.edit is None
    await wait_until(lambda: any(told in message.message for message in client.messages))
    assert counted(before, await action_counts(client)) == {"requested": 1, "refused": 1}


@pytest.mark.asyncio(loop_scope="module")
async def test_cancelling_the_resolve_closes_the_upstream_stream(session: Session) -> None:
    """The hang-up reaches the model before its next token, minutes away."""
    client, cerebras = session
    cerebras.config.tokens_per_second = 1 / QUIET  # the first token at once, the next not
    cerebras.config.queue_replies("```python\n" + "# slow\n" * 200 + "```")
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    chosen = pick(await code_actions(client, uri, cursor(4, 8)), "simplify")
    request = asyncio.ensure_future(
        client.protocol.send_request_async(types.CODE_ACTION_RESOLVE, chosen, msg_id="resolve-1")
    )
    assert await eventually(
        cerebras,
        lambda: (
            bool(cerebras.completion_requests) and cerebras.completion_requests[-1].tokens_sent >= 1
        ),
        WAIT,
    )
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="resolve-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await request
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)
    assert upstream.tokens_sent == 1, "no token after the cancel"
    assert not upstream.finished


@pytest.mark.asyncio(loop_scope="module")
async def test_cancelling_the_progress_closes_the_stream_of_a_command(session: Session) -> None:
    """Progress shows begin, reports and end; the editor's cancel button (workDoneProgress
    cancel) stops the model and the command answers that nothing was applied."""
    client, cerebras = session
    before = await action_counts(client)
    cerebras.config.tokens_per_second = 20
    cerebras.config.queue_replies("```python\n" + "# slow\n" * 200 + "```")
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    command = asyncio.ensure_future(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command=EDIT_COMMAND,
                arguments=[
                    {
                        "uri": uri,
                        "range": {
                            "start": {"line": 4, "character": 0},
                            "end": {"line": 4, "character": 0},
                        },
                        "instruction": "add logging",
                    }
                ],
            )
        )
    )
    await wait_until(lambda: any(client.progress_reports.values()))
    [(token, reports)] = client.progress_reports.items()
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].cancellable is True
    assert await eventually(
        cerebras,
        lambda: (
            bool(cerebras.completion_requests) and cerebras.completion_requests[-1].tokens_sent >= 2
        ),
        WAIT,
    )
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    assert await asyncio.wait_for(command, WAIT) == {
        "applied": False,
        "message": "lsp-spark: the edit was cancelled.",
    }
    assert await eventually(cerebras, lambda: cerebras.completion_requests[-1].client_hung_up)
    assert not cerebras.completion_requests[-1].finished
    await wait_until(lambda: isinstance(reports[-1], types.WorkDoneProgressEnd))
    assert client.applied == []  # type: ignore[attr-defined]
    assert counted(before, await action_counts(client)) == {"requested": 1, "cancelled": 1}


@pytest.mark.asyncio(loop_scope="module")
async def test_a_second_action_on_the_same_scope_supersedes_the_first(session: Session) -> None:
    client, cerebras = session
    before = await action_counts(client)
    cerebras.config.tokens_per_second = 20
    cerebras.config.queue_replies("```python\n" + "# slow\n" * 200 + "```", LOAD_WITH_ERRORS)
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    actions = await code_actions(client, uri, cursor(4, 8))
    first = asyncio.ensure_future(client.code_action_resolve_async(pick(actions, "simplify")))
    assert await eventually(
        cerebras,
        lambda: (
            bool(cerebras.completion_requests) and cerebras.completion_requests[0].tokens_sent >= 1
        ),
        WAIT,
    )
    cerebras.config.tokens_per_second = None
    second = await client.code_action_resolve_async(pick(actions, "error_handling"))
    assert second.edit is not None
    assert (await asyncio.wait_for(first, WAIT)).edit is None
    assert await eventually(cerebras, lambda: cerebras.completion_requests[0].client_hung_up)
    assert counted(before, await action_counts(client)) == {
        "requested": 2,
        "superseded": 1,
        "edited": 1,
    }
    assert not [m for m in client.messages if "cancelled" in m.message], "superseding is quiet"


async def test_the_prediction_is_sent_and_its_token_counts_reach_the_stats(
    start_editor: StartEditor, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.queue_replies(LOAD_WITH_ERRORS)
    client = await start_editor(cerebras_options(cerebras, actionsModel="qwen-3.8-27b"))
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    await client.code_action_resolve_async(
        pick(await code_actions(client, uri, cursor(4, 8)), "error_handling")
    )
    [request] = cerebras.completion_requests
    assert request.body["model"] == "qwen-3.8-27b", "actions use the actions model"
    assert request.body["prediction"] == {
        "type": "content",
        "content": "```python\ndef load(path):\n    with open(path) as handle:\n"
        "        return json.load(handle)\n```",
    }
    await wait_until(lambda: progress_over(client))
    [(_, reports)] = client.progress_reports.items()
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert "error handling" in reports[0].title
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.predictionTokens.accepted > 0
    assert stats.predictionTokens.rejected > 0
    assert stats.actions.latencyMs.p50 is not None
    assert stats.model == "gpt-oss-120b", "completions keep their own model"


async def test_progress_begins_and_ends_when_the_client_creates_its_token_after_the_answer(
    start_editor: StartEditor, cerebras: CerebrasTestServer
) -> None:
    """A client waiting for the resolve answers `window/workDoneProgress/create` only once
    it has the edit (the resolve goes on without that answer): the token it then makes is
    begun and ended rather than left open (Helix, say, spins until a token ends)."""
    cerebras.config.queue_replies(LOAD_WITH_ERRORS)
    client = await start_editor(cerebras_options(cerebras))
    resolved = asyncio.Event()

    async def create_once_resolved(params: types.WorkDoneProgressCreateParams) -> None:
        await asyncio.wait_for(resolved.wait(), WAIT)
        client.progress_reports[params.token] = []

    client.protocol.fm.features[types.WINDOW_WORK_DONE_PROGRESS_CREATE] = create_once_resolved
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    action = pick(await code_actions(client, uri, cursor(4, 8)), "error_handling")

    assert (await client.code_action_resolve_async(action)).edit is not None
    assert client.progress_reports == {}
    resolved.set()
    await wait_until(lambda: bool(client.progress_reports) and progress_over(client))
    [reports] = client.progress_reports.values()
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[1], types.WorkDoneProgressEnd)


async def test_a_model_that_refuses_predictions_is_asked_without_from_then_on(
    start_editor: StartEditor, cerebras: CerebrasTestServer
) -> None:
    cerebras.config.prediction_models = ["some-other-model"]
    cerebras.config.queue_replies(LOAD_WITH_ERRORS, LOAD_WITH_ERRORS)
    client = await start_editor(cerebras_options(cerebras))
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    for _ in range(2):
        resolved = await client.code_action_resolve_async(
            pick(await code_actions(client, uri, cursor(4, 8)), "error_handling")
        )
        assert resolved.edit is not None
    sent = cerebras.completion_requests
    assert [r.status for r in sent] == [400, 200, 200]
    assert ["prediction" in r.body for r in sent] == [True, False, False]


@pytest.mark.asyncio(loop_scope="module")
async def test_an_empty_range_edits_the_enclosing_function(session: Session) -> None:
    client, cerebras = session
    cerebras.config.queue_replies(
        "```python\ndef save(path, data):\n"
        '    with open(path, "w", encoding="utf-8") as handle:\n'
        "        json.dump(data, handle)\n```"
    )
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=EDIT_COMMAND,
            arguments=[
                {
                    "uri": uri,
                    "range": {
                        "start": {"line": 9, "character": 4},
                        "end": {"line": 9, "character": 4},
                    },
                    "instruction": "write UTF-8",
                }
            ],
        )
    )
    assert result["applied"] is True
    [applied] = client.applied  # type: ignore[attr-defined]
    assert apply_edit(PYTHON, applied.edit, uri) == PYTHON.replace('"w")', '"w", encoding="utf-8")')
    [hunk] = text_edits(applied.edit, uri)
    assert (hunk.range.start.line, hunk.range.end.line) == (9, 10)
    prompt = cerebras.completion_requests[-1].body["messages"][-1]["content"]
    assert "write UTF-8" in prompt and "def save(path, data):" in prompt


@pytest.mark.asyncio(loop_scope="module")
async def test_a_bad_command_argument_is_answered_not_applied(session: Session) -> None:
    client, cerebras = session
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=EDIT_COMMAND, arguments=[{"uri": "file:///x.py"}])
    )
    assert result["applied"] is False and "expected" in result["message"]
    assert cerebras.completion_requests == []


@pytest.mark.asyncio(loop_scope="module")
async def test_an_action_we_do_not_offer_is_refused_not_run_as_another(session: Session) -> None:
    client, cerebras = session
    uri = "file:///work/unknown_action.py"
    open_file(client, uri, "python", "def f(x):\n    return x\n")
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 12}}
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=APPLY_COMMAND, arguments=[{"action": "frobnicate", "uri": uri, "range": span}]
        )
    )
    assert result["applied"] is False and "expected" in result["message"]
    assert cerebras.completion_requests == []


@pytest.mark.asyncio(loop_scope="module")
async def test_a_file_changed_while_the_model_works_is_not_edited(
    session: Session, hold: Hold
) -> None:
    """The model's answer is held until the server has taken the change (a stats round trip
    after it: the server reads messages in order)."""
    client, cerebras = session
    held = hold(cerebras, LOAD_WITH_ERRORS)
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    pending = asyncio.ensure_future(
        client.code_action_resolve_async(
            pick(await code_actions(client, uri, cursor(4, 8)), "error_handling")
        )
    )
    assert await eventually(cerebras, lambda: bool(cerebras.completion_requests), WAIT)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(text="# gone\n" + PYTHON)
            ],
        )
    )
    await client.protocol.send_request_async("lspSpark/stats", None)
    held.release()
    assert (await asyncio.wait_for(pending, WAIT)).edit is None
    await wait_until(lambda: any("file changed" in m.message for m in client.messages))


async def test_edits_count_utf8_bytes_when_that_is_negotiated(
    start_editor: StartEditor, cerebras: CerebrasTestServer
) -> None:
    """The last line has no newline and non-ASCII text: its end is counted in bytes."""
    source = 'function greet() {\n  return "héllo 😀";\n}'
    cerebras.config.queue_replies('```js\nfunction greet() {\n  return "héllo 🌍";\n}\n```')
    client = await start_editor(cerebras_options(cerebras), encodings=["utf-8"])
    uri = "file:///work/greet.js"
    open_file(client, uri, "javascript", source)
    resolved = await client.code_action_resolve_async(
        pick(await code_actions(client, uri, cursor(1, 3)), "simplify")
    )
    assert resolved.edit is not None
    assert apply_edit(source, resolved.edit, uri, "utf-8") == source.replace("😀", "🌍")


async def test_excluded_files_are_offered_nothing(
    start_editor: StartEditor, cerebras: CerebrasTestServer
) -> None:
    client = await start_editor(cerebras_options(cerebras, exclude=["**/secret_*.py"]))
    uri = "file:///work/secret_store.py"
    open_file(client, uri, "python", PYTHON)
    assert await code_actions(client, uri, cursor(4, 8)) == []
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=EDIT_COMMAND,
            arguments=[
                {
                    "uri": uri,
                    "range": {
                        "start": {"line": 4, "character": 0},
                        "end": {"line": 4, "character": 0},
                    },
                    "instruction": "add logging",
                }
            ],
        )
    )
    assert result["applied"] is False and "excluded" in result["message"]
    assert cerebras.completion_requests == []


SHAPES = """def area(width, height):
    return width * height
"""
SHAPES_TESTS = """```python
from pkg.shapes import area


def test_area():
    assert area(2, 3) == 6
```"""


async def test_write_tests_creates_the_missing_test_file(
    start_editor: StartEditor, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    source = tmp_path / "pkg" / "shapes.py"
    source.write_text(SHAPES)
    cerebras.config.queue_replies(SHAPES_TESTS)
    client = await start_editor(cerebras_options(cerebras), root=tmp_path)
    open_file(client, source.as_uri(), "python", SHAPES)
    resolved = await client.code_action_resolve_async(
        pick(await code_actions(client, source.as_uri(), cursor(1, 4)), "tests")
    )
    assert resolved.edit is not None
    create, edit = resolved.edit.document_changes
    test_file = (tmp_path / "tests" / "test_shapes.py").as_uri()
    assert isinstance(create, types.CreateFile) and create.uri == test_file
    assert isinstance(edit, types.TextDocumentEdit) and edit.text_document.uri == test_file
    [insert] = edit.edits
    assert insert.range == cursor(0, 0)
    assert insert.new_text == (
        "from pkg.shapes import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n"
    )
    prompt = cerebras.completion_requests[-1].body["messages"][-1]["content"]
    assert "`pkg.shapes`" in prompt and "does not exist yet" in prompt
    assert "prediction" not in cerebras.completion_requests[-1].body


async def test_write_tests_appends_to_the_existing_test_file(
    start_editor: StartEditor, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    source = tmp_path / "calc.go"
    source.write_text("package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n")
    existing = 'package calc\n\nimport "testing"\n\nfunc TestZero(t *testing.T) {}\n'
    (tmp_path / "calc_test.go").write_text(existing)
    added = 'func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal("sum")\n\t}\n}\n'
    cerebras.config.queue_replies(f"```go\n{added}```")
    client = await start_editor(cerebras_options(cerebras), root=tmp_path)
    open_file(client, source.as_uri(), "go", source.read_text())
    resolved = await client.code_action_resolve_async(
        pick(await code_actions(client, source.as_uri(), cursor(3, 2)), "tests")
    )
    assert resolved.edit is not None
    test_file = (tmp_path / "calc_test.go").as_uri()
    assert apply_edit(existing, resolved.edit, test_file) == existing + "\n" + added
    assert "TestZero" in cerebras.completion_requests[-1].body["messages"][-1]["content"]


def decline() -> types.ApplyWorkspaceEditResult:
    return types.ApplyWorkspaceEditResult(applied=False, failure_reason="the user said no")


def fail() -> types.ApplyWorkspaceEditResult:
    raise RuntimeError("no way to ask the user")


@pytest.mark.parametrize(("answer", "told"), [(decline, "the user said no"), (fail, "no way")])
async def test_an_edit_the_editor_declines_is_reported_not_counted(
    start_editor: StartEditor,
    cerebras: CerebrasTestServer,
    answer: Callable[[], types.ApplyWorkspaceEditResult],
    told: str,
) -> None:
    cerebras.config.queue_replies(LOAD_WITH_ERRORS)
    client = await start_editor(cerebras_options(cerebras), client="emacs", answer=answer)
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    chosen = pick(await code_actions(client, uri, cursor(4, 8)), "error_handling")
    assert chosen.command is not None
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=chosen.command.command, arguments=chosen.command.arguments
        )
    )
    assert result["applied"] is False and told in result["message"]
    stats = await client.protocol.send_request_async("lspSpark/stats", None)
    assert stats.actions.edited == 1 and stats.actions.applied == 0


def edit_arguments(uri: str, line: int, instruction: str) -> list[Any]:
    at = {"line": line, "character": 0}
    return [{"uri": uri, "range": {"start": at, "end": at}, "instruction": instruction}]


@pytest.mark.asyncio(loop_scope="module")
async def test_cancelling_a_command_closes_the_upstream_stream(session: Session) -> None:
    client, cerebras = session
    cerebras.config.tokens_per_second = 20
    cerebras.config.queue_replies("```python\n" + "# slow\n" * 200 + "```")
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    command = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(
                command=EDIT_COMMAND, arguments=edit_arguments(uri, 4, "add logging")
            ),
            msg_id="command-1",
        )
    )
    assert await eventually(
        cerebras,
        lambda: (
            bool(cerebras.completion_requests) and cerebras.completion_requests[-1].tokens_sent >= 2
        ),
        WAIT,
    )
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="command-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await command
    assert await eventually(cerebras, lambda: cerebras.completion_requests[-1].client_hung_up)
    assert not cerebras.completion_requests[-1].finished
    assert client.applied == []  # type: ignore[attr-defined]


async def test_an_edit_answered_after_its_command_was_cancelled_is_dropped_quietly(
    start_spark: StartSpark, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    """The editor answers `workspace/applyEdit` only after the command that asked for it was
    cancelled: the answer finds nobody waiting, which is no error, and the log says nothing
    at ERROR level and shows no traceback."""
    log = tmp_path / "server.log"
    cerebras.config.queue_replies(LOAD_WITH_ERRORS)
    client = await start_spark(cerebras_options(cerebras), args=["--log-file", str(log)])
    asked, answer = asyncio.Event(), asyncio.Event()
    apply_ids: list[Any] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        apply_ids.append(client.protocol.msg_id)
        asked.set()
        await answer.wait()
        return types.ApplyWorkspaceEditResult(applied=True)

    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    command = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(
                command=EDIT_COMMAND, arguments=edit_arguments(uri, 4, "handle errors")
            ),
            msg_id="command-late",
        )
    )
    await asked.wait()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="command-late"))
    with pytest.raises(JsonRpcRequestCancelled):
        await command
    answer.set()
    [apply_id] = apply_ids
    while apply_id in client.protocol._request_futures:  # until the answer has been sent
        await asyncio.sleep(0)
    # The server reads its input in order: once this is answered, so was the late answer.
    await client.protocol.send_request_async(STATS_METHOD, None)
    written = log.read_text(errors="replace")
    assert "Traceback" not in written and " ERROR " not in written, written[-4000:]


@pytest.mark.asyncio(loop_scope="module")
async def test_the_clients_own_progress_token_carries_the_progress(session: Session) -> None:
    client, cerebras = session
    cerebras.config.queue_replies(LOAD_WITH_ERRORS)
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    client.progress_reports["editor-token"] = []
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=EDIT_COMMAND,
            arguments=edit_arguments(uri, 4, "handle errors"),
            work_done_token="editor-token",
        )
    )
    assert result["applied"] is True
    reports = client.progress_reports["editor-token"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert list(client.progress_reports) == ["editor-token"], "no token of our own was made"


@pytest.mark.asyncio(loop_scope="module")
async def test_the_stream_closes_once_the_code_block_is_complete(session: Session) -> None:
    """What a model says after its code block is not waited for, nor paid for: the reply
    stalls after a few words past the block, so only closing it at the block's end answers."""
    client, cerebras = session
    said = LOAD_WITH_ERRORS + "\n\nThis version "
    cerebras.config.queue_replies(said + "explains " * 300)
    cerebras.config.queue_faults(Fault.stall_after(len(tokenize(said))))
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    resolved = await asyncio.wait_for(
        client.code_action_resolve_async(
            pick(await code_actions(client, uri, cursor(4, 8)), "error_handling")
        ),
        SEEN,
    )
    assert resolved.edit is not None
    upstream = cerebras.completion_requests[-1]
    assert await eventually(cerebras, lambda: upstream.client_hung_up, SEEN)
    assert not upstream.finished


@pytest.mark.asyncio(loop_scope="module")
async def test_an_instruction_on_a_blank_line_between_functions_inserts_code(
    session: Session,
) -> None:
    client, cerebras = session
    cerebras.config.queue_replies(
        "```python\ndef exists(path):\n    return os.path.exists(path)\n```"
    )
    uri = "file:///work/store.py"
    open_file(client, uri, "python", PYTHON)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=EDIT_COMMAND, arguments=edit_arguments(uri, 7, "a function: does path exist")
        )
    )
    assert result["applied"] is True
    [applied] = client.applied  # type: ignore[attr-defined]
    lines = PYTHON.split("\n")
    expected = [*lines[:7], "def exists(path):", "    return os.path.exists(path)", *lines[8:]]
    assert apply_edit(PYTHON, applied.edit, uri) == "\n".join(expected)
    body = cerebras.completion_requests[-1].body
    assert "prediction" not in body
    assert "def save(path, data):" in body["messages"][-1]["content"], "the code around it"


@pytest.mark.asyncio(loop_scope="module")
async def test_rust_tests_are_appended_to_the_open_source_file(session: Session) -> None:
    client, cerebras = session
    source = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    module = (
        "#[cfg(test)]\nmod tests_add {\n    use super::*;\n\n    #[test]\n"
        "    fn adds() {\n        assert_eq!(add(1, 2), 3);\n    }\n}"
    )
    cerebras.config.queue_replies(f"```rust\n{module}\n```")
    uri = "file:///work/lib.rs"
    open_file(client, uri, "rust", source)
    resolved = await client.code_action_resolve_async(
        pick(await code_actions(client, uri, cursor(1, 4)), "tests")
    )
    assert resolved.edit is not None
    [change] = resolved.edit.document_changes or []
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.version == 1, "the open file's version guards the edit"
    assert apply_edit(source, resolved.edit, uri) == source + "\n" + module + "\n"
    assert "mod tests_add" in cerebras.completion_requests[-1].body["messages"][-1]["content"]


@pytest.mark.asyncio(loop_scope="module")
async def test_secrets_in_the_scope_are_redacted_upstream_and_kept_in_the_file(
    session: Session,
) -> None:
    client, cerebras = session
    key = "AK" + "IA" + "QWERTYUIOPASDFGH"
    source = f'def connect():\n    key = "{key}"\n    return open_session(key)\n'
    uri = "file:///work/connect.py"
    open_file(client, uri, "python", source)
    cerebras.config.queue_replies(
        '```python\ndef connect():\n    key = "<redacted:aws-access-key>"\n'
        "    return open_session(key, retries=3)\n```"
    )
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=EDIT_COMMAND, arguments=edit_arguments(uri, 2, "retry"))
    )
    assert result["applied"] is True
    body = cerebras.completion_requests[-1].body
    assert key not in json.dumps(body), "neither the messages nor the prediction carry it"
    [applied] = client.applied  # type: ignore[attr-defined]
    assert apply_edit(source, applied.edit, uri) == source.replace(
        "open_session(key)", "open_session(key, retries=3)"
    ), "the real key stays in the file"
