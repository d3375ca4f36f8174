"""Replay and mock costs, each beside a baseline measured in the same run (compare the ratios).

Run: python tests/bench/bench_replay_mock.py [--requests N] [--rounds R]

Prints:
  - reading a capture into conversations and planning the host's steps (messages/s), beside the
    analyser alone with no rules over the same records (the pairing pass it is built on);
  - the mock answering requests in shuffled order (requests/s: match by params + answer with the
    caller's id), beside the least any server does per request: parse the request, serialise an answer;
  - a whole replay of the committed SDK capture against `mcptrace mock` of itself, beside the same
    replay against the real SDK server (wall time of each; both over stdio, started fresh).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tracer.analyser import Analyser, RuleSet  # noqa: E402
from tracer.mock.engine import MockServer  # noqa: E402
from tracer.model import Direction, Record, RecordType  # noqa: E402
from tracer.replay.recording import build  # noqa: E402
from tracer.replay.script import plan  # noqa: E402


def session(n: int, rnd: random.Random) -> list[Record]:
    msgs = [
        (
            "c2s",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            },
        ),
        (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench", "version": "1"},
                },
            },
        ),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    for i in range(1, n + 1):
        args = {"city": f"city-{rnd.randint(0, n)}", "days": rnd.randint(1, 9)}
        msgs.append(
            (
                "c2s",
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": f"tool_{i % 7}", "arguments": args},
                },
            )
        )
        if i % 5 == 0:
            msgs.append(
                (
                    "s2c",
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/message",
                        "params": {"level": "info", "data": f"working on {i}"},
                    },
                )
            )
        msgs.append(
            (
                "s2c",
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "result": {
                        "content": [{"type": "text", "text": "sunny " * rnd.randint(1, 30)}],
                        "isError": False,
                    },
                },
            )
        )
    return [
        Record(RecordType.MESSAGE, seq=k, t_ns=k, dir=Direction(d), raw=orjson.dumps(o), conn="0", line=k + 1)
        for k, (d, o) in enumerate(msgs, start=1)
    ]


def best_of(rounds: int, fn) -> float:
    return min(timeit(fn) for _ in range(rounds))


def timeit(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_plan(records: list[Record], rounds: int) -> None:
    n = len(records)

    def ours() -> None:
        rec = build(iter(records), "bench", "capture")
        for c in rec.conversations:
            plan(c)

    def baseline() -> None:
        a = Analyser(RuleSet([]))
        for r in records:
            a.feed(r)

    t_ours, t_base = best_of(rounds, ours), best_of(rounds, baseline)
    print(f"read + plan        {n / t_ours:>12,.0f} messages/s")
    print(f"analyser, no rules {n / t_base:>12,.0f} messages/s   (planning costs x{t_ours / t_base:.2f})")


def bench_mock(records: list[Record], rounds: int) -> None:
    recording = build(iter(records), "bench", "capture")
    incoming = [orjson.loads(ex.request.rec.raw) for ex in recording.host_requests()]
    random.Random(7).shuffle(incoming)
    raws = [orjson.dumps(o) for o in incoming]
    for k, o in enumerate(incoming):
        o["id"] = f"host-{k}"  # a host picks its own ids

    def ours() -> None:
        s = MockServer(recording).session()
        for o in incoming:
            reply = s.decide(o)
            s.answer_bytes(reply)

    def baseline() -> None:
        for raw in raws:
            obj = orjson.loads(raw)
            orjson.dumps({"jsonrpc": "2.0", "id": obj["id"], "result": {"content": [], "isError": False}})

    t_ours, t_base = best_of(rounds, ours), best_of(rounds, baseline)
    n = len(incoming)
    print(f"mock answers       {n / t_ours:>12,.0f} requests/s")
    print(f"parse + serialise  {n / t_base:>12,.0f} requests/s   (matching costs x{t_ours / t_base:.2f})")


def bench_end_to_end(rounds: int) -> None:
    capture = ROOT / "fixtures" / "captures" / "sdk-stdio-legacy.jsonl"
    server = [sys.executable, str(ROOT / "fixtures" / "sdk" / "server.py")]
    mock = [sys.executable, "-m", "tracer", "mock", "-q", str(capture)]
    with tempfile.TemporaryDirectory() as d:

        def replay(target: list[str]) -> float:
            t = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tracer",
                    "replay",
                    str(capture),
                    "-o",
                    f"{d}/new.jsonl",
                    "--",
                    *target,
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                raise SystemExit(f"replay failed: {proc.stdout}{proc.stderr}")
            return time.perf_counter() - t

        t_mock = statistics.median(replay(mock) for _ in range(rounds))
        t_real = statistics.median(replay(server) for _ in range(rounds))
    print(f"replay vs mock     {t_mock:>12.2f} s")
    print(
        f"replay vs SDK      {t_real:>12.2f} s   (the mock takes x{t_mock / t_real:.2f} the real server's time)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    records = session(args.requests, random.Random(1))
    bench_plan(records, args.rounds)
    bench_mock(records, args.rounds)
    bench_end_to_end(args.rounds)


if __name__ == "__main__":
    main()
