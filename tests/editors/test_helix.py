"""Helix: editors/helix/languages.toml, and the real server driven as Helix drives it.

Helix has no package this machine can install, so `helix_client.HelixClient` replays what
Helix (25.07.1, commit 079a789e) sends and applies what it gets back the way Helix applies it:
the menu's filter, the item's text edit (as a snippet, for an item of kind Snippet), code
actions resolved on Helix's UI thread, versioned workspace edits. The server is started with
the `config` table of editors/helix/languages.toml, against the loopback Cerebras server.

A test marked `xfail(strict=True)` reproduces a server behaviour that breaks Helix today; it
starts to pass (and so to fail, being strict) once the server is fixed: then drop the mark.
"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.testing.nextedit_model import is_next_edit_request, scripted_reply
from tests.editors.helix_client import (
    HELIX_VERSION,
    OFFERED_ENCODINGS,
    CompletionMenu,
    Diagnostic,
    Document,
    HelixClient,
)
from tests.editors.helpers import TEST_KEY, spark_environment

ROOT = Path(__file__).resolve().parents[2]
HELIX = ROOT / "editors" / "helix"
DOCSTRING = ROOT / "fixtures" / "actions" / "python_docstring"
UPSTREAM_WAIT = 30.0
"""Seconds to wait for the loopback server to finish an answer: a hang guard only."""
ACTION_POLLS = 50
"""Code action menus opened at most while the server stores a prediction the loopback
server has already answered (a hang guard: the first or second one has it)."""
ERROR = 1
"""`MessageType.Error`: shown in red in Helix's status line."""


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("helix_generate", HELIX / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed() -> str:
    return (HELIX / "languages.toml").read_text()


def server_entry() -> dict[str, Any]:
    entry: dict[str, Any] = tomllib.loads(committed())["language-server"]["lsp-spark"]
    return entry


def test_committed_file_is_the_generators_output() -> None:
    assert committed() == generator().render(), "run: python editors/helix/generate.py"


def test_server_is_declared_with_settings_but_no_api_key() -> None:
    server = server_entry()
    assert server["command"] == "lsp-spark"
    assert server["args"] == ["serve"]
    assert server["config"]["backend"] == "cerebras"
    assert "apiKey" not in server["config"]
    assert "CEREBRAS_API_KEY" in committed()


def test_every_language_keeps_helix_defaults_and_adds_lsp_spark_last() -> None:
    languages = tomllib.loads(committed())["language"]
    by_name = {entry["name"]: entry["language-servers"] for entry in languages}
    assert len(by_name) == len(languages), "a language is listed twice"
    for name, servers in by_name.items():
        assert servers[-1] == "lsp-spark", name
        assert servers.count("lsp-spark") == 1, name
    assert by_name["python"][:-1] == ["ty", "ruff", "jedi", "pylsp", "zuban"]
    assert by_name["rust"] == ["rust-analyzer", "lsp-spark"]
    expected = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp"}
    expected |= {"c-sharp", "ruby", "php", "lua", "bash", "json", "toml", "markdown"}
    assert expected <= by_name.keys()


# --- The server, as Helix runs it -------------------------------------------------------------


@dataclass
class Session:
    helix: HelixClient
    cerebras: CerebrasTestServer
    project: Path
    shown_before: int = 0
    """Status messages Helix had shown before the current test."""

    def errors_shown(self) -> list[str]:
        """Error messages in Helix's status line during the current test."""
        shown = self.helix.status[self.shown_before :]
        return [message for kind, message in shown if kind == ERROR]

    def open(self, name: str, text: str) -> Document:
        """`:open name` on a new file of the project."""
        path = self.project / name
        path.write_text(text)
        return self.helix.open(path)

    async def upstream_finished(self) -> None:
        """Until the loopback server has answered the last completion in full."""

        def finished() -> bool:
            requests = self.cerebras.completion_requests
            return bool(requests) and requests[-1].finished

        await self.cerebras.wait_for_async(finished, UPSTREAM_WAIT)

    def completion_requests(self) -> int:
        """How many times Helix has asked for completion."""
        sent = self.helix.sent
        return sum(message.get("method") == "textDocument/completion" for message in sent)

    async def suggestion_menu(self, document: Document, typed: str) -> CompletionMenu | None:
        """Type as a Helix user does; when the first answer came too late for the
        deadline (an empty, incomplete list: no menu), press Ctrl-x once the model has
        answered, as the README tells Helix users to."""
        asked = self.completion_requests()
        menu = await self.helix.type(document, typed)
        if menu is None and self.completion_requests() == asked:
            menu = await self.helix.complete(document)
        if menu is None:
            await self.upstream_finished()
            menu = await self.helix.complete(document)
        return menu


def session_config() -> dict[str, Any]:
    """The config table as committed, with next edits off: their requests would take the
    replies these tests script for completions (the test about them starts its own Helix)."""
    return {**server_entry()["config"], "nextEdit": False}


@pytest.fixture(scope="module")
def cerebras() -> Iterator[CerebrasTestServer]:
    with CerebrasTestServer(api_key=TEST_KEY, models=["gpt-oss-120b"]) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def helix_session(
    cerebras: CerebrasTestServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Session]:
    """`hx main.py` in a git project: one server for the module's tests, each on its own
    file, as a Helix user works through one file after another. Quitting must stop it."""
    base = tmp_path_factory.mktemp("helix")
    project = base / "project"
    (project / ".git").mkdir(parents=True)
    main = project / "main.py"
    main.write_text('"""The project\'s entry point."""\n')
    entry = server_entry()
    helix, _ = await HelixClient.start(
        [sys.executable, "-m", "lsp_spark", *entry["args"]],
        main,
        config=session_config(),
        env=spark_environment(base / "home", cerebras.base_url),
        cwd=project,
    )
    yield Session(helix, cerebras, project)
    assert await helix.quit() == 0, "the server did not exit cleanly after shutdown and exit"


@pytest.fixture
def session(helix_session: Session) -> Session:
    """The shared session with the loopback's scripts and what Helix recorded cleared (the
    status line's history is kept: settings problems are shown once, at start)."""
    helix_session.cerebras.reset()
    helix = helix_session.helix
    helix.problems.clear()
    helix.requests_while_blocked.clear()
    helix_session.shown_before = len(helix.status)
    return helix_session


@pytest.mark.asyncio(loop_scope="module")
async def test_helix_starts_the_server_with_the_config_table_of_languages_toml(
    session: Session,
) -> None:
    helix = session.helix
    config = session_config()
    initialize = next(message for message in helix.sent if message.get("method") == "initialize")
    assert initialize["params"]["initializationOptions"] == config
    assert initialize["params"]["clientInfo"] == {"name": "helix", "version": HELIX_VERSION}
    assert initialize["params"]["rootUri"] == session.project.as_uri()
    pushed = [m for m in helix.sent if m.get("method") == "workspace/didChangeConfiguration"]
    assert [message["params"]["settings"] for message in pushed] == [config]
    assert helix.capabilities.get("positionEncoding") in OFFERED_ENCODINGS
    assert "completionProvider" in helix.capabilities
    assert helix.capabilities["codeActionProvider"]["resolveProvider"] is True


@pytest.mark.asyncio(loop_scope="module")
async def test_enter_on_the_menu_item_inserts_the_models_suggestion(session: Session) -> None:
    """Type `return π * ` (Helix asks once the word pauses, at the cursor by then), pick
    the item: the buffer holds exactly the suggestion, placed by its UTF-8 range (π is two
    bytes), and the server's copy follows Helix's version jump (the preview and its undo
    count as versions the server never sees)."""
    helix, cerebras = session.helix, session.cerebras
    cerebras.config.queue_replies("r * r", "\n")
    document = session.open("circle.py", "def area(r):\n    π = 3.14159\n    \n")
    helix.place_cursor(document, 2, 4)

    menu = await session.suggestion_menu(document, "return π * ")

    assert menu is not None, f"no lsp-spark item in Helix's menu; problems: {helix.problems}"
    [item] = menu.shown
    assert item["detail"] == "lsp-spark (cerebras)"
    version_before = document.version
    await helix.accept(document, menu, item)
    assert document.text == "def area(r):\n    π = 3.14159\n    return π * r * r\n"
    assert document.version == version_before + 3
    assert helix.problems == []
    request = cerebras.completion_requests[0]
    assert request.body["model"] == "gpt-oss-120b", "the backend's default model"
    assert "π = 3.14159" in request.body["messages"][-1]["content"]
    # The model answered with the config's backend, so the server has read the config; what
    # it had to say about it is in the status line by now.
    await helix.catch_up()
    assert session.errors_shown() == []
    shown = [message for _, message in helix.status]
    assert not any("ignored settings" in message for message in shown), shown

    cerebras.reset()
    cerebras.config.queue_replies("\n")
    await helix.complete(document)
    await session.upstream_finished()
    [after] = cerebras.completion_requests
    assert "return π * r * r" in after.body["messages"][-1]["content"], "the server lost the edit"


@pytest.mark.asyncio(loop_scope="module")
async def test_a_code_action_on_the_selected_function_edits_it_in_helix(
    session: Session,
) -> None:
    """`maf` selects the function, Space-a lists the actions (with another server's
    diagnostic in it, a fix comes first); the chosen one is resolved on Helix's UI thread and
    its versioned edit applied to the buffer."""
    helix, cerebras = session.helix, session.cerebras
    cerebras.config.queue_replies((DOCSTRING / "reply.txt").read_text())
    document = session.open("stats.py", (DOCSTRING / "before.py").read_text())
    last_line = "    return total / len(values)"
    values = document.text.index("values)", document.text.index(last_line))
    unbound = '"values" is possibly unbound'
    document.diagnostics.append(
        Diagnostic(values, values + 6, unbound, severity=2, source="Pyright", provider="pyright")
    )
    helix.select(document, (0, 0), (4, len(last_line)))

    actions = await helix.code_actions(document)

    assert cerebras.completion_requests == [], "listing the actions must not ask the model"
    assert actions[0].title == f"Fix: {unbound}", [action.title for action in actions]
    [document_it] = [action for action in actions if action.title == "Add docstring/comments"]
    await helix.choose(document_it)
    assert document.text == (DOCSTRING / "after.py").read_text()
    assert helix.problems == []
    await helix.catch_up()
    assert session.errors_shown() == []


@pytest.mark.asyncio(loop_scope="module")
async def test_the_suggestion_for_a_half_typed_word_is_in_helixs_menu(session: Session) -> None:
    helix, cerebras = session.helix, session.cerebras
    cerebras.config.queue_replies("turn a + b")
    document = session.open("partial.py", "def add(a, b):\n    \n")
    helix.place_cursor(document, 1, 4)

    menu = await session.suggestion_menu(document, "re")

    assert menu is not None, "the lsp-spark item is not in Helix's menu after typing 're'"
    await helix.accept(document, menu, menu.shown[0])
    assert document.text == "def add(a, b):\n    return a + b\n"


@pytest.mark.asyncio(loop_scope="module")
async def test_helix_inserts_backslashes_dollars_and_indented_lines_as_suggested(
    session: Session,
) -> None:
    helix, cerebras = session.helix, session.cerebras
    escaped = 'path.split("\\\\") + ["$5"]'
    block = "for value in values:\n        total += value\n    return total"
    cerebras.config.queue_replies(escaped, block)
    document = session.open("snippets.py", "def parts(path):\n    \n\n\ndef total(values):\n    \n")

    helix.place_cursor(document, 1, 4)
    menu = await session.suggestion_menu(document, "return ")
    assert menu is not None
    await helix.accept(document, menu, menu.shown[0])
    helix.place_cursor(document, 5, 4)
    block_menu = await session.suggestion_menu(document, "")
    assert block_menu is not None
    await helix.accept(document, block_menu, block_menu.shown[0])

    assert document.text == (
        f"def parts(path):\n    return {escaped}\n\n\ndef total(values):\n    {block}\n"
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_a_code_action_at_helixs_cursor_edits_the_enclosing_function(
    session: Session,
) -> None:
    helix, cerebras = session.helix, session.cerebras
    cerebras.config.queue_replies((DOCSTRING / "reply.txt").read_text())
    document = session.open("cursor.py", (DOCSTRING / "before.py").read_text())
    helix.place_cursor(document, 0, 4)

    actions = await helix.code_actions(document)

    assert "Write tests for this function" in [action.title for action in actions]
    [document_it] = [action for action in actions if action.title == "Add docstring/comments"]
    await helix.choose(document_it)
    assert document.text == (DOCSTRING / "after.py").read_text()


@pytest.mark.asyncio(loop_scope="module")
async def test_resolving_a_code_action_asks_helix_nothing_while_it_waits(
    session: Session,
) -> None:
    helix, cerebras = session.helix, session.cerebras
    cerebras.config.queue_replies((DOCSTRING / "reply.txt").read_text())
    document = session.open("blocked.py", (DOCSTRING / "before.py").read_text())
    helix.select(document, (0, 0), (4, len("    return total / len(values)")))

    [document_it] = [
        action
        for action in await helix.code_actions(document)
        if action.title == "Add docstring/comments"
    ]
    await helix.choose(document_it)

    assert document.text == (DOCSTRING / "after.py").read_text()
    assert helix.requests_while_blocked == []


@pytest.mark.asyncio(loop_scope="module")
async def test_helix_gets_the_next_edit_as_the_first_code_action(
    cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    """Helix has no next-edit display: after a rename, "Apply next edit" leads its code
    action menu once the prediction is in, and choosing it renames the other uses. Helix
    runs with the config table exactly as committed."""
    cerebras.reset()
    before = "def area(width, height):\n    return width * height\n"
    expected = before.replace("width", "widths")

    def reply(request: dict[str, Any]) -> str:
        return scripted_reply(request, expected) if is_next_edit_request(request) else ""

    cerebras.config.reply_fn = reply
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    path = project / "rename.py"
    path.write_text(before)
    entry = server_entry()
    helix, document = await HelixClient.start(
        [sys.executable, "-m", "lsp_spark", *entry["args"]],
        path,
        config=entry["config"],
        env=spark_environment(tmp_path / "home", cerebras.base_url),
        cwd=project,
    )
    try:
        helix.place_cursor(document, 0, len("def area(width"))
        await helix.type(document, "s")

        def predicted() -> bool:
            return any(
                is_next_edit_request(request.body) and request.finished
                for request in cerebras.completion_requests
            )

        await cerebras.wait_for_async(predicted, UPSTREAM_WAIT)
        actions = []
        for _ in range(ACTION_POLLS):
            actions = await helix.code_actions(document)
            if actions and actions[0].title == "Apply next edit":
                break
        assert [action.title for action in actions[:1]] == ["Apply next edit"]
        await helix.choose(actions[0])
        assert document.text == expected
    finally:
        assert await helix.quit() == 0
