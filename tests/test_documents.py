"""Tests for the document store, checked against a deliberately naive reference model."""

from __future__ import annotations

import random
from contextlib import AbstractContextManager, nullcontext
from unittest import mock

import pytest
import tree_sitter_python
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Parser, Tree

from lsp_spark import documents
from lsp_spark.documents import (
    ByteEdit,
    Document,
    DocumentStore,
    PositionEncoding,
    UnknownDocumentError,
)
from tests.conftest import edit_tree

UTF8, UTF16, UTF32 = PositionEncoding.UTF8, PositionEncoding.UTF16, PositionEncoding.UTF32
ENCODINGS = list(PositionEncoding)
PARSER = Parser(Language(tree_sitter_python.language()))


# --- naive reference model ----------------------------------------------------------------


def ref_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, content end, next line start) of each line, found by walking every character."""
    spans = []
    start = i = 0
    while i < len(text):
        if text[i] == "\r" and text[i + 1 : i + 2] == "\n":
            spans.append((start, i, i + 2))
            i += 2
            start = i
        elif text[i] in "\r\n":
            spans.append((start, i, i + 1))
            i += 1
            start = i
        else:
            i += 1
    spans.append((start, len(text), len(text)))
    return spans


def units(char: str, encoding: PositionEncoding) -> int:
    if encoding == UTF8:
        return len(char.encode("utf-8"))
    if encoding == UTF16:
        return len(char.encode("utf-16-le")) // 2
    return 1


def ref_offset_at(text: str, line: int, character: int, encoding: PositionEncoding) -> int:
    spans = ref_spans(text)
    if line < 0:
        return 0
    if line >= len(spans):
        return len(text)
    start, end, _ = spans[line]
    count = 0
    for i in range(start, end):
        count += units(text[i], encoding)
        if count > character:
            return i
    return end


def ref_positions(text: str, encoding: PositionEncoding) -> list[tuple[int, int]]:
    """position_at of every offset 0..len(text); a terminator maps to its line's end."""
    positions = []
    for row, (start, end, next_start) in enumerate(ref_spans(text)):
        count = 0
        for i in range(start, end):
            positions.append((row, count))
            count += units(text[i], encoding)
        positions.extend([(row, count)] * (next_start - end))
    positions.append((row, count))  # the end of the text, on the last line
    return positions


def ref_point(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset].encode()
    return before.count(b"\n"), len(before) - before.rfind(b"\n") - 1


def ref_change(
    text: str,
    start: tuple[int, int] | None,
    end: tuple[int, int] | None,
    new_text: str,
    encoding: PositionEncoding,
) -> tuple[str, ByteEdit]:
    if start is None or end is None:
        return new_text, ByteEdit(
            0,
            len(text.encode()),
            len(new_text.encode()),
            (0, 0),
            ref_point(text, len(text)),
            ref_point(new_text, len(new_text)),
        )
    lo = ref_offset_at(text, *start, encoding)
    hi = ref_offset_at(text, *end, encoding)
    lo, hi = min(lo, hi), max(lo, hi)
    result = text[:lo] + new_text + text[hi:]
    start_byte = len(text[:lo].encode())
    edit = ByteEdit(
        start_byte,
        len(text[:hi].encode()),
        start_byte + len(new_text.encode()),
        ref_point(text, lo),
        ref_point(text, hi),
        ref_point(result, lo + len(new_text)),
        ref_blank_after_code(text, lo, hi, new_text),
    )
    return result, edit


def ref_blank_after_code(text: str, lo: int, hi: int, new_text: str) -> bool:
    blank = " \t\r\n"
    line_start = max(text.rfind("\n", 0, lo), text.rfind("\r", 0, lo)) + 1
    line_ends = [at for at in (text.find("\n", hi), text.find("\r", hi)) if at >= 0]
    code = text[line_start:lo].rstrip(blank)
    return (
        lo == hi
        and not new_text.strip(blank)
        and not text[hi : min(line_ends, default=len(text))].strip(blank)
        and code != ""
        and not code.endswith("\\")
    )


