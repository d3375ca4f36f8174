"""Lint throughput and memory on a generated 1,000,000-message capture, beside a baseline.

Run: python tests/bench/bench_lint.py [--messages N] [--keep]

Prints, measured side by side in one run (these machines are noisy, so compare ratios):
  - mcptrace lint throughput (messages/s) on one core, with the selected rules (all by default;
    `--select` to narrow), and its peak RSS;
  - peak RSS on a capture a quarter of the size (memory must stay flat as the capture grows);
  - a baseline: `json.loads` + the `jsonschema` package validating each message against the official
    schema (on a sample; it is far slower).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

T0 = 1_780_000_000_000_000_000
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.0"},
}
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "bench-server", "version": "1.0"}}
TOOLS = [{"name": f"tool_{i}", "description": "A tool", "inputSchema": {"type": "object", "properties": {
    "q": {"type": "string"}}}} for i in range(5)]


def legacy_session(conn: str, n_calls: int, rnd: random.Random):
    yield "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": True}},
        "clientInfo": {"name": "bench-client", "version": "1.0"}}}
    yield "s2c", {"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}, "logging": {}},
        "serverInfo": {"name": "bench-server", "version": "1.0"}}}
    yield "c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}
    yield "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    yield "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}}
    for i in range(n_calls):
        yield "c2s", {"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": {
            "name": f"tool_{i % 5}", "arguments": {"q": "x" * rnd.randint(5, 60)}}}
        yield "s2c", {"jsonrpc": "2.0", "id": i + 2, "result": {
            "content": [{"type": "text", "text": "result " * rnd.randint(1, 20)}], "isError": False}}


def modern_session(conn: str, n_calls: int, rnd: random.Random):
    yield "c2s", {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    yield "s2c", {"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
        "serverInfo": {"name": "bench-server", "version": "1.0"}, "ttlMs": 60000, "cacheScope": "public",
        "_meta": SERVER_META}}
    for i in range(n_calls):
        yield "c2s", {"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": {
            "name": f"tool_{i % 5}", "arguments": {"q": "y" * rnd.randint(5, 60)}, "_meta": META}}
        yield "s2c", {"jsonrpc": "2.0", "id": i + 2, "result": {
            "resultType": "complete", "content": [{"type": "text", "text": "ok " * rnd.randint(1, 20)}],
            "_meta": SERVER_META}}


def generate(path: Path, messages: int, seed: int = 7) -> int:
    """A realistic mix: sessions of both eras, 20-400 messages each, each closed by an event."""
    rnd = random.Random(seed)
    seq = 0
    t = T0
    written = 0
    session = 0
    with open(path, "wb") as fh:
        fh.write(orjson.dumps({"type": "header", "format": "mcptrace", "version": 1, "tool": "bench",
                               "transport": "stdio", "t_ns": T0}) + b"\n")
        while written < messages:
            session += 1
            conn = f"c{session}"
            n_calls = rnd.randint(8, 200)
            gen = legacy_session if session % 2 else modern_session
            for d, obj in gen(conn, n_calls, rnd):
                seq += 1
                t += rnd.randint(50_000, 5_000_000)
                fh.write(orjson.dumps({"type": "message", "seq": seq, "t_ns": t, "dir": d, "transport": "stdio",
                                       "conn": conn, "text": orjson.dumps(obj).decode()}) + b"\n")
                written += 1
                if written >= messages:
                    break
            seq += 1
            fh.write(orjson.dumps({"type": "event", "seq": seq, "t_ns": t, "transport": "stdio", "conn": conn,
                                   "data": {"event": "closed"}}) + b"\n")
    return written


LINT_CHILD = r"""
import resource, sys, time
sys.path.insert(0, {root!r})
from tracer.analyser import RuleSet
from tracer.lint import Reporter, lint_paths
from tracer.rules.registry import select_rules
class Null(Reporter):
    pass
