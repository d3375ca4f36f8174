"""A HAR document cut short (an export interrupted, a disk full, a file still being written) reads
as the house reads a broken line: every entry whole before the cut gives its records, and one read
problem says where the document ends, in lint, in export and in the viewer; a document broken
anywhere but at its end reads as before (one problem, no entries)."""

from __future__ import annotations

import json

import pytest

from tests.tracer.inputs.test_har_import import _session, entry, har
from tests.tracer.inputs.test_harstream import _streamed, _viewer_rows, _whole
from tracer.capture import ReadProblem
from tracer.cli import main
from tracer.inputs import open_input


def _entries() -> list[dict]:
    extra = entry(
        "2026-11-29T10:00:03.000Z",
        "POST",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "café ☕"}},
        202,
        [],
        {"size": 0, "mimeType": "", "text": ""},
        _comment="café ☕",  # (an escape, or UTF-8 bytes, in the document itself)
    )
    return [*_session(), extra]


def _doc(ascii_only: bool = True) -> str:
    return json.dumps(har(_entries()), indent=2, ensure_ascii=ascii_only)


def _bounds(doc: str) -> list[tuple[int, int]]:
    """Where each entry's object starts and ends in DOC."""
    out = []
    for e in _entries():
        start = doc.rindex("{", 0, doc.index(f'"startedDateTime": "{e["startedDateTime"]}"'))
        out.append((start, json.JSONDecoder().raw_decode(doc, start)[1]))
    return out


