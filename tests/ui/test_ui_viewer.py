"""The viewer, driven with Textual's Pilot on real captures: open, filter, select, partner, findings."""

from __future__ import annotations

import orjson
import pytest

from tests.ui_support import CAPTURES, DEMO, SIZE, opened_and_analysed, plain, until
from tracer.analyser import Analyser, analyse_all
from tracer.capture import read_capture
from tracer.filter import AnalysedFields, compile_filter
from tracer.model import RecordType
from ui.app import McpTraceApp

SDK_LEGACY = CAPTURES / "sdk-stdio-legacy.jsonl"


def rows_of(path):
    """Each capture line's record (rows are lines), and the analysis of its messages by seq."""
    with open(path, "rb") as fh:
        recs = list(read_capture(fh, str(path)))
    msgs, ends = analyse_all(r for r in recs if not hasattr(r, "torn"))
    return recs, {m.seq: m for m in msgs}, ends


def row_with(recs, pred) -> int:
    return next(i for i, r in enumerate(recs) if r.type is RecordType.MESSAGE and pred(r))


async def test_a_real_sdk_capture_opens_with_every_line_as_a_row_and_every_message_analysed():
    recs, by_seq, _ = rows_of(SDK_LEGACY)
    app = McpTraceApp(str(SDK_LEGACY))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        assert scr.list.count == len(SDK_LEGACY.read_bytes().splitlines())
        for row, rec in enumerate(recs):
            info = scr.view.info(row)
            assert info.basics.rtype == rec.type.value
            if rec.type is RecordType.MESSAGE:
                m = by_seq[rec.seq]
                assert (info.kind, info.era, info.label) == (m.kind.value, m.era.value, m.label)


async def test_the_filter_bar_keeps_exactly_the_matching_rows():
    recs, by_seq, _ = rows_of(SDK_LEGACY)
    expr = "method:tools/call kind:response | method:initialize"
    flt = compile_filter(expr)
    expected = [
        i for i, r in enumerate(recs) if r.type is RecordType.MESSAGE and flt(AnalysedFields(by_seq[r.seq]))
    ]
    assert expected
    app = McpTraceApp(str(SDK_LEGACY))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        await pilot.press("slash")
        await pilot.press(*expr)
        await pilot.press("enter")
        await until(
            pilot, lambda: scr.filter_job is None and scr.list.rows is not None, "the filter to finish"
        )
        assert list(scr.list.rows) == expected
        assert scr.status.state.matches == len(expected)
        assert app.focused is scr.list
        await pilot.press("slash", "ctrl+a")  # clearing the filter shows every row again
        for _ in range(len(expr)):
            await pilot.press("delete")
        await pilot.press("enter")
        await until(pilot, lambda: scr.list.rows is None, "the filter to clear")
        assert scr.list.count == len(recs)


async def test_p_jumps_from_a_response_to_its_request_and_back():
    recs, by_seq, _ = rows_of(SDK_LEGACY)
    request_row = row_with(recs, lambda r: by_seq[r.seq].method == "tools/list")
    response_row = next(
        i
        for i, r in enumerate(recs)
        if r.type is RecordType.MESSAGE and by_seq[r.seq].partner_seq == recs[request_row].seq
    )
    app = McpTraceApp(str(SDK_LEGACY))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        scr.list.select_row(response_row)
        await pilot.pause()
        assert scr.list._sel_partner == request_row  # the request is highlighted while its answer is selected
        await pilot.press("p")
        assert scr.list.selected_row == request_row
        await pilot.press("p")
        assert scr.list.selected_row == response_row


async def test_selecting_a_row_shows_its_detail_with_era_reason_and_pairing():
    recs, by_seq, _ = rows_of(SDK_LEGACY)
    row = row_with(recs, lambda r: by_seq[r.seq].method == "tools/list")
    m = by_seq[recs[row].seq]
    app = McpTraceApp(str(SDK_LEGACY))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        await pilot.press(*["j"] * row)
        await until(
            pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == row, "the detail pane"
        )
        text = plain(scr.detail.body)
        assert m.era_reason in text
        assert f"partner: #{m.partner_seq}" in text
        assert '"tools/list"' in text


async def test_n_and_N_walk_the_messages_with_findings_in_order():
    recs, by_seq, ends = rows_of(DEMO)
    seqs_with = {m.seq for m in by_seq.values() if m.findings} | {f.seq for f in ends if f.seq}
    expected = [i for i, r in enumerate(recs) if r.type is RecordType.MESSAGE and r.seq in seqs_with]
    assert len(expected) >= 3
    app = McpTraceApp(str(DEMO))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        seen = []
        for _ in expected:
            await pilot.press("n")
            seen.append(scr.list.selected_row)
        assert seen == expected
        await pilot.press("N")
        assert scr.list.selected_row == expected[-2]


