"""The document store: the server's single source of truth for open buffers.

pygls' workspace is bypassed because it rebuilds the whole source string and line list on every
incremental change, a cost that grows with the file. Here a keystroke's cost grows with the
number of blocks, not the text (`python benchmarks/bench_documents.py`), any of the three LSP
position encodings is accepted, and each change yields the byte-level edit tree-sitter needs
for incremental reparsing.

Lines (each keeping its own terminator) are grouped into blocks of about ``_BLOCK`` lines, each
caching its code point, UTF-8 and line totals; the document keeps prefix tables of those totals
per block. A keystroke patches one block's line list in place and shifts the later blocks'
starts, so its cost grows with the number of blocks, not the text. Lookups bisect the prefix
tables and then work within one block, taking a fast path for ASCII lines.
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter

Position = tuple[int, int]
"""An LSP position: (line, character), the character counted in the negotiated encoding."""

Point = tuple[int, int]
"""A tree-sitter point: (row, byte column), rows counted by ``\\n`` only, as tree-sitter does."""

Change = tuple[Position | None, Position | None, str]
"""A content change: start, end (both None to replace the whole text) and the new text."""

_BLOCK = 128
"""Lines per block when blocks are (re)built; blocks split above twice this, merge below half."""

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))
# Lone surrogates can arrive through JSON escapes; counting them beats crashing on a keystroke.
_ERRORS = "surrogatepass"
_LINES = attrgetter("lines")
_CHARS = attrgetter("chars")
_NBYTES = attrgetter("nbytes")


class PositionEncoding(enum.StrEnum):
    """How LSP positions count characters within a line (negotiated at initialize)."""

    UTF8 = "utf-8"
    UTF16 = "utf-16"
    UTF32 = "utf-32"


@dataclass(frozen=True, slots=True)
class ByteEdit:
    """One change in the terms ``tree_sitter.Tree.edit()`` takes, and what kind of change."""

    start_byte: int
    old_end_byte: int
    new_end_byte: int
    start_point: Point
    old_end_point: Point
    new_end_point: Point
    blank_after_code: bool = False
    """It only inserted spaces, tabs and line breaks after the code on a line, with nothing
    but blank space after it on that line (Enter and its indentation): where blank lines
    mean nothing, no code changed syntax."""


class ChangeStamp:
    """A number that holds while every change touches the same one thing (a row, a
    document), so what was read from everything else can be reused."""

    __slots__ = ("_count", "_only")

    def __init__(self) -> None:
        self._count = 0
        self._only: object = None

    def changed(self, key: object) -> None:
        if self._only is not None and self._only != key:
            self._count += 1
        self._only = key

    def changed_everywhere(self) -> None:
        self._count += 1
        self._only = None

    def except_(self, key: object) -> int | None:
        """The stamp for "everything but `key`"; None when the last change was elsewhere."""
        return self._count if self._only is None or self._only == key else None


class UnknownDocumentError(KeyError):
    """A change arrived for a URI that was never opened (or was already closed)."""


def _split_lines(text: str) -> list[str]:
    """Split on exactly the LSP terminators; ``str.splitlines`` also splits on \\f, \\x85 etc."""
    if "\r" not in text:
        # Splitting on one character runs at memory speed; the pattern below walks a
        # 5 MB minified line character by character on every keystroke.
        if text and text.find("\n") == len(text) - 1:
            return [text, ""]  # one whole line, the usual keystroke's: no copy of it
        parts = text.split("\n")
        return [part + "\n" for part in parts[:-1]] + [parts[-1]]
    lines: list[str] = _LINE_RE.findall(text)
    if lines[-1][-1] in "\r\n":
        lines.append("")
    return lines


_BLANK = " \t\r\n"


def _is_blank(text: str) -> bool:
    """Spaces, tabs and line breaks only (other Unicode spaces are not blank to a parser)."""
    return not text.strip(_BLANK)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", _ERRORS))


def _end_point(start: Point, inserted: str) -> Point:
    """Where `inserted` ends when written at `start`, in tree-sitter's (row, byte column)."""
    newlines = inserted.count("\n")
    if not newlines:
        return start[0], start[1] + _utf8_len(inserted)
    return start[0] + newlines, _utf8_len(inserted[inserted.rindex("\n") + 1 :])


