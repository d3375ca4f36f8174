"""Real peers through the tee: the official MCP Python SDK client driving the SDK's stdio server
(fixtures/sdk/), in both eras and the dual-era probe, gets exactly what it gets without the tee, and
the capture holds every message in order, lints clean and pairs every request."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.sdk_peers import run_clients, server_cmd
from tests.tracer.stdio.test_tee_relay import read_records
from tracer.analyser import analyse_all
from tracer.model import Direction, Kind, RecordType

ERAS = ["legacy", "modern", "auto"]
TEE = [sys.executable, "-m", "tracer", "stdio"]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tee-sdk")
    caps = {era: tmp / f"{era}.jsonl" for era in ERAS}
    runs = [(era, None, server_cmd()) for era in ERAS]
    # --grace: on a loaded machine the SDK server can take over the default 3 s to exit after its
    # stdin closes; the tee would then SIGTERM it (MCP809, exit 143) where a clean end is checked
    tee = [*TEE, "-q", "--grace", "20"]
    runs += [(era, None, [*tee, "-o", str(caps[era]), "--", *server_cmd()]) for era in ERAS]
    results = run_clients(runs)
    return {era: (results[i], results[i + len(ERAS)], caps[era]) for i, era in enumerate(ERAS)}


@pytest.mark.parametrize("era", ERAS)
def test_sdk_client_gets_the_same_results_through_the_tee(sessions, era):
    direct, teed, _ = sessions[era]
    assert teed == direct
    assert any(op["op"] == "cancel_tool" and op["cancelled"] for op in teed)


@pytest.mark.parametrize("era", ERAS)
def test_tee_capture_of_an_sdk_session_holds_every_message_in_stream_order(sessions, era):
    records = read_records(sessions[era][2])
    assert records[0].data["transport"] == "stdio" and records[0].data["command"] == server_cmd()
    assert [r.seq for r in records[1:]] == list(range(1, len(records)))
    for d in Direction:
        lines = [r for r in records if r.type is RecordType.MESSAGE and r.dir is d]
        assert lines and all(r.eol for r in lines)
        # contiguous offsets: nothing between the captured lines was missed
        assert [r.offset for r in lines] == [
            sum(len(x.raw) + 1 for x in lines[:i]) for i in range(len(lines))
        ]
    assert [r.data for r in records if r.type is RecordType.EVENT][-1] == {"event": "exit", "code": 0}


@pytest.mark.parametrize("era", ERAS)
def test_tee_capture_of_an_sdk_session_lints_clean_and_pairs_every_request(sessions, era):
    cap = sessions[era][2]
    lint = subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--fail-on", "warning", str(cap)],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    msgs, _ = analyse_all([r for r in read_records(cap) if r.type is not RecordType.HEADER])
    assert all(m.kind is not Kind.INVALID for m in msgs)
    cancelled = {(m.dir, m.params["requestId"]) for m in msgs if m.method == "notifications/cancelled"}
    unanswered = [m for m in msgs if m.kind is Kind.REQUEST and m.partner_seq is None]
    # the one request the client cancelled on purpose may stay unanswered; every other one paired
    assert [(m.dir, m.id) for m in unanswered] == [(Direction.C2S, i) for d, i in cancelled]
    assert len(cancelled) == 1
    responses = [m for m in msgs if m.kind in (Kind.RESULT, Kind.ERROR)]
    assert responses and all(m.pair_status == "paired" for m in responses)


def test_an_sdk_session_with_a_server_slow_to_exit_ends_with_its_clean_exit_in_the_capture(tmp_path):
    # A server that takes 2.5 s to exit once its stdin closes, as the SDK server does on a loaded
    # machine: the SDK client must wait for it rather than SIGTERM the tee (forwarded: exit 143).
    cap = tmp_path / "slow-exit.jsonl"
    slow = ["sh", "-c", '"$0" "$1"; sleep 2.5', *server_cmd()]
    ops = run_clients([("legacy", None, [*TEE, "-q", "--grace", "20", "-o", str(cap), "--", *slow])])[0]
    assert ops[0]["op"] == "connect"
    events = [r.data for r in read_records(cap) if r.type is RecordType.EVENT]
    assert [e["event"] for e in events] == ["started", "stdin-eof", "exit"]
    assert events[-1] == {"event": "exit", "code": 0}