async def test_a_finding_in_the_detail_pane_names_rule_message_and_spec_source():
    recs, by_seq, _ = rows_of(DEMO)
    row = row_with(recs, lambda r: any(f.rule == "MCP203" for f in by_seq[r.seq].findings))
    finding = next(f for f in by_seq[recs[row].seq].findings if f.rule == "MCP203")
    app = McpTraceApp(str(DEMO))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        scr.list.select_row(row)
        await until(
            pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == row, "the detail pane"
        )
        text = plain(scr.detail.body)
        assert "MCP203" in text and finding.message in text and "spec:" in text


async def test_a_finding_raised_on_a_streams_event_shows_on_its_row_and_in_its_detail(tmp_path):
    # MCP904 is raised on the SSE stream's `endpoint` event, a record that is no message: before,
    # the viewer showed it only on the summary screen, as a finding about the capture as a whole
    from tests.cases import build_records, load_rule_cases
    from tracer.capture import header_record, write_records

    case = next(c for rule, c in load_rule_cases() if rule == "MCP904" and c.get("transport") == "http+sse")
    cap = tmp_path / "legacy-sse.jsonl"
    write_records(
        str(cap), header_record("http+sse"), build_records(case["messages"], "http+sse"), redact=False
    )
    recs, _, _ = rows_of(cap)
    an = Analyser()
    found = {}
    for row, rec in enumerate(recs):
        if rec.type is not RecordType.MESSAGE:
            for f in (f for ev in an.feed(rec) for f in ev.findings if f.rule == "MCP904"):
                found[row] = f
        elif rec.type is not None:
            an.feed(rec)
    ((row, finding),) = found.items()
    app = McpTraceApp(str(cap))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        assert scr.view.info(row).nfind == 1
        line = "".join(seg.text for seg in scr.list._segments(scr.view.info(row), 160, row))
        assert "● 1" in line
        scr.list.select_row(row)
        await until(
            pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == row, "the detail pane"
        )
        text = plain(scr.detail.body)
        assert "Findings (1)" in text and "MCP904" in text and finding.message in text


async def test_the_summary_screen_shows_cells_counts_and_latency_percentiles_counted_by_hand():
    import math

    from tests.tracer.test_summary import hand_count
    from ui.format import duration
    from ui.screens.summary import SummaryScreen

    kinds, lat = hand_count(SDK_LEGACY)
    app = McpTraceApp(str(SDK_LEGACY))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        lines = plain(app.screen.query_one("#summary-body")).splitlines()
        assert any("compatibility" in ln and "legacy (2025-11-25)" in ln for ln in lines)
        for kind, n in kinds.items():
            assert any(ln.split() == [kind, str(n)] for ln in lines), kind
        for method, values in lat.items():
            values.sort()
            p50 = values[math.ceil(0.5 * len(values)) - 1]
            p95 = values[math.ceil(0.95 * len(values)) - 1]
            row = [str(len(values)), duration(p50), duration(p95), duration(values[-1])]
            assert any(ln.split() == [method, *row] for ln in lines), (method, row)
        await pilot.press("escape")
        assert app.screen is scr


async def test_a_large_body_is_capped_in_the_pane_and_e_shows_all_of_it(tmp_path):
    from tracer.capture import CaptureWriter, header_record
    from tracer.model import Direction, Record

    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": "x" * 80} for _ in range(20000)]},
    }
    raw = orjson.dumps(big)
    path = tmp_path / "big.jsonl"
    with CaptureWriter(path, header_record("stdio")) as w:
        w.write(Record(RecordType.MESSAGE, dir=Direction.S2C, raw=raw, conn="c"))
        w.write(Record(RecordType.MESSAGE, dir=Direction.S2C, raw=b"\xff\xfe not utf-8", conn="c"))
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        await pilot.press("j")
        await until(
            pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == 1, "the detail pane"
        )
        assert "press e to see the whole body" in plain(scr.detail.body)
        await pilot.press("e")
        from textual.widgets import TextArea

        await until(
            pilot,
            lambda: len(app.screen.query(TextArea)) and app.screen.query_one(TextArea).text,
            "the whole body",
        )
        area = app.screen.query_one(TextArea)
        assert orjson.loads(area.text) == big
        await pilot.press("escape", "j")
        await until(
            pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == 2, "the detail pane"
        )
        assert "hex dump" in plain(scr.detail.body)


@pytest.mark.parametrize("key", ["question_mark"])
async def test_help_lists_the_keys_and_the_filter_language(key):
    app = McpTraceApp(str(DEMO))
    async with app.run_test(size=SIZE) as pilot:
        await opened_and_analysed(pilot)
        await pilot.press(key)
        from ui.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        text = " ".join(plain(s) for s in app.screen.query("Static"))
        for word in ("n  N", "partner", "latency>500ms", "rule:MCP310"):
            assert word in text
