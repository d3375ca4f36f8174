"""Which session a session-less legacy message on a new TCP connection joins when several
handshakes of one client address and User-Agent could take it (tracer.http.tracks), driven through
the mitmproxy addon with mitmproxy's own flow helpers, each exchange on a TCP connection of its own
(what the official SDK client does against a server with stateless_http=True)."""

from __future__ import annotations

import collections
import itertools
import json

import pytest

from tests.addon_helpers import ACCEPT_BOTH, exchange, post, records, running_capture
from tests.cases import initialize, initialize_result
from tracer.analyser import analyse_all
from tracer.model import Direction, Era, RecordType

LEGACY = (ACCEPT_BOTH, (b"content-type", b"application/json"), (b"mcp-protocol-version", b"2025-11-25"))
_ports = itertools.count(50001)


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "cap.jsonl"
    with running_capture(path) as (addon, _):
        yield addon, path


def _send(addon, obj, resp=None, *, answered=True):
    """OBJ on a new TCP connection; its answer RESP (a notification: 202) unless not ANSWERED."""
    status = 200 if resp is not None else 202
    f = post(
        obj,
        headers=LEGACY,
        resp=resp if resp is not None else b"",
        status=status,
        resp_headers=[(b"content-type", b"application/json")] if resp is not None else [],
        client=("127.0.0.1", next(_ports)),
    )
    if answered:
        exchange(addon, f)
        addon.client_disconnected(f.client_conn)
    else:
        addon.request(f)
    return f


def _init(addon):
    _send(addon, initialize(1), initialize_result(1))


def _initialized(addon):
    _send(addon, {"jsonrpc": "2.0", "method": "notifications/initialized"})


def _call(addon, n, *, answered=True):
    req = {"jsonrpc": "2.0", "id": n, "method": "tools/list"}
    _send(addon, req, {"jsonrpc": "2.0", "id": n, "result": {"tools": []}}, answered=answered)


def _analysed(path):
    msgs, ends = analyse_all(records(path))
    found = [f.rule for m in msgs for f in m.findings] + [f.rule for f in ends]
    return msgs, found


def _c2s_by_conn(path) -> dict[str, list]:
    out = collections.defaultdict(list)
    for r in records(path):
        if r.type is RecordType.MESSAGE and r.dir is Direction.C2S:
            obj = json.loads(r.raw)
            out[r.conn].append(obj.get("id", obj.get("method")))
    return dict(out)


def _events(path, name):
    return [r for r in records(path) if r.type is RecordType.EVENT and (r.data or {}).get("event") == name]


def test_each_message_joins_the_one_handshake_whose_request_ids_it_continues(capture):
    addon, path = capture
    _init(addon)  # A
    _initialized(addon)
    _call(addon, 2)
    _call(addon, 3)
    _init(addon)  # B: A is at id 3, B at 1
    _initialized(addon)  # only B's handshake awaits it
    _call(addon, 2)  # continues B
    _call(addon, 4)  # continues A
    _call(addon, 3)  # continues B
    assert sorted(_c2s_by_conn(path).values()) == [
        [1, "notifications/initialized", 2, 3],
        [1, "notifications/initialized", 2, 3, 4],
    ]
    assert _events(path, "unattributed") == [] and _events(path, "session-continued") == []
    assert _analysed(path)[1] == []


def test_two_sessions_at_one_point_go_on_as_continued_connections_without_a_false_finding(capture):
    addon, path = capture
    _init(addon)
    _initialized(addon)
    _init(addon)
    _initialized(addon)
    for n in (2, 2, 3, 3, 4):  # in lockstep: each request could be either session's
        _call(addon, n)
    assert _analysed(path)[1] == []
    continued = _events(path, "session-continued")
    assert continued and all(len(e.data["of"]) >= 1 and e.data["why"] for e in continued)
    # no connection holds a request id twice: each is one session's messages, in order
    for ids in _c2s_by_conn(path).values():
        nums = [i for i in ids if isinstance(i, int)]
        assert len(nums) == len(set(nums)) and nums == sorted(nums)
    # the two handshakes ended where the sessions met: they are closed, not left open
    closed = {r.conn for r in _events(path, "connection-closed")}
    handshakes = {conn for conn, ids in _c2s_by_conn(path).items() if ids[0] == 1}
    assert len(handshakes) == 2 and handshakes <= closed


def test_a_cancel_two_sessions_may_have_sent_is_judged_by_nothing_and_leaves_no_false_finding(capture):
    addon, path = capture
    for _ in range(2):  # A, then B: each gets to a tools/list id 3 left in progress
        _init(addon)
        _initialized(addon)
        _call(addon, 2)
        _call(addon, 3, answered=False)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    _send(addon, cancel)
    [note] = _events(path, "unattributed")
    assert note.data["cancels"] == 3 and len(note.data["candidates"]) == 2
    msgs, found = _analysed(path)
    # not "the client never sent request 3" (MCP502) on the cancel's connection, nor "request 3
    # was never answered" (MCP211) for the one that was cancelled, whichever it was
    assert found == []
    [m] = [m for m in msgs if m.method == "notifications/cancelled"]
    assert m.rec.conn == note.conn and m.era is Era.UNKNOWN
    assert "not attributable to one session" in m.era_reason and "cancel of request 3" in m.era_reason


