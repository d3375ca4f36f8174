"""A session-less legacy client that sends `initialize` again on a new TCP connection (the official
SDK client opens one per request against a server without session ids) is the same session
initializing again (MCP402), not a second client: its id goes on from its own last request. A new
client's `initialize`, numbered from its own start, stays a session of its own."""

from __future__ import annotations

import json

from tests.cases import initialize, initialize_result
from tracer.analyser import analyse_all
from tracer.http.recorder import Exchange, HttpRecorder
from tracer.model import Record

JSON = [["content-type", "application/json"]]
VERSION = [["mcp-protocol-version", "2025-11-25"]]


class _Wire:
    """Exchanges through the recorder as the proxy hands them over, each on the TCP connection named."""

    def __init__(self) -> None:
        self.out: list[Record] = []
        self.rec = HttpRecorder(self.out.extend, redact=False)
        self.n = 0

    def post(self, tcp: str, body: dict, answer: dict | None, headers=()) -> None:
        self.n += 1
        req_headers = [["content-type", "application/json"], *headers]
        ex = Exchange(
            f"f{self.n}", "127.0.0.1:5000", "POST", "http://h/mcp", req_headers, json.dumps(body).encode()
        )
        ex.t_ns, ex.client_id = self.n * 1_000_000, tcp
        self.rec.request(ex)
        ex.status, ex.resp_headers = (200, JSON) if answer is not None else (202, [])
        self.rec.response(ex, json.dumps(answer).encode() if answer is not None else b"", ex.t_ns + 500_000)

    def handshake(self, tcp: str, n: int) -> None:
        self.post(tcp, initialize(n), initialize_result(n))
        self.post(tcp + "'", {"jsonrpc": "2.0", "method": "notifications/initialized"}, None, VERSION)

    def call(self, tcp: str, n: int) -> None:
        answer = {"jsonrpc": "2.0", "id": n, "result": {"tools": []}}
        self.post(tcp, {"jsonrpc": "2.0", "id": n, "method": "tools/list"}, answer, VERSION)

    def found(self) -> list[str]:
        msgs, ends = analyse_all(self.out)
        return sorted({f.rule for m in msgs for f in m.findings} | {f.rule for f in ends})


def test_a_client_initializing_again_on_a_new_tcp_connection_is_flagged_in_its_session():
    w = _Wire()
    w.handshake("t1", 1)
    w.call("t2", 2)
    w.post("t3", initialize(3), initialize_result(3))  # its next id: the same client
    w.call("t4", 4)
    assert len({r.conn for r in w.out}) == 1
    assert "MCP402" in w.found() and "MCP407" not in w.found()  # (before: a new session, MCP407 on it)


def test_two_clients_each_initializing_from_their_own_first_id_are_two_sessions():
    w = _Wire()
    w.handshake("a1", 0)
    w.call("a2", 1)
    w.call("a3", 2)
    w.handshake("b1", 0)  # a second client, starting its count
    w.call("b2", 1)
    w.call("a4", 3)
    assert len({r.conn for r in w.out}) == 2
    assert "MCP402" not in w.found()
