"""A config file that cannot be read costs its settings, with one message saying where,
never the server: through the real server and `lsp-spark doctor`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import SERVER_ENV, TEST_KEY, StartSpark, inline, open_document

BASE_OPTIONS = {"debounceMs": 0, "prefetch": False, "nextEdit": False, "logLevel": "debug"}


def own_environment(config_home: Path, **variables: str) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(config_home), **variables}


def write_config(config_home: Path, content: bytes) -> Path:
    path = config_home / "lsp-spark" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


async def suggest(client: LanguageClient) -> list[str]:
    uri = open_document(client, "def add(a, b):\n    return \n")
    return [item.insert_text for item in (await inline(client, uri, 1, 11)).items]


def told(client: LanguageClient, text: str) -> list[str]:
    return [message.message for message in client.messages if text in message.message]


LATIN_1_CONFIG = '# réglages\nmodel = "from-the-file"\n'.encode("latin-1")


async def test_a_config_file_that_is_not_utf8_is_told_once_and_the_server_works(
    start_spark: StartSpark, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    path = write_config(tmp_path, LATIN_1_CONFIG)
    options = {**BASE_OPTIONS, "apiKey": TEST_KEY, "baseUrl": cerebras.base_url}
    cerebras.config.queue_replies("a + b", "a + b")
    client = await start_spark(options, env=own_environment(tmp_path))
    assert await suggest(client) == ["a + b"]
    [message] = told(client, str(path))
    assert "line 1, column 4" in message
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=options))
    assert await suggest(client) == ["a + b"]
    assert len(told(client, str(path))) == 1
    assert {request.body["model"] for request in cerebras.completion_requests} == {"gpt-oss-120b"}


def test_doctor_reports_a_config_file_that_is_not_utf8(
    cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    path = write_config(tmp_path, LATIN_1_CONFIG)
    done = subprocess.run(
        [sys.executable, "-m", "lsp_spark", "doctor"],
        env=SERVER_ENV
        | own_environment(tmp_path, CEREBRAS_API_KEY=TEST_KEY, CEREBRAS_BASE_URL=cerebras.base_url),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert f"{path}: not UTF-8 at line 1, column 4" in done.stdout
    assert "reachable: yes" in done.stdout
    assert done.returncode == 0, output
