"""Test doubles that speak real wire protocols, shared by tests, benchmarks and the demo."""

from __future__ import annotations

import os
from pathlib import Path


def isolated_environment(config_home: str) -> dict[str, str]:
    """This process's environment without any lsp-spark or Cerebras setting, and with an
    empty config directory, so only what a test or benchmark passes reaches the server."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CEREBRAS_", "LSP_SPARK_"))
    }
    environment["XDG_CONFIG_HOME"] = config_home
    return environment


def editor_environment(home: Path, base_url: str, api_key: str) -> dict[str, str]:
    """The environment an editor (and the server it starts) runs in: none of the user's
    settings or files (`home` stands in for theirs), and the loopback Cerebras server."""
    for name in ("config", "data", "state", "cache"):
        (home / name).mkdir(parents=True, exist_ok=True)
    return isolated_environment(str(home / "config")) | {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "CEREBRAS_API_KEY": api_key,
        "CEREBRAS_BASE_URL": base_url,
        "LSP_SPARK_BACKEND": "cerebras",
    }
