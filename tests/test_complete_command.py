"""`lsp-spark complete` says why there is no suggestion, on stderr, with an exit code per
reason (`CompleteExit`, listed in the README's Commands table)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from lsp_spark.commands import CompleteExit
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from tests.conftest import SERVER_ENV, TEST_KEY

COMMAND = [sys.executable, "-m", "lsp_spark", "complete"]
SOURCE = "def mul(a, b):\n    return \n"


def _complete(
    tmp_path: Path, env: dict[str, str], line: int = 2, column: int = 12
) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "calc.py"
    source.write_text(SOURCE)
    return subprocess.run(
        [*COMMAND, str(source), str(line), str(column)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _loopback(base_url: str) -> dict[str, str]:
    return SERVER_ENV | {
        "CEREBRAS_API_KEY": TEST_KEY,
        "CEREBRAS_BASE_URL": base_url,
        "LSP_SPARK_DEBOUNCE_MS": "0",
    }


def test_an_unreachable_server_is_named_with_its_url(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    done = _complete(tmp_path, _loopback(f"http://127.0.0.1:{closed_port}"))
    assert done.returncode == CompleteExit.BACKEND_FAILED, done.stderr
    assert f"Cannot reach Cerebras at http://127.0.0.1:{closed_port}" in done.stderr
    assert done.stdout == ""


def test_a_server_that_answers_404_is_a_backend_failure(
    cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    done = _complete(tmp_path, _loopback(cerebras.base_url + "/not-the-api"))
    assert done.returncode == CompleteExit.BACKEND_FAILED, done.stderr
    assert f"Cerebras at {cerebras.base_url}/not-the-api answered HTTP 404" in done.stderr
    assert TEST_KEY not in done.stderr


def test_a_position_outside_the_file_is_an_error(
    cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    past_the_end = _complete(tmp_path, _loopback(cerebras.base_url), line=9, column=1)
    assert past_the_end.returncode == CompleteExit.BAD_INPUT
    assert "line 9 is outside the file, which has lines 1 to 3" in past_the_end.stderr
    past_the_line = _complete(tmp_path, _loopback(cerebras.base_url), line=2, column=40)
    assert past_the_line.returncode == CompleteExit.BAD_INPUT
    assert "column 40 is outside line 2, which has columns 1 to 12" in past_the_line.stderr
    assert cerebras.completion_requests == []


def test_no_suggestion_is_said_and_has_its_own_code(
    cerebras: CerebrasTestServer, tmp_path: Path
) -> None:
    cerebras.config.queue_replies("")
    done = _complete(tmp_path, _loopback(cerebras.base_url))
    assert done.returncode == CompleteExit.NO_SUGGESTION, done.stderr
    assert "no suggestion at" in done.stderr
    assert len(cerebras.completion_requests) == 1


def test_no_backend_from_the_settings_is_a_configuration_error(tmp_path: Path) -> None:
    done = _complete(tmp_path, SERVER_ENV | {"LSP_SPARK_BACKEND": "cerebras"})
    assert done.returncode == CompleteExit.BAD_CONFIGURATION, done.stderr
    assert "CEREBRAS_API_KEY" in done.stderr
