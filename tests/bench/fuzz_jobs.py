"""Adversarial check of `lint --jobs N` sharding: hostile captures of several connections must lint
byte for byte as `--jobs 1` lints them (report in every format, exit code, stderr).

The parent routes a message line of a settled connection to its worker on a guess, the bytes of
its "conn" member found without a parse (tracer.parallel_route; the worker reads it in full and checks
the guess), so the mutations here aim at what such a guess can misread: the "conn" member
spelled with escapes, keys in another order, a duplicate member after the text (JSON keeps the last,
the guess sees the first), whitespace, a conn name that is a prefix of another (c1 / c10), a
non-string conn, a BOM, CRLF, a torn line, a NUL, a very long line, a second header mid-file,
records of an unknown type, HTTP records on a stdio conn, a broken tail behind a good start, times
beyond 63 bits... Seeds are the real mini-sessions of tests/fuzz_support.py, several interleaved as
concurrent connections, sometimes also mutated at the record level (fuzz_support.mutate).

Run: python tests/bench/fuzz_jobs.py [--files 300] [--seed 1] [--formats-every 10] [--repro DIR]

Sharding is forced on these small files (MCPTRACE_LINT_POOL_MIN=0, MCPTRACE_LINT_SHARD_MIN=0).
Each file is linted with --jobs 1, 2 and 4 in JSON, every Nth file in every format. Prints the
files tried, the mutations applied (how often), the divergences (each saved with a line-minimised
copy under --repro) and the rate. Target: 0 divergences. Not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz_support import mutate, seed_sessions
from tracer.cli import main as cli_main

FORMATS = ("text", "json", "sarif", "junit", "github")
JOBS = (2, 4)
_JUNIT_TIME = re.compile(r'time="[0-9.]+"')
# conn names of which some are prefixes of others, and some the prefix match must not take
CONNS = ("c1", "c10", "c100", "c1 ", "stdio-1", "stdio-10", "a", "ab", "c\u00e91", 'c"1', "c\\1", "")
T0 = 1_780_000_000_000_000_000


def _dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def header(t_ns: int, transport: str = "stdio") -> str:
    head = {"type": "header", "format": "mcptrace", "version": 1, "tool": "fuzz_jobs", "t_ns": t_ns}
    return _dumps({**head, "transport": transport})


def build(rng: random.Random, seeds: list[list[dict]]) -> list[str]:
    """Several seed sessions as concurrent connections, interleaved a few records at a time."""
    names = rng.sample(CONNS, rng.randint(2, 6))
    streams = []
    for name in names:
        recs = [dict(r) for r in rng.choice(seeds)]
        if rng.random() < 0.3:
            recs = mutate(rng, recs)
        for r in recs:
            if type(r) is dict:
                r["conn"] = name
        streams.append([r for r in recs if type(r) is dict] * rng.randint(1, 3))
    lines = [header(T0)]
    seq, t = 0, T0
    while any(streams):
        s = rng.choice([s for s in streams if s])
        for r in s[: rng.randint(1, 4)]:
            seq += 1
            t += rng.randint(1, 2_000_000)
            if "seq" in r:
                r["seq"] = seq
            if "t_ns" in r:
                r["t_ns"] = t
            try:
                lines.append(_dumps(r))
            except (ValueError, TypeError, RecursionError):
                continue
        del s[: rng.randint(1, 4)]
    return lines


def _msg_lines(lines: list[str]) -> list[int]:
    return [i for i, x in enumerate(lines) if x.startswith('{"type":"message"')] or list(range(len(lines)))


def _conns(lines: list[str]) -> list[str]:
    return [m.group(1) for x in lines if (m := re.search(r'"conn":"((?:[^"\\]|\\.)*)"', x))] or ["c1"]


def _dup_member(rng, line: str) -> str:
    if not line.endswith("}"):
        return line
    member = rng.choice(
        (
            '"conn":"c10"',
            '"conn":"zz"',
            '"conn":1',
            '"type":"header"',
            '"type":"event"',
            '"type":"stderr"',
            '"t_ns":9',
            f'"t_ns":{T0 * 3}',
            '"transport":"http"',
            '"dir":"s2c"',
            '"text":"{}"',
            '"seq":"x"',
        )
    )
    return line[:-1] + "," + member + "}"


def _reorder(rng, line: str) -> str:
    try:
        obj = json.loads(line)
    except ValueError:
        return line
    if type(obj) is not dict:
        return line
    items = list(obj.items())
    rng.shuffle(items)
    return _dumps(dict(items))


def _break_tail(rng, line: str) -> str:
    """A good prefix, a broken rest that still ends with '}'."""
    cut = line.find('"text":"')
    if cut < 0:
        return line
    head = line[: cut + 8]
    return head + rng.choice(('x\\q"}', 'x"}}', 'x",}', 'x"\x00}', 'x","seq":}', 'x"]'))


def _mutate_line(rng: random.Random, lines: list[str], used: Counter) -> None:
    idx = _msg_lines(lines)
    i = rng.choice(idx)
    line = lines[i]
    conns = _conns(lines)
    kind = rng.choice(MUTATIONS)
    used[kind] += 1
    if kind == "escaped conn key":
        lines[i] = line.replace('"conn":', '"\\u0063onn":', 1)
    elif kind == "escaped conn value":
        lines[i] = re.sub(r'"conn":"(.)', lambda m: '"conn":"\\u%04x' % ord(m.group(1)), line, count=1)
    elif kind == "keys reordered":
        lines[i] = _reorder(rng, line)
    elif kind == "duplicate member after text":
        lines[i] = _dup_member(rng, line)
    elif kind == "duplicate conn before text":
        lines[i] = line.replace('"text":', f'"conn":{json.dumps(rng.choice(conns))},"text":', 1)
    elif kind == "whitespace":
        lines[i] = rng.choice(
            (line.replace("{", "{ ", 1), line.replace(":", ": ", 2), " " + line, line + " ")
        )
    elif kind == "conn renamed to a prefix":
        c = rng.choice(conns)
        lines[i] = line.replace(f'"conn":"{c}"', f'"conn":"{c[:-1] or c + "0"}"', 1)
    elif kind == "non-string conn":
        lines[i] = re.sub(
            r'"conn":"(?:[^"\\]|\\.)*"', '"conn":' + rng.choice(("1", "null", "[]", '{"a":1}')), line, count=1
        )
    elif kind == "BOM":
        j = i if rng.random() < 0.5 else 0  # mid-file, or where open_input strips it
        lines[j] = "\ufeff" + lines[j]
    elif kind == "CRLF":
        for j in rng.sample(range(len(lines)), rng.randint(1, len(lines))):
            lines[j] += "\r"
    elif kind == "line cut in half":
        cut = rng.randint(1, max(1, len(line) - 1))
        lines[i : i + 1] = [line[:cut], line[cut:]] if rng.random() < 0.5 else [line[:cut]]
    elif kind == "NUL":
        at = rng.randint(0, len(line))
        lines[i] = line[:at] + "\x00" + line[at:]
    elif kind == "very long line":
        pad = "x" * rng.choice((70_000, 70_000, 1 << 20, (16 << 20) + 10))
        lines[i] = line.replace('"text":"', '"text":"' + pad, 1) if '"text":"' in line else line + pad
    elif kind == "second header":
        lines.insert(i, header(T0 + rng.randint(-5, 10**12), rng.choice(("stdio", "stdio", "http", 1))))
    elif kind == "unknown record type":
        lines[i] = line.replace('"type":"message"', '"type":' + rng.choice(('"wat"', "1", '"Message"')), 1)
    elif kind == "http record on a stdio conn":
        http = {"type": "message", "seq": 1, "t_ns": T0 + 5, "dir": "c2s", "transport": "http"}
        http |= {"conn": rng.choice(conns), "text": '{"jsonrpc":"2.0","id":99,"method":"ping"}'}
        http["http"] = {"method": "POST", "url": "http://h/mcp", "flow": "f1"}
        lines.insert(i, _dumps(http))
    elif kind == "broken tail behind a good prefix":
        lines[i] = _break_tail(rng, line)
    elif kind == "time beyond 63 bits":
        lines[i] = re.sub(
            r'"t_ns":[0-9]+', '"t_ns":' + str(rng.choice((2**63, 2**64, 2**63 - 1, 0))), line, count=1
        )
    elif kind == "time far ahead":
        lines[i] = re.sub(r'"t_ns":[0-9]+', f'"t_ns":{T0 * 4}', line, count=1)
    elif kind == "close event then reuse":
        ev = {"type": "event", "seq": 1, "t_ns": T0 + 7, "transport": "stdio", "conn": rng.choice(conns)}
        ev["data"] = {"event": rng.choice(("exit", "eof", "signal", "closed")), "code": 0}
        lines.insert(i, _dumps(ev))
    elif kind == "line duplicated":
        lines.insert(i, line)
    elif kind == "lines swapped":
        j = rng.choice(idx)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "blank line":
        lines.insert(i, rng.choice(("", " ", "\t", "\r")))
    elif kind == "invalid UTF-8 in the text":  # (to_bytes writes a lone surrogate as it is)
        lines[i] = line.replace('"text":"', '"text":"\udcff', 1)
    elif kind == "non-ASCII in the prefix":
        lines[i] = line.replace('"transport":"stdio"', '"transport":"std\u00efo"', 1)


MUTATIONS = (
    "escaped conn key",
    "escaped conn value",
    "keys reordered",
    "duplicate member after text",
    "duplicate member after text",
    "duplicate conn before text",
    "whitespace",
    "conn renamed to a prefix",
    "non-string conn",
    "BOM",
    "CRLF",
    "line cut in half",
    "NUL",
    "very long line",
    "second header",
    "unknown record type",
    "http record on a stdio conn",
    "broken tail behind a good prefix",
    "broken tail behind a good prefix",
    "time beyond 63 bits",
    "time far ahead",
    "close event then reuse",
    "line duplicated",
    "lines swapped",
    "blank line",
    "non-ASCII in the prefix",
    "invalid UTF-8 in the text",
)


def to_bytes(lines: list[str], rng: random.Random) -> bytes:
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:  # a torn end
        data = data[: rng.randint(len(data) // 2, len(data))]
    return data


def lint(path: str, jobs: int, fmt: str) -> tuple[int, str, str]:
    """One in-process `mcptrace lint` run: (exit code, report, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        rc = cli_main(["lint", "--no-config", "--no-progress", "--jobs", str(jobs), "--format", fmt, path])
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdout, sys.stderr = saved
    return rc, _JUNIT_TIME.sub('time="T"', out.getvalue()), err.getvalue()


def diverges(path: str, formats: tuple[str, ...]) -> tuple[str, int] | None:
    """The first (format, jobs) whose result differs from --jobs 1, or crashes; None: all agree."""
    for fmt in formats:
        one = lint(path, 1, fmt)
        for jobs in JOBS:
            many = lint(path, jobs, fmt)
            if many != one or "Traceback" in many[2] or "internal error" in many[2]:
                return fmt, jobs
    return None


def minimise(data: bytes, fmt: str, work: str, budget: int = 80) -> bytes:
    """Fewer lines that still diverge in `fmt` (the header kept): greedy chunk removal, bounded."""
    lines = data.split(b"\n")
    chunk = max(1, len(lines) // 4)
    path = os.path.join(work, "min.jsonl")
    while chunk >= 1 and budget > 0:
        i, removed = 1, False
        while i < len(lines) and budget > 0:
            trial = lines[:i] + lines[i + chunk :]
            Path(path).write_bytes(b"\n".join(trial))
            budget -= 1
            if diverges(path, (fmt,)):
                lines, removed = trial, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return b"\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--formats-every", type=int, default=10, help="every Nth file in every format")
    p.add_argument("--repro", default="/tmp/T/jobs_repro")
    p.add_argument("--max-mutations", type=int, default=4)
    args = p.parse_args()
    os.environ["MCPTRACE_LINT_POOL_MIN"] = "0"
    os.environ["MCPTRACE_LINT_SHARD_MIN"] = "0"
    rng = random.Random(args.seed)
    seeds = seed_sessions()
    used: Counter = Counter()
    found: list[tuple[int, str, int, str]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "in.jsonl")
        for n in range(args.files):
            lines = build(rng, seeds)
            for _ in range(rng.randint(1, args.max_mutations)):
                _mutate_line(rng, lines, used)
            data = to_bytes(lines, rng)
            Path(path).write_bytes(data)
            formats = FORMATS if args.formats_every and n % args.formats_every == 0 else ("json",)
            bad = diverges(path, formats)
            if bad is not None:
                os.makedirs(args.repro, exist_ok=True)
                stem = os.path.join(args.repro, f"seed{args.seed}-{n}")
                Path(stem + ".jsonl").write_bytes(data)
                Path(stem + ".min.jsonl").write_bytes(minimise(data, bad[0], work))
                found.append((n, bad[0], bad[1], stem + ".min.jsonl"))
                print(f"  DIVERGES file {n}: --format {bad[0]} --jobs {bad[1]}: {stem}.min.jsonl", flush=True)
            if (n + 1) % 25 == 0:
                print(f"  {n + 1} files, {len(found)} divergences", file=sys.stderr, flush=True)
    secs = time.perf_counter() - started
    print("\nmutations applied:")
    for kind, k in sorted(used.items()):
        print(f"  {k:6,} x {kind}")
    print(
        f"\n{args.files:,} files (seed {args.seed}), jobs 1 against {', '.join(map(str, JOBS))}: "
        f"{len(found)} divergences, {args.files / secs:.2f} files/s"
    )
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
