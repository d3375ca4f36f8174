"""`lint --jobs`: the parent reads a sharded capture once and routes each line of a settled
connection to its owner on a guess of its "conn" member (tracer.parallel_route); the owner reads it
in full and checks the guess (tracer.parallel_worker). Lines that look right but are broken or
crafted further on, and files not written in time order, still give the report `--jobs 1` gives,
byte for byte, each broken line reported once with its number.

The size thresholds are 0 here, so these small captures are sharded across real worker processes.
"""

from __future__ import annotations

import io
import pickle
import struct
from array import array

import orjson
import pytest

from tests.cases import LEGACY_HANDSHAKE
from tracer import parallel_route
from tracer.cli import main
from tracer.parallel import Channel, Task
from tracer.parallel_route import route

T0 = 1_780_000_000_000_000_000
SESSIONS = 9
CALLS = 6


@pytest.fixture(autouse=True)
def _shard_everything(monkeypatch):
    monkeypatch.setenv("MCPTRACE_LINT_POOL_MIN", "0")
    monkeypatch.setenv("MCPTRACE_LINT_SHARD_MIN", "0")


def _session(n: int) -> list[tuple[str, dict]]:
    """A legacy stdio session whose last request is never answered (an end rule tells its age)."""
    out = [(d, msg) for entry in LEGACY_HANDSHAKE for d, msg in entry.items()]
    for i in range(1, CALLS + 1):
        out.append(("c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": f"t{n}"}}))
        if i < CALLS:
            out.append(("s2c", {"jsonrpc": "2.0", "id": i, "result": {"content": [], "isError": False}}))
    return out


def _recording(t: int) -> list[bytes]:
    """A header, then SESSIONS concurrent sessions, their lines interleaved one by one."""
    head = {
        "type": "header",
        "format": "mcptrace",
        "version": 1,
        "tool": "t",
        "transport": "stdio",
        "t_ns": t,
    }
    lines = [orjson.dumps(head)]
    sessions = [_session(n) for n in range(SESSIONS)]
    seq = 0
    for i in range(max(map(len, sessions))):
        for n, msgs in enumerate(sessions):
            if i < len(msgs):
                seq += 1
                d, obj = msgs[i]
                rec = {"type": "message", "seq": seq, "t_ns": t + seq * 1_000_000, "dir": d}
                rec |= {"transport": "stdio", "conn": f"s{n}", "text": orjson.dumps(obj).decode()}
                lines.append(orjson.dumps(rec))
    return lines


def _plain(conn: str, t_ns: int, rest: bytes) -> bytes:
    """A line in the writer's layout up to its text, `rest` after the text's opening quote."""
    return b'{"type":"message","seq":900,"t_ns":%d,"dir":"c2s","transport":"stdio","conn":"%s","text":"%s' % (
        t_ns,
        conn.encode(),
        rest,
    )


def _lint(capsys, jobs: int, path) -> tuple[int, str, str]:
    rc = main(["lint", "--no-config", "--no-progress", "--jobs", str(jobs), "--format", "json", str(path)])
    out, err = capsys.readouterr()
    return rc, out, err


def _same(capsys, path) -> dict:
    one = _lint(capsys, 1, path)
    assert _lint(capsys, 2, path) == one
    assert _lint(capsys, 3, path) == one
    return orjson.loads(one[1])


# lines of connections whose sessions have begun (every one has had its initialize by line 30)
BROKEN_TEXTS = [
    b'{\\"jsonrpc\\":\x01}"}',  # a raw control character
    b'{\\"a\\":\\q}"}',  # an escape JSON has not
    b'{"a":1}"}',  # an unescaped quote: the text ends early
    b'\\ud800"}',  # a lone surrogate
    b'\xff\xfe"}',  # not UTF-8
    b'ends with a backslash\\"}',  # the closing quote escaped: the line never ends
]


def test_lines_broken_after_a_plain_prefix_are_reported_once_each_where_they_are(tmp_path, capsys):
    lines = _recording(T0)
    at = []
    for i, text in enumerate(BROKEN_TEXTS):
        pos = 30 + 7 * i
        lines.insert(pos, _plain(f"s{i % SESSIONS}", T0 + 1, text))
        at.append(pos + 1)  # (a line number counts from 1)
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    doc = _same(capsys, path)
    assert [p["line"] for p in doc["problems"]] == at
    assert doc["summary"]["messages"] == SESSIONS * (2 * CALLS + 2)


@pytest.mark.parametrize(
    "rest",
    [
        b'{}","conn":"s1"}',  # a second conn member: the record is another connection's
        b'{}","conn":"elsewhere"}',  # ... a connection not seen before
        b'{}","type":"stderr"}',  # a second type member: no message at all
        b'{}","t_ns":5}',  # a second t_ns member: another time
    ],
)
def test_a_line_whose_later_members_contradict_its_prefix_is_read_as_one_analyser_reads_it(
    tmp_path, capsys, rest
):
    lines = _recording(T0)
    lines.insert(40, _plain("s4", T0 + 40_000_000, rest))
    path = tmp_path / "crafted.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    doc = _same(capsys, path)
    assert doc["problems"] == [] and doc["summary"]["findings"] > 0


