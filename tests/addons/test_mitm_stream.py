"""A mitmproxy flow file read flow by flow (addons.mitm_stream, the viewer's first screen) gives the
records the whole-file reader (addons.mitm_import) gives; a file it cannot follow says so, and the
viewer then converts it whole: either way its rows are the rows of the converted capture."""

from __future__ import annotations

from pathlib import Path

import pytest
from mitmproxy import io as mitm_io

from addons.mitm_stream import LAG, stream
from tests.gencapture import generate
from tests.geninputs import generate as generate_input
from tests.tracer.inputs.test_harstream import _converted_rows, _viewer_rows
from tracer.cli.inputs import register_optional_inputs
from tracer.http.flows import OutOfOrder
from tracer.inputs import open_input
from tracer.inputs.lazy import converted_records, record_line
from tracer.inputs.settle import settle


@pytest.fixture(scope="module")
def flows(tmp_path_factory) -> str:
    """About 1,300 flows, every 50th flow's client connection closing after it."""
    register_optional_inputs()
    tmp = tmp_path_factory.mktemp("mitm")
    generate(tmp / "c.jsonl", 4000, 60)
    path = tmp / "c.mitm"
    generate_input(str(tmp / "c.jsonl"), path, "mitm")
    return str(path)


def _whole(path: str) -> list[bytes]:
    inp = open_input(path)
    try:
        return [record_line(r) for r in converted_records(inp.records)]
    finally:
        inp.fh.close()


def _streamed(path: str) -> list[bytes]:
    with open(path, "rb") as fh:
        return [record_line(r) for r in converted_records(settle(stream(fh, path)))]


def _rewritten(src: str, dst, order) -> str:
    with open(src, "rb") as fh:
        got = list(mitm_io.FlowReader(fh).stream())
    with open(dst, "wb") as fh:
        w = mitm_io.FlowWriter(fh)
        for f in order(got):
            w.add(f)
    return str(dst)


def test_a_flow_file_read_flow_by_flow_gives_the_whole_readers_records_and_rows(flows):
    whole = _whole(flows)
    assert _streamed(flows) == whole and len(whole) > 2 * LAG
    restarted, rows = _viewer_rows(flows)
    assert not restarted and rows == _converted_rows(flows)


def test_a_flow_file_cut_mid_flow_gives_the_records_of_the_flows_before_the_cut(flows, tmp_path):
    path = tmp_path / "cut.mitm"
    data = Path(flows).read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    assert _streamed(str(path)) == _whole(str(path))


def test_a_flow_file_it_cannot_follow_is_converted_whole_by_the_viewer(flows, tmp_path):
    # the first flow written again after the others: it starts before everything given by then
    path = _rewritten(flows, tmp_path / "late.mitm", lambda got: [*got, got[0]])
    with pytest.raises(OutOfOrder):
        _streamed(path)
    restarted, rows = _viewer_rows(path)
    assert restarted and rows == _converted_rows(path)
