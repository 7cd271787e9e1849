"""The security review's answer, read leniently: JSON findings per function, known kinds only."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from lsp_spark.actions.rewrite import extract_code
from lsp_spark.prompts.actions import REVIEW_KINDS

log = logging.getLogger(__name__)

MAX_MESSAGE = 300
_SYNONYMS = {
    "sqli": "sql-injection",
    "command-injection": "shell-injection",
    "os-command-injection": "shell-injection",
    "code-injection": "shell-injection",
    "ssti": "template-injection",
    "server-side-template-injection": "template-injection",
    "directory-traversal": "path-traversal",
    "insecure-deserialization": "unsafe-deserialization",
    "deserialization": "unsafe-deserialization",
    "hardcoded-secret": "hard-coded-secret",
    "hardcoded-credentials": "hard-coded-secret",
    "hard-coded-credentials": "hard-coded-secret",
    "secret": "hard-coded-secret",
    "weak-cryptography": "weak-crypto",
    "weak-hash": "weak-crypto",
    "insecure-hash": "weak-crypto",
}


@dataclass(frozen=True, slots=True)
class Finding:
    line: int
    """1-based, within its function, so the finding stays true wherever the function moves."""
    kind: str
    message: str


def parse_findings(reply: str, functions: int) -> dict[int, list[Finding]]:
    """Findings by function number (1-based). Entries that name no known kind, function or
    line are dropped; an unreadable reply counts as no findings."""
    found: dict[int, list[Finding]] = {number: [] for number in range(1, functions + 1)}
    for entry in _entries(reply):
        finding = _finding(entry)
        number = entry.get("function", 1 if functions == 1 else None)
        if finding is not None and isinstance(number, int) and number in found:
            found[number].append(finding)
    return found


def _entries(reply: str) -> list[dict[str, Any]]:
    text = extract_code(reply) or reply
    for candidate in (text, _outermost(text, "{", "}"), _outermost(text, "[", "]")):
        if not candidate:
            continue
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        entries = parsed.get("findings") if isinstance(parsed, dict) else parsed
        if isinstance(entries, list):
            return [entry for entry in entries if isinstance(entry, dict)]
    log.warning("the security review's answer is not JSON findings: %.200r", reply)
    return []


def _outermost(text: str, opening: str, closing: str) -> str:
    start, end = text.find(opening), text.rfind(closing)
    return text[start : end + 1] if 0 <= start < end else ""


def _finding(entry: dict[str, Any]) -> Finding | None:
    kind = re.sub(r"[\s_]+", "-", str(entry.get("kind", "")).strip().lower())
    kind = _SYNONYMS.get(kind, kind)
    line = entry.get("line")
    message = " ".join(str(entry.get("message", "")).split())
    if kind not in REVIEW_KINDS or isinstance(line, bool) or not isinstance(line, int) or line < 1:
        return None
    return Finding(line, kind, message[:MAX_MESSAGE] or kind.replace("-", " "))
