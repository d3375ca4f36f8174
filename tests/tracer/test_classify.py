"""classify_raw sorts one message on its own into request / notification / result / error / invalid /
batch, with JSON-RPC 2.0's member rules and MCP's stricter ids, and never raises on bad input."""

from __future__ import annotations

import pytest

from tracer.classify import REASONS, classify_common, classify_raw
from tracer.model import Kind

R, N, OK, ERR, BAD, BATCH = (
    Kind.REQUEST,
    Kind.NOTIFICATION,
    Kind.RESULT,
    Kind.ERROR,
    Kind.INVALID,
    Kind.BATCH,
)

# (case name, raw bytes, kind, problem code for invalid ones, expected idkey (None: not checked))
CASES = [
    # -- JSON-RPC 2.0 specification, section 7 examples ------------------------------------------
    (
        "spec: call with positional params",
        b'{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}',
        R,
        None,
        ("n", 1),
    ),
    (
        "spec: its result (a number: MCP114 judges the shape)",
        b'{"jsonrpc": "2.0", "result": 19, "id": 1}',
        OK,
        None,
        ("n", 1),
    ),
    (
        "spec: call with named params",
        b'{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}',
        R,
        None,
        ("n", 3),
    ),
    (
        "spec: notification with params",
        b'{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}',
        N,
        None,
        None,
    ),
    ("spec: notification without params", b'{"jsonrpc": "2.0", "method": "foobar"}', N, None, None),
    (
        "spec: method not found error with a string id",
        b'{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}',
        ERR,
        None,
        ("s", "1"),
    ),
    (
        "spec: invalid JSON",
        b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]',
        BAD,
        "not-json",
        None,
    ),
    (
        "spec: method that is not a string",
        b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}',
        BAD,
        "method-not-string",
        None,
    ),
    (
        "spec: parse error answered with a null id",
        b'{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}',
        ERR,
        None,
        None,
    ),
    (
        "spec: invalid JSON inside a batch",
        b'[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"}, {"jsonrpc": "2.0", "method"]',
        BAD,
        "not-json",
        None,
    ),
    # -- classification by members ----------------------------------------------------------------
    ("MCP request", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', R, None, ("n", 1)),
    ("MCP notification", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', N, None, None),
    ("empty result", b'{"jsonrpc":"2.0","id":"a","result":{}}', OK, None, ("s", "a")),
    (
        "error without an id (unreadable request id)",
        b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}',
        ERR,
        None,
        None,
    ),
    (
        "method wins over a stray result member",
        b'{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}',
        R,
        None,
        ("n", 1),
    ),
    (
        "result and error together",
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}',
        BAD,
        "result-and-error",
        None,
    ),
    ("neither method nor result nor error", b'{"jsonrpc":"2.0","id":3}', BAD, "unclassifiable", None),
    ("jsonrpc missing", b'{"id":1,"method":"tools/list"}', BAD, "bad-jsonrpc", None),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', BAD, "bad-jsonrpc", None),
    ("jsonrpc as the number 2.0", b'{"jsonrpc":2.0,"id":1,"method":"tools/list"}', BAD, "bad-jsonrpc", None),
    ("a bare string", b'"tools/list"', BAD, "not-object", None),
    ("a number", b"42", BAD, "not-object", None),
    ("null", b"null", BAD, "not-object", None),
    # -- MCP's stricter ids -------------------------------------------------------------------------
    ("request id null", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', BAD, "null-id", None),
    ("request id 1.5", b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', BAD, "bad-id", None),
    ("request id true", b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', BAD, "bad-id", None),
    ("request id {}", b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}', BAD, "bad-id", None),
    ("request id []", b'{"jsonrpc":"2.0","id":[],"method":"tools/list"}', BAD, "bad-id", None),
    (
        "request id 1.0 is the integer 1",
        b'{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}',
        R,
        None,
        ("n", 1),
    ),
    (
        "request id 1e3 is the integer 1000",
        b'{"jsonrpc":"2.0","id":1e3,"method":"tools/list"}',
        R,
        None,
        ("n", 1000),
    ),
    ("request id -0", b'{"jsonrpc":"2.0","id":-0,"method":"ping"}', R, None, ("n", 0)),
    (
        "request id beyond 64 bits stays exact",
        b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}',
        R,
        None,
        ("n", 18446744073709551617),
    ),
    (
        "request id beyond 64 bits, negative",
        b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}',
        R,
        None,
        ("n", -9223372036854775809),
    ),
    ("request id overflowing a double", b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', BAD, "bad-id", None),
    (
        "string id that looks like a number",
        b'{"jsonrpc":"2.0","id":"1","method":"ping"}',
        R,
        None,
        ("s", "1"),
    ),
    (
        "lone surrogate escape in a string id",
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        R,
        None,
        ("s", "\ud800"),
    ),
    ("result with a null id", b'{"jsonrpc":"2.0","id":null,"result":{}}', BAD, "null-id", None),
    ("result without an id", b'{"jsonrpc":"2.0","result":{}}', BAD, "bad-id", None),
    ("result id 2.5", b'{"jsonrpc":"2.0","id":2.5,"result":{}}', BAD, "bad-id", None),
    (
        "error id false",
        b'{"jsonrpc":"2.0","id":false,"error":{"code":-32600,"message":"x"}}',
        BAD,
        "bad-id",
        None,
    ),
    (
        "error id 7.0 is the integer 7",
        b'{"jsonrpc":"2.0","id":7.0,"error":{"code":-32603,"message":"x"}}',
        ERR,
        None,
        ("n", 7),
    ),
    # -- bytes, text and nesting --------------------------------------------------------------------
    (
        "bytes that are not UTF-8",
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"caf\xe9"}}',
        BAD,
        "not-utf8",
        None,
    ),
    (
        "a UTF-8 byte order mark",
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}',
        BAD,
        "not-json",
        None,
    ),
    ("whitespace around the object", b' \t {"jsonrpc":"2.0","id":1,"method":"ping"} \r\n', R, None, ("n", 1)),
    (
        "a carriage return before the newline (stdio CRLF)",
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\r',
        N,
        None,
        None,
    ),
    ("NaN is not JSON", b'{"jsonrpc":"2.0","id":1,"result":{"score":NaN}}', BAD, "not-json", None),
    ("Infinity is not JSON", b'{"jsonrpc":"2.0","id":1,"result":{"score":-Infinity}}', BAD, "not-json", None),
    ("an empty frame", b"", BAD, "not-json", None),
    ("a whitespace-only frame", b"   \t", BAD, "not-json", None),
    ("a cut-short message", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', BAD, "not-json", None),
    ("trailing garbage", b'{"jsonrpc":"2.0","id":1,"method":"ping"} x', BAD, "not-json", None),
    (
        "nesting 2,000 levels deep is still parsed",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"deep":'
        + b"[" * 2000
        + b"]" * 2000
        + b"}}",
        R,
        None,
        ("n", 1),
    ),
    (
        "nesting 100,000 levels deep is invalid, not a crash",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"deep":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}",
        BAD,
        "too-deep",
        None,
    ),
    ("100,000 unclosed brackets", b"[" * 100_000, BAD, "too-deep", None),
]


