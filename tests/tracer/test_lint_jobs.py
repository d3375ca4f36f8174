"""`mcptrace lint --jobs N` writes the report `--jobs 1` writes, byte for byte, in every format.

The size thresholds are set to 0 here, so even the small fixtures are sharded by connection across
real worker processes (tracer.parallel); a user's small inputs stay in one process.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.cases import build_records, load_rule_cases
from tests.gencapture import generate as generate_capture
from tracer.capture import record_to_dict
from tracer.cli import main

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = sorted(str(p) for p in (ROOT / "fixtures" / "captures").glob("*.jsonl"))
FORMATS = ["text", "json", "sarif", "junit", "github"]
_JUNIT_TIME = re.compile(r'time="[0-9.]+"')
BOUND_S = 300  # a bound for a lint process, not a wait: the machine is shared and loaded


@pytest.fixture(autouse=True)
def _shard_everything(monkeypatch):
    monkeypatch.setenv("MCPTRACE_LINT_POOL_MIN", "0")
    monkeypatch.setenv("MCPTRACE_LINT_SHARD_MIN", "0")


def _lint(capsys, jobs: int, *args: str) -> tuple[int, str, str]:
    rc = main(["lint", "--no-config", "--no-progress", "--jobs", str(jobs), *args])
    out, err = capsys.readouterr()
    return rc, _JUNIT_TIME.sub('time="T"', out), err  # (junit reports how long the run took)


def _same(capsys, *args: str, jobs: int = 4) -> tuple[int, str, str]:
    one = _lint(capsys, 1, *args)
    many = _lint(capsys, jobs, *args)
    assert many == one
    return one


def _write(path: Path, recordings: list[list], transport: str = "stdio") -> None:
    """Recordings appended one after another, each under its own header (seq restarting at 1)."""
    lines = []
    t = 1_780_000_000_000_000_000
    for records in recordings:
        lines.append(
            orjson.dumps(
                {
                    "type": "header",
                    "format": "mcptrace",
                    "version": 1,
                    "tool": "test",
                    "transport": transport,
                    "t_ns": t,
                }
            )
        )
        for seq, rec in enumerate(records, 1):
            t += 1_000_000
            rec.seq, rec.t_ns = seq, t
            lines.append(orjson.dumps(record_to_dict(rec, redact=False)))
    path.write_bytes(b"\n".join(lines) + b"\n")


def _interleaved_cases(prefix: str) -> list:
    """Every rule case of fixtures/rules as its own connection, the cases' records interleaved as
    concurrent sessions are (stdio and HTTP ones alike)."""
    streams = []
    for n, (rule_id, case) in enumerate(load_rule_cases()):
        recs = build_records(case["messages"], case.get("transport", "stdio"))
        for rec in recs:
            rec.conn = f"{prefix}{rule_id}-{n}-{rec.conn}"
        streams.append(recs)
    out = []
    while any(streams):
        for s in streams:
            if s:
                out.extend(s[:3])
                del s[:3]
        streams = [s for s in streams if s]
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_fixture_captures_give_the_same_report_in_every_format(capsys, fmt):
    rc, out, _ = _same(capsys, "--format", fmt, *CAPTURES)
    assert rc == 1 and out


def test_every_rule_case_as_concurrent_sessions_gives_the_same_findings_and_summary(tmp_path, capsys):
    path = tmp_path / "cases.jsonl"
    _write(path, [_interleaved_cases("")])
    rc, out, _ = _same(capsys, "--format", "json", str(path))
    doc = orjson.loads(out)
    assert rc == 1 and doc["summary"]["findings"] > 200 and len(doc["summary"]["sessions"]) > 500


def test_appended_recordings_reusing_connection_names_close_their_sessions_in_order(tmp_path, capsys):
    path = tmp_path / "appended.jsonl"
    _write(path, [_interleaved_cases(""), _interleaved_cases(""), _interleaved_cases("again-")])
    rc, out, _ = _same(capsys, "--format", "json", str(path))
    sessions = orjson.loads(out)["summary"]["sessions"]
    assert rc == 1 and any(k.endswith("#2") for k in sessions)  # a name that came back is told apart


def test_a_generated_multi_connection_capture_gives_the_same_report(tmp_path, capsys):
    path = tmp_path / "gen.jsonl"
    generate_capture(path, 30_000, pad=40, connections=7)
    rc, out, _ = _same(capsys, "--format", "text", str(path))
    assert "30,000 messages" in out and rc == 0
    assert _lint(capsys, 2, "--format", "text", str(path)) == (rc, out, "")


def test_broken_and_torn_lines_are_reported_where_they_are(tmp_path, capsys):
    path = tmp_path / "broken.jsonl"
    _write(path, [_interleaved_cases("")])
    lines = path.read_bytes().split(b"\n")
    lines.insert(40, b"{not json")
    lines.insert(90, b'{"type":"message","seq":"x","dir":"c2s","conn":"c1","text":"{}"}')
    lines.insert(120, b"[1, 2]")
    path.write_bytes(b"\n".join(lines)[:-1].rstrip(b"}"))  # and a torn last line
    rc, out, _ = _same(capsys, "--format", "json", str(path))
    problems = orjson.loads(out)["problems"]
    assert rc == 1 and len(problems) == 4


def test_several_files_of_several_formats_are_reported_in_the_order_given(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    _write(cases, [_interleaved_cases("")])
    ndjson = tmp_path / "raw.ndjson"
    ndjson.write_text(
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n{"jsonrpc":"2.0","id":1,"result":{}}\n'
    )
    for fmt in ("text", "sarif"):
        rc, out, _ = _same(capsys, "--format", fmt, CAPTURES[0], str(cases), str(ndjson), CAPTURES[1])
        assert rc == 1 and out.index(CAPTURES[0]) < out.index(str(cases)) < out.index(str(ndjson))


def test_baselines_suppress_and_go_stale_the_same_way(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    _write(cases, [_interleaved_cases("")])
    base = tmp_path / "base.json"
    assert _lint(capsys, 4, "--write-baseline", str(base), str(cases))[0] == 0
    one = base.read_bytes()
    assert _lint(capsys, 1, "--write-baseline", str(base), str(cases))[0] == 0
    assert base.read_bytes() == one
    _write(cases, [_interleaved_cases("")[:-200]])  # some findings are gone: stale entries
    _rc, out, err = _same(capsys, "--format", "json", "--baseline", str(base), str(cases))
    assert "stale" in err and orjson.loads(out)["summary"]["findings"] < 50


def test_an_http_record_on_a_connection_that_began_on_stdio_is_still_linted_as_one_session(tmp_path, capsys):
    # the pool cannot keep that connection with the HTTP ones: this process re-lints the file
    recs = _interleaved_cases("")
    odd = [r for r in recs if r.transport == "stdio"][:6]
    for r in odd[3:]:
        r.transport = "http"
    path = tmp_path / "mixed.jsonl"
    _write(path, [recs[:300] + odd + recs[300:]])
    for fmt in ("json", "github"):
        _same(capsys, "--format", fmt, str(path))


def test_sessions_after_a_sibling_probe_process_are_judged_with_it(tmp_path, capsys):
    # a dual-era client probes a disposable process with server/discover, then starts its session on
    # a fresh one without a probe (MCP808 stays quiet); other clients run meanwhile
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    }
    entries = []
    for i in range(40):
        entries += [
            {
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
                "conn": f"probe{i}",
            },
            {
                "s2c": {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "result": {
                        "resultType": "complete",
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {},
                        "serverInfo": {"name": "s", "version": "1"},
                    },
                },
                "conn": f"probe{i}",
            },
            {"event": {"event": "closed"}, "conn": f"probe{i}"},
            {
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
                "conn": f"s{i}",
            },
            {
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
                "conn": f"x{i}",
            },
            {
                "s2c": {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}},
                "conn": f"s{i}",
            },
        ]
    path = tmp_path / "probes.jsonl"
    _write(path, [build_records(entries)])
    _rc, out, _ = _same(capsys, "--format", "json", str(path))
    assert 0 < orjson.loads(out)["summary"]["by_rule"].get("MCP808", 0) < 80  # the followers had a probe


def test_a_capture_whose_header_says_http_is_linted_whole_and_the_same(tmp_path, capsys):
    path = tmp_path / "proxy.jsonl"
    _write(path, [[r for r in _interleaved_cases("") if r.transport != "stdio"]], transport="http")
    rc, out, _ = _same(capsys, "--format", "json", str(path))
    assert rc == 1 and orjson.loads(out)["summary"]["findings"] > 50


def test_a_select_and_ignore_run_and_its_exit_code_are_the_same(tmp_path, capsys):
    rc, _out, _ = _same(capsys, "--select", "MCP2", "--ignore", "MCP211", "--fail-on", "warning", *CAPTURES)
    assert rc in (0, 1)


def test_jobs_below_one_is_a_usage_error(capsys):
    assert main(["lint", "--jobs", "0", CAPTURES[0]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--jobs" in err


_UNGUARDED = """\
import sys
sys.path.insert(0, {root!r})
from tracer.cli import main

with open({marker!r}, "a") as fh:  # what a script does each time it runs
    fh.write("ran\\n")
sys.exit(main(["lint", "--no-config", "--no-progress", "--jobs", "2", "-f", "json", "-o", {out!r}, {capture!r}]))
"""


def test_a_script_without_a_main_guard_runs_once_when_lint_starts_workers(tmp_path, capsys):
    """A user's script (or a tool) calling tracer.cli.main(["lint", "--jobs", ...]) at module level:
    the worker processes never import the caller's main module, so the script runs once and its
    report is --jobs 1's."""
    capture, marker, out = tmp_path / "gen.jsonl", tmp_path / "runs.txt", tmp_path / "report.json"
    generate_capture(capture, 3_000, pad=40, connections=4)
    script = tmp_path / "lint_it.py"
    script.write_text(
        _UNGUARDED.format(root=str(ROOT), marker=str(marker), out=str(out), capture=str(capture))
    )
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=dict(os.environ),  # (with the thresholds at 0: the capture is sharded across workers)
        capture_output=True,
        timeout=BOUND_S,
    )
    assert marker.read_text() == "ran\n"
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert _lint(capsys, 1, "--format", "json", str(capture)) == (0, out.read_text(), "")
