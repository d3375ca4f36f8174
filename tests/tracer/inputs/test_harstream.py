"""A HAR read entry by entry (tracer.inputs.harstream, the viewer's first screen) gives the records
the whole-document reader (tracer.inputs.har) gives; a HAR it cannot follow says so, and the viewer
then converts it whole: either way its rows are the rows of the converted capture."""

from __future__ import annotations

import copy
import json
import random

import pytest

from tests.tracer.inputs.test_har_import import INIT, LIST, _session, entry, har
from tracer.http.flows import LAG
from tracer.inputs import open_input
from tracer.inputs.harstream import Unstreamable, stream
from tracer.inputs.lazy import converted_records, record_line
from tracer.inputs.settle import settle
from tracer.inputs.spooled import InputRestart, SpoolIndex
from tracer.view.viewdata import converted_capture, open_view


def _many(n: int = 3000) -> list[dict]:
    """N exchanges a second apart (a session's shape, repeated), for a file longer than LAG."""
    out = []
    for k in range(n):
        e = copy.deepcopy(_session()[2])
        e["startedDateTime"] = f"2026-11-29T10:{k // 3600 % 60:02d}:{k // 60 % 60:02d}.{k % 60:02d}0Z"
        e["request"]["postData"]["text"] = json.dumps({**LIST, "id": k})
        out.append(e)
    return out


def _whole(path) -> list[bytes]:
    inp = open_input(str(path))
    try:
        return [record_line(r) for r in converted_records(inp.records)]
    finally:
        inp.fh.close()


def _streamed(path) -> list[bytes]:
    with open(path, "rb") as fh:
        if fh.read(3) != b"\xef\xbb\xbf":
            fh.seek(0)
        return [record_line(r) for r in converted_records(settle(stream(fh, str(path))))]


def _viewer_rows(path) -> tuple[bool, list[bytes]]:
    """(whether the viewer had to convert it again whole, its rows but the header)."""
    restarted = False
    view = open_view(str(path))
    try:
        try:
            view.index.build()
        except InputRestart:
            restarted = True
            view.close()
            view = open_view(str(path), whole=True)
            view.index.build()
        assert isinstance(view.index, SpoolIndex)
        return restarted, [view.index.line(r) for r in range(1, len(view))]
    finally:
        view.close()


def _converted_rows(path) -> list[bytes]:
    inp = open_input(str(path))
    tmp, cleanup = converted_capture(str(path), "har", inp.records)
    inp.fh.close()
    try:
        with open(tmp, "rb") as fh:
            return fh.read().splitlines()[1:]
    finally:
        cleanup()


def _write(tmp_path, doc, *, indent=None, prefix=b"") -> str:
    path = tmp_path / "t.har"
    path.write_bytes(prefix + json.dumps(doc, indent=indent, ensure_ascii=False).encode())
    return str(path)


def _shuffled() -> dict:
    entries = _many()
    random.Random(3).shuffle(entries)
    return har(entries)


FOLLOWABLE = {
    "devtools order (an entry listed when it finished)": lambda: har(_session()),
    "pretty-printed, with a BOM": lambda: ("indent", har(_session())),
    "pages and other keys around the entries": lambda: {
        "log": {"entries": _session(), "pages": [{"startedDateTime": "2020-01-01T00:00:00Z"}], "x": [1, {}]},
        "other": {"log": "not this one"},
    },
    "entries that are no exchange": lambda: har([1, "x", {"no": "request"}, *_session(), None]),
    "no entries at all": lambda: har([]),
    "a long file with swapped neighbours": lambda: har(
        [e for pair in zip(_many()[1::2], _many()[0::2], strict=True) for e in pair]
    ),
    "entries in no order within the lag": lambda: _shuffled(),
    "entries in reverse order": lambda: har(_many()[::-1]),
    "text that is not ASCII": lambda: har(
        [entry("2026-11-29T10:00:00Z", "POST", {**INIT, "params": {"n": "é ☃ 𝄞"}}, 202, [], {"text": ""})]
    ),
}


@pytest.mark.parametrize("name", list(FOLLOWABLE))
def test_a_har_read_entry_by_entry_gives_the_whole_readers_records(tmp_path, name):
    doc = FOLLOWABLE[name]()
    path = (
        _write(tmp_path, doc[1], indent=2, prefix=b"\xef\xbb\xbf")
        if isinstance(doc, tuple)
        else _write(tmp_path, doc)
    )
    assert _streamed(path) == _whole(path)
    restarted, rows = _viewer_rows(path)
    assert not restarted and rows == _converted_rows(path)


def _late_start() -> dict:
    entries = _many(LAG + 50)
    entries.append(copy.deepcopy(entries[0]))  # starts long before the steps given by now
    return har(entries)


UNFOLLOWABLE = {
    "an entry that starts long before those before it": (_late_start, None),
    "a second log.entries": (lambda: None, b'{"log":{"entries":[],"entries":[%s]}}'),
    # (a document cut short is followed to its cut: tests/tracer/inputs/test_har_cut.py)
    "text after the document": (lambda: None, b'{"log":{"entries":[%s]}} {}'),
    "NaN in an entry": (lambda: None, b'{"log":{"entries":[%s,{"request":{},"time":NaN}]}}'),
    "bytes that are not UTF-8": (lambda: None, b'{"log":{"entries":[%s,{"request":{"url":"\xff"}}]}}'),
}


@pytest.mark.parametrize("name", list(UNFOLLOWABLE))
def test_a_har_the_entry_reader_cannot_follow_is_converted_whole_by_the_viewer(tmp_path, name):
    make, template = UNFOLLOWABLE[name]
    if template is None:
        path = _write(tmp_path, make())
    else:
        path = tmp_path / "t.har"
        path.write_bytes(template % b",".join(json.dumps(e).encode() for e in _session()))
    with pytest.raises(Unstreamable):
        _streamed(path)
    restarted, rows = _viewer_rows(path)
    assert restarted and rows == _converted_rows(path)


async def test_the_viewer_opens_a_har_it_cannot_follow_whole_and_g_reaches_its_last_row(tmp_path):
    from tests.ui_support import SIZE, until, viewer
    from ui.app import McpTraceApp

    path = _write(tmp_path, _late_start())
    expected = _converted_rows(path)
    app = McpTraceApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the HAR to open")
        scr = viewer(app)
        await until(
            pilot, lambda: scr.whole and scr.view is not None and scr.index_done, "it converted whole"
        )
        await pilot.press("G")
        await until(pilot, lambda: scr.list.selected_row == len(expected), "the last row")
        assert [scr.view.index.line(r) for r in range(1, len(scr.view))] == expected
