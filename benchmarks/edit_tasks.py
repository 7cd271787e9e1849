"""Edit tasks: does the model make the asked-for change, and is the edit small?

Run: `python benchmarks/edit_tasks.py [--backend B] [--tiny] [--output PATH]` (prints a
table, writes benchmarks/results/edit_tasks.json, or PATH). Each task is a fixture under
fixtures/actions/<case>: a file, the action asked for at a cursor or selection (case.json),
and what the result must contain. The real server is started over stdio and asked as an
editor asks: code actions, then `codeAction/resolve` (or `lspSpark.editWithInstruction`,
applied through `workspace/applyEdit`).

Two runs: `local`, the embedded SmolLM2-135M (a 135M model: expect it to fail most tasks;
the number is reported as it comes), and `scripted`, the loopback Cerebras server answering
each task with its reply.txt, which measures the edit machinery given a model that does the
task right. `--backend local` or `--backend scripted` runs one. `--tiny` runs two tasks, one
asked as a code action and one as an instruction, on the scripted backend unless another is
named: a check that both ways of asking still get their edit, in seconds.

A task succeeds when an edit comes back, the edited file has no more syntax errors than
before, and it contains every string of case.json's `expect.contains` and none of
`expect.absent`. Edit size is the lines the edit's hunks touch (per hunk, the larger of lines
removed and lines added); a whole-scope replacement would touch the larger of the scope's
old and new line counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from timing import add_size_options  # noqa: E402
from tree_sitter import Parser  # noqa: E402

from lsp_spark.actions.diffing import split_lines  # noqa: E402
from lsp_spark.actions.targets import target_at  # noqa: E402
from lsp_spark.demo import _drain  # noqa: E402
from lsp_spark.syntax.grammars import language_for  # noqa: E402
from lsp_spark.syntax.outline import error_count  # noqa: E402
from lsp_spark.testing import isolated_environment  # noqa: E402
from lsp_spark.testing.cerebras_server import CerebrasTestServer  # noqa: E402
from lsp_spark.testing.edits import apply_edits, edited_spans, text_edits  # noqa: E402
from lsp_spark.workspace import Workspace  # noqa: E402

FIXTURES = ROOT / "fixtures" / "actions"
RESULTS = ROOT / "benchmarks" / "results" / "edit_tasks.json"
EDIT_COMMAND = "lspSpark.editWithInstruction"
TASK_TIMEOUT = 180.0
"""The embedded model on two cores: a long rewrite takes tens of seconds."""
START_TIMEOUT = 30.0
KEY = "edit-tasks-key"


def load_tasks() -> list[dict[str, Any]]:
    tasks = []
    for folder in sorted(path for path in FIXTURES.iterdir() if path.is_dir()):
        spec = json.loads((folder / "case.json").read_text())
        before = next(folder.glob("before.*"))
        eol = spec.get("line_ending", "\n")
        tasks.append(
            {
                "name": folder.name,
                "spec": spec,
                "text": before.read_text().replace("\n", eol),
                "suffix": before.suffix,
                "reply": (folder / "reply.txt").read_text(),
            }
        )
    return tasks


def tiny(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first task asked as a code action and the first asked as an instruction."""
    actions = (task for task in tasks if task["spec"]["action"] != "instruction")
    instructions = (task for task in tasks if task["spec"]["action"] == "instruction")
    return [next(actions), next(instructions)]


def capabilities() -> types.ClientCapabilities:
    """An editor that resolves code actions and applies server edits (as VS Code does)."""
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(
                        value_set=["quickfix", "refactor"]
                    )
                ),
                data_support=True,
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]),
            )
        ),
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
        ),
        general=types.GeneralClientCapabilities(position_encodings=["utf-16"]),
    )


def apply(text: str, edits: list[types.TextEdit]) -> tuple[str, list[tuple[int, int]]]:
    """The edited text, and each hunk's (lines removed, lines added)."""
    spans = edited_spans(text, edits)
    sizes = [
        (len(split_lines(text[start:end])), len(split_lines(new))) for start, end, new in spans
    ]
    return apply_edits(text, spans), sizes


def parse_errors(language: str, text: str) -> int:
    grammar = language_for(language)
    if grammar is None:
        return 0
    return error_count(Parser(grammar).parse(text.encode("utf-8", "surrogatepass")))


