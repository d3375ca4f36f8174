"""Inputs that are streams, not files: `mcptrace lint -`, a pipe, a FIFO, /dev/stdin. Every format that
is sniffed from its first bytes reads the same from a pipe as from the file; a forced format that reads
nothing is an input error. Real subprocesses, as a user (or `kubectl logs ... | mcptrace lint -`) runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import orjson
import pytest
from mitmproxy import io as mitm_io

from tests.addon_helpers import INIT, INIT_RESULT, post
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, Record, RecordType

LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
STRAY = {"jsonrpc": "2.0", "id": 99, "result": {}}  # answers nothing: an MCP203 error
SESSION = [("c2s", INIT), ("s2c", INIT_RESULT), ("c2s", LIST), ("s2c", STRAY)]


def _capture(path):
    with CaptureWriter(path, header_record("stdio")) as w:
        for d, obj in SESSION:
            w.write(Record(RecordType.MESSAGE, dir=Direction(d), raw=orjson.dumps(obj), conn="c1"))


def _ndjson(path):
    path.write_bytes(b"".join(orjson.dumps(obj) + b"\n" for _, obj in SESSION))


def _hostlog(path):
    who = {"c2s": "client", "s2c": "server"}
    path.write_text(
        "2025-06-13T14:44:29.900Z [fs] [info] Initializing server...\n"
        + "".join(
            f"2025-06-13T14:44:3{i}.123Z [fs] [info] Message from {who[d]}: {json.dumps(obj)}\n"
            for i, (d, obj) in enumerate(SESSION)
        )
    )


def _har(path):
    def entry(i, req, resp):
        return {
            "startedDateTime": f"2025-06-13T14:44:3{i}.000Z",
            "time": 10,
            "request": {
                "method": "POST",
                "url": "https://mcp.example.com/mcp",
                "httpVersion": "HTTP/1.1",
                "headers": [{"name": "content-type", "value": "application/json"}],
                "postData": {"mimeType": "application/json", "text": json.dumps(req)},
            },
            "response": {
                "status": 200,
                "headers": [{"name": "content-type", "value": "application/json"}],
                "content": {"mimeType": "application/json", "text": json.dumps(resp)},
            },
        }

    path.write_text(
        json.dumps(
            {"log": {"version": "1.2", "entries": [entry(0, INIT, INIT_RESULT), entry(1, LIST, STRAY)]}}
        )
    )


def _mitm(path):
    with open(path, "wb") as fh:
        w = mitm_io.FlowWriter(fh)
        for i, (req, resp) in enumerate([(INIT, INIT_RESULT), (LIST, STRAY)]):
            f = post(req, resp=resp)
            f.request.timestamp_start, f.request.timestamp_end = 1000.0 + i, 1000.001 + i
            f.response.timestamp_start, f.response.timestamp_end = 1000.002 + i, 1000.003 + i
            w.add(f)


WRITERS = {"capture": _capture, "ndjson": _ndjson, "hostlog": _hostlog, "har": _har, "mitm": _mitm}


def _lint(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--format", "json", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def _findings(proc):
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    return report, [(f["rule"], f["line"], f["message"]) for f in report["findings"]]


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_every_format_piped_into_lint_dash_reads_as_the_file_does(tmp_path, fmt):
    path = tmp_path / f"input.{fmt}"
    WRITERS[fmt](path)
    _, from_file = _findings(_lint(str(path)))
    assert "MCP203" in {r for r, _, _ in from_file}, from_file
    piped = _lint("-", stdin=path.read_bytes())  # input= is a pipe: nothing to seek back in
    report, from_pipe = _findings(piped)
    assert from_pipe == from_file
    assert report["files"] == [{"path": "-", "format": fmt}]
    assert {f["file"] for f in report["findings"]} == {"-"}
    assert piped.returncode == 1 and b"internal error" not in piped.stderr


def test_a_fifo_and_dev_stdin_are_read_like_a_pipe(tmp_path):
    path = tmp_path / "c.jsonl"
    _capture(path)
    _, expected = _findings(_lint(str(path)))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(path.read_bytes())

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        assert _findings(_lint(str(fifo)))[1] == expected
    finally:
        writer.join(timeout=60)
    assert _findings(_lint("/dev/stdin", stdin=path.read_bytes()))[1] == expected


def test_an_empty_pipe_and_binary_garbage_on_stdin_are_one_line_and_exit_2():
    for data, why in ((b"", "empty input"), (bytes(range(256)) * 20, "not a recognised MCP capture")):
        p = _lint("-", stdin=data)
        assert p.returncode == 2, p.stderr
        assert p.stderr.count(b"\n") == 1 and why.encode() in p.stderr and b"standard input" in p.stderr
        assert p.stdout == b""


@pytest.mark.parametrize(
    "forced, actual", [("hostlog", "capture"), ("capture", "ndjson"), ("har", "hostlog")]
)
def test_a_forced_format_that_reads_no_message_is_an_input_error_naming_what_the_file_looks_like(
    tmp_path, forced, actual
):
    path = tmp_path / "input.log"
    WRITERS[actual](path)
    p = _lint("--input-format", forced, str(path))
    assert p.returncode == 2, p.stdout
    assert p.stderr.count(b"\n") == 1 and b"Traceback" not in p.stderr
    assert f"read as {forced}, it holds no message".encode() in p.stderr
    assert f"--input-format {actual}".encode() in p.stderr
    assert p.stdout == b""


def test_a_forced_format_that_matches_still_reads_a_header_only_capture(tmp_path):
    path = tmp_path / "empty.jsonl"
    with CaptureWriter(path, header_record("stdio")):
        pass
    p = _lint("--input-format", "capture", str(path))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["summary"]["messages"] == 0


def test_a_utf8_bom_from_a_windows_tool_is_skipped_in_a_file_and_in_a_pipe(tmp_path):
    path = tmp_path / "traffic.ndjson"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(orjson.dumps(obj) + b"\n" for _, obj in SESSION))
    _, from_file = _findings(_lint(str(path)))
    assert ("MCP203", 4) in [(r, line) for r, line, _ in from_file], "the first line is read as a message"
    assert _findings(_lint("-", stdin=path.read_bytes()))[1] == from_file


def test_a_reader_that_a_file_trips_up_is_an_input_error_not_an_internal_one(tmp_path, monkeypatch, capsys):
    from tracer import inputs
    from tracer.cli import main

    def fragile(fh, source):
        yield from ()
        raise KeyError("log")  # what a reader's unchecked lookup raises on a hostile file

    inputs._ensure_builtin()
    monkeypatch.setattr(inputs, "FORMATS", list(inputs.FORMATS))
    inputs.register(
        inputs.InputFormat(
            "fragile", "a fragile format", lambda head: head.startswith(b"FRAGILE"), fragile, priority=1
        )
    )
    path = tmp_path / "x.fragile"
    path.write_bytes(b"FRAGILE\n")
    assert main(["lint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err
    assert f"{path}: cannot be read as a fragile format: KeyError" in err


def test_replay_reads_its_capture_from_a_pipe_as_from_the_file(tmp_path):
    from tests.replay_support import mcptrace
    from tests.sdk_peers import CAPTURES, server_cmd

    legacy = CAPTURES / "sdk-stdio-legacy.jsonl"
    runs = [
        mcptrace(
            "replay",
            src,
            "-o",
            str(tmp_path / f"new{i}.jsonl"),
            "--format",
            "json",
            "--",
            *server_cmd(),
            stdin=legacy.read_text(),
        )
        for i, src in enumerate((str(legacy), "-"))
    ]
    assert [p.returncode for p in runs] == [0, 0], runs[1].stderr
    from_file, from_pipe = (
        [(r["request"], r["outcome"]) for r in json.loads(p.stdout)["requests"]] for p in runs
    )
    assert from_pipe == from_file and ("initialize", "same") in from_pipe


def test_a_stdio_mock_refuses_a_capture_on_standard_input_in_one_line():
    p = subprocess.run(
        [sys.executable, "-m", "tracer", "mock", "-"], input=b"", capture_output=True, timeout=60
    )
    assert p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"--listen" in p.stderr


def test_standard_input_given_twice_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "c.jsonl"
    _capture(path)
    p = _lint("-", "-", stdin=path.read_bytes())
    assert p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"once per run" in p.stderr


def test_an_input_error_met_anywhere_in_a_command_is_one_line_and_exit_2(monkeypatch, capsys):
    import tracer.cli.rules as rules_cmd
    from tracer.cli import main
    from tracer.inputs import InputError

    def reads_late(args):  # a command that meets an unreadable input after it has started
        raise InputError("late.jsonl: cannot be read")

    monkeypatch.setattr(rules_cmd, "run", reads_late)
    assert main(["rules"]) == 2
    err = capsys.readouterr().err
    assert err == "mcptrace: error: late.jsonl: cannot be read\n"
