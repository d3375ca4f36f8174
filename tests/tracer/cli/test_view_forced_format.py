"""`mcptrace view --input-format NAME` on a file detection would not read as NAME (a HAR whose
first key is not "log"): the check before the screen opens proves the format on the file's first
MiB, instead of parsing a HAR's whole document in the viewer before its converter begins; where the
first MiB holds no message, the whole input decides, as before (one line, exit 2, if none)."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from tracer.cli import UsageError
from tracer.cli.view import _check_input
from tracer.inputs import detect

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="counts bytes read in /proc")


def _bytes_read() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("rchar:")).split()[1])


def _entry(i: int) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": i,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"x": "y" * 900}},
    }
    answer = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "y" * 900}]}}
    return {
        "startedDateTime": "2026-11-29T10:00:00.000Z",
        "time": 1,
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:8000/mcp",
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "postData": {"mimeType": "application/json", "text": json.dumps(body)},
        },
        "response": {
            "status": 200,
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"size": 0, "mimeType": "application/json", "text": json.dumps(answer)},
        },
        "timings": {"send": 0, "wait": 1, "receive": 0},
    }


def _comment_first_har(path, entries: int = 6000) -> str:
    # a tool that writes a key of its own before "log": valid HAR, which detection does not pick
    doc = {
        "comment": "exported by a tool",
        "log": {"version": "1.2", "creator": {"name": "t"}, "entries": []},
    }
    doc["log"]["entries"] = [_entry(i) for i in range(entries)]
    path.write_text(json.dumps(doc, indent=1))
    return str(path)


def _check(path: str, fmt: str) -> str | None:
    return _check_input(path, argparse.Namespace(follow=False, input_format=fmt))


def test_the_viewer_proves_a_forced_har_format_without_reading_the_whole_document(tmp_path):
    path = _comment_first_har(tmp_path / "big.har")
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        looks = detect(fh.read(65536))
    assert size > 8 << 20 and (looks is None or looks.name != "har")
    before = _bytes_read()
    assert _check(path, "har") == "har"
    assert _bytes_read() - before < size // 4  # (its first MiB, not the whole document)


def test_a_forced_format_whose_first_mib_holds_no_message_is_still_decided_by_the_whole_input(tmp_path):
    # a host log whose first ~3 MB are other lines (host events, fewer than the proof's bound on
    # records, tracer.inputs.PROOF_RECORDS), then a message
    path = tmp_path / "late.log"
    noise = b"".join(
        b"2026-11-29T10:00:00.000Z [info] [fs] worker %d: %s\n" % (i, b"." * 1500) for i in range(2000)
    )
    message = b'2026-11-29T10:00:01.000Z [info] [fs] Message from client: {"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    path.write_bytes(noise + message)
    assert os.path.getsize(path) > 2 << 20
    assert _check(str(path), "hostlog") == "hostlog"
    # and a big input that is no HAR at all, forced as one: the wrong format, one line before any screen
    with pytest.raises(UsageError, match="read as har, it holds no message"):
        _check(str(path), "har")