@pytest.mark.parametrize(
    ("raw", "kind", "problem", "idkey"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_classify_raw_sorts_each_message_by_its_members(raw, kind, problem, idkey):
    c = classify_raw(raw)
    assert c.kind is kind
    assert c.problem == problem
    if problem is not None:
        assert c.reason, "an invalid message says why"
        assert problem in REASONS, "every problem code maps to the rule that reports it"
    if idkey is not None:
        assert c.idkey == idkey


def test_classify_raw_accepts_text_as_well_as_bytes():
    c = classify_raw('{"jsonrpc":"2.0","id":"é","method":"ping"}')
    assert (c.kind, c.method, c.idkey) == (Kind.REQUEST, "ping", ("s", "é"))


def test_integral_float_id_keeps_its_float_form_but_pairs_as_the_integer():
    c = classify_raw(b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}')
    assert type(c.id) is float and c.idkey == classify_raw(b'{"jsonrpc":"2.0","id":1,"result":{}}').idkey


def test_big_integer_ids_beyond_64_bits_do_not_collapse_into_one():
    a = classify_raw(b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}')
    b = classify_raw(b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}')
    assert a.idkey != b.idkey
    assert type(b.id) is int


def test_numbers_and_strings_with_the_same_text_are_different_ids():
    n = classify_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    s = classify_raw(b'{"jsonrpc":"2.0","id":"1","method":"ping"}')
    assert n.idkey != s.idkey


def test_request_fields_are_extracted():
    c = classify_raw(b'{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"echo"}}')
    assert (c.method, c.id) == ("tools/call", "call-1")
    assert c.obj["params"] == {"name": "echo"}


def test_the_reason_names_what_is_wrong():
    assert "not UTF-8" in classify_raw(b'{"a":"\xff"}').reason
    assert "null" in classify_raw(b'{"jsonrpc":"2.0","id":null,"method":"x"}').reason
    assert "1.5" in classify_raw(b'{"jsonrpc":"2.0","id":1.5,"method":"x"}').reason
    assert "boolean" in classify_raw(b'{"jsonrpc":"2.0","id":true,"method":"x"}').reason
    assert "both result and error" in classify_raw(b'{"jsonrpc":"2.0","id":1,"result":{},"error":{}}').reason
    assert "empty" in classify_raw(b"").reason


# -- batches ---------------------------------------------------------------------------------------


def test_spec_batch_members_are_classified_one_by_one():
    raw = (
        b'[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},'
        b' {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},'
        b' {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},'
        b' {"foo": "boo"},'
        b' {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},'
        b' {"jsonrpc": "2.0", "method": "get_data", "id": "9"}]'
    )
    c = classify_raw(raw)
    assert c.kind is Kind.BATCH
    assert [m.kind for m in c.members] == [R, N, R, BAD, R, R]
    assert c.members[3].problem == "bad-jsonrpc"
    assert [m.idkey for m in c.members if m.kind is R] == [("s", "1"), ("s", "2"), ("s", "5"), ("s", "9")]


def test_spec_batch_of_responses_is_classified():
    raw = (
        b'[{"jsonrpc": "2.0", "result": 7, "id": "1"},'
        b' {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},'
        b' {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"}]'
    )
    assert [m.kind for m in classify_raw(raw).members] == [OK, ERR, ERR]


def test_spec_empty_batch_is_a_batch_with_no_members():
    c = classify_raw(b"[]")
    assert c.kind is Kind.BATCH and c.members == []


def test_spec_batch_of_non_objects_has_invalid_members():
    c = classify_raw(b"[1,2,3]")
    assert [(m.kind, m.problem) for m in c.members] == [(BAD, "not-object")] * 3


def test_a_nested_array_inside_a_batch_is_an_invalid_member_not_a_batch():
    c = classify_raw(b'[[{"jsonrpc":"2.0","method":"x"}]]')
    assert c.kind is Kind.BATCH
    assert (c.members[0].kind, c.members[0].problem) == (BAD, "not-object")


def test_batch_members_keep_big_integer_ids_exact():
    c = classify_raw(
        b'[{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"},'
        b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}]'
    )
    assert [m.idkey for m in c.members] == [("n", 18446744073709551617), ("n", 1)]


@pytest.mark.parametrize(
    "raw",
    [c[1] for c in CASES]
    + [
        b'{"jsonrpc":"2.0","id":"7","method":"ping"}',
        b'{"jsonrpc":"2.0","id":true,"result":{}}',
        b'{"jsonrpc":"2.0","id":2.5,"result":{}}',
        b'{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}',
        b'{"jsonrpc":"2.0","method":"x","id":null}',
        b'{"jsonrpc":"2.0","method":1}',
        b'{"jsonrpc":2.0,"id":1}',
    ],
)
def test_the_fast_path_for_common_messages_classifies_exactly_like_the_general_one(raw):
    fast = classify_common(raw)
    if fast is not None:  # (None: the general path decides alone)
        c = classify_raw(raw)
        assert fast == (c.kind, c.obj, c.method, c.id, c.idkey)
        assert c.reason is None and c.problem is None and c.members is None
