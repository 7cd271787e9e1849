"""What the editor tests share: the editor binary (or a skip), and the server's environment."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

from lsp_spark.testing import editor_environment

REQUIRE_EDITORS = "LSP_SPARK_REQUIRE_EDITORS"
TEST_KEY = "test-key-not-a-secret"


def missing_editor(why: str) -> NoReturn:
    """Skip a test for want of an editor, except in CI, which sets
    LSP_SPARK_REQUIRE_EDITORS=1 so a missing editor cannot pass silently: then it fails."""
    if os.environ.get(REQUIRE_EDITORS) == "1":
        pytest.fail(f"{why} and {REQUIRE_EDITORS}=1")
    pytest.skip(f"{why} (set {REQUIRE_EDITORS}=1 to make this a failure)")


def editor_binary(name: str, path: str | None = None) -> str:
    """The editor's path (searched in `path`, else PATH); see `missing_editor` without it."""
    found = shutil.which(name, path=path)
    if found is None:
        missing_editor(f"{name} is not on PATH")
    return found


def spark_environment(home: Path, base_url: str) -> dict[str, str]:
    """The environment an editor (and the server it starts) runs in: none of the user's
    settings or files, the loopback Cerebras server, no debounce and no prefetch."""
    return editor_environment(home, base_url, TEST_KEY) | {
        "LSP_SPARK_DEBOUNCE_MS": "0",
        "LSP_SPARK_PREFETCH": "false",
    }
