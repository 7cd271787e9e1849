"""Test doubles that speak real wire protocols, shared by tests, benchmarks and the demo."""

from __future__ import annotations

import os


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
