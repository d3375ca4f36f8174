"""HAR (HTTP Archive 1.2) files: browser devtools, HTTP Toolkit, Charles, mitmproxy's `hardump`.

Each entry is an exchange with whole bodies; entries are replayed through the HTTP door's recorder
(tracer.http.recorder) in wire order, so a HAR gives the same envelopes as a live capture of the
same traffic. Times come from `startedDateTime` and `timings`; an SSE event gets its own time when
the entry lists it under `_eventSourceMessages` (mcptrace's HAR export, Chrome DevTools' field),
else the time the response ended (a HAR holds bodies, not chunks). The file is parsed whole.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

from tracer.capture import ReadProblem
from tracer.classify import parse_json
from tracer.http.flows import CHUNK, END, FAILED, HEAD, REQUEST, Step, replay
from tracer.http.headers import header
from tracer.http.recorder import Exchange
from tracer.http.state import UNFINISHED
from tracer.inputs.harcut import cut_log, cut_short
from tracer.model import Record

_HEAD = re.compile(rb'\A\s*\{\s*"log"\s*:')


def sniff(head: bytes) -> bool:
    return _HEAD.match(head.removeprefix(b"\xef\xbb\xbf")) is not None


def _ns(started: str) -> int:
    try:
        t = int(datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp() * 1e9)
    except (ValueError, AttributeError, TypeError, OverflowError, OSError):
        return 0
    return t if 0 <= t < 1 << 62 else 0  # (year 9999 is past what a 64-bit nanosecond clock holds)


# A timing beyond a year is no timing (a hostile HAR writes 1e308): it is left out, as if absent,
# so nanosecond arithmetic never overflows.
MAX_MS = 365 * 86_400_000


def _ok_ms(v: Any) -> bool:
    return type(v) in (int, float) and 0 <= v <= MAX_MS


def _ms(timings: dict, *names: str) -> float:
    total = 0.0
    for name in names:
        v = timings.get(name)
        if _ok_ms(v) and v > 0:
            total += v
    return total


def _headers(items: Any) -> list[list[str]]:
    out = []
    for h in items if isinstance(items, list) else ():
        if isinstance(h, dict) and isinstance(h.get("name"), str):
            out.append([h["name"], str(h.get("value", ""))])
    return out


def _text(obj: Any) -> bytes | None:
    """The body bytes of a postData / content object (text, maybe base64), or None when absent."""
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        return None
    text = obj["text"]
    if obj.get("encoding") == "base64":
        try:
            return base64.b64decode(text, validate=False)
        except (binascii.Error, ValueError):
            return text.encode("utf-8", "surrogatepass")
    return text.encode("utf-8", "surrogatepass")


def _sse_bytes(content: Any, body: bytes | None) -> bytes | None:
    """An event stream is UTF-8 by definition (WHATWG), but a HAR writer that follows the HTTP/1.1
    default for `text/*` without a charset stores it decoded as Latin-1 (mitmproxy's `hardump`
    does): undo that when the text only has Latin-1 characters and they spell valid UTF-8."""
    if body is None or not isinstance(content, dict) or content.get("encoding") == "base64":
        return body
    text = content.get("text", "")
    try:
        raw = text.encode("latin-1")
        raw.decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return body
    return raw


def connect_apart(log: Any) -> bool:
    """Whether the writer of LOG (a HAR's `log`) times an entry's `connect` apart from the entry.
    HAR 1.2 (and a browser) has blocked, dns, connect, send, wait, receive one after the other from
    `startedDateTime`. mitmproxy's `hardump` does not: `startedDateTime` is when the request began
    to arrive, send, wait and receive follow it (the flow file's timestamps), and `connect` is the
    server connection's set-up, done before the request (its eager strategy: when the client
    connected) or inside `wait` (lazy); its `time` adds it in. Read in line, a set-up slower than
    the exchange (a loaded proxy: 33 ms) put an `initialize` after the requests its answer's
    session id made possible, and one client's session read as two connections."""
    creator = log.get("creator") if isinstance(log, dict) else None
    return isinstance(creator, dict) and creator.get("name") == "mitmproxy"


def _entry_steps(entry: dict, index: int, apart: bool = False) -> list[Step]:
    """The steps of ENTRY; APART: its writer times `connect` apart from it (connect_apart)."""
    req = entry.get("request") or {}
    resp = entry.get("response")
    if not isinstance(resp, dict):  # a string, a number, a list: no response was recorded
        resp = {}
    timings = entry.get("timings") if isinstance(entry.get("timings"), dict) else {}
    t0 = _ns(entry.get("startedDateTime", ""))
    before = ("send",) if apart else ("blocked", "dns", "connect", "send")  # ssl is inside connect
    sent = t0 + int(_ms(timings, *before) * 1e6)
    head = sent + int(_ms(timings, "wait") * 1e6)
    total = entry.get("time")
    if apart:
        end = head + int(_ms(timings, "receive") * 1e6)
    else:
        end = t0 + int(total * 1e6) if _ok_ms(total) else head
    ex = Exchange(
        id=f"har-{index}",
        client="",
        method=str(req.get("method", "GET")),
        url=str(req.get("url", "")),
        req_headers=_headers(req.get("headers")),
        req_body=_text(req.get("postData")),
        t_ns=sent,
    )
    version = req.get("httpVersion")
    if isinstance(version, str) and 0 < len(version) <= 16:
        ex.http_version = version
    conn = entry.get("connection")  # HAR 1.2: the id of the client's TCP connection, when the writer knew it
    if isinstance(conn, str) and len(conn) <= 256:
        ex.client_id = conn
    steps = [Step(sent, REQUEST, index, ex)]
    status = resp.get("status")
    # 0 or -1: aborted, blocked, never answered. A status no HTTP response has (true, four digits
    # and more) is no response either: past 64 bits it parsed as a float here and as an int in the
    # entry-by-entry reader (harstream), and a converted capture cannot hold it (its line was lost)
    if type(status) is not int or not 0 < status < 1000:
        why = resp.get("_error") or entry.get("_error") or "no response"
        steps.append(Step(end, FAILED, index, ex, why=str(why)))
        return steps
    ex.status = status
    ex.resp_headers = _headers(resp.get("headers"))
    server = entry.get("serverIPAddress")  # where the server was reached (DNS rebinding: MCP706)
    ex.server = server if isinstance(server, str) and len(server) <= 64 else ""
    ex.t_resp_ns = head
    steps.append(Step(head, HEAD, index, ex))
    content = resp.get("content")
    body = _text(content)
    ctype = header(ex.resp_headers, "content-type") or ""
    sse = ctype.split(";", 1)[0].strip().lower() == "text/event-stream"
    if sse and "charset" not in ctype.lower():
        body = _sse_bytes(content, body)
    timed = _timed_events(entry.get("_eventSourceMessages"), body, head, max(end, head)) if sse else None
    if timed is not None:
        parts, body = timed
        steps.extend(Step(t, CHUNK, index, ex, body=part) for t, part in parts)
    why = resp.get("_error")  # a stream that ended otherwise than by the server finishing it
    # mitmproxy's `hardump` writes an answer whose body never ended (the client gave up on its
    # stream, the proxy stopped) with no `_error` and `receive` the integer 0 (a measured one is a
    # float); its flow file says "Client disconnected." there. Read as the server finishing it, a
    # cancelled request's stream was judged ended without its response (MCP708) and the request
    # unanswered (MCP211). Who ended it the HAR does not say: tracer.http.state.UNFINISHED.
    if not why and apart and type(timings.get("receive")) is int and timings["receive"] == 0:
        why = UNFINISHED
    steps.append(Step(max(end, head), END, index, ex, body=body, why=why if isinstance(why, str) else ""))
    return steps


def _event_blocks(body: bytes) -> tuple[list[bytes], bytes]:
    """BODY (an event stream) cut after each blank line that ends an event, and what follows the
    last one. A blank line with no field before it ends no event: it goes with the next one."""
    blocks: list[bytes] = []
    cur = bytearray()
    fields = False
    for line in body.splitlines(keepends=True):
        cur += line
        if line in (b"\n", b"\r\n", b"\r"):
            if fields:
                blocks.append(bytes(cur))
                cur = bytearray()
                fields = False
        else:
            fields = True
    return blocks, bytes(cur)


EVENT_SLACK_NS = 1_000_000_000  # an event time this far outside its response is on another clock


def _timed_events(messages: Any, body: bytes | None, head: int, end: int):
    """([(time, the bytes of one event)], the rest of BODY) when MESSAGES (an entry's
    `_eventSourceMessages`: one `{"time": seconds, ...}` per event) times each event of BODY; else
    None (the events then get the time the response ended), as when a time is more than a second
    outside the response (another clock). Times stay within the response, in order: a HAR's own
    cannot move an event before its stream's head or after its end."""
    if not body or type(messages) is not list or not messages:
        return None
    blocks, rest = _event_blocks(body)
    if len(blocks) != len(messages):
        return None
    out = []
    prev = head
    for msg, block in zip(messages, blocks, strict=True):
        t = msg.get("time") if type(msg) is dict else None
        if type(t) not in (int, float) or not 0 <= t < 1e10:  # (seconds: NaN, 1e308, a string: none)
            return None
        t_ns = int(t * 1e9)
        if not head - EVENT_SLACK_NS <= t_ns <= end + EVENT_SLACK_NS:
            return None  # another clock (times from the stream's start, in ms...): not this stream's
        prev = min(max(t_ns, prev), end)
        out.append((prev, block))
    return out, rest


def _cut(fh: IO[bytes], data: bytes, source: str) -> tuple[dict, ReadProblem] | None:
    """The log of a document cut short (its whole entries, its creator), and the read problem
    saying where it ends."""
    text = cut_short(data)
    if text is None:
        return None
    log = cut_log(text)
    entries = log["entries"]
    try:
        end = fh.tell()  # (past a byte order mark the caller read)
    except (OSError, ValueError):
        end = len(data)
    return log, cut_problem(source, end, text.count("\n") + 1, len(entries))


def cut_problem(source: str, end: int, line: int, entries: int) -> ReadProblem:
    """The read problem of a HAR document cut short at byte END (line LINE) after ENTRIES whole
    entries (tracer.inputs.harstream says it too, for the viewer)."""
    return ReadProblem(
        source,
        line,
        f"the HAR document is cut short: it ends at byte {end} (line {line}) before it is complete; "
        f"whole entries before the cut, read: {entries}",
        torn=True,
    )


def no_request(source: str, i: int) -> ReadProblem:
    return ReadProblem(source, i, f"HAR entry {i} has no request; skipped")


def read(fh: IO[bytes], source: str) -> Iterator[Record | ReadProblem]:
    data = fh.read()
    doc, problem, why = parse_json(data)  # (big integers and lone surrogates are JSON too)
    cut = None
    if problem is not None:
        cut = _cut(fh, data, source)
        if cut is None:
            yield ReadProblem(source, 1, f"not a readable HAR file: {why}")
            return
        doc = {"log": cut[0]}
    del data
    log = doc.get("log") if isinstance(doc, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        yield ReadProblem(source, 1, "a HAR file without log.entries")
        return
    steps: list[Step] = []
    problems = [cut[1]] if cut is not None else []
    apart = connect_apart(log)
    for i, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
            problems.append(no_request(source, i))
            continue
        steps.extend(_entry_steps(entry, i, apart))
    yield from problems
    yield from replay(steps, source)