rules = RuleSet(select_rules({select!r} or None))
t = time.perf_counter()
stats = lint_paths([{path!r}], rules, Null(), progress=False)
dt = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{{stats.messages}} {{dt}} {{rss}} {{stats.findings}}")
"""


def run_lint(path: Path, select: list[str] | None) -> tuple[int, float, float, int]:
    code = LINT_CHILD.format(root=str(ROOT), path=str(path), select=select)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    n, dt, rss, findings = out.split()
    return int(n), float(dt), float(rss), int(findings)


def baseline(path: Path, sample: int) -> float:
    """json.loads + jsonschema (the reference Python validator) against the official schema."""
    import jsonschema

    schemas = {}
    for v in ("2025-11-25", "2026-07-28"):
        src = ROOT / "tracer" / "schemas" / v / "schema.json"
        if not src.exists():
            src = ROOT.parent / "shared" / "spec" / v / "schema.json"
        doc = json.loads(src.read_text())
        defs = doc.get("$defs") or doc.get("definitions")
        key = "$defs" if "$defs" in doc else "definitions"
        schemas[v] = (doc, defs, key)
    validators = {}

    def validator(v: str, name: str):
        k = (v, name)
        if k not in validators:
            doc, _, key = schemas[v]
            sub = {"$ref": f"#/{key}/{name}", key: doc[key]}
            if "$schema" in doc:
                sub["$schema"] = doc["$schema"]
            validators[k] = jsonschema.validators.validator_for(sub)(sub)
        return validators[k]

    lines = []
    with open(path, "rb") as fh:
        fh.readline()
        for line in fh:
            rec = json.loads(line)
            if rec["type"] == "message":
                lines.append(rec["text"])
            if len(lines) >= sample:
                break
    pending = {}
    t = time.perf_counter()
    for text in lines:
        obj = json.loads(text)
        modern = "_meta" in json.dumps(obj.get("params", {})) or "resultType" in obj.get("result", {})
        v = "2026-07-28" if modern else "2025-11-25"
        method = obj.get("method")
        if method == "tools/call":
            name = "CallToolRequest"
        elif method == "tools/list":
            name = "ListToolsRequest"
        elif method == "initialize":
            name = "InitializeRequest"
        elif method == "server/discover":
            name = "DiscoverRequest"
        elif method:
            name = "JSONRPCNotification"
        else:
            m = pending.pop(obj.get("id"), "tools/call")
            name = {"tools/call": "CallToolResult", "tools/list": "ListToolsResult",
                    "initialize": "InitializeResult", "server/discover": "DiscoverResult"}.get(m, "Result")
            obj = obj.get("result", {})
        if method and "id" in obj:
            pending[obj["id"]] = method
        try:
            list(validator(v, name).iter_errors(obj))
        except Exception:
            pass
    return len(lines) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--select", action="append", help="rule ids/prefixes (default: all rules)")
    ap.add_argument("--baseline-sample", type=int, default=5_000)
    ap.add_argument("--keep", action="store_true", help="keep the generated captures")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcptrace-bench-"))
    big, small = tmp / "big.jsonl", tmp / "small.jsonl"
    t = time.perf_counter()
    n = generate(big, args.messages)
    generate(small, args.messages // 4)
    print(f"generated {n:,} messages ({big.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f}s")

    n_big, dt_big, rss_big, findings = run_lint(big, args.select)
    n_small, dt_small, rss_small, _ = run_lint(small, args.select)
    base = baseline(big, args.baseline_sample)
    rate = n_big / dt_big
    print(f"mcptrace lint ({'all rules' if not args.select else ','.join(args.select)}): "
          f"{rate:,.0f} messages/s ({n_big:,} in {dt_big:.1f}s), {findings} findings")
    print(f"peak RSS: {rss_big:.0f} MB at {n_big:,} messages, {rss_small:.0f} MB at {n_small:,} "
          f"(growth x{rss_big / rss_small:.2f} for x{n_big / max(n_small, 1):.0f} messages)")
    print(f"baseline json.loads + jsonschema: {base:,.0f} messages/s (sample of {args.baseline_sample:,})")
    print(f"ratio lint / baseline: {rate / base:.1f}x")
    if not args.keep:
        for p in (big, small):
            os.unlink(p)
        os.rmdir(tmp)
    else:
        print(f"captures kept in {tmp}")


if __name__ == "__main__":
    main()
