"""A copy kept in the user's cache (the embedded model's 8-bit weights) is trusted only while
its record vouches for it: a damaged, truncated, unrecorded or outdated copy is made again,
with one line in the log, and a copy is flushed to disk before it takes its real name.

`make` here writes the source's bytes reversed, a conversion as real as any for what is
checked: the copy differs from its source, and only `make` knows how to produce it. The
embedded model's own conversion is tested in test_local_backend.py."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_spark.backends import cached_copy as module
from lsp_spark.backends.cached_copy import cached_copy, record_of

SOURCE_BYTES = bytes(range(256)) * 64


class Reverser:
    """Writes the source's bytes reversed, counting the copies it made."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self, source: Path, staging: Path) -> bool:
        self.made += 1
        staging.write_bytes(source.read_bytes()[::-1])
        return True


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "model.Q4_1.gguf"
    path.write_bytes(SOURCE_BYTES)
    return path


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "models" / "model.Q8_0.gguf"


def warnings_in(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_copy_is_made_once_then_trusted_without_reading_it_again(
    source: Path, copy: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    make = Reverser()
    assert cached_copy(source, copy, make) == copy
    assert copy.read_bytes() == SOURCE_BYTES[::-1]
    record = json.loads(record_of(copy).read_text())
    assert record["size"] == len(SOURCE_BYTES)
    hashed: list[Path] = []
    digest = module._digest
    monkeypatch.setattr(module, "_digest", lambda path: hashed.append(path) or digest(path))
    assert cached_copy(source, copy, make) == copy
    assert (make.made, hashed) == (1, []), "the checked copy was read again"
    assert warnings_in(caplog) == []
    assert not list(copy.parent.glob("*.part")), "a staging file was left behind"


def damage_in_place(copy: Path) -> None:
    """Bytes changed in the middle, size kept, modification time put back."""
    before = copy.stat()
    with copy.open("r+b") as file:
        file.seek(before.st_size // 2)
        file.write(b"\xff" * 16)
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))


def truncate(copy: Path) -> None:
    with copy.open("r+b") as file:
        file.truncate(copy.stat().st_size // 3)


@pytest.mark.parametrize(
    ("damage", "says"),
    [(damage_in_place, "is not the one recorded"), (truncate, "bytes, 16384 were written")],
    ids=["bytes-changed", "truncated"],
)
def test_a_damaged_copy_is_made_again_with_one_message(
    source: Path,
    copy: Path,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[Path], None],
    says: str,
) -> None:
    make = Reverser()
    cached_copy(source, copy, make)
    damage(copy)
    assert cached_copy(source, copy, make) == copy
    assert make.made == 2
    assert copy.read_bytes() == SOURCE_BYTES[::-1]
    [message] = warnings_in(caplog)
    assert str(copy) in message and "is damaged" in message and says in message
    assert cached_copy(source, copy, make) == copy
    assert make.made == 2, "the copy made again was not trusted"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda source, copy: record_of(copy).unlink(), "no readable record"),
        (lambda source, copy: record_of(copy).write_text("{"), "no readable record"),
        (lambda source, copy: source.write_bytes(SOURCE_BYTES[1:]), "another version"),
    ],
    ids=["no-record", "broken-record", "other-source"],
)
def test_a_copy_its_record_does_not_vouch_for_is_made_again(
    source: Path,
    copy: Path,
    caplog: pytest.LogCaptureFixture,
    change: Callable[[Path, Path], object],
    says: str,
) -> None:
    make = Reverser()
    cached_copy(source, copy, make)
    change(source, copy)
    assert cached_copy(source, copy, make) == copy
    assert make.made == 2
    assert copy.read_bytes() == source.read_bytes()[::-1]
    [message] = warnings_in(caplog)
    assert says in message


def test_two_installs_of_the_same_weights_share_one_copy(
    source: Path, copy: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two virtual environments hold the same weights in two files: a copy made from one
    serves the other, started in turn, without being made again."""
    other = tmp_path / "other-venv" / source.name
    other.parent.mkdir()
    other.write_bytes(SOURCE_BYTES)
    make = Reverser()
    for _ in range(2):
        assert cached_copy(source, copy, make) == copy
        assert cached_copy(other, copy, make) == copy
    assert make.made == 1
    assert warnings_in(caplog) == []


def test_a_source_of_the_same_size_with_other_bytes_is_another_version(
    source: Path, copy: Path, caplog: pytest.LogCaptureFixture
) -> None:
    make = Reverser()
    cached_copy(source, copy, make)
    source.write_bytes(SOURCE_BYTES[::-1])
    assert cached_copy(source, copy, make) == copy
    assert make.made == 2
    assert copy.read_bytes() == SOURCE_BYTES
    [message] = warnings_in(caplog)
    assert "another version" in message


def test_the_copy_reaches_the_disk_before_it_takes_its_name(
    source: Path, copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash right after the rename must not leave a name pointing at unwritten blocks:
    the staging file is flushed (fsync) first, and its record after it."""
    events: list[str] = []
    fsync, replace = os.fsync, os.replace

    def noting_fsync(handle: int) -> None:
        events.append(f"fsync {Path(os.readlink(f'/proc/self/fd/{handle}')).name}")
        fsync(handle)

    def noting_replace(old: Path, new: Path) -> None:
        events.append(f"rename {Path(new).name}")
        replace(old, new)

    monkeypatch.setattr(module.os, "fsync", noting_fsync)
    monkeypatch.setattr(module.os, "replace", noting_replace)
    cached_copy(source, copy, Reverser())
    staging_flushed = next(i for i, e in enumerate(events) if e.endswith(".part"))
    assert events.index(f"rename {copy.name}") > staging_flushed
    assert events.index(f"rename {record_of(copy).name}") > events.index(f"rename {copy.name}")


def test_a_copy_that_cannot_be_made_leaves_nothing_behind(source: Path, copy: Path) -> None:
    def fails(source: Path, staging: Path) -> bool:
        staging.write_bytes(b"half")
        return False

    assert cached_copy(source, copy, fails) is None
    assert list(copy.parent.iterdir()) == []
