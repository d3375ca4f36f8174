"""What the detail pane says about one row, as Rich renderables (no widgets here).

Bodies are capped (lines and bytes) so a 10 MB message never freezes the terminal; `e` opens the
whole body in a scrolling view that draws only what is visible.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import orjson
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tracer.classify import exact_json
from tracer.safejson import dumps_text
from tracer.view.viewdata import RowDetail
from ui.format import DIR_WORDS, ERA_STYLE, SEVERITY_NAME, SEVERITY_STYLE, VISIBLE_LINES, duration, when

MAX_JSON_LINES = 300
MAX_JSON_CHARS = 48_000
MAX_RAW_BYTES = 4096
THEME = "ansi_dark"


@functools.cache
def rule_info() -> dict[str, tuple[str, str]]:
    """rule id -> (name, spec page URL, else the spec source). Loaded on first use (the rules live in
    the analysis process; the UI needs only their names and links)."""
    from tracer.catalog.docs import spec_links
    from tracer.rules import all_rules

    return {r.id: (r.name, next(iter(spec_links(r)), r.spec)) for r in all_rules().values()}


def rule_names() -> dict[str, str]:
    """rule name -> id, so the filter takes `rule:modern-request-missing-meta` too."""
    return {name: rid for rid, (name, _) in rule_info().items()}


_LONG_INT = re.compile(rb"\d{19}")  # orjson gives integers beyond 64 bits as floats: re-read those


def section(title: str) -> Text:
    return Text(f"\n{title}", style="bold underline")


def pretty_body(raw: bytes) -> str | None:
    """Indented JSON of a message's bytes (integers exact, any depth, lone surrogates escaped),
    or None when they are not JSON."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = exact_json(raw, None)  # lone surrogate escapes: the standard library reads them
        if value is None:
            return None
    else:
        if _LONG_INT.search(raw):
            value = exact_json(raw, value)
    return dumps_text(value, orjson.OPT_INDENT_2)


def pretty_json(raw: bytes) -> tuple[str | None, bool]:
    """(indented JSON text or None when it is not JSON, truncated?)."""
    text = pretty_body(raw)  # (integers beyond 64 bits exact, deep values and lone surrogates safe)
    if text is None:
        return None, False
    truncated = False
    if len(text) > MAX_JSON_CHARS:
        text = text[:MAX_JSON_CHARS]
        truncated = True
    lines = text.split("\n")
    if len(lines) > MAX_JSON_LINES:
        text = "\n".join(lines[:MAX_JSON_LINES])
        truncated = True
    return text, truncated


def hexdump(data: bytes, limit: int = MAX_RAW_BYTES) -> str:
    out = []
    for off in range(0, min(len(data), limit), 16):
        chunk = data[off : off + 16]
        hx = " ".join(f"{b:02x}" for b in chunk)
        asc = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        out.append(f"{off:08x}  {hx:<47}  {asc}")
    return "\n".join(out)


def raw_text(data: bytes, limit: int = MAX_RAW_BYTES) -> tuple[str, str]:
    """(how, text): the bytes as text when they are UTF-8, else a hex dump."""
    try:
        text = data[:limit].decode("utf-8")
        how = "UTF-8 text"
    except UnicodeDecodeError as exc:
        if exc.start >= limit - 4 and len(data) > limit:  # cut inside a character
            text = data[: exc.start].decode("utf-8")
            how = "UTF-8 text"
        else:
            return f"not UTF-8 (invalid byte at offset {exc.start}): hex dump", hexdump(data, limit)
    visible = text.replace("\r", "␍").replace("\t", "␉")
    return how, visible


def render_detail(d: RowDetail, *, analysed_upto: int | None = None, ended: bool = False) -> RenderableType:
    """`ended`: the analysis has seen the whole capture (a request without answer will get none)."""
    group = _render_detail(d, analysed_upto=analysed_upto, ended=ended)
    for part in group.renderables:
        if isinstance(part, Text):  # (one character for one keeps every span where it was)
            part.plain = part.plain.translate(VISIBLE_LINES)
    return group


