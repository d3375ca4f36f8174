"""The line index: row N is one pread away, built in chunks, extended as the file grows."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer.index as index_mod
from tracer.index import IndexReset, LineIndex


def _rows(data: bytes, final: bool) -> list[bytes]:
    parts = data.split(b"\n")
    tail = parts.pop()
    return parts + ([tail] if final and tail else [])


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    torn=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
    chunk=st.integers(1, 64),
    final=st.booleans(),
)
def test_every_row_reads_back_exactly_whatever_the_chunk_size(tmp_path_factory, lines, torn, chunk, final):
    data = b"".join(line + b"\n" for line in lines) + torn
    path = tmp_path_factory.mktemp("ix") / "f"
    path.write_bytes(data)
    old = index_mod.CHUNK
    index_mod.CHUNK = chunk
    try:
        with LineIndex(path, final=final) as ix:
            ix.update(max_bytes=chunk)
            while not ix.complete:  # in steps, as the viewer does
                ix.update(max_bytes=chunk)
            expected = _rows(data, final)
            assert len(ix) == len(expected)
            assert [ix.line(i) for i in range(len(ix))] == expected
            assert [line for _, line in ix.lines(0, len(ix), block=chunk)] == expected
    finally:
        index_mod.CHUNK = old


def test_a_followed_file_gains_rows_as_lines_are_completed(tmp_path):
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":')
    with LineIndex(path, final=False) as ix:
        ix.build()
        assert len(ix) == 1  # the unterminated line is not a row yet
        with open(path, "ab") as fh:
            fh.write(b'2}\n{"c":3}\n')
        assert ix.update() == 2
        assert [ix.line(i) for i in range(len(ix))] == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_a_final_index_shows_a_torn_last_line_as_a_row(tmp_path):
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":')
    with LineIndex(path) as ix:
        ix.build()
        assert [ix.line(i) for i in range(len(ix))] == [b'{"a":1}', b'{"b":']


def test_a_truncated_file_is_reported_not_misread(tmp_path):
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b"one\ntwo\n")
    with LineIndex(path, final=False) as ix:
        ix.build()
        os.truncate(path, 2)
        with pytest.raises(IndexReset):
            ix.update()


def test_line_reads_can_be_capped(tmp_path):
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b"x" * 1000 + b"\n")
    with LineIndex(path) as ix:
        ix.build()
        assert ix.length(0) == 1000
        assert ix.line(0, limit=10) == b"x" * 10
