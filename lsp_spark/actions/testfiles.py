"""Where the tests of a source file live, by each language's convention."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from lsp_spark.languages import PROFILES, TestNaming, profile_for

TEST_LANGUAGES = frozenset(profile.id for profile in PROFILES if profile.test_naming is not None)


@dataclass(frozen=True, slots=True)
class TestFile:
    path: Path
    module: str | None = None
    """How the tests import the code (a Python module path), when the language needs it."""
    same_file: bool = False
    """The tests go into the source file itself (Rust's `#[cfg(test)]` modules)."""


def test_file_for(
    source: Path,
    language: str,
    root: Path | None = None,
    exists: Callable[[Path], bool] = Path.exists,
) -> TestFile | None:
    """The test file for `source`: an existing one by the usual names, else where a new one
    goes. None for a test file itself and for languages without a convention (the
    language's profile names its `TestNaming`)."""
    naming = profile_for(language).test_naming
    if naming is None:
        return None
    if naming is TestNaming.PYTHON:
        return _python(source, root, exists)
    if naming is TestNaming.JAVASCRIPT:
        return _javascript(source, exists)
    if naming is TestNaming.GO:
        return (
            None
            if source.stem.endswith("_test")
            else TestFile(source.with_name(f"{source.stem}_test.go"))
        )
    if naming is TestNaming.RUST:
        return TestFile(source, same_file=True)
    assert_never(naming)


def _python(source: Path, root: Path | None, exists: Callable[[Path], bool]) -> TestFile | None:
    stem = source.stem
    if stem.startswith("test_") or stem.endswith("_test") or stem == "conftest":
        return None
    name = f"test_{stem}.py"
    folders = [folder for folder in (root, source.parent) if folder is not None]
    candidates = [folder / "tests" / name for folder in folders] + [source.parent / name]
    found = next((path for path in candidates if exists(path)), None)
    if found is None:
        found = next(
            (folder / "tests" / name for folder in folders if exists(folder / "tests")),
            source.parent / name,
        )
    return TestFile(found, module=_module(source, root))


def _module(source: Path, root: Path | None) -> str:
    try:
        relative = source.with_suffix("").relative_to(root) if root else None
    except ValueError:
        relative = None
    parts = relative.parts if relative else (source.stem,)
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts)


def _javascript(source: Path, exists: Callable[[Path], bool]) -> TestFile | None:
    name, suffix = source.name.split(".", 1)[0], "".join(source.suffixes[-1:])
    if any(marker in source.suffixes for marker in (".test", ".spec")):
        return None
    candidates = [
        source.with_name(f"{name}.test{suffix}"),
        source.with_name(f"{name}.spec{suffix}"),
        source.parent / "__tests__" / f"{name}.test{suffix}",
    ]
    return TestFile(next((path for path in candidates if exists(path)), candidates[0]))
