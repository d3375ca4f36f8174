"""Generate large inputs in the other formats the viewer and lint read (host log, NDJSON, HAR) from
a generated capture (tests/gencapture.py), for the lazy-index equivalence test and bench_view.

Each keeps the capture's traffic: a host log writes every message as Claude Desktop does (`TS
[info] [gen] Message from client: {...}`), with its stderr lines as host text and a restart now and
then; NDJSON writes the bare messages; HAR writes one POST entry per client message, the server's
answer as its body (a notification gets a 202); a mitmproxy flow file likewise, one flow each.

    python -m tests.geninputs CAPTURE.jsonl OUT --format hostlog|ndjson|har|mitm

(as a module: run as a script, tests/ comes first on the path and its tracer/ test package hides
the real tracer package.)
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime

import orjson

RESTART_EVERY = 50_000  # messages between two "Initializing server..." lines of the host log


def _iso(t_ns: int) -> str:
    dt = datetime.fromtimestamp(t_ns // 1_000_000_000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{(t_ns // 1_000_000) % 1000:03d}Z"


def _records(capture: str, swap_every: int = 0):
    """The capture's message and stderr records; with `swap_every`, every so many requests are
    logged just after their answer (two logging threads' skew, which readers settle)."""
    held: dict | None = None
    n = 0
    with open(capture, "rb") as fh:
        for line in fh:
            rec = orjson.loads(line)
            if rec.get("type") not in ("message", "stderr"):
                continue
            if swap_every and held is None and rec["type"] == "message" and rec["dir"] == "c2s":
                obj = orjson.loads(rec["text"])
                if "id" in obj and "method" in obj:
                    n += 1
                    if n % swap_every == 0:
                        held = rec
                        held["_id"] = obj["id"]
                        continue
            yield rec
            if (
                held is not None
                and rec["type"] == "message"
                and orjson.loads(rec["text"]).get("id") == held["_id"]
            ):
                del held["_id"]
                yield held
                held = None
    if held is not None:
        del held["_id"]
        yield held


def hostlog(capture: str, out: str, swap_every: int = 0) -> None:
    with open(out, "wb") as fh:
        n = 0
        buf: list[bytes] = []
        for rec in _records(capture, swap_every):
            ts = _iso(rec["t_ns"]).encode()
            if n % RESTART_EVERY == 0:
                buf.append(ts + b" [info] [gen] Initializing server...")
            if rec["type"] == "stderr":
                buf.append(ts + b" [gen] [info] " + rec["text"].encode())
                continue
            n += 1
            who = b"client" if rec["dir"] == "c2s" else b"server"
            buf.append(ts + b" [info] [gen] Message from " + who + b": " + rec["text"].encode())
            if len(buf) >= 4096:
                fh.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            fh.write(b"\n".join(buf) + b"\n")


def ndjson(capture: str, out: str, swap_every: int = 0) -> None:
    with open(out, "wb") as fh:
        buf = [rec["text"].encode() for rec in _records(capture, swap_every) if rec["type"] == "message"]
        fh.write(b"\n".join(buf) + b"\n")


def har(capture: str, out: str, swap_every: int = 0) -> None:
    """One entry per client message; the answer (a response to its id) is its body."""
    entries: list[dict] = []
    open_req: dict = {}
    for rec in _records(capture):
        if rec["type"] != "message":
            continue
        obj = orjson.loads(rec["text"])
        if rec["dir"] == "c2s":
            entry = {
                "startedDateTime": _iso(rec["t_ns"]),
                "time": 1,
                "request": {
                    "method": "POST",
                    "url": "http://127.0.0.1:8000/mcp",
                    "headers": [{"name": "Content-Type", "value": "application/json"}],
                    "postData": {"mimeType": "application/json", "text": rec["text"]},
                },
                "response": {"status": 202, "headers": [], "content": {"size": 0, "text": ""}},
                "timings": {"send": 0, "wait": 1, "receive": 0},
            }
            entries.append(entry)
            if "id" in obj:
                open_req[obj["id"]] = entry
        elif "id" in obj and obj["id"] in open_req:
            entry = open_req.pop(obj["id"])
            entry["response"] = {
                "status": 200,
                "headers": [{"name": "Content-Type", "value": "application/json"}],
                "content": {"mimeType": "application/json", "text": rec["text"]},
            }
    with open(out, "wb") as fh:
        fh.write(orjson.dumps({"log": {"version": "1.2", "creator": {"name": "gen"}, "entries": entries}}))


def mitm(capture: str, out: str, swap_every: int = 0) -> None:
    """One mitmproxy flow per client message (a `mitmdump -w` file), its answer as the response,
    times from the capture; every 50th flow's client connection closes after it."""
    from mitmproxy import io as mitm_io

    from tests.addon_helpers import post

    flows: list = []
    open_req: dict = {}
    conn = None
    for rec in _records(capture):
        if rec["type"] != "message":
            continue
        obj = orjson.loads(rec["text"])
        t = rec["t_ns"] / 1e9
        if rec["dir"] == "c2s":
            f = post(rec["text"].encode(), resp=b"", status=202, resp_headers=())
            if conn is None or len(flows) % 50 == 0:
                conn = f.client_conn
                conn.timestamp_end = t + 0.5
            f.client_conn = conn
            f.request.timestamp_start = f.request.timestamp_end = t
            f.response.timestamp_start = f.response.timestamp_end = t + 0.0005
            flows.append(f)
            if "id" in obj:
                open_req[obj["id"]] = f
        elif "id" in obj and obj["id"] in open_req:
            f = open_req.pop(obj["id"])
            f.response.status_code = 200
            f.response.headers["content-type"] = "application/json"
            f.response.content = rec["text"].encode()
            f.response.timestamp_start = f.response.timestamp_end = t
    with open(out, "wb") as fh:
        w = mitm_io.FlowWriter(fh)
        for f in flows:
            w.add(f)


GENERATORS = {"hostlog": hostlog, "ndjson": ndjson, "har": har, "mitm": mitm}


def generate(capture: str, out: str | os.PathLike, fmt: str, swap_every: int = 0) -> None:
    GENERATORS[fmt](capture, os.fspath(out), swap_every)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture")
    ap.add_argument("out")
    ap.add_argument("--format", choices=sorted(GENERATORS), required=True)
    ap.add_argument("--swap-every", type=int, default=0, help="log every Nth request after its answer")
    a = ap.parse_args()
    generate(a.capture, a.out, a.format, a.swap_every)