def assert_matches_reference(doc: Document, text: str) -> None:
    assert doc.text == text
    spans = ref_spans(text)
    assert doc.line_count == len(spans)
    assert [doc.line(row) for row in range(len(spans))] == [text[s:e] for s, e, _ in spans]
    assert doc.line(len(spans)) == ""
    for encoding in ENCODINGS:
        assert [doc.position_at(o, encoding) for o in range(len(text) + 1)] == ref_positions(
            text, encoding
        )
    for offset in range(len(text) + 1):
        assert doc.point_at(offset) == ref_point(text, offset)
        byte_offset = len(text[:offset].encode())
        assert doc.byte_offset_at(offset) == byte_offset
        assert doc.offset_at_byte(byte_offset) == offset
    for row, (start, _, _) in enumerate(spans):
        assert doc.offset_at(row, 0, UTF16) == start


def block_size(size: int | None) -> AbstractContextManager[object]:
    """Tiny blocks make every edit cross, split and merge blocks, as big files do."""
    return nullcontext() if size is None else mock.patch.object(documents, "_BLOCK", size)


# --- hand-written cases -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("character", "encoding", "offset"),
    [
        (0, UTF16, 0),
        (1, UTF16, 1),
        (2, UTF16, 1),  # inside the surrogate pair: start of the emoji
        (3, UTF16, 2),
        (4, UTF16, 3),
        (99, UTF16, 3),
        (2, UTF8, 1),
        (4, UTF8, 1),
        (5, UTF8, 2),
        (6, UTF8, 3),
        (2, UTF32, 2),
        (3, UTF32, 3),
    ],
)
def test_emoji_offsets(character: int, encoding: PositionEncoding, offset: int) -> None:
    doc = Document("file:///a.py", "python", 1, "a😀b\nnext")
    assert doc.offset_at(0, character, encoding) == offset


def test_emoji_positions() -> None:
    doc = Document("file:///a.py", "python", 1, "a😀b")
    assert [doc.position_at(o, UTF16) for o in range(4)] == [(0, 0), (0, 1), (0, 3), (0, 4)]
    assert [doc.position_at(o, UTF8) for o in range(4)] == [(0, 0), (0, 1), (0, 5), (0, 6)]
    assert [doc.position_at(o, UTF32) for o in range(4)] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert doc.byte_offset_at(2) == 5
    assert doc.point_at(2) == (0, 5)
    assert doc.offset_at_byte(3) == 1  # inside the emoji's bytes


def test_cjk_is_three_bytes_one_utf16_unit() -> None:
    doc = Document("u", "plaintext", 1, "中文x")
    assert doc.offset_at(0, 1, UTF16) == 1
    assert doc.offset_at(0, 3, UTF8) == 1
    assert doc.offset_at(0, 4, UTF8) == 1
    assert doc.offset_at(0, 6, UTF8) == 2
    assert doc.position_at(2, UTF8) == (0, 6)
    assert doc.position_at(2, UTF16) == (0, 2)
    assert doc.point_at(3) == (0, 7)


def test_combining_mark_is_its_own_code_point() -> None:
    doc = Document("u", "plaintext", 1, "e\u0301x")
    assert doc.offset_at(0, 1, UTF16) == 1
    assert doc.offset_at(0, 2, UTF16) == 2
    assert doc.offset_at(0, 2, UTF8) == 1  # inside the 2-byte U+0301
    assert doc.offset_at(0, 3, UTF8) == 2
    assert doc.position_at(2, UTF8) == (0, 3)


def test_crlf_lines() -> None:
    doc = Document("u", "plaintext", 1, "ab\r\ncd")
    assert doc.line_count == 2
    assert (doc.line(0), doc.line(1)) == ("ab", "cd")
    assert doc.offset_at(0, 99, UTF16) == 2  # clamped before the \r\n
    assert doc.offset_at(1, 0, UTF16) == 4
    assert doc.position_at(3, UTF16) == (0, 2)  # between \r and \n
    assert doc.position_at(4, UTF16) == (1, 0)
    assert doc.point_at(4) == (1, 0)


def test_lone_cr_lines_and_tree_sitter_rows() -> None:
    doc = Document("u", "plaintext", 1, "ab\rcd\ne\rf")
    assert doc.line_count == 4
    assert [doc.line(r) for r in range(4)] == ["ab", "cd", "e", "f"]
    assert doc.offset_at(1, 1, UTF16) == 4
    assert doc.position_at(4, UTF16) == (1, 1)
    # tree-sitter starts rows at \n only, so "cd" is still on row 0.
    assert doc.point_at(4) == (0, 4)
    assert doc.point_at(6) == (1, 0)
    assert doc.point_at(9) == (1, 3)


