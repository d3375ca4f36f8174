"""Real SDK traffic is clean and correctly understood: the committed captures and fresh ones.

fixtures/captures/sdk-stdio-*.jsonl are real sessions of the official SDK client and server recorded
through mcptrace's own stdio tee (fixtures/make_captures.py). The official SDK is the reference peer,
so mcptrace must find nothing wrong in them, label every message with the right era and version, and
pair every request with its response (a cancelled request is the one that rightly stays unanswered).
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.sdk_peers import CAPTURES, REPO
from tracer.analyser import analyse_all
from tracer.capture import ReadProblem, read_capture
from tracer.cli import main as cli_main
from tracer.model import Era, Kind, RecordType


def _load_make_captures():
    # fixtures/ is not a package: load the regeneration script by path.
    spec = importlib.util.spec_from_file_location("make_captures", REPO / "fixtures" / "make_captures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_captures = _load_make_captures()

LEGACY, MODERN = "2025-11-25", "2026-07-28"
ERAS = make_captures.ERAS


def committed(era: str):
    return CAPTURES / make_captures.capture_name(era)


def lint_summary(path, capsys) -> dict:
    code = cli_main(["lint", "--format", "json", "--no-progress", str(path)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["findings"]
    return report


def analysed(path):
    with open(path, "rb") as fh:
        records = list(read_capture(fh, str(path)))
    problems = [r for r in records if isinstance(r, ReadProblem)]
    assert problems == []
    msgs, ends = analyse_all(records)
    return msgs, ends


def check_lint_clean(path, capsys) -> None:
    report = lint_summary(path, capsys)
    summary = report["summary"]
    serious = [f for f in report["findings"] if f["severity"] in ("error", "warning")]
    assert serious == [], f"lint findings on real SDK traffic in {path.name}: {serious}"
    assert report["problems"] == []
    assert summary["messages"] > 30


def check_eras(era: str, msgs) -> None:
    if era == "legacy":
        assert (msgs[0].method, msgs[0].kind) == ("initialize", Kind.REQUEST)
        wrong = [(m.seq, m.era, m.version) for m in msgs if (m.era, m.version) != (Era.LEGACY, LEGACY)]
    else:
        # The SDK server speaks 2026-07-28, so the auto client's discover probe succeeds and the
        # whole session stays modern: no initialize at all.
        if era == "auto":
            assert (msgs[0].method, msgs[0].kind) == ("server/discover", Kind.REQUEST)
            assert MODERN in msgs[1].obj["result"]["supportedVersions"]
        assert "initialize" not in {m.method for m in msgs}
        wrong = [(m.seq, m.era, m.version) for m in msgs if (m.era, m.version) != (Era.MODERN, MODERN)]
    assert wrong == [], f"messages with the wrong era/version: {wrong}"


def check_pairing(msgs, ends) -> None:
    cancelled_ids = {
        m.params["requestId"]
        for m in msgs
        if m.kind is Kind.NOTIFICATION and m.method == "notifications/cancelled"
    }
    assert len(cancelled_ids) == 1, "the scripted session cancels exactly one slow call"
    requests = [m for m in msgs if m.kind is Kind.REQUEST]
    unanswered = [m.id for m in requests if m.partner_seq is None]
    assert set(unanswered) == cancelled_ids
    responses = [m for m in msgs if m.kind in (Kind.RESULT, Kind.ERROR)]
    assert all(m.partner_seq is not None for m in responses)
    assert len(responses) == len(requests) - 1
    assert all(f.severity.label == "info" for f in ends)
    by_seq = {m.seq: m for m in msgs}
    for r in responses:
        assert by_seq[r.partner_seq].id == r.id


def check_content(era: str, msgs) -> None:
    """The capture holds the whole scripted session, both directions (what the fixture promises)."""
    methods = {m.method for m in msgs if m.method}
    expected = {
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "tools/call",
        "resources/read",
        "prompts/get",
        "notifications/progress",
        "notifications/cancelled",
        "notifications/message",
    }
    if era == "legacy":
        expected |= {"initialize", "notifications/initialized", "logging/setLevel"}
    assert expected <= methods
    is_error = [m for m in msgs if m.kind is Kind.RESULT and m.obj["result"].get("isError") is True]
    assert len(is_error) == 1


def check_capture(era: str, path, capsys) -> None:
    check_lint_clean(path, capsys)
    msgs, ends = analysed(path)
    check_eras(era, msgs)
    check_pairing(msgs, ends)
    check_content(era, msgs)


@pytest.mark.parametrize("era", ERAS)
def test_committed_sdk_capture_is_lint_clean_with_right_eras_and_every_request_answered(era, capsys):
    path = committed(era)
    assert path.is_file(), f"missing {path}: run python fixtures/make_captures.py"
    check_capture(era, path, capsys)


@pytest.mark.parametrize("era", ERAS)
def test_committed_sdk_capture_was_recorded_by_the_stdio_tee_up_to_a_clean_server_exit(era):
    with open(committed(era), "rb") as fh:
        records = [r for r in read_capture(fh) if not isinstance(r, ReadProblem)]
    header = records[0].data
    assert header["type"] == "header" and header["transport"] == "stdio"
    assert header["command"][-1] == "fixtures/sdk/server.py"
    events = [r.data for r in records if r.type is RecordType.EVENT]
    assert {"event": "exit", "code": 0} in events


@pytest.mark.parametrize("era", ERAS)
def test_regenerating_a_capture_through_the_tee_gives_a_clean_capture_and_a_working_session(
    era, tmp_path, capsys
):
    path, client_out = make_captures.make(era, tmp_path)
    ops = [json.loads(line) for line in client_out.splitlines()]
    assert ops[0] == {"op": "connect", "protocol_version": LEGACY if era == "legacy" else MODERN}
    assert ops[-1]["op"] == "call_tool" and ops[-1]["result"]["content"][0]["text"] == "42"
    check_capture(era, path, capsys)