def scope_lines(task: dict[str, Any]) -> int:
    """Lines of the scope the action works on, found as the server finds it."""
    workspace = Workspace()
    uri = "file:///edit-tasks/scope" + task["suffix"]
    document = workspace.open(uri, task["spec"]["language"], 1, task["text"])
    start, end = task_range(task)
    target = target_at(document, workspace.tree(uri), start, end)
    return 0 if target is None else target.end_row - target.start_row


def task_range(task: dict[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
    spec = task["spec"]
    if "range" in spec:
        (a, b), (c, d) = spec["range"]
        return (a, b), (c, d)
    line, character = spec["cursor"]
    return (line, character), (line, character)


def lsp_range(task: dict[str, Any]) -> types.Range:
    (a, b), (c, d) = task_range(task)
    return types.Range(types.Position(a, b), types.Position(c, d))


async def ask_edit(
    client: LanguageClient, task: dict[str, Any], uri: str, applied: list[types.WorkspaceEdit]
) -> types.WorkspaceEdit | None:
    spec = task["spec"]
    if spec["action"] == "instruction":
        argument = {
            "uri": uri,
            "range": client.protocol._converter.unstructure(lsp_range(task)),
            "instruction": spec["instruction"],
        }
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=EDIT_COMMAND, arguments=[argument])
        )
        return applied[-1] if applied else None
    diagnostics = []
    if "diagnostic" in spec:
        (a, b), (c, d) = spec["diagnostic"]["range"]
        diagnostics.append(
            types.Diagnostic(
                range=types.Range(types.Position(a, b), types.Position(c, d)),
                message=spec["diagnostic"]["message"],
                source=spec["diagnostic"]["source"],
                code=spec["diagnostic"]["code"],
            )
        )
    offered = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=lsp_range(task),
            context=types.CodeActionContext(diagnostics=diagnostics),
        )
    )
    chosen = next(
        action
        for action in offered or []
        if isinstance(action, types.CodeAction)
        and isinstance(action.data, dict)
        and action.data.get("action") == spec["action"]
    )
    resolved = await client.code_action_resolve_async(chosen)
    return resolved.edit


async def run_task(
    client: LanguageClient,
    task: dict[str, Any],
    applied: list[types.WorkspaceEdit],
    messages: list[str],
) -> dict[str, Any]:
    spec = task["spec"]
    uri = f"file:///edit-tasks/{task['name']}/before{task['suffix']}"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, spec["language"], 1, task["text"])
        )
    )
    told = len(messages)
    started = time.perf_counter()
    failure = ""
    try:
        edit = await asyncio.wait_for(ask_edit(client, task, uri, applied), TASK_TIMEOUT)
    except (TimeoutError, JsonRpcException, StopIteration) as error:
        edit, failure = None, f"{type(error).__name__}: {error}"
    latency = time.perf_counter() - started
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    hunks = text_edits(edit, uri)
    result, sizes = apply(task["text"], hunks)
    expect = spec.get("expect", {})
    parses = parse_errors(spec["language"], result) <= parse_errors(spec["language"], task["text"])
    has_change = all(text in result for text in expect.get("contains", [])) and not any(
        text in result for text in expect.get("absent", [])
    )
    old_scope = scope_lines(task)
    new_scope = old_scope + sum(added - removed for removed, added in sizes)
    edit_lines = sum(max(removed, added) for removed, added in sizes)
    return {
        "task": task["name"],
        "language": spec["language"],
        "action": spec["action"],
        "edited": edit is not None,
        "parses": parses,
        "expectedChange": has_change,
        "success": bool(hunks) and parses and has_change,
        "hunks": len(hunks),
        "editLines": edit_lines,
        "wholeScopeLines": max(old_scope, new_scope),
        "seconds": round(latency, 2),
        "failure": failure or "; ".join(messages[told:]),
    }


async def run(backend: str, tasks: list[dict[str, Any]], threads: int) -> dict[str, Any]:
    """One server process for all tasks; the embedded model loads once."""
    with tempfile.TemporaryDirectory(prefix="lsp-spark-edit-tasks-") as config_home:
        environment = isolated_environment(config_home)
        server = None
        if backend == "scripted":
            server = CerebrasTestServer(api_key=KEY, ttft=0.05, tokens_per_second=1500)
            server.config.reply_fn = scripted(tasks)
            server.start()
            options: dict[str, Any] = {"backend": "cerebras", "apiKey": KEY}
            options["baseUrl"] = server.base_url
        else:
            options = {"backend": "local", "localThreads": threads}
        try:
            return await session(backend, tasks, environment, options)
        finally:
            if server is not None:
                server.stop()


