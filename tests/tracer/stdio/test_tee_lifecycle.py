"""The tee's life cycle: exit codes, start-up failures, stdin EOF and escalation, forwarded signals,
the default capture location, and a capture that survives `kill -9` of the tee."""

from __future__ import annotations

import os
import selectors
import signal
import stat
import subprocess
import sys

import pytest

from tests.tracer.stdio.test_tee_relay import read_records
from tests.tracer.stdio.test_tee_servers import TEE, request, run, server
from tracer.capture import ReadProblem, read_capture
from tracer.model import Direction, RecordType

BOUND_S = 60


def events(records) -> list[dict]:
    return [r.data for r in records if r.type is RecordType.EVENT]


def read_until(p: subprocess.Popen, stream, marker: bytes, bound: float = BOUND_S) -> bytes:
    """Read a child's pipe until `marker` shows up (bounded; no sleeps)."""
    got = b""
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        while marker not in got:
            if not sel.select(bound):
                raise AssertionError(f"no {marker!r} within {bound} s; got {got[-500:]!r}")
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"stream ended before {marker!r}; got {got[-500:]!r}")
            got += chunk
    return got


@pytest.mark.parametrize(
    ("code", "expected"), [(0, 0), (5, 5), (-signal.SIGKILL, 137), (-signal.SIGTERM, 143)]
)
def test_tee_exits_with_the_servers_exit_code_or_128_plus_its_signal(tmp_path, code, expected):
    t = run(server("exit_code", str(code)), b"", tmp_path)
    assert t.code == expected
    assert events(t.records)[-1]["code"] == expected


def test_tee_reports_a_missing_command_in_one_line_and_exits_127(tmp_path):
    cap = tmp_path / "cap.jsonl"
    p = subprocess.run(
        [*TEE, "-o", str(cap), "--", "no-such-mcp-server-xyz", "--flag"], capture_output=True, timeout=BOUND_S
    )
    assert p.returncode == 127 and p.stdout == b""
    assert p.stderr.decode() == "mcptrace: cannot start 'no-such-mcp-server-xyz': command not found\n"
    assert not cap.exists()


def test_tee_reports_a_non_executable_command_in_one_line_and_exits_126(tmp_path):
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    p = subprocess.run(
        [*TEE, "-o", str(tmp_path / "cap.jsonl"), "--", str(script)], capture_output=True, timeout=BOUND_S
    )
    assert p.returncode == 126 and p.stdout == b""
    err = p.stderr.decode()
    assert err.count("\n") == 1 and "permission denied" in err and str(script) in err


def test_tee_fails_on_an_unwritable_capture_path_before_starting_the_server(tmp_path):
    marker = tmp_path / "server-was-started"
    p = subprocess.run(
        [*TEE, "-o", str(tmp_path / "no-such-dir" / "cap.jsonl"), "--", "sh", "-c", f"touch {marker}"],
        capture_output=True,
        timeout=BOUND_S,
    )
    assert p.returncode == 2 and p.stdout == b""
    err = p.stderr.decode()
    assert err.count("\n") == 1 and "cannot write the capture" in err and "No such file or directory" in err
    assert not marker.exists()


def test_tee_without_a_command_is_a_usage_error():
    p = subprocess.run([*TEE, "-o", "x.jsonl"], capture_output=True, timeout=BOUND_S)
    assert p.returncode == 2 and p.stderr.count(b"\n") == 1 and b"after '--'" in p.stderr


