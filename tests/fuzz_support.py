"""Structured fuzzing of everything that reads hostile traffic: capture reader, analyser, reporters,
the viewer's row/preview code and the background annotator's details.

Seeds are real mini-sessions (every case of fixtures/rules/*.yaml, plus fixtures/captures), written
as capture lines; a mutation replaces one value by a hostile one of the kinds issue 12 lists: a
capture-record field (transport, conn, offset, http and its members, sse, data...) or a value
inside a JSON-RPC message (lists, objects, integers beyond 64 bits, lone surrogates, deep nesting,
1e308). `run_pipeline` returns None, or the traceback of the crash (a bug).
"""

from __future__ import annotations

import base64
import io
import json
import random
import tempfile
import traceback
from pathlib import Path
from typing import Any

from tests.cases import ROOT, build_records, load_rule_cases
from tracer.analyser import Analyser, RuleSet
from tracer.capture import ReadProblem, read_capture, record_to_dict
from tracer.events import all_findings
from tracer.lint import LintStats
from tracer.model import Finding
from tracer.report import EXTRA_FORMATS, FORMATS, make_reporter
from tracer.rules import select_rules
from tracer.view.viewdata import basics_from_line

HEADER = {
    "type": "header",
    "format": "mcptrace",
    "version": 1,
    "tool": "mcptrace/fuzz",
    "t_ns": 1,
    "transport": "stdio",
}
RECORD_FIELDS = (
    "transport",
    "conn",
    "offset",
    "eol",
    "dir_inferred",
    "http",
    "sse",
    "data",
    "t_ns",
    "seq",
    "dir",
    "text",
    "b64",
    "type",
)
HTTP_FIELDS = (
    "method",
    "url",
    "status",
    "flow",
    "content_type",
    "request_t_ns",
    "req_headers",
    "resp_headers",
    "stream",
    "session",
)
SSE_FIELDS = ("id", "event", "stream", "retry", "data")
# Members rules and tracking use as keys or compare (family 2): mutated more often than the rest.
KEY_MEMBERS = frozenset(
    {
        "method",
        "id",
        "level",
        "cursor",
        "nextCursor",
        "type",
        "code",
        "name",
        "uri",
        "progressToken",
        "requestId",
        "protocolVersion",
        "resultType",
        "elicitationId",
        "taskId",
        "status",
        "mode",
        "role",
        "mimeType",
        "ref",
        "action",
        "jsonrpc",
        "progress",
        "total",
        "_meta",
        "params",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "tools",
        "content",
        "capabilities",
        "subscriptions",
        "listChanged",
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/logLevel",
        "task",
        "ttl",
        "supportedVersions",
        "reason",
        "message",
        "data",
        "arguments",
        "annotations",
        "sampling",
        "roots",
    }
)
DATA_FIELDS = ("event", "code", "stream", "reason", "signal", "dropped")


def _deep(rng: random.Random) -> Any:
    depth = rng.choice((64, 255, 256, 300, 600, 1023, 1100))
    value: Any = rng.choice((1, "x", None, {}))
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"a": value}
    return value


def hostile(rng: random.Random) -> Any:
    """One value of a kind peers and broken files send."""
    pick = rng.randrange(16)
    if pick == 0:
        return [rng.choice(("exit", 1, None))]
    if pick == 1:
        return {"a": rng.choice((1, "x", [1]))}
    if pick == 2:
        return rng.choice((2**64 + 1, -(2**63) - 1, 2**200, 10**400 if rng.random() < 0.1 else 2**65))
    if pick == 3:
        return rng.choice(("\ud800", "a\udfffb", "\udc80x", "ok\ud83d"))
    if pick == 4:
        return _deep(rng)
    if pick == 5:
        return rng.choice((1e308, -1e308, 1.5, 1e-300))
    if pick == 6:
        return None
    if pick == 7:
        return rng.choice((True, False))
    if pick == 8:
        return rng.choice(("", "x", "POST", "exit", "closed", "text/event-stream", "2025-11-25"))
    if pick == 9:
        return rng.choice((0, -1, 1, 7, 200, 2**31))
    if pick == 10:
        return []
    if pick == 11:
        return {}
    if pick == 12:
        return [["mcp-protocol-version"]] if rng.random() < 0.5 else [[1, 2], ["a", ["b"]], "x", {"k": "v"}]
    if pick == 13:
        return rng.choice(([1, 2], [[]], [{}], [[1]]))
    if pick == 14:
        return "x" * rng.choice((1, 100, 5000))
    return rng.choice((-(2**63), 2**63 - 1, 2**64, 0.0))


def _paths(value: Any, path: tuple = (), out: list | None = None, limit: int = 400) -> list[tuple]:
    """Every path inside a JSON value (the root included), bounded."""
    if out is None:
        out = []
    if len(out) >= limit:
        return out
    out.append(path)
    if type(value) is dict:
        for k, v in value.items():
            _paths(v, (*path, k), out, limit)
    elif type(value) is list:
        for i, v in enumerate(value):
            _paths(v, (*path, i), out, limit)
    return out


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    target = value
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = new
    return value


def _dumps(value: Any) -> str:
    # the standard library writes what orjson refuses (lone surrogates as escapes, big integers)
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def seed_sessions() -> list[list[dict]]:
    """Every real mini-session as capture records (dicts), header excluded."""
    seeds = []
    for _rule, case in load_rule_cases():
        try:
            recs = build_records(case.get("messages", []), case.get("transport", "stdio"))
        except (ValueError, KeyError, TypeError):
            continue
        seeds.append([record_to_dict(r, redact=False) for r in recs])
    for path in sorted((ROOT / "fixtures" / "captures").glob("*.jsonl")):
        lines = path.read_bytes().splitlines()[1:200]
        seeds.append([json.loads(x) for x in lines if x.strip()])
    return seeds


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN is no JSON: such a message is left as it is


