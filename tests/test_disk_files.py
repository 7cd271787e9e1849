"""Files read from disk ("Write tests for this function"): only inside the workspace folders,
never through a symbolic link, never excluded; nothing of such a file reaches the model.

The end-to-end tests drive the real server over stdio with the loopback Cerebras, which
records every request: the content of a file that must not be read never appears in one.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_spark.privacy import disk
from lsp_spark.privacy.exclusion import Exclusions
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import cerebras_options
from tests.test_actions import close as close_editor
from tests.test_actions import code_actions, cursor, launch, pick, wait_until

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="symlinks and FIFOs")

SECRET = "the-content-of-the-linked-file-7f3a91"
"""Not a secret the redactor knows: only not reading the file keeps it from the model."""
SOURCE = "def double(x):\n    return 2 * x\n"
REPLY = (
    "```python\nfrom pkg.util import double\n\n\ndef test_double():\n    assert double(2) == 4\n```"
)

Launch = Callable[..., Awaitable[LanguageClient]]


def no_exclusions(_: str) -> bool:
    return False


def excluded_by(*globs: str) -> Callable[[str], bool]:
    return Exclusions(globs).excludes


def refusal(path: Path, folders: list[Path], excluded: Callable[[str], bool]) -> str:
    with pytest.raises(disk.OffLimits) as refused:
        disk.check(path, folders, excluded)
    return str(refused.value)


# The checks, one rule at a time.


def test_a_file_inside_a_folder_passes_and_one_outside_does_not(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "tests").mkdir(parents=True)
    disk.check(workspace / "tests" / "test_a.py", [workspace], no_exclusions)
    disk.check(workspace / "tests" / "new_test.py", [workspace], no_exclusions)
    outside = "it is outside the workspace folders"
    assert refusal(tmp_path / "other" / "test_a.py", [workspace], no_exclusions) == outside
    assert refusal(workspace / ".." / "test_a.py", [workspace], no_exclusions) == outside
    assert refusal(tmp_path / "ws-sibling" / "a.py", [workspace], no_exclusions) == outside


def test_the_innermost_folder_holds_a_path(tmp_path: Path) -> None:
    outer, inner = tmp_path / "a", tmp_path / "a" / "b"
    assert disk.containing_folder(inner / "c.py", [outer, inner]) == inner
    assert disk.containing_folder(outer / "c.py", [inner, outer]) == outer
    assert disk.containing_folder(tmp_path / "c.py", [inner, outer]) is None


@posix_only
@pytest.mark.parametrize("link", ["file", "directory", "dangling", "inside"])
def test_no_symbolic_link_is_followed(tmp_path: Path, link: str) -> None:
    workspace = tmp_path / "ws"
    (workspace / "tests").mkdir(parents=True)
    (tmp_path / "home" / ".aws").mkdir(parents=True)
    (tmp_path / "home" / ".aws" / "credentials").write_text(SECRET)
    (workspace / "real.py").write_text("")
    test_file = workspace / "tests" / "test_a.py"
    if link == "file":
        test_file.symlink_to(tmp_path / "home" / ".aws" / "credentials")
    elif link == "directory":
        (workspace / "tests").rmdir()
        (workspace / "tests").symlink_to(tmp_path / "home" / ".aws")
        test_file = workspace / "tests" / "credentials"
    elif link == "dangling":
        test_file.symlink_to(tmp_path / "home" / "created-through-the-link")
    else:
        test_file.symlink_to(workspace / "real.py")
    assert refusal(test_file, [workspace], no_exclusions) == "it is a symbolic link, or inside one"


@posix_only
def test_a_folder_reached_through_a_link_is_the_workspace_itself(tmp_path: Path) -> None:
    """Editors open folders by paths that go through links (macOS's /tmp): only links
    below the folder count."""
    excludes = Exclusions().excludes
    real = tmp_path / "real"
    (real / "tests").mkdir(parents=True)
    (real / "tests" / "test_a.py").write_text("")
    (tmp_path / "alias").symlink_to(real)
    disk.check(tmp_path / "alias" / "tests" / "test_a.py", [tmp_path / "alias"], no_exclusions)
    assert (
        refusal(
            tmp_path / "alias" / "tests" / "test_a.py",
            [tmp_path / "alias"],
            excluded_by(f"{real.as_posix()}/**"),
        )
        == "it is excluded"
    ), "the resolved path is checked"
    (tmp_path / "secrets").symlink_to(real)
    assert (
        refusal(tmp_path / "secrets" / "tests" / "test_a.py", [tmp_path / "secrets"], excludes)
        == "it is excluded"
    ), "and the path as named"


def test_an_excluded_file_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path / "tests" / "test_a.py", [tmp_path], excluded_by("tests/")) == (
        "it is excluded"
    )
    assert refusal(tmp_path / ".env", [tmp_path], Exclusions().excludes) == "it is excluded"


def test_reading_gives_the_text_or_none_for_a_file_still_to_create(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("héllo\n", encoding="utf-8")
    assert disk.read(tmp_path / "a.py") == "héllo\n"
    assert disk.read(tmp_path / "missing.py") is None


@pytest.mark.parametrize(
    ("content", "limit", "told"),
    [
        (b"x" * 11, 10, "it is over 10 bytes"),
        (b"caf\xe9\n", 100, "it is not UTF-8 text"),
    ],
    ids=["too-large", "latin-1"],
)
def test_a_file_too_large_or_not_utf8_is_refused(
    tmp_path: Path, content: bytes, limit: int, told: str
) -> None:
    (tmp_path / "a.py").write_bytes(content)
    with pytest.raises(disk.OffLimits, match=told):
        disk.read(tmp_path / "a.py", limit)


@posix_only
def test_a_fifo_or_a_folder_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "test_a.py")
    with pytest.raises(disk.OffLimits, match="not a regular file"):
        disk.read(tmp_path / "test_a.py")
    with pytest.raises(disk.OffLimits, match="not a regular file"):
        disk.read(tmp_path)


@posix_only
def test_a_link_put_in_place_after_the_check_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "target").write_text(SECRET)
    (tmp_path / "test_a.py").symlink_to(tmp_path / "target")
    with pytest.raises(disk.OffLimits, match="cannot be read"):
        disk.read(tmp_path / "test_a.py")


# The real server.


@pytest_asyncio.fixture
async def start_editor() -> AsyncIterator[Launch]:
    started: list[LanguageClient] = []

    async def start(options: dict[str, Any], **settings: Any) -> LanguageClient:
        started.append(await launch(options, **settings))
        return started[-1]

    yield start
    for editor in started:
        await close_editor(editor)


def project(root: Path) -> Path:
    """A package with one function, and a tests folder for its tests; the source's path."""
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    source = root / "pkg" / "util.py"
    source.write_text(SOURCE)
    return source


def open_source(client: LanguageClient, source: Path) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(source.as_uri(), "python", 1, SOURCE)
        )
    )


