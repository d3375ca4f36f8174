"""The viewer reads host logs and NDJSON lazily and converts HAR and .mitm files in the background
(tracer.inputs.lazy): row for row, the rows are the lines of the capture the input converts to, for
every input format, on small hand-made inputs with
every quirk the readers handle and on large generated ones; the analysis process reads the same rows."""

from __future__ import annotations

import os
import random

import orjson
import pytest
from mitmproxy import io as mitm_io

from tests.addon_helpers import INIT, INIT_RESULT, post
from tests.gencapture import generate
from tests.geninputs import generate as generate_input
from tracer.cli.inputs import register_optional_inputs
from tracer.index import LineIndex
from tracer.inputs import open_input
from tracer.inputs.lazy import RecordIndex, open_rows
from tracer.inputs.spooled import SpoolIndex
from tracer.view.annotate import Annotator
from tracer.view.viewdata import converted_capture, open_view

CLIENT, SERVER = "Message from client: ", "Message from server: "
BOUND_S = 120  # generous: the machine is shared


def _msg(**kw) -> str:
    return orjson.dumps({"jsonrpc": "2.0", **kw}).decode()


HOSTLOG = "\n".join(
    [
        "\ufeff2025-06-13T14:44:29.900Z [info] [alpha] Initializing server...",
        f"2025-06-13T14:44:29.901Z [info] [alpha] {CLIENT}{_msg(id=0, method='initialize', params={})}"
        " { metadata: undefined }",
        # an answer logged a millisecond before its request (two logging threads)
        f"2025-06-13T14:44:29.902Z [info] [alpha] {SERVER}{_msg(id=0, result={'protocolVersion': 'x'})}",
        f"2025-06-13 14:44:29.903+02:00 [beta] [warn] {CLIENT}{_msg(id=7, method='tools/list')}\r",
        "    at Object.<anonymous> (stack trace continuation)",
        "",
        "   ",
        f"2025-06-13T14:44:29.904Z [error] [alpha] {SERVER}not json at all",
        f"2025-06-13T14:44:29.905Z [info] [alpha] {CLIENT}{_msg(id=1, method='tools/list')}",
        "2025-06-13T14:44:29.906Z [info] [alpha] Server started and connected successfully",
        "2025-06-13T14:44:30.000Z [info] [alpha] Initializing server...",  # a restart: a new connection
        f"2025-06-13T14:44:30.001Z [info] [alpha] {CLIENT}{_msg(id=0, method='initialize', params={})}",
        f"2025-06-13T14:44:30.002Z [info] [beta] {SERVER}{_msg(id=7, result={'tools': []})}",
        f"2025-06-13T14:44:30.003Z [info] [alpha] {SERVER}"
        '{"jsonrpc":"2.0","id":0,"result":{"n":123456789012345678901234}}',  # (past orjson: 64 bits)
        f"2025-06-13T14:44:30.004Z [info] [alpha] {SERVER}{_msg(method='notifications/message')}",  # no newline
    ]
).encode()

NDJSON = b"\n".join(
    [
        _msg(id=1, result={"tools": []}).encode(),  # an answer before its request (no times: 16 records)
        _msg(id=1, method="tools/list").encode(),
        b"",
        b"not json",
        orjson.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        _msg(id=2, result={}).encode() + b"\r",
        _msg(method="notifications/progress", params={"progressToken": 1, "progress": 1}).encode(),
        _msg(id="1", method="sampling/createMessage").encode(),
        _msg(id="1", result={}).encode(),  # no final newline
    ]
)


def _hostile_hostlog(n: int = 3000) -> bytes:
    """Log lines made of the pieces the host-log reader decides on, at random (seeded)."""
    rnd = random.Random(7)
    stamps = [
        b"2025-06-13T14:44:29.945Z",
        b"2025-06-13 14:44:29",
        b"2025-13-45T99:99:99Z",
        b"9999-12-31T23:59:59Z",
    ]
    brackets = [b"[info]", b"[ERROR]", b"[x]", b"[]", b"[a]", b"[b#2]", b"[s\xff]"]
    payloads = [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
        b'{"id":1,"result":NaN}',
        b'{"a":1} { metadata: undefined }',
        b"not json",
        b"",
        b'  {"x":"\\ud800"}  ',
        b"[" * 1500 + b"]" * 1500,
        b'{"s":"\xff"}',
        b'"str" more',
        b'{"id":"1","method":"ping"}',
        b'{"id":"1","result":{}}',
    ]
    rests = [
        b"Initializing server...",
        b"INITIALIZING SERVER",
        b"Message from client: ",
        b"Message from server: ",
        b"hi",
    ]
    lines = []
    for _ in range(n):
        if rnd.random() < 0.05:
            lines.append(rnd.choice([b"", b"   ", b"\tcontinuation", b"\r"]))
            continue
        rest = rnd.choice(rests)
        if rest.startswith(b"Message"):
            rest += rnd.choice(payloads)
        cr = b"\r" if rnd.random() < 0.1 else b""
        lines.append(b" ".join([rnd.choice(stamps), rnd.choice(brackets), rnd.choice(brackets), rest]) + cr)
    return b"2025-06-13T14:44:29.945Z [info] [a] start\n" + b"\n".join(lines)


def _converted_lines(path: str) -> list[bytes]:
    inp = open_input(path)
    tmp, cleanup = converted_capture(path, inp.format.name, inp.records)
    inp.fh.close()
    try:
        with LineIndex(tmp) as idx:
            idx.build()
            return [line for _, line in idx.lines(0, len(idx))]
    finally:
        cleanup()