def test_lone_cr_rows_across_blocks() -> None:
    text = "x\r" * 20 + "y\nz"
    with block_size(2):
        doc = Document("u", "plaintext", 1, text)
        assert doc.point_at(len(text)) == (1, 1)
        assert doc.point_at(40) == (0, 40)
        assert doc.line_count == 22


def test_empty_document() -> None:
    doc = Document("u", "plaintext", 1, "")
    assert doc.text == ""
    assert doc.line_count == 1
    assert doc.line(0) == ""
    assert doc.offset_at(0, 0, UTF16) == 0
    assert doc.offset_at(5, 5, UTF16) == 0
    assert doc.position_at(10, UTF16) == (0, 0)
    assert doc.point_at(0) == (0, 0)
    assert doc.read_utf8(0, (0, 0)) == b""


def test_trailing_newline_starts_an_empty_line() -> None:
    doc = Document("u", "plaintext", 1, "x\n")
    assert doc.line_count == 2
    assert doc.line(1) == ""
    assert doc.offset_at(1, 0, UTF16) == 2
    assert doc.offset_at(1, 7, UTF16) == 2
    assert doc.position_at(2, UTF16) == (1, 0)
    assert doc.point_at(2) == (1, 0)


def test_positions_out_of_range_clamp() -> None:
    doc = Document("u", "plaintext", 1, "abc\ndef")
    assert doc.offset_at(99, 0, UTF16) == 7
    assert doc.offset_at(-1, 3, UTF16) == 0
    assert doc.offset_at(0, -5, UTF16) == 0
    assert doc.offset_at(1, -1, UTF16) == 4
    assert doc.position_at(-3, UTF16) == (0, 0)
    assert doc.position_at(100, UTF16) == (1, 3)
    assert doc.line(-1) == ""
    assert doc.line(2) == ""


def test_insert_emoji_gives_byte_edit() -> None:
    doc = Document("u", "plaintext", 1, "a😀b\nc")
    edit = doc.apply_change((1, 0), (1, 0), "中", UTF16)
    assert doc.text == "a😀b\n中c"
    assert edit == ByteEdit(7, 7, 10, (1, 0), (1, 0), (1, 3))


@pytest.mark.parametrize(
    ("text", "at", "inserted", "blank_after_code"),
    [
        ("x = 1\ny = 2\n", (0, 5), "\n    ", True),  # Enter and its indentation
        ("x = 1   \r\ny = 2", (0, 5), "\n", True),  # blank space follows on the line
        ("x = 1  # note\n", (0, 13), "\n\t", True),  # after a comment
        ("x = 1\n", (0, 3), "\n", False),  # code follows on the line
        ("x = 1\n\ny", (1, 0), "    ", False),  # no code before it on its line
        ("x = 1 + \\\n2", (0, 9), "\n", False),  # after a line continuation
        ("x = 1\n", (0, 5), "\u00a0", False),  # not blank to a parser
        ("x = 1\n", (0, 5), ";", False),
    ],
)
def test_an_edit_says_whether_it_only_put_blank_space_after_code(
    text: str, at: tuple[int, int], inserted: str, blank_after_code: bool
) -> None:
    doc = Document("u", "python", 1, text)
    assert doc.apply_change(at, at, inserted, UTF16).blank_after_code is blank_after_code


def test_a_replacement_is_not_blank_space_after_code() -> None:
    doc = Document("u", "python", 1, "x = 1  \n")
    assert not doc.apply_change((0, 5), (0, 7), "\n", UTF16).blank_after_code


def test_delete_across_lines_gives_byte_edit() -> None:
    doc = Document("u", "plaintext", 1, "ab😀\r\ncd\nef")
    edit = doc.apply_change((0, 1), (2, 1), "X\nY", UTF16)
    assert doc.text == "aX\nYf"
    assert doc.line_count == 2
    assert edit == ByteEdit(1, 12, 4, (0, 1), (2, 1), (1, 1))


def test_inserting_lf_after_lone_cr_joins_the_lines() -> None:
    doc = Document("u", "plaintext", 1, "a\rb")
    doc.apply_change((1, 0), (1, 0), "\n", UTF16)
    assert doc.text == "a\r\nb"
    assert doc.line_count == 2
    assert doc.line(0) == "a"


