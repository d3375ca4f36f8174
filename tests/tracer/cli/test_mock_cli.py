"""`mcptrace mock` over stdio, driven line by line: matching modes, what follows an answer, bad captures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.replay_support import mcptrace, note, req, res, write_capture
from tests.sdk_peers import CAPTURES

INIT = req(
    1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
)


def serve(capture: Path | str, *messages: Any, extra: tuple[str, ...] = ()) -> tuple[int, list[dict], str]:
    text = "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)
    proc = mcptrace("mock", str(capture), *extra, stdin=text)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def small_capture(tmp_path: Path) -> Path:
    return write_capture(
        tmp_path / "small.jsonl",
        ("c2s", INIT),
        (
            "s2c",
            res(
                1,
                {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s"}},
            ),
        ),
        ("c2s", note("notifications/initialized")),
        ("c2s", req(2, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p-2"}})),
        ("s2c", note("notifications/progress", {"progressToken": "p-2", "progress": 1, "total": 2})),
        ("s2c", note("notifications/message", {"level": "info", "data": "working"})),
        ("s2c", res(2, {"content": [{"type": "text", "text": "done"}]})),
        ("s2c", note("notifications/tools/list_changed")),
        ("c2s", req(3, "tools/list")),
        ("s2c", res(3, {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]})),
    )


def test_answers_carry_the_callers_id_and_progress_its_token(tmp_path):
    code, out, _ = serve(
        small_capture(tmp_path),
        INIT | {"id": "init-x"},
        req(99, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": 7}}),
    )
    assert out[0]["id"] == "init-x" and out[0]["result"]["serverInfo"] == {"name": "s"}
    assert [m.get("method") or m["id"] for m in out[1:]] == [
        "notifications/progress",
        "notifications/message",
        99,
        "notifications/tools/list_changed",
    ]
    assert out[1]["params"]["progressToken"] == 7  # the caller's token, not the recorded "p-2"
    assert code == 0


def test_a_caller_without_a_progress_token_gets_no_progress(tmp_path):
    _, out, _ = serve(small_capture(tmp_path), INIT, req(5, "tools/call", {"name": "slow", "arguments": {}}))
    assert "notifications/progress" not in [m.get("method") for m in out]
    assert (
        out[-1]["method"] == "notifications/tools/list_changed"
    )  # what followed the answer follows it again


def test_sequential_mode_answers_in_recorded_order_whatever_the_params(tmp_path):
    code, out, err = serve(
        small_capture(tmp_path),
        INIT,
        req(2, "tools/call", {"name": "other"}),
        req(3, "tools/call", {"name": "slow"}),
        extra=("--match", "sequential"),
    )
    by_id = {m["id"]: m for m in out if "id" in m}
    assert by_id[2]["result"]["content"][0]["text"] == "done"
    assert by_id[3]["error"]["code"] == -32601 and "expected tools/list" in by_id[3]["error"]["message"]
    assert code == 1 and "1 without a recorded match" in err


def test_strict_mode_wants_the_recorded_params_including_meta(tmp_path):
    _, out, _ = serve(
        small_capture(tmp_path),
        INIT,
        req(2, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": "z"}}),
        extra=("--match", "strict"),
    )
    assert [m.get("id") for m in out if "result" in m] == [1, 2]
    _, out, _ = serve(
        small_capture(tmp_path),
        INIT | {"params": {**INIT["params"], "clientInfo": {"name": "u"}}},
        extra=("--match", "strict"),
    )
    assert "$.params.clientInfo.name" in out[0]["error"]["message"]


def test_a_batch_is_answered_with_one_array(tmp_path):
    _, out, _ = serve(
        small_capture(tmp_path), [INIT, req(8, "tools/list"), note("notifications/initialized")]
    )
    (answers,) = [m for m in out if isinstance(m, list)]
    assert [a["id"] for a in answers] == [1, 8]


def test_garbage_members_of_a_batch_and_an_empty_batch_each_get_an_invalid_request_error(tmp_path):
    # JSON-RPC 2.0: an empty array is answered with one error object, a member that is not a
    # message with an error in the array of answers (a host waiting on the batch hears back).
    _, out, _ = serve(small_capture(tmp_path), [], [1, "x", None], [req(8, "tools/list"), 7])
    assert out[0]["error"]["code"] == -32600 and out[0]["id"] is None
    assert [a["error"]["code"] for a in out[1]] == [-32600] * 3
    assert [a["id"] for a in out[2]] == [8, None] and out[2][1]["error"]["code"] == -32600


def test_a_line_that_is_not_json_gets_a_parse_error(tmp_path):
    code, out, _ = serve(small_capture(tmp_path), "{not json")
    assert out == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": out[0]["error"]["message"]}}
    ]
    assert out[0]["error"]["message"].startswith("Parse error")
    assert code == 0


def test_a_request_the_recorded_host_cancelled_gets_its_progress_but_no_answer(tmp_path):
    cap = write_capture(
        tmp_path / "c.jsonl",
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25"})),
        ("c2s", req(2, "tools/call", {"name": "slow", "_meta": {"progressToken": 2}})),
        ("s2c", note("notifications/progress", {"progressToken": 2, "progress": 1})),
        ("c2s", note("notifications/cancelled", {"requestId": 2})),
        ("c2s", req(3, "tools/list")),
        ("s2c", res(3, {"tools": []})),
    )
    code, out, _ = serve(
        cap,
        INIT,
        req(20, "tools/call", {"name": "slow", "_meta": {"progressToken": "t"}}),
        req(21, "tools/list"),
    )
    assert [m.get("id", m.get("method")) for m in out] == [1, "notifications/progress", 21]
    assert out[1]["params"] == {"progressToken": "t", "progress": 1}
    assert code == 0


# -- bad captures ------------------------------------------------------------------------------------


def test_a_truncated_capture_is_served_as_far_as_it_goes_with_a_warning_and_exit_1(tmp_path):
    data = (CAPTURES / "sdk-stdio-legacy.jsonl").read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data[: len(data) // 2])
    code, out, err = serve(torn, INIT, req(2, "tools/list"))
    assert "torn last line" in err
    assert out[0]["result"]["serverInfo"]["name"] == "mcptrace-fixture"
    assert out[1]["result"]["tools"]
    assert code == 1


def test_a_request_the_recording_never_answered_gets_an_error_saying_so(tmp_path):
    cap = write_capture(
        tmp_path / "u.jsonl",
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25"})),
        ("c2s", req(2, "tools/list")),
    )
    code, out, err = serve(cap, INIT, req(2, "tools/list"))
    assert "never answered tools/list (line 4)" in err
    assert out[1]["error"]["code"] == -32603
    assert "the capture ends before the server answered" in out[1]["error"]["message"]
    assert code == 1


def test_a_capture_where_nothing_was_answered_has_nothing_to_serve(tmp_path):
    cap = write_capture(tmp_path / "n.jsonl", ("c2s", INIT))
    code, out, err = serve(cap)
    assert code == 2 and out == []
    assert err.endswith("the recorded server answered no request, so there is nothing to serve\n")


@pytest.mark.parametrize("content", [b"plain text\n", b"\x00\x01\x02", b'{"not": "mcp"}\n'])
def test_a_foreign_file_is_refused_in_one_line(tmp_path, content):
    path = tmp_path / "foreign"
    path.write_bytes(content)
    code, out, err = serve(path)
    assert code == 2 and out == [] and err.count("\n") == 1 and err.startswith("mcptrace: error: ")


@pytest.mark.parametrize("listen", ["nonsense", "127.0.0.1:99999", "host:port"])
def test_a_bad_listen_address_is_a_usage_error(listen):
    code, _, err = serve(CAPTURES / "sdk-stdio-legacy.jsonl", extra=("--listen", listen))
    assert code == 2 and "--listen" in err and err.count("\n") == 1
