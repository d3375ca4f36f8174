"""MCP8xx: the stdio transport. Framing (one JSON-RPC message per `\\n`-terminated UTF-8 line),
stderr, direction rules of the modern stdio binding, and the process life cycle.

These rules run on stdio records only (transport "stdio": what `mcptrace stdio` captures). On
stdio, a line that is not a JSON-RPC message is reported here, with its stream byte offset and its
bytes shown, instead of by the generic envelope rules: MCP801 (stray line) and MCP802 (a message
spread over several lines) replace MCP101 (not JSON) and MCP103 (a bare JSON scalar), and MCP803
replaces MCP101's "not UTF-8", so a banner line is one finding, not two. Likewise MCP805 is the
stdio form of MCP206/MCP207, which stay silent on stdio.

The multi-line facts are `Session.stdio` (tracer.state.stdio), kept by the stdio updater (tracer.update.stdio).
"""

from __future__ import annotations

from tracer.catalog.registry import at_end, end_rule, rule
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import Analysed, Direction, Hit, Kind, Severity
from tracer.protocol import L1, MODERN
from tracer.state.stdio import show_bytes, unusual_line, where

_KIND_ERROR, _KIND_NOTIFICATION = Kind.ERROR, Kind.NOTIFICATION
_KIND_REQUEST, _KIND_RESULT = Kind.REQUEST, Kind.RESULT

RACE_MS = 50  # a message this soon after the cancel may have crossed it on the wire


STDIO_PAGE = "spec/2026-07-28/basic/transports/stdio.mdx"
EVERY_KIND = (Kind.REQUEST, Kind.NOTIFICATION, Kind.RESULT, Kind.ERROR, Kind.INVALID, Kind.BATCH)
RECOGNIZED_MODERN_ERRORS = frozenset({-32020, -32021, -32022})


def _symptom(d: Direction | None) -> str:
    reader = "a host reading the server's stdout" if d is _DIR_S2C else "the server reading its stdin"
    return f'{reader} fails to parse it (e.g. "Unexpected token ... is not valid JSON")'


def _advice(d: Direction | None) -> str:
    return " Log to stderr instead of stdout." if d is _DIR_S2C else ""


def _lines(n: int) -> str:
    return "1 line" if n == 1 else f"{n} lines"


def _stdio(m: Analysed) -> bool:
    return m.rec.transport == "stdio"


def _wrong_kind_possible(kind, method, direction, versions) -> bool:
    """MCP805 fires only on a request the server writes or a response the client writes."""
    return direction is _DIR_S2C if kind is _KIND_REQUEST else direction is _DIR_C2S


def _verdict(m: Analysed, s):
    # inlined _stdio: MCP801 and MCP802 call this on every stdio message
    if m.rec.transport != "stdio":
        return None
    st = s.stdio
    return st.verdict(m) if st is not None else None


def _sender(d: Direction | None) -> str:
    return "the server" if d is _DIR_S2C else "the client"


def _span(g) -> str:
    if g.offset is None:
        return _lines(g.lines)
    end = f"–{g.end_offset - 1}" if g.end_offset is not None else ""
    return f"{_lines(g.lines)} at bytes {g.offset}{end}"


_STRAY_FRAMES = frozenset({"stray", "blank", "unjoinable"})


def _stray_line_hits(m: Analysed, v):
    rec = m.rec
    g = v.abandoned
    if g is not None:
        yield Hit(
            f"{_sender(g.dir)} wrote {_span(g)} starting {v.first_line} that begin a JSON value "
            f"spread over several lines, but this message came before it was complete; "
            f"{_symptom(g.dir)}.{_advice(g.dir)}",
            offset=g.offset,
            related_seq=g.first_seq,
        )
    if v.frame == "stray":
        tail = "" if rec.eol else " (the stream ended in the middle of this line: no final newline)"
        what = {
            "not-object": "a bare JSON value, not a JSON-RPC message object",
            "too-deep": "JSON nested too deeply for any parser to read",
        }.get(m.problem or "", "not a JSON-RPC message")
        if v.not_utf8:
            what += " (nor UTF-8)"
        yield Hit(
            f"{where(rec)}: {what}: {show_bytes(rec.raw)}{tail}; {_symptom(rec.dir)}.{_advice(rec.dir)}"
        )
    elif v.frame == "blank":
        shown = "an empty line" if not rec.raw else f"a whitespace-only line {show_bytes(rec.raw)}"
        yield Hit(f"{where(rec)}: {shown}; a strict reader fails to parse it", severity=Severity.WARNING)
    elif v.frame == "unjoinable":
        g = v.group
        yield Hit(
            f"{_sender(g.dir)} wrote {_span(g)} starting {v.first_line} that are not JSON, "
            f"alone or joined; {_symptom(g.dir)}.{_advice(g.dir)}",
            offset=g.offset,
            related_seq=g.first_seq,
        )


