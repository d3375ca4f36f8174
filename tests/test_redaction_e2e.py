"""Credentials never reach a capture, a terminal or a report: every carrier the issue names, sent
through the real `mcptrace proxy` (real SDK server upstream) and the real stdio tee, is absent from
the capture, the proxy's and tee's stderr, `mcptrace lint` (text and JSON) and the viewer's detail
pane, while pairing and the session rules work on the redacted capture as on a clear one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from rich.console import Console

from tests.cases import initialize
from tests.proxy_peers import REPO, LegacyHttpSession, _Lines, _stop, capture_records, start_proxy
from tests.sdk_peers import SDK_SERVER, serve_http
from tracer.analyser import analyse_all
from tracer.model import Direction, Kind
from tracer.view.viewdata import CaptureView
from ui.widgets.detail_render import render_detail

MCPTRACE = [sys.executable, "-m", "tracer"]
HEADERS = {  # request headers that carry credentials (the list)
    "Authorization": "Bearer authz-SECRET-01",
    "Cookie": "host_sess=cookie-SECRET-02",
    "apikey": "apikey-SECRET-03",
    "X-Client-Secret": "client-SECRET-04",
    "X-Api-Secret": "apisecret-SECRET-05",
    "Authentication": "authn-SECRET-06",
    "X-Auth": "xauth-SECRET-07",
    "Token": "token-SECRET-08",
}
QUERY = "access_token=query-SECRET-09&api_key=query-SECRET-10&page=2"
SET_COOKIE = "setcookie-SECRET-11"  # the upstream's Set-Cookie value
VALUES = [v.split()[-1].split("=")[-1] for v in HEADERS.values()] + [
    "query-SECRET-09",
    "query-SECRET-10",
    SET_COOKIE,
]


@contextmanager
def proxy(upstream: str, out: Path, *extra: str) -> Iterator[tuple[int, list[str]]]:
    """`mcptrace proxy --upstream URL`; yields (its port, its stderr lines so far and, after, all)."""
    proc, err, url = start_proxy(upstream, out, *extra)
    lines: list[str] = []
    try:
        port = urlsplit(url).port
        yield port, lines
    finally:
        assert _stop(proc) == 0
        lines.extend(err.rest())
        proc.stdout.close()
        proc.stderr.close()


def session(port: int, target: str) -> tuple[str, list[dict]]:
    """One legacy session over its own TCP connection, every credential header on every request.
    Returns (the session id the server minted, the answers)."""
    with LegacyHttpSession(port, target, HEADERS) as s:
        answers = [json.loads(s.open())]
        for i, (method, params) in enumerate(
            [("tools/list", {}), ("tools/call", {"name": "echo", "arguments": {"text": "x"}})]
        ):
            resp, body = s.post({"jsonrpc": "2.0", "id": 2 + i, "method": method, "params": params})
            answers.append(json.loads(body))
        # a request that forgets the session id (on the session's TCP connection): MCP721's to flag
        resp, _ = s.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}, session=False)
        assert resp.status == 400
    return s.sid, answers


def run_traffic(tmp: Path, name: str, *extra: str) -> tuple[Path, list[str], list[str]]:
    """Two sessions through a proxy in front of the real SDK server; (capture, proxy stderr, session ids)."""
    cap = tmp / f"{name}.jsonl"
    server = [sys.executable, str(REPO / "tests" / "servers" / "sdk_set_cookie.py"), SET_COOKIE]
    with (
        serve_http(server, "the SDK server with a cookie") as url,
        proxy(f"{url}?{QUERY}", cap, *extra) as (port, err),
    ):
        sids = []
        for _ in range(2):
            sid, answers = session(port, f"/mcp?{QUERY}")
            assert [a["id"] for a in answers] == [1, 2, 3] and "result" in answers[-1]
            sids.append(sid)
    assert sids[0] != sids[1]
    return cap, err, sids


def lint_outputs(cap: Path) -> tuple[str, dict]:
    text = subprocess.run(
        [*MCPTRACE, "lint", str(cap)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    js = subprocess.run(
        [*MCPTRACE, "lint", str(cap), "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert text.returncode in (0, 1) and js.returncode in (0, 1), (text.stderr, js.stderr)
    return text.stdout + text.stderr + js.stderr, json.loads(js.stdout)


def viewer_details(cap: Path) -> str:
    """The viewer's detail pane of every row, as the user reads it (after the background analysis)."""
    view = CaptureView(str(cap))
    view.start()
    try:
        assert view.ann.wait(lambda: view.ann.done, 120), "the analysis did not finish"
        console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
        for row in range(len(view)):
            console.print(render_detail(view.detail(row), ended=True))
        console.file.close()
        return console.export_text()
    finally:
        view.close()


