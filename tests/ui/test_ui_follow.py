"""Follow mode: rows written by a live recorder appear; the selection stays put unless at the bottom."""

from __future__ import annotations

import orjson

from tests.ui_support import SIZE, until, viewer
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, Record, RecordType
from ui.app import McpTraceApp


class Recorder:
    """Writes a legacy session into a capture as a live tee would (flushed per record)."""

    def __init__(self, path):
        self.w = CaptureWriter(path, header_record("stdio", command=["python", "server.py"]))
        self.next_id = 0

    def exchange(self, n: int = 1) -> None:
        for _ in range(n):
            self.next_id += 1
            req = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": {"name": "echo"}}
            res = {"jsonrpc": "2.0", "id": self.next_id, "result": {"content": []}}
            self.w.write(Record(RecordType.MESSAGE, dir=Direction.C2S, raw=orjson.dumps(req), conn="c1"))
            self.w.write(Record(RecordType.MESSAGE, dir=Direction.S2C, raw=orjson.dumps(res), conn="c1"))

    def close(self) -> None:
        self.w.close()


async def test_follow_appends_rows_without_moving_a_selection_that_is_not_at_the_bottom(tmp_path):
    path = tmp_path / "live.jsonl"
    rec = Recorder(path)
    rec.exchange(5)  # header + 10 rows
    try:
        app = McpTraceApp(str(path), follow=True)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the capture to open")
            scr = viewer(app)
            await until(
                pilot, lambda: scr.list.count == 11 and scr.list.selected_row == 10, "follow to reach the end"
            )
            scr.list.select_row(3)
            rec.exchange(3)
            await until(pilot, lambda: scr.list.count == 17, "the appended rows")
            assert scr.list.selected_row == 3
            await pilot.press("G")
            rec.exchange(2)
            await until(pilot, lambda: scr.list.count == 21, "more appended rows")
            assert scr.list.selected_row == 20  # at the bottom, the selection follows
            await until(pilot, lambda: scr.view.info(20).analysed, "the analysis of the new rows")
            assert scr.view.info(20).partner == 19 and scr.view.info(20).label == "tools/call"
    finally:
        rec.close()


async def test_f_starts_following_a_capture_opened_without_follow(tmp_path):
    path = tmp_path / "live.jsonl"
    rec = Recorder(path)
    rec.exchange(2)
    try:
        app = McpTraceApp(str(path))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the capture to open")
            scr = viewer(app)
            await until(pilot, lambda: scr.index_done, "indexing")
            await pilot.press("f")
            await until(
                pilot, lambda: scr.view is not None and scr.view.follow and scr.index_done, "follow mode"
            )
            rec.exchange(1)
            await until(pilot, lambda: scr.list.count == 7, "the appended rows")
            assert scr.status.state.follow
    finally:
        rec.close()


async def test_a_filter_also_filters_rows_appended_while_following(tmp_path):
    path = tmp_path / "live.jsonl"
    rec = Recorder(path)
    rec.exchange(2)
    try:
        app = McpTraceApp(str(path), follow=True)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the capture to open")
            scr = viewer(app)
            await until(pilot, lambda: scr.index_done and scr.list.count == 5, "indexing")
            scr.apply_filter("dir:c2s")
            await until(pilot, lambda: scr.filter_job is None and scr.list.count == 2, "the filter")
            rec.exchange(2)
            await until(pilot, lambda: scr.list.count == 4, "the new matches")
            assert list(scr.list.rows) == [1, 3, 5, 7]
    finally:
        rec.close()