def _col_from_units(content: str, units: int, encoding: str) -> int:
    """Code point column for ``units`` into a line, snapped back to the start of a code point."""
    if units <= 0:
        return 0
    if encoding == PositionEncoding.UTF32 or content.isascii():
        return min(units, len(content))
    if encoding == PositionEncoding.UTF8:
        data = content.encode("utf-8", _ERRORS)
        if units >= len(data):
            return len(content)
        col = len(data[:units].translate(None, _UTF8_CONTINUATION))
        # A continuation byte next means the cut fell inside a code point already counted.
        return col - 1 if data[units] & 0xC0 == 0x80 else col
    data = content.encode("utf-16-le", _ERRORS)
    cut = 2 * units
    if cut >= len(data):
        return len(content)
    col = len(data[:cut].decode("utf-16-le", _ERRORS))
    # A low surrogate next means the cut split a pair; its high half was decoded on its own.
    return col - 1 if 0xDC <= data[cut + 1] <= 0xDF else col


def _units_from_col(content: str, col: int, encoding: str) -> int:
    if encoding == PositionEncoding.UTF32 or content.isascii():
        return col
    if encoding == PositionEncoding.UTF8:
        return len(content[:col].encode("utf-8", _ERRORS))
    return len(content[:col].encode("utf-16-le", _ERRORS)) // 2


def _terminator_length(line: str) -> int:
    if line.endswith("\r\n"):
        return 2
    return 1 if line.endswith(("\n", "\r")) else 0


def _lone_crs(text: str) -> int:
    # Line content never holds \r, so every \r not followed by \n ends a line.
    if "\r" not in text:
        return 0  # one fast scan instead of two counts, on every keystroke's line
    return text.count("\r") - text.count("\r\n")


class _Block:
    """A run of whole lines with cached totals, so an edit only touches this run."""

    __slots__ = ("_text", "_utf8", "blens", "chars", "lines", "lone_cr", "nbytes")

    def __init__(self, lines: list[str], blens: list[int]) -> None:
        self.lines = lines
        self.blens = blens
        text = "".join(lines)
        self.chars = len(text)
        self.nbytes = sum(blens)
        self.lone_cr = _lone_crs(text)
        self._text: str | None = text
        self._utf8: bytes | None = None

    @property
    def text(self) -> str:
        """Joined lazily, so a burst of keystrokes in one block joins it once, if at all."""
        if self._text is None:
            self._text = "".join(self.lines)
        return self._text

    @property
    def utf8(self) -> bytes:
        """Encoded lazily: only tree-sitter reads need it, and untouched blocks keep theirs."""
        if self._utf8 is None:
            self._utf8 = self.text.encode("utf-8", _ERRORS)
        return self._utf8

    def splice(self, head: int, tail: int, lines: list[str], blens: list[int]) -> tuple[int, int]:
        """Replace ``lines[head:tail]`` in place; returns the change in code points and bytes."""
        removed = "".join(self.lines[head:tail])
        added = "".join(lines)
        chars = len(added) - len(removed)
        nbytes = sum(blens) - sum(self.blens[head:tail])
        self.lines[head:tail] = lines
        self.blens[head:tail] = blens
        self.chars += chars
        self.nbytes += nbytes
        self.lone_cr += _lone_crs(added) - _lone_crs(removed)
        self._text = self._utf8 = None
        return chars, nbytes


