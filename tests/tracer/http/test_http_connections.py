"""Which connection the HTTP door puts each exchange on (tracer.http.conns), driven through the
mitmproxy addon with mitmproxy's own flow helpers: sessions by Mcp-Session-Id, session-less
traffic by the client's TCP connection, the endpoint's tools shared across connections."""

from __future__ import annotations

import pytest
from mitmproxy import connection

from tests.addon_helpers import ACCEPT_BOTH, INIT, INIT_RESULT, body, flow, post, records, running_capture
from tracer.analyser import analyse_all
from tracer.model import Direction, Kind, Record, RecordType

JSON = (b"content-type", b"application/json")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
CACHE = {"ttlMs": 60000, "cacheScope": "public"}
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
TOOL = {
    "name": "query",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}},
    },
}


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "cap.jsonl"
    with running_capture(path) as (addon, _):
        yield addon, path


def _client(port: int) -> connection.Client:
    return connection.Client(peername=("127.0.0.1", port), sockname=("127.0.0.1", 8765), timestamp_start=1)


def _on(f, client: connection.Client):
    f.client_conn = client
    return f


def _findings(path):
    msgs, ends = analyse_all(records(path))
    return [f.rule for m in msgs for f in m.findings] + [f.rule for f in ends]


def _init_result(sid: bytes) -> list:
    return [JSON, (b"mcp-session-id", sid)]


def _with_session(sid: bytes, version: bytes = b"2025-11-25"):
    return (ACCEPT_BOTH, JSON, (b"mcp-session-id", sid), (b"mcp-protocol-version", version))


def test_two_concurrent_handshakes_of_one_client_process_are_two_connections(capture):
    addon, path = capture
    a, b = _client(50001), _client(50002)
    first, second = (
        _on(post(INIT, resp=INIT_RESULT, resp_headers=_init_result(b"s-a")), a),
        _on(post(INIT, resp=INIT_RESULT, resp_headers=_init_result(b"s-b")), b),
    )
    for f in (first, second):  # both requests are out before either answer mints its session
        addon.request(f)
    for f in (first, second):
        addon.responseheaders(f)
        addon.response(f)
    for sid, client in ((b"s-a", a), (b"s-b", b)):
        for obj, resp, status in (
            ({"jsonrpc": "2.0", "method": "notifications/initialized"}, b"", 202),
            (
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
                200,
            ),
        ):
            f = _on(
                post(
                    obj,
                    resp=resp,
                    status=status,
                    headers=_with_session(sid),
                    resp_headers=[JSON] if status == 200 else [],
                ),
                client,
            )
            addon.request(f)
            addon.responseheaders(f)
            addon.response(f)
    recs = records(path)
    assert len({r.conn for r in recs}) == 2
    per_conn = {}
    for r in recs:
        if r.type is RecordType.MESSAGE and r.dir is Direction.C2S:
            per_conn.setdefault(r.conn, []).append(r.raw)
    assert all(len(raws) == 3 and b'"initialize"' in raws[0] for raws in per_conn.values())
    assert _findings(path) == []


def test_a_legacy_session_without_session_id_spans_the_tcp_connections_of_its_client(capture):
    addon, path = capture
    from tests.addon_helpers import exchange

    exchange(addon, post(INIT, resp=INIT_RESULT, client=("127.0.0.1", 50001)))
    legacy = (ACCEPT_BOTH, JSON, (b"mcp-protocol-version", b"2025-11-25"))
    exchange(
        addon,
        post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=legacy,
            resp=b"",
            status=202,
            resp_headers=[],
            client=("127.0.0.1", 50002),
        ),
    )
    exchange(
        addon,
        post(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers=legacy,
            resp={"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
            client=("127.0.0.1", 50003),
        ),
    )
    assert len({r.conn for r in records(path)}) == 1
    assert _findings(path) == []


def test_concurrent_modern_clients_reusing_request_ids_are_kept_apart(capture):
    addon, path = capture
    flows = []
    for port in (50001, 50002):
        req = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
        headers = (
            ACCEPT_BOTH,
            JSON,
            (b"mcp-protocol-version", b"2026-07-28"),
            (b"mcp-method", b"tools/list"),
        )
        resp = {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"resultType": "complete", "tools": [], **CACHE, "_meta": SERVER_META},
        }
        flows.append(post(req, resp=resp, headers=headers, client=("127.0.0.1", port)))
    for f in flows:
        addon.request(f)
    for f in flows:
        addon.responseheaders(f)
        addon.response(f)
    msgs, _ = analyse_all(records(path))
    answers = [m for m in msgs if m.kind is Kind.RESULT]
    assert len({m.rec.conn for m in msgs}) == 2
    assert all(m.partner_seq is not None for m in answers)
    assert _findings(path) == []


