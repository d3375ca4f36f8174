"""The era labeller's truth table (tracer/era.py `label_era`), one row per case: what kind of
message, which method, whether its `_meta` carries a protocolVersion (and a valid one), what the
session has seen before it (nothing, a legacy handshake, a modern probe a legacy server rejected, a
rejected initialize, modern requests) and, on HTTP, the `MCP-Protocol-Version` request header.

Each row names the era and version a reader of the capture would expect and the gist of the reason
the viewer shows. The rules follow 2026-07-28 basic/versioning ("Modern" = per-request `_meta`,
"Legacy" = an `initialize` handshake; a dual-era server "MAY serve both eras concurrently") and
streamable-http "Protocol Version Header". Messages run through the real analyser, so a row also
shows what the session state before it really is."""

from __future__ import annotations

import pytest

from tests.factory import (
    error,
    handshake,
    initialize,
    initialized,
    notification,
    request,
    result,
    session,
)
from tracer.analyser import analyse_all
from tracer.model import Direction, Era
from tracer.protocol import META_SUBSCRIPTION_ID

M, L, U = Era.MODERN, Era.LEGACY, Era.UNKNOWN
MODERN_V, LEGACY_V = "2026-07-28", "2025-11-25"
S2C = Direction.S2C
PV = "MCP-Protocol-Version"


# -- what the session saw before the message under test (each a function: records are mutable) ----
def nothing(**_):
    return []


def legacy_handshake(**kw):
    return handshake(LEGACY_V, **kw)


def rejected_probe(**kw):
    """A dual-era client's stdio probe (server/discover), answered by a legacy server's -32601: per
    versioning "Backward Compatibility", a non-modern error identifies a legacy server."""
    return [request("server/discover", 1, **kw), error(1, -32601, **kw)]


def probe_then_fallback(**kw):
    """The same probe, then the fallback handshake the spec prescribes."""
    return [*rejected_probe(**kw), initialize(2, **kw), initialized(2, **kw)]


def rejected_initialize(**kw):
    """A legacy client talking to a modern-only server: initialize fails, no session opens."""
    return [initialize(1, **kw), error(1, -32601, **kw)]


def modern_requests(**kw):
    return [request("tools/list", 1, **kw), result(1, {"tools": []}, **kw)]


