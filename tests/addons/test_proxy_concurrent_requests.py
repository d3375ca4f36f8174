"""One SDK session's concurrent requests reaching `mcptrace proxy` out of order, beside another
session of the same client process, against the official SDK server with `stateless_http=True`
(tests/concurrent_client.py holds each pair in the order it needs, so every run is the same): the
overtaking request joins its session when the other session already used its id, the late one
joins the session that still had it on its way, and the one nothing places stays unattributed
without taking the rest of its session with it (tracer.http.tracks)."""

from __future__ import annotations

import collections
import json
import subprocess
import sys

from tests.proxy_peers import capture_records, lint_findings, mcptrace_proxy
from tests.sdk_peers import BOUND_S, REPO, serve_http, server_cmd
from tracer.model import Direction, RecordType


def _c2s_by_conn(recs) -> dict[str, list]:
    out = collections.defaultdict(list)
    for r in recs:
        if r.type is RecordType.MESSAGE and r.dir is Direction.C2S:
            obj = json.loads(r.raw)
            out[r.conn].append(obj.get("id", obj.get("method")))
    return dict(out)


def test_concurrent_requests_of_one_sdk_session_out_of_order_join_it_on_evidence_and_only_then(tmp_path):
    cap = tmp_path / "concurrent.jsonl"
    server = serve_http(server_cmd("--http", "--port", "0", "--stateless"), "the SDK stateless HTTP server")
    with server as url, mcptrace_proxy(url, cap) as proxy_url:
        argv = [sys.executable, str(REPO / "tests" / "concurrent_client.py"), "--url", proxy_url]
        run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=BOUND_S)
    assert run.returncode == 0, run.stderr
    recs = capture_records(cap)
    notes = [r for r in recs if r.type is RecordType.EVENT and r.data.get("event") == "unattributed"]
    assert [n.data["why"] for n in notes] == ["request id 9 continues none of 2 session-less sessions"]
    assert not [r for r in recs if r.type is RecordType.EVENT and r.data.get("event") == "session-continued"]
    init = [1, "notifications/initialized", 2]
    assert sorted(_c2s_by_conn(recs).values(), key=len) == [
        [9],  # A's or B's: B, at 5, may have sent it with 6..8 on their way
        [*init, 3, 5, 4],  # B: 5 overtook 4 (A had used 5), then the 4 it still awaited
        [*init, 3, 4, 5, 6, 7, 8, 10],  # A: 10 continues it through the 9 no session took
    ]
    assert lint_findings(cap) == []
