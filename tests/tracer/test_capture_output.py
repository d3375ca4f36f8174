"""Where a capture is written (tracer.output, CaptureWriter): an existing capture gets a new session
appended, --overwrite replaces it, anything else is refused before a byte changes; captures are
0600, symlinks are never followed, folders mcptrace creates are 0700 whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import orjson
import pytest

from tracer.analyser import Analyser
from tracer.capture import CaptureWriter, ReadProblem, header_record, read_capture
from tracer.model import Direction, Record, RecordType
from tracer.output import CaptureFileError, check_output
from tracer.paths import captures_dir

BOUND_S = 60


def _msg(raw: bytes, conn: str = "c1", d=Direction.C2S) -> Record:
    return Record(RecordType.MESSAGE, dir=d, raw=raw, conn=conn)


def _records(path):
    with open(path, "rb") as fh:
        return list(read_capture(fh, str(path)))


def _only_records(path) -> list[Record]:
    return [r for r in _records(path) if isinstance(r, Record)]


def _session(path, conn: str, **kw) -> None:
    with CaptureWriter(path, header_record("stdio", label=conn), **kw) as w:
        w.write(_msg(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', conn))
        w.write(_msg(b'{"jsonrpc":"2.0","id":1,"result":{}}', conn, Direction.S2C))


def test_writing_to_an_existing_capture_appends_a_new_session_after_the_old_one(tmp_path):
    path = tmp_path / "cap.jsonl"
    _session(path, "first")
    _session(path, "second")
    recs = _records(path)
    assert not [r for r in recs if isinstance(r, ReadProblem)]
    assert [r.data["label"] for r in recs if r.type is RecordType.HEADER] == ["first", "second"]
    assert [r.conn for r in recs if r.type is RecordType.MESSAGE] == ["first"] * 2 + ["second"] * 2


def test_overwrite_replaces_an_existing_capture(tmp_path):
    path = tmp_path / "cap.jsonl"
    _session(path, "first")
    _session(path, "second", overwrite=True)
    assert [r.data["label"] for r in _records(path) if r.type is RecordType.HEADER] == ["second"]


def test_a_file_that_is_not_a_capture_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my notes\n")
    path.chmod(0o644)
    for attempt in (lambda: check_output(path), lambda: CaptureWriter(path, header_record("stdio"))):
        with pytest.raises(CaptureFileError, match="not an mcptrace capture"):
            attempt()
    assert path.read_bytes() == b"my notes\n" and stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_session_appended_after_a_torn_last_line_starts_on_a_line_of_its_own(tmp_path):
    path = tmp_path / "cap.jsonl"
    _session(path, "first")
    with open(path, "ab") as fh:
        fh.write(b'{"type":"message","seq":3,"t_n')  # the first writer was killed mid-record
    _session(path, "second")
    problems = [r for r in _records(path) if isinstance(r, ReadProblem)]
    assert len(problems) == 1 and "broken capture record" in problems[0].message
    recs = _only_records(path)
    assert [r.data["label"] for r in recs if r.type is RecordType.HEADER] == ["first", "second"]
    assert len([r for r in recs if r.type is RecordType.MESSAGE and r.conn == "second"]) == 2


def test_an_existing_capture_readable_by_others_is_made_private_and_never_widened(tmp_path):
    wide, narrow = tmp_path / "wide.jsonl", tmp_path / "narrow.jsonl"
    for p in (wide, narrow):
        _session(p, "first")
    wide.chmod(0o644)
    _session(wide, "second")
    _session(narrow, "second")
    assert stat.S_IMODE(wide.stat().st_mode) == 0o600
    assert stat.S_IMODE(narrow.stat().st_mode) == 0o600


def test_a_symlink_at_the_output_path_is_refused_and_its_target_left_alone(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_bytes(b"keep me\n")
    for name, points_to in (("link.jsonl", target), ("dangling.jsonl", tmp_path / "nowhere.jsonl")):
        link = tmp_path / name
        link.symlink_to(points_to)
        for overwrite in (False, True):
            with pytest.raises(CaptureFileError, match="symbolic link"):
                check_output(link, overwrite=overwrite)
            with pytest.raises(CaptureFileError, match="symbolic link"):
                CaptureWriter(link, header_record("stdio"), overwrite=overwrite)
    assert target.read_bytes() == b"keep me\n" and not (tmp_path / "nowhere.jsonl").exists()


def test_a_directory_or_a_missing_folder_is_refused_before_anything_is_created(tmp_path):
    with pytest.raises(CaptureFileError, match="is a directory"):
        check_output(tmp_path)
    with pytest.raises(CaptureFileError, match="no such directory"):
        check_output(tmp_path / "missing" / "cap.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_lint_reads_two_appended_sessions_with_the_same_connection_name_as_two(tmp_path):
    # The proxy names connections client→upstream, so a restarted proxy reuses the name; the second
    # session's ping must not pair with (or be a duplicate of) the first session's.
    path = tmp_path / "cap.jsonl"
    _session(path, "127.0.0.1→upstream/mcp")
    _session(path, "127.0.0.1→upstream/mcp")
    a = Analyser()
    findings = []
    for ev in a.run(_records(path)):
        findings.extend(ev.findings)
    assert len(a.session_cells) == 2
    assert not [f for f in findings if f.rule in ("MCP201", "MCP202", "MCP203", "MCP204", "MCP205")]


_APPENDER = """
import sys
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, Record, RecordType
conn, n = sys.argv[2], int(sys.argv[3])
with CaptureWriter(sys.argv[1], header_record("stdio", label=conn)) as w:
    print("open", flush=True)
    sys.stdin.readline()  # both writers are open: go
    for i in range(n):
        raw = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"pad":"%s"}}' % (i, "x" * (i % 5000))).encode()
        if i % 3:
            w.write(Record(RecordType.MESSAGE, dir=Direction.C2S, raw=raw, conn=conn))
        else:
            w.write_many([Record(RecordType.MESSAGE, dir=Direction.C2S, raw=raw, conn=conn)] * 2)
"""


def test_two_writers_appending_to_one_capture_at_once_never_tear_each_others_records(tmp_path):
    path = tmp_path / "cap.jsonl"
    _session(path, "earlier")
    n = 3000
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(path), conn, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for conn in ("a", "b")
    ]
    for p in procs:
        assert p.stdout.readline() == "open\n"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.close()
    for p in procs:
        assert p.wait(timeout=BOUND_S) == 0
        p.stdout.close()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    objs = [orjson.loads(line) for line in lines[:-1]]  # every line is one whole record
    per_writer = n + (n + 2) // 3  # every third write was a batch of two
    for conn in ("a", "b"):
        assert len([o for o in objs if o.get("conn") == conn]) == per_writer
    assert len([o for o in objs if o["type"] == "header"]) == 3


def test_folders_mcptrace_creates_are_private_even_under_umask_000(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    old = os.umask(0)
    try:
        d = captures_dir()
    finally:
        os.umask(old)
    for folder in (tmp_path / "state", tmp_path / "state" / "mcptrace", d):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
