"""The viewer on hostile input (issue 12): integers beyond 64 bits, deep nesting and lone surrogates
in rows, details and the whole body; a record the analysis cannot read; a body too large to format."""

from __future__ import annotations

import json

from tests.ui_support import SIZE, opened_and_analysed, plain, until
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, Record, RecordType
from tracer.view.annotate import Annotator
from tracer.view.annotations import Annotations
from ui.app import McpTraceApp

BIG = '{"jsonrpc":"2.0","id":18446744073709551617,"result":18446744073709551617}'
DEEP = '{"jsonrpc":"2.0","id":2,"result":{"v":' + "[" * 300 + "]" * 300 + "}}"
SURROGATE = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"\\ud800","arguments":{}}}'


async def test_the_viewer_shows_rows_details_and_bodies_of_hostile_ndjson_lines(tmp_path):
    path = tmp_path / "hostile.ndjson"
    path.write_text("\n".join([BIG, DEEP, SURROGATE]) + "\n")
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        assert scr.view.ann.error is None
        texts = [scr.view.info(row).basics.preview for row in range(len(scr.view))]
        assert "18446744073709551617" in " ".join(texts)  # the preview keeps the integer exact
        big_row = next(
            r for r in range(len(scr.view)) if "18446744073709551617" in scr.view.info(r).basics.preview
        )
        while scr.list.selected_row != big_row:
            await pilot.press("j")
        await until(
            pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == big_row, "the detail"
        )
        assert "18446744073709551617" in plain(scr.detail.body)
        await pilot.press("e")
        from textual.widgets import TextArea

        await until(
            pilot,
            lambda: len(app.screen.query(TextArea)) and app.screen.query_one(TextArea).text,
            "the whole body",
        )
        assert json.loads(app.screen.query_one(TextArea).text)["id"] == 18446744073709551617
        await pilot.press("escape")
        for _ in range(len(scr.view)):  # every row's detail renders
            await pilot.press("j")
            await pilot.pause()
        assert app.is_running


def _capture(path, raws):
    with CaptureWriter(path, header_record("stdio"), overwrite=True) as w:
        for i, raw in enumerate(raws):
            w.write(
                Record(
                    RecordType.MESSAGE, dir=Direction.C2S if i % 2 == 0 else Direction.S2C, raw=raw, conn="c"
                )
            )


def test_a_record_the_analysis_cannot_read_is_a_broken_row_with_its_reason_and_the_rest_is_analysed(
    tmp_path, monkeypatch
):
    # No input known to this version makes the analyser raise any more (the fuzz tests hold it to
    # that), so one is made to, for the second message, to show what the viewer does the day one does.
    cap = tmp_path / "c.jsonl"
    _capture(
        cap,
        [
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":1,"result":{}}',
            b'{"jsonrpc":"2.0","id":2,"method":"ping"}',
            b'{"jsonrpc":"2.0","id":2,"result":{}}',
        ],
    )
    work = tmp_path / "w"
    work.mkdir()
    ann = Annotator(str(cap), str(work))
    feed = ann.analyser.feed

    def feed_failing_once(rec):
        if rec.seq == 2:
            raise KeyError("boom")
        return feed(rec)

    monkeypatch.setattr(ann.analyser, "feed", feed_failing_once)
    ann.run()
    viewer = Annotations(str(cap), workdir=str(work))
    viewer.rows_done = 5
    rows = [viewer.row(r) for r in range(5)]
    assert [r.rtype for r in rows] == ["header", "message", "broken", "message", "message"]
    assert "could not read this record (KeyError" in viewer.details(rows[2])["broken"]
    assert rows[4].partner == 3  # the messages after it are analysed and paired


def test_an_analysis_process_that_dies_says_why(tmp_path):
    ann = Annotations(str(tmp_path))  # a directory: the analysis process cannot read it
    ann.start()
    with ann.cond:
        assert ann.cond.wait_for(lambda: ann.eof, timeout=60)
    assert ann.error is not None and "analysis stopped" in ann.error and "IsADirectoryError" in ann.error
    ann.stop()