def _not_one_line_hits(m: Analysed, v):
    rec = m.rec
    if v.frame == "joined":
        g = v.group
        j = g.joined
        what = (
            f"a {j.method} request"
            if j.kind is _KIND_REQUEST
            else f"a {j.method} notification"
            if j.kind is _KIND_NOTIFICATION
            else f"a response (id {j.id!r})"
            if j.kind in (_KIND_RESULT, _KIND_ERROR)
            else "a JSON value"
        )
        how = "a raw newline inside a string" if g.raw_newline_in_string else "pretty-printed JSON"
        yield Hit(
            f"{_sender(g.dir)} wrote {what} over {_span(g)} ({how}) starting {v.first_line}; "
            f"stdio messages MUST NOT contain embedded newlines, so a reader sees {g.lines} broken "
            f"lines instead of one message",
            offset=g.offset,
            related_seq=g.first_seq,
        )
        return
    if v.frame:
        return
    if not rec.eol:
        yield Hit(
            f"{where(rec)}: the stream ended without the final newline of this message; a "
            f'reader waiting for "\\n" never sees it',
            severity=Severity.WARNING,
        )
    if v.crlf_first:
        yield Hit(
            f'{where(rec)}: {_sender(rec.dir)} ends lines with "\\r\\n" (first here); messages '
            f'are delimited by "\\n", so a strict reader sees a trailing "\\r"',
            severity=Severity.WARNING,
        )


@rule(
    "MCP801",
    "stdio-stray-line",
    Severity.ERROR,
    kinds=EVERY_KIND,
    scope="stdio",
    gate=unusual_line,
    spec=f"{STDIO_PAGE}:L18-21; spec/2025-11-25/basic/transports.mdx:L33-35; "
    "spec/2024-11-05/basic/transports.mdx:L27-29",
)
def stdio_stray_line(m: Analysed, s):
    """A line on stdio is not a JSON-RPC message: a banner, a log line or a stray `print()` on the
    server's stdout, or anything else on the client's stdin. The finding gives the stream, the byte
    offset of the line and its bytes, so the `print()` that broke the host can be found. A bare
    JSON scalar (`42`, `"ready"`) counts as a stray line; an empty or whitespace-only line is a
    warning (inferred leniency). On stdio this rule replaces MCP101/MCP103 for such lines.

    "The server MUST NOT write anything to its stdout that is not a valid MCP message"; "the client
    MUST NOT write anything to the server's stdin that is not a valid MCP message".

    Example: the server prints `Starting weather server v1.2` before its first response.
    """
    v = _verdict(m, s)
    # a plain function on the common path (a line that parsed, nothing abandoned): it runs on every
    # stdio message, and a generator would cost its setup each time
    if v is None or (v.abandoned is None and v.frame not in _STRAY_FRAMES):
        return None
    return _stray_line_hits(m, v)


@at_end("MCP801")
def stdio_stray_line_at_end(s, end_t_ns: int):
    """Lines that began a JSON value spread over several lines when the stream ended."""
    st = s.stdio
    if st is None:
        return
    for g in st.groups.values():
        if g.lines == 1:
            where_ = "server stdout" if g.dir is _DIR_S2C else "client → server stdin"
            at = f"{where_} byte {g.offset}" if g.offset is not None else where_
            yield (
                g.at,
                Hit(
                    f"{at}: not a JSON-RPC message: {show_bytes(g.first_line)} (the stream ended "
                    f"before anything completed it); {_symptom(g.dir)}.{_advice(g.dir)}",
                    offset=g.offset,
                ),
            )
        else:
            yield (
                g.at,
                Hit(
                    f"{_sender(g.dir)} wrote {_span(g)} starting {show_bytes(g.first_line)} that "
                    f"began a JSON value the stream never finished; {_symptom(g.dir)}",
                    offset=g.offset,
                    related_seq=g.first_seq,
                ),
            )