async def write_tests(
    client: LanguageClient, source: Path, opened: bool = False
) -> types.CodeAction:
    """Run "Write tests" on the source's function, opening the source first unless it is."""
    if not opened:
        open_source(client, source)
    return await client.code_action_resolve_async(
        pick(await code_actions(client, source.as_uri(), cursor(1, 4)), "tests")
    )


async def refused_with(client: LanguageClient, told: str) -> None:
    await wait_until(lambda: any(told in message.message for message in client.messages))


def leaked(cerebras: CerebrasTestServer) -> bool:
    return any(SECRET.encode() in request.raw_body for request in cerebras.requests)


@posix_only
@pytest.mark.parametrize("link", ["file", "directory", "excluded", "dangling"])
async def test_a_symlinked_test_file_is_neither_read_nor_edited(
    start_editor: Launch, cerebras: CerebrasTestServer, tmp_path: Path, link: str
) -> None:
    """`tests/test_util.py -> ~/.aws/credentials` (or a tests folder that is a link, or a
    link to the workspace's own `.env`): nothing goes upstream and no edit names it."""
    workspace = tmp_path / "ws"
    source = project(workspace)
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(f"[default]\nkey = {SECRET}\n")
    test_file = workspace / "tests" / "test_util.py"
    if link == "file":
        test_file.symlink_to(home / ".aws" / "credentials")
    elif link == "directory":
        (workspace / "tests").rmdir()
        (workspace / "tests").symlink_to(home / ".aws")
        (home / ".aws" / "test_util.py").write_text(f"# {SECRET}\n")
    elif link == "excluded":
        (workspace / ".env").write_text(f"KEY={SECRET}\n")
        test_file.symlink_to(workspace / ".env")
    else:
        test_file.symlink_to(home / "created-through-the-link.py")
    cerebras.config.queue_replies(REPLY)
    client = await start_editor(cerebras_options(cerebras), root=workspace)
    resolved = await write_tests(client, source)
    assert resolved.edit is None
    await refused_with(
        client,
        "the test file tests/test_util.py is neither read nor edited: "
        "it is a symbolic link, or inside one.",
    )
    assert cerebras.completion_requests == [] and not leaked(cerebras)
    assert not (home / "created-through-the-link.py").exists()


