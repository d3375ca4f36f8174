"""One header lookup (tracer.http.headers.header) for every recorded or parsed header list: names
case-insensitive, values as sent, the first of repeats, and no exception for a list of another shape."""

from __future__ import annotations

import pytest

from tests.factory import legacy_sse_stream
from tracer.http.headers import header
from tracer.http.wire import Headers

RECORDED = [
    ["Content-Type", "application/json"],
    ["MCP-Protocol-Version", "2026-07-28"],
    ["mcp-protocol-version", "x"],
]


@pytest.mark.parametrize("name", ["mcp-protocol-version", "MCP-PROTOCOL-VERSION", "Mcp-Protocol-Version"])
def test_a_header_is_found_by_its_name_in_any_case_and_the_first_of_repeats_wins(name):
    assert header(RECORDED, name) == "2026-07-28"


def test_an_older_capture_s_header_object_and_parsed_wire_pairs_read_the_same():
    assert header({"Content-Type": "text/event-stream"}, "content-type") == "text/event-stream"
    assert header([("Mcp-Session-Id", "s1")], "mcp-session-id") == "s1"
    assert Headers([("Content-Type", "text/plain")]).get("content-type") == "text/plain"
    assert Headers([]).get("content-type", "none") == "none"


def test_an_absent_header_or_an_empty_list_is_none_and_an_empty_value_is_kept():
    assert header(RECORDED, "mcp-session-id") is None
    assert header([], "content-type") is None
    assert header(None, "content-type") is None
    assert header([["Mcp-Session-Id", ""]], "mcp-session-id") == ""


@pytest.mark.parametrize(
    "headers",
    [
        "content-type: text/plain",
        42,
        [["content-type"]],
        [["content-type", "a", "b"]],
        [[7, "text/plain"]],
        [None, 3, "content-type"],
        [["content-type", 5]],
    ],
)
def test_a_header_list_of_another_shape_never_raises_and_finds_nothing(headers):
    assert header(headers, "content-type") is None


def test_an_entry_of_another_shape_is_skipped_and_the_next_one_found():
    assert header([["x"], {"a": 1}, ["Content-Type", "text/plain"]], "content-type") == "text/plain"


def test_an_endpoint_event_naming_an_authority_urllib_refuses_still_opens_its_session():
    # (`http://[x/`: urljoin raised ValueError, and the stream's session and records were lost)
    out: list = []
    tee = legacy_sse_stream(out)
    tee.feed(b"event: endpoint\ndata: http://[bad/messages?sessionId=abcdef0123456789\n\n")
    (endpoint,) = [r.data for r in out if (r.data or {}).get("event") == "endpoint"]
    assert endpoint["url"] == "http://[bad/messages?sessionId=abcdef0123456789"
    assert tee.rec.end_sse_session(out[-1].conn)
