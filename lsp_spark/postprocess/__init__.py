"""Post-processing: turn a model's streamed text into a suggestion, and stop it early.

The filters (`filters.py`) are registered once, as stages the stream runs line by line
(`stage.py`, `stream.py`); cleaning a whole reply is the stream run to its end.
"""

from __future__ import annotations

from lsp_spark.postprocess.context import CursorContext
from lsp_spark.postprocess.stream import SuggestionStream, clean

__all__ = ["CursorContext", "SuggestionStream", "clean"]
