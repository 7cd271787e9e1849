"""The actions on offer, and what each asks the model to do."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_spark.languages import profile_for
from lsp_spark.prompts.actions import ACTION_INSTRUCTIONS

QUICKFIX = "quickfix"
REWRITE = "refactor.rewrite"
TESTS_KIND = "refactor.tests"
OWN_SOURCE = "lsp-spark"


@dataclass(frozen=True, slots=True)
class ActionKind:
    id: str
    title: str
    kind: str


FIX = ActionKind("fix", "Fix", QUICKFIX)
INSTRUCTION = ActionKind("instruction", "Edit with instruction", REWRITE)
TESTS = ActionKind("tests", "Write tests for this function", TESTS_KIND)
REWRITES = (
    ActionKind("error_handling", "Add error handling", REWRITE),
    ActionKind("document", "Add docstring/comments", REWRITE),
    ActionKind("annotate", "Add type annotations", REWRITE),
    ActionKind("simplify", "Simplify", REWRITE),
)
BY_ID = {action.id: action for action in (FIX, INSTRUCTION, TESTS, *REWRITES)}


def rewrites_for(language: str) -> list[ActionKind]:
    typed = profile_for(language).optional_types
    return [action for action in REWRITES if action.id != "annotate" or typed]


def instruction_for(action: str, language: str, name: str | None, diagnostic: str = "") -> str:
    template = ACTION_INSTRUCTIONS[action]
    return template.format(language=language, name=name or "this function", diagnostic=diagnostic)


def fix_title(message: str, source: str | None) -> str:
    """ "Fix: <first line of the message>", "Fix with lsp-spark: …" for our own findings."""
    first = message.strip().split("\n", 1)[0]
    if len(first) > 80:
        first = first[:79] + "…"
    return f"Fix with lsp-spark: {first}" if source == OWN_SOURCE else f"Fix: {first}"


def wanted(kind: str, only: list[str] | None) -> bool:
    """Whether the client's `context.only` filter lets an action of `kind` through."""
    return not only or any(kind == base or kind.startswith(base + ".") for base in only)
