"""Every door that writes a capture treats `-o FILE` the same way, before it starts: an existing
capture gets the new session appended (a host restarting its server keeps both), a directory, a
symlink or a file that is not a capture is one line and exit 2 with nothing started or changed; a
proxy that could not start leaves no capture behind; a dead upstream is a 502 for the host, one
line on stderr and a recorded failure."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.proxy_peers import REPO, _Lines, _stop, capture_records
from tests.sdk_peers import run_client, server_cmd
from tracer.capture import CaptureWriter, header_record, read_capture
from tracer.model import Record, RecordType

BOUND_S = 120
MCPTRACE = [sys.executable, "-m", "tracer"]


def _run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*MCPTRACE, *args], cwd=REPO, capture_output=True, text=True, timeout=BOUND_S, **kw)


def _headers(path) -> list[dict]:
    with open(path, "rb") as fh:
        return [
            r.data
            for r in read_capture(fh, str(path))
            if isinstance(r, Record) and r.type is RecordType.HEADER
        ]


def test_a_host_restarting_the_server_twice_through_one_capture_file_keeps_both_sessions(tmp_path):
    cap = tmp_path / "same.jsonl"
    # --grace: past the default 3 s (a loaded machine) the tee would SIGTERM the server: MCP809
    tee = [*MCPTRACE, "stdio", "--grace", "20", "-o", str(cap), "--", *server_cmd()]
    first = run_client("legacy", command=tee)
    second = run_client("legacy", command=tee)
    assert first == second  # the second session is served and relayed like the first
    assert len(_headers(cap)) == 2
    p = _run("lint", "--format", "json", str(cap))
    report = json.loads(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert report["findings"] == []
    assert len(report["summary"]["sessions"]) == 2, report["summary"]["sessions"]


@pytest.mark.parametrize(
    "door",
    [
        ["stdio", "--", sys.executable, "-c", "import sys; open(sys.argv[1], 'w')", "STARTED"],
        ["proxy", "--no-ui", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/mcp"],
        ["demo", "--no-ui"],
    ],
)
@pytest.mark.parametrize("target", ["directory", "symlink", "not-a-capture"])
def test_a_bad_output_path_is_one_line_and_exit_2_before_anything_starts(tmp_path, door, target):
    precious = tmp_path / "notes.txt"
    precious.write_text("keep me\n")
    path = {"directory": tmp_path, "symlink": tmp_path / "link.jsonl", "not-a-capture": precious}[target]
    if target == "symlink":
        path.symlink_to(precious)
    started = tmp_path / "STARTED"
    p = _run(door[0], "-o", str(path), *[str(started) if a == "STARTED" else a for a in door[1:]])
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("mcptrace: error: cannot write the capture"), (
        p.stderr
    )
    assert {
        "directory": "is a directory",
        "symlink": "symbolic link",
        "not-a-capture": "not an mcptrace capture",
    }[target] in p.stderr.lower()
    assert precious.read_text() == "keep me\n"
    assert not started.exists()
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(
        ["notes.txt"] + (["link.jsonl"] if target == "symlink" else [])
    )


def test_the_demo_appends_its_two_sessions_to_an_existing_capture(tmp_path):
    cap = tmp_path / "mine.jsonl"
    with CaptureWriter(cap, header_record("stdio", label="earlier")):
        pass
    p = _run("demo", "--no-ui", "-o", str(cap))
    assert p.returncode == 0, p.stderr
    assert [h.get("label") for h in _headers(cap)] == ["earlier", "demo-legacy", "demo-modern"]
    p = _run("demo", "--no-ui", "--overwrite", "-o", str(cap))
    assert p.returncode == 0, p.stderr
    assert [h.get("label") for h in _headers(cap)] == ["demo-legacy", "demo-modern"]


def test_a_proxy_that_cannot_listen_leaves_no_capture_and_no_new_session(tmp_path, private_state_home):
    cap = tmp_path / "cap.jsonl"
    with CaptureWriter(cap, header_record("http", label="earlier")):
        pass
    before = cap.read_bytes()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for out in (["-o", str(cap)], []):
            p = _run(
                "proxy",
                "--no-ui",
                "--upstream",
                "http://127.0.0.1:1/mcp",
                "--listen",
                f"127.0.0.1:{port}",
                *out,
            )
            assert p.returncode == 2 and "cannot start the proxy" in p.stderr, p.stderr
    assert cap.read_bytes() == before
    captures = private_state_home / "mcptrace" / "captures"
    assert not captures.exists() or list(captures.iterdir()) == []


def test_a_dead_upstream_gives_the_host_a_502_naming_it_and_the_capture_the_failed_request(tmp_path):
    with socket.socket() as s:  # a port nothing listens on (bound, never listening)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        dead = f"http://127.0.0.1:{port}/mcp"
        cap = tmp_path / "cap.jsonl"
        proc = subprocess.Popen(
            [*MCPTRACE, "proxy", "--no-ui", "--listen", "127.0.0.1:0", "--upstream", dead, "-o", str(cap)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        err = _Lines(proc.stderr)
        url = err.wait_for(r"give the host this URL: (\S+)", "proxy").group(1)
        body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
        statuses = []
        for _ in range(3):
            req = urllib.request.Request(
                url,
                data=body,
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
            try:
                urllib.request.urlopen(req, timeout=BOUND_S)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
                page = exc.read().decode()
                page_type = exc.headers.get("Content-Type")
        failed = err.wait_for(r"cannot connect to the upstream (\S+)", "proxy")
        assert _stop(proc) == 0
        lines = err.rest()
        proc.stdout.close()
        proc.stderr.close()
    assert statuses == [502, 502, 502]
    # one short plain line naming the server it could not reach (not mitmproxy's HTML page)
    assert page_type == "text/plain; charset=utf-8"
    assert page.startswith(f"mcptrace: cannot connect to the upstream server {dead}: ")
    assert page.count("\n") == 1 and "<" not in page and len(page) < 300, page
    assert failed.group(1).rstrip(":") == dead
    assert len([line for line in lines if "cannot connect to the upstream" in line]) == 1  # rate-limited
    assert any("2 more failed upstream connections" in line for line in lines), lines
    records = capture_records(cap)
    requests = [r for r in records if r.type is RecordType.MESSAGE]
    errors = [r.http for r in records if r.type is RecordType.HTTP and r.http.get("error")]
    assert len(requests) == 3 and len(errors) == 3
    assert {e["flow"] for e in errors} == {r.http["flow"] for r in requests}


def test_two_tees_appending_to_one_capture_at_once_keep_every_message_of_both(tmp_path):
    from tests.tracer.stdio.test_tee_servers import request, server

    cap = tmp_path / "shared.jsonl"
    n = 2000
    stdin = b"".join(request(i) for i in range(n))
    tees = [
        subprocess.Popen(
            [*MCPTRACE, "stdio", "-q", "-o", str(cap), "--", *server("echo")],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outs = [t.communicate(stdin, timeout=BOUND_S) for t in tees]
    assert [t.returncode for t in tees] == [0, 0], [o[1] for o in outs]
    lines = cap.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])  # no line torn or interleaved
    with open(cap, "rb") as fh:
        recs = [r for r in read_capture(fh, str(cap)) if isinstance(r, Record)]
    assert len([r for r in recs if r.type is RecordType.HEADER]) == 2
    conns = {r.conn for r in recs if r.type is RecordType.MESSAGE}
    assert len(conns) == 2
    for conn in conns:
        mine = [r for r in recs if r.type is RecordType.MESSAGE and r.conn == conn]
        assert len(mine) == 2 * n  # every request and every answer of this tee


def test_only_failed_upstream_connections_get_the_plain_502_every_other_error_page_stays_mitmproxys():
    from mitmproxy.proxy.layers.http import _http1, _http2

    from addons.upstream_errors import note_failed_connection

    refused = "[Errno 111] Connect call failed ('127.0.0.1', 9)"
    note_failed_connection(refused, "http://127.0.0.1:9/mcp")
    note_failed_connection(refused, "http://127.0.0.1:9/mcp")  # (installing twice wraps once)
    ours = _http1.make_error_response(502, refused)
    assert ours.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"text/plain" in ours
    assert ours.endswith(
        b"\r\n\r\nmcptrace: cannot connect to the upstream server http://127.0.0.1:9/mcp: "
        + refused.encode()
        + b"\n"
    )
    assert _http2.format_error(502, refused).startswith(b"mcptrace: cannot connect")
    # an equal message that is not that connection's error (a reset mid-exchange, a killed flow)
    other = "".join(["[Errno 111] ", refused.split("] ", 1)[1]])
    assert other == refused and other is not refused
    assert b"<html>" in _http1.make_error_response(502, other)
    assert b"<html>" in _http1.make_error_response(400, "bad request")
