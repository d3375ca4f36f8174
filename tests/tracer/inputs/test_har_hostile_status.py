"""A HAR response status no HTTP response has (past three digits, past 64 bits, a boolean) is read
as no response by both HAR readers alike, and the viewer's converted capture keeps every line of it
(a status past 64 bits used to be written into a line the capture reader then refused: a lost row)."""

from __future__ import annotations

import io
import json

import pytest

from tests.tracer.inputs.test_harstream import _streamed, _whole
from tracer.capture import ReadProblem, read_capture

INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'


def _har(status) -> dict:
    entry = {
        "startedDateTime": "2026-11-29T10:00:00.000Z",
        "time": 2,
        "request": {
            "method": "POST",
            "url": "http://h/mcp",
            "headers": [{"name": "content-type", "value": "application/json"}],
            "postData": {"mimeType": "application/json", "text": INIT},
        },
        "response": {
            "status": status,
            "headers": [{"name": "content-type", "value": "application/json"}],
            "content": {"mimeType": "application/json", "text": '{"jsonrpc":"2.0","id":1,"result":{}}'},
        },
    }
    return {"log": {"version": "1.2", "entries": [entry]}}


@pytest.mark.parametrize("status", [2**70, 2**63 + 5, 10**4, True], ids=["2**70", "2**63+5", "10**4", "true"])
def test_an_impossible_status_is_no_response_in_both_readers_and_costs_no_converted_line(tmp_path, status):
    path = tmp_path / "odd.har"
    path.write_text(json.dumps(_har(status)))
    whole, streamed = _whole(path), _streamed(path)
    assert streamed == whole
    back = list(read_capture(io.BytesIO(b"\n".join(whole) + b"\n"), "converted.jsonl"))
    assert [p for p in back if isinstance(p, ReadProblem)] == []
    assert any(b'"no response"' in line for line in whole)
