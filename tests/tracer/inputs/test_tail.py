"""The end of a host log or an NDJSON file read ahead of the sequential pass (tracer.inputs.tail):
what `G` shows at once. Every row read ahead is a row of the conversion (lint's rows), the same
but for what the rows before the window decide (seq, a restarted server's connection, the first
message's mark, a guessed direction), and the last one is the conversion's last; hostile and
damaged inputs give rows or none, never an error."""

from __future__ import annotations

import json

import orjson
import pytest

from tests.gencapture import generate
from tests.geninputs import generate as generate_input
from tests.tracer.test_hostile_har import HOSTILE, _entry
from tests.tracer.view.test_view_lazy_rows import HOSTLOG, NDJSON, _converted_lines, _hostile_hostlog
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs import open_input
from tracer.inputs.hartail import read_har_tail
from tracer.inputs.tail import read_tail
from tracer.view.viewdata import open_view

PENDING = ("seq", "conn", "offset")  # what the rows before the window decide


def _key(obj: dict) -> tuple:
    data = obj.get("data") or {}
    return obj.get("line"), obj.get("type"), data.get("event")


def _provisional_view(obj: dict) -> dict:
    out = {k: v for k, v in obj.items() if k not in PENDING}
    if out.get("dir_inferred"):
        out.pop("dir", None)  # (an NDJSON answer whose request is before the window)
    return out


def _fmt(path: str):
    inp = open_input(path)
    inp.fh.close()
    return inp.format


def _check_tail(path: str, nbytes: int) -> int:
    """Read the tail of PATH; every row must be the conversion's row of its line. Returns how many."""
    tail = read_tail(path, _fmt(path), nbytes=nbytes)
    assert tail is not None
    converted = [orjson.loads(line) for line in _converted_lines(path)[1:]]
    by_key = {_key(obj): obj for obj in converted}
    ahead = [orjson.loads(line) for line in tail.lines]
    for obj in ahead:
        assert obj["seq"] == 0, "a row read ahead has no seq yet"
        assert _key(obj) in by_key, obj
        assert _provisional_view(obj) == _provisional_view(by_key[_key(obj)])
    assert _key(ahead[-1]) == _key(converted[-1]), "the last row read ahead is the input's last"
    return len(ahead)


@pytest.mark.parametrize("fmt", ["hostlog", "ndjson"])
@pytest.mark.parametrize("nbytes", [300, 4096, 1 << 20])
def test_every_row_read_ahead_is_the_conversions_row_of_its_line(tmp_path, fmt, nbytes):
    capture = tmp_path / "big.jsonl"
    generate(capture, 3_000, 80)
    path = tmp_path / f"big.{fmt}"
    generate_input(str(capture), path, fmt, swap_every=97)
    assert _check_tail(str(path), nbytes) >= 1


@pytest.mark.parametrize("nbytes", [130, 300, 700, 1 << 16])
def test_a_host_log_with_restarts_bom_and_stray_lines_reads_ahead_as_its_conversion(tmp_path, nbytes):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(HOSTLOG)
    _check_tail(str(path), nbytes)


@pytest.mark.parametrize("nbytes", [60, 150, 1 << 16])
def test_ndjson_with_early_answers_and_broken_lines_reads_ahead_as_its_conversion(tmp_path, nbytes):
    path = tmp_path / "log.ndjson"
    path.write_bytes(NDJSON)
    _check_tail(str(path), nbytes)


@pytest.mark.parametrize("nbytes", [500, 5000, 50_000])
def test_a_hostile_host_log_reads_ahead_as_its_conversion(tmp_path, nbytes):
    path = tmp_path / "mcp.log"
    path.write_bytes(_hostile_hostlog())
    _check_tail(str(path), nbytes)


def test_a_row_read_ahead_names_its_line_in_the_whole_file(tmp_path):
    path = tmp_path / "log.ndjson"
    path.write_bytes(b'{"jsonrpc":"2.0","method":"a"}\n' * 1000 + b'{"jsonrpc":"2.0","id":9,"method":"b"}\n')
    tail = read_tail(str(path), _fmt(str(path)), nbytes=100)
    assert tail is not None and orjson.loads(tail.lines[-1])["line"] == 1001
    assert tail.first_line == 1001 - len(tail.lines) + 1


