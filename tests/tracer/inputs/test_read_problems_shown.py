"""The viewer says the read problems of an input it converts (a HAR cut short, a HAR entry without
a request, a flow that cannot be read) as lint names them, line and words, instead of opening
with the rows read and no word: the entry-by-entry and flow-by-flow readers give the whole-file
readers' problems, the converter tells them, the view holds them, and the screen says them."""

from __future__ import annotations

import json

import pytest
from mitmproxy import io as mitm_io

from tests.addon_helpers import INIT, INIT_RESULT, post
from tests.tracer.inputs.test_har_cut import CUTS, _write_cut
from tests.tracer.inputs.test_har_import import _session, har
from tests.ui_support import SIZE, until, viewer
from tracer.capture import ReadProblem
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs import open_input
from tracer.inputs.harstream import stream
from tracer.inputs.spooled import InputRestart
from tracer.view.viewdata import open_view


def _lint_problems(path) -> list[tuple[int, str]]:
    """The read problems lint reports for PATH (line, words)."""
    inp = open_input(str(path))
    try:
        return [(p.line, p.message) for p in inp.records if isinstance(p, ReadProblem)]
    finally:
        inp.fh.close()


def _viewer_problems(path) -> tuple[list[tuple[int, str]], int]:
    view = open_view(str(path))
    try:
        try:
            view.index.build()
        except InputRestart:  # (converted again whole: its problems are the whole reader's)
            view.close()
            view = open_view(str(path), whole=True)
            view.index.build()
        return view.read_problems
    finally:
        view.close()


def _no_request_har(tmp_path):
    entries = _session()
    doc = har([entries[0], {"comment": "no request"}, entries[1], "not an entry", *entries[2:]])
    path = tmp_path / "gaps.har"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("name", CUTS)
def test_the_entry_by_entry_reader_gives_a_cut_hars_read_problem_as_the_whole_reader(tmp_path, name):
    cut, _before, _at, _whole = _write_cut(tmp_path, name)
    problems: list[ReadProblem] = []
    with open(cut, "rb") as fh:
        list(stream(fh, str(cut), problems))
    assert [(p.line, p.message) for p in problems] == _lint_problems(cut)
    assert len(problems) == 1 and problems[0].torn


def test_the_entry_by_entry_reader_gives_the_problems_of_entries_without_a_request(tmp_path):
    path = _no_request_har(tmp_path)
    problems: list[ReadProblem] = []
    with open(path, "rb") as fh:
        list(stream(fh, str(path), problems))
    assert [(p.line, p.message) for p in problems] == _lint_problems(path)
    assert [p.line for p in problems] == [2, 4]


@pytest.mark.parametrize("name", ["in the middle of the second entry", "one character short"])
def test_the_viewer_holds_a_cut_hars_read_problem_with_its_rows(tmp_path, name):
    cut, _before, _at, _whole = _write_cut(tmp_path, name)
    assert _viewer_problems(cut) == (_lint_problems(cut), 1)


def test_the_viewer_holds_the_read_problems_of_a_har_read_whole(tmp_path):
    path = tmp_path / "broken.har"  # (broken before its end: read whole, one problem, no entries)
    path.write_text('{"log": {"entries": [{"request": {}}, }]}')
    assert _viewer_problems(path) == (_lint_problems(path), 1)
    gaps = _no_request_har(tmp_path)
    assert _viewer_problems(gaps) == (_lint_problems(gaps), 2)


def test_the_viewer_holds_the_read_problem_of_a_flow_file_cut_in_a_flow(tmp_path):
    register_optional_inputs()
    path = tmp_path / "cut.flows"
    with open(path, "wb") as fh:
        w = mitm_io.FlowWriter(fh)
        for f in (post(INIT, resp=INIT_RESULT), post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})):
            w.add(f)
    data = path.read_bytes()
    path.write_bytes(data + data[: len(data) // 3])  # a third flow, cut short
    problems, count = _viewer_problems(path)
    assert (problems, count) == (_lint_problems(path), 1) and "cannot read flow 3" in problems[0][1]


async def test_a_cut_har_opens_with_its_rows_and_says_its_read_problem(tmp_path):
    from ui.app import McpTraceApp

    cut, _before, _at, _whole = _write_cut(tmp_path, "in the middle of the second entry")
    ((line, why),) = _lint_problems(cut)
    app = McpTraceApp(str(cut))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the HAR to open")
        scr = viewer(app)
        await until(pilot, lambda: scr.index_done, "the conversion")
        assert scr.list.count > 1
        note = scr.status.state.note
        assert note == f"1 read problem: line {line:,} of cut.har: {why}"
