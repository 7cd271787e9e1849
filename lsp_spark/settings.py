"""One typed, fully defaulted settings model, and the layers it is read from.

Precedence, lowest first: defaults, the TOML file in the user's config dir,
environment variables, `initializationOptions`, `workspace/didChangeConfiguration`.
A bad value never stops the server: it is dropped, the rest applies, and the
caller gets the problems to show the user once.

The config file and the environment are the user's own; what the editor passes can come
from a workspace someone else wrote. So the editor's layers may not send a key from the
user's own configuration to another host, nor lower privacy (`guard`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import (
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel

BackendName = Literal["auto", "cerebras", "openai", "local"]
ContextSource = Literal["scopes", "imports", "definitions", "open_files", "recent_edits"]
CONTEXT_SOURCES: tuple[ContextSource, ...] = (
    "scopes",
    "imports",
    "definitions",
    "open_files",
    "recent_edits",
)

CEREBRAS_BASE_URL = "https://api.cerebras.ai"
OPENAI_COMPATIBLE_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_CEREBRAS_MODEL = "gpt-oss-120b"
SETTINGS_SECTION = "lspSpark"
DEFAULT_PORTS = {"http": 80, "https": 443}


class Settings(BaseModel):
    """Everything a user can configure; every field has a working default."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=to_camel, serialization_alias=to_camel),
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    enable: bool = True
    backend: BackendName = "auto"
    api_key: SecretStr | None = None
    base_url: str | None = Field(
        default=None, description="Defaults to Cerebras' API or a local OpenAI-compatible server."
    )
    model: str | None = Field(
        default=None, description="Completion model; defaults per backend (Cerebras: gpt-oss-120b)."
    )
    reasoning_effort: Literal["none", "low", "medium", "high"] | None = "low"
    openai_mode: Literal["chat", "fim", "suffix", "infill"] = Field(
        default="chat",
        description="chat: /v1/chat/completions; fim: /v1/completions with `fimTemplate`'s "
        "tokens; suffix: /v1/completions with a `suffix`, the server applying the model's "
        "own FIM template (Ollama, DeepSeek); infill: llama.cpp's /infill, with related code "
        "as `input_extra` and prompt caching.",
    )
    fim_template: Literal["qwen", "starcoder", "codellama", "deepseek"] = "qwen"
    local_model_path: str | None = None
    local_threads: int | None = Field(default=None, ge=1, le=64)
    max_tokens: int = Field(default=96, ge=1, le=4096)
    max_lines: int | None = Field(
        default=None,
        ge=1,
        le=200,
        description="Longest multi-line suggestion; defaults per backend.",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    alternatives: int = Field(
        default=2,
        ge=0,
        le=5,
        description="Other suggestions sampled when ghost text is asked for explicitly "
        "(the cycle keys), beside the usual one.",
    )
    alternatives_temperature: float = Field(default=0.8, ge=0.0, le=2.0)
    debounce_ms: int | None = Field(
        default=None, ge=0, le=2000, description="None: adapt to the typing rhythm (at most 20 ms)."
    )
    cache: bool = True
    prefetch: bool = True
    supersede: bool = True
    completion_deadline_ms: int = Field(default=350, ge=10, le=10000)
    concurrent_requests: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="Requests the backend serves at once; the rest queue, ghost text first. "
        "None: per backend (Cerebras 8; an OpenAI-compatible server and the embedded model 1).",
    )
    request_timeout_ms: int = Field(
        default=8000, ge=100, le=120000, description="Bounds a whole completion request."
    )
    context_tokens: int | None = Field(
        default=None, ge=64, le=100000, description="Prompt budget; defaults per backend."
    )
    context_sources: list[ContextSource] = Field(default_factory=lambda: list(CONTEXT_SOURCES))
    suggest_in_comments: bool = True
    suggest_in_strings: bool = True
    tab_size: int | None = Field(default=None, ge=1, le=16)
    insert_spaces: bool | None = None
    disabled_filters: list[str] = Field(
        default_factory=list, description="Post-processing filters to skip, by name."
    )
    log_level: Literal["error", "warning", "info", "debug"] = "info"
    actions_model: str | None = Field(
        default=None,
        description="Model for code actions (edits, reviews); defaults to `model`. A deeper "
        "model for harder work, a fast one for ghost text.",
    )
    actions_max_tokens: int = Field(default=4096, ge=64, le=32768)
    next_edit: bool | None = Field(
        default=None,
        description="Predict the next edit after each edit. None: on for hosted backends, "
        "off for the embedded model (too small to predict edits well).",
    )
    next_edit_region_lines: int = Field(default=40, ge=3, le=400)
    next_edit_debounce_ms: int = Field(default=50, ge=0, le=5000)
    next_edit_max_tokens: int = Field(default=512, ge=16, le=8192)
    actions_timeout_ms: int = Field(
        default=120000,
        ge=1000,
        le=600000,
        description="Bounds a whole code action or review answer (a long edit streams for "
        "longer than a completion may take).",
    )
    security_review: bool = Field(
        default=False, description="Review changed functions on save or pause for security flaws."
    )
    security_review_delay_ms: int = Field(default=1500, ge=100, le=60000)
    exclude: list[str] = Field(
        default_factory=list,
        description="Globs of files that get no suggestions and never leave the machine, "
        "added to the built-in list (.env*, *.pem, *.key, id_rsa*, credentials...).",
    )
    default_excludes: bool = True
    redact_secrets: bool = Field(
        default=True, description="Replace secrets in prompts before they leave the machine."
    )

    @field_validator("context_sources", "disabled_filters", "exclude", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """Lists from environment variables arrive as `a,b,c`."""
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    def redacted(self) -> dict[str, Any]:
        """Settings as shown to people: the key is never printed, only whether it is set."""
        shown = self.model_dump(by_alias=True)
        shown["apiKey"] = "set" if self.api_key else "not set"
        return shown


ENVIRONMENT_VARIABLES: dict[str, str] = {
    "CEREBRAS_API_KEY": "api_key",
    "CEREBRAS_BASE_URL": "base_url",
    **{f"LSP_SPARK_{name.upper()}": name for name in Settings.model_fields},
}


def config_file_path() -> Path:
    return Path(platformdirs.user_config_dir("lsp-spark")) / "config.toml"


def from_file(path: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """The config file's settings; a file that cannot be read or parsed is reported with its
    path and the line and column at fault, and left out whole (the defaults apply)."""
    path = path or config_file_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, []
    except OSError as error:
        return {}, [f"{path}: cannot be read ({error.strerror or error}); defaults apply"]
    try:
        return tomllib.loads(data.decode("utf-8-sig")), []
    except UnicodeDecodeError as error:
        line, column = _line_and_column(data, error.start)
        return {}, [
            f"{path}: not UTF-8 at line {line}, column {column} (byte {data[error.start]:#04x}); "
            "save it as UTF-8. Defaults apply"
        ]
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        # tomllib's message ends with the place: "(at line 3, column 9)".
        return {}, [f"{path}: {error or 'nested too deeply'}; defaults apply"]


def _line_and_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters of the text before it) of a byte offset."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    before = data[line_start:offset].decode("utf-8", errors="replace")
    return data.count(b"\n", 0, offset) + 1, len(before) + 1


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    return {
        field: environ[variable]
        for variable, field in ENVIRONMENT_VARIABLES.items()
        if environ.get(variable)
    }


def _section(options: Any) -> dict[str, Any]:
    """Accept both `{"lspSpark": {...}}` (VS Code style) and the bare mapping."""
    if not isinstance(options, Mapping):
        return {}
    inner = options.get(SETTINGS_SECTION)
    return dict(inner) if isinstance(inner, Mapping) else dict(options)


def client_section(options: Any) -> dict[str, Any]:
    """Our part of what an editor sends. Without an `lspSpark` key the payload counts as
    bare settings only if it names one of ours: eglot, for one, sends every server's
    sections (`{"pylsp": {...}}`), which are not ours to complain about."""
    section = _section(options)
    if isinstance(options, Mapping) and isinstance(options.get(SETTINGS_SECTION), Mapping):
        return section
    if any(_canonical(str(key)) in Settings.model_fields for key in section):
        return section
    return {}


def _canonical(key: str) -> str:
    for name, info in Settings.model_fields.items():
        if key in (name, to_camel(name)) or (info.alias and key == info.alias):
            return name
    return key


def merge(*layers: Any) -> tuple[Settings, list[str]]:
    """Combine layers into Settings, dropping (and reporting) each bad entry."""
    combined: dict[str, Any] = {}
    for layer in layers:
        for key, value in _section(layer).items():
            combined[_canonical(str(key))] = value
    problems: list[str] = []
    while True:
        try:
            return Settings.model_validate(combined), problems
        except ValidationError as error:
            dropped = False
            for detail in error.errors():
                key = str(detail["loc"][0]) if detail["loc"] else ""
                if key in combined:
                    reason = (
                        "unknown setting" if detail["type"] == "extra_forbidden" else detail["msg"]
                    )
                    problems.append(f"{to_camel(key)}: {reason}")
                    del combined[key]
                    dropped = True
            if not dropped:
                return Settings(), [*problems, str(error)]


def load(
    initialization_options: Any = None,
    client_settings: Any = None,
    environ: Mapping[str, str] | None = None,
    config_file: Path | None = None,
) -> tuple[Settings, list[str]]:
    """Settings from every layer, guarded against what the editor's layers may not do; the
    problems are the bad entries dropped and the editor's settings held back, each once."""
    environ = os.environ if environ is None else environ
    file_layer, file_problems = from_file(config_file)
    own_layers = (file_layer, from_environment(environ))
    editor_layers = (client_section(initialization_options), client_section(client_settings))
    settings, problems = merge(*own_layers, *editor_layers)
    own, _ = merge(*own_layers)
    editor_keys = {_canonical(str(key)) for layer in editor_layers for key in layer}
    guarded, held_back = guard(settings, own, editor_keys, environ, config_file)
    return guarded, file_problems + problems + held_back


def origin(url: str) -> str:
    """Where a request goes, as compared and shown: scheme, host and port, without a path
    or any credentials in the URL."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return f"{scheme}://{parts.hostname or ''}" + (f":{port}" if port else "")


def key_destination(settings: Settings) -> str | None:
    """The base URL the key would go to, or None when no key leaves the machine."""
    if settings.api_key is None:
        return None
    backend = "cerebras" if settings.backend == "auto" else settings.backend
    if backend == "local":
        return None
    default = CEREBRAS_BASE_URL if backend == "cerebras" else OPENAI_COMPATIBLE_BASE_URL
    return settings.base_url or default


def key_hosts(own: Settings, environ: Mapping[str, str]) -> set[str]:
    """Where a key from the user's own configuration may go: its provider's host (Cerebras'
    API for CEREBRAS_API_KEY, or for a key the user's own configuration gives Cerebras),
    and a base URL the user's own configuration names."""
    hosts: set[str] = set()
    if own.base_url:
        hosts.add(origin(own.base_url))
    key = own.api_key.get_secret_value() if own.api_key else None
    cerebras_key = key is not None and environ.get("CEREBRAS_API_KEY") == key
    if cerebras_key or own.backend in ("auto", "cerebras"):
        hosts.add(origin(CEREBRAS_BASE_URL))
    return hosts


def guard(
    settings: Settings,
    own: Settings,
    editor_keys: Iterable[str],
    environ: Mapping[str, str],
    config_file: Path | None = None,
) -> tuple[Settings, list[str]]:
    """`settings` without what the editor's layers may not do, and one problem per thing
    held back. `own` is the user's own configuration (config file and environment) alone.

    A key the editor passes goes where the editor's settings point: the user typed both
    there. A key from the user's own configuration goes only to a host named together with
    it (`key_hosts`); elsewhere the request goes without it, to the same backend, so an
    editor's keyless local server keeps working. Privacy (redaction, the default excludes,
    `!` excludes taking files back, another model file) is lowered only by the user's own
    configuration; the editor's other `exclude` globs add to the user's."""
    changed = {
        name
        for name in editor_keys
        if name in Settings.model_fields and getattr(settings, name) != getattr(own, name)
    }
    where = f"set it in {config_file or config_file_path()} or the environment"
    update: dict[str, Any] = {}
    held_back: list[str] = []
    for name in ("redact_secrets", "default_excludes"):
        if name in changed and getattr(settings, name) is False:
            update[name] = getattr(own, name)
            held_back.append(
                f"{to_camel(name)}: false is taken only from your own configuration "
                f"(it lets more leave the machine); {where} (LSP_SPARK_{name.upper()})"
            )
    if "local_model_path" in changed:
        update["local_model_path"] = own.local_model_path
        held_back.append(
            "localModelPath: another model file is taken only from your own configuration; "
            f"{where} (LSP_SPARK_LOCAL_MODEL_PATH)"
        )
    if "exclude" in changed:
        added = [glob for glob in settings.exclude if glob not in own.exclude]
        refused = [glob for glob in added if glob.strip().startswith("!")]
        update["exclude"] = own.exclude + [glob for glob in added if glob not in refused]
        if refused:
            held_back.append(
                f"exclude: {', '.join(refused)} would take excluded files back, which only "
                f"your own configuration may do; {where} (LSP_SPARK_EXCLUDE)"
            )
    destination = key_destination(settings)
    if destination is not None and "api_key" not in changed:
        address = origin(destination)
        if address not in key_hosts(own, environ):
            update["api_key"] = None
            update["backend"] = "cerebras" if settings.backend == "auto" else settings.backend
            held_back.append(
                f"apiKey: your key is not sent to {address}, which your "
                "own configuration does not name, so requests go there without it; to send "
                f"it there, set baseUrl in {config_file or config_file_path()} or "
                "LSP_SPARK_BASE_URL"
            )
    return (settings.model_copy(update=update) if update else settings), held_back
