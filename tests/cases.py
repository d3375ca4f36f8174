"""Build records from the mini-sessions of fixtures/rules/<ID>.yaml (and tests that want the same).

A case lists messages in wire order; each entry is one of:
  c2s: <JSON value>        host -> server message (serialised compactly)
  s2c: <JSON value>        server -> host message
  c2s_raw / s2c_raw: str   exact bytes (UTF-8) of the frame, for malformed input
  c2s_b64 / s2c_b64: str   exact bytes, base64 (for invalid UTF-8)
  event: {event: closed}   an event record;  stderr: "text"  a stderr line (stderr_b64: exact bytes)
  http_only: {method, url, status, flow, req_headers, resp_headers...}   an HTTP exchange without a
                           JSON-RPC body (an `http` record); `body: "text"` is its body
Optional keys per entry: t_ms (time since the start), conn, transport, http, sse, offset, eol
(`http` and `sse` also on events: the HTTP door's stream-open / sse-event / stream-closed).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml

from tracer.model import Direction, Record, RecordType

ROOT = Path(__file__).resolve().parent.parent
RULE_CASES = ROOT / "fixtures" / "rules"
T0 = 1_780_000_000_000_000_000


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def build_records(entries: list[dict], default_transport: str = "stdio") -> list[Record]:
    out: list[Record] = []
    for i, e in enumerate(entries, 1):
        t_ns = T0 + int(float(e.get("t_ms", i)) * 1_000_000)
        common = dict(
            seq=i,
            t_ns=t_ns,
            conn=str(e.get("conn", "c1")),
            transport=e.get("transport", default_transport),
            line=i,
            source="case",
        )
        if "event" in e:
            out.append(
                Record(RecordType.EVENT, data=e["event"], http=e.get("http"), sse=e.get("sse"), **common)
            )
            continue
        if "stderr" in e or "stderr_b64" in e:
            raw = e["stderr"].encode() if "stderr" in e else base64.b64decode(e["stderr_b64"])
            out.append(Record(RecordType.STDERR, raw=raw, offset=e.get("offset"), **common))
            continue
        if "http_only" in e:
            out.append(
                Record(RecordType.HTTP, http=e["http_only"], raw=e.get("body", "").encode("utf-8"), **common)
            )
            continue
        for d in ("c2s", "s2c"):
            if d in e:
                raw = dumps(e[d])
            elif f"{d}_raw" in e:
                raw = e[f"{d}_raw"].encode("utf-8")
            elif f"{d}_b64" in e:
                raw = base64.b64decode(e[f"{d}_b64"])
            else:
                continue
            out.append(
                Record(
                    RecordType.MESSAGE,
                    dir=Direction(d),
                    raw=raw,
                    http=e.get("http"),
                    sse=e.get("sse"),
                    offset=e.get("offset"),
                    eol=e.get("eol", True),
                    **common,
                )
            )
            break
        else:
            raise ValueError(f"case entry {i} has no message: {e}")
    return out


def load_rule_cases() -> list[tuple[str, dict]]:
    cases = []
    for path in sorted(RULE_CASES.glob("MCP*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in doc.get("cases", []):
            cases.append((doc["rule"], case))
    return cases


def initialize(id_: int | str = 1, client: str = "t", version: str = "2025-11-25") -> dict:
    """A legacy client's `initialize` request."""
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}
    return {"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": params}


def initialize_result(
    id_: int | str = 1, capabilities: dict | None = None, version: str = "2025-11-25"
) -> dict:
    """A server's answer to `initialize` (capabilities: tools, unless given)."""
    caps = {"tools": {}} if capabilities is None else capabilities
    result = {"protocolVersion": version, "capabilities": caps, "serverInfo": {"name": "s", "version": "1"}}
    return {"jsonrpc": "2.0", "id": id_, "result": result}


# A legacy 2025-11-25 handshake as case entries (build_records): initialize, its result, initialized.
LEGACY_HANDSHAKE: list[dict] = [
    {"c2s": initialize(0, "c")},
    {"s2c": initialize_result(0)},
    {"c2s": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
]