def test_tee_writes_to_the_state_directory_by_default_and_says_where_in_one_line(tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    p = subprocess.run(
        [*TEE, "--", *server("echo")], input=request(1), capture_output=True, env=env, timeout=BOUND_S
    )
    assert p.returncode == 0
    [cap] = (tmp_path / "state" / "mcptrace" / "captures").iterdir()
    assert p.stderr.decode() == f"mcptrace: capturing to {cap}\n"
    assert cap.name.endswith(".jsonl") and "-echo-" in cap.name
    assert stat.S_IMODE(cap.stat().st_mode) == 0o600
    assert stat.S_IMODE(cap.parent.stat().st_mode) == 0o700
    head = read_records(cap)[0].data
    assert head["transport"] == "stdio" and head["label"] == "echo" and head["command"] == server("echo")


def test_tee_labels_the_capture_and_redacts_credential_arguments(tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    cmd = [*server("echo"), "--api-key", "sk-live-123", "--region=eu"]
    subprocess.run(
        [*TEE, "--name", "weather prod", "--", *cmd],
        input=b"",
        capture_output=True,
        env=env,
        timeout=BOUND_S,
        check=True,
    )
    [cap] = (tmp_path / "state" / "mcptrace" / "captures").iterdir()
    assert "-weather-prod-" in cap.name
    head = read_records(cap)[0].data
    assert head["command"][-3:] == ["--api-key", "<redacted>", "--region=eu"] and head["redacted"] is True
    assert b"sk-live-123" not in cap.read_bytes()
    subprocess.run(
        [*TEE, "--no-redact", "-o", str(tmp_path / "raw.jsonl"), "--", *cmd],
        input=b"",
        capture_output=True,
        timeout=BOUND_S,
        check=True,
    )
    assert read_records(tmp_path / "raw.jsonl")[0].data["command"] == cmd


def test_tee_passes_stdin_eof_on_and_exits_when_the_server_does(tmp_path):
    t = run(server("echo"), request(1), tmp_path)
    assert t.code == 0
    names = [e["event"] for e in events(t.records)]
    assert names == ["started", "stdin-eof", "exit"]


@pytest.mark.parametrize(
    ("args", "signals", "code"), [([], ["SIGTERM"], 143), (["--ignore-term"], ["SIGTERM", "SIGKILL"], 137)]
)
def test_tee_terminates_a_server_that_outlives_its_stdin(tmp_path, args, signals, code):
    cap = tmp_path / "cap.jsonl"
    with subprocess.Popen(
        [*TEE, "--grace", "0.2", "-o", str(cap), "--", *server("ignores_eof", *args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as p:
        read_until(p, p.stderr, b"ready\n")
        p.stdin.write(request(1))
        p.stdin.close()
        assert p.wait(BOUND_S) == code
        err = p.stderr.read().decode()
    evs = events(read_records(cap))
    assert [e["signal"] for e in evs if e["event"] == "terminate"] == signals
    assert evs[-1] == {"event": "exit", "code": code, "signal": signals[-1]}
    assert f"sent {signals[-1]}" in err
    assert "MCP809" in err  # the life-cycle rule, reported live


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_tee_forwards_sigterm_and_sigint_to_the_server(tmp_path, sig, code):
    cap = tmp_path / "cap.jsonl"
    with subprocess.Popen(
        [*TEE, "-o", str(cap), "--", *server("signal_report")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as p:
        read_until(p, p.stderr, b"ready\n")
        p.send_signal(sig)
        assert p.wait(BOUND_S) == code
        assert f"got {sig.name}".encode() in p.stderr.read()
    evs = events(read_records(cap))
    assert {"event": "signal", "signal": sig.name, "forwarded": True} in evs


def test_capture_reads_back_every_complete_record_after_kill_9_of_the_tee(tmp_path):
    cap = tmp_path / "cap.jsonl"
    n = 50
    with subprocess.Popen(
        [*TEE, "-o", str(cap), "--", *server("echo")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as p:
        for i in range(n):
            os.write(p.stdin.fileno(), request(i))
            read_until(p, p.stdout, b"\n")
        # A stray line: the tee's live note about it comes after the records before it are written.
        os.write(p.stdin.fileno(), b"marker line\n")
        read_until(p, p.stderr, b"MCP801")
        p.kill()
        p.wait(BOUND_S)
    with open(cap, "rb") as fh:
        items = list(read_capture(fh, str(cap)))
    problems = [i for i in items if isinstance(i, ReadProblem)]
    assert all(pr.torn for pr in problems) and len(problems) <= 1
    msgs = [r for r in items if not isinstance(r, ReadProblem) and r.type is RecordType.MESSAGE]
    assert len([m for m in msgs if m.dir is Direction.C2S]) == n + 1
    assert len([m for m in msgs if m.dir is Direction.S2C]) == n
    assert msgs[-1].raw == b"marker line"
    pid = next(r.data["pid"] for r in items if r.type is RecordType.EVENT and r.data["event"] == "started")
    try:  # the orphaned server saw EOF on its stdin; make sure it is gone
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_tee_keeps_stdout_for_relayed_bytes_only(tmp_path):
    t = run(server("echo"), b"a stray line from the host\n", tmp_path)
    assert t.out == b""
    assert t.err.startswith(b"mcptrace: MCP801 error: client \xe2\x86\x92 server stdin byte 0:")
    assert t.code == 0


def test_tee_stops_relaying_to_a_host_that_closed_its_stdout_but_keeps_capturing(tmp_path):
    cap = tmp_path / "cap.jsonl"
    with subprocess.Popen(
        [*TEE, "-q", "-o", str(cap), "--", *server("echo")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as p:
        p.stdout.close()
        p.stdin.write(request(1) + request(2))
        p.stdin.close()
        assert p.wait(BOUND_S) == 0
    records = read_records(cap)
    assert len([r for r in records if r.type is RecordType.MESSAGE and r.dir is Direction.S2C]) == 2
    assert any(e["event"] == "host-stdout-closed" for e in events(records))


def test_tee_help_shows_a_host_config_example():
    p = subprocess.run(
        [sys.executable, "-m", "tracer", "stdio", "--help"], capture_output=True, text=True, timeout=BOUND_S
    )
    assert p.returncode == 0 and '"command": "mcptrace"' in p.stdout and "XDG_STATE_HOME" in p.stdout
