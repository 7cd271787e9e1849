"""A file derived from another and kept in the user's cache (the bundled model's 8-bit copy),
trusted only while it is provably the file that was written.

The copy is made under a temporary name, flushed to disk (`fsync`) and only then renamed into
place, so a crash or a full disk never leaves half a copy under the real name. Its size and
SHA-256 are recorded beside it (`<copy>.json`, written the same way), with the size and
modification time of the source it was made from. A copy without such a record (made by an
older version), made from another source, or whose bytes no longer match, is reported once
in the log and made again.

Hashing the 8-bit SmolLM2 (144 MB) takes 0.15 s here (0.35 s on a busy machine), while the
model loads from a warm cache in 0.2-0.3 s, so it is not paid on every start: once the
copy's bytes have been checked, the record keeps the copy's stat stamp (size, modification
and change times, inode), and the bytes are hashed again only when that stamp changes. Any
write to the file, or a `touch`, changes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

RECORD_SUFFIX = ".json"
DIGEST = "sha256"

Make = Callable[[Path, Path], bool]
"""Writes the copy of its first argument into its second; False when it cannot."""


def cached_copy(source: Path, copy: Path, make: Make) -> Path | None:
    """`copy` once it holds what `make` made of `source`: as found when its record vouches
    for it, else made again. None when it cannot be made (`make` fails, or the cache is
    not writable): the caller then does without it."""
    record_path = record_of(copy)
    problem = _problem(source, copy, record_path)
    if problem is None:
        return copy
    if problem:
        log.warning("the cached copy %s %s: making it again", copy, problem)
    return _make(source, copy, record_path, make)


def record_of(copy: Path) -> Path:
    return copy.with_name(copy.name + RECORD_SUFFIX)


def discard_copy(copy: Path) -> None:
    """Remove a copy found unusable, record first, so the next start makes it again."""
    with contextlib.suppress(OSError):
        record_of(copy).unlink(missing_ok=True)
        copy.unlink(missing_ok=True)


def _stamp(path: Path) -> dict[str, int]:
    """What changes whenever the file is written to, replaced or touched."""
    status = path.stat()
    return {
        "size": status.st_size,
        "mtimeNs": status.st_mtime_ns,
        "ctimeNs": status.st_ctime_ns,
        "inode": status.st_ino,
    }


def _source_record(source: Path) -> dict[str, Any]:
    """What the copy was made from: the source's content (size and checksum), and the file
    last seen holding it. Two installs of the same weights (two virtual environments) are
    different files with the same content: one copy serves both."""
    return {"size": source.stat().st_size, DIGEST: _digest(source), "seen": _stamp(source)}


def _problem(source: Path, copy: Path, record_path: Path) -> str | None:
    """None for a sound copy; "" when there is none yet; else what is wrong with it."""
    if not copy.is_file():
        return ""
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        expected_size, expected_digest = int(record["size"]), str(record[DIGEST])
        made_from = record["source"]
    except (OSError, ValueError, TypeError, KeyError):
        return "has no readable record of its size and checksum"
    if not isinstance(made_from, dict):
        return "has no readable record of its size and checksum"
    seen = _stamp(source)
    if made_from.get("seen") != seen:
        if made_from.get("size") != seen["size"] or made_from.get(DIGEST) != _digest(source):
            return f"was made from another version of {source.name}"
        record = record | {"source": made_from | {"seen": seen}}
    stamp = _stamp(copy)
    if record.get("checked") == stamp:
        if record["source"] is not made_from:
            with contextlib.suppress(OSError):
                _write_record(record_path, record)
        return None
    if stamp["size"] != expected_size:
        return f"is damaged: it holds {stamp['size']} bytes, {expected_size} were written"
    if _digest(copy) != expected_digest:
        return f"is damaged: its {DIGEST} is not the one recorded when it was written"
    with contextlib.suppress(OSError):  # a read-only cache: checked again next time
        _write_record(record_path, record | {"checked": stamp})
    return None


def _digest(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, DIGEST).hexdigest()


def _make(source: Path, copy: Path, record_path: Path, make: Make) -> Path | None:
    staging = copy.with_name(f"{copy.name}.{os.getpid()}.{threading.get_ident()}.part")
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        record_path.unlink(missing_ok=True)
        if not make(source, staging):
            return None
        with staging.open("rb+") as written:
            os.fsync(written.fileno())
            digest = hashlib.file_digest(written, DIGEST).hexdigest()
        os.replace(staging, copy)
        record = {
            "source": _source_record(source),
            "size": copy.stat().st_size,
            DIGEST: digest,
            "checked": _stamp(copy),
        }
        _write_record(record_path, record)
        return copy
    except OSError as failure:
        log.info("could not keep a copy of %s in %s: %s", source.name, copy.parent, failure)
        return None
    finally:
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)


def _write_record(record_path: Path, record: dict[str, Any]) -> None:
    """Write the record under a temporary name, flush it, rename it into place, and flush
    the folder, so the copy and its record reach the disk before anything trusts them."""
    staging = record_path.with_name(f"{record_path.name}.{os.getpid()}.part")
    try:
        with staging.open("w", encoding="utf-8") as file:
            json.dump(record, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(staging, record_path)
    finally:
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)
    _sync_folder(record_path.parent)


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entries (the renames); not possible on every system (Windows)."""
    with contextlib.suppress(OSError):
        handle = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
