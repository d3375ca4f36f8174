"""The analyser's contract: `feed` and `finish` hand back typed events (tracer.events), one loop for
every consumer: a message's `Analysed` (batch members with it), `Findings` of a record that is no
message, and `SessionClosed` with the closed session and its end-of-session findings."""

from __future__ import annotations

from tests.cases import T0, build_records, initialize, initialize_result, load_rule_cases
from tracer.analyser import Analyser, analyse_all
from tracer.events import Findings, SessionClosed, all_findings
from tracer.model import Analysed, Record, RecordType
from tracer.rules import select_rules

INIT = initialize(0, "c")
INIT_OK = initialize_result(0, capabilities={})
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _header(t_ns: int) -> Record:
    return Record(RecordType.HEADER, t_ns=t_ns, data={"format": "mcptrace", "version": 1, "t_ns": t_ns})


def test_a_message_record_gives_exactly_its_analysis_and_a_batch_brings_its_members():
    a = Analyser()
    init, batch = build_records(
        [{"c2s": INIT}, {"c2s": [{"jsonrpc": "2.0", "method": "notifications/initialized"}, LIST]}]
    )
    ev = a.feed(init)  # the analysis itself (no tuple on the hot path), iterating as its one event
    assert ev.__class__ is Analysed and ev.method == "initialize"
    assert list(ev) == [ev]
    (ev,) = a.feed(batch)
    assert ev.__class__ is Analysed and [m.method for m in ev.members] == [
        "notifications/initialized",
        "tools/list",
    ]
    # a 2025-11-25 batch is not allowed: the finding is on the batch, and all_findings walks members too
    assert list(all_findings(ev)) == ev.findings + [f for m in ev.members for f in m.findings]


def test_a_close_event_gives_the_closed_session_with_its_never_answered_request():
    a = Analyser(select_rules(["MCP211"]))
    recs = build_records([{"c2s": INIT}, {"s2c": INIT_OK}, {"c2s": LIST}, {"event": {"event": "closed"}}])
    for rec in recs[:-1]:
        assert [ev.__class__ for ev in a.feed(rec)] == [Analysed]
    (ev,) = a.feed(recs[-1])
    assert ev.__class__ is SessionClosed
    assert (
        ev.session.conn == "c1" and ev.session.closed and ev.session.init.negotiated_version == "2025-11-25"
    )
    assert [(f.rule, f.seq) for f in ev.findings] == [("MCP211", 3)]
    assert (ev.name, ev.cell, ev.t_ns) == ("c1", a.session_cells["c1"], recs[-1].t_ns)
    assert "c1" not in a.sessions  # forgotten once closed
    assert a.finish() == ()


def test_an_http_exchange_without_a_message_gives_its_findings_with_the_record():
    # MCP703's first case: a notification's POST answered 200 with no body (an `http` record)
    case = next(c for rule_id, c in load_rule_cases() if rule_id == "MCP703")
    recs = build_records(case["messages"], case["transport"])
    a = Analyser(select_rules(["MCP703"]))
    for rec in recs[:-1]:
        a.feed(rec)
    (ev,) = a.feed(recs[-1])
    assert ev.__class__ is Findings and ev.rec is recs[-1]
    assert [(f.rule, f.seq) for f in ev.findings] == [("MCP703", recs[-1].seq)]


def test_a_new_recordings_header_closes_the_earlier_sessions_in_the_order_they_began():
    a = Analyser(select_rules(["MCP211"]))
    one = build_records([{"conn": "b", "c2s": INIT}, {"conn": "a", "c2s": INIT}])
    assert a.feed(_header(T0)) == ()
    for rec in one:
        a.feed(rec)
    closed = a.feed(_header(T0 + 10**9))
    assert [ev.__class__ for ev in closed] == [SessionClosed, SessionClosed]
    assert [ev.name for ev in closed] == ["b", "a"]
    assert all(f.rule == "MCP211" for ev in closed for f in ev.findings)
    again = build_records([{"conn": "b", "c2s": INIT}])  # the next recording reuses a name
    a.feed(again[0])
    (last,) = a.finish()
    assert last.name == "b#2" and last.t_ns == a.last_t_ns


def test_run_and_analyse_all_are_the_same_loop_over_the_events():
    recs = build_records([{"c2s": INIT}, {"s2c": INIT_OK}, {"c2s": LIST}])
    events = list(Analyser().run(recs))
    assert [ev.__class__ for ev in events] == [Analysed, Analysed, Analysed, SessionClosed]
    msgs, ends = analyse_all(recs)
    assert [m.seq for m in msgs] == [1, 2, 3]
    assert [(f.rule, f.seq) for f in ends] == [(f.rule, f.seq) for f in events[-1].findings]