# (row id, state, message under test, era, version, gist of the reason). Ids 7 and up, so they never
# collide with a state's own ids; a row about an answer sends its request as part of the row.
# One row per line (fmt: off): a truth table reads across.
# fmt: off
ROWS = [
    # -- a request's own _meta decides, whatever the session saw ------------------------------
    ("request with _meta pv, fresh", nothing, [request("tools/list", 7)], M, MODERN_V, "_meta protocolVersion"),
    ("request with _meta pv, legacy session", legacy_handshake, [request("tools/list", 7)], M, MODERN_V, "_meta"),
    ("request with _meta pv, after rejected probe", rejected_probe, [request("tools/list", 7)], M, MODERN_V, "_meta"),
    ("request with _meta pv, unknown version", nothing, [request("tools/list", 7, version="1900-01-01")], M, "1900-01-01", "_meta protocolVersion '1900-01-01'"),
    ("request with _meta pv not a string", nothing, [request("tools/list", 7, version=20260728)], M, None, "_meta protocolVersion 20260728"),
    ("request with _meta pv a legacy version", nothing, [request("tools/list", 7, version=LEGACY_V)], M, LEGACY_V, "_meta protocolVersion '2025-11-25'"),
    ("initialize carrying modern _meta", nothing, [request("initialize", 7)], M, MODERN_V, "_meta protocolVersion"),
    # -- _meta without a protocolVersion is no modern label of its own ------------------------
    # modern request metadata without protocolVersion: a modern request missing a field (MCP310)
    ("request with _meta but no pv, fresh", nothing, [request("tools/list", 7, version=None)], M, None, "params._meta io.modelcontextprotocol/clientCapabilities without protocolVersion"),
    ("request with _meta but no pv, legacy session", legacy_handshake, [request("tools/list", 7, version=None)], L, LEGACY_V, "session opened by initialize"),
    # a rejected probe identifies a legacy server (versioning "Backward Compatibility"): what follows
    # before the fallback handshake is not modern by inheritance
    ("server notification after a rejected probe", rejected_probe, [notification("notifications/message", {"level": "info", "data": 1}, dir=S2C)], U, None, "no initialize or per-request _meta"),
    ("request without _meta after a rejected probe", rejected_probe, [request("tools/list", 7, era="legacy")], U, None, "no initialize or per-request _meta"),
    ("request with _meta but no pv, legacy session", legacy_handshake, [request("tools/list", 7, version=None)], L, LEGACY_V, "session opened by initialize"),
    # -- methods that exist in one era only ------------------------------------------------------
    ("server/discover without _meta", nothing, [request("server/discover", 7, era="legacy")], M, MODERN_V, "exists only in 2026-07-28"),
    ("subscriptions/listen without _meta", legacy_handshake, [request("subscriptions/listen", 7, era="legacy")], M, MODERN_V, "exists only in 2026-07-28"),
    ("initialize request", nothing, [initialize(7)], L, LEGACY_V, "initialize handshake (client requests '2025-11-25')"),
    ("initialize request with a non-string version", nothing, [request("initialize", 7, {"protocolVersion": 5}, era="legacy")], L, None, "client requests 5"),
    ("legacy-only request, fresh", nothing, [request("logging/setLevel", 7, {"level": "info"}, era="legacy")], L, None, "exists only before 2026-07-28"),
    ("legacy-only notification, fresh", nothing, [notification("notifications/roots/list_changed")], L, None, "exists only before 2026-07-28"),
    ("ping, fresh", nothing, [request("ping", 7, era="legacy")], L, None, "exists only before 2026-07-28"),
    ("legacy-only request in a modern session", modern_requests, [request("logging/setLevel", 7, {"level": "info"}, era="legacy")], M, MODERN_V, "session carries modern requests"),
    # -- notifications ---------------------------------------------------------------------------
    ("notification with a subscription id", nothing, [notification("notifications/tools/list_changed", {"_meta": {META_SUBSCRIPTION_ID: "s1"}}, dir=S2C)], M, MODERN_V, "a modern subscription stream"),
    ("notification with _meta pv", nothing, [notification("notifications/progress", {"progressToken": 1, "progress": 1}, era="modern")], M, MODERN_V, "_meta protocolVersion"),
    ("notification, fresh", nothing, [notification("notifications/progress", {"progressToken": 1, "progress": 1})], U, None, "no initialize or per-request _meta"),
    ("notification, legacy session", legacy_handshake, [notification("notifications/message", {"level": "info", "data": 1}, dir=S2C)], L, LEGACY_V, "session opened by initialize at seq 1 (negotiated 2025-11-25)"),
    ("notification, modern session", modern_requests, [notification("notifications/message", {"level": "info", "data": 1}, dir=S2C)], M, MODERN_V, "session carries modern requests and no initialize"),
    ("notification after probe and fallback", probe_then_fallback, [notification("notifications/initialized")], L, LEGACY_V, "session opened by initialize at seq 3"),
    ("notification after a rejected initialize", rejected_initialize, [notification("notifications/message", {"level": "info", "data": 1}, dir=S2C)], U, None, "no initialize or per-request _meta"),
    # -- requests without _meta: the session decides ---------------------------------------------
    ("request without _meta, fresh", nothing, [request("tools/list", 7, era="legacy")], U, None, "no initialize or per-request _meta"),
    ("request without _meta, legacy session", legacy_handshake, [request("tools/list", 7, era="legacy")], L, LEGACY_V, "session opened by initialize"),
    ("request without _meta, modern session", modern_requests, [request("tools/list", 7, era="legacy")], M, MODERN_V, "session carries modern requests"),
    ("request without _meta after probe and fallback", probe_then_fallback, [request("tools/list", 7, era="legacy")], L, LEGACY_V, "session opened by initialize at seq 3"),
    ("request without _meta after a rejected initialize", rejected_initialize, [request("tools/list", 7, era="legacy")], U, None, "no initialize or per-request _meta"),
    ("request while initialize is unanswered", nothing, [initialize(1), request("tools/list", 7, era="legacy")], L, LEGACY_V, "not yet negotiated"),
    # -- answers speak the era of what they answer -------------------------------------------------
    ("result of initialize", nothing, [initialize(7), initialized(7, "2025-06-18")], L, "2025-06-18", "answers initialize: negotiated '2025-06-18'"),
    ("result of initialize without a version", nothing, [initialize(7), result(7, {"capabilities": {}})], L, LEGACY_V, "negotiated None"),
    ("error to initialize", nothing, [initialize(7), error(7)], L, LEGACY_V, "answers initialize (seq 1) with an error: no session opened"),
    ("result of a modern request", nothing, [request("tools/list", 7), result(7)], M, MODERN_V, "answers modern tools/list (seq 1)"),
    ("error to a modern probe", nothing, [request("server/discover", 7), error(7)], M, MODERN_V, "answers modern server/discover"),
    ("result of a modern request, legacy session", legacy_handshake, [request("tools/list", 7), result(7)], M, MODERN_V, "answers modern tools/list"),
    ("result of a legacy-only request", nothing, [request("ping", 7, era="legacy"), result(7)], L, None, "answers legacy ping"),
    ("result of an unknown-era request", nothing, [request("tools/list", 7, era="legacy"), result(7)], U, None, "no initialize or per-request _meta"),
    ("result of a legacy request, legacy session", legacy_handshake, [request("tools/list", 7, era="legacy"), result(7)], L, LEGACY_V, "session opened by initialize"),
    ("unknown id, fresh", nothing, [result(70)], U, None, "no initialize or per-request _meta"),
    ("server's request, modern session", modern_requests, [request("roots/list", 7, era="legacy", dir=S2C)], M, MODERN_V, "session carries modern requests"),
]

