"""An exchange with odd or hostile fields still leaves every message it carries in the capture: an
SSE `retry` in digits that are not ASCII or too large for a capture to hold (the SSE spec says to
ignore the first), a request path that is not UTF-8 (mitmproxy hands it over surrogate-escaped).
Before, each of these made the capture writer or the SSE parser raise, and the messages were lost
while the proxy relayed them unchanged."""

from __future__ import annotations

import pytest

from tests.addon_helpers import INIT, INIT_RESULT, body, exchange, post, records, running_capture, stream
from tracer.model import Direction, RecordType

SSE = [(b"content-type", b"text/event-stream")]
RESULT = {"jsonrpc": "2.0", "id": 1, "result": {}}
I64_MAX = (1 << 63) - 1


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "cap.jsonl"
    with running_capture(path) as (addon, _):
        yield addon, path


def _answer(capture, retry: bytes):
    addon, path = capture
    chunk = b"retry: " + retry + b"\n\nid: 1\ndata: " + body(RESULT) + b"\n\n"
    sent = stream(addon, post(INIT, resp=None, resp_headers=SSE), [chunk])
    return b"".join(sent) == chunk, records(path)


def _answers(recs):
    return [r for r in recs if r.type is RecordType.MESSAGE and r.dir is Direction.S2C]


def _retries(recs):
    return [r.sse.get("retry") for r in recs if r.sse and r.sse.get("retry") is not None]


@pytest.mark.parametrize("retry", ["²".encode(), "١٢".encode()], ids=["superscript-two", "arabic-indic"])
def test_a_retry_field_in_digits_that_are_not_ascii_is_ignored_and_costs_no_message(capture, retry):
    relayed, recs = _answer(capture, retry)
    assert relayed
    assert [r.raw for r in _answers(recs)] == [body(RESULT)]
    assert _retries(recs) == []  # the SSE spec: a retry of anything but ASCII digits is ignored


@pytest.mark.parametrize("digits", [30, 5000])
def test_a_retry_beyond_64_bits_is_recorded_as_the_largest_a_capture_holds(capture, digits):
    relayed, recs = _answer(capture, b"9" * digits)
    assert relayed
    assert [r.raw for r in _answers(recs)] == [body(RESULT)]
    assert _retries(recs) == [I64_MAX]


def test_a_request_whose_path_is_not_utf8_is_recorded_with_its_answer(capture):
    addon, path = capture
    f = post(INIT, resp=INIT_RESULT)
    f.request.data.path = b"/mcp\xff"  # a raw 0xff in the request line, as a client sent it
    exchange(addon, f)
    recs = [r for r in records(path) if r.type is RecordType.MESSAGE]
    assert [(r.dir, r.raw) for r in recs] == [(Direction.C2S, body(INIT)), (Direction.S2C, body(INIT_RESULT))]
