"""What a row's own capture line says, parsed without any analysis: the list's columns and previews
(tracer.view.viewdata shows them; its filters read them too)."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any

import orjson

from tracer.classify import classify_raw
from tracer.safejson import dumps_text, safe_text

PREVIEW = 400  # characters of stderr / text kept in a row's basics


@dataclass(slots=True)
class RowBasics:
    """What the raw line says, before (or without) analysis."""

    row: int
    rtype: str  # header message stderr http event broken blank
    t_ns: int = 0
    seq: int = 0
    dir: str | None = None
    kind: str | None = None
    method: str | None = None
    id: Any = None
    has_id: bool = False
    conn: str | None = None
    transport: str | None = None
    status: int | None = None
    label: str = ""  # what the list shows in the method column for non-messages
    preview: str = ""  # a few words about the message: tool name, error message, progress...
    size: int = 0  # bytes of the line
    dir_inferred: bool = False


def basics_from_line(row: int, line: bytes) -> RowBasics:
    if not line.strip():
        return RowBasics(row, "blank", label="(blank line)", size=len(line))
    try:
        obj = orjson.loads(line)
        if type(obj) is not dict:
            raise ValueError("not an object")
        rtype = obj.get("type")
    except (orjson.JSONDecodeError, ValueError):
        return RowBasics(row, "broken", label="broken capture line", size=len(line))
    b = RowBasics(
        row, rtype if rtype in ("header", "message", "stderr", "http", "event") else "broken", size=len(line)
    )
    t = obj.get("t_ns")
    b.t_ns = t if type(t) is int else 0
    seq = obj.get("seq")
    b.seq = seq if type(seq) is int else 0
    d = obj.get("dir")
    b.dir = d if d in ("c2s", "s2c") else None
    b.conn = str(obj.get("conn")) if obj.get("conn") is not None else None
    b.transport = obj.get("transport")
    b.dir_inferred = bool(obj.get("dir_inferred"))
    http = obj.get("http") if type(obj.get("http")) is dict else None
    if http:
        status = http.get("status")
        b.status = status if type(status) is int else None
    if b.rtype == "message":
        raw = _raw_of(obj)
        c = classify_raw(raw)
        b.kind = c.kind.value
        # (a method or preview may hold lone surrogates, legal JSON escapes no terminal can write)
        b.method = safe_text(c.method) if c.method is not None else None
        b.id = safe_text(c.id) if type(c.id) is str else c.id
        b.has_id = c.id is not None or c.idkey is not None
        b.preview = safe_text(preview(c.obj, b.kind, c.reason))
    elif b.rtype == "stderr":
        b.label = _raw_of(obj).decode("utf-8", "replace")[:PREVIEW]
    elif b.rtype == "http":
        h = http or {}
        b.label = f"{h.get('method') or ''} {h.get('url') or ''} → {h.get('status') or ''}".strip()
    elif b.rtype == "event":
        data = obj.get("data") if type(obj.get("data")) is dict else {}
        name = data.get("event", "event")
        rest = ", ".join(f"{k} {v}" for k, v in data.items() if k != "event")
        b.label = safe_text(f"{name}: {rest}" if rest else str(name))
    elif b.rtype == "header":
        what = obj.get("command") or obj.get("upstream") or ""
        if isinstance(what, list):
            what = " ".join(str(x) for x in what)
        b.label = f"capture {obj.get('transport', '')} {what}".rstrip() + (
            f" · {obj['label']}" if obj.get("label") else ""
        )
    else:
        b.label = "broken capture record"
    return b


_PREFIX_FIELDS = re.compile(rb'"(type|dir|transport|conn)":"([^"]*)"|"(seq|t_ns)":(\d+)')


def basics_from_prefix(row: int, head: bytes, size: int) -> RowBasics:
    """Basics of a line too long to parse for a list row: the envelope fields that our capture
    writer puts before the payload."""
    b = RowBasics(row, "message", size=size)
    for m in _PREFIX_FIELDS.finditer(head):
        if m.group(1):
            name, value = m.group(1).decode(), m.group(2).decode("utf-8", "replace")
            if name == "type":
                b.rtype = value if value in ("header", "message", "stderr", "http", "event") else "broken"
            elif name == "dir":
                b.dir = value if value in ("c2s", "s2c") else None
            else:
                setattr(b, name, value)
        else:
            setattr(b, m.group(3).decode(), int(m.group(4)))
    b.label = f"({size / 1048576:.1f} MB record; the detail pane reads it)"
    b.preview = b.label
    return b


def _short(value: Any, limit: int = 80) -> str:
    text = safe_text(value) if isinstance(value, str) else dumps_text(value)
    text = text.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preview(obj: Any, kind: str, reason: str | None = None) -> str:
    """A few words that tell similar messages apart in the list."""
    if kind == "invalid":
        return reason or ""
    if kind == "batch":
        return f"{len(obj)} members" if isinstance(obj, list) else ""
    if not isinstance(obj, dict):
        return ""
    params = obj.get("params") if isinstance(obj.get("params"), dict) else {}
    if kind in ("request", "notification"):
        for key in ("name", "uri", "protocolVersion", "level"):
            if isinstance(params.get(key), str):
                extra = ""
                if key == "level" and "data" in params:
                    extra = " " + _short(params["data"], 60)
                return params[key] + extra
        if "progress" in params:
            # (any of these may be any JSON value: _short writes each safely, and short)
            total = f"/{_short(params['total'], 20)}" if "total" in params else ""
            return f"progress {_short(params['progress'], 20)}{total}" + (
                f" {_short(params['message'], 60)}" if params.get("message") else ""
            )
        if "requestId" in params:
            return f"request {_short(params['requestId'])}" + (
                f": {_short(params['reason'], 60)}" if params.get("reason") else ""
            )
        return ""
    if kind == "error":
        err = obj.get("error") if isinstance(obj.get("error"), dict) else {}
        return f"{_short(err.get('code', ''), 20)} {_short(err.get('message', ''), 70)}".strip()
    result = obj.get("result")
    if not isinstance(result, dict):
        return _short(result) if result is not None else ""
    if result.get("resultType") == "input_required":
        keys = (
            ", ".join((result.get("inputRequests") or {}).keys())
            if isinstance(result.get("inputRequests"), dict)
            else ""
        )
        return f"input required: {keys}" if keys else "input required"
    content = result.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = content[0]
        text = (
            first.get("text") if isinstance(first.get("text"), str) else f"[{_short(first.get('type'), 20)}]"
        )
        return ("error: " if result.get("isError") else "") + _short(text)
    for key in ("tools", "resources", "prompts", "resourceTemplates", "contents"):
        if isinstance(result.get(key), list):
            return f"{len(result[key])} {key}"
    if "protocolVersion" in result:
        return f"protocolVersion {_short(result['protocolVersion'], 40)}"
    if "supportedVersions" in result:
        return "supports " + _short(result["supportedVersions"])
    return ""


def _raw_of(obj: dict[str, Any]) -> bytes:
    text = obj.get("text")
    if type(text) is str:
        return text.encode("utf-8", "surrogatepass")
    b64 = obj.get("b64")
    if type(b64) is str:
        try:
            return base64.b64decode(b64)
        except ValueError:
            return b""
    return b""
