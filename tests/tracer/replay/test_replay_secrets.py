"""`mcptrace replay`'s own capture hides the credentials the server is given as the tee's does: the
server's credential arguments and environment variables, wherever it prints them (a start-up line
on stderr, a log notification on stdout). The real SDK server, started by a wrapper that says what
it was started with (as servers do), replays a committed capture; the server still gets every
argument and variable as given."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.replay_support import MCPTRACE
from tests.sdk_peers import BOUND_S, CAPTURES, REPO, serve_http, server_cmd

API_KEY = "sk-replay-5e6f7a8b9c0d"
ENV_TOKEN = "ghp_REPLAY0123456789abcdefABCDEF01234567"
# Says on stderr and in a log notification on stdout what it was given, then becomes the server.
WRAPPER = (
    "import json, os, sys\n"
    "key, server = sys.argv[1], sys.argv[2:]\n"
    "print('starting with', key, 'token', os.environ['GITHUB_TOKEN'], file=sys.stderr, flush=True)\n"
    "note = {'jsonrpc': '2.0', 'method': 'notifications/message',\n"
    "        'params': {'level': 'info', 'data': 'token ' + os.environ['GITHUB_TOKEN']}}\n"
    "sys.stdout.write(json.dumps(note) + '\\n'); sys.stdout.flush()\n"
    "os.execv(server[0], server)\n"
)


def _replay(tmp_path, *flags: str) -> tuple[subprocess.CompletedProcess, bytes]:
    out = tmp_path / "new.jsonl"
    env = {**os.environ, "GITHUB_TOKEN": ENV_TOKEN}
    target = [sys.executable, "-c", WRAPPER, f"--api-key={API_KEY}", *server_cmd()]
    capture = str(CAPTURES / "sdk-stdio-legacy.jsonl")
    run = subprocess.run(
        [
            *MCPTRACE,
            "replay",
            capture,
            "-o",
            str(out),
            "--format",
            "json",
            "--timeout",
            "20",
            *flags,
            "--",
            *target,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=BOUND_S,
    )
    assert "Traceback" not in run.stderr, run.stderr
    return run, out.read_bytes()


def test_the_replay_capture_hides_the_servers_argument_and_environment_secrets_where_it_prints_them(tmp_path):
    run, capture = _replay(tmp_path)
    assert json.loads(run.stdout)["requests"], run.stdout
    assert API_KEY.encode() not in capture and ENV_TOKEN.encode() not in capture
    records = [json.loads(line) for line in capture.splitlines()]
    (started,) = [r for r in records if r["type"] == "stderr" and r["text"].startswith("starting with")]
    assert started["text"] == "starting with --api-key=<redacted> token <redacted>"
    assert started["data"] == {"redacted": 2}
    (log,) = [r for r in records if r["type"] == "message" and "token <redacted>" in r["text"]]
    assert json.loads(log["text"])["params"]["data"] == "token <redacted>" and log["data"] == {"redacted": 1}
    assert records[0]["command"][3] == "--api-key=<redacted>"  # (the header's command, as before)


def test_no_redact_keeps_them_in_the_replay_capture(tmp_path):
    _, capture = _replay(tmp_path, "--no-redact")
    assert API_KEY.encode() in capture and ENV_TOKEN.encode() in capture


def _replay_through_gateway(tmp_path, path: str, *flags: str):
    """Replay the SDK's legacy capture against the SDK server behind tests/servers/sdk_gateway.py
    (its `path` under the server's URL); the new capture's file."""
    out = tmp_path / "new.jsonl"
    gateway = [sys.executable, str(REPO / "tests" / "servers" / "sdk_gateway.py"), "20"]
    with serve_http(gateway, "the SDK server behind a gateway") as url:
        target = ["--url", url + path, *flags]
        run = subprocess.run(
            [*MCPTRACE, "replay", str(CAPTURES / "sdk-stdio-legacy.jsonl"), "-o", str(out), *target],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=BOUND_S,
        )
    assert "Traceback" not in run.stderr, run.stderr
    return out


def test_over_http_the_bearer_token_given_with_header_is_hidden_where_the_server_repeats_it(tmp_path):
    # (the gateway in front of the SDK server refuses /mcp/denied with a page quoting the token)
    token = "tok-REPLAY-HTTP-44aa55bb66cc"
    out = _replay_through_gateway(tmp_path, "/denied", "--header", f"Authorization: Bearer {token}")
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    pages = [r for r in records if r["type"] == "http" and r["http"].get("status") == 403]
    assert pages and all("denied: <redacted> is not allowed" in r["text"] for r in pages)
    assert all(r["data"] == {"redacted": 1} for r in pages)
    assert token.encode() not in out.read_bytes()


def test_over_http_the_session_id_the_server_assigns_is_hidden_where_a_header_repeats_it(tmp_path):
    # (the gateway repeats the session id in a trace header on every answer of the session)
    out = _replay_through_gateway(tmp_path, "")
    records = [json.loads(line) for line in out.read_bytes().splitlines()]
    heads = [dict(r["http"]["resp_headers"]) for r in records if "resp_headers" in r.get("http", {})]
    traced = [h for h in heads if "x-trace" in h]
    assert traced and {h["x-trace"] for h in traced} == {"upstream=sdk sess=<redacted>"}
    (sid,) = {h["mcp-session-id"] for h in traced}
    assert sid.startswith("hmac:")  # (its own header: the keyed hash, as before)