def test_deleting_between_cr_and_lf_joins_them() -> None:
    doc = Document("u", "plaintext", 1, "a\rX\nb")
    assert doc.line_count == 3
    doc.apply_change((1, 0), (1, 1), "", UTF16)
    assert doc.text == "a\r\nb"
    assert doc.line_count == 2
    assert doc.offset_at(1, 0, UTF16) == 3


def test_inserting_cr_before_lf_makes_crlf() -> None:
    doc = Document("u", "plaintext", 1, "a\nb")
    doc.apply_change((0, 1), (0, 1), "\r", UTF16)
    assert doc.text == "a\r\nb"
    assert doc.line_count == 2


def test_character_past_line_end_inserts_before_crlf() -> None:
    doc = Document("u", "plaintext", 1, "ab\r\ncd")
    doc.apply_change((0, 99), (0, 99), "X", UTF8)
    assert doc.text == "abX\r\ncd"


def test_reversed_range_is_swapped() -> None:
    doc = Document("u", "plaintext", 1, "hello")
    edit = doc.apply_change((0, 4), (0, 1), "", UTF16)
    assert doc.text == "ho"
    assert (edit.start_byte, edit.old_end_byte, edit.new_end_byte) == (1, 4, 1)


def test_range_past_end_appends() -> None:
    doc = Document("u", "plaintext", 1, "ab\n")
    doc.apply_change((7, 0), (9, 3), "z", UTF16)
    assert doc.text == "ab\nz"


def test_whole_document_replacement() -> None:
    doc = Document("u", "plaintext", 1, "a\nb😀")
    edit = doc.apply_change(None, None, "xyz\n", UTF16)
    assert doc.text == "xyz\n"
    assert doc.line_count == 2
    assert edit == ByteEdit(0, 7, 4, (0, 0), (1, 5), (1, 0))


def test_edit_spanning_many_blocks() -> None:
    lines = [f"line {i}\n" for i in range(1000)]
    doc = Document("u", "plaintext", 1, "".join(lines))
    doc.apply_change((10, 2), (900, 3), "<>", UTF16)
    expected = "".join(lines[:10]) + "li<>" + "".join(lines[900:])[3:]
    assert_matches_reference(doc, expected)


def test_lone_surrogate_does_not_raise() -> None:
    doc = Document("u", "plaintext", 1, "a\ud800b")
    doc.apply_change((0, 2), (0, 2), "c", UTF8)
    assert doc.text.endswith("b")
    assert doc.byte_offset_at(3) == 5


def test_read_utf8_serves_chunks_from_any_offset() -> None:
    text = "".join(f"x{i} = '中{i}'\n" for i in range(50))
    with block_size(2):
        doc = Document("u", "python", 1, text)
        data = text.encode()
        for byte_offset in (0, 1, 17, len(data) - 1):
            chunk = doc.read_utf8(byte_offset, (0, 0))
            assert chunk
            assert data[byte_offset:].startswith(chunk)
        assert doc.read_utf8(len(data), (50, 0)) == b""
        assert str(PARSER.parse(doc.read_utf8).root_node) == str(PARSER.parse(data).root_node)


def test_store_lifecycle() -> None:
    store = DocumentStore()
    doc = store.open("file:///a.py", "python", 1, "x = 1\n")
    assert store.get("file:///a.py") is doc
    assert (doc.uri, doc.language_id, doc.version) == ("file:///a.py", "python", 1)
    store.open("file:///b.py", "python", 3, "")
    assert len(store) == 2
    assert {d.uri for d in store} == {"file:///a.py", "file:///b.py"}

    edits = store.change(
        "file:///a.py",
        2,
        [((0, 4), (0, 5), "22"), ((1, 0), (1, 0), "y = 😀")],
        UTF16,
    )
    assert doc.text == "x = 22\ny = 😀"
    assert doc.version == 2
    assert [e.start_byte for e in edits] == [4, 7]

    store.close("file:///a.py")
    store.close("file:///never-opened.py")
    assert store.get("file:///a.py") is None
    assert len(store) == 1


def test_store_change_to_unknown_uri_raises() -> None:
    store = DocumentStore()
    with pytest.raises(UnknownDocumentError) as caught:
        store.change("file:///nope.py", 1, [(None, None, "x")], UTF16)
    assert isinstance(caught.value, KeyError)


