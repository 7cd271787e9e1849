"""Settings layers, precedence and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_spark import settings
from lsp_spark.backends import create_backend
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


OWN_KEY = "csk-own-key-from-the-environment"


def guarded(
    editor: dict[str, object], environ: dict[str, str], tmp_path: Path
) -> tuple[Settings, list[str]]:
    return settings.load(editor, environ=environ, config_file=tmp_path / "missing.toml")


def test_an_editors_base_url_gets_no_key_from_the_environment(tmp_path: Path) -> None:
    loaded, problems = guarded(
        {"baseUrl": "http://user:pw@127.0.0.1:9999/v1"}, {"CEREBRAS_API_KEY": OWN_KEY}, tmp_path
    )
    assert loaded.api_key is None
    assert loaded.backend == "cerebras", "the same backend, asked without the key"
    [problem] = problems
    assert "not sent to http://127.0.0.1:9999," in problem
    assert "pw" not in problem


def test_an_editors_backend_alone_gets_no_key_from_the_environment(tmp_path: Path) -> None:
    loaded, problems = guarded({"backend": "openai"}, {"CEREBRAS_API_KEY": OWN_KEY}, tmp_path)
    assert loaded.api_key is None and loaded.backend == "openai"
    assert problems and "http://127.0.0.1:8080" in problems[0]
    backend = create_backend(loaded)
    assert b"authorization" not in backend._http._fields  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("editor", "environ"),
    [
        ({"apiKey": "editor-key", "baseUrl": "http://127.0.0.1:9999"}, {"CEREBRAS_API_KEY": "k"}),
        ({"baseUrl": "https://API.cerebras.ai/v1"}, {"CEREBRAS_API_KEY": OWN_KEY}),
        ({"backend": "cerebras"}, {"CEREBRAS_API_KEY": OWN_KEY}),
        (
            {"backend": "openai"},
            {"CEREBRAS_API_KEY": OWN_KEY, "LSP_SPARK_BASE_URL": "http://127.0.0.1:9999"},
        ),
        ({}, {"LSP_SPARK_API_KEY": OWN_KEY, "LSP_SPARK_BASE_URL": "http://127.0.0.1:9999"}),
        ({"backend": "local"}, {"CEREBRAS_API_KEY": OWN_KEY}),
    ],
    ids=["editor-key", "cerebras-host", "cerebras", "own-url", "own-generic", "local"],
)
def test_a_key_goes_where_its_owner_named(
    editor: dict[str, object], environ: dict[str, str], tmp_path: Path
) -> None:
    loaded, problems = guarded(editor, environ, tmp_path)
    assert loaded.api_key is not None
    assert problems == []


def test_the_default_local_server_is_not_named_by_choosing_its_backend(tmp_path: Path) -> None:
    """CEREBRAS_API_KEY and LSP_SPARK_BACKEND=openai: the key is Cerebras', and no one named
    http://127.0.0.1:8080 (any local process may listen there) to receive it."""
    loaded, problems = guarded(
        {}, {"CEREBRAS_API_KEY": OWN_KEY, "LSP_SPARK_BACKEND": "openai"}, tmp_path
    )
    assert loaded.api_key is None
    assert len(problems) == 1


def test_the_editor_raises_privacy_but_never_lowers_it(tmp_path: Path) -> None:
    editor = {
        "redactSecrets": False,
        "defaultExcludes": False,
        "exclude": ["!.env", "*.log"],
        "localModelPath": "/tmp/other.gguf",
    }
    loaded, problems = guarded(editor, {"LSP_SPARK_EXCLUDE": "secret/**,!.env.example"}, tmp_path)
    assert loaded.redact_secrets is True
    assert loaded.default_excludes is True
    assert loaded.local_model_path is None
    assert loaded.exclude == ["secret/**", "!.env.example", "*.log"]
    named = ["redactSecrets", "defaultExcludes", "localModelPath", "!.env"]
    assert len(problems) == len(named)
    for name, problem in zip(named, problems, strict=True):
        assert name in problem and "environment" in problem


def test_the_users_own_configuration_lowers_privacy_silently(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('redactSecrets = false\nexclude = ["!.env"]\n')
    loaded, problems = settings.load(
        {"redactSecrets": False, "exclude": ["!.env"]}, environ={}, config_file=config
    )
    assert loaded.redact_secrets is False
    assert loaded.exclude == ["!.env"]
    assert problems == []


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
