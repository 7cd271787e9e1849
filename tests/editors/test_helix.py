"""editors/helix/languages.toml: reproducible from its generator and usable as is."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import ModuleType

HELIX = Path(__file__).resolve().parents[2] / "editors" / "helix"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("helix_generate", HELIX / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed() -> str:
    return (HELIX / "languages.toml").read_text()


def test_committed_file_is_the_generators_output() -> None:
    assert committed() == generator().render(), "run: python editors/helix/generate.py"


def test_server_is_declared_with_settings_but_no_api_key() -> None:
    config = tomllib.loads(committed())
    server = config["language-server"]["lsp-spark"]
    assert server["command"] == "lsp-spark"
    assert server["args"] == ["serve"]
    assert server["config"]["backend"] == "cerebras"
    assert "apiKey" not in server["config"]
    assert "CEREBRAS_API_KEY" in committed()


def test_every_language_keeps_helix_defaults_and_adds_lsp_spark_last() -> None:
    languages = tomllib.loads(committed())["language"]
    by_name = {entry["name"]: entry["language-servers"] for entry in languages}
    assert len(by_name) == len(languages), "a language is listed twice"
    for name, servers in by_name.items():
        assert servers[-1] == "lsp-spark", name
        assert servers.count("lsp-spark") == 1, name
    assert by_name["python"][:-1] == ["ty", "ruff", "jedi", "pylsp", "zuban"]
    assert by_name["rust"] == ["rust-analyzer", "lsp-spark"]
    expected = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp"}
    expected |= {"c-sharp", "ruby", "php", "lua", "bash", "json", "toml", "markdown"}
    assert expected <= by_name.keys()
