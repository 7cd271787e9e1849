"""What only the user's own configuration (config file, environment) may do, through the real
server: send the key from it somewhere, lower privacy; and a config file that cannot be read
costs its settings, with one message saying where, never the server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import SERVER_ENV, TEST_KEY, StartSpark, inline, open_document

OWN_KEY = "csk-" + "5" * 10 + "the-users-own-key"
BASE_OPTIONS = {"debounceMs": 0, "prefetch": False, "nextEdit": False, "logLevel": "debug"}


@pytest.fixture
def elsewhere() -> Iterator[CerebrasTestServer]:
    """A second loopback server, standing for a host the user never named: it takes any key
    (or none) and records every request's headers."""
    with CerebrasTestServer(models=["gpt-oss-120b"]) as server:
        yield server


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


def authorizations(server: CerebrasTestServer) -> list[str | None]:
    return [request.headers.get("authorization") for request in server.requests]


def told(client: LanguageClient, text: str) -> list[str]:
    return [message.message for message in client.messages if text in message.message]


async def test_the_editors_base_url_never_gets_the_key_from_the_environment(
    start_spark: StartSpark,
    cerebras: CerebrasTestServer,
    elsewhere: CerebrasTestServer,
    tmp_path: Path,
) -> None:
    cerebras.config.api_key = OWN_KEY
    elsewhere.config.queue_replies("a + b", "a + b")
    log_file = tmp_path / "server.log"
    environment = own_environment(
        tmp_path, CEREBRAS_API_KEY=OWN_KEY, CEREBRAS_BASE_URL=cerebras.base_url
    )
    client = await start_spark(
        {**BASE_OPTIONS, "baseUrl": elsewhere.base_url},
        env=environment,
        args=["--log-file", str(log_file)],
    )
    assert await suggest(client) == ["a + b"], "the request still goes, without the key"
    [message] = told(client, "apiKey")
    assert f"not sent to http://127.0.0.1:{elsewhere.port}" in message
    assert "LSP_SPARK_BASE_URL" in message

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={**BASE_OPTIONS, "baseUrl": elsewhere.base_url})
    )
    assert await suggest(client) == ["a + b"]
    assert len(told(client, "apiKey")) == 1, "told once, not once per push"

    assert elsewhere.completion_requests and all(
        header is None for header in authorizations(elsewhere)
    )
    assert cerebras.requests == []
    seen = [log_file.read_text(), *(message.message for message in client.messages)]
    assert not any(OWN_KEY in text or OWN_KEY[4:20] in text for text in seen)


async def test_the_editors_backend_never_gets_the_key_from_the_environment(
    start_spark: StartSpark, elsewhere: CerebrasTestServer, tmp_path: Path
) -> None:
    """`backend: openai` from the editor, with CEREBRAS_API_KEY in the environment: the
    OpenAI-compatible server the editor points at gets no key."""
    elsewhere.config.queue_replies("a + b")
    client = await start_spark(
        {**BASE_OPTIONS, "backend": "openai", "baseUrl": elsewhere.base_url},
        env=own_environment(tmp_path, CEREBRAS_API_KEY=OWN_KEY),
    )
    assert await suggest(client) == ["a + b"]
    assert told(client, "apiKey")
    assert elsewhere.completion_requests and all(
        header is None for header in authorizations(elsewhere)
    )


@pytest.mark.parametrize("where", ["config file", "environment"])
async def test_a_base_url_of_the_users_own_gets_the_key(
    start_spark: StartSpark, elsewhere: CerebrasTestServer, tmp_path: Path, where: str
) -> None:
    elsewhere.config.queue_replies("a + b")
    environment = own_environment(tmp_path, CEREBRAS_API_KEY=OWN_KEY)
    if where == "config file":
        write_config(tmp_path, f'backend = "openai"\nbaseUrl = "{elsewhere.base_url}"\n'.encode())
    else:
        environment |= {"LSP_SPARK_BACKEND": "openai", "LSP_SPARK_BASE_URL": elsewhere.base_url}
    client = await start_spark(BASE_OPTIONS, env=environment)
    assert await suggest(client) == ["a + b"]
    assert not told(client, "apiKey")
    assert elsewhere.completion_requests
    assert set(authorizations(elsewhere)) == {f"Bearer {OWN_KEY}"}


async def test_the_editor_cannot_lower_privacy(
    start_spark: StartSpark, cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    """Redaction off from the editor is ignored, with one message naming the setting and
    where it may be set; the secret stays out of the prompt."""
    client = await start_spark(
        {
            **BASE_OPTIONS,
            "backend": "cerebras",
            "apiKey": TEST_KEY,
            "baseUrl": cerebras.base_url,
            "redactSecrets": False,
            "exclude": ["!.env"],
        },
        env=own_environment(tmp_path),
    )
    secret = "sk-proj-a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ12"
    uri = open_document(client, f'OPENAI_KEY = "{secret}"\ndef add(a, b):\n    return \n')
    await inline(client, uri, 2, 11)
    [redaction] = told(client, "redactSecrets")
    assert "LSP_SPARK_REDACT_SECRETS" in redaction
    [taken_back] = told(client, "!.env")
    assert "LSP_SPARK_EXCLUDE" in taken_back
    prompts = [request.raw_body.decode() for request in cerebras.completion_requests]
    assert prompts and not any(secret in prompt for prompt in prompts)


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