# On Streamable HTTP, the MCP-Protocol-Version request header speaks for a POST without _meta.
H_MODERN, H_LEGACY = [(PV, MODERN_V)], [(PV, LEGACY_V)]
HTTP_ROWS = [
    ("HTTP: notification with modern header", nothing, [notification("notifications/cancelled", {"requestId": 1}, headers=H_MODERN, flow=7)], M, MODERN_V, "MCP-Protocol-Version header '2026-07-28' without _meta"),
    ("HTTP: request with legacy header, no handshake seen", nothing, [request("tools/list", 7, era="legacy", headers=H_LEGACY, flow=7)], L, LEGACY_V, "MCP-Protocol-Version header '2025-11-25'"),
    ("HTTP: header name in any case", nothing, [request("tools/list", 7, era="legacy", headers=[("mcp-protocol-version", "2025-06-18")], flow=7)], L, "2025-06-18", "header '2025-06-18'"),
    ("HTTP: _meta wins over a mismatching header", nothing, [request("tools/list", 7, headers=H_LEGACY, flow=7)], M, MODERN_V, "_meta protocolVersion"),
    ("HTTP: legacy session wins over a modern header", lambda: legacy_handshake(headers=H_LEGACY), [request("tools/list", 7, era="legacy", headers=H_MODERN, flow=7)], L, LEGACY_V, "session opened by initialize"),
    ("HTTP: legacy header after modern requests", lambda: modern_requests(headers=H_MODERN), [request("tools/list", 7, era="legacy", headers=H_LEGACY, flow=7)], L, LEGACY_V, "MCP-Protocol-Version header '2025-11-25'"),
    ("HTTP: legacy header after a rejected probe", lambda: rejected_probe(headers=H_MODERN), [request("tools/list", 7, era="legacy", headers=H_LEGACY, flow=7)], L, LEGACY_V, "MCP-Protocol-Version header '2025-11-25'"),
    ("HTTP: modern header, modern session", lambda: modern_requests(headers=H_MODERN), [notification("notifications/cancelled", {"requestId": 1}, headers=H_MODERN, flow=7)], M, MODERN_V, "header '2026-07-28' without _meta"),
    ("HTTP: a header is the client's, not the server's", nothing, [request("ping", 7, era="legacy", dir=S2C, headers=H_MODERN, flow=7)], L, None, "exists only before 2026-07-28"),
    ("HTTP: no header, no _meta", nothing, [request("tools/list", 7, era="legacy", headers=[], flow=7)], U, None, "no initialize or per-request _meta"),
    ("HTTP: a reply on a modern request's stream", nothing, [request("tools/call", 7, {"name": "t"}, headers=H_MODERN, flow=7), notification("notifications/progress", {"progressToken": 1, "progress": 1}, dir=S2C, headers=H_MODERN, flow=7)], M, MODERN_V, "travels on the stream of the modern tools/call request (seq 1)"),
]

# fmt: on


@pytest.mark.parametrize(
    ("state", "subject", "era", "version", "gist"),
    [pytest.param(*row[1:], id=row[0]) for row in ROWS + HTTP_ROWS],
)
def test_each_message_gets_the_era_version_and_reason_the_spec_gives_it(state, subject, era, version, gist):
    msgs, _ = analyse_all(session(*state(), *subject))
    m = msgs[-1]
    assert (m.era, m.version) == (era, version), m.era_reason
    assert gist in m.era_reason


def test_the_table_covers_every_kind_and_every_session_state():
    kinds = {analyse_all(session(*row[1](), *row[2]))[0][-1].kind.value for row in ROWS}
    assert kinds == {"request", "notification", "result", "error"}
    states = {row[1] for row in ROWS}
    assert states == {
        nothing,
        legacy_handshake,
        rejected_probe,
        probe_then_fallback,
        rejected_initialize,
        modern_requests,
    }