@rule(
    "MCP802",
    "stdio-message-not-one-line",
    Severity.ERROR,
    kinds=EVERY_KIND,
    scope="stdio",
    gate=unusual_line,
    spec=f"{STDIO_PAGE}:L13; spec/2025-11-25/basic/transports.mdx:L28; spec/2024-11-05/basic/transports.mdx:L24",
)
def stdio_message_not_one_line(m: Analysed, s):
    """A message is not exactly one `\\n`-terminated line: it is spread over several lines
    (pretty-printed JSON, or a raw newline inside a string) — detected as lines that fail to parse
    alone but parse when joined, reported once on the line that completes the message. Warnings: a
    message not terminated by `\\n` when the stream ends, and `\\r\\n` line endings (inferred;
    reported once per direction, on the first such line).

    "Messages are delimited by newlines, and MUST NOT contain embedded newlines."

    Example: a server writes `json.dumps(response, indent=2)` followed by a newline.
    """
    v = _verdict(m, s)
    # the common path without a generator (see MCP801): a whole line that parsed, ended by "\n"
    if v is None or (v.frame != "joined" and (v.frame or (m.rec.eol and not v.crlf_first))):
        return None
    return _not_one_line_hits(m, v)


@rule(
    "MCP803",
    "stdio-not-utf8",
    Severity.ERROR,
    kinds=(Kind.INVALID,),
    scope="stdio",
    spec="spec/2025-11-25/basic/transports.mdx:L7; spec/2026-07-28/basic/transports/index.mdx:L29-30",
)
def stdio_not_utf8(m: Analysed, s):
    """A message on stdin or stdout is not valid UTF-8 (it would be JSON with its bad bytes
    replaced). The finding gives the offset of the first invalid byte in the stream. A line that is
    not JSON either is a stray line (MCP801). On stdio this replaces MCP101's "not UTF-8".

    "JSON-RPC messages MUST be UTF-8 encoded" (2025-03-26 and later); 2024-11-05 says nothing about
    the encoding, so there it is a warning.

    Example: a server writes a Latin-1 `é` (byte 0xE9) inside a tool result.
    """
    if m.problem != "not-utf8" or not _stdio(m) or m.batch_seq is not None:
        return
    v = _verdict(m, s)
    if v is not None and v.not_utf8:
        return  # binary junk rather than a message: MCP801 reports the line
    rec = m.rec
    try:
        rec.raw.decode("utf-8")
        return
    except UnicodeDecodeError as exc:
        start, end = exc.start, exc.end
    at = f"byte {rec.offset + start}" if rec.offset is not None else f"byte {start} of the line"
    stream = "server stdout" if rec.dir is _DIR_S2C else "client → server stdin"
    bad = " ".join(f"0x{b:02X}" for b in rec.raw[start:end])
    context = show_bytes(rec.raw[max(0, start - 30) : start + 30], limit=60)
    sev = Severity.WARNING if m.version == L1 else None
    yield Hit(
        f"{stream} {at}: invalid UTF-8 ({bad}) in {context}; MCP messages MUST be UTF-8",
        severity=sev,
        offset=rec.offset + start if rec.offset is not None else None,
    )