def test_a_tool_listed_on_one_connection_and_called_on_another_is_judged_by_mcp745(capture):
    addon, path = capture
    from tests.addon_helpers import exchange

    listed = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"resultType": "complete", "tools": [TOOL], **CACHE, "_meta": SERVER_META},
    }
    exchange(
        addon,
        post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
            headers=(
                ACCEPT_BOTH,
                JSON,
                (b"mcp-protocol-version", b"2026-07-28"),
                (b"mcp-method", b"tools/list"),
                (b"user-agent", b"inspector/1"),
            ),
            resp=listed,
            client=("127.0.0.1", 50001),
        ),
    )
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "query", "arguments": {"region": "eu", "q": "x"}, "_meta": META},
    }
    answer = {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"resultType": "complete", "content": [], "_meta": SERVER_META},
    }
    exchange(
        addon,
        post(
            call,
            resp=answer,
            client=("127.0.0.1", 50002),
            headers=(
                ACCEPT_BOTH,
                JSON,
                (b"mcp-protocol-version", b"2026-07-28"),
                (b"mcp-method", b"tools/call"),
                (b"mcp-name", b"query"),
                (b"user-agent", b"agent/2"),
            ),
        ),
    )
    assert len({r.conn for r in records(path)}) == 2
    assert "MCP745" in _findings(path)


def test_a_closed_tcp_connection_ends_its_sessionless_connection_once_its_exchanges_are_done(capture):
    addon, path = capture
    client = _client(50001)
    req = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    resp = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"resultType": "complete", "tools": [], **CACHE, "_meta": SERVER_META},
    }
    f = _on(
        post(
            req,
            resp=resp,
            headers=(
                ACCEPT_BOTH,
                JSON,
                (b"mcp-protocol-version", b"2026-07-28"),
                (b"mcp-method", b"tools/list"),
            ),
        ),
        client,
    )
    addon.request(f)
    addon.client_disconnected(client)  # mitmproxy may report the close before the flow's end
    assert [r.type for r in records(path)] == [RecordType.MESSAGE]
    addon.responseheaders(f)
    addon.response(f)
    recs = records(path)
    assert [(r.type, (r.data or {}).get("event")) for r in recs] == [
        (RecordType.MESSAGE, None),
        (RecordType.MESSAGE, None),
        (RecordType.EVENT, "connection-closed"),
    ]
    assert len({r.conn for r in recs}) == 1
    assert _findings(path) == []


def test_a_session_outlives_the_tcp_connection_of_its_handshake(capture):
    addon, path = capture
    a, b = _client(50001), _client(50002)
    f = _on(post(INIT, resp=INIT_RESULT, resp_headers=_init_result(b"s-1")), a)
    addon.request(f)
    addon.responseheaders(f)
    addon.response(f)
    addon.client_disconnected(a)
    later = _on(
        post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            resp=b"",
            status=202,
            resp_headers=[],
            headers=_with_session(b"s-1"),
        ),
        b,
    )
    addon.request(later)
    addon.responseheaders(later)
    addon.response(later)
    recs = records(path)
    assert not [r for r in recs if (r.data or {}).get("event") == "connection-closed"]
    assert len({r.conn for r in recs}) == 1
    assert body(INIT) == recs[0].raw
    assert _findings(path) == []


def test_the_address_the_server_was_reached_at_is_recorded(capture):
    addon, path = capture
    f = post(INIT, resp=INIT_RESULT)
    f.server_conn.peername = ("127.0.0.1", 8765)
    addon.request(f)
    addon.responseheaders(f)
    addon.response(f)
    answer = records(path)[1]
    assert answer.http["server"] == "127.0.0.1:8765"


def test_a_request_on_a_bare_flow_without_client_identity_still_gets_a_connection(capture):
    addon, path = capture
    f = flow(
        method=b"POST",
        content=body(INIT),
        headers=[ACCEPT_BOTH, JSON],
        resp_headers=[JSON],
        resp_content=body(INIT_RESULT),
    )
    f.client_conn.peername = None
    addon.request(f)
    addon.responseheaders(f)
    addon.response(f)
    assert {r.conn for r in records(path)} == {"client→127.0.0.1:8765/mcp"}


def test_a_deprecated_feature_of_a_stateless_endpoint_is_noted_once_across_tcp_connections(capture):
    addon, path = capture
    from tests.addon_helpers import exchange

    meta = {**META, "io.modelcontextprotocol/logLevel": "info"}
    for port, rid in ((50001, 1), (50002, 2), (50003, 3)):
        req = {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {"_meta": meta}}
        resp = {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {"resultType": "complete", "tools": [], **CACHE, "_meta": SERVER_META},
        }
        exchange(
            addon,
            post(
                req,
                resp=resp,
                client=("127.0.0.1", port),
                headers=(
                    ACCEPT_BOTH,
                    JSON,
                    (b"mcp-protocol-version", b"2026-07-28"),
                    (b"mcp-method", b"tools/list"),
                ),
            ),
        )
    assert len({r.conn for r in records(path)}) == 3
    assert _findings(path) == ["MCP905"]


