"""Prompt formats: one pure function per model family."""
