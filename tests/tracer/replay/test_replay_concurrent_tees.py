"""`mcptrace replay` of a capture that tees appended to at once (a host starting the same server
twice with a fixed `-o`): each recording is one conversation, as in its own file. A header leaves a
tee's own session open (the analyser decides: tracer.analyser.tee_session), so a conversation is
not cut in two where another tee's header landed (its second half re-sent to a fresh server with
no handshake)."""

from __future__ import annotations

import json

from tests.replay_support import mcptrace
from tests.sdk_peers import server_cmd
from tests.tracer.test_concurrent_recordings import CAPTURES, _interleaved
from tracer.replay.recording import load


def _conversations(path) -> list[tuple]:
    return [
        (
            c.conn,
            c.era.value,
            [
                (ex.label(), ex.answer is not None, ex.cancelled, len(ex.during), len(ex.after))
                for ex in c.host_requests
            ],
            len(c.messages),
        )
        for c in load(str(path)).conversations
    ]


def test_tees_appending_at_once_give_the_conversations_of_each_recording_alone(tmp_path):
    shared = _interleaved(tmp_path)
    alone = [conv for c in CAPTURES for conv in _conversations(c)]
    assert len(alone) == len(CAPTURES)
    assert sorted(_conversations(shared)) == sorted(alone)


def test_a_capture_of_tees_appending_at_once_replays_same_against_the_same_server(tmp_path):
    shared = _interleaved(tmp_path)
    proc = mcptrace(
        "replay",
        str(shared),
        "-o",
        str(tmp_path / "new.jsonl"),
        "--format",
        "json",
        "--timeout",
        "20",
        "--",
        *server_cmd(),
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    expected = sorted(ex.label() for c in CAPTURES for ex in load(str(c)).host_requests())
    assert sorted(r["request"] for r in report["requests"]) == expected
    assert [r for r in report["requests"] if r["outcome"] not in ("same", "cancelled")] == []
    assert proc.returncode == 0 and report["ok"] is True
