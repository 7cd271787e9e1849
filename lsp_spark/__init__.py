"""lsp-spark: AI ghost text and quick edits for any editor, over the Language Server Protocol."""

__version__ = "0.1.0"