def _message_value(rec: dict) -> Any:
    if type(rec.get("text")) is str:
        try:
            return json.loads(rec["text"], parse_constant=_no_constant)
        except (ValueError, RecursionError):
            return None
    return None


def mutate(rng: random.Random, session: list[dict]) -> list[dict]:
    """A copy of a session with one to three hostile values put in."""
    recs = json.loads(json.dumps(session))
    if not recs:
        return recs
    for _ in range(rng.choice((1, 1, 2, 3))):
        rec = rng.choice(recs)
        r = rng.random()
        if r < 0.55 and rec.get("type") == "message":
            value = _message_value(rec)
            if value is None:
                continue
            if rng.random() < 0.08:  # an empty or odd batch
                value = rng.choice(([], [value], [[]], [1]))
            else:
                paths = _paths(value)
                keyed = [p for p in paths if p and p[-1] in KEY_MEMBERS]
                path = rng.choice(keyed if keyed and rng.random() < 0.5 else paths)
                if path and rng.random() < 0.15:  # drop a member instead
                    parent = _set(value, (), value)
                    for p in path[:-1]:
                        parent = parent[p]
                    if type(parent) is dict:
                        del parent[path[-1]]
                else:
                    value = _set(value, path, hostile(rng))
            rec["text"] = _dumps(value)
        elif r < 0.75:
            rec[rng.choice(RECORD_FIELDS)] = hostile(rng)
        elif r < 0.88:
            http = rec.get("http") if type(rec.get("http")) is dict else {}
            rec["http"] = http
            http[rng.choice(HTTP_FIELDS)] = hostile(rng)
            if rng.random() < 0.4:
                if type(http.get("req_headers")) is not list:
                    http["req_headers"] = []
                http["req_headers"].append(
                    rng.choice(([hostile(rng), "v"], ["mcp-protocol-version", hostile(rng)], [hostile(rng)]))
                )
        elif r < 0.94:
            sse = rec.get("sse") if type(rec.get("sse")) is dict else {}
            rec["sse"] = sse
            sse[rng.choice(SSE_FIELDS)] = hostile(rng)
        else:
            data = rec.get("data") if type(rec.get("data")) is dict else {}
            if rng.random() < 0.5:
                rec["type"] = "event"
            rec["data"] = data if rng.random() < 0.8 else hostile(rng)
            if type(rec["data"]) is dict:
                rec["data"][rng.choice(DATA_FIELDS)] = hostile(rng)
    return recs


def capture_bytes(recs: list[dict]) -> bytes:
    lines = [_dumps(HEADER)]
    for r in recs:
        try:
            lines.append(_dumps(r))
        except (ValueError, RecursionError):
            continue
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


_RULES: RuleSet | None = None
_REPORTERS = tuple(FORMATS) + tuple(sorted(EXTRA_FORMATS))


def ruleset() -> RuleSet:
    global _RULES
    if _RULES is None:
        _RULES = RuleSet(select_rules(None, None))
    return _RULES


def _report(fmt: str, items: list, rules: RuleSet) -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")  # strict, like stdout and -o FILE
    rep = make_reporter(fmt, out)
    ids = {x.rule for x in items if isinstance(x, Finding)}
    rep.start([r for r in rules.rules if r.id in ids])  # (the catalog's 218 descriptors cost, not test)
    rep.file("fuzz.jsonl", "capture")
    stats = LintStats(files=1)
    for item in items:
        if isinstance(item, ReadProblem):
            stats.problems += 1
            rep.problem(item)
        else:
            stats.findings += 1
            stats.by_rule[item.rule] += 1
            stats.by_severity[item.severity.label] += 1
            rep.finding(item)
    rep.end(stats)
    out.flush()
    if fmt in ("json", "sarif"):
        json.loads(raw.getvalue())  # a complete, valid JSON document, always


def run_pipeline(data: bytes, *, reports: bool = True, view: bool = True) -> str | None:
    """Read, analyse, report and preview one capture; the traceback of a crash, else None."""
    rules = ruleset()
    try:
        items: list = []
        analyser = Analyser(rules)
        for item in read_capture(io.BytesIO(data), "fuzz.jsonl"):
            if isinstance(item, ReadProblem):
                items.append(item)
                continue
            for ev in analyser.feed(item):
                items.extend(all_findings(ev))
        for ev in analyser.finish():
            items.extend(ev.findings)
        assert all(isinstance(x, Finding | ReadProblem) for x in items)
        if reports:
            for fmt in _REPORTERS:
                _report(fmt, items, rules)
        if view:
            for row, line in enumerate(data.split(b"\n")):
                basics_from_line(row, line)
        return None
    except Exception:  # the point: any exception at all is a crash to report
        return traceback.format_exc()


def run_annotator(data: bytes) -> str | None:
    """The viewer's background analysis over one capture, in process; the traceback of a crash."""
    from tracer.view.annotate import Annotator

    with tempfile.TemporaryDirectory() as tmp:
        cap = Path(tmp) / "c.jsonl"
        cap.write_bytes(data)
        work = Path(tmp) / "w"
        work.mkdir()
        try:
            Annotator(str(cap), str(work)).run()
        except Exception:
            return traceback.format_exc()
    return None


def signature(tb: str) -> str:
    """The last frame inside the project and the exception line: one per distinct bug."""
    lines = tb.strip().splitlines()
    frames = [
        x.strip()
        for x in lines
        if x.strip().startswith("File ") and "/work/main/" in x and "fuzz_support" not in x
    ]
    return (frames[-1] if frames else "?") + " | " + lines[-1][:160]


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