def _render_detail(d: RowDetail, *, analysed_upto: int | None, ended: bool) -> Group:
    parts: list[RenderableType] = []
    rec = d.record
    a = d.analysis or {}
    parts.append(_title(d))
    if d.problem:
        parts.append(Text(d.problem, style="yellow"))
    if a.get("broken"):
        parts.append(Text(a["broken"], style="red"))
    if rec is None:
        if d.summary is not None:
            parts.extend(_findings(a))
            parts.extend(_analysis(a, d))
        parts.append(section("Line"))
        parts.append(Text(raw_text(d.line)[1]))
        return Group(*parts)
    rtype = rec.type.value
    if rtype == "message":
        if d.summary is None:
            where = f" (it has reached row {analysed_upto:,})" if analysed_upto is not None else ""
            parts.append(
                Text(
                    f"Analysing in the background{where}: era, pairing and findings follow.",
                    style="dim italic",
                )
            )
        else:
            parts.extend(_findings(a))
            parts.extend(_analysis(a, d, ended))
    elif d.summary is not None:  # (an HTTP record or a stream's event: findings raised on it)
        parts.extend(_findings(a))
    timing = a.get("sse")
    if rec.http:
        parts.extend(_http(rec.http, rec.sse, timing))
    elif rec.sse:
        parts.extend(_http({}, rec.sse, timing))
    if rtype in ("message", "stderr"):
        parts.extend(_body(rec.raw, rtype == "message"))
    elif rec.data:
        parts.append(section("Record"))
        parts.append(_json_syntax(dumps_text(rec.data, orjson.OPT_INDENT_2)))
    return Group(*parts)


def _title(d: RowDetail) -> Text:
    rec = d.record
    t = Text()
    if rec is None:
        t.append(f"row {d.row:,}" if d.row >= 0 else "rows still being read", style="bold")
        return t
    a = d.analysis or {}
    if rec.type.value == "header":
        t.append("capture header", style="bold")
        t.append(f"  ·  {d.where or f'capture line {d.row + 1:,}'}: a new capture starts here", style="dim")
        return t
    # (a row read ahead of the index, tracer.view.viewdata: its number is pending)
    t.append(f"#{rec.seq}" if rec.seq else f"row {d.row:,}" if d.row >= 0 else "read ahead", style="bold")
    t.append("  ")
    if rec.dir is not None:
        t.append(
            DIR_WORDS[rec.dir.value] + (" (guessed from content)" if rec.dir_inferred else ""), style="bold"
        )
        t.append("  ")
    kind = a.get("kind") or rec.type.value
    t.append(kind, style="bold")
    label = a.get("method") or a.get("answers")
    if label:
        t.append(f"  {'answers ' if a.get('answers') and not a.get('method') else ''}{label}")
    if "id" in a:
        t.append(f"  id {dumps_text(a['id'])}")
    t.append(
        f"\n{when(rec.t_ns)}  ·  {rec.transport} connection {rec.conn}  ·  {len(rec.raw):,} bytes"
        f"  ·  {d.where or f'capture line {d.row + 1:,}'}",
        style="dim",
    )
    return t


def _findings(a: dict[str, Any]) -> list[RenderableType]:
    found = list(a.get("f") or ())
    for i, mem in enumerate(a.get("members") or ()):
        found.extend([*f[:3], f"batch member {i}: " + (f[3] or "$"), *f[4:]] for f in mem.get("f") or ())
    if not found:
        return []
    out: list[RenderableType] = [section(f"Findings ({len(found)})")]
    info = rule_info()
    for rule, sev, message, path, related_seq, *_ in found:
        name, spec = info.get(rule, ("", ""))
        t = Text()
        t.append("● ", style=SEVERITY_STYLE.get(sev))
        t.append(f"{rule} ", style="bold")
        t.append(f"{SEVERITY_NAME.get(sev, sev)} ", style=SEVERITY_STYLE.get(sev))
        t.append(name, style="italic")
        t.append(f"\n  {message}")
        extra = []
        if path:
            extra.append(f"at {path}")
        if related_seq:
            extra.append(f"see #{related_seq}")
        if extra:
            t.append("\n  " + " · ".join(extra), style="dim")
        if spec:
            t.append("\n  spec: ", style="dim")
            # a terminal that knows hyperlinks opens the page on click
            t.append(spec, style=f"cyan link {spec}" if spec.startswith("https://") else "dim cyan")
        out.append(t)
    return out


