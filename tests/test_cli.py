"""The commands people run: complete, doctor, serve --tcp, and a clean exit."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import SERVER_ENV, TEST_KEY, StartSpark, cerebras_options

COMMAND = [sys.executable, "-m", "lsp_spark"]
EDITOR_TOKEN = "a-token-the-editor-made"


def loopback_env(server: CerebrasTestServer) -> dict[str, str]:
    return SERVER_ENV | {
        "CEREBRAS_API_KEY": TEST_KEY,
        "CEREBRAS_BASE_URL": server.base_url,
        "LSP_SPARK_DEBOUNCE_MS": "0",
    }


def test_complete_prints_the_suggestion(cerebras: CerebrasTestServer, tmp_path: Path) -> None:
    cerebras.config.queue_replies("a * b")
    source = tmp_path / "calc.py"
    source.write_text("def mul(a, b):\n    return \n")
    done = subprocess.run(
        [*COMMAND, "complete", str(source), "2", "12"],
        env=loopback_env(cerebras),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a * b\n"
    assert (
        "    return <CURSOR>\n" in cerebras.completion_requests[-1].body["messages"][-1]["content"]
    )


def test_doctor_shows_settings_and_reachability_but_never_the_key(
    cerebras: CerebrasTestServer,
) -> None:
    done = subprocess.run(
        [*COMMAND, "doctor"],
        env=loopback_env(cerebras),
        capture_output=True,
        text=True,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert TEST_KEY not in output
    assert '"apiKey": "set"' in output
    assert "backend: cerebras, model gpt-oss-120b" in output
    assert "reachable: yes" in output
    assert "python" in output.split("grammars:")[1]


def test_doctor_says_when_the_backend_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    done = subprocess.run(
        [*COMMAND, "doctor"],
        env=SERVER_ENV
        | {"CEREBRAS_API_KEY": TEST_KEY, "CEREBRAS_BASE_URL": f"http://127.0.0.1:{closed_port}"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "reachable: no" in done.stdout


async def test_serve_over_tcp(cerebras: CerebrasTestServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        *COMMAND,
        "serve",
        "--tcp",
        f"127.0.0.1:{port}",
        env=SERVER_ENV | {"LSP_SPARK_TCP_TOKEN": EDITOR_TOKEN},
        stderr=asyncio.subprocess.DEVNULL,
    )
    client = LanguageClient("tcp-test", "1")
    try:
        # Connect once the server listens: it says nothing when it does, so try until it
        # accepts (bounded: a hang guard) or has exited.
        for _ in range(600):
            assert process.returncode is None, "the server exited before it listened"
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        else:
            pytest.fail("the server never listened")
        result = await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                initialization_options=cerebras_options(cerebras, tcpToken=EDITOR_TOKEN),
            )
        )
        assert result.capabilities.inline_completion_provider is not None
        await client.shutdown_async(None)
        client.exit(None)
        assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await client.stop()


async def test_shutdown_and_exit_end_the_process_cleanly(
    start_spark: StartSpark, cerebras: CerebrasTestServer
) -> None:
    client = await start_spark(cerebras_options(cerebras))
    await client.shutdown_session()
    assert client._server is not None
    assert client._server.returncode == 0