def scripted(tasks: list[dict[str, Any]]) -> Any:
    """The loopback model: the task whose file holds the scope in the prompt gets its reply."""

    def reply(body: dict[str, Any]) -> str:
        prompt = str(body["messages"][-1]["content"])
        scope = prompt.rsplit("The scope:\n", 1)[-1].split("\n", 1)[-1].rsplit("\n```", 1)[0]
        for task in tasks:
            if scope and scope in task["text"].replace("\r\n", "\n"):
                return str(task["reply"])
        return ""

    return reply


async def session(
    backend: str, tasks: list[dict[str, Any]], environment: dict[str, str], options: dict[str, Any]
) -> dict[str, Any]:
    client = LanguageClient("lsp-spark-edit-tasks", "1")
    messages: list[str] = []
    applied: list[types.WorkspaceEdit] = []

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def show_message(params: types.ShowMessageParams) -> None:
        messages.append(params.message)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        applied.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    await client.start_io(sys.executable, "-m", "lsp_spark", "serve", env=environment)
    drain = asyncio.create_task(_drain(client, []))
    try:
        await asyncio.wait_for(
            client.initialize_async(
                types.InitializeParams(
                    capabilities=capabilities(),
                    process_id=os.getpid(),
                    initialization_options=options,
                )
            ),
            START_TIMEOUT,
        )
        client.initialized(types.InitializedParams())
        results = []
        for task in tasks:
            results.append(await run_task(client, task, applied, messages))
            row = results[-1]
            print(
                f"  {backend:<8} {row['task']:<26} {'ok ' if row['success'] else 'no '}"
                f"hunks {row['hunks']:<2} lines {row['editLines']:>3} / {row['wholeScopeLines']:<3}"
                f" {row['seconds']:6.1f} s  {row['failure'][:60]}",
                flush=True,
            )
        stats = await client.protocol.send_request_async("lspSpark/stats", None)
        await asyncio.wait_for(client.shutdown_async(None), START_TIMEOUT)
        client.exit(None)
    finally:
        drain.cancel()
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
    return summarise(backend, results, stats)


def summarise(backend: str, results: list[dict[str, Any]], stats: Any) -> dict[str, Any]:
    edited = [row for row in results if row["hunks"]]
    return {
        "backend": backend,
        "model": stats.model,
        "tasks": len(results),
        "successRate": sum(row["success"] for row in results) / len(results),
        "editedRate": len(edited) / len(results),
        "medianEditLines": statistics.median(row["editLines"] for row in edited)
        if edited
        else None,
        "medianWholeScopeLines": (
            statistics.median(row["wholeScopeLines"] for row in edited) if edited else None
        ),
        "medianSeconds": statistics.median(row["seconds"] for row in results),
        "predictionTokens": {
            "accepted": stats.predictionTokens.accepted,
            "rejected": stats.predictionTokens.rejected,
        },
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--backend",
        choices=("both", "local", "scripted"),
        help="default both, or with --tiny scripted",
    )
    parser.add_argument("--threads", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    add_size_options(parser, RESULTS, "two tasks: checks that edits come back, in seconds")
    arguments = parser.parse_args()
    tasks = tiny(load_tasks()) if arguments.tiny else load_tasks()
    chosen = arguments.backend or ("scripted" if arguments.tiny else "both")
    backends = ("local", "scripted") if chosen == "both" else (chosen,)
    started = time.perf_counter()
    runs = {backend: asyncio.run(run(backend, tasks, arguments.threads)) for backend in backends}
    report = {
        "python": sys.version.split()[0],
        "taskCount": len(tasks),
        "runs": runs,
        "runtimeSeconds": round(time.perf_counter() - started, 1),
    }
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print()
    print(f"{'backend':<10}{'success':>9}{'edited':>8}{'median edit':>13}{'whole scope':>13}")
    for backend, summary in runs.items():
        print(
            f"{backend:<10}{summary['successRate']:>9.0%}{summary['editedRate']:>8.0%}"
            f"{_lines(summary['medianEditLines']):>13}{_lines(summary['medianWholeScopeLines']):>13}"
        )
    print(f"\nwrote {arguments.output}")


def _lines(value: float | None) -> str:
    return "-" if value is None else f"{value:g} lines"


if __name__ == "__main__":
    main()
