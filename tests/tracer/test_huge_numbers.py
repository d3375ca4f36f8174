"""Integers beyond 64 bits where the analysis keys on them: a progress token, a cancel's
`requestId`, an id. orjson reads such an integer as a rounded float, so 18446744073709551617 and
18446744073709551618 were one token: two requests' progress was judged one request's (false
MCP511 reused, MCP513 after response, MCP514 not increasing) and the cancel named "1.8446744073709552e+19"."""

from __future__ import annotations

import pytest

from tests.replay_support import write_capture
from tracer.classify import classify_raw
from tracer.cli import main
from tracer.http.conns import answers

A, B = 2**64 + 1, 2**64 + 2
INIT = [
    (
        "c2s",
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}',
    ),
    (
        "s2c",
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},'
        b'"serverInfo":{"name":"s","version":"1"}}}',
    ),
    ("c2s", b'{"jsonrpc":"2.0","method":"notifications/initialized"}'),
]


def _call(i: int, token: int) -> tuple[str, bytes]:
    text = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":%d}}}'
    return "c2s", (text % (i, token)).encode()


def _progress(token: int, n: int) -> tuple[str, bytes]:
    text = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":%d}}'
    return "s2c", (text % (token, n)).encode()


def _result(i: int) -> tuple[str, bytes]:
    return "s2c", b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % i


SESSION = [
    *INIT,
    _call(1, A),
    _call(2, B),
    _progress(A, 1),
    _progress(B, 1),
    _result(1),
    _progress(B, 2),  # B's request (id 2) is still running
    ("c2s", b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}' % A),
    ("c2s", b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}' % A),
    _result(2),
    ("s2c", b'{"jsonrpc":"2.0","id":%d,"result":{"tools":[]}}' % A),
]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_tokens_and_request_ids_beyond_64_bits_stay_apart(tmp_path, capsys, jobs):
    path = write_capture(tmp_path / "huge.jsonl", *SESSION)
    code = main(["lint", "--no-progress", "--jobs", jobs, str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "0 errors, 0 warnings, 0 infos" in out, out


def test_a_cancel_of_an_unknown_huge_id_names_it_exactly(tmp_path, capsys):
    cancel = ("c2s", b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}' % B)
    path = write_capture(tmp_path / "cancel.jsonl", *INIT, cancel)
    main(["lint", "--no-progress", "--fail-on", "never", str(path)])
    out = capsys.readouterr().out
    assert f"MCP502 [error] the client never sent a request with id {B} " in out, out


def test_keyed_values_are_read_exactly_and_others_keep_orjsons_speed():
    c = classify_raw(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d}}' % A)
    assert c.obj["params"]["progressToken"] == A and type(c.obj["params"]["progressToken"]) is int
    meta = classify_raw(b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"progressToken":%d}}}' % B)
    assert meta.obj["params"]["_meta"]["progressToken"] == B
    sub = b'{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":%d}}}' % A
    assert classify_raw(sub).obj["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == A
    assert type(classify_raw(b'{"jsonrpc":"2.0","id":1,"result":{"v":1.5}}').obj["result"]["v"]) is float


def test_the_http_recorder_pairs_an_answer_by_the_same_id_key_as_the_analysis():
    request = classify_raw(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert answers(b'{"jsonrpc":"2.0","id":1.0,"result":{}}', request.idkey)  # 1.0 is the JSON number 1
    assert not answers(b'{"jsonrpc":"2.0","id":"1","result":{}}', request.idkey)
