"""What an action is asked to do, as it travels in a code action's `data` or a command."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability

import lsp_spark.actions.catalog as catalog

CLIENTS_BLOCKING_ON_RESOLVE = frozenset({"helix"})
"""Clients (by `clientInfo.name`) that send `codeAction/resolve` from their UI thread and
wait there for the answer (Helix: `helix_lsp::block_on` in helix-term's code action menu),
handling nothing the server sends meanwhile."""
Position = tuple[int, int]
"""An LSP position (line, character) in the negotiated encoding."""


@dataclass(frozen=True, slots=True)
class ActionRequest:
    uri: str
    action: str
    """An id from `catalog`: "fix", "error_handling", … or "instruction"."""
    start: Position
    end: Position
    """The selection, or the cursor (`targets.is_cursor`) whose enclosing scope is meant."""
    instruction: str = ""
    diagnostic: Mapping[str, Any] | None = None
    """For "fix": the diagnostic's message, source, code and line."""

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "uri": self.uri,
            "action": self.action,
            "range": _range(self.start, self.end),
        }
        if self.instruction:
            data["instruction"] = self.instruction
        if self.diagnostic is not None:
            data["diagnostic"] = dict(self.diagnostic)
        return data

    @classmethod
    def from_data(cls, data: Any) -> ActionRequest | None:
        """The request a code action's data (or `lspSpark.applyAction`'s argument) carries;
        None for one that names no action of ours."""
        if not isinstance(data, Mapping) or data.get("action") not in catalog.BY_ID:
            return None
        found = _uri_and_range(data)
        if found is None:
            return None
        uri, start, end = found
        diagnostic = data.get("diagnostic")
        return cls(
            uri,
            data["action"],
            start,
            end,
            instruction=str(data.get("instruction") or ""),
            diagnostic=diagnostic if isinstance(diagnostic, Mapping) else None,
        )

    @classmethod
    def from_instruction(cls, argument: Any) -> ActionRequest | None:
        """`lspSpark.editWithInstruction`'s one argument: `{uri, range, instruction}`."""
        if not isinstance(argument, Mapping):
            return None
        instruction = argument.get("instruction")
        found = _uri_and_range(argument)
        if found is None or not isinstance(instruction, str) or not instruction.strip():
            return None
        uri, start, end = found
        return cls(uri, "instruction", start, end, instruction=instruction.strip())


def diagnostic_data(diagnostic: types.Diagnostic) -> dict[str, Any]:
    code = diagnostic.code
    return {
        "message": diagnostic.message,
        "source": diagnostic.source or "",
        "code": "" if code is None else str(code),
        "line": diagnostic.range.start.line,
    }


@dataclass(frozen=True, slots=True)
class ClientSupport:
    """What the editor can take, read once from its capabilities."""

    literals: bool = True
    """It takes CodeAction objects; a very old client takes only Commands."""
    resolve: bool = False
    """It resolves a code action's edit lazily (`codeAction/resolve`)."""
    document_changes: bool = False
    create_files: bool = False
    progress: bool = False
    """It shows work done progress the server creates (`window/workDoneProgress/create`)."""
    blocks_on_resolve: bool = False
    """It answers none of the server's requests while it waits for a `codeAction/resolve`,
    so progress created then would only begin once the work is over."""

    @classmethod
    def of(
        cls, capabilities: types.ClientCapabilities, client: types.ClientInfo | None = None
    ) -> ClientSupport:
        resolvable = get_capability(
            capabilities, "text_document.code_action.resolve_support.properties", []
        )
        kinds = get_capability(capabilities, "workspace.workspace_edit.resource_operations", [])
        return cls(
            literals=get_capability(
                capabilities, "text_document.code_action.code_action_literal_support"
            )
            is not None,
            resolve="edit" in resolvable
            and bool(get_capability(capabilities, "text_document.code_action.data_support")),
            document_changes=bool(
                get_capability(capabilities, "workspace.workspace_edit.document_changes")
            ),
            create_files=types.ResourceOperationKind.Create in kinds,
            progress=bool(get_capability(capabilities, "window.work_done_progress")),
            blocks_on_resolve=client is not None
            and client.name.lower() in CLIENTS_BLOCKING_ON_RESOLVE,
        )


def _range(start: Position, end: Position) -> dict[str, Any]:
    return {
        "start": {"line": start[0], "character": start[1]},
        "end": {"line": end[0], "character": end[1]},
    }


def _uri_and_range(data: Mapping[str, Any]) -> tuple[str, Position, Position] | None:
    uri, bounds = data.get("uri"), data.get("range")
    if not isinstance(uri, str) or not isinstance(bounds, Mapping):
        return None
    start, end = _position(bounds.get("start")), _position(bounds.get("end"))
    if start is None or end is None:
        return None
    return uri, start, end


def _position(value: Any) -> Position | None:
    if not isinstance(value, Mapping):
        return None
    line, character = value.get("line"), value.get("character")
    if not isinstance(line, int) or not isinstance(character, int):
        return None
    if isinstance(line, bool) or isinstance(character, bool):
        return None
    return line, character
