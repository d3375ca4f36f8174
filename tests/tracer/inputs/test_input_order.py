"""Inputs whose order is not the wire order (host logs, NDJSON, HAR, other tools' files) may log an
answer just before its request; mcptrace's own captures never do, and keep their order as read."""

from __future__ import annotations

from tests.factory import handshake, request, result, session
from tracer.analyser import analyse_all
from tracer.capture import header_record, write_records
from tracer.inputs import open_input
from tracer.inputs.settle import settle
from tracer.model import Direction, Record, RecordType

INIT = (
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"claude-ai","version":"0.1.0"}}}'
)
INIT_RESULT = (
    '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":'
    '{"tools":{}},"serverInfo":{"name":"fs","version":"1.0"}}}'
)
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
LIST = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
LIST_RESULT = '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'
PAIRING_RULES = {"MCP203", "MCP211", "MCP408"}


def _analyse(path):
    inp = open_input(str(path))
    recs = [r for r in inp.records if isinstance(r, Record)]
    msgs, ends = analyse_all(recs)
    found = {f.rule for m in msgs for f in m.findings} | {f.rule for f in ends}
    return inp.format.name, msgs, found


def _log(tmp_path, lines):
    log = tmp_path / "mcp-server-fs.log"
    log.write_text(
        "".join(f"2025-06-13T14:44:{t} [info] [fs] Message from {who}: {body}\n" for t, who, body in lines)
    )
    return log


def test_a_host_log_answer_logged_a_millisecond_before_its_request_is_paired_with_a_note(tmp_path):
    log = _log(
        tmp_path,
        [
            ("29.945Z", "client", INIT),
            ("29.946Z", "server", INIT_RESULT),
            ("29.950Z", "client", INITIALIZED),
            ("30.101Z", "server", LIST_RESULT),
            ("30.102Z", "client", LIST),
        ],
    )
    fmt, msgs, found = _analyse(log)
    assert fmt == "hostlog"
    assert not found & PAIRING_RULES, found
    answer = next(m for m in msgs if m.kind.value == "result" and m.answers_method == "tools/list")
    assert answer.pair_status == "paired" and answer.partner_seq == 5 and answer.seq == 4
    assert "not authoritative" in answer.pair_reason and "1.0 ms before" in answer.pair_reason
    assert answer.latency_ns == 0
    assert [m.seq for m in msgs] == [1, 2, 3, 5, 4], "every record kept, the answer moved after its request"


def test_an_initialize_result_logged_before_its_request_opens_the_session(tmp_path):
    log = _log(
        tmp_path,
        [
            ("29.945Z", "server", INIT_RESULT),
            ("29.946Z", "client", INIT),
            ("29.950Z", "client", INITIALIZED),
            ("30.101Z", "client", LIST),
            ("30.102Z", "server", LIST_RESULT),
        ],
    )
    _fmt, msgs, found = _analyse(log)
    assert not found & PAIRING_RULES, found
    assert msgs[1].answers_method == "initialize" and msgs[1].version == "2025-06-18"


def test_an_answer_whose_request_comes_later_than_the_window_stays_unpaired_and_in_place(tmp_path):
    log = _log(
        tmp_path,
        [
            ("29.945Z", "client", INIT),
            ("29.946Z", "server", INIT_RESULT),
            ("29.950Z", "client", INITIALIZED),
            ("30.000Z", "server", LIST_RESULT),
            ("30.200Z", "client", LIST),
        ],
    )
    _fmt, msgs, found = _analyse(log)
    assert "MCP211" in found and found & {"MCP203", "MCP205"}  # unknown id (it follows a notification)
    assert [m.seq for m in msgs] == [1, 2, 3, 4, 5]


def test_ndjson_without_timestamps_pairs_an_answer_written_just_before_its_request(tmp_path):
    f = tmp_path / "traffic.ndjson"
    f.write_text("\n".join([INIT, INIT_RESULT, INITIALIZED, LIST_RESULT, LIST]) + "\n")
    fmt, msgs, found = _analyse(f)
    assert fmt == "ndjson"
    assert not found & PAIRING_RULES, found
    answer = next(m for m in msgs if m.answers_method == "tools/list")
    assert answer.rec.dir is Direction.S2C  # its direction, inferred, follows the request it answers


def test_an_mcptrace_capture_keeps_its_order_so_an_answer_before_its_request_is_flagged(tmp_path):
    path = tmp_path / "cap.jsonl"
    answer_first = session(
        handshake("2025-06-18"), result(2, {"tools": []}), request("tools/list", 2, {}, era="legacy")
    )
    write_records(str(path), header_record("stdio"), answer_first)
    fmt, msgs, found = _analyse(path)
    assert fmt == "capture"
    assert "MCP211" in found and found & {"MCP203", "MCP205"}
    assert [m.seq for m in msgs] == [1, 2, 3, 4, 5]


def test_settling_keeps_every_record_and_the_order_of_everything_it_does_not_move():
    t0 = 1_780_000_000_000_000_000
    recs = [
        Record(RecordType.MESSAGE, seq=1, t_ns=t0, dir=Direction.S2C, raw=LIST_RESULT.encode()),
        Record(RecordType.EVENT, seq=2, t_ns=t0 + 1, data={"event": "host-log"}),
        Record(RecordType.MESSAGE, seq=3, t_ns=t0 + 2, dir=Direction.S2C, raw=b"not json"),
        Record(RecordType.MESSAGE, seq=4, t_ns=t0 + 3, dir=Direction.C2S, raw=LIST.encode()),
        Record(
            RecordType.MESSAGE,
            seq=5,
            t_ns=t0 + 4,
            dir=Direction.S2C,
            raw=b'{"jsonrpc":"2.0","id":9,"result":{}}',
        ),
    ]
    assert [r.seq for r in settle(recs)] == [2, 3, 4, 1, 5]


def test_settling_any_mix_of_requests_and_answers_yields_every_record_exactly_once():
    import random

    rnd = random.Random(11)
    t0 = 1_780_000_000_000_000_000
    for _ in range(200):
        recs, t = [], t0
        for seq in range(1, rnd.randint(1, 80)):
            t += rnd.choice((0, 1_000_000, 30_000_000, 80_000_000))
            i = rnd.randint(1, 6)
            raw = (
                f'{{"jsonrpc":"2.0","id":{i},"method":"ping"}}'
                if rnd.random() < 0.5
                else f'{{"jsonrpc":"2.0","id":{i},"result":{{}}}}'
            )
            recs.append(
                Record(
                    RecordType.MESSAGE,
                    seq=seq,
                    t_ns=rnd.choice((t, 0)),
                    dir=rnd.choice((Direction.C2S, Direction.S2C)),
                    raw=raw.encode(),
                    conn=rnd.choice(("a", "b")),
                )
            )
        out = [r.seq for r in settle(recs)]
        assert sorted(out) == [r.seq for r in recs]
        moved = {r.seq for r in recs if r.raw.find(b'"result"') > 0} & {
            s for k, s in enumerate(out) if k and out[k - 1] > s
        }
        kept = [s for s in out if s not in moved]
        assert kept == sorted(kept), "only answers move, and only after their request"