def test_a_window_inside_one_long_line_or_over_blank_lines_reads_nothing_ahead(tmp_path):
    long = tmp_path / "long.ndjson"
    long.write_bytes(
        b'{"jsonrpc":"2.0","id":1,"method":"a"}\n{"jsonrpc":"2.0","method":"' + b"x" * 10_000 + b'"}'
    )
    assert read_tail(str(long), _fmt(str(long)), nbytes=1000) is None  # (its start is not in the window)
    blank = tmp_path / "blank.ndjson"
    blank.write_bytes(b'{"jsonrpc":"2.0","id":1,"method":"a"}\n' + b" \n\r\n\n" * 500)
    assert read_tail(str(blank), _fmt(str(blank)), nbytes=100) is None
    assert read_tail(str(tmp_path / "gone.ndjson"), _fmt(str(blank))) is None


def test_bytes_that_are_no_json_at_the_end_read_ahead_as_the_reader_reads_them(tmp_path):
    path = tmp_path / "log.ndjson"
    junk = bytes(range(256)) * 20
    path.write_bytes(b'{"jsonrpc":"2.0","id":1,"method":"a"}\n' * 50 + junk + b"\n" + junk)
    _check_tail(str(path), 3000)


# -- a HAR's last entries (tracer.inputs.hartail) ---------------------------------------------------

HAR_PENDING = ("seq", "line", "conn")  # and the exchange's flow id, the entry's number


def _har_view(obj: dict) -> bytes:
    out = {k: v for k, v in obj.items() if k not in HAR_PENDING}
    if isinstance(out.get("http"), dict):
        out["http"] = {k: v for k, v in out["http"].items() if k != "flow"}
    return orjson.dumps(out, option=orjson.OPT_SORT_KEYS)


def _check_har_tail(path: str, nbytes: int) -> int:
    lines = read_har_tail(path, nbytes=nbytes)
    if lines is None:
        return 0
    converted = [_har_view(orjson.loads(line)) for line in _converted_lines(path)[1:]]
    known = set(converted)
    ahead = [orjson.loads(line) for line in lines]
    for obj in ahead:
        assert obj["seq"] == 0 and obj["line"] == 0 if "line" in obj else obj["seq"] == 0
        if obj["type"] in ("message", "http"):  # (connection events are the recorder's, pending too)
            assert _har_view(obj) in known, obj
    assert _har_view(ahead[-1]) == converted[-1], "the last row read ahead is the input's last"
    return len(ahead)


@pytest.mark.parametrize("nbytes", [2000, 20_000, 1 << 20])
def test_every_row_read_ahead_of_a_har_is_a_row_of_its_conversion(tmp_path, nbytes):
    capture = tmp_path / "big.jsonl"
    generate(capture, 3_000, 80)
    path = tmp_path / "big.har"
    generate_input(str(capture), path, "har", swap_every=97)
    assert _check_har_tail(str(path), nbytes) >= 1


def test_hostile_har_entries_read_ahead_as_far_as_their_conversion_goes(tmp_path):
    entries = [_entry(**change) for change in HOSTILE] + [_entry()]
    path = tmp_path / "hostile.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    assert _check_har_tail(str(path), 1 << 20) >= 1


@pytest.mark.parametrize(
    "doc",
    [
        b'{"log":{"entries":[' + b'{"a":' * 5000 + b"1" + b"}" * 4999,  # nested, cut
        b'{"log":{"entries":[' + b"{" * 200_000,
        b'{"log":{"entries":[{"startedDateTime":"x","request":{}}' + b"\xff\xfe" * 10,
        b'{"log":{"entries":[{"startedDateTime":"x","request":{"url":"\\"{\\"request\\":{}}"}}',  # cut
        b"",
    ],
    ids=["nested", "braces", "not-utf8", "cut", "empty"],
)
def test_a_damaged_har_reads_nothing_ahead_or_what_its_entries_say_never_an_error(tmp_path, doc):
    path = tmp_path / "damaged.har"
    path.write_bytes(doc)
    lines = read_har_tail(str(path), nbytes=1 << 20)
    assert lines is None or all(orjson.loads(line)["seq"] == 0 for line in lines)


