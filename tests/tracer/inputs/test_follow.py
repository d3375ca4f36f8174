"""`mcptrace view --follow` on a host log or NDJSON file still being written (tracer.inputs.follow,
tracer.cli.spool --follow): the reader resumes at the end of the file with its state, a last line
still being written waits for its newline, and a file truncated or rotated away is said, not
crashed on. The rows are always the converted capture's of what has been written."""

from __future__ import annotations

import os
import threading
import time

import pytest

from tests.tracer.view.test_view_lazy_rows import HOSTLOG, NDJSON, _converted_lines
from tracer.inputs.follow import GrowingFile
from tracer.inputs.lazy import InputBroken
from tracer.inputs.spooled import SpoolIndex
from tracer.view.viewdata import open_view

BOUND_S = 120  # generous: the machine is shared
STEP_S = 0.02  # between two looks at a condition (a poll, never a synchronisation)


def _until(cond, what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {BOUND_S} s: {what}")
        time.sleep(STEP_S)


def _rows(view) -> list[bytes]:
    return [view.index.line(r) for r in range(len(view))]


def _caught_up(view) -> bool:
    view.grow()
    return view.index.complete


@pytest.mark.parametrize("fmt", ["hostlog", "ndjson"])
def test_a_followed_file_shows_what_is_appended_with_the_rows_of_the_whole_files_conversion(tmp_path, fmt):
    data = (HOSTLOG if fmt == "hostlog" else NDJSON) + b"\n"
    path = tmp_path / ("mcp-server-alpha.log" if fmt == "hostlog" else "log.ndjson")
    expected = _converted_lines(_whole(tmp_path, path.name, data))
    # cut in the middle of lines, and at a line's end, and written piece by piece
    cuts = sorted({len(data) // 3, len(data) // 3 + 5, data.index(b"\n", len(data) // 2) + 1, len(data)})
    path.write_bytes(data[: cuts[0]])
    view = open_view(str(path), follow=True)
    try:
        assert isinstance(view.index, SpoolIndex) and view.follow
        view.index.update(max_bytes=view.index.FIRST_STEP)
        for cut in cuts[1:]:
            _until(lambda: _caught_up(view), "the rows written so far")
            shown = _rows(view)
            assert shown == expected[: len(shown)], "a row shown is never one that changes later"
            written = os.path.getsize(path)
            with open(path, "ab") as fh:
                fh.write(data[written:cut])
        _until(lambda: _caught_up(view) and len(view) == len(expected), "every row")
        assert _rows(view) == expected
    finally:
        view.close()


def _whole(tmp_path, name: str, data: bytes) -> str:
    """DATA as a file of its own of the same name (the converted header names it)."""
    whole = tmp_path / "whole"
    whole.mkdir(exist_ok=True)
    path = whole / name
    path.write_bytes(data)
    return str(path)


def test_a_last_line_still_being_written_waits_for_its_newline(tmp_path):
    path = tmp_path / "log.ndjson"
    first = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'
    path.write_bytes(first + b'{"jsonrpc":"2.0","id":1,"res')
    view = open_view(str(path), follow=True)
    try:
        _until(lambda: _caught_up(view) and len(view) == 2, "the first line")
        assert b"res" not in view.index.line(1)
        with open(path, "ab") as fh:
            fh.write(b'ult":{"tools":[]}}\n')
        _until(lambda: _caught_up(view) and len(view) == 3, "the line once whole")
        assert _rows(view) == _converted_lines(_whole(tmp_path, path.name, path.read_bytes()))
    finally:
        view.close()


@pytest.mark.parametrize("how", ["truncated", "rotated", "removed"])
def test_a_followed_file_truncated_or_rotated_away_is_said_and_its_rows_stay(tmp_path, how):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(HOSTLOG + b"\n")
    view = open_view(str(path), follow=True)
    try:
        _until(lambda: _caught_up(view) and len(view) > 10, "the log")
        before = _rows(view)
        if how == "truncated":
            os.truncate(path, 0)
        elif how == "rotated":  # (Claude Desktop: mcp.log -> mcp1.log, a new mcp.log)
            os.rename(path, tmp_path / "mcp-server-alpha1.log")
            path.write_bytes(HOSTLOG[:100])
        else:
            os.unlink(path)
        said: list[str] = []

        def ended() -> bool:
            try:
                view.grow()
            except InputBroken as exc:
                said.append(str(exc))
            return bool(said)

        _until(ended, "following to end")
        assert "following stopped" in said[0] and {"truncated": "truncated"}.get(how, "rotated") in said[0]
        assert _rows(view) == before
        view.grow()  # (said once; nothing more to say)
    finally:
        view.close()


def test_a_read_waiting_at_the_end_of_a_growing_file_returns_when_stopped(tmp_path):
    path = tmp_path / "x.log"
    path.write_bytes(b"one\n")
    stop = threading.Event()
    idle = threading.Event()
    raw = GrowingFile(str(path), stop=stop, on_idle=idle.set)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(iter(lambda: raw.read(100), b"")))
    reader.start()
    try:
        assert idle.wait(BOUND_S), "the reader waits at the end"
        assert reader.is_alive() and b"".join(got) == b"one\n"
    finally:
        stop.set()
        reader.join(BOUND_S)
        raw.close()
    assert not reader.is_alive()
