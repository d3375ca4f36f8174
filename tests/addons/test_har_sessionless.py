"""A HAR of concurrent session-less SDK sessions, written by a real HAR writer: mitmproxy's
`hardump` (stock mitmdump as a reverse proxy), which records no `connection` id and no client
address, in front of the official SDK server with `stateless_http=True`. Nothing in the file tells
the sessions apart but their messages: the same evidence the proxy uses (tracer.http.tracks), so no
false finding, and a deliberate mistake of one client (tests/wrong_client.py) is still found on its
own session (tests/plain_client.py: stock mitmdump buffers SSE answers). Before, every session-less message of the file joined the last handshake (4 SDK
clients: about 200 false findings, MCP201, MCP408, MCP713...)."""

from __future__ import annotations

import collections
import json
import subprocess
import sys

from tests.proxy_peers import lint_findings, mitmdump
from tests.real_findings import answer_after_cancel, unexpected
from tests.sdk_peers import BOUND_S, REPO, serve_http, server_cmd
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs import open_input
from tracer.model import Direction, Record, RecordType

CLIENTS = 4  # plus the wrong one
KNOWN = (answer_after_cancel,)  # real, allowed (`mcptrace help peers`)


def _har(tmp_path, normal: int, wrong: bool):
    har = tmp_path / "sessions.har"
    server = serve_http(server_cmd("--http", "--port", "0", "--stateless"), "the SDK stateless HTTP server")
    with server as url:
        origin = url.rsplit("/", 1)[0]
        with mitmdump("--mode", f"reverse:{origin}", "--set", f"hardump={har}") as port:
            _clients(f"http://127.0.0.1:{port}/mcp", normal, wrong)
    return har


def _clients(url: str, normal: int, wrong: bool) -> None:
    """NORMAL short SDK sessions at once (tests/plain_client.py), and the wrong one beside them."""
    argv = [sys.executable, str(REPO / "tests" / "plain_client.py"), "--url", url]
    runs = [[*argv, "--wrong"]] if wrong else []
    procs = [
        subprocess.Popen(a, cwd=REPO, stderr=subprocess.PIPE, text=True) for a in [*runs, *[argv] * normal]
    ]
    try:
        for proc in procs:
            _out, err = proc.communicate(timeout=BOUND_S)
            assert proc.returncode == 0, err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def _records(path) -> list[Record]:
    register_optional_inputs()
    return [r for r in open_input(str(path)).records if isinstance(r, Record)]


def _body(rec) -> dict:
    try:
        obj = json.loads(rec.raw)
    except (TypeError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def test_a_mitmproxy_har_of_concurrent_session_less_clients_gives_no_false_finding_and_the_wrong_one_is_found(
    tmp_path,
):
    har = _har(tmp_path, CLIENTS, wrong=True)
    entries = json.loads(har.read_text())["log"]["entries"]
    assert entries and not any("connection" in e for e in entries)  # what mitmproxy's HAR holds
    recs = _records(har)
    by_seq = {r.seq: r for r in recs}
    found = lint_findings(har)
    wrong = [f for f in found if f.rule == "MCP418"]
    assert unexpected([f for f in found if f.rule != "MCP418"], by_seq, KNOWN) == []
    assert len(wrong) == 1
    subscribe = by_seq[wrong[0].seq]
    assert _body(subscribe)["method"] == "resources/subscribe"
    c2s = [r for r in recs if r.type is RecordType.MESSAGE and r.dir is Direction.C2S]
    [handshake] = [r for r in c2s if _body(r).get("method") == "initialize" and _body(r).get("id") == 1001]
    assert subscribe.conn == handshake.conn
    # no connection mixes two sessions: a request id never comes twice on one connection
    ids = collections.Counter((r.conn, json.dumps(_body(r).get("id"))) for r in c2s if "id" in _body(r))
    assert [k for k, n in ids.items() if n > 1] == []


def test_a_mitmproxy_har_of_one_session_less_client_is_one_connection_without_notes(tmp_path):
    recs = _records(_har(tmp_path, 1, wrong=False))
    assert len({r.conn for r in recs}) == 1
    events = {(r.data or {}).get("event") for r in recs if r.type is RecordType.EVENT}
    assert not events & {"session-continued", "unattributed"}
