"""Lint throughput and memory on a generated 1,000,000-message capture, beside a baseline.

Run: python tests/bench/bench_lint.py [--messages N] [--select IDS] [--issue2] [--keep]
     python tests/bench/bench_lint.py --against OTHER_TREE [--rounds 5] [--messages N]

Prints, measured side by side in one run (these machines are noisy, so compare ratios):
  - mcptrace lint throughput (messages/s) on one core, with the selected rules (all by default;
    `--select` to narrow), and its peak RSS;
  - the same with the official-schema rules (MCP150-MCP152) left out, and with only them: what the
    schema check costs per message, and what parse + classify + pair + era + schema alone reach;
  - peak RSS on a capture a quarter of the size (memory must stay flat as the capture grows);
  - with `--issue2`, also the rule families issue #2 sets its target for (>= 100,000 messages/s on
    one core): MCP1xx (the schema rules MCP150-MCP152 included), MCP2xx, MCP301-MCP315,
    MCP320-MCP321, MCP350-MCP361 and MCP401-MCP410, with and without the schema rules;
  - a baseline: `json.loads` + the `jsonschema` package validating each message of a sample against
    the same official definition mcptrace picks for it (picked before the clock starts, validators
    compiled before it too, so the baseline only parses and validates).
With --against, only this: lint throughput (CPU time, one core) of this tree and of another (a git
worktree of an earlier commit), alternated round by round, and the ratio of their medians.
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
TOOLS = [
    {
        "name": f"tool_{i}",
        "description": "A tool",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    for i in range(5)
]


def legacy_session(conn: str, n_calls: int, rnd: random.Random):
    yield (
        "c2s",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": {"name": "bench-client", "version": "1.0"},
            },
        },
    )
    yield (
        "s2c",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                "serverInfo": {"name": "bench-server", "version": "1.0"},
            },
        },
    )
    yield "c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}
    yield "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    yield "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}}
    for i in range(n_calls):
        yield (
            "c2s",
            {
                "jsonrpc": "2.0",
                "id": i + 2,
                "method": "tools/call",
                "params": {"name": f"tool_{i % 5}", "arguments": {"q": "x" * rnd.randint(5, 60)}},
            },
        )
        yield (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": i + 2,
                "result": {
                    "content": [{"type": "text", "text": "result " * rnd.randint(1, 20)}],
                    "isError": False,
                },
            },
        )


def modern_session(conn: str, n_calls: int, rnd: random.Random):
    yield "c2s", {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    yield (
        "s2c",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-server", "version": "1.0"},
                "ttlMs": 60000,
                "cacheScope": "public",
                "_meta": SERVER_META,
            },
        },
    )
    for i in range(n_calls):
        yield (
            "c2s",
            {
                "jsonrpc": "2.0",
                "id": i + 2,
                "method": "tools/call",
                "params": {
                    "name": f"tool_{i % 5}",
                    "arguments": {"q": "y" * rnd.randint(5, 60)},
                    "_meta": META,
                },
            },
        )
        yield (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": i + 2,
                "result": {
                    "resultType": "complete",
                    "content": [{"type": "text", "text": "ok " * rnd.randint(1, 20)}],
                    "_meta": SERVER_META,
                },
            },
        )


def generate(path: Path, messages: int, seed: int = 7) -> int:
    """A realistic mix: sessions of both eras, 20-400 messages each, each closed by an event."""
    rnd = random.Random(seed)
    seq = 0
    t = T0
    written = 0
    session = 0
    with open(path, "wb") as fh:
        fh.write(
            orjson.dumps(
                {
                    "type": "header",
                    "format": "mcptrace",
                    "version": 1,
                    "tool": "bench",
                    "transport": "stdio",
                    "t_ns": T0,
                }
            )
            + b"\n"
        )
        while written < messages:
            session += 1
            conn = f"c{session}"
            n_calls = rnd.randint(8, 200)
            gen = legacy_session if session % 2 else modern_session
            for d, obj in gen(conn, n_calls, rnd):
                seq += 1
                t += rnd.randint(50_000, 5_000_000)
                fh.write(
                    orjson.dumps(
                        {
                            "type": "message",
                            "seq": seq,
                            "t_ns": t,
                            "dir": d,
                            "transport": "stdio",
                            "conn": conn,
                            "text": orjson.dumps(obj).decode(),
                        }
                    )
                    + b"\n"
                )
                written += 1
                if written >= messages:
                    break
            seq += 1
            fh.write(
                orjson.dumps(
                    {
                        "type": "event",
                        "seq": seq,
                        "t_ns": t,
                        "transport": "stdio",
                        "conn": conn,
                        "data": {"event": "closed"},
                    }
                )
                + b"\n"
            )
    return written


LINT_CHILD = r"""
import resource, sys, time
sys.path.insert(0, {root!r})
from tracer.analyser import RuleSet
from tracer.lint import Reporter, lint_paths
from tracer.rules import select_rules
class Null(Reporter):
    pass