@pytest.mark.parametrize("opened", [False, True], ids=["on-disk", "open-in-the-editor"])
async def test_an_excluded_test_file_is_neither_read_nor_edited(
    start_editor: Launch, cerebras: CerebrasTestServer, tmp_path: Path, opened: bool
) -> None:
    source = project(tmp_path)
    test_file = tmp_path / "tests" / "test_util.py"
    test_file.write_text(f"# {SECRET}\n")
    cerebras.config.queue_replies(REPLY)
    client = await start_editor(cerebras_options(cerebras, exclude=["tests/"]), root=tmp_path)
    if opened:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(test_file.as_uri(), "python", 1, test_file.read_text())
            )
        )
    resolved = await write_tests(client, source)
    assert resolved.edit is None
    await refused_with(client, "tests/test_util.py is neither read nor edited: it is excluded.")
    assert cerebras.completion_requests == [] and not leaked(cerebras)


@pytest.mark.parametrize("exists", [True, False], ids=["existing", "to-create"])
async def test_a_test_file_outside_the_workspace_folders_is_neither_read_nor_edited(
    start_editor: Launch, cerebras: CerebrasTestServer, tmp_path: Path, exists: bool
) -> None:
    """A source opened from outside the workspace has its test file outside too."""
    source = project(tmp_path / "elsewhere")
    if exists:
        (tmp_path / "elsewhere" / "pkg" / "test_util.py").write_text(f"# {SECRET}\n")
    (tmp_path / "ws").mkdir()
    cerebras.config.queue_replies(REPLY)
    client = await start_editor(cerebras_options(cerebras), root=tmp_path / "ws")
    resolved = await write_tests(client, source)
    assert resolved.edit is None
    await refused_with(client, "it is outside the workspace folders.")
    assert cerebras.completion_requests == [] and not leaked(cerebras)


async def test_the_workspace_folders_follow_the_editor(
    start_editor: Launch, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    """A folder added later is the workspace (its tests are read and sent); a removed one
    is not any more."""
    first, second = tmp_path / "first", tmp_path / "second"
    first_source, second_source = project(first), project(second)
    (second / "tests" / "test_util.py").write_text("def test_nothing():\n    pass\n")
    client = await start_editor(cerebras_options(cerebras), folders=[first])
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(second.as_uri(), "second")],
                removed=[types.WorkspaceFolder(first.as_uri(), "first")],
            )
        )
    )
    cerebras.config.queue_replies(REPLY)
    resolved = await write_tests(client, second_source)
    assert resolved.edit is not None
    [change] = resolved.edit.document_changes or []
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.uri == (second / "tests" / "test_util.py").as_uri()
    prompt = json.dumps(cerebras.completion_requests[-1].body)
    assert "test_nothing" in prompt and "tests/test_util.py" in prompt
    assert "`pkg.util`" in prompt, "the module path starts at the folder the source is in"
    resolved = await write_tests(client, first_source)
    assert resolved.edit is None
    await refused_with(client, "it is outside the workspace folders.")
    assert len(cerebras.completion_requests) == 1


@posix_only
async def test_with_no_workspace_folder_the_sources_own_folder_stands_in(
    start_editor: Launch, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    """No folder, no rootUri: a link next to the source is refused as in a workspace, and a
    plain test file there is read."""
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / "util.py"
    source.write_text(SOURCE)
    (tmp_path / "credentials").write_text(f"key = {SECRET}\n")
    test_file = tmp_path / "src" / "test_util.py"
    test_file.symlink_to(tmp_path / "credentials")
    client = await start_editor(cerebras_options(cerebras))
    resolved = await write_tests(client, source)
    assert resolved.edit is None
    await refused_with(client, "test_util.py is neither read nor edited: it is a symbolic link")
    assert cerebras.completion_requests == [] and not leaked(cerebras)
    test_file.unlink()
    test_file.write_text("def test_nothing():\n    pass\n")
    cerebras.config.queue_replies(REPLY)
    resolved = await write_tests(client, source, opened=True)
    assert resolved.edit is not None
    assert "test_nothing" in json.dumps(cerebras.completion_requests[-1].body)