@end_rule(
    "MCP804",
    "stdio-stderr-not-utf8",
    Severity.WARNING,
    scope="stdio",
    spec=f"{STDIO_PAGE}:L14-17; spec/2025-11-25/basic/transports.mdx:L29-32",
)
def stdio_stderr_not_utf8(s, end_t_ns: int):
    """The server's stderr is not UTF-8. stderr is free-form logging ("The server MAY write UTF-8
    strings to stderr"), never a protocol violation otherwise, and clients SHOULD NOT treat it as an
    error signal; but a host that decodes it as UTF-8 garbles or drops these lines. Reported once
    per session with the count and the first lines.

    Example: a server logs a file name in Latin-1 to stderr.
    """
    st = s.stdio
    if st is None or not st.stderr_bad_count:
        return
    seq, offset, raw = st.stderr_bad[0]
    at = f" at stderr byte {offset}" if offset is not None else ""
    yield (
        None,
        Hit(
            f"{st.stderr_bad_count} stderr line(s) are not UTF-8; the first{at} (seq {seq}): "
            f"{show_bytes(raw)}",
            related_seq=seq,
            offset=offset,
        ),
    )


@rule(
    "MCP805",
    "stdio-wrong-message-kind",
    Severity.ERROR,
    kinds=(Kind.REQUEST, Kind.RESULT, Kind.ERROR),
    versions=MODERN,
    possible=_wrong_kind_possible,
    scope="stdio",
    spec=f"{STDIO_PAGE}:L35-37, :L55",
)
def stdio_wrong_message_kind(m: Analysed, s):
    """In modern (2026-07-28) stdio traffic the client writes a JSON-RPC response to the server's
    stdin, or the server writes a JSON-RPC request to its stdout. This is the stdio form of
    MCP206/MCP207, which stay silent on stdio so the message is reported once.

    "The client MUST NOT write JSON-RPC responses"; "The server MUST NOT write JSON-RPC requests to
    stdout" (server-to-client interactions travel in `InputRequiredResult`).

    Example: a modern server writes `{"jsonrpc":"2.0","id":0,"method":"roots/list"}` to stdout.
    """
    # a plain function, not a generator: it runs on every modern stdio request and response
    if not _stdio(m):
        return None
    d = m.rec.dir
    if m.kind is _KIND_REQUEST and d is _DIR_S2C:
        return Hit(
            f"the server wrote a {m.method} request to stdout; a 2026-07-28 server MUST NOT send "
            f"requests on stdio (use an InputRequiredResult)",
            path="$.method",
        )
    if m.kind is not _KIND_REQUEST and d is _DIR_C2S:
        return Hit(
            "the client wrote a JSON-RPC response to the server's stdin; a 2026-07-28 client MUST "
            "NOT write responses on stdio",
            path="$.id",
        )
    return None


@rule(
    "MCP806",
    "stdio-output-after-cancel",
    Severity.ERROR,
    kinds=(Kind.NOTIFICATION,),
    methods=("notifications/progress",),
    versions=MODERN,
    scope="stdio/pairing",
    spec=f"{STDIO_PAGE}:L78-83",
)
def stdio_output_after_cancel(m: Analysed, s):
    """In modern stdio traffic the server sends a progress notification for a request after the
    client cancelled it with `notifications/cancelled`. Messages sent within 50 ms of the cancel are
    not flagged (they may have crossed it). A *response* after the cancel is MCP504's finding (an
    error in modern traffic), not reported again here.

    "Servers ... MUST NOT send any further messages for it."

    Example: `notifications/cancelled` for request 4, then a progress notification with request 4's
    progressToken a second later.
    """
    if not _stdio(m) or m.rec.dir is not _DIR_S2C:
        return
    params = m.params
    token = params.get("progressToken") if params else None
    if token is None or type(token) is bool:
        return
    for req in s.pending.values():
        if req.cancelled_seq is None or req.dir is not _DIR_C2S:
            continue
        meta = req.meta
        their = meta.get("progressToken") if meta else None
        if their is None or their != token or type(their) is not type(token):
            continue
        gap_ms = (m.rec.t_ns - (req.cancelled_t_ns or m.rec.t_ns)) / 1e6
        if gap_ms >= RACE_MS:
            yield Hit(
                f"progress for {req.method} (seq {req.seq}) {gap_ms:.0f} ms after the client "
                f"cancelled it (seq {req.cancelled_seq}); a server MUST NOT send anything more "
                f"for a cancelled request",
                path="$.params.progressToken",
                related_seq=req.cancelled_seq,
            )
        return