def test_store_reopen_replaces_document() -> None:
    store = DocumentStore()
    store.open("u", "python", 1, "old")
    store.open("u", "python", 5, "new")
    doc = store.get("u")
    assert doc is not None
    assert (doc.text, doc.version, len(store)) == ("new", 5, 1)


def test_thousands_of_keystrokes_on_a_large_document() -> None:
    rng = random.Random(1234)
    words = ["def", "x", "=", "(", ")", "中文", "😀", "return", "    ", "#"]
    ref = [" ".join(rng.choices(words, k=rng.randint(0, 12))) for _ in range(5000)]
    doc = Document("u", "python", 1, "\n".join(ref))
    for step in range(2000):
        row = rng.randint(2000, 3000)
        line = ref[row]
        col = rng.randint(0, len(line))
        character = sum(units(c, UTF16) for c in line[:col])
        action = rng.random()
        if action < 0.6:
            char = rng.choice("ab 中😀")
            doc.apply_change((row, character), (row, character), char, UTF16)
            ref[row] = line[:col] + char + line[col:]
        elif action < 0.8:
            doc.apply_change((row, character), (row, character), "\n", UTF16)
            ref[row : row + 1] = [line[:col], line[col:]]
        elif col < len(line):
            after = character + units(line[col], UTF16)
            doc.apply_change((row, character), (row, after), "", UTF16)
            ref[row] = line[:col] + line[col + 1 :]
        else:
            doc.apply_change((row, character), (row + 1, 0), "", UTF16)
            ref[row : row + 2] = [line + ref[row + 1]]
        if step % 250 == 0:
            assert doc.line_count == len(ref)
            assert doc.line(row) == ref[row]
            assert doc.offset_at(row, 0, UTF16) == sum(len(r) + 1 for r in ref[:row])
    expected = "\n".join(ref)
    assert doc.text == expected
    assert doc.line_count == len(ref)
    assert doc.position_at(len(expected), UTF16) == (
        len(ref) - 1,
        len(ref[-1].encode("utf-16-le")) // 2,
    )
    assert doc.byte_offset_at(len(expected)) == len(expected.encode())


# --- property tests ---------------------------------------------------------------------

ALPHABET = ["a", "b", " ", "\t", "\n", "\r\n", "\r", "\\", "😀", "中", "é", "e\u0301", "🎉"]
PY_ALPHABET = [
    *("def ", "f", "(", ")", ":", "    ", "x", " = ", "1", "'", '"', "#", "[", "]", ","),
    *("return ", "if ", " ", "\n", "\r\n", "\r", "😀", "中"),
]
BLOCK_SIZES = [2, 5, None]


def texts(alphabet: list[str], max_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(alphabet), max_size=max_size).map("".join)


Edit = tuple[tuple[int, int] | None, tuple[int, int] | None, str, PositionEncoding]


@st.composite
def changes(draw: st.DrawFn, alphabet: list[str]) -> Edit:
    encoding = draw(st.sampled_from(ENCODINGS))
    if draw(st.integers(0, 15)) == 0:
        return None, None, draw(texts(alphabet, 20)), encoding
    position = st.tuples(st.integers(-1, 9), st.integers(-1, 12))
    return draw(position), draw(position), draw(texts(alphabet, 4)), encoding


@pytest.mark.parametrize("size", BLOCK_SIZES)
@settings(max_examples=200, deadline=None)
@given(text=texts(ALPHABET, 30), edits=st.lists(changes(ALPHABET), max_size=10))
def test_edits_match_reference_model(size: int | None, text: str, edits: list[Edit]) -> None:
    with block_size(size):
        doc = Document("u", "plaintext", 1, text)
        assert_matches_reference(doc, text)
        for start, end, new_text, encoding in edits:
            text, expected_edit = ref_change(text, start, end, new_text, encoding)
            assert doc.apply_change(start, end, new_text, encoding) == expected_edit
            assert_matches_reference(doc, text)


@settings(max_examples=300, deadline=None)
@given(
    text=texts(ALPHABET, 30),
    encoding=st.sampled_from(ENCODINGS),
    line=st.integers(-2, 12),
    character=st.integers(-2, 40),
)
def test_clamp_agrees_with_the_offset_round_trip(
    text: str, encoding: PositionEncoding, line: int, character: int
) -> None:
    with block_size(2):
        doc = Document("u", "plaintext", 1, text)
        offset = doc.offset_at(line, character, encoding)
        row, column = doc.position_at(offset, PositionEncoding.UTF32)
        assert doc.clamp(line, character, encoding) == (
            row,
            column,
            doc.position_at(offset, encoding)[1],
        )


