"""Backend selection: settings in, one ready backend out."""

from __future__ import annotations

from lsp_spark.backends.base import Backend, BackendError, CompletionRequest, FailureKind
from lsp_spark.settings import (
    CEREBRAS_BASE_URL,
    DEFAULT_CEREBRAS_MODEL,
    OPENAI_COMPATIBLE_BASE_URL,
    Settings,
)

__all__ = ["Backend", "BackendError", "CompletionRequest", "FailureKind", "create_backend"]

HOW_TO_CONFIGURE = (
    "lsp-spark has no model to ask: set CEREBRAS_API_KEY for Cerebras, set backend to "
    "'openai' with a baseUrl for an OpenAI-compatible server, or install the embedded model "
    "with `pip install 'lsp-spark[local]'`."
)


def _root_url(url: str) -> str:
    """Accept both `http://host:port` and `http://host:port/v1`; paths add /v1 themselves."""
    url = url.rstrip("/")
    return url.removesuffix("/v1")


def resolve_backend_name(settings: Settings) -> str:
    if settings.backend != "auto":
        return settings.backend
    if settings.api_key:
        return "cerebras"
    from lsp_spark.backends.local import local_backend_available

    if settings.local_model_path or local_backend_available():
        return "local"
    raise BackendError(FailureKind.MISCONFIGURED, HOW_TO_CONFIGURE)


def create_backend(settings: Settings) -> Backend:
    name = resolve_backend_name(settings)
    timeout = settings.request_timeout_ms / 1000
    actions_timeout = settings.actions_timeout_ms / 1000
    if name == "cerebras":
        # Without a key only another base URL can answer (a gateway that adds its own, or
        # one the key was held back from: see settings.guard); Cerebras' API cannot.
        if not settings.api_key and not settings.base_url:
            raise BackendError(
                FailureKind.MISCONFIGURED,
                "The cerebras backend needs an API key: set CEREBRAS_API_KEY.",
            )
        from lsp_spark.backends.cerebras import CerebrasBackend

        return CerebrasBackend(
            api_key=settings.api_key.get_secret_value() if settings.api_key else None,
            model=settings.model or DEFAULT_CEREBRAS_MODEL,
            base_url=_root_url(settings.base_url or CEREBRAS_BASE_URL),
            reasoning_effort=settings.reasoning_effort,
            timeout=timeout,
            actions_timeout=actions_timeout,
        )
    if name == "openai":
        from lsp_spark.backends.openai_compat import OpenAICompatibleBackend

        return OpenAICompatibleBackend(
            base_url=_root_url(settings.base_url or OPENAI_COMPATIBLE_BASE_URL),
            model=settings.model or "default",
            api_key=settings.api_key.get_secret_value() if settings.api_key else None,
            mode=settings.openai_mode,
            fim_template=settings.fim_template,
            timeout=timeout,
            actions_timeout=actions_timeout,
        )
    from lsp_spark.backends.local import LocalBackend

    return LocalBackend(settings.local_model_path, n_threads=settings.local_threads)
