"""Settings layers, precedence and bad values."""

from __future__ import annotations

from pathlib import Path

from lsp_spark import settings
from lsp_spark.settings import Settings


def test_defaults_are_complete() -> None:
    defaults = Settings()
    assert defaults.backend == "auto"
    assert defaults.api_key is None
    assert defaults.max_tokens > 0


def test_precedence_file_then_environment_then_client(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "from-file"\nmaxTokens = 10\ndebounceMs = 5\n')
    loaded, problems = settings.load(
        initialization_options={"maxTokens": 20},
        client_settings={"lspSpark": {"debounceMs": 7}},
        environ={"LSP_SPARK_MODEL": "from-env", "CEREBRAS_API_KEY": "sk-secret"},
        config_file=config,
    )
    assert problems == []
    assert loaded.model == "from-env"
    assert loaded.max_tokens == 20
    assert loaded.debounce_ms == 7
    assert loaded.api_key is not None and loaded.api_key.get_secret_value() == "sk-secret"


def test_bad_values_are_dropped_and_reported(tmp_path: Path) -> None:
    loaded, problems = settings.load(
        initialization_options={"maxTokens": "lots", "colour": "red", "model": "m"},
        environ={},
        config_file=tmp_path / "missing.toml",
    )
    assert loaded.max_tokens == Settings().max_tokens
    assert loaded.model == "m"
    assert len(problems) == 2
    assert any("maxTokens" in problem for problem in problems)
    assert any("colour" in problem for problem in problems)


def test_unreadable_toml_is_reported(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("model = \n")
    loaded, problems = settings.load(environ={}, config_file=config)
    assert loaded == Settings()
    assert len(problems) == 1 and str(config) in problems[0]


def test_the_key_is_never_shown() -> None:
    loaded, _ = settings.merge({"apiKey": "sk-very-secret"})
    shown = loaded.redacted()
    assert "sk-very-secret" not in repr(shown)
    assert "sk-very-secret" not in repr(loaded)
    assert shown["apiKey"] == "set"


def test_lists_from_the_environment_are_comma_separated(tmp_path: Path) -> None:
    loaded, problems = settings.load(
        environ={
            "LSP_SPARK_EXCLUDE": "**/private/**, *.secret",
            "LSP_SPARK_CONTEXT_SOURCES": "imports",
        },
        config_file=tmp_path / "missing.toml",
    )
    assert problems == []
    assert loaded.exclude == ["**/private/**", "*.secret"]
    assert loaded.context_sources == ["imports"]


def test_a_config_file_that_is_not_utf8_names_its_line_and_column(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes('model = "m"\n# für später\n'.encode("latin-1"))
    loaded, problems = settings.load(environ={}, config_file=config)
    assert loaded == Settings()
    assert problems == [
        f"{config}: not UTF-8 at line 2, column 4 (byte 0xfc); save it as UTF-8. Defaults apply"
    ]


def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(b'\xef\xbb\xbfmodel = "m"\n')
    loaded, problems = settings.load(environ={}, config_file=config)
    assert (loaded.model, problems) == ("m", [])


def test_a_config_path_that_is_not_a_file_is_reported(tmp_path: Path) -> None:
    loaded, problems = settings.load(environ={}, config_file=tmp_path)
    assert loaded == Settings()
    assert len(problems) == 1 and problems[0].startswith(f"{tmp_path}: cannot be read")


def test_a_toml_error_names_its_line_and_column(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "m"\nmaxTokens = = 3\n')
    _, [problem] = settings.load(environ={}, config_file=config)
    assert "line 2, column 13" in problem
