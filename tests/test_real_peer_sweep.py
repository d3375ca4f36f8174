"""The real-peer sweep (tests/peer_sweep.py): live sessions of the official Python SDK client
against its own server and against server-everything, and of the official TypeScript SDK v2
(tests/ts_peers/) against the Python SDK both ways, against itself and against server-everything,
recorded by the tee and `mcptrace proxy`, lint with exactly the known real findings (`mcptrace
help peers`): every one required is there, nothing else is. Without Node the
server-everything and TypeScript halves are skipped by the node_peers mechanism (they cannot run
there), never hidden."""

from __future__ import annotations

import pytest

from tests import peer_sweep


@pytest.fixture(scope="module")
def sdk_captures(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep-sdk")
    caps = {}
    for run in peer_sweep.SDK_RUNS:
        caps.update(run(out))
    return caps


@pytest.fixture(scope="module")
def everything_captures(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep-everything")
    caps = {}
    for run in peer_sweep.EVERYTHING_RUNS:
        caps.update(run(out))
    return caps


def _check(name: str, caps: dict) -> None:
    findings, extra, absent = peer_sweep.judge(name, caps[name])
    assert extra == [], f"{caps[name]}: findings that are not known real ones"
    assert absent == [], f"{caps[name]}: known real findings not reported; all: {findings}"


@pytest.mark.parametrize("name", [n for n in peer_sweep.EXPECT if n.startswith("sdk-")])
def test_the_sdk_client_against_its_own_server_shows_exactly_its_real_findings(sdk_captures, name):
    _check(name, sdk_captures)


@pytest.mark.parametrize("name", [n for n in peer_sweep.EXPECT if n.startswith("everything-")])
def test_the_sdk_client_against_server_everything_shows_exactly_its_real_findings(everything_captures, name):
    _check(name, everything_captures)


@pytest.fixture(scope="module")
def ts_captures(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep-ts")
    caps = {}
    for run in peer_sweep.TS_RUNS:
        caps.update(run(out))
    return caps


@pytest.mark.parametrize("name", [n for n in peer_sweep.EXPECT if n.startswith("ts-")])
def test_the_typescript_sdk_v2_against_the_python_sdk_shows_exactly_their_real_findings(ts_captures, name):
    _check(name, ts_captures)


@pytest.mark.parametrize("mode", ["auto", "modern"])
def test_the_ts_clients_probe_process_and_its_session_are_both_in_the_one_capture_file(ts_captures, mode):
    """The TS SDK probes `server/discover` on a sibling process it then discards, and runs the
    session on a second one; both tees append to the file given with -o."""
    recs = [
        r
        for r in peer_sweep.capture_records(ts_captures[f"ts-client-stdio-{mode}"])
        if r.type.value == "message" and r.dir is not None and r.dir.value == "c2s"
    ]
    by_conn: dict[str, list[bytes]] = {}
    for r in recs:
        by_conn.setdefault(r.conn, []).append(r.raw)
    assert len(by_conn) == 2, f"one probe process and one session: {list(by_conn)}"
    probe, session = by_conn.values()
    assert len(probe) == 1 and b'"server/discover"' in probe[0]
    assert b'"server/discover"' not in session[0] and b"io.modelcontextprotocol/protocolVersion" in session[0]
    assert any(b'"tools/list"' in raw for raw in session) and len(session) > 10


@pytest.mark.parametrize("name", ["ts-both-stdio-modern", "ts-both-stdio-auto", "ts-both-http"])
def test_the_ts_servers_tool_list_change_travels_on_the_listen_stream_in_the_modern_sessions(
    ts_captures, name
):
    """What the clean-lint check above covers includes a modern change notification: the TS server
    announces its tool-list change on the client's subscriptions/listen stream, with its id."""
    changes = [
        r.raw
        for r in peer_sweep.capture_records(ts_captures[name])
        if b'"notifications/tools/list_changed"' in r.raw
    ]
    assert changes and all(b'"io.modelcontextprotocol/subscriptionId":"listen:0"' in raw for raw in changes)