def leaks(text: str, values: list[str]) -> list[str]:
    return [v for v in values if v in text]


def test_no_credential_carrier_reaches_the_capture_stderr_lint_or_viewer_through_the_proxy(tmp_path):
    cap, err, sids = run_traffic(tmp_path, "redacted")
    secret = [*VALUES, *sids]
    stored = cap.read_text()
    assert leaks(stored, secret) == [] and leaks("\n".join(err), secret) == []
    assert "access_token=<redacted>" in stored and "page=2" in stored, "the URL stays readable"
    text, js = lint_outputs(cap)
    assert leaks(text + json.dumps(js), secret) == []
    assert leaks(viewer_details(cap), secret) == []

    # Pairing and sessions still work: every request is answered in its own session, and the two
    # sessions (two different ids) stay two, each with one stored id on all of its records.
    recs = capture_records(cap)
    msgs, _ = analyse_all(recs)
    requests = [m for m in msgs if m.kind is Kind.REQUEST and m.rec.dir is Direction.C2S]
    assert len(requests) == 8 and all(m.partner_seq is not None for m in requests if m.id != 9)
    by_conn = Counter(m.rec.conn for m in requests)
    assert len(by_conn) == 2 and set(by_conn.values()) == {4}
    stored_ids: dict[str, set[str]] = {}  # what each session's requests carry, and what initialize minted
    for m in msgs:
        http = m.rec.http or {}
        key = (
            "resp_headers"
            if m.answers_method == "initialize"
            else "req_headers"
            if m.kind is Kind.REQUEST
            else ""
        )
        for name, value in http.get(key) or []:
            if name.lower() == "mcp-session-id":
                stored_ids.setdefault(m.rec.conn, set()).add(value)
    assert len(stored_ids) == 2 and all(len(v) == 1 for v in stored_ids.values()), stored_ids
    assert len(set().union(*stored_ids.values())) == 2
    assert all(re.fullmatch(r"hmac:[0-9a-f]{16}", v) for v in set().union(*stored_ids.values()))


