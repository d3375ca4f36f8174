"""One session's concurrent requests that reach the proxy out of order (tracer.http.tracks): the SDK
client sends each on a TCP connection of its own, so a later id can arrive first. Driven through the
mitmproxy addon with mitmproxy's own flow helpers, each exchange on a new TCP connection, beside a
second session of the same client address and User-Agent (with one session alone, every message
joins it whatever its id)."""

from __future__ import annotations

from tests.tracer.http.test_http_attribution import (
    _analysed,
    _c2s_by_conn,
    _call,
    _events,
    _init,
    _initialized,
    capture,  # noqa: F401  (the fixture)
)


def _session(addon, *ids):
    _init(addon)
    _initialized(addon)
    for n in ids:
        _call(addon, n)


def test_a_request_that_overtakes_its_predecessor_joins_the_one_session_that_has_not_used_its_id(
    capture,  # noqa: F811
):
    addon, path = capture
    _session(addon, 2, 3, 4, 5, 6, 7)  # A, further on: it already sent ids 2..7
    _session(addon, 2, 3)  # B
    for n in (5, 4, 6):  # B's 4 and 5 in flight at once: 5 arrives first
        _call(addon, n)
    assert _events(path, "unattributed") == [] and _events(path, "session-continued") == []
    assert sorted(_c2s_by_conn(path).values(), key=len) == [
        [1, "notifications/initialized", 2, 3, 5, 4, 6],
        [1, "notifications/initialized", 2, 3, 4, 5, 6, 7],
    ]
    assert _analysed(path)[1] == []


def test_an_early_request_no_evidence_places_stays_unattributed_and_its_session_goes_on(capture):  # noqa: F811
    addon, path = capture
    _session(addon, 2)  # A, at id 2
    _session(addon)  # B, at id 1: it may have sent 4 too, with 2 and 3 still on their way
    _call(addon, 4)  # A's 3 and 4 in flight: 4 arrives first; either session may have sent it
    _call(addon, 3)  # A's (B is at 1)
    _call(addon, 5)  # A's: it continues A through the 4 no session took
    _call(addon, 2)  # B's
    _call(addon, 6)  # A's
    [note] = _events(path, "unattributed")
    assert "request id 4" in note.data["why"] and len(note.data["candidates"]) == 2
    assert _events(path, "session-continued") == []
    assert sorted(_c2s_by_conn(path).values(), key=len) == [
        [4],
        [1, "notifications/initialized", 2],
        [1, "notifications/initialized", 2, 3, 5, 6],
    ]
    msgs, found = _analysed(path)
    assert found == []
    [early] = [m for m in msgs if m.rec.conn == note.conn and m.method == "tools/list"]
    assert "not attributable to one session" in early.era_reason


def test_a_late_request_two_sessions_await_stays_unattributed(capture):  # noqa: F811
    addon, path = capture
    _session(addon, 2, 3, 4, 5, 6, 7, 8, 9)  # A: every session below is clear of it
    _session(addon, 2)  # B
    _call(addon, 4)  # B's (A used 4): 3 is on its way
    _session(addon, 2)  # C
    _call(addon, 4)  # C's (A and B used 4): its 3 is on its way too
    _call(addon, 3)  # B's or C's: both still await a 3
    [note] = _events(path, "unattributed")
    assert "request id 3 is awaited by 2" in note.data["why"] and len(note.data["candidates"]) == 2
    assert _analysed(path)[1] == []


def test_a_next_id_another_session_still_awaits_is_not_guessed(capture):  # noqa: F811
    addon, path = capture
    _session(addon, 2, 3, 4, 5, 6, 7, 8, 9)  # A
    _session(addon, 2)  # B
    _call(addon, 4)  # B's (A used 4): its 3 is on its way
    _session(addon, 2)  # C, at 2: 3 is its next id, and the one B awaits
    _call(addon, 3)
    [note] = _events(path, "unattributed")
    assert "request id 3 continues 1 session-less sessions and is awaited by 1" in note.data["why"]
    assert _analysed(path)[1] == []


def test_a_request_id_far_past_its_sessions_last_one_keeps_no_holes_and_places_nothing_by_them():
    from tracer.http.tracks import HOLES_CAP, Tracks

    tracks, group = Tracks(), ("127.0.0.1", None, "e")
    tracks.handshake(group, "a", 1)
    tracks.handshake(group, "b", 1)
    tracks.sent("a", "tools/list", 2)
    tracks.sent("a", "tools/list", 2**62)  # a hostile or odd client: no range of ids is kept
    tracks.sent("b", "tools/list", 3 + HOLES_CAP)  # past the cap: every id below may be its own
    assert tracks._holes == 0
    # id 5 may be a late request of either: neither is chosen
    assert tracks.place(group, "tools/list", 5, None, [])[0] == "alone"