def _chunk(lines: list[str], blens: list[int]) -> list[_Block]:
    if len(lines) <= 2 * _BLOCK:
        return [_Block(lines, blens)]
    count = -(-len(lines) // _BLOCK)
    step = -(-len(lines) // count)
    return [_Block(lines[i : i + step], blens[i : i + step]) for i in range(0, len(lines), step)]


class Document:
    """One open buffer, with position conversions in any LSP encoding and for tree-sitter.

    Offsets are code point indices into ``text``. Every line but the last ends with its
    terminator, and the last has none, so a trailing newline yields an empty last line.
    """

    __slots__ = (
        "_blocks",
        "_byte_at",
        "_char_at",
        "_lone_cr",
        "_row_at",
        "_stamp",
        "_text",
        "language_id",
        "uri",
        "version",
    )
    uri: str
    language_id: str
    version: int
    _text: str | None

    def __init__(self, uri: str, language_id: str, version: int, text: str) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self._stamp = ChangeStamp()
        self._reset(text)

    def __repr__(self) -> str:
        return f"Document({self.uri!r}, version={self.version}, lines={self.line_count})"

    @property
    def text(self) -> str:
        """The whole text, joined from per-block strings only when asked for after a change."""
        if self._text is None:
            self._text = "".join(block.text for block in self._blocks)
        return self._text

    @property
    def line_count(self) -> int:
        return self._row_at[-1]

    @property
    def byte_length(self) -> int:
        """The text's length in UTF-8 bytes, without encoding it."""
        return self._byte_at[-1]

    def line(self, row: int) -> str:
        """The line's content without its terminator; "" for rows outside the document."""
        if not 0 <= row < self._row_at[-1]:
            return ""
        bi = bisect_right(self._row_at, row) - 1
        return self._blocks[bi].lines[row - self._row_at[bi]].rstrip("\r\n")

    def lines(self, start: int, stop: int) -> list[str]:
        """Rows [start, stop) without terminators, sliced block by block (no per-row lookup)."""
        start, stop = max(start, 0), min(stop, self._row_at[-1])
        found: list[str] = []
        if start >= stop:
            return found
        bi = bisect_right(self._row_at, start) - 1
        while start < stop:
            first = self._row_at[bi]
            block = self._blocks[bi].lines
            chunk = block[start - first : min(stop - first, len(block))]
            found.extend(line.rstrip("\r\n") for line in chunk)
            start += len(chunk)
            bi += 1
        return found

    def stamp_except(self, row: int) -> int | None:
        """A number that stays the same while no line but `row` changes (None when the last
        edit was to another line): what was read from the other lines can be reused."""
        return self._stamp.except_(row)

    def offset_at(self, line: int, character: int, encoding: PositionEncoding) -> int:
        """Code point offset of an LSP position, clamped the way editors expect.

        A negative line gives 0 and one past the end gives ``len(text)``; a character past the
        line's content gives the end of that content, and one inside a multi-unit code point
        gives that code point's start.
        """
        bi, k, col = self._locate(line, character, encoding)
        block = self._blocks[bi]
        return self._char_at[bi] + sum(map(len, block.lines[:k])) + col

    def clamp(self, line: int, character: int, encoding: PositionEncoding) -> tuple[int, int, int]:
        """A client position clamped as `offset_at` clamps it: its row, its code point
        column, and its character in `encoding` (one lookup, for every request)."""
        bi, k, col = self._locate(line, character, encoding)
        content = self._blocks[bi].lines[k].rstrip("\r\n")
        return self._row_at[bi] + k, col, _units_from_col(content, col, encoding)

    def position_at(self, offset: int, encoding: PositionEncoding) -> Position:
        """LSP position of a code point offset; offsets inside a line terminator map before it."""
        bi, k, col = self._find(offset)
        content = self._blocks[bi].lines[k].rstrip("\r\n")
        col = min(col, len(content))
        return self._row_at[bi] + k, _units_from_col(content, col, encoding)

    def point_at(self, offset: int) -> Point:
        """Tree-sitter point of a code point offset, to look up syntax nodes at the cursor."""
        bi, k, col = self._find(offset)
        return self._ts_point(bi, k, _utf8_len(self._blocks[bi].lines[k][:col]))

    def byte_offset_at(self, offset: int) -> int:
        """UTF-8 byte offset of a code point offset, as tree-sitter nodes report positions."""
        bi, k, col = self._find(offset)
        block = self._blocks[bi]
        return self._byte_at[bi] + sum(block.blens[:k]) + _utf8_len(block.lines[k][:col])

    def offset_at_byte(self, byte_offset: int) -> int:
        """Code point offset of a UTF-8 byte offset, to map tree-sitter nodes back to positions.

        A byte offset inside a multi-byte character gives that character's start.
        """
        byte_offset = min(max(byte_offset, 0), self._byte_at[-1])
        bi = min(bisect_right(self._byte_at, byte_offset), len(self._blocks)) - 1
        block = self._blocks[bi]
        rel = byte_offset - self._byte_at[bi]
        starts = list(accumulate(block.blens, initial=0))
        k = min(bisect_right(starts, rel), len(block.lines)) - 1
        col = _col_from_units(block.lines[k], rel - starts[k], PositionEncoding.UTF8)
        return self._char_at[bi] + sum(map(len, block.lines[:k])) + col

    @property
    def utf8(self) -> bytes:
        """The whole text as UTF-8, for tree-sitter: joined from the blocks' cached
        encodings (only changed blocks encode again).

        Not a read callback: py-tree-sitter 0.26 keeps every chunk a callback returns, so
        memory would grow with every parse."""
        return b"".join(block.utf8 for block in self._blocks)

    def read_utf8(self, byte_offset: int, point: Point) -> bytes:
        """The bytes from `byte_offset` to the end of its block (`point` is ignored)."""
        if not 0 <= byte_offset < self._byte_at[-1]:
            return b""
        bi = bisect_right(self._byte_at, byte_offset) - 1
        return self._blocks[bi].utf8[byte_offset - self._byte_at[bi] :]

    def utf8_between(self, start: int, end: int) -> bytes:
        """Source bytes ``[start, end)``, read from the blocks without joining the document."""
        chunks = []
        position = start
        while position < end:
            chunk = self.read_utf8(position, (0, 0))
            if not chunk:
                break
            chunks.append(chunk[: end - position])
            position += len(chunks[-1])
        return b"".join(chunks)

    def apply_change(
        self,
        start: Position | None,
        end: Position | None,
        new_text: str,
        encoding: PositionEncoding,
    ) -> ByteEdit:
        """Apply one LSP content change and describe it for ``Tree.edit()``.

        ``None`` for either end replaces the whole document. Out-of-range positions clamp as in
        ``offset_at`` and a reversed range is swapped: a misbehaving client must not be able to
        take the server down with a keystroke.
        """
        if start is None or end is None:
            return self._replace_all(new_text)
        sbi, sk, scol = self._locate(start[0], start[1], encoding)
        ebi, ek, ecol = self._locate(end[0], end[1], encoding)
        if (ebi, ek, ecol) < (sbi, sk, scol):
            sbi, sk, scol, ebi, ek, ecol = ebi, ek, ecol, sbi, sk, scol
        start_byte, start_point = self._byte_and_point(sbi, sk, scol)
        old_end_byte, old_end_point = self._byte_and_point(ebi, ek, ecol)

        first = self._row_at[sbi] + sk
        last = self._row_at[ebi] + ek
        head, tail = self._blocks[sbi].lines[sk][:scol], self._blocks[ebi].lines[ek][ecol:]
        blank_after_code = (
            start_byte == old_end_byte
            and _is_blank(new_text)
            and _is_blank(tail)
            and head.rstrip(_BLANK)[-1:] not in ("", "\\")
        )
        segment = head + new_text + tail
        if segment[:1] == "\n" and first > 0:
            pbi = bisect_right(self._row_at, first - 1) - 1
            previous = self._blocks[pbi].lines[first - 1 - self._row_at[pbi]]
            if previous[-1] == "\r":
                # The \r that ended the previous line and this \n now form one terminator.
                first -= 1
                segment = previous + segment
        new_lines = _split_lines(segment)
        if last < self._row_at[-1] - 1:
            # The segment ends with the end line's own terminator, which split off an empty tail.
            new_lines.pop()
        self._replace_lines(first, last, new_lines)
        if first == last and len(new_lines) == 1:
            self._stamp.changed(first)
        else:
            self._stamp.changed_everywhere()

        return ByteEdit(
            start_byte=start_byte,
            old_end_byte=old_end_byte,
            new_end_byte=start_byte + _utf8_len(new_text),
            start_point=start_point,
            old_end_point=old_end_point,
            new_end_point=_end_point(start_point, new_text),
            blank_after_code=blank_after_code,
        )

    def _reset(self, text: str) -> None:
        self._stamp.changed_everywhere()
        lines = _split_lines(text)
        self._blocks = _chunk(lines, [_utf8_len(line) for line in lines])
        self._lone_cr = sum(block.lone_cr for block in self._blocks)
        self._row_at = [0]
        self._char_at = [0]
        self._byte_at = [0]
        self._reindex(0)
        self._text = text

    def _reindex(self, first: int) -> None:
        """Refresh the per-block prefix tables from block ``first`` on; earlier ones still hold."""
        blocks = self._blocks[first:]
        self._row_at[first:] = accumulate(
            map(len, map(_LINES, blocks)), initial=self._row_at[first]
        )
        self._char_at[first:] = accumulate(map(_CHARS, blocks), initial=self._char_at[first])
        self._byte_at[first:] = accumulate(map(_NBYTES, blocks), initial=self._byte_at[first])

    def _locate(self, line: int, character: int, encoding: str) -> tuple[int, int, int]:
        """Block index, line within block and clamped code point column of an LSP position."""
        if line < 0:
            return 0, 0, 0
        if line >= self._row_at[-1]:
            block = self._blocks[-1]
            return len(self._blocks) - 1, len(block.lines) - 1, len(block.lines[-1])
        bi = bisect_right(self._row_at, line) - 1
        k = line - self._row_at[bi]
        text = self._blocks[bi].lines[k]
        if encoding == PositionEncoding.UTF32 or text.isascii():
            # Without a copy of the line (`rstrip`): a 5 MB line costs no copy per keystroke.
            return bi, k, min(max(character, 0), len(text) - _terminator_length(text))
        return bi, k, _col_from_units(text.rstrip("\r\n"), character, encoding)

    def _find(self, offset: int) -> tuple[int, int, int]:
        """Block index, line within block and code point column of a (clamped) offset.

        The column is exact, so it may point inside the line's terminator.
        """
        offset = min(max(offset, 0), self._char_at[-1])
        # Past the end, bisect lands one beyond the last block; an empty last line sits there.
        bi = min(bisect_right(self._char_at, offset), len(self._blocks)) - 1
        block = self._blocks[bi]
        rel = offset - self._char_at[bi]
        if not block.lone_cr:
            # Every line here but a final one ends in \n: let str.count find the row.
            text = block.text
            return bi, text.count("\n", 0, rel), rel - text.rfind("\n", 0, rel) - 1
        starts = list(accumulate(map(len, block.lines), initial=0))
        k = min(bisect_right(starts, rel), len(block.lines)) - 1
        return bi, k, rel - starts[k]

    def _byte_and_point(self, bi: int, k: int, col: int) -> tuple[int, Point]:
        block = self._blocks[bi]
        line = block.lines[k]
        byte_col = col if line.isascii() else _utf8_len(line[:col])
        return self._byte_at[bi] + sum(block.blens[:k]) + byte_col, self._ts_point(bi, k, byte_col)

    def _ts_point(self, bi: int, k: int, byte_col: int) -> Point:
        """Tree-sitter counts rows by \\n alone, so lines ended by a lone \\r share its row."""
        row = self._row_at[bi] + k
        if not self._lone_cr:
            return row, byte_col
        blocks = self._blocks
        block = blocks[bi]
        row -= sum(b.lone_cr for b in blocks[:bi])
        row -= sum(1 for line in block.lines[:k] if line[-1] == "\r")
        # Widen the column over the lone-\r lines just before this one, whole blocks at a time.
        col = byte_col
        j = k - 1
        while j >= 0 and block.lines[j][-1] == "\r":
            col += block.blens[j]
            j -= 1
        if j < 0:
            bi -= 1
            while bi >= 0 and blocks[bi].lone_cr == len(blocks[bi].lines):
                col += blocks[bi].nbytes
                bi -= 1
            if bi >= 0:
                block = blocks[bi]
                j = len(block.lines) - 1
                while block.lines[j][-1] == "\r":
                    col += block.blens[j]
                    j -= 1
        return row, col

    def _end_point(self) -> Point:
        block = self._blocks[-1]
        k = len(block.lines) - 1
        return self._ts_point(len(self._blocks) - 1, k, block.blens[k])

    def _replace_all(self, text: str) -> ByteEdit:
        old_end_byte = self._byte_at[-1]
        old_end_point = self._end_point()
        self._reset(text)
        return ByteEdit(
            start_byte=0,
            old_end_byte=old_end_byte,
            new_end_byte=self._byte_at[-1],
            start_point=(0, 0),
            old_end_point=old_end_point,
            new_end_point=self._end_point(),
        )

    def _replace_lines(self, first: int, last: int, new_lines: list[str]) -> None:
        """Replace rows ``first..last`` (inclusive), touching only the blocks they live in."""
        blocks = self._blocks
        bi = bisect_right(self._row_at, first) - 1
        stop = bisect_right(self._row_at, last)
        head = first - self._row_at[bi]
        tail = last - self._row_at[stop - 1] + 1
        new_blens = [_utf8_len(line) for line in new_lines]
        self._text = None
        block = blocks[bi]
        rows = len(new_lines) - (tail - head)
        size = len(block.lines) + rows
        if stop == bi + 1 and size <= 2 * _BLOCK and (size >= _BLOCK // 2 or len(blocks) == 1):
            # The common case, a keystroke: patch the block and shift the later block starts.
            lone_cr = block.lone_cr
            chars, nbytes = block.splice(head, tail, new_lines, new_blens)
            self._lone_cr += block.lone_cr - lone_cr
            char_at, byte_at = self._char_at, self._byte_at
            for j in range(bi + 1, len(char_at)):
                char_at[j] += chars
                byte_at[j] += nbytes
            if rows:
                row_at = self._row_at
                for j in range(bi + 1, len(row_at)):
                    row_at[j] += rows
            return
        lines = block.lines[:head] + new_lines + blocks[stop - 1].lines[tail:]
        blens = block.blens[:head] + new_blens + blocks[stop - 1].blens[tail:]
        if len(lines) < _BLOCK // 2:
            if stop < len(blocks):
                lines += blocks[stop].lines
                blens += blocks[stop].blens
                stop += 1
            elif bi > 0:
                bi -= 1
                lines = blocks[bi].lines + lines
                blens = blocks[bi].blens + blens
        rebuilt = _chunk(lines, blens)
        self._lone_cr += sum(b.lone_cr for b in rebuilt) - sum(b.lone_cr for b in blocks[bi:stop])
        blocks[bi:stop] = rebuilt
        self._reindex(bi)


class DocumentStore:
    """Open documents by URI; handlers read buffer text from here and nowhere else."""

    __slots__ = ("_docs",)

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        """Open (or, for a repeated didOpen, reset) a document."""
        doc = Document(uri, language_id, version, text)
        self._docs[uri] = doc
        return doc

    def change(
        self,
        uri: str,
        version: int,
        changes: Iterable[Change],
        encoding: PositionEncoding,
    ) -> list[ByteEdit]:
        """Apply changes in order; the edits come back in the same order for ``Tree.edit()``."""
        doc = self._docs.get(uri)
        if doc is None:
            raise UnknownDocumentError(uri)
        edits = [doc.apply_change(start, end, text, encoding) for start, end, text in changes]
        doc.version = version
        return edits

    def close(self, uri: str) -> None:
        """Forget a document; closing one that is not open is harmless."""
        self._docs.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        return self._docs.get(uri)

    def __iter__(self) -> Iterator[Document]:
        # A snapshot, so handlers may open or close documents while iterating.
        return iter(tuple(self._docs.values()))

    def __len__(self) -> int:
        return len(self._docs)