@pytest.mark.parametrize("size", [2, None])
@settings(max_examples=200, deadline=None)
@given(text=texts(ALPHABET, 30), encoding=st.sampled_from(ENCODINGS), data=st.data())
def test_positions_round_trip(
    size: int | None, text: str, encoding: PositionEncoding, data: st.DataObject
) -> None:
    with block_size(size):
        doc = Document("u", "plaintext", 1, text)
        spans = ref_spans(text)
        row = data.draw(st.integers(0, len(spans) - 1))
        start, end, _ = spans[row]
        col = data.draw(st.integers(0, end - start))
        character = sum(units(c, encoding) for c in text[start : start + col])
        offset = doc.offset_at(row, character, encoding)
        assert offset == start + col
        assert doc.position_at(offset, encoding) == (row, character)
        for o in range(len(text) + 1):
            if text[o - 1 : o + 1] != "\r\n":
                assert doc.offset_at(*doc.position_at(o, encoding), encoding) == o


NodeRange = tuple[str, int, int, tuple[int, int], tuple[int, int]]


def node_ranges(tree: Tree) -> list[NodeRange]:
    """Every node's type, bytes and points, so wrong points fail even when the sexp agrees."""
    ranges: list[NodeRange] = []
    cursor = tree.walk()
    while True:
        node = cursor.node
        assert node is not None
        ranges.append((node.type, node.start_byte, node.end_byte, node.start_point, node.end_point))
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return ranges


@pytest.mark.parametrize("size", [2, None])
@settings(max_examples=200, deadline=None)
@given(text=texts(PY_ALPHABET, 40), edits=st.lists(changes(PY_ALPHABET), max_size=8))
def test_byte_edits_drive_incremental_tree_sitter(
    size: int | None, text: str, edits: list[Edit]
) -> None:
    with block_size(size):
        doc = Document("u", "python", 1, text)
        tree = PARSER.parse(text.encode())
        for start, end, new_text, encoding in edits:
            edit_tree(tree, doc.apply_change(start, end, new_text, encoding))
            source = doc.text.encode()
            fresh = PARSER.parse(source)
            tree = PARSER.parse(source, tree)
            assert str(tree.root_node) == str(fresh.root_node)
            assert node_ranges(tree) == node_ranges(fresh)
            from_callback = PARSER.parse(doc.read_utf8)
            assert node_ranges(from_callback) == node_ranges(fresh)


def test_lines_slices_rows_across_blocks_without_terminators() -> None:
    text = "".join(f"row {n}\r\n" for n in range(400))
    document = DocumentStore().open("file:///rows.txt", "plaintext", 1, text)
    assert document.lines(0, 3) == ["row 0", "row 1", "row 2"]
    assert document.lines(126, 131) == [f"row {n}" for n in range(126, 131)]
    assert document.lines(398, 1000) == ["row 398", "row 399", ""]
    assert document.lines(-5, 1) == ["row 0"]
    assert document.lines(5, 5) == []
    assert document.lines(0, 401) == [document.line(n) for n in range(401)]


def test_the_stamp_except_a_row_holds_while_only_that_row_changes() -> None:
    doc = Document("file:///s.py", "python", 1, "a = 1\nb = 2\nc = 3\n")
    kept = doc.stamp_except(1)
    doc.apply_change((1, 5), (1, 5), "0", PositionEncoding.UTF16)
    doc.apply_change((1, 0), (1, 1), "bee", PositionEncoding.UTF16)
    assert doc.stamp_except(1) == kept
    assert doc.stamp_except(0) is None, "row 1 changed, so row 0's surroundings did"
    doc.apply_change((0, 0), (0, 0), "#", PositionEncoding.UTF16)
    assert doc.stamp_except(1) is None
    stamp = doc.stamp_except(0)
    assert stamp is not None and stamp != kept
    doc.apply_change((0, 1), (0, 1), "\n", PositionEncoding.UTF16)
    after_split = doc.stamp_except(0)
    assert after_split not in (None, stamp), "a new line moves every row below"
    assert doc.stamp_except(1) == after_split
    doc.apply_change((1, 0), (1, 0), "d", PositionEncoding.UTF16)
    assert doc.stamp_except(1) == after_split, "typing on the new row"