def test_a_request_that_forgets_the_session_id_on_the_session_tcp_connection_is_flagged_by_mcp721(capture):
    addon, path = capture
    client = _client(50001)
    legacy = (ACCEPT_BOTH, JSON, (b"mcp-protocol-version", b"2025-11-25"))
    for f in (
        post(INIT, resp=INIT_RESULT, resp_headers=_init_result(b"s-1")),
        post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            resp=b"",
            status=202,
            resp_headers=[],
            headers=_with_session(b"s-1"),
        ),
        post(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers=legacy,
            resp={"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
        ),
    ):
        _on(f, client)
        addon.request(f)
        addon.responseheaders(f)
        addon.response(f)
    assert len({r.conn for r in records(path)}) == 1
    assert "MCP721" in _findings(path)


def test_a_flow_file_ends_each_sessionless_connection_when_its_tcp_connection_closed(tmp_path):
    from mitmproxy import io

    from tracer.cli.inputs import register_optional_inputs
    from tracer.inputs import open_input

    headers = (ACCEPT_BOTH, JSON, (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/list"))
    flows = []
    for i, port in enumerate((50001, 50001, 50002)):
        req = {"jsonrpc": "2.0", "id": i, "method": "tools/list", "params": {"_meta": META}}
        resp = {
            "jsonrpc": "2.0",
            "id": i,
            "result": {"resultType": "complete", "tools": [], **CACHE, "_meta": SERVER_META},
        }
        f = post(req, resp=resp, headers=headers, client=("127.0.0.1", port))
        t = 1000.0 + i
        f.request.timestamp_start, f.request.timestamp_end = t, t + 0.001
        f.response.timestamp_start, f.response.timestamp_end = t + 0.002, t + 0.003
        flows.append(f)
    flows[1].client_conn = flows[0].client_conn  # two exchanges on one keep-alive connection
    for f, closed in zip(flows, (1010.0, 1010.0, 1003.0), strict=True):
        f.client_conn.timestamp_end = closed
    path = tmp_path / "clients.mitm"
    with open(path, "wb") as fh:
        w = io.FlowWriter(fh)
        for f in flows:
            w.add(f)
    register_optional_inputs()
    recs = [r for r in open_input(str(path)).records if isinstance(r, Record)]
    events = [(r.conn, r.t_ns) for r in recs if (r.data or {}).get("event") == "connection-closed"]
    conns = [r.conn for r in recs if r.type is RecordType.MESSAGE]
    assert len(set(conns)) == 2 and conns[0] == conns[2] != conns[4]
    assert [c for c, _ in events] == [conns[4], conns[0]]  # in the order the connections closed
    msgs, ends = analyse_all(recs)
    assert [f.rule for m in msgs for f in m.findings] + [f.rule for f in ends] == []


class _CountingNames(dict):
    """A name table that counts the lookups naming a connection makes."""

    lookups = 0

    def __contains__(self, key) -> bool:
        type(self).lookups += 1
        return super().__contains__(key)

    def put(self, key, value) -> None:
        self[key] = value


def test_naming_the_thousandth_connection_of_one_client_looks_up_as_few_names_as_the_second():
    # A client that opens a TCP connection per request gives every connection the same base name:
    # each new one must not walk the names of all the earlier ones (the proxy's recording work).
    from tracer.http.conns import Connections

    conns = Connections(lambda conn, client: None)
    conns._names = _CountingNames()
    names = []
    per_name = []
    for _ in range(1000):
        before = _CountingNames.lookups
        names.append(conns.unique("127.0.0.1→127.0.0.1:8765/mcp"))
        per_name.append(_CountingNames.lookups - before)
    assert names[:3] == [
        "127.0.0.1→127.0.0.1:8765/mcp",
        "127.0.0.1→127.0.0.1:8765/mcp#2",
        "127.0.0.1→127.0.0.1:8765/mcp#3",
    ]
    assert len(set(names)) == 1000
    assert max(per_name) == 1, per_name[-3:]


def test_a_name_another_base_already_took_is_skipped():
    from tracer.http.conns import Connections

    conns = Connections(lambda conn, client: None)
    assert conns.unique("a#2") == "a#2"
    assert [conns.unique("a") for _ in range(3)] == ["a", "a#3", "a#4"]