def test_the_session_rules_find_the_same_on_a_redacted_capture_as_on_a_clear_one(tmp_path):
    red, _, _ = run_traffic(tmp_path, "redacted")
    clear, _, sids = run_traffic(tmp_path, "clear", "--no-redact")
    assert all(v in clear.read_text() for v in [*VALUES, *sids]), (
        "--no-redact keeps them (the test can see them)"
    )
    rules = [Counter(f["rule"] for f in lint_outputs(cap)[1]["findings"]) for cap in (red, clear)]
    assert rules[0] == rules[1] and rules[0]["MCP721"] == 2, rules  # one forgotten session id per session


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--upstream", "http://alice:pw-SECRET-12@127.0.0.1:9/mcp?api_key=k-SECRET-13"], "user:password@"),
        (
            ["--mode", "upstream:http://alice:pw-SECRET-12@127.0.0.1:3128?api_key=k-SECRET-13"],
            "invalid mitmproxy mode",
        ),
    ],
)
def test_a_proxy_url_with_a_password_is_refused_without_printing_it(tmp_path, args, says):
    p = subprocess.run(
        [*MCPTRACE, "proxy", *args, "--no-ui", "-o", str(tmp_path / "c.jsonl")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 2 and says in p.stderr and "alice:<redacted>@" in p.stderr
    assert leaks(p.stdout + p.stderr, ["pw-SECRET-12", "k-SECRET-13"]) == []


ARGV = [
    "-p",
    "pw-SECRET-a",
    "--auth",
    "auth-SECRET-b",
    "--key",
    "key-SECRET-c",
    "--pat",
    "pat-SECRET-d",
    "-k",
    "k-SECRET-e",
    "--header",
    "X-Custom-Auth: hdr-SECRET-f",
    "--header=X-Api-Key: hdr-SECRET-g",
    "https://example.com/mcp?api_key=url-SECRET-h",
    "API_TOKEN=env-SECRET-i",
]


def test_no_credential_argument_reaches_the_capture_stderr_lint_or_viewer_through_the_tee(tmp_path):
    cap = tmp_path / "tee.jsonl"
    # the real SDK server, started through `sh -c` so that the carriers are arguments of the command
    # the tee runs and records, which the server itself never sees
    command = ["sh", "-c", 'exec "$0" "$1"', sys.executable, str(SDK_SERVER), *ARGV]
    lines = [
        initialize(),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    tee = subprocess.Popen(
        [*MCPTRACE, "stdio", "--grace", "60", "-o", str(cap), "--", *command],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = _Lines(tee.stdout), _Lines(tee.stderr)
    try:
        tee.stdin.write("".join(json.dumps(m) + "\n" for m in lines))
        tee.stdin.flush()
        # Hang up only once tools/list is answered, as a host does: the SDK server cancels the
        # requests it has not answered when its stdin closes, and the tee passes the close on at once.
        out.wait_for(r'"id":\s*2[,}]', "the answer to tools/list")
        tee.stdin.close()
        answers, stderr = out.rest(), "\n".join(err.rest())
        assert tee.wait(timeout=120) == 0, stderr
    finally:
        if tee.poll() is None:
            tee.kill()
            tee.wait()
        for pipe in (tee.stdin, tee.stdout, tee.stderr):
            pipe.close()
    assert [json.loads(line)["id"] for line in answers] == [1, 2]
    secret = [a.split()[-1].split("=")[-1] for a in ARGV if "SECRET" in a]
    assert len(secret) == 9
    head = json.loads(cap.read_text().splitlines()[0])
    assert head["command"][:5] == ["sh", "-c", 'exec "$0" "$1"', sys.executable, str(SDK_SERVER)]
    assert head["command"][-1] == "API_TOKEN=<redacted>"
    text, js = lint_outputs(cap)
    assert leaks(cap.read_text() + stderr + text + json.dumps(js) + viewer_details(cap), secret) == []


def test_replay_keeps_its_header_and_url_credentials_out_of_the_new_capture_and_its_report(tmp_path):
    from tests.sdk_peers import CAPTURES, sdk_http_server

    new = tmp_path / "replayed.jsonl"
    with sdk_http_server() as url:
        p = subprocess.run(
            [
                *MCPTRACE,
                "replay",
                str(CAPTURES / "sdk-stdio-legacy.jsonl"),
                "--url",
                f"{url}?api_key=replay-SECRET-14",
                "-H",
                "X-Client-Secret: replay-SECRET-15",
                "-H",
                "Authorization: Bearer replay-SECRET-16",
                "-o",
                str(new),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert p.returncode in (0, 1), p.stderr
    secret = ["replay-SECRET-14", "replay-SECRET-15", "replay-SECRET-16"]
    stored = new.read_text()
    assert "X-Client-Secret" in stored and "tools/list" in stored, "the headers and the traffic are there"
    assert leaks(stored + p.stdout + p.stderr, secret) == []