def _analysis(a: dict[str, Any], d: RowDetail, ended: bool = False) -> list[RenderableType]:
    out: list[RenderableType] = []
    era = a.get("era")
    if era:
        t = Text("Era  ", style="bold")
        t.append(f" {era} ", style=ERA_STYLE.get(era))
        if a.get("version"):
            t.append(f" {a['version']}")
        t.append(f"\n  why: {a.get('why') or 'no reason recorded'}", style="dim")
        out.append(Text(""))
        out.append(t)
    if a.get("reason"):
        t = Text("Invalid  ", style="bold red")
        t.append(f"{a['reason']} ({a.get('problem')})")
        out.append(t)
    ps = a.get("ps")
    if ps or a.get("pr"):
        t = Text("Pairing  ", style="bold")
        status = ps or ""
        if ps == "new":
            status = (
                "answered"
                if a.get("partner") is not None
                else ("no answer in the capture" if ended else "awaiting an answer")
            )
        t.append(status)
        if a.get("lat") is not None:
            t.append(f"  ·  latency {duration(a['lat'])}")
        if a.get("pr"):
            t.append(f"\n  why: {a['pr']}", style="dim")
        if a.get("prow") is not None:
            t.append(f"\n  partner: #{a.get('partner')} — press p to jump there", style="dim")
        out.append(t)
    if a.get("op") is not None:
        t = Text("Operation  ", style="bold")
        t.append(f"multi round-trip (MRTR): first round at #{a['op']}")
        t.append("; the operation's rounds are marked ⟲ in the list", style="dim")
        out.append(t)
    members = a.get("members")
    if members:
        out.append(section(f"Batch ({len(members)} members)"))
        for i, m in enumerate(members):
            label = m.get("method") or (f"answers {m['answers']}" if m.get("answers") else "")
            ident = f" id {dumps_text(m['id'])}" if "id" in m else ""
            pair = f" · {m['pr']}" if m.get("pr") else ""
            out.append(Text(f"  [{i}] {m.get('kind')} {label}{ident}{pair}"))
    return out


def _http(
    http: dict[str, Any], sse: dict[str, Any] | None, timing: dict[str, Any] | None = None
) -> list[RenderableType]:
    out: list[RenderableType] = [section("HTTP")]
    if http:
        line = f"{http.get('method') or ''} {http.get('url') or ''}".strip()
        status = http.get("status")
        t = Text(line, style="bold")
        if status is not None:
            t.append(f"  →  {status}", style="green" if 200 <= int(status) < 300 else "red")
        if http.get("content_type"):
            t.append(f"  ·  {http['content_type']}", style="dim")
        out.append(t)
        for key, title in (("req_headers", "request headers"), ("resp_headers", "response headers")):
            headers = http.get(key)
            if headers:
                table = Table.grid(padding=(0, 1))
                table.add_column(style="cyan", no_wrap=True)
                table.add_column()
                pairs = headers.items() if isinstance(headers, dict) else headers
                for k, v in pairs:
                    table.add_row(str(k), str(v))
                out.append(Text(title, style="dim"))
                out.append(table)
    if sse:
        t = Text("SSE event", style="bold")
        for k in ("id", "event", "stream", "retry"):
            if sse.get(k) is not None:
                t.append(f"  {k} {sse[k]}")
        for k, v in sse.items():
            if k not in ("id", "event", "stream", "retry") and v is not None:
                t.append(f"  {k} {v}", style="dim")
        if timing:
            t.append(
                f"\n  event {timing['n']} of its stream: {duration(timing['since_open'])} after the stream "
                f"opened, {duration(timing['since_prev'])} after the previous event",
                style="dim",
            )
        out.append(t)
    return out


def _json_syntax(text: str) -> Syntax:
    # JSON escapes C0 controls but not DEL, C1 or the bidi controls: they are made visible here too
    return Syntax(
        text.translate(VISIBLE_LINES), "json", theme=THEME, word_wrap=True, background_color="default"
    )


def _body(raw: bytes, is_message: bool) -> list[RenderableType]:
    out: list[RenderableType] = []
    if is_message:
        text, truncated = pretty_json(raw)
        if text is not None:
            out.append(section("JSON"))
            out.append(_json_syntax(text))
            if truncated:
                out.append(Text("… capped here; press e to see the whole body", style="yellow"))
    how, shown = raw_text(raw)
    out.append(section(f"Raw bytes ({len(raw):,}, {how})"))
    out.append(Text(shown, style="dim" if is_message else ""))
    if len(raw) > MAX_RAW_BYTES:
        out.append(
            Text(f"… {len(raw) - MAX_RAW_BYTES:,} more bytes; press e to see them all", style="yellow")
        )
    return out
