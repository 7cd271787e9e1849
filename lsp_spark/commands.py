"""`complete` and `doctor`: the pipeline and the settings, for people at a terminal."""

from __future__ import annotations

import asyncio
import enum
import json
import re
import sys
from pathlib import Path

from lsp_spark import settings as settings_module
from lsp_spark.backends import BackendError, FailureKind, create_backend
from lsp_spark.backends.local import bundled_model_path, local_backend_available
from lsp_spark.backends.openai_compat import OpenAICompatibleBackend, OpenAIMode
from lsp_spark.languages import language_of_file
from lsp_spark.pipeline import CompletionEngine
from lsp_spark.syntax.grammars import loaded_grammars
from lsp_spark.workspace import Workspace

DOCTOR_TIMEOUT = 5.0
LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""Where LSP (and so the server) breaks lines."""


def language_of(path: Path) -> str:
    return language_of_file(path.suffix)


class CompleteExit(enum.IntEnum):
    """`lsp-spark complete`'s exit codes, one per kind of outcome (the README lists them)."""

    SUGGESTED = 0
    NO_SUGGESTION = 1
    BAD_INPUT = 2
    """The file cannot be read or the position is outside it (argparse uses 2 for bad
    arguments too)."""
    BACKEND_FAILED = 3
    """The backend is unreachable, rejected the request or answered in a way it should not."""
    BAD_CONFIGURATION = 4
    """No backend can be made from the settings."""


def _problem(message: str) -> None:
    print(f"lsp-spark: {message}", file=sys.stderr)


def _position_problem(lines: list[str], line: int, column: int) -> str | None:
    """Why LINE:COLUMN (1-based, COLUMN in characters) is not a place in the file."""
    if not 1 <= line <= len(lines):
        return f"line {line} is outside the file, which has lines 1 to {len(lines)}"
    width = len(lines[line - 1])
    if not 1 <= column <= width + 1:
        return f"column {column} is outside line {line}, which has columns 1 to {width + 1}"
    return None


async def complete(path: Path, line: int, column: int, language: str | None) -> int:
    """Print the ghost text the server would show at LINE:COLUMN (both 1-based); say on
    stderr why there is none, with an exit code per reason (`CompleteExit`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        _problem(f"cannot read {path}: {error}")
        return CompleteExit.BAD_INPUT
    if (problem := _position_problem(LINE_BREAK.split(text), line, column)) is not None:
        _problem(f"{path}: {problem}.")
        return CompleteExit.BAD_INPUT
    loaded, problems = settings_module.load()
    for problem in problems:
        _problem(f"ignored setting {problem}")
    files = Workspace()
    # What the server would tell an editor in passing; the outcome is told below instead.
    engine = CompletionEngine(lambda _message, _error: None, files)
    await engine.configure(loaded)
    holder = engine.backends
    try:
        if holder.backend is None:
            _problem(str(holder.failure or "no backend is configured."))
            return CompleteExit.BAD_CONFIGURATION
        await holder.prepared.wait()
        document = files.open(path.resolve().as_uri(), language or language_of(path), 0, text)
        files.refresh_outline(document.uri)
        suggestion = await engine.suggest(document, line - 1, column - 1)
    finally:
        await engine.aclose()
    if (failure := holder.last_failure) is not None:
        _problem(str(failure))
        if failure.kind is FailureKind.MISCONFIGURED:
            return CompleteExit.BAD_CONFIGURATION
        return CompleteExit.BACKEND_FAILED
    if suggestion is None or not suggestion.text:
        _problem(f"no suggestion at {path}:{line}:{column}.")
        return CompleteExit.NO_SUGGESTION
    print(suggestion.text)
    return CompleteExit.SUGGESTED


MODE_PROBES: dict[OpenAIMode, str] = {
    "chat": "/v1/chat/completions",
    "fim": "/v1/completions, FIM tokens in the prompt",
    "suffix": "/v1/completions with a suffix",
    "infill": "/infill",
}
"""What each `openaiMode` asks of the server, as `doctor` names it."""


async def _probe_modes(backend: OpenAICompatibleBackend) -> None:
    """A tiny completion per `openaiMode`, each bounded by DOCTOR_TIMEOUT: what the server
    answered, so the user can pick a mode it supports. A 200 in fim or suffix mode does not
    prove the model knows FIM (the server cannot tell); the text it wrote is shown."""
    print(f"openaiMode in use: {backend.mode}; what the server answers in each mode:")
    for mode, asks in MODE_PROBES.items():
        try:
            async with asyncio.timeout(DOCTOR_TIMEOUT):
                text = await backend.probe(mode, DOCTOR_TIMEOUT)
            answer = f"answered {text!r}"
        except BackendError as failure:
            answer = f"failed: {failure}"
        except TimeoutError:
            answer = f"failed: no answer within {DOCTOR_TIMEOUT:g} s"
        print(f"  {mode} ({asks}): {answer}")


async def doctor() -> int:
    """What is configured and whether it works; the API key itself is never shown."""
    loaded, problems = settings_module.load()
    print(f"config file: {settings_module.config_file_path()}")
    print("settings in force:")
    print(json.dumps(loaded.redacted(), indent=2))
    for problem in problems:
        print(f"ignored setting: {problem}")
    print(
        f"embedded model: {bundled_model_path() or 'not installed'}"
        f" (llama-cpp-python {'available' if local_backend_available() else 'missing'})"
    )
    status = 0
    try:
        backend = create_backend(loaded)
    except BackendError as failure:
        print(f"backend: none: {failure}")
        return 1
    print(f"backend: {backend.name}, model {backend.model}")
    # A server that does not answer soon is reported as such; loading an embedded model
    # takes what it takes on this machine (a first run converts it), and always ends.
    timeout = DOCTOR_TIMEOUT if backend.remote else None
    try:
        await asyncio.wait_for(backend.warm(), timeout)
        models = await asyncio.wait_for(backend.list_models(), timeout)
        print(f"reachable: yes; models: {', '.join(models)}")
        if backend.model not in models:
            print(f"warning: model {backend.model!r} is not in that list")
            status = 1
        if isinstance(backend, OpenAICompatibleBackend):
            await _probe_modes(backend)
    except (BackendError, TimeoutError) as failure:
        print(f"reachable: no ({str(failure) or f'no answer within {DOCTOR_TIMEOUT:g} s'})")
        status = 1
    finally:
        await backend.aclose()
    grammars = loaded_grammars()
    print(
        "grammars: "
        + ", ".join(f"{name}{'' if ok else ' (missing)'}" for name, ok in grammars.items())
    )
    return status
