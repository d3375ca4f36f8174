"""A long session keeps bounded state, and the rule outcomes a window could change still hold.

The windows are made small here (monkeypatched caps) so a few thousand messages cross each of them;
the state is measured in entries (tests/longsession.state_sizes), never in bytes or time.
tests/bench/bench_memory.py measures the peak RSS with the real caps.
"""

from __future__ import annotations

import pytest

from tests import longsession
from tests.cases import LEGACY_HANDSHAKE, build_records
from tracer import session as session_mod
from tracer.analyser import Analyser, analyse_all
from tracer.rules import select_rules
from tracer.state import http as http_state
from tracer.state import tables, tracking
from tracer.update import pairing as pairing_writer

CAP = 64  # every window in these tests


@pytest.fixture
def small_caps(monkeypatch):
    for mod, names in (
        (
            session_mod,
            ("ANSWERED_CAP", "CANCELLED_KEPT_CAP", "FLOW_REQUESTS_CAP"),
        ),
        (pairing_writer, ("DETAIL_CAP", "CANCELLED_CAP")),
        (tables, ("USED_IDS_CAP", "ID_RANGES_CAP")),
        (tracking, ("TRACK_CAP", "FLOW_REQUESTS_CAP")),
        (http_state, ("FLOW_CAP", "EVENT_IDS_CAP", "RECENT_CAP")),
    ):
        for name in names:
            monkeypatch.setattr(mod, name, CAP)


def _largest_tables(mode: str, messages: int) -> dict[str, int]:
    """The largest size each session table reached along one long session of MODE."""
    a = Analyser()
    sizes: dict[str, int] = {}
    for i, rec in enumerate(longsession.records(mode, messages)):
        a.feed(rec)
        if i % 500 == 0:
            for s in a.sessions.values():
                for k, v in longsession.state_sizes(s).items():
                    sizes[k] = max(sizes.get(k, 0), v)
    return sizes


@pytest.mark.parametrize("mode", longsession.MODES)
def test_no_session_table_outgrows_its_window_in_a_long_session(small_caps, mode):
    sizes = _largest_tables(mode, 3_000)
    # the cancelled requests still pending: CANCELLED_CAP, plus the few in flight
    assert sizes["session.pending"] <= CAP + 4
    # the session's pending cancellations and answered-with-params lists: one window each
    over = {k: v for k, v in sizes.items() if v > CAP + 4}
    assert over == {}
    # and the windows were really crossed: the session is long enough to show growth
    assert sizes["session.answered"] == CAP


def test_a_long_session_lints_clean_as_its_first_cycles_do(small_caps):
    """A cap that forgot what a rule needs would show as findings only once the window is crossed."""
    for mode in longsession.MODES:
        msgs, ends = analyse_all(longsession.records(mode, 3_000))
        found = sorted({f.rule for m in msgs for f in m.findings} | {f.rule for f in ends})
        assert found in ([], ["MCP905"]), (mode, found)  # (MCP905: the SDK asks for logs, deprecated)


# -- the outcomes a window could change --------------------------------------------------------

INIT = LEGACY_HANDSHAKE


def _calls(ids) -> list[dict]:
    out = []
    for i in ids:
        out.append(
            {
                "c2s": {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"i": i}},
                }
            }
        )
        out.append({"s2c": {"jsonrpc": "2.0", "id": i, "result": {"content": []}}})
    return out


def _findings(entries, *rules):
    msgs, ends = analyse_all(build_records(entries), select_rules(list(rules)))
    return [(f.rule, f.seq, f.message) for m in msgs for f in m.findings] + [
        (f.rule, f.seq, f.message) for f in ends
    ]


def test_a_legacy_id_reused_long_after_its_window_is_still_flagged(small_caps):
    entries = INIT + _calls(range(1, 10 * CAP)) + _calls(["req-a"]) + _calls(range(10 * CAP, 12 * CAP))
    entries += _calls(["req-b"] + [f"x{i}" for i in range(3 * CAP)])
    entries += [
        {"c2s": {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}},
        {"c2s": {"jsonrpc": "2.0", "id": "req-a", "method": "tools/list"}},
    ]  # (never answered: no matter)
    found = _findings(entries, "MCP201")
    assert [(rule, seq) for rule, seq, _ in found] == [("MCP201", len(entries) - 1), ("MCP201", len(entries))]
    assert "id 7 was already used earlier in this session" in found[0][2]


def test_a_legacy_id_reused_within_its_window_names_the_earlier_request(small_caps):
    entries = (
        INIT + _calls(range(1, CAP // 2)) + [{"c2s": {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}}]
    )
    found = _findings(entries, "MCP201")
    assert len(found) == 1 and "id 5 was already used at seq 12 in this session" in found[0][2]


def test_fresh_ids_are_not_taken_for_reused_ones_after_the_window(small_caps):
    # ids counting up, then down, then scattered: runs merge and split, and no new id is flagged
    ids = (
        list(range(1, 5 * CAP))
        + list(range(20 * CAP, 10 * CAP, -1))
        + [100_000 + 7 * i for i in range(3 * CAP)]
    )
    assert _findings(INIT + _calls(ids), "MCP201") == []


def test_a_duplicate_answer_within_the_window_is_still_flagged(small_caps):
    entries = INIT + _calls(range(1, 5 * CAP))
    entries += _calls(range(5 * CAP, 5 * CAP + CAP // 2))
    entries.append({"s2c": {"jsonrpc": "2.0", "id": 5 * CAP, "result": {"content": []}}})
    found = _findings(entries, "MCP204")
    assert [(rule, seq) for rule, seq, _ in found] == [("MCP204", len(entries))]


def _cancelled_calls(n: int, first_id: int = 1) -> list[dict]:
    out = []
    for i in range(first_id, first_id + n):
        out.append(
            {
                "c2s": {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": f"p{i}"}},
                }
            }
        )
        out.append(
            {"c2s": {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}}
        )
    return out


def test_cancelled_requests_leave_the_pending_table_past_the_window(small_caps):
    entries = INIT + _cancelled_calls(5 * CAP)
    a = Analyser()
    for rec in build_records(entries):
        a.feed(rec)
    s = a.sessions["c1"]
    assert len(s.pending) == CAP and len(s.cancelled) == CAP
    assert all(r.msg is None and r.params is None for r in s.cancelled.values())
    # and none of them is "never answered": they were cancelled
    assert [f for ev in a.finish() for f in ev.findings if f.rule == "MCP211"] == []


def test_a_late_answer_to_a_request_cancelled_long_ago_still_pairs_after_cancel(small_caps):
    entries = INIT + _cancelled_calls(2 * CAP)
    late = {"s2c": {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}, "t_ms": 10_000}
    found = _findings([*entries, late], "MCP203", "MCP504")
    assert [(rule, seq) for rule, seq, _ in found] == [("MCP504", len(entries) + 1)]


def test_a_second_cancel_of_a_request_cancelled_long_ago_names_a_known_request(small_caps):
    entries = INIT + _cancelled_calls(2 * CAP)
    again = {"c2s": {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}}
    assert _findings([*entries, again], "MCP501", "MCP503") == []


def test_an_answered_request_keeps_its_params_only_in_the_newest_window(small_caps):
    a = Analyser()
    for rec in build_records(INIT + _calls(range(1, 3 * CAP))):
        a.feed(rec)
    s = a.sessions["c1"]
    kept = [r for r in s.answered.values() if r.params is not None]
    assert len(s.answered) == CAP and all(r.msg is None for r in s.answered.values())
    assert kept == list(s.detailed) and len(kept) == CAP
