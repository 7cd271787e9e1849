"""Code actions (quick, minimal edits by the model) and the opt-in security review."""

from lsp_spark.actions.catalog import QUICKFIX, REWRITE, TESTS_KIND
from lsp_spark.actions.progress import Reporter, Silent, WorkDone
from lsp_spark.actions.requests import ActionRequest, ClientSupport
from lsp_spark.actions.review import SecurityReview
from lsp_spark.actions.service import APPLY_COMMAND, EDIT_COMMAND, ActionService, Outcome

__all__ = [
    "APPLY_COMMAND",
    "EDIT_COMMAND",
    "QUICKFIX",
    "REWRITE",
    "TESTS_KIND",
    "ActionRequest",
    "ActionService",
    "ClientSupport",
    "Outcome",
    "Reporter",
    "SecurityReview",
    "Silent",
    "WorkDone",
]