def test_an_analysis_process_killed_by_a_fatal_signal_says_so(tmp_path):
    import signal

    cap = tmp_path / "c.jsonl"
    _capture(cap, [b'{"jsonrpc":"2.0","id":1,"method":"ping"}'])
    ann = Annotations(str(cap), follow=True)  # following: it stays up, waiting for more
    ann.start()
    with ann.cond:
        assert ann.cond.wait_for(lambda: ann.eof and ann.rows_done == 2, timeout=60)
    ann.proc.send_signal(signal.SIGABRT)
    with ann.cond:
        assert ann.cond.wait_for(lambda: ann.error is not None, timeout=60)
    assert ann.error == "analysis stopped (exit code -6): Fatal Python error: Aborted", ann.error
    ann.stop()


async def test_e_on_a_body_too_large_to_format_pages_it_raw(tmp_path):
    from ui.screens import body

    text = "y" * (body.PRETTY_MAX + body.PAGE)
    cap = tmp_path / "big.jsonl"
    _capture(cap, [json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": text}}).encode()])
    app = McpTraceApp(str(cap))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        await pilot.press("j")
        await until(pilot, lambda: scr.list.selected_row == 1, "the message row")
        await pilot.press("e")
        title = lambda: plain(app.screen.query_one("#body-title"))  # noqa: E731
        await until(pilot, lambda: "page 1 of" in title(), "the first raw page")
        from textual.widgets import TextArea

        area = app.screen.query_one(TextArea)
        assert len(area.text) == body.PAGE and area.text.startswith('{"type":"message"')
        pages = app.screen.pages
        await pilot.press("n")
        await until(pilot, lambda: "page 2 of" in title(), "the second page")
        await pilot.press("G")
        await until(pilot, lambda: f"page {pages} of" in title(), "the last page")
        assert app.screen.query_one(TextArea).text.endswith('"}}"}')


def test_an_id_of_400_digits_is_kept_exact_through_the_analysis_details(tmp_path):
    cap = tmp_path / "c.jsonl"
    big = 10**400
    _capture(
        cap, [b'{"jsonrpc":"2.0","id":' + str(big).encode() + b',"method":"tools/list"}']
    )  # never answered
    work = tmp_path / "w"
    work.mkdir()
    Annotator(str(cap), str(work)).run()  # the end-of-session finding re-reads the row's details
    viewer = Annotations(str(cap), workdir=str(work))
    viewer.rows_done = 2
    details = viewer.details(viewer.row(1))
    assert details["id"] == big and any(f[0] == "MCP211" for f in details["f"])


def test_answers_timed_at_the_ends_of_the_clock_are_analysed_with_their_latency_or_none(tmp_path):
    cap = tmp_path / "c.jsonl"
    lines = [{"type": "header", "format": "mcptrace", "version": 1, "t_ns": 1, "transport": "stdio"}]
    for i, (t_req, t_resp) in enumerate([(1, 2**63 - 1), (2**63 - 1, 1)], 1):  # (0 is "no time")
        lines.append(
            {
                "type": "message",
                "seq": 2 * i - 1,
                "t_ns": t_req,
                "dir": "c2s",
                "transport": "stdio",
                "conn": "c",
                "text": json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}),
            }
        )
        lines.append(
            {
                "type": "message",
                "seq": 2 * i,
                "t_ns": t_resp,
                "dir": "s2c",
                "transport": "stdio",
                "conn": "c",
                "text": json.dumps({"jsonrpc": "2.0", "id": i, "result": {}}),
            }
        )
    cap.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    work = tmp_path / "w"
    work.mkdir()
    Annotator(str(cap), str(work)).run()
    viewer = Annotations(str(cap), workdir=str(work))
    viewer.rows_done = 5
    rows = [viewer.row(r) for r in range(5)]
    assert [r.rtype for r in rows] == ["header"] + ["message"] * 4  # none unreadable
    assert rows[2].latency_ns == (2**31 - 1) * 1000 and rows[4].latency_ns is None  # capped; negative: none