def _cut_point(name: str) -> tuple[str, int, int]:
    """(the document, where it is cut, how many entries are whole before the cut)."""
    doc = _doc(ascii_only=name != "inside a UTF-8 character")
    b = _bounds(doc)
    second = doc[b[1][0] :]
    points = {
        "inside the log header": (doc.index('"creator"') + 5, 0),
        "just after the entries open": (doc.index("[") + 1, 0),
        "inside a string of the first entry": (b[0][0] + doc[b[0][0] :].index("https://") + 10, 0),
        "at the end of the first entry": (b[0][1], 1),
        "just after the comma between entries": (b[0][1] + 1, 1),
        "in the middle of the second entry": ((b[1][0] + b[1][1]) // 2, 1),
        "inside a number": (b[1][0] + second.index('"time": 20.0') + len('"time": 20.'), 1),
        "after a minus sign": (b[1][0] + second.index('"blocked": -1') + len('"blocked": -'), 1),
        "inside a \\u escape": (doc.find("caf\\u00e9") + len("caf\\u00"), 3),
        "inside a UTF-8 character": (None, 3),
        "after the entries end": (doc.index("]", b[-1][1]) + 1, 4),
        "one character short": (len(doc) - 1, 4),
    }
    at, whole = points[name]
    return doc, at, whole


CUTS = [
    "inside the log header",
    "just after the entries open",
    "inside a string of the first entry",
    "at the end of the first entry",
    "just after the comma between entries",
    "in the middle of the second entry",
    "inside a number",
    "after a minus sign",
    "inside a \\u escape",
    "inside a UTF-8 character",
    "after the entries end",
    "one character short",
]


def _write_cut(tmp_path, name: str):
    doc, at, whole = _cut_point(name)
    data = doc.encode()
    # (a UTF-8 character cut: the first byte of 'é' kept, its second not)
    at = data.index("é".encode()) + 1 if at is None else len(doc[:at].encode())
    cut = tmp_path / "cut.har"
    cut.write_bytes(data[:at])
    before = tmp_path / "before.har"  # the same HAR with only the entries whole before the cut
    before.write_text(json.dumps(har(_entries()[:whole]), indent=2))
    return cut, before, at, whole


@pytest.mark.parametrize("name", CUTS)
def test_a_cut_har_gives_its_whole_entries_and_one_problem_saying_where_it_ends(tmp_path, name):
    cut, before, at, whole = _write_cut(tmp_path, name)
    items = list(open_input(str(cut)).records)
    problems = [i for i in items if isinstance(i, ReadProblem)]
    assert len(problems) == 1
    assert f"ends at byte {at}" in problems[0].message and "cut short" in problems[0].message
    assert problems[0].line == cut.read_bytes().count(b"\n") + 1
    assert _whole(cut) == _whole(before)
    assert (len(_whole(cut)) > 0) == (whole > 0)


@pytest.mark.parametrize("name", ["in the middle of the second entry", "after the entries end"])
def test_lint_and_export_of_a_cut_har_read_its_whole_entries(tmp_path, name, capsys):
    cut, before, at, _whole_n = _write_cut(tmp_path, name)
    rc_before = main(["lint", "--format", "json", str(before)])
    report_before = json.loads(capsys.readouterr().out)
    rc = main(["lint", "--format", "json", str(cut)])
    report = json.loads(capsys.readouterr().out)
    assert rc_before in (0, 1) and rc == (1 if rc_before == 1 else 3)  # (3: read in part, no finding)
    assert report["summary"]["messages"] == report_before["summary"]["messages"] > 0
    assert len(report["problems"]) == 1 and f"ends at byte {at}" in report["problems"][0]["message"]
    assert main(["export", "-f", "har", str(cut), "-o", str(tmp_path / "cut-out.har")]) == 0
    assert f"{cut}:{report['problems'][0]['line']}: the HAR document is cut short" in capsys.readouterr().err
    assert main(["export", "-f", "har", str(before), "-o", str(tmp_path / "before-out.har")]) == 0
    entries = json.loads((tmp_path / "cut-out.har").read_text())["log"]["entries"]
    assert len(entries) == len(json.loads((tmp_path / "before-out.har").read_text())["log"]["entries"]) > 0


@pytest.mark.parametrize("name", ["in the middle of the second entry", "one character short"])
def test_the_viewer_shows_the_whole_entries_of_a_cut_har(tmp_path, name):
    cut, before, _at, _whole_n = _write_cut(tmp_path, name)
    restarted, rows = _viewer_rows(cut)
    assert rows == _viewer_rows(before)[1] and rows
    assert not restarted  # (the entry-by-entry conversion reads it: no second reading whole)


@pytest.mark.parametrize(
    "text",
    [
        '{"log": {"entries": [{"request": {}}, }]}',  # broken in the middle, whole
        '{"log": {"entries": [{"request": {}} {"request": {',  # broken, then cut
        '{"log": {"entries": [{"request": {}, "time": NaN}, {"request": {',  # NaN, then cut
        '{"log": {"entries": [{"request": {}}, x',  # a stray character at the end
    ],
)
def test_a_har_broken_before_its_end_still_reads_as_one_problem_and_no_entries(tmp_path, text):
    path = tmp_path / "broken.har"
    path.write_text(text)
    items = list(open_input(str(path)).records)
    assert len(items) == 1 and isinstance(items[0], ReadProblem)
    assert "not a readable HAR file" in items[0].message


def _every_prefix_reads_as_cut(doc: str) -> None:
    from tracer.inputs.harcut import cut_log, cut_short

    dec, ends, i = json.JSONDecoder(), [], doc.index("[") + 1
    for _ in json.loads(doc)["log"]["entries"]:
        while doc[i] in " \n\r\t,":
            i += 1
        i = dec.raw_decode(doc, i)[1]
        ends.append(i)
    for n in range(1, len(doc)):
        text = doc[:n]
        if text.strip():
            assert cut_short(text.encode("utf-8", "surrogatepass")) == text, repr(text[-20:])
            assert len(cut_log(text)["entries"]) == sum(e <= n for e in ends), repr(text[-20:])


def test_every_beginning_of_a_har_is_read_as_cut_with_the_entries_whole_in_it():
    entries = [
        {
            "a": "caf\u00e9 \U0001f600 x\\y\n",
            "n": -1.5e3,
            "e": 2e-7,
            "t": True,
            "f": False,
            "z": None,
            "l": [1, {}],
        },
        {"b": 2**70, "c": "\ud800 alone", "request": {"url": "http://h/"}},
        {},
    ]
    _every_prefix_reads_as_cut(json.dumps(har(entries), indent=1))
    entries[1]["c"] = "no lone surrogate: UTF-8 cannot hold one"
    _every_prefix_reads_as_cut(json.dumps(har(entries), indent=1, ensure_ascii=False))
    _every_prefix_reads_as_cut(_doc())


@pytest.mark.parametrize("tail", ["tr ", "1. ", '"\\u00 ', "nul]", "-x"])
def test_a_har_ending_in_a_broken_value_is_not_read_as_cut(tail):
    from tracer.inputs.harcut import cut_short

    assert cut_short(('{"log": {"entries": [{"x": ' + tail).encode()) is None


@pytest.mark.parametrize("name", CUTS)
def test_the_entry_by_entry_reader_reads_a_cut_har_as_the_whole_reader_does(tmp_path, name):
    cut, before, _at, _whole_n = _write_cut(tmp_path, name)
    assert _streamed(cut) == _whole(cut) == _whole(before)


def test_a_whole_har_with_a_cut_character_after_it_is_not_read_as_cut(tmp_path):
    path = tmp_path / "tail.har"
    path.write_bytes(_doc().encode() + "é".encode()[:1])
    items = list(open_input(str(path)).records)
    assert len(items) == 1 and "not a readable HAR file" in items[0].message
    assert _viewer_rows(path) == (True, [])
