"""The capture record model at the read boundary: which validation keeps the read path fastest.

Run: python tests/bench/bench_record_model.py [--records N]

Prints, measured side by side in one run (compare the ratios, the machines are noisy), records/s of
`tracer.capture.read_capture` on plain stdio message records (the fast path) and on HTTP message
records (the general path, where the model's checks run), and the cost of validating the same
envelope members with the hand-written checks (tracer/recordmodel.py), a pydantic model and, when
it is importable, a msgspec Struct (msgspec is not a dependency: run this with an interpreter that
has it to see its figure).
"""

import argparse
import io
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tracer.capture import read_capture
from tracer.recordmodel import check_envelope

TEXT = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"q":"hello"}}}'
PLAIN = {
    "type": "message",
    "seq": 1,
    "t_ns": 1_780_000_000_000_000_000,
    "dir": "c2s",
    "transport": "stdio",
    "conn": "0",
    "text": TEXT,
}
HTTP = {
    **PLAIN,
    "transport": "http",
    "conn": "127.0.0.1→h/mcp",
    "http": {
        "method": "POST",
        "url": "http://h/mcp",
        "flow": "f-1",
        "status": 200,
        "req_headers": [
            ["content-type", "application/json"],
            ["accept", "application/json, text/event-stream"],
            ["mcp-protocol-version", "2026-07-28"],
            ["mcp-method", "tools/call"],
        ],
        "request_t_ns": 1_780_000_000_000_000_000,
        "content_type": "application/json",
        "resp_headers": [["content-type", "application/json"]],
    },
}


def _rate(fn, n: int) -> float:
    best = 0.0
    for _ in range(3):
        t = time.perf_counter()
        fn()
        best = max(best, n / (time.perf_counter() - t))
    return best


def _file(rec: dict, n: int) -> bytes:
    line = orjson.dumps(rec) + b"\n"
    return b'{"type":"header","format":"mcptrace","version":1,"t_ns":1}\n' + line * n


def pydantic_check():
    from typing import Annotated

    from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

    I64 = Annotated[StrictInt, Field(ge=-(1 << 63), le=(1 << 63) - 1)]
    Pair = tuple[StrictStr, StrictStr]

    class Http(BaseModel):
        model_config = ConfigDict(extra="allow")
        method: StrictStr | None = None
        url: StrictStr | None = None
        status: I64 | None = None
        flow: StrictStr | I64 | None = None
        content_type: StrictStr | None = None
        request_t_ns: I64 | None = None
        req_headers: list[Pair] | None = None
        resp_headers: list[Pair] | None = None

    class Envelope(BaseModel):
        model_config = ConfigDict(extra="allow")
        transport: StrictStr = "stdio"
        conn: StrictStr | I64 = "0"
        offset: Annotated[StrictInt, Field(ge=0, le=(1 << 63) - 1)] | None = None
        eol: StrictBool = True
        dir_inferred: StrictBool = False
        http: Http | None = None

    return Envelope.model_validate


def msgspec_check():
    try:
        import msgspec
    except ImportError:
        return None

    class Http(msgspec.Struct, forbid_unknown_fields=False):
        method: str | None = None
        url: str | None = None
        status: int | None = None
        flow: str | int | None = None
        content_type: str | None = None
        request_t_ns: int | None = None
        req_headers: list[tuple[str, str]] | None = None
        resp_headers: list[tuple[str, str]] | None = None

    class Envelope(msgspec.Struct, forbid_unknown_fields=False):
        transport: str = "stdio"
        conn: str | int = "0"
        offset: int | None = None
        eol: bool = True
        dir_inferred: bool = False
        http: Http | None = None

    convert = msgspec.convert
    return lambda obj: convert(obj, Envelope)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=200_000)
    n = p.parse_args().records
    plain, http = _file(PLAIN, n), _file(HTTP, n)
    r_plain = _rate(lambda: sum(1 for _ in read_capture(io.BytesIO(plain))), n)
    r_http = _rate(lambda: sum(1 for _ in read_capture(io.BytesIO(http))), n)
    print(f"read_capture, plain stdio messages (fast path): {r_plain:12,.0f} records/s")
    print(f"read_capture, HTTP messages (general path):     {r_http:12,.0f} records/s")
    objs = [orjson.loads(orjson.dumps(HTTP)) for _ in range(min(n, 50_000))]
    m = len(objs)
    checks: list[tuple[str, Any]] = [
        ("hand-written (tracer/recordmodel.py)", check_envelope),
        ("pydantic 2 model", pydantic_check()),
    ]
    ms = msgspec_check()
    if ms is not None:
        checks.append(("msgspec Struct (convert)", ms))
    base = None
    for name, fn in checks:
        rate = _rate(lambda fn=fn: [fn(o) for o in objs], m)
        base = base or rate
        print(
            f"envelope check of an HTTP record, {name:<38} {rate:12,.0f} /s  ({base / rate:4.1f}x the time)"
        )
    if ms is None:
        print("(msgspec not importable here: run with an interpreter that has it for its figure)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
