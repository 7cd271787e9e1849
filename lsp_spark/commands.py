"""`complete` and `doctor`: the pipeline and the settings, for people at a terminal."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from lsp_spark import settings as settings_module
from lsp_spark.backends import BackendError, create_backend
from lsp_spark.backends.local import bundled_model_path, local_backend_available
from lsp_spark.documents import PositionEncoding
from lsp_spark.languages import language_of_file
from lsp_spark.pipeline import CompletionEngine
from lsp_spark.syntax.grammars import loaded_grammars
from lsp_spark.workspace import Workspace

DOCTOR_TIMEOUT = 5.0


def language_of(path: Path) -> str:
    return language_of_file(path.suffix)


def _say(message: str, error: bool = True) -> None:
    print(message, file=sys.stderr)


async def complete(path: Path, line: int, column: int, language: str | None) -> int:
    """Print the ghost text the server would show at LINE:COLUMN (both 1-based)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(f"lsp-spark: cannot read {path}: {error}", file=sys.stderr)
        return 2
    loaded, problems = settings_module.load()
    for problem in problems:
        print(f"lsp-spark: ignored setting {problem}", file=sys.stderr)
    files = Workspace()
    engine = CompletionEngine(_say, files)
    await engine.configure(loaded)
    document = files.open(path.resolve().as_uri(), language or language_of(path), 0, text)
    files.refresh_outline(document.uri)
    offset = document.offset_at(max(line - 1, 0), max(column - 1, 0), PositionEncoding.UTF32)
    row, col = document.position_at(offset, PositionEncoding.UTF32)
    try:
        suggestion = await engine.suggest(document, row, col)
    finally:
        await engine.aclose()
    if suggestion is None:
        return 1
    print(suggestion.text)
    return 0


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
    try:
        await asyncio.wait_for(backend.warm(), DOCTOR_TIMEOUT)
        models = await asyncio.wait_for(backend.list_models(), DOCTOR_TIMEOUT)
        print(f"reachable: yes; models: {', '.join(models)}")
        if backend.model not in models:
            print(f"warning: model {backend.model!r} is not in that list")
            status = 1
    except (BackendError, TimeoutError) as failure:
        print(f"reachable: no ({failure or 'timed out'})")
        status = 1
    finally:
        await backend.aclose()
    grammars = loaded_grammars()
    print(
        "grammars: "
        + ", ".join(f"{name}{'' if ok else ' (missing)'}" for name, ok in grammars.items())
    )
    return status