rules = RuleSet(select_rules({select!r} or None, {ignore!r} or None))
t, c = time.perf_counter(), time.process_time()
stats = lint_paths([{path!r}], rules, Null(), progress=False)
dt, cpu = time.perf_counter() - t, time.process_time() - c
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{{stats.messages}} {{dt}} {{rss}} {{stats.findings}} {{cpu}}")
"""


def run_lint(
    path: Path, select: list[str] | None, ignore: list[str] | None = None, root: Path = ROOT
) -> tuple[int, float, float, int]:
    n, dt, rss, findings, _ = _lint_child(path, select, ignore, root)
    return int(n), float(dt), float(rss), int(findings)


def _lint_child(path: Path, select, ignore, root: Path) -> list[str]:
    code = LINT_CHILD.format(root=str(root), path=str(path), select=select, ignore=ignore)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()


def against(path: Path, select: list[str] | None, other: Path, rounds: int) -> None:
    """Lint with the selected rules by this tree and by `other` (e.g. a git worktree of an earlier
    commit), alternated for `rounds`: messages/s of CPU time each round, and the medians' ratio."""
    import statistics

    rates: dict[Path, list[float]] = {ROOT: [], other: []}
    for r in range(rounds):
        for root in (other, ROOT):
            n, _, _, _, cpu = _lint_child(path, select, None, root)
            rates[root].append(int(n) / float(cpu))
        print(
            f"round {r + 1}: {other}: {rates[other][-1]:,.0f} messages/s (CPU time); this tree: "
            f"{rates[ROOT][-1]:,.0f} (load average {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    before, after = statistics.median(rates[other]), statistics.median(rates[ROOT])
    print(
        f"median of {rounds} rounds, one core, CPU time: {other} {before:,.0f} messages/s, this tree "
        f"{after:,.0f}: x{after / before:.3f}"
    )


def baseline(path: Path, sample: int) -> tuple[float, float, float]:
    """(messages/s of json.loads + jsonschema, messages/s of orjson.loads + mcptrace's schema rule,
    microseconds per message of that rule alone on the parsed message) on the same sample, each message checked against the definition mcptrace's dispatch picks for it
    (tracer.rules.mcp15_schema.schema_target). Picking and compiling happen before the clock starts."""
    import jsonschema
    from referencing import Registry, Resource

    from tracer.analyser import Analyser
    from tracer.capture import read_capture
    from tracer.model import Analysed, Kind
    from tracer.rules import REGISTRY, select_rules
    from tracer.rules.mcp15_schema import schema_target
    from tracer.schemas import load_schema

    rule_for = {
        Kind.REQUEST: REGISTRY["MCP150"].fn,
        Kind.NOTIFICATION: REGISTRY["MCP150"].fn,
        Kind.RESULT: REGISTRY["MCP151"].fn,
        Kind.ERROR: REGISTRY["MCP152"].fn,
    }
    registries = {}
    validators = {}
    work = []
    analyser = Analyser(select_rules(["MCP101"]))  # era and pairing only; nothing timed here
    with open(path, "rb") as fh:
        for rec in read_capture(fh):
            m = (
                next((ev for ev in analyser.feed(rec) if ev.__class__ is Analysed), None)
                if hasattr(rec, "raw")
                else None
            )
            target = schema_target(m) if m is not None else None
            if target is None:
                continue
            key = id(target)
            if key not in validators:
                v = target.version
                if v not in registries:
                    uri = f"urn:mcptrace:mcp-schema:{v}"
                    registries[v] = Registry().with_resource(uri, Resource.from_contents(load_schema(v)))
                cls = jsonschema.validators.validator_for(target.schema)
                validators[key] = cls(target.schema, registry=registries[v])
            work.append((rec.raw, validators[key], m, rule_for[m.kind]))
            if len(work) >= sample:
                break
    t = time.perf_counter()
    valid = 0
    for raw, validator, _, _ in work:
        valid += validator.is_valid(json.loads(raw))
    base = len(work) / (time.perf_counter() - t)
    assert valid == len(work), "the generated traffic is valid"
    t = time.perf_counter()
    for raw, _, m, fn in work:
        m.obj = orjson.loads(raw)
        if fn(m, None) is not None:
            raise AssertionError("the generated traffic is valid")
    ours = len(work) / (time.perf_counter() - t)
    t = time.perf_counter()
    for _, _, m, fn in work:
        fn(m, None)
    check_us = (time.perf_counter() - t) / len(work) * 1e6
    return base, ours, check_us


# Issue #2's families: MCP1xx, MCP2xx, MCP3xx sections 3a-3b and 3e, MCP401-MCP410.
ISSUE2 = ["MCP1,MCP2,MCP30,MCP31,MCP320,MCP321,MCP35,MCP36,MCP40,MCP410"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--select", action="append", help="rule ids/prefixes (default: all rules)")
    ap.add_argument("--baseline-sample", type=int, default=5_000)
    ap.add_argument(
        "--issue2",
        action="store_true",
        help="also measure issue #2's rule families (MCP1xx, MCP2xx, MCP301-315, MCP320-321, "
        "MCP350-361, MCP401-410), with and without the schema rules",
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated captures")
    ap.add_argument(
        "--against",
        type=Path,
        help="only: lint by this tree and by the tree given (e.g. a git worktree of an earlier commit), "
        "alternated, CPU time",
    )
    ap.add_argument("--rounds", type=int, default=5, help="with --against")
    args = ap.parse_args()
    if args.against is not None:
        with tempfile.TemporaryDirectory(prefix="mcptrace-bench-") as tmp:
            path = Path(tmp) / "big.jsonl"
            n = generate(path, args.messages)
            print(f"{n:,} messages, load average {os.getloadavg()[0]:.1f}")
            against(path, args.select, args.against.resolve(), args.rounds)
        return
    tmp = Path(tempfile.mkdtemp(prefix="mcptrace-bench-"))
    big, small = tmp / "big.jsonl", tmp / "small.jsonl"
    t = time.perf_counter()
    n = generate(big, args.messages)
    generate(small, args.messages // 4)
    print(f"generated {n:,} messages ({big.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f}s")

    schema = ["MCP150", "MCP151", "MCP152"]
    n_big, dt_big, rss_big, findings = run_lint(big, args.select)
    n_off, dt_off, _, _ = run_lint(big, args.select, ignore=schema)
    n_only, dt_only, _, _ = run_lint(big, schema)
    n_small, _, rss_small, _ = run_lint(small, args.select)
    if args.issue2:
        n_i2, dt_i2, rss_i2, findings_i2 = run_lint(big, ISSUE2)
        n_i2off, dt_i2off, _, _ = run_lint(big, ISSUE2, ignore=schema)
    base, ours, check_us = baseline(big, args.baseline_sample)
    rate, rate_off, rate_only = n_big / dt_big, n_off / dt_off, n_only / dt_only
    label = "all rules" if not args.select else ",".join(args.select)
    print(
        f"mcptrace lint ({label}, schema on): {rate:,.0f} messages/s ({n_big:,} in {dt_big:.1f}s), "
        f"{findings} findings"
    )
    print(
        f"mcptrace lint ({label} but MCP150-MCP152): {rate_off:,.0f} messages/s; the schema check alone, "
        f"measured directly (dispatch + jsonschema-rs on the parsed message): {check_us:.1f} us/message"
    )
    print(
        f"mcptrace lint (MCP150-MCP152 only: parse, classify, pair, era, schema): {rate_only:,.0f} messages/s"
    )
    if args.issue2:
        print(
            f"mcptrace lint (issue #2 families, schema on): {n_i2 / dt_i2:,.0f} messages/s "
            f"({n_i2:,} in {dt_i2:.1f}s), {findings_i2} findings, peak RSS {rss_i2:.0f} MB"
        )
        print(f"mcptrace lint (issue #2 families but MCP150-MCP152): {n_i2off / dt_i2off:,.0f} messages/s")
    print(
        f"peak RSS: {rss_big:.0f} MB at {n_big:,} messages, {rss_small:.0f} MB at {n_small:,} "
        f"(growth x{rss_big / rss_small:.2f} for x{n_big / max(n_small, 1):.0f} messages)"
    )
    print(
        f"baseline json.loads + jsonschema, same definitions: {base:,.0f} messages/s "
        f"(sample of {args.baseline_sample:,}); orjson.loads + mcptrace's schema rule on that sample: "
        f"{ours:,.0f} messages/s ({ours / base:.0f}x)"
    )
    print(
        f"ratio lint ({label}) / baseline: {rate / base:.1f}x; schema-only lint / baseline: {rate_only / base:.1f}x"
    )
    if not args.keep:
        for p in (big, small):
            os.unlink(p)
        os.rmdir(tmp)
    else:
        print(f"captures kept in {tmp}")


if __name__ == "__main__":
    main()
