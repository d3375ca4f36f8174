"""Concurrent legacy SDK clients through the real `mcptrace proxy`, against the official SDK server
with `stateless_http=True`: no `Mcp-Session-Id`, and the SDK client opens a TCP connection per
request, so nothing in HTTP tells the sessions apart (tracer.http.tracks). No false finding, and a
deliberate mistake of one client (tests/wrong_client.py) is still found on its own session."""

from __future__ import annotations

import collections
import json
import subprocess
import sys

from tests.proxy_peers import capture_records, lint_findings, mcptrace_proxy
from tests.real_findings import answer_after_cancel, unexpected
from tests.sdk_peers import BOUND_S, REPO, run_clients, serve_http, server_cmd
from tracer.model import Direction, RecordType

CLIENTS = 5  # plus the wrong one
KNOWN = (answer_after_cancel,)  # real, allowed (`mcptrace help peers`)


def _stateless_server():
    return serve_http(server_cmd("--http", "--port", "0", "--stateless"), "the SDK stateless HTTP server")


def _body(rec) -> dict:
    try:
        obj = json.loads(rec.raw)
    except (TypeError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _c2s(recs) -> list:
    return [r for r in recs if r.type is RecordType.MESSAGE and r.dir is Direction.C2S]


def _run(tmp_path, normal: int, wrong: bool):
    cap = tmp_path / "stateless.jsonl"
    with _stateless_server() as url, mcptrace_proxy(url, cap) as proxy_url:
        _clients(proxy_url, normal, wrong)
    return cap


def _clients(proxy_url: str, normal: int, wrong: bool) -> None:
    """NORMAL fixture clients at once, and the wrong one (tests/wrong_client.py) beside them."""
    argv = [sys.executable, str(REPO / "tests" / "wrong_client.py"), "--era", "legacy", "--url", proxy_url]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    bad = subprocess.Popen(argv, cwd=REPO, **pipes) if wrong else None
    try:
        assert all(run_clients([("legacy", proxy_url, None)] * normal))
    finally:
        if bad is not None:
            out, err = bad.communicate(timeout=BOUND_S)
    if bad is not None:
        assert bad.returncode == 0, err
        assert '"op": "subscribe"' in out


def test_concurrent_legacy_clients_of_a_stateless_server_give_no_false_finding_and_the_wrong_one_is_found(
    tmp_path,
):
    cap = _run(tmp_path, CLIENTS, wrong=True)
    recs = capture_records(cap)
    by_seq = {r.seq: r for r in recs}
    found = lint_findings(cap)
    wrong = [f for f in found if f.rule == "MCP418"]
    assert unexpected([f for f in found if f.rule != "MCP418"], by_seq, KNOWN) == []
    # the mistake is found once, at the wrong client's resources/subscribe, on the connection of its
    # own handshake (the capabilities it is judged against are that session's)
    assert len(wrong) == 1
    subscribe = by_seq[wrong[0].seq]
    assert _body(subscribe)["method"] == "resources/subscribe"
    handshake = [
        r for r in _c2s(recs) if _body(r).get("method") == "initialize" and _body(r).get("id") == 1001
    ]
    assert len(handshake) == 1 and subscribe.conn == handshake[0].conn
    # no connection mixes two sessions: a request id never comes twice on one connection
    ids = collections.Counter(
        (r.conn, json.dumps(_body(r).get("id"))) for r in _c2s(recs) if "id" in _body(r)
    )
    assert [k for k, n in ids.items() if n > 1] == []
    assert sum(_body(r).get("method") == "initialize" for r in _c2s(recs)) == CLIENTS + 1


def test_one_legacy_client_of_a_stateless_server_is_one_connection_without_notes(tmp_path):
    cap = _run(tmp_path, 1, wrong=False)
    recs = capture_records(cap)
    assert len({r.conn for r in recs}) == 1
    events = {(r.data or {}).get("event") for r in recs if r.type is RecordType.EVENT}
    assert not events & {"session-continued", "unattributed"}
    assert lint_findings(cap) == []
