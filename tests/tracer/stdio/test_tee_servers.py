"""Misbehaving stdio servers (tests/servers/) relay through the tee exactly as they run directly, and
their capture carries the right MCP8xx findings, with the byte offsets of the offending lines."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tracer.stdio.test_tee_relay import read_records
from tracer.analyser import analyse_all
from tracer.model import Direction, Finding, Record, RecordType, Severity
from tracer.rules import select_rules

SERVERS = Path(__file__).resolve().parents[2] / "servers"
TEE = [sys.executable, "-m", "tracer", "stdio"]
BOUND_S = 120


def server(name: str, *args: str) -> list[str]:
    return [sys.executable, str(SERVERS / f"{name}.py"), *args]


def request(i: int, method: str = "tools/call") -> bytes:
    params = {"name": "echo", "arguments": {"text": f"call {i}"}}
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n"


@dataclass
class Run:
    out: bytes
    err: bytes
    code: int
    records: list[Record] | None = None

    def findings(self, prefix: str = "MCP8") -> list[Finding]:
        msgs, ends = analyse_all(self.records, select_rules([prefix]))
        return [f for m in msgs for f in m.findings] + ends

    def messages(self, direction: Direction) -> list[Record]:
        return [r for r in self.records if r.type is RecordType.MESSAGE and r.dir is direction]


def run(cmd: list[str], stdin: bytes, tmp: Path | None = None, *tee_args: str) -> Run:
    """Run a server directly, or (with tmp) through the tee; stdin is written whole, then closed."""
    cap = tmp / "cap.jsonl" if tmp is not None else None
    argv = [*TEE, *tee_args, "-o", str(cap), "--", *cmd] if cap else cmd
    p = subprocess.run(argv, input=stdin, capture_output=True, timeout=BOUND_S)
    return Run(p.stdout, p.stderr, p.returncode, read_records(cap) if cap else None)


def side_by_side(cmd: list[str], stdin: bytes, tmp: Path) -> Run:
    """The tee run, after checking it is indistinguishable from the direct run for the host."""
    direct = run(cmd, stdin)
    teed = run(cmd, stdin, tmp, "-q")
    assert teed.out == direct.out
    assert teed.err == direct.err
    assert teed.code == direct.code
    return teed


def test_tee_relays_a_stdout_banner_unchanged_and_reports_it_at_byte_zero(tmp_path):
    t = side_by_side(server("banner"), request(1), tmp_path)
    assert t.out.startswith(b"Starting weather server v1.2 (stdio)\n")
    [f] = t.findings()
    assert f.rule == "MCP801" and f.severity is Severity.ERROR and f.offset == 0
    assert "server stdout byte 0" in f.message and '"Starting weather server v1.2 (stdio)"' in f.message


def test_tee_reports_a_server_crash_mid_line_with_its_exit_code_and_the_cut_line(tmp_path):
    t = side_by_side(server("crash_mid_line"), request(1) + request(2), tmp_path)
    assert t.code == 3
    first, cut = t.messages(Direction.S2C)
    assert first.eol and not cut.eol and cut.offset == len(first.raw) + 1
    assert t.out == first.raw + b"\n" + cut.raw
    [f] = t.findings()
    assert f.rule == "MCP801" and f.offset == cut.offset and "ended in the middle of this line" in f.message
    assert [r.data for r in t.records if r.type is RecordType.EVENT][-1] == {"event": "exit", "code": 3}


def test_tee_reports_invalid_utf8_at_the_offset_of_the_bad_byte(tmp_path):
    t = side_by_side(server("bad_utf8"), request(1) + request(2), tmp_path)
    bad = t.out.index(b"\xe9")
    first, second = t.messages(Direction.S2C)
    assert first.raw + b"\n" + second.raw + b"\n" == t.out  # stored exactly (base64 in the file)
    found = t.findings()
    assert [(f.rule, f.offset) for f in found] == [
        ("MCP803", bad),
        ("MCP803", second.offset + first.raw.index(b"\xe9")),
    ]
    assert "0xE9" in found[0].message


def test_tee_keeps_crlf_bytes_and_warns_once_per_direction(tmp_path):
    t = side_by_side(server("crlf"), request(1) + request(2) + request(3), tmp_path)
    assert t.out.count(b"\r\n") == 3
    assert all(r.raw.endswith(b"\r") for r in t.messages(Direction.S2C))
    [f] = t.findings()
    assert f.rule == "MCP802" and f.severity is Severity.WARNING and f.offset == 0


def test_tee_relays_a_ten_megabyte_line_in_one_piece(tmp_path):
    t = side_by_side(server("big_line"), request(1), tmp_path)
    [line] = t.messages(Direction.S2C)
    assert len(t.out) > 10 * 1024 * 1024 and line.raw + b"\n" == t.out
    assert t.findings() == []


def test_tee_relays_a_stderr_flood_unchanged_and_captures_its_lines(tmp_path):
    t = side_by_side(server("stderr_flood"), request(1), tmp_path)
    assert len(t.err) > 3 * 1024 * 1024 + 50_000 * 30
    stderr = [r for r in t.records if r.type is RecordType.STDERR]
    assert len(stderr) == 50_000 + 2
    assert b"".join(r.raw + b"\n" for r in stderr[:-1]) == t.err[: stderr[-1].offset]
    big = stderr[-1]
    assert big.data == {"cut": 2 * 1024 * 1024} and len(big.raw) == 1024 * 1024  # capped in the capture only
    [f] = t.findings()
    latin1 = t.err.index(b"latin-1 log")
    assert f.rule == "MCP804" and f.offset == latin1 and "caf\\xe9" in f.message
    assert t.messages(Direction.S2C)[0].raw + b"\n" == t.out


def test_tee_reports_pretty_printed_json_once_with_the_span_of_its_lines(tmp_path):
    t = side_by_side(server("pretty"), request(7), tmp_path)
    lines = t.messages(Direction.S2C)
    assert len(lines) == t.out.count(b"\n") > 3
    [f] = t.findings()
    assert f.rule == "MCP802" and f.severity is Severity.ERROR and f.offset == 0
    assert f.seq == lines[-1].seq and f.related_seq == lines[0].seq
    assert (
        f"over {len(lines)} lines at bytes 0–{len(t.out) - 1}" in f.message and "response (id 7)" in f.message
    )


def test_tee_notes_findings_on_stderr_without_cutting_the_servers_stderr_lines(tmp_path):
    direct = run(server("split_stderr"), request(1))
    teed = run(server("split_stderr"), request(1), tmp_path)
    assert teed.out == direct.out
    lines = teed.err.decode().splitlines(keepends=True)
    notes = [line for line in lines if line.startswith("mcptrace: ")]
    assert "".join(line for line in lines if not line.startswith("mcptrace: ")) == direct.err.decode()
    assert any(
        n.startswith("mcptrace: MCP801 error: server stdout byte 0:") and '"weather server ready"' in n
        for n in notes
    )


def test_tee_says_nothing_on_stdout_and_only_notes_on_stderr_for_a_clean_session(tmp_path):
    direct = run(server("echo"), request(1) + request(2))
    teed = run(server("echo"), request(1) + request(2), tmp_path)
    assert teed.out == direct.out and teed.err == b"" and teed.code == 0


@pytest.mark.parametrize("name", ["banner", "crlf", "pretty", "bad_utf8"])
def test_tee_live_notes_match_what_lint_finds_later(tmp_path, name):
    teed = run(server(name), request(1), tmp_path)
    live = sorted(
        line.split(" ", 2)[1] for line in teed.err.decode().splitlines() if line.startswith("mcptrace: MCP")
    )
    assert live == sorted(f.rule for f in teed.findings())
    assert live  # each of these servers has something to say