def _viewer_lines(path: str) -> tuple[type, list[bytes]]:
    view = open_view(path)
    try:
        view.index.build()
        rows = [view.index.line(r) for r in range(len(view))]
        assert [line for _, line in view.index.lines(0, len(view))] == rows
        return type(view.index), rows
    finally:
        view.close()


def _har(tmp_path) -> str:
    capture = tmp_path / "small.jsonl"
    generate(capture, 60, 40)
    out = tmp_path / "small.har"
    generate_input(str(capture), out, "har")
    return str(out)


def _mitm(tmp_path) -> str:
    path = tmp_path / "session.flows"
    with open(path, "wb") as fh:
        w = mitm_io.FlowWriter(fh)
        for f in (post(INIT, resp=INIT_RESULT), post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})):
            w.add(f)
    return str(path)


@pytest.mark.parametrize(
    "fmt, kind",
    [
        ("hostlog", RecordIndex),
        ("hostile-hostlog", RecordIndex),
        ("ndjson", RecordIndex),
        ("har", SpoolIndex),
        ("mitm", SpoolIndex),
    ],
)
def test_the_viewer_shows_the_rows_of_the_converted_capture_for_every_input_format(tmp_path, fmt, kind):
    register_optional_inputs()
    if fmt == "hostlog":
        path = tmp_path / "mcp-server-alpha.log"
        path.write_bytes(HOSTLOG)
    elif fmt == "hostile-hostlog":
        path = tmp_path / "mcp.log"
        path.write_bytes(_hostile_hostlog())
        fmt = "hostlog"
    elif fmt == "ndjson":
        path = tmp_path / "log.ndjson"
        path.write_bytes(NDJSON)
    elif fmt == "har":
        path = _har(tmp_path)
    else:
        path = _mitm(tmp_path)
    inp = open_input(str(path))
    inp.fh.close()
    assert inp.format.name == fmt
    how, rows = _viewer_lines(str(path))
    assert how is kind, "host logs and NDJSON are read lazily, the others converted in the background"
    assert rows == _converted_lines(str(path))
    assert len(rows) > 2


@pytest.mark.parametrize("fmt", ["hostlog", "ndjson", "har"])
def test_a_large_generated_input_gives_the_same_rows_both_ways(tmp_path, fmt):
    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / f"big.{fmt}"
    generate_input(str(capture), path, fmt, swap_every=97)
    how, rows = _viewer_lines(str(path))
    assert how is (SpoolIndex if fmt == "har" else RecordIndex)
    assert rows == _converted_lines(str(path))
    assert len(rows) > 12_000 * (2 / 3 if fmt == "har" else 1)


def test_the_first_rows_are_there_before_the_whole_input_is_read(tmp_path):
    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / "big.log"
    generate_input(str(capture), path, "hostlog", swap_every=97)
    idx = RecordIndex(open_input(str(path)))
    try:
        idx.update(max_bytes=64 * 1024)
        first = len(idx)
        assert first > 50 and not idx.complete and idx.progress < 0.2
        expected = _converted_lines(str(path))
        assert [idx.line(r) for r in range(first)] == expected[:first]
        idx.build()
        assert idx.complete and len(idx) == len(expected) and idx.line(len(idx) - 1) == expected[-1]
    finally:
        idx.close()


def test_a_lazy_row_names_its_line_in_the_input(tmp_path):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(HOSTLOG)
    view = open_view(str(path), fmt="hostlog")
    try:
        view.index.build()
        assert view.lazy and view.converted
        d = view.detail(2)
        assert d.record is not None and d.record.line == 2 and d.where == "line 2 of mcp-server-alpha.log"
        assert view.basics(2).method == "initialize"
    finally:
        view.close()


def test_the_analysis_reads_a_host_log_as_the_rows_of_its_conversion(tmp_path):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(HOSTLOG)
    with open_rows(str(path)) as rows:
        assert isinstance(rows, RecordIndex)
    inp = open_input(str(path))
    tmp, cleanup = converted_capture(str(path), "hostlog", inp.records)
    inp.fh.close()
    try:
        tables = []
        for source, name in ((str(path), "lazy"), (tmp, "converted")):
            work = tmp_path / name
            work.mkdir()
            Annotator(source, str(work)).run()
            tables.append((work / "rows.bin").read_bytes())
        assert tables[0] == tables[1] and len(tables[0]) > 0
    finally:
        cleanup()
    assert not os.path.exists(tmp)


def test_a_followed_capture_is_read_by_its_lines(tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_bytes(b'{"type":"header","format":"mcp')  # its writer is mid-header: it looks like NDJSON
    with open_rows(str(path), final=False) as rows:
        assert isinstance(rows, LineIndex)


def test_a_lazy_row_too_long_to_format_pages_as_its_capture_line(tmp_path):
    from ui.screens.body import PAGE, raw_page

    path = tmp_path / "big-line.ndjson"
    path.write_bytes(_msg(id=1, method="tools/call", params={"x": "y" * (PAGE + 100)}).encode() + b"\n")
    view = open_view(str(path))
    try:
        view.index.build()
        line = _converted_lines(str(path))[1]
        _title, first, pages = raw_page(view, 1, 0)
        _title, last, _pages = raw_page(view, 1, pages - 1)
        assert view.lazy and pages == 2 and (first + last).encode() == line
    finally:
        view.close()
