"""HAR and .mitm inputs are converted in a background process the viewer follows (tracer.inputs.spooled):
the first rows come before the whole input is read, a conversion `mcptrace view` starts before the
screen opens is the one the viewer shows, an explicit format is read as a detected one, and the rows
end equal to the converted capture's. (Split from test_view_lazy_rows.py, whose helpers it uses.)"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.gencapture import generate
from tests.geninputs import generate as generate_input
from tests.tracer.view.test_view_lazy_rows import BOUND_S, HOSTLOG, NDJSON, _converted_lines, _har, _mitm
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs import open_input
from tracer.inputs.lazy import RecordIndex
from tracer.inputs.spooled import SCREEN_ROWS, SpoolIndex
from tracer.view.viewdata import open_view


def test_a_har_shows_its_first_rows_while_the_rest_converts_and_closing_stops_it(tmp_path):
    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / "big.har"
    generate_input(str(capture), path, "har")
    view = open_view(str(path))
    tmp = view.path
    view.index.update(max_bytes=view.index.FIRST_STEP)
    assert isinstance(view.index, SpoolIndex) and len(view) >= SCREEN_ROWS
    assert view.basics(0).rtype == "header" and view.detail(1).where.endswith("of big.har")
    view.close()
    assert view.index.proc.poll() is not None and not os.path.exists(tmp)


@pytest.mark.parametrize("fmt", ["har", "mitm"])
def test_a_conversion_started_before_the_viewer_opens_the_file_is_the_one_it_shows(tmp_path, fmt):
    # `mcptrace view` starts a HAR's or a flow file's conversion before importing Textual
    # (tracer.cli.view.start_early): the viewer takes that process over, rows unchanged
    from tracer.inputs import spooled

    register_optional_inputs()
    path = _har(tmp_path) if fmt == "har" else _mitm(tmp_path)
    spooled.start_early(path, fmt)
    early = spooled._early[spooled._key(path, fmt)]
    view = open_view(path)
    try:
        assert view.index.proc is early[2] and view.path == early[0]
        assert spooled._early == {}, "taken once: a view opened again converts again"
        view.index.build()
        assert [view.index.line(r) for r in range(len(view))] == _converted_lines(path)
    finally:
        view.close()
    assert early[2].poll() is not None and not os.path.exists(early[0])


@pytest.mark.parametrize("fmt", ["har", "mitm", "hostlog"])
def test_mcptrace_view_starts_a_background_conversion_before_the_screen_opens(tmp_path, monkeypatch, fmt):
    import argparse

    from tracer.cli import view as view_cli
    from tracer.inputs import spooled
    from ui.app import McpTraceApp

    if fmt == "hostlog":  # (read lazily in the viewer's own process: nothing to start)
        path = str(tmp_path / "mcp-server-alpha.log")
        Path(path).write_bytes(HOSTLOG)
    else:
        path = _har(tmp_path) if fmt == "har" else _mitm(tmp_path)
    seen: list = []
    monkeypatch.setattr(view_cli, "check_terminal", lambda: None)
    monkeypatch.setattr(McpTraceApp, "run", lambda self: seen.append(dict(spooled._early)))
    try:
        args = argparse.Namespace(file=path, follow=False, input_format=None)
        assert view_cli.run(args) == 0
        started = {name for (_, name) in seen[0]}
        assert started == (set() if fmt == "hostlog" else {fmt})
    finally:
        spooled._discard_early()


def test_a_host_log_that_grows_while_it_is_read_shows_every_line_read(tmp_path):
    path = tmp_path / "mcp.log"
    path.write_bytes(HOSTLOG + b"\n")
    idx = RecordIndex(open_input(str(path)))
    try:
        with open(path, "ab") as fh:  # the host goes on logging after the viewer opened the file
            fh.write(HOSTLOG.replace(b"\xef\xbb\xbf", b"") + b"\n")
        idx.build()
        assert [idx.line(r) for r in range(len(idx))] == _converted_lines(str(path))
    finally:
        idx.close()


def test_a_har_is_analysed_once_its_background_conversion_is_whole(tmp_path):
    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / "big.har"
    generate_input(str(capture), path, "har")
    view = open_view(str(path))
    try:
        view.start()  # (the viewer starts the analysis with its first screen)
        early = view.ann.proc is not None and not view.index.complete and view.index.proc.poll() is None
        view.index.build()
        assert view.ann.wait(lambda: view.ann.done, timeout=300)
        assert not early and view.ann.error is None and view.ann.rows_done == len(view)
    finally:
        view.close()


async def test_a_large_host_log_opens_lazily_and_g_reaches_its_last_row(tmp_path):
    from tests.ui_support import SIZE, until, viewer
    from ui.app import McpTraceApp

    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / "mcp-server-gen.log"
    generate_input(str(capture), path, "hostlog", swap_every=97)
    expected = _converted_lines(str(path))
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the log to open")
        scr = viewer(app)
        assert isinstance(scr.view.index, RecordIndex)  # (its first rows: see the test above)
        await pilot.press("G")
        await until(pilot, lambda: scr.list.selected_row == len(expected) - 1, "the last row")
        await pilot.pause()
        assert scr.view.index.line(len(expected) - 1) == expected[-1]
        assert scr.view.parsed < len(expected) / 20  # the rows on screen were made, not the file's


def _spy_on_reader(monkeypatch, fmt: str) -> list[str]:
    """The paths the FMT reader starts reading in this process (the converter's is another)."""
    from dataclasses import replace

    import tracer.inputs

    formats = list(tracer.inputs.FORMATS)
    i = next(i for i, f in enumerate(formats) if f.name == fmt)
    real = formats[i].read
    started: list[str] = []

    def read(fh, path):
        started.append(path)
        yield from real(fh, path)

    formats[i] = replace(formats[i], read=read)
    monkeypatch.setattr(tracer.inputs, "FORMATS", formats)
    return started


@pytest.mark.parametrize("fmt", ["har", "mitm"])
def test_an_explicit_har_or_mitm_format_is_read_by_the_background_converter_only_as_a_detected_one(
    tmp_path, monkeypatch, fmt
):
    from argparse import Namespace

    from tracer.cli.view import _check_input

    register_optional_inputs()
    path = _har(tmp_path) if fmt == "har" else _mitm(tmp_path)
    expected = _converted_lines(path)
    started = _spy_on_reader(monkeypatch, fmt)
    _check_input(path, Namespace(follow=False, input_format=fmt))  # what `mcptrace view` checks first
    view = open_view(path, fmt=fmt)
    try:
        assert started == [], "the viewer read the whole input itself before its converter started"
        assert isinstance(view.index, SpoolIndex)
        view.index.build()
        assert [view.index.line(r) for r in range(len(view))] == expected
    finally:
        view.close()
    assert started == []


@pytest.mark.parametrize("fmt", ["har", "mitm"])
def test_an_explicit_har_or_mitm_format_on_another_input_is_still_one_clear_error(tmp_path, fmt):
    from argparse import Namespace

    from tracer.cli import UsageError
    from tracer.cli.view import _check_input

    register_optional_inputs()
    path = tmp_path / "log.ndjson"
    path.write_bytes(NDJSON)
    with pytest.raises(UsageError) as err:
        _check_input(str(path), Namespace(follow=False, input_format=fmt))
    assert f"read as {fmt}, it holds no message" in str(err.value)
    assert "--input-format ndjson" in str(err.value)


@pytest.mark.parametrize("fmt", ["hostlog", "har"])
async def test_g_on_an_input_still_being_read_shows_its_end_read_ahead_then_the_exact_rows(
    tmp_path, monkeypatch, fmt
):
    """G before the reader (a host log's) or the background conversion (a HAR's) reached the end:
    the file's last rows at once, marked provisional (no number, no analysis), then, once the rows
    before them are read, the exact ones in their place (the conversion's, to the last row), with
    the selection on the last row."""
    import threading

    from tests.ui_support import SIZE, until, viewer
    from ui.app import McpTraceApp

    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / f"mcp-server-gen.{fmt}"
    generate_input(str(capture), path, fmt, swap_every=97)
    expected = _converted_lines(str(path))
    go_on = threading.Event()  # the index waits after its first step until the end has been read ahead
    kind = RecordIndex if fmt == "hostlog" else SpoolIndex
    real_update = kind.update

    def update(self, max_bytes=None):
        if len(self) > 1:
            go_on.wait(BOUND_S)
        return real_update(self, max_bytes)

    monkeypatch.setattr(kind, "update", update)
    app = McpTraceApp(str(path))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: getattr(app.screen, "first_drawn_at", None) is not None, "rows")
            scr = viewer(app)
            view, lst = scr.view, scr.list
            assert isinstance(view.index, kind)
            await pilot.press("G")
            await until(pilot, lambda: scr.tail_drawn_at is not None, "the end read ahead")
            assert not view.index.complete and view.provisional > 0
            assert lst.count == len(view) + 1 + view.provisional
            last = lst.selected_row
            assert last is not None and last < 0, "a read-ahead row, not a numbered one"
            shown, final = orjson.loads(view.detail(last).line), orjson.loads(expected[-1])
            assert shown["seq"] == 0 and shown["text"] == final["text"] and shown["t_ns"] == final["t_ns"]
            assert view.info(last).ann is None and "provisional" in (view.detail(last).problem or "")
            bottom = lst.render_line(lst.scrollable_content_region.height - 1).text
            assert bottom.split()[0] == "~", "its number is pending"
            if fmt == "hostlog":  # (a HAR is analysed once converted)
                # the analysis (another process, reading the file itself) reports meanwhile
                await until(pilot, lambda: view.ann.rows_done > 0, "the analysis to report")
                await pilot.pause()
                assert lst.selected_row == last
            go_on.set()
            await until(pilot, lambda: scr.last_row_drawn_at is not None, "the exact last row")
            assert view.tail is None and lst.count == len(view) == len(expected)
            assert lst.selected_row == len(expected) - 1
            assert [view.index.line(r) for r in range(len(view))] == expected
    finally:
        go_on.set()


async def test_follow_on_a_har_says_it_is_read_to_its_end_once_instead_of_claiming_to_follow(
    tmp_path, monkeypatch
):
    # (host logs and NDJSON are followed: tests/tracer/inputs/test_follow.py)
    from tests.ui_support import SIZE, until, viewer
    from ui.app import McpTraceApp

    path = _har(tmp_path)
    said: list[str] = []
    monkeypatch.setattr(McpTraceApp, "notify", lambda self, message, **kw: said.append(str(message)))
    app = McpTraceApp(str(path), follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the log to open")
        scr = viewer(app)
        await pilot.pause()
        assert not scr.follow and not scr.view.follow
        assert any("read to its end once" in m for m in said)