def test_a_notification_no_evidence_places_goes_on_a_connection_of_its_own(capture):
    addon, path = capture
    for _ in range(2):
        _init(addon)
        _initialized(addon)
    _send(addon, {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    [note] = _events(path, "unattributed")
    assert "notifications/roots/list_changed" in note.data["why"]
    msgs, found = _analysed(path)
    assert found == []
    [m] = [m for m in msgs if m.method == "notifications/roots/list_changed"]
    assert m.era is Era.UNKNOWN and m.rec.conn == note.conn


def test_an_initialized_two_handshakes_at_different_points_await_leaves_neither_judged_uninitialized(capture):
    addon, path = capture
    _init(addon)  # A
    _call(addon, 2)  # A's client asks before it says initialized (MCP407 would be right alone)
    _init(addon)  # B
    _initialized(addon)  # A's or B's: they are at ids 2 and 1
    _initialized(addon)
    _call(addon, 3)  # A
    _call(addon, 2)  # B
    assert len(_events(path, "unattributed")) == 2
    assert "MCP407" not in _analysed(path)[1]


@pytest.mark.parametrize(
    "data",
    [
        {"event": "unattributed", "why": 5, "candidates": {"a": 1}, "cancels": [1]},
        {"event": "unattributed", "candidates": ["a", 3, None, ["b"]], "cancels": {"x": 1}, "method": 7},
        {"event": "unattributed", "why": "", "candidates": ["a"] * 10_000, "cancels": 1.5},
    ],
)
def test_a_hand_made_unattributed_event_of_any_shape_is_read_without_error(data):
    from tracer.model import Record

    req = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    recs = [
        Record(RecordType.MESSAGE, seq=1, dir=Direction.C2S, raw=req, transport="http", conn="a"),
        Record(RecordType.EVENT, seq=2, transport="http", conn="x", data=data),
        Record(RecordType.MESSAGE, seq=3, dir=Direction.C2S, raw=req, transport="http", conn="x"),
    ]
    msgs, _ = analyse_all(recs)
    assert msgs[1].era is Era.UNKNOWN and msgs[1].era_reason.startswith("not attributable to one session")


def _prompts(addon, n):
    req = {"jsonrpc": "2.0", "id": n, "method": "prompts/list"}
    _send(addon, req, {"jsonrpc": "2.0", "id": n, "result": {"prompts": []}})


def test_a_session_continued_from_identical_handshakes_is_still_judged_by_that_handshake(capture):
    addon, path = capture
    for _ in range(2):  # two runs of one client against one server: the same handshake
        _send(addon, initialize(1), initialize_result(1, capabilities={"tools": {}}))
        _initialized(addon)
    _call(addon, 2)
    _prompts(addon, 2)  # the server declared no prompts (MCP417), whichever session asked
    msgs, found = _analysed(path)
    [m] = [m for m in msgs if m.method == "prompts/list"]
    assert m.rec.conn in {e.conn for e in _events(path, "session-continued")}
    assert [f.rule for f in m.findings] == ["MCP417"] and found == ["MCP417"]


def test_a_session_continued_from_different_handshakes_is_judged_by_none(capture):
    addon, path = capture
    for caps in ({"tools": {}}, {"tools": {}, "prompts": {}}):
        _send(addon, initialize(1), initialize_result(1, capabilities=caps))
        _initialized(addon)
    _call(addon, 2)
    _prompts(addon, 2)  # allowed by one of them: which one asked cannot be told
    assert _analysed(path)[1] == []


def test_sessions_one_after_another_keep_the_handshakes_remembered_bounded(capture):
    from tracer.http.tracks import TRACKS_CAP

    addon, path = capture
    sessions = TRACKS_CAP + 36
    for _ in range(sessions):
        _init(addon)
        _initialized(addon)
        _call(addon, 2)
    by_conn = _c2s_by_conn(path)
    assert len(by_conn) == sessions and all(
        ids == [1, "notifications/initialized", 2] for ids in by_conn.values()
    )
    # past the cap the oldest are forgotten and their connections end, so the analysis forgets them
    assert len({r.conn for r in _events(path, "connection-closed")}) == sessions - TRACKS_CAP
    assert _analysed(path)[1] == []


def test_sessions_that_met_before_saying_initialized_are_not_judged_uninitialized(capture):
    addon, path = capture
    _init(addon)
    _init(addon)
    _call(addon, 2)  # both clients ask before saying initialized, in lockstep
    _call(addon, 2)
    _initialized(addon)  # whose: cannot be told
    _initialized(addon)
    _call(addon, 3)
    _call(addon, 3)
    assert not {"MCP407", "MCP409"} & set(_analysed(path)[1])
