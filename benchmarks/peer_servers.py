"""Peer language servers that `replay.py` measures beside lsp-spark, in the same run.

The latency issue measured two peers on this machine with their debounce off: tabby-agent
(3.8 ms overhead) and GitHub's copilot-language-server (6.7 ms). Each is run here as an
editor would run it, pointed at the replay's loopback test server, which answers in the
peer's own API with the same oracle lsp-spark gets, and with its own waits set to zero.
`make peers` installs the pinned versions with npm (`benchmarks/peers/`). Every peer runs
under `peers/loopback_only.js`, which refuses connections to any host but loopback:
copilot-language-server fetches experiment flags from GitHub before it has a token, and
nothing of a benchmark may leave the machine.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp_spark.testing.cerebras_server import RecordedRequest, Route, tokenize

PEERS = Path(__file__).resolve().parent / "peers"
NODE_MODULES = PEERS / "node_modules"
LOOPBACK_ONLY = PEERS / "loopback_only.js"

Continuation = Callable[[str, bool], str]
"""The oracle: what follows the text before the cursor (one line when the flag is set)."""


@dataclass(frozen=True, slots=True)
class Peer:
    """How to start a peer's server, speak to it, and serve its API."""

    name: str
    """Its npm package, which `benchmarks/peers/package.json` pins."""
    script: str
    """Its server, inside the package."""
    arguments: tuple[str, ...]
    request: str
    """Its ghost-text request: inline completion, or completion items where that is all
    it offers."""
    initialization: dict[str, Any]
    settings: dict[str, Any] | None
    """Sent as `workspace/didChangeConfiguration` once initialized."""
    upstream: Callable[[Continuation], dict[str, Any]]
    """The test server's knobs for its API."""
    environment: Callable[[Path, str], dict[str, str]]
    """Its variables, given a home folder of its own and the test server's address."""
    node: Callable[[], str | None]

    @property
    def package(self) -> Path:
        return NODE_MODULES / self.name

    def version(self) -> str | None:
        try:
            manifest = json.loads((self.package / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return str(manifest.get("version"))

    def command(self) -> tuple[str, ...]:
        server = str(self.package / self.script)
        return (self.node() or "node", str(LOOPBACK_ONLY), server, *self.arguments)

    def missing(self) -> str | None:
        """Why it cannot run here, or None."""
        if self.node() is None:
            return f"{self.name}: Node.js is not installed"
        if not (self.package / self.script).exists():
            return f"{self.name}: not installed (run `make peers`)"
        return None


class TabbyCompletions:
    """Tabby's `/v1/completions`, answered whole. Its requests carry no stop sequence, so a
    cursor after code on its line gets the rest of that line, as lsp-spark's single-line
    requests do."""

    def __init__(self, continuation: Continuation) -> None:
        self.continuation = continuation

    def __call__(self, record: RecordedRequest) -> dict[str, Any]:
        prefix = str(record.body["segments"]["prefix"])
        reply = self.continuation(prefix, bool(prefix.rsplit("\n", 1)[-1].strip()))
        record.reply, record.tokens_sent, record.finished = reply, len(tokenize(reply)), True
        return {"id": f"cmpl-{record.received_at}", "choices": [{"index": 0, "text": reply}]}


def tabby_health(_: RecordedRequest) -> dict[str, Any]:
    return {
        "model": "loopback",
        "device": "cpu",
        "arch": platform.machine(),
        "cpu_info": "loopback",
        "cpu_count": 2,
        "cuda_devices": [],
        "version": {"git_describe": "v0.30.0"},
    }


def tabby_settings(_: RecordedRequest) -> dict[str, Any]:
    return {"disable_client_side_telemetry": True}


def nothing(_: RecordedRequest) -> dict[str, Any]:
    return {}


def tabby_upstream(continuation: Continuation) -> dict[str, Any]:
    routes: dict[tuple[str, str], Route] = {
        ("GET", "/v1/health"): tabby_health,
        ("GET", "/v1beta/server_setting"): tabby_settings,
        ("POST", "/v1/events"): nothing,
        ("POST", "/v1/completions"): TabbyCompletions(continuation),
    }
    return {"routes": routes}


def tabby_environment(home: Path, base_url: str) -> dict[str, str]:
    """Its config file points it at the test server, with its debounce off and no usage
    reports."""
    config = home / ".tabby-client" / "agent" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[server]\nendpoint = "{base_url}"\ntoken = "loopback"\n\n'
        '[completion.debounce]\nmode = "fixed"\ninterval = 0\n\n'
        "[anonymousUsageTracking]\ndisable = true\n",
        encoding="utf-8",
    )
    return {"HOME": str(home)}


def system_node() -> str | None:
    return shutil.which("node")


TABBY = Peer(
    name="tabby-agent",
    script="dist/cli.js",
    arguments=("--lsp", "--stdio"),
    request=types.TEXT_DOCUMENT_COMPLETION,
    initialization={},
    settings=None,
    upstream=tabby_upstream,
    environment=tabby_environment,
    node=system_node,
)
"""Its language server (`--lsp`) answers `textDocument/completion` only."""


COPILOT_EXPIRES = 4_102_444_800
COPILOT_TOKEN = f"tid=loopback;exp={COPILOT_EXPIRES};sku=copilot_for_business_seat;8kp=1:loopback"
"""The Copilot token the test server hands out, and so the key it then asks for."""
COPILOT_MODEL = "gpt-41-copilot"
"""The completion model 1.539.0 picks when the model list is empty."""


def copilot_endpoints(record: RecordedRequest) -> dict[str, str]:
    """Every Copilot endpoint on the test server: one left out would be GitHub's."""
    base = f"http://{record.headers['host']}"
    return {name: base for name in ("api", "proxy", "telemetry", "origin-tracker")}


def copilot_token(record: RecordedRequest) -> dict[str, Any]:
    return {
        "token": COPILOT_TOKEN,
        "expires_at": COPILOT_EXPIRES,
        "refresh_in": 1500,
        "endpoints": copilot_endpoints(record),
        "sku": "copilot_for_business_seat",
        "telemetry": "disabled",
        "individual": True,
    }


def copilot_user(record: RecordedRequest) -> dict[str, Any]:
    return {
        "login": "loopback",
        "copilot_plan": "business",
        "access_type_sku": "copilot_for_business_seat",
        "chat_enabled": False,
        "endpoints": copilot_endpoints(record),
    }


def copilot_flags(_: RecordedRequest) -> dict[str, Any]:
    """Experiment flags, none set (it fails every completion without this shape)."""
    return {"Configs": [{"Id": "vscode", "Parameters": {}}], "AssignmentContext": ""}


def copilot_models(_: RecordedRequest) -> dict[str, Any]:
    return {"data": [], "object": "list"}


def copilot_upstream(_: Continuation) -> dict[str, Any]:
    """Its completions are OpenAI text completions, streamed, which the test server speaks:
    the oracle reads their prompt like lsp-spark's. Its API client rejects any answer
    without GitHub's request id header."""
    routes: dict[tuple[str, str], Route] = {
        ("GET", "/copilot_internal/v2/token"): copilot_token,
        ("GET", "/copilot_internal/user"): copilot_user,
        ("GET", "/telemetry"): copilot_flags,
        ("GET", "/models"): copilot_models,
    }
    return {
        "routes": routes,
        "text_paths": {f"/v1/engines/{COPILOT_MODEL}/completions": COPILOT_MODEL},
        "response_headers": {"x-github-request-id": "loopback"},
        "api_key": COPILOT_TOKEN,
    }


def copilot_environment(home: Path, base_url: str) -> dict[str, str]:
    """A GitHub token and API address from the environment (its own way to be pointed at
    a server), and its bundled Node.js 22 run as plain Node (it needs 22.13 or later)."""
    for folder in (".config", ".local/state", ".cache"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "GH_COPILOT_TOKEN": "gho_loopback",
        "GH_COPILOT_API_URL": f"{base_url}/",
        "GH_COPILOT_SERVER_URL": f"{base_url}/",
        "PKG_EXECPATH": "PKG_INVOKE_NODEJS",
    }


def copilot_node() -> str | None:
    """The Node.js inside its platform package, if that is installed."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    package = NODE_MODULES / "@github" / f"copilot-language-server-{sys.platform}-{arch}"
    binary = package / "copilot-language-server"
    return str(binary) if binary.exists() else None


COPILOT = Peer(
    name="@github/copilot-language-server",
    script="dist/language-server.js",
    arguments=("--stdio",),
    request=types.TEXT_DOCUMENT_INLINE_COMPLETION,
    initialization={
        "editorInfo": {"name": "lsp-spark-replay", "version": "1"},
        "editorPluginInfo": {"name": "lsp-spark-replay", "version": "1"},
    },
    settings={
        "telemetry": {"telemetryLevel": "off"},
        "github": {"copilot": {"completionsDelay": 0, "completionsDebounce": 0}},
    },
    upstream=copilot_upstream,
    environment=copilot_environment,
    node=copilot_node,
)
"""Its `completionsDelay` (200 ms by default: a wait before showing a suggestion that came
from the network) is its debounce in effect; it is set to zero."""
