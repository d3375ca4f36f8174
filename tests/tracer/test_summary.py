"""Session summary numbers, checked against what a user would count by hand in the capture."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import orjson

from tracer.analyser import Analyser
from tracer.capture import ReadProblem, read_capture
from tracer.events import SessionClosed
from tracer.latency import percentile
from tracer.model import Analysed, Finding, RecordType, Severity
from tracer.summary import SummaryBuilder

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"


def summarise(path: Path) -> dict:
    b = SummaryBuilder()
    a = Analyser()
    with open(path, "rb") as fh:
        for rec in read_capture(fh, str(path)):
            if isinstance(rec, ReadProblem):
                continue
            b.add_record(rec)
            for ev in a.feed(rec):
                if ev.__class__ is Analysed:
                    b.add(ev)
                else:
                    for f in ev.findings:
                        b.add_finding(f)
                    if ev.__class__ is SessionClosed:
                        b.session_closed(ev.session, ev.name, ev.cell)
    for ev in a.finish():
        for f in ev.findings:
            b.add_finding(f)
        b.session_closed(ev.session, ev.name, ev.cell)
    return b.snapshot(a)


def hand_count(path: Path):
    """Kinds and per-method latencies the naive way: read every message, pair ids by hand."""
    kinds: Counter = Counter()
    pending: dict = {}
    lat: dict[str, list[int]] = {}
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec["type"] != "message":
            continue
        msg = orjson.loads(rec["text"])
        key = (rec["conn"], repr(msg.get("id")))
        if "method" in msg:
            kinds["request" if "id" in msg else "notification"] += 1
            if "id" in msg:
                pending[(rec["conn"], rec["dir"], repr(msg["id"]))] = (msg["method"], rec["t_ns"])
        else:
            kinds["error" if "error" in msg else "result"] += 1
            other = "c2s" if rec["dir"] == "s2c" else "s2c"
            hit = pending.pop((key[0], other, key[1]), None)
            if hit:
                lat.setdefault(hit[0], []).append(rec["t_ns"] - hit[1])
    return kinds, lat


def test_counts_and_latencies_match_a_count_by_hand_of_a_real_sdk_capture():
    path = CAPTURES / "sdk-stdio-legacy.jsonl"
    s = summarise(path)
    kinds, lat = hand_count(path)
    assert s["kinds"] == dict(kinds)
    assert set(s["latency"]) == set(lat)
    for method, values in lat.items():
        values.sort()
        row = s["latency"][method]
        assert row["count"] == len(values)
        assert row["max"] == values[-1]
        assert row["p50"] == values[math.ceil(0.5 * len(values)) - 1]
        assert row["p95"] == values[math.ceil(0.95 * len(values)) - 1]


def test_the_legacy_session_reports_its_handshake_versions_and_capabilities():
    s = summarise(CAPTURES / "sdk-stdio-legacy.jsonl")
    (sess,) = s["sessions"]
    init = next(
        orjson.loads(orjson.loads(line)["text"])
        for line in (CAPTURES / "sdk-stdio-legacy.jsonl").read_bytes().splitlines()[1:]
        if b'\\"protocolVersion\\"' in line and b"result" in line
    )
    assert sess["negotiated_version"] == init["result"]["protocolVersion"]
    assert sess["server_caps"] == init["result"]["capabilities"]
    assert sess["cell"].startswith("legacy")


def test_the_demo_shows_a_dual_era_fallback_and_a_modern_session_and_counts_its_findings():
    s = summarise(CAPTURES / "demo.jsonl")
    cells = sorted(sess["cell"] for sess in s["sessions"])
    assert cells[0].startswith("dual-era: server/discover probe answered with error, fell back to initialize")
    assert cells[1].startswith("modern")
    assert {"MCP111", "MCP203", "MCP312", "MCP320"} <= set(s["rules"])
    assert sum(s["rules"].values()) == sum(s["severities"].values())


def test_nearest_rank_percentiles():
    values = list(range(1, 21))
    assert percentile(values, 50) == 10
    assert percentile(values, 95) == 19
    assert percentile(values, 100) == 20
    assert percentile([7], 95) == 7


def test_capture_records_of_every_type_are_counted():
    b = SummaryBuilder()
    from tracer.model import Record

    for t in (RecordType.HEADER, RecordType.STDERR, RecordType.STDERR, RecordType.EVENT):
        b.add_record(Record(t, data={"type": "header"} if t is RecordType.HEADER else None))
    b.add_finding(Finding("MCP101", Severity.ERROR, "x"))
    snap = b.snapshot()
    assert snap["records"] == {"header": 1, "stderr": 2, "event": 1}
    assert snap["rules"] == {"MCP101": 1}