def test_a_broken_line_with_the_latest_time_does_not_move_the_end_of_open_sessions(tmp_path, capsys):
    # the never-answered requests' age is measured to the last record's time: a broken line that
    # only its owner reads cannot give that time to the other workers' sessions
    late = T0 + 10**15
    first = _recording(T0)
    first.append(_plain("s2", late, b'{\\"jsonrpc\\":\\q}"}'))  # before the next recording's header
    second = _recording(T0 + 200_000_000)
    second.append(_plain("s5", late, b'{\\"jsonrpc\\":\\q}"}'))  # before the end of the file
    path = tmp_path / "late.jsonl"
    path.write_bytes(b"\n".join(first + second) + b"\n")
    doc = _same(capsys, path)
    ages = [
        int(f["message"].split("pending ")[1].split(" ms")[0])
        for f in doc["findings"]
        if f["rule"] == "MCP211"
    ]
    assert len(doc["problems"]) == 2 and len(ages) == 2 * SESSIONS
    assert max(ages) < 1000  # (from the last request to the last record: well under a second)


def test_a_late_line_before_the_last_one_still_ends_the_sessions_at_the_latest_time(tmp_path, capsys):
    # the router takes the end time from the last line it routes; a file not written in time order
    # has a later one elsewhere, whose owner finds out (the ages below are measured to it)
    late = T0 + 10**12
    first = _recording(T0)
    first.insert(35, _plain("s3", late, b'{\\"jsonrpc\\":\\"2.0\\",\\"method\\":\\"notifications/x\\"}"}'))
    second = _recording(T0 + 200_000_000)
    second.insert(
        35, _plain("s6", late + 1, b'{\\"jsonrpc\\":\\"2.0\\",\\"method\\":\\"notifications/x\\"}"}')
    )
    path = tmp_path / "unordered.jsonl"
    path.write_bytes(b"\n".join(first + second) + b"\n")
    doc = _same(capsys, path)
    ages = [
        int(f["message"].split("pending ")[1].split(" ms")[0])
        for f in doc["findings"]
        if f["rule"] == "MCP211"
    ]
    assert doc["problems"] == [] and len(ages) == 2 * SESSIONS
    assert min(ages) > 900_000  # (to the late line's time: a thousand seconds after the rest)


def _streams(path, jobs: int) -> list[list[tuple]]:
    """What the router sends each of `jobs` workers for this file: its entries, in order."""
    outs = [io.BytesIO() for _ in range(jobs)]
    assert route(Task(0, str(path), None, path.stat().st_size, True), [Channel(o) for o in outs])
    streams = []
    for o in outs:
        data, pos, entries = o.getvalue(), 0, []
        while pos < len(data):
            (n,) = struct.unpack_from("!Q", data, pos)
            entries += pickle.loads(data[pos + 8 : pos + 8 + n])[1]
            pos += 8 + n
        streams.append(entries)
    return streams


def test_each_line_of_a_sharded_capture_reaches_one_worker_and_only_headers_reach_all(tmp_path):
    lines = _recording(T0) + _recording(T0 + 200_000_000)
    path = tmp_path / "two.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    got: dict[int, list[int]] = {}  # line number -> the workers that received it
    for k, entries in enumerate(_streams(path, 3)):
        for entry in entries:
            if entry[0] == "L":
                numbers = array("q")
                numbers.frombytes(entry[2])
                assert entry[1].split(b"\n") == [lines[i - 1] for i in numbers]
                for i in numbers:
                    got.setdefault(i, []).append(k)
            elif entry[0] in ("r", "h"):
                assert entry[2] == lines[entry[1] - 1] + b"\n"
                got.setdefault(entry[1], []).append(k)
    headers = {1, len(_recording(T0)) + 1}
    assert sorted(got) == list(range(1, len(lines) + 1))
    assert all(got[i] == [0, 1, 2] for i in headers)
    assert all(len(got[i]) == 1 for i in got if i not in headers)
    # (most lines are routed on the guess, not read in full by the router)
    guessed = sum(1 for k in got if k not in headers) - sum(
        1 for entries in _streams(path, 3) for e in entries if e[0] == "r"
    )
    assert guessed > len(lines) * 3 // 4


@pytest.mark.parametrize("block", [1, 7, 64, 300])
def test_lines_that_cross_the_routers_read_blocks_give_the_same_report(tmp_path, capsys, monkeypatch, block):
    # (the router runs in this process: its blocks made tiny, every line spans several; a torn
    # last line and a blank one included)
    monkeypatch.setattr(parallel_route, "BLOCK_BYTES", block)
    lines = [*_recording(T0), b"", *_recording(T0 + 200_000_000)]
    path = tmp_path / "blocks.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n" + lines[5][:40])
    doc = _same(capsys, path)
    assert [p["line"] for p in doc["problems"]] == [len(lines) + 1]