# -- a flow file's last flows (addons.mitm_stream.read_tail, registered by the CLI) ----------------


def _mitm_file(tmp_path, messages: int = 400) -> str:
    capture = tmp_path / "small.jsonl"
    generate(capture, messages, 60)
    path = tmp_path / "small.mitm"
    generate_input(str(capture), path, "mitm")
    return str(path)


def test_every_row_read_ahead_of_a_flow_file_is_a_row_of_its_conversion(tmp_path):
    from addons.mitm_stream import read_tail as read_mitm_tail

    register_optional_inputs()
    path = _mitm_file(tmp_path)
    converted = [_har_view(orjson.loads(line)) for line in _converted_lines(path)[1:]]
    for flows in (1, 5, 64, 10_000):
        lines = read_mitm_tail(path, flows=flows)
        assert lines is not None
        ahead = [orjson.loads(line) for line in lines]
        assert all(obj["seq"] == 0 for obj in ahead)
        for obj in ahead:
            if obj["type"] in ("message", "http"):
                assert _har_view(obj) in set(converted), obj
        last = [_har_view(o) for o in ahead if o["type"] in ("message", "http")][-1]
        assert last == [c for c in converted if orjson.loads(c)["type"] in ("message", "http")][-1]


def test_a_cut_or_damaged_flow_file_reads_ahead_the_flows_before_the_damage_never_an_error(tmp_path):
    from addons.mitm_stream import read_tail as read_mitm_tail

    path = _mitm_file(tmp_path, 60)
    with open(path, "rb") as fh:
        data = fh.read()
    for name, doc in {
        "cut": data[: len(data) // 2],
        "huge-prefix": data + b"99999999999999999999:x",
        "garbage-prefix": data + b"12x:abc",
        "garbage": bytes(range(256)) * 10,
        "empty": b"",
        "bad-flow": b"5:hello,",
    }.items():
        p = tmp_path / f"{name}.mitm"
        p.write_bytes(doc)
        lines = read_mitm_tail(str(p))
        assert lines is None or all(orjson.loads(line)["seq"] == 0 for line in lines), name
        if name in ("cut", "huge-prefix", "garbage-prefix"):
            assert lines, f"{name}: the whole flows before the damage are read ahead"


def test_a_flow_file_of_millions_of_tiny_records_is_not_walked_to_its_end_for_a_read_ahead(
    tmp_path, monkeypatch
):
    # `0:~` is a whole tnetstring (None) of 3 bytes: a hostile file of them made G walk a 1 GB file
    # record by record for minutes; past the walk's bound there is no read-ahead (G waits, as before)
    import addons.mitm_stream as mitm_stream

    monkeypatch.setattr(mitm_stream, "_WALK_MAX", 1_000)
    tiny = tmp_path / "tiny.mitm"
    tiny.write_bytes(b"0:~" * 5_000)
    with open(tiny, "rb") as fh:
        assert mitm_stream._last_flows(fh, tiny.stat().st_size, 64) is None
    assert mitm_stream.read_tail(str(tiny)) is None
    few = tmp_path / "few.mitm"
    few.write_bytes(b"0:~" * 500)  # within the bound: its last 64 records are found
    with open(few, "rb") as fh:
        assert mitm_stream._last_flows(fh, few.stat().st_size, 64) == (3 * 436, 1_500)


def test_the_view_of_a_flow_file_reads_its_end_ahead_then_its_rows_are_the_conversions(tmp_path):
    register_optional_inputs()
    path = _mitm_file(tmp_path)
    view = open_view(path)
    try:
        assert view.can_read_ahead() and view.read_ahead() and view.provisional > 0
        ahead = orjson.loads(view.detail(-1 - view.provisional).line)
        assert ahead["seq"] == 0 and "provisional" in (view.detail(-2).problem or "")
        view.index.build()
        assert not view.can_read_ahead()
        assert [view.index.line(r) for r in range(len(view))] == _converted_lines(path)
    finally:
        view.close()
