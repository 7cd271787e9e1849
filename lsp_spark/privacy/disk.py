"""Files the server reads or edits by their path, rather than text the editor sent.

The editor sends the text of the documents it opens. A path the server picks itself (the
test file of "Write tests for this function") is whatever the repository put there, and a
repository can ship `tests/test_util.py -> ~/.aws/credentials`. Such a path is read, or
named in an edit, only when all of these hold:

- it lies inside one of the workspace folders;
- no symbolic link lies between that folder and the file (a link can name any file, and an
  editor applying an edit writes through it);
- neither its path nor the path links resolve to is excluded, by the same rules as open
  documents;
- it is a regular file (opening a FIFO would block) of at most `MAX_READ_BYTES`, in UTF-8.

The caller says what the workspace folders are; with none at all, the folder of the
document the action runs on stands in (see `ActionService`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

MAX_READ_BYTES = 1_000_000
"""A larger file is not read: it would not fit a prompt, and reading it stalls the loop."""

_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)
"""A link swapped in after the check is not followed, and a FIFO does not block the open."""


class OffLimits(Exception):
    """The file may be neither read nor edited; the message says why, for the user."""


def containing_folder(path: Path, folders: Sequence[Path]) -> Path | None:
    """The innermost of `folders` that holds `path`, comparing absolute, normalised paths."""
    key = _key(path)
    inside = [
        folder
        for folder in folders
        if key == (folder_key := _key(folder)) or key.startswith(folder_key.rstrip(os.sep) + os.sep)
    ]
    return max(inside, key=lambda folder: len(_key(folder)), default=None)


def check(path: Path, folders: Sequence[Path], excluded: Callable[[str], bool]) -> None:
    """Raise `OffLimits` unless `path` is inside a folder, reached through no symbolic
    link, and excluded neither as named nor as resolved."""
    named = Path(os.path.abspath(path))
    folder = containing_folder(named, folders)
    if folder is None:
        raise OffLimits("it is outside the workspace folders")
    if excluded(str(named)):
        raise OffLimits("it is excluded")
    folder = Path(os.path.abspath(folder))
    try:
        resolved = named.resolve()
        expected = folder.resolve() / named.relative_to(folder)
    except (OSError, RuntimeError) as failure:  # a link loop (RuntimeError before 3.13)
        raise OffLimits(f"its path cannot be resolved ({failure})") from failure
    if _key(resolved) != _key(expected):
        raise OffLimits("it is a symbolic link, or inside one")
    if excluded(str(resolved)):
        raise OffLimits("it is excluded")


def read(path: Path, limit: int = MAX_READ_BYTES) -> str | None:
    """The text of a file `check` allowed; None when it does not exist (yet)."""
    try:
        descriptor = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as failure:  # ELOOP: the last component became a link
        raise OffLimits(f"it cannot be read ({failure.strerror})") from failure
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OffLimits("it is not a regular file")
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OffLimits(f"it is over {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as failure:
        raise OffLimits("it is not UTF-8 text") from failure


def _key(path: Path) -> str:
    """How paths compare: absolute, `..` folded, case folded where the system ignores case."""
    return os.path.normcase(os.path.abspath(path))
