"""`mcptrace replay` on bad captures, other input formats, and usage mistakes: clear messages, no tracebacks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.replay_support import free_port, mcptrace, note, read_messages, req, res, write_capture
from tests.sdk_peers import CAPTURES, server_cmd

LEGACY = CAPTURES / "sdk-stdio-legacy.jsonl"
TOOLS_LIST = b'\\"method\\":\\"tools/list\\"'  # as stored: JSON text inside the record's "text"


def run(*args: str):
    proc = mcptrace("replay", *args)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return proc


def test_a_truncated_capture_is_replayed_as_far_as_it_goes_and_fails_naming_the_torn_line(tmp_path):
    data = LEGACY.read_bytes()
    cut = data.index(TOOLS_LIST)  # inside the tools/list request line
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[:cut])
    proc = run(str(torn), "-o", str(tmp_path / "new.jsonl"), "--format", "json", "--", *server_cmd())
    assert proc.returncode == 1
    lines = data[:cut].count(b"\n") + 1
    assert f"torn.jsonl:{lines}: torn last line" in proc.stderr
    report = json.loads(proc.stdout)
    assert [r["outcome"] for r in report["requests"]] == ["same", "same"]  # initialize, logging/setLevel
    assert any("torn last line" in p for p in report["problems"])


def test_a_capture_whose_last_request_was_never_answered_says_so_and_fails(tmp_path):
    lines = LEGACY.read_bytes().splitlines(keepends=True)
    idx = next(i for i, line in enumerate(lines) if TOOLS_LIST in line)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: idx + 1]))  # whole lines: the request, but not its answer
    proc = run(str(cut), "-o", str(tmp_path / "new.jsonl"), "--", *server_cmd())
    assert proc.returncode == 1
    assert f"the recorded server never answered tools/list (line {idx + 1})" in proc.stderr
    assert "tools/list" in proc.stdout and "no recorded answer" in proc.stdout


@pytest.mark.parametrize(
    "content",
    [
        b"hello, this is not a capture\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        b'{"name": "a package.json, say", "version": "1.0.0"}\n',
        b"",
    ],
)
def test_a_foreign_file_is_refused_in_one_line_with_exit_2(tmp_path, content):
    path = tmp_path / "foreign.bin"
    path.write_bytes(content)
    proc = run(str(path), "--", *server_cmd())
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("mcptrace: error: ")
    assert proc.stdout == ""


def test_a_capture_without_host_requests_has_nothing_to_replay(tmp_path):
    cap = write_capture(
        tmp_path / "quiet.jsonl", ("s2c", note("notifications/message", {"level": "info", "data": "x"}))
    )
    proc = run(str(cap), "--", *server_cmd())
    assert proc.returncode == 2 and "no requests from the host to replay" in proc.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "give the server either as '-- CMD [ARGS...]' or as --url URL"),
        (["--url", "http://127.0.0.1:1/mcp", "--", "python"], "exactly one"),
        (["--url", "ftp://example"], "--url: not an http(s) URL"),
        (["--ignore", "$.a[", "--", "python"], "--ignore"),
        (["--timeout", "0", "--", "python"], "--timeout must be a positive"),
        (["--header", "X: y", "--", "python"], "--header applies to --url only"),
        (["--url", "http://127.0.0.1:1/mcp", "--header", "no colon"], "expected 'Name: value'"),
        (["-o", str(LEGACY), "--", "python"], "-o names the capture being replayed"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args, expected):
    proc = run(str(LEGACY), *args)
    assert proc.returncode == 2
    assert expected in proc.stderr and proc.stderr.count("\n") == 1


def test_a_server_command_that_does_not_exist_is_a_clear_error(tmp_path):
    proc = run(str(LEGACY), "-o", str(tmp_path / "n.jsonl"), "--", "no-such-mcp-server-xyz")
    assert proc.returncode == 2
    assert proc.stderr == "mcptrace: error: cannot start 'no-such-mcp-server-xyz': command not found\n"


def test_a_url_nobody_listens_on_is_a_clear_error(tmp_path):
    proc = run(str(LEGACY), "-o", str(tmp_path / "n.jsonl"), "--url", f"http://127.0.0.1:{free_port()}/mcp")
    assert proc.returncode == 2 and "cannot connect to http://127.0.0.1:" in proc.stderr


def test_a_server_that_exits_at_once_leaves_every_request_without_answer(tmp_path):
    proc = run(
        str(LEGACY),
        "-o",
        str(tmp_path / "n.jsonl"),
        "--format",
        "json",
        "--timeout",
        "5",
        "--",
        sys.executable,
        "-c",
        "import sys; sys.exit(3)",
    )
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert {r["outcome"] for r in report["requests"]} <= {"no answer", "cancelled"}
    exit_events = [
        json.loads(line) for line in (tmp_path / "n.jsonl").read_text().splitlines() if '"event"' in line
    ]
    assert {"event": "exit", "code": 3} in [e["data"] for e in exit_events]


def test_an_unknown_connection_is_refused_naming_the_known_ones(tmp_path):
    proc = run(str(LEGACY), "--conn", "nope", "--", *server_cmd())
    assert proc.returncode == 2 and "connections: stdio-1" in proc.stderr


# -- other inputs lint reads ---------------------------------------------------------------------------


def _messages(capture: Path) -> list[tuple[str, str]]:
    return [(m["dir"], m["text"]) for m in read_messages(capture)]


def test_an_ndjson_log_without_directions_replays_same(tmp_path):
    nd = tmp_path / "session.ndjson"
    nd.write_text("".join(text + "\n" for _, text in _messages(CAPTURES / "sdk-stdio-modern.jsonl")))
    proc = run(str(nd), "-o", str(tmp_path / "new.jsonl"), "--format", "json", "--", *server_cmd())
    assert proc.returncode == 0, proc.stdout
    report = json.loads(proc.stdout)
    assert {r["outcome"] for r in report["requests"]} == {"same", "cancelled"}


def test_a_claude_desktop_style_host_log_replays_same(tmp_path):
    log = tmp_path / "mcp-server-fixture.log"
    out = ["2026-11-29T10:00:00.000Z [fixture] [info] Initializing server...\n"]
    for i, (d, text) in enumerate(_messages(LEGACY)):
        who = "client" if d == "c2s" else "server"
        out.append(
            f"2026-11-29T10:00:{i % 60:02d}.{i:03d}Z [fixture] [info] Message from {who}: {text} "
            f"{{ metadata: undefined }}\n"
        )
    log.write_text("".join(out))
    proc = run(str(log), "-o", str(tmp_path / "new.jsonl"), "--format", "json", "--", *server_cmd())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert {r["conn"] for r in report["requests"]} == {"fixture"}
    assert {r["outcome"] for r in report["requests"]} == {"same", "cancelled"}


def test_a_log_that_starts_after_the_handshake_gets_a_synthesised_one(tmp_path):
    cap = write_capture(
        tmp_path / "mid.jsonl",
        ("c2s", req(7, "logging/setLevel", {"level": "info"})),
        ("s2c", res(7, {})),
        ("c2s", req(8, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})),
        (
            "s2c",
            res(
                8,
                {
                    "content": [{"type": "text", "text": "2"}],
                    "isError": False,
                    "structuredContent": {"result": 2},
                },
            ),
        ),
    )
    proc = run(str(cap), "-o", str(tmp_path / "new.jsonl"), "--format", "json", "--", *server_cmd())
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, report
    assert [(r["request"], r["outcome"]) for r in report["requests"]] == [
        ("initialize", "same"),
        ("logging/setLevel", "same"),
        ("tools/call add", "same"),
    ]
    assert report["requests"][0]["synthetic"] is True
    assert "no initialize handshake" in report["notes"][0]


@pytest.mark.parametrize("era", ["legacy", "modern", "auto"])
def test_a_capture_replayed_against_its_own_mock_is_the_same(era, tmp_path):
    from tests.replay_support import MCPTRACE, mock_http

    capture = CAPTURES / f"sdk-stdio-{era}.jsonl"
    over_stdio = run(
        str(capture),
        "-o",
        str(tmp_path / "s.jsonl"),
        "--format",
        "json",
        "--",
        *MCPTRACE,
        "mock",
        "-q",
        str(capture),
    )
    with mock_http(capture, "-q") as (url, _proc):
        over_http = run(str(capture), "-o", str(tmp_path / "h.jsonl"), "--format", "json", "--url", url)
    for proc in (over_stdio, over_http):
        report = json.loads(proc.stdout)
        assert {r["outcome"] for r in report["requests"]} == {"same", "cancelled"}, report
        assert proc.returncode == 0


def test_a_capture_with_hostile_ids_and_strings_replays_against_its_own_mock(tmp_path):
    """A 65-bit id and a lone surrogate (both legal JSON a peer may send) are sent as captured."""
    from tests.replay_support import MCPTRACE

    def rec(seq: int, direction: str, text: str) -> str:
        return json.dumps(
            {
                "type": "message",
                "seq": seq,
                "t_ns": 1_000_000_000 + seq,
                "dir": direction,
                "transport": "stdio",
                "conn": "0",
                "text": text,
            }
        )

    init = (
        '{"jsonrpc":"2.0","id":18446744073709551617,"method":"initialize","params":{"protocolVersion":'
        '"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
    )
    inited = (
        '{"jsonrpc":"2.0","id":18446744073709551617,"result":{"protocolVersion":"2025-11-25",'
        '"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'
    )
    call = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"\\ud800","arguments":{}}}'
    answer = '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\\ud800"}]}}'
    capture = tmp_path / "hostile.jsonl"
    capture.write_text(
        "\n".join(
            [
                json.dumps(
                    {
                        "type": "header",
                        "format": "mcptrace",
                        "version": 1,
                        "t_ns": 1_000_000_000,
                        "transport": "stdio",
                    }
                ),
                rec(1, "c2s", init),
                rec(2, "s2c", inited),
                rec(3, "c2s", '{"jsonrpc":"2.0","method":"notifications/initialized"}'),
                rec(4, "c2s", call),
                rec(5, "s2c", answer),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    proc = run(
        str(capture),
        "-o",
        str(tmp_path / "new.jsonl"),
        "--format",
        "json",
        "--",
        *MCPTRACE,
        "mock",
        "-q",
        str(capture),
    )
    report = json.loads(proc.stdout)
    assert [r["outcome"] for r in report["requests"]] == ["same", "same"], report
    assert proc.returncode == 0
