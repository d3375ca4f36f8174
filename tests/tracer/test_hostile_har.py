"""Hostile HAR files (issue 12, family 5): odd responses and absurd timings are read as far as they
go, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tracer.inputs import open_input

POST = {
    "method": "POST",
    "url": "http://h/mcp",
    "headers": [{"name": "content-type", "value": "application/json"}],
    "postData": {"mimeType": "application/json", "text": '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'},
}
ANSWER = {
    "status": 200,
    "headers": [{"name": "content-type", "value": "application/json"}],
    "content": {"mimeType": "application/json", "text": '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'},
}


def _entry(**kw) -> dict:
    return {
        "startedDateTime": "2026-01-01T00:00:00Z",
        "time": 5,
        "request": POST,
        "response": ANSWER,
        "timings": {"send": 1, "wait": 2, "receive": 2},
        **kw,
    }


HOSTILE = [
    {"response": "200 OK"},
    {"response": 200},
    {"response": [ANSWER]},
    {"response": None},
    {"time": 1e308},
    {"time": -1e308},
    {"timings": {"send": 1e308, "wait": 1e308}},
    {"timings": {"wait": "slow"}},
    {"startedDateTime": "9999-12-31T23:59:59Z"},
    {"startedDateTime": "0001-01-01T00:00:00Z"},
    {"startedDateTime": 12},
    {"response": {**ANSWER, "status": 2**70}},
    {"response": {**ANSWER, "headers": [{"name": "content-type", "value": ["x"]}, "junk", {"name": 1}]}},
    {"response": {**ANSWER, "content": {"text": 5}}},
]


def _write(tmp_path, entries) -> str:
    path = tmp_path / "hostile.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    return str(path)


@pytest.mark.parametrize("change", HOSTILE, ids=lambda c: repr(c)[:50])
def test_a_hostile_har_entry_is_read_as_far_as_it_goes(tmp_path, change):
    inp = open_input(_write(tmp_path, [_entry(**change), _entry()]))
    items = list(inp.records)
    inp.fh.close()
    messages = [r for r in items if getattr(r, "type", None) is not None and r.type.value == "message"]
    assert len(messages) >= 2  # the good entry's request and answer at least
    assert all(-(1 << 63) <= r.t_ns < 1 << 63 for r in messages)


def test_lint_and_the_viewers_conversion_take_a_hostile_har_without_a_traceback(tmp_path):
    path = _write(tmp_path, [_entry(**c) for c in HOSTILE])
    lint = subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--format", "json", path], capture_output=True, text=True
    )
    assert lint.returncode in (0, 1) and "Traceback" not in lint.stderr, lint.stderr
    assert json.loads(lint.stdout)["summary"]["messages"] >= len(HOSTILE)  # every request at least
    from tracer.view.viewdata import open_view

    view = open_view(path)
    try:
        assert view.grow() > len(HOSTILE)
    finally:
        view.close()
