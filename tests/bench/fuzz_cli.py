"""Hostile files through every command that reads one, as real processes (what a user runs):
type-confused JSON-RPC (ids of every JSON type, 5,000-digit integers, NaN, nested ids; method,
params, result, error, `_meta`, progressToken of every wrong type; 100,000-level nesting; duplicate
keys; lone surrogates; NUL; a 1 MB method; 50,000 params), written as a capture, NDJSON, a host log
and a HAR; capture records with a wrong type in every field (and seq/t_ns of 1e400, NaN); files with
a BOM, NUL bytes, CR-only or CRLF lines, UTF-16, Latin-1, a torn last line, two headers, a 50 MB
line; each through `lint` (every -f, and -j 2), `export` (otlp-json, har), `mock` over stdio and
`replay` against tests/servers/echo.py. Then hostile host configs (JSON/JSONC and codex TOML: wrong
types in every member, raw control characters and bad escapes in strings, 100,000-level nesting,
BOM, Latin-1, unterminated comments) through `doctor`, `wrap` and `unwrap`, with
wrap + unwrap restoring the file byte for byte.

    python tests/bench/fuzz_cli.py [--only lint,export,mock,replay,hosts] [--dir DIR]

A traceback, "internal error", an exception's name on stderr (`RecursionError: ...`), exit 70, a
death by signal or a run past 240 s is flagged, with the end of its stderr. Target: 0 flagged
(0 of 805 runs at 24d0171). Takes ~5 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MCP = [sys.executable, "-m", "tracer"]
ECHO = [sys.executable, str(REPO / "tests" / "servers" / "echo.py")]
BOUND_S = 240
BAD = re.compile(rb"Traceback|internal error|\b[A-Z]\w*(?:Error|Exception): ")

IDS = [
    *("0", "-1", '"1"', "1.5", "1e308", "-0.0", str(2**64 + 1), str(-(2**80)), "9" * 5000, "true"),
    *("false", "null", "[]", "[1]", "{}", '{"a":1}', '"\\ud800"', '""', '"' + "x" * 100_000 + '"'),
    *("NaN", "Infinity", "-Infinity", "1E400", "[" * 10 + "1" + "]" * 10),
]
VALUES = [
    *("null", "1", '"x"', "[]", "{}", "true", str(2**70), '"\\udfff"', "1e308", "NaN", "-Infinity"),
    "[" * 2000 + "]" * 2000,
]
SHAPES = [  # each %s is one hostile value
    '{"jsonrpc":"2.0","id":1,"method":%s}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":%s}',
    '{"jsonrpc":"2.0","id":1,"result":%s}',
    '{"jsonrpc":"2.0","id":1,"error":%s}',
    '{"jsonrpc":"2.0","id":1,"error":{"code":%s,"message":%s,"data":%s}}',
    '{"jsonrpc":%s,"id":1,"method":"ping"}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":%s}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":%s}}}',
    '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%s}}',
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}',
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%s,"capabilities":%s,'
    '"clientInfo":%s}}',
    '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":%s,"capabilities":%s,"serverInfo":%s}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/'
    'protocolVersion":%s,"io.modelcontextprotocol/clientCapabilities":%s}}}',
    '{"jsonrpc":"2.0","id":1,"result":{"tools":%s,"nextCursor":%s}}',
    '{"jsonrpc":"2.0","id":1,"result":{"tools":[%s]}}',
    '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":%s,"text":%s}]}}',
]
DEEP = 100_000


def messages() -> list[str]:
    out = []
    for i in IDS:
        out.append('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"x"}}' % i)
        out.append('{"jsonrpc":"2.0","id":%s,"result":{}}' % i)
        out.append('{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"m"}}' % i)
    for v in VALUES:
        out += [shape % ((v,) * shape.count("%s")) for shape in SHAPES]
    out += [
        '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","method":"tools/list"}',
        '{"jsonrpc":"2.0","id":1,"method":"ping","jsonrpc":1}',
        *("[]", "[1,2]", '[{"jsonrpc":"2.0","id":1,"method":"ping"},5,null]', "1", '"s"', "null"),
        '{"jsonrpc":"2.0","id":1,"method":"ping\\u0000x"}',
        '{"jsonrpc":"2.0","id":"\\u0000","method":"ping"}',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + "[" * DEEP + "]" * DEEP + "}",
        '{"jsonrpc":"2.0","id":1,"result":' + '{"a":' * DEEP + "1" + "}" * DEEP + "}",
        "[" * DEEP,
        '{"jsonrpc":"2.0","id":1,"method":"' + "m" * 1_000_000 + '"}',
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"'
        + '":1,"'.join(map(str, range(50_000)))
        + '":1}}',
    ]
    return out


def _line(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


HEADER = {
    "type": "header",
    "format": "mcptrace",
    "version": 1,
    "tool": "fuzz",
    "t_ns": 1,
    "transport": "stdio",
}
RECORD_VALUES = [
    None,
    1,
    -1,
    2**64,
    2**200,
    -(2**200),
    1.5,
    1e308,
    "x",
    "",
    [],
    {},
    [1],
    {"a": 1},
    True,
    "\ud800",
]
FIELDS = ["type", "seq", "t_ns", "dir", "transport", "conn", "text", "b64", "offset", "eol", "dir_inferred"]
FIELDS += ["http", "sse", "data"]
HTTP_FIELDS = ["method", "url", "status", "flow", "content_type", "request_t_ns", "req_headers"]
HTTP_FIELDS += ["resp_headers", "stream", "session"]


def capture_of(texts: list[str]) -> str:
    lines = [_line(HEADER)]
    for n, t in enumerate(texts):
        d = "c2s" if n % 2 == 0 else "s2c"
        rec = {"type": "message", "seq": n + 1, "t_ns": 1000 + n, "dir": d, "transport": "stdio", "conn": "c"}
        lines.append(_line({**rec, "text": t}))
    return "\n".join(lines) + "\n"


def hostlog_of(texts: list[str]) -> str:
    who = ("client", "server")
    return "".join(
        f"2025-06-13T14:44:29.{n % 1000:03d}Z [info] [srv] Message from {who[n % 2]}: {t}\n"
        for n, t in enumerate(texts)
    )


def har_of(texts: list[str]) -> str:
    entry = (
        '{"startedDateTime":"2025-01-01T00:00:00Z","time":1,"request":{"method":"POST","url":'
        '"http://x/mcp","headers":[{"name":1,"value":[]}],"postData":{"mimeType":"application/json",'
        '"text":%s}},"response":{"status":200,"headers":[],"content":{"mimeType":"text/event-stream",'
        '"text":%s}}}'
    )
    entries = ",".join(entry % (json.dumps(t), json.dumps("data: " + t + "\n\n")) for t in texts)
    return '{"log":{"version":"1.2","creator":{"name":"x"},"entries":[' + entries + "]}}"


def hostile_records() -> str:
    base = {"type": "message", "seq": 1, "t_ns": 1000, "dir": "c2s", "transport": "stdio", "conn": "c"}
    base["text"] = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    lines = [_line(HEADER)]
    lines += [_line({**base, f: v}) for f in FIELDS for v in RECORD_VALUES]
    for kind in ("stderr", "http", "event", "bogus", "header"):
        rec = {"type": kind, "seq": 2, "t_ns": 2000, "transport": "http", "conn": "c"}
        lines += [_line({**rec, f: v}) for f in FIELDS for v in RECORD_VALUES[:10]]
    answer = {**base, "dir": "s2c", "transport": "http", "text": '{"jsonrpc":"2.0","id":1,"result":{}}'}
    for hf in HTTP_FIELDS:
        lines += [
            _line({**answer, "http": {"method": "POST", "url": "http://x/mcp", hf: v}}) for v in RECORD_VALUES
        ]
    for sf in ("id", "event", "stream", "retry", "data"):
        lines += [_line({**answer, "sse": {sf: v}}) for v in RECORD_VALUES]
    lines += [
        '{"type":"message","seq":1e400,"t_ns":1e400,"dir":"c2s","conn":"c","text":"{}"}',
        '{"type":"message","seq":NaN,"t_ns":Infinity,"dir":"c2s","conn":"c","text":"{}"}',
        '{"type":"message","type":"stderr","seq":5,"t_ns":5,"dir":"c2s","conn":"c","text":"{}"}',
        '{"type":"message","seq":6,"t_ns":6,"dir":"c2s","conn":"c","b64":"!!!notbase64"}',
        _line({**base, "text": None, "b64": base64.b64encode(b"\xff\xfe\x00garbage").decode()}),
        '{"type":"message","seq":8,"t_ns":8,"dir":"c2s","conn":"c","text":"x","b64":"eA=="}',
        '{"type":"message","seq":1,"seq":"x","t_ns":1,"dir":"c2s","dir":"bogus","conn":"c","text":"{}"}',
    ]
    return "\n".join(lines) + "\n"


def input_files(out: Path) -> list[Path]:
    texts = messages()
    good = capture_of(['{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"result":{}}'])
    files: dict[str, str | bytes] = {
        "msgs.jsonl": capture_of(texts),
        "msgs.ndjson": "\n".join(texts) + "\n",
        "msgs.log": hostlog_of(texts),
        "msgs.har": har_of(texts[:200]),
        "records.jsonl": hostile_records(),
        "bom.jsonl": b"\xef\xbb\xbf" + good.encode(),
        "nul.jsonl": good.encode().replace(b'"ping"', b'"pi\x00ng"') + b"\x00\x00\n" + good.encode(),
        "nul.ndjson": b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n\x00\n\x00{"jsonrpc":"2.0","id":1,"result":{}}\n',
        "cr.jsonl": good.replace("\n", "\r"),
        "cr.ndjson": '{"jsonrpc":"2.0","id":1,"method":"ping"}\r{"jsonrpc":"2.0","id":1,"result":{}}\r',
        "cr.log": hostlog_of(texts[:20]).replace("\n", "\r"),
        "crlf.jsonl": good.replace("\n", "\r\n"),
        "utf16.jsonl": good.encode("utf-16"),
        "latin1.ndjson": b'{"jsonrpc":"2.0","id":1,"method":"p\xe9ng"}\n',
        "empty.jsonl": b"",
        "header-only.jsonl": _line(HEADER) + "\n",
        "torn.jsonl": good + '{"type":"message","seq":9,"t_ns":9,"di',
        "deep.jsonl": _line(HEADER) + "\n" + "[" * DEEP + "]" * DEEP + "\n" + good,
        "deep.ndjson": "[" * DEEP + "]" * DEEP + "\n" + '{"a":' * DEEP + "1" + "}" * DEEP + "\n",
        "deep.har": '{"log":{"entries":' + "[" * DEEP + "]" * DEEP + "}}",
        "bad.har": '{"log":{"entries":[{"request":{"method":1,"url":[],"postData":{"text":5}},'
        '"response":{"status":"x","content":{"text":{},"mimeType":[]}},"startedDateTime":7}]}}',
        "two-headers.jsonl": good + good,
        "long-line.jsonl": _line(HEADER) + "\n" + "x" * 50_000_000 + "\n" + good,
        "odd-times.log": "2025-06-13T99:99:99.000Z [info] [srv] Message from client: {}\n"
        '9999-12-31T23:59:59.999999999Z [info] [srv] Message from server: {"jsonrpc":"2.0","id":1,"result":{}}\n'
        "2025-06-13T14:44:29.945+99:99 [info] [\x00] Message from client: [1]\n"
        "2025-06-13T14:44:29.945Z [info] [" + "s" * 100_000 + "] Initializing server...\n",
    }
    for name, data in files.items():
        (out / name).write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return [out / name for name in files]


def host_files(out: Path) -> list[Path]:
    cases: dict[str, str | bytes] = {}
    for i, v in enumerate([*VALUES, "1e999"]):
        cases[f"servers-{i}.json"] = '{"mcpServers":%s}' % v
        cases[f"server-{i}.json"] = '{"mcpServers":{"a":%s}}' % v
        cases[f"command-{i}.json"] = '{"mcpServers":{"a":{"command":%s,"args":["x"]}}}' % v
        cases[f"args-{i}.json"] = '{"mcpServers":{"a":{"command":"python","args":%s}}}' % v
        cases[f"arg-{i}.json"] = '{"mcpServers":{"a":{"command":"python","args":[%s]}}}' % v
        cases[f"env-{i}.json"] = '{"mcpServers":{"a":{"command":"python","args":[],"env":%s}}}' % v
        cases[f"url-{i}.json"] = '{"mcpServers":{"a":{"url":%s,"type":%s}}}' % (v, v)
    cases |= {
        "deep.json": '{"mcpServers":{"a":{"command":"python","x":' + "[" * DEEP + "]" * DEEP + "}}}",
        "deep-object.json": '{"a":' * DEEP + "1" + "}" * DEEP,
        "bom.json": '\ufeff{"mcpServers":{"a":{"command":"python"}}}',
        "nul.json": '{"mcpServers":{"a\x00":{"command":"py\x00thon"}}}',
        "bad-escape.json": '{"mcpServers":{"a":{"command":"x\\q"}}}',
        "comments.json": '// c\n{"mcpServers":{/* x */"a":{"command":"python",},},}\n',
        "open-comment.json": '{"mcpServers":{"a":{"command":"python"}} /*',
        "open-string.json": '{"mcpServers":{"a":{"command":"pyth',
        "empty.json": "",
        "spaces.json": " " * 1_000_000,
        "surrogates.json": '{"mcpServers":{"\\ud800":{"command":"\\udfff","args":["\\ud800"]}}}',
        "nan.json": '{"mcpServers":{"a":{"command":"python","args":[NaN, Infinity]}}}',
        "cr.json": '{"mcpServers":\r{"a":\r{"command":"python"}}}\r',
        "wrapped-short.json": '{"mcpServers":{"a":{"command":"mcptrace","args":["stdio","--"]}}}',
        "wrapped-odd.json": '{"mcpServers":{"a":{"command":"mcptrace","args":["stdio",5,"--",{}]}}}',
        "latin1.json": b'{"mcpServers":{"a":{"command":"p\xe9"}}}',
        "servers.toml": "mcp_servers = 5\n",
        "server.toml": "[mcp_servers]\na = 5\n",
        "command.toml": '[mcp_servers.a]\ncommand = 5\nargs = "x"\n',
        "args.toml": '[mcp_servers.a]\ncommand = "python"\nargs = [1, {a=1}, [2]]\nenv = 3\n',
        "broken.toml": '[mcp_servers.a\ncommand = "python"\n',
        "deep.toml": "x = " + "[" * 5000 + "]" * 5000 + '\n[mcp_servers.a]\ncommand="python"\n',
        "nul.toml": '[mcp_servers.a]\ncommand = "py\x00"\n',
        "multiline.toml": '[mcp_servers.a]\ncommand = """py\nthon"""\nargs = [\n"x", # c\n]\n',
        "dotted.toml": 'mcp_servers.a.command = "python"\nmcp_servers.a.args = ["x"]\n',
        "inline.toml": 'mcp_servers = { a = { command = "python", args = ["x"] } }\n',
    }
    for name, data in cases.items():
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        (out / name).write_bytes(raw)
    return [out / name for name in cases]


def run(args: list[str], stdin: bytes = b"", env: dict | None = None, cwd: Path | None = None):
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    env.setdefault("XDG_STATE_HOME", tempfile.mkdtemp(prefix="fuzz-cli-state-"))
    try:
        p = subprocess.run([*MCP, *args], input=stdin, capture_output=True, timeout=BOUND_S, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        return "timeout", b""
    return p.returncode, p.stderr + p.stdout


def flagged(rc, out: bytes) -> str | None:
    if rc == "timeout" or rc == 70 or rc < 0:
        return f"exit {rc}"
    m = BAD.search(out)
    return m.group(0).decode() if m else None


MOCK_REQUESTS = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"h","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}\n{"jsonrpc":"2.0","id":3,"method":"ping"}\n'
)


def input_cases(path: Path):
    p = str(path)
    for f in ("text", "json", "sarif", "junit", "github"):
        yield "lint", f"lint -f {f}", ["lint", "--no-config", "--no-progress", "-j", "1", "-f", f, p], b""
    yield "lint", "lint -j 2", ["lint", "--no-config", "--no-progress", "-j", "2", "-f", "json", p], b""
    for f in ("otlp-json", "har"):
        yield "export", f"export -f {f}", ["export", "-f", f, "-o", os.devnull, p], b""
    yield "mock", "mock (stdio)", ["mock", "-q", "--timeout", "1", p], MOCK_REQUESTS
    new = tempfile.mktemp(suffix=".jsonl")
    yield "replay", "replay", ["replay", p, "--timeout", "2", "-o", new, "--", *ECHO], b""


def host_cases(path: Path, work: Path):
    """(label, args, check round trip) for one host config file copied into a fresh HOME."""
    toml = path.suffix == ".toml"
    host = ["--host", "codex"] if toml else []
    for cmd in ("doctor", "wrap", "unwrap"):
        yield cmd, [cmd, "--config", str(work), *host], cmd == "wrap"
    if not toml:
        for h in ("vscode", "zed"):
            yield f"wrap --host {h}", ["wrap", "--config", str(work), "--host", h], False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="lint,export,mock,replay,hosts")
    ap.add_argument("--dir", help="write the hostile files here (default: a temporary directory)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    root = Path(args.dir or tempfile.mkdtemp(prefix="fuzz-cli-"))
    (root / "inputs").mkdir(parents=True, exist_ok=True)
    (root / "hosts").mkdir(exist_ok=True)
    n = bad = 0
    for path in input_files(root / "inputs"):
        for group, label, argv, stdin in input_cases(path):
            if group not in only:
                continue
            n += 1
            rc, out = run(argv, stdin)
            if why := flagged(rc, out):
                bad += 1
                tail = out.decode("utf-8", "replace")[-600:].replace("\n", "\n    ")
                print(f"!! {path.name:18} {label:16} {why}\n    {tail}", flush=True)
    if "hosts" in only:
        for path in host_files(root / "hosts"):
            for label, argv, round_trip in host_cases(path, Path("CONFIG")):
                home = Path(tempfile.mkdtemp(prefix="fuzz-cli-home-"))
                cfg = home / ("config.toml" if path.suffix == ".toml" else "claude_desktop_config.json")
                shutil.copy(path, cfg)
                env = {
                    "HOME": str(home),
                    "XDG_STATE_HOME": str(home / "state"),
                    "XDG_CONFIG_HOME": str(home / "c"),
                }
                argv = [str(cfg) if a == "CONFIG" else a for a in argv]
                n += 1
                rc, out = run(argv, env=env, cwd=home)
                if why := flagged(rc, out):
                    bad += 1
                    print(f"!! {path.name:18} {label:16} {why}\n    {out.decode('utf-8', 'replace')[-400:]}")
                elif round_trip and rc == 0:
                    rc2, _ = run(["unwrap", *argv[1:]], env=env, cwd=home)
                    if cfg.read_bytes() != path.read_bytes():
                        bad += 1
                        print(f"!! {path.name:18} wrap + unwrap changed the file (unwrap exit {rc2})")
                shutil.rmtree(home, ignore_errors=True)
    print(f"{n:,} runs over the files in {root}: {bad} flagged")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
