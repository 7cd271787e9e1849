"""Privacy: files that never reach a model, and secrets cut out of every prompt."""

from lsp_spark.privacy.exclusion import DEFAULT_EXCLUDED_GLOBS, Exclusions, document_path
from lsp_spark.privacy.redaction import (
    PLACEHOLDER,
    Redacted,
    RedactedParts,
    RedactionTally,
    contains_placeholder,
    placeholder,
    redact,
    redact_parts,
    redact_request,
)

__all__ = [
    "DEFAULT_EXCLUDED_GLOBS",
    "PLACEHOLDER",
    "Exclusions",
    "Redacted",
    "RedactedParts",
    "RedactionTally",
    "contains_placeholder",
    "document_path",
    "placeholder",
    "redact",
    "redact_parts",
    "redact_request",
]