@rule(
    "MCP807",
    "stdio-fallback-despite-modern-error",
    Severity.WARNING,
    kinds=(Kind.REQUEST,),
    methods=("initialize",),
    scope="stdio/pairing",
    spec=f"{STDIO_PAGE}:L121-141",
)
def stdio_fallback_despite_modern_error(m: Analysed, s):
    """A dual-era client on stdio falls back to `initialize` although its `server/discover` probe
    got a recognized modern error (-32020, -32021, -32022): the server is modern, and the client
    should retry with a version from the error's `supported` list. Registered for every version
    because the fallback message itself is a legacy `initialize`.

    "The server returns a recognized modern JSON-RPC error such as UnsupportedProtocolVersionError:
    ... Do not fall back to initialize."

    Example: `server/discover` answered with -32022, then `initialize`.
    """
    if not _stdio(m) or m.rec.dir is not _DIR_C2S:
        return
    disc = s.discover
    if disc is None or not disc.before_initialize or disc.outcome != "error":
        return
    if disc.error_code in RECOGNIZED_MODERN_ERRORS:
        yield Hit(
            f"the server/discover probe (seq {disc.request_seq}) got the modern error "
            f"{disc.error_code}, so the server is modern; retry with a supported version "
            f"instead of falling back to initialize",
            related_seq=disc.request_seq,
        )


@rule(
    "MCP808",
    "stdio-no-discover-probe",
    Severity.INFO,
    kinds=(Kind.REQUEST,),
    versions=MODERN,
    scope="stdio",
    spec=f"{STDIO_PAGE}:L121-126, :L143-147",
)
def stdio_no_discover_probe(m: Analysed, s):
    """The client's first request on stdio is a modern request other than `server/discover`.
    Dual-era clients SHOULD probe with `server/discover` first; for modern-only clients it is
    RECOMMENDED (a legacy server may otherwise run an era-ambiguous `tools/call` under legacy
    semantics instead of failing).

    A probe the client sent just before to a sibling process of the same capture, answered with a
    DiscoverResult, counts: the TypeScript SDK v2 probes a disposable process spawned from the same
    command, then starts the session on a fresh one.

    Example: a modern client's first line is a `tools/call` with 2026-07-28 `_meta`.
    """
    # a plain function, not a generator: it runs on every modern request
    v = _verdict(m, s)
    if v is None or not v.first_client_request or m.rec.dir is not _DIR_C2S:
        return None
    if m.method != "server/discover" and not v.probed_on_sibling:
        return Hit(f"the client's first request is {m.method}, not a server/discover probe", path="$.method")
    return None


@end_rule(
    "MCP809",
    "stdio-server-outlives-stdin",
    Severity.INFO,
    scope="stdio",
    spec=f"{STDIO_PAGE}:L102-104; spec/2025-11-25/basic/lifecycle.mdx:L228-239",
)
def stdio_server_outlives_stdin(s, end_t_ns: int):
    """The server did not exit promptly after its stdin reached end-of-file: `mcptrace stdio` had
    to send SIGTERM (or SIGKILL) after its grace period, and the finding counts the notifications
    and requests the server wrote after the EOF. A process-level observation, recorded by the tee
    as `stdin-eof` and `terminate` events.

    "Servers SHOULD exit promptly when their standard input is closed or reads return end-of-file."

    Example: a server that ignores EOF on stdin and keeps a timer running.
    """
    st = s.stdio
    if st is None or st.stdin_eof is None or not st.terminated:
        return
    eof_seq, _ = st.stdin_eof
    seq, data = st.terminated[0]
    signals = " then ".join(str(d.get("signal")) for _, d in st.terminated)
    after = data.get("after_ms")
    when = f"{after / 1000:.1f} s" if isinstance(after, int | float) else "the grace period"
    wrote = (
        f"; it wrote {st.writes_after_eof} notification(s)/request(s) after the EOF"
        if st.writes_after_eof
        else ""
    )
    yield (
        None,
        Hit(
            f"the server was still running {when} after its stdin reached EOF (seq {eof_seq}); "
            f"mcptrace sent {signals}{wrote}",
            related_seq=seq,
        ),
    )
