"""MCP301-MCP306 (RULES.md 3a): `_meta` key naming, trace context and capability extension ids.
The modern per-request / per-result metadata (3b) is in mcp31_request_meta.py.

Key verdicts are computed once per distinct key and cached (traffic repeats the same few keys), and
the `_meta` objects of a message are found once and shared by the four naming rules, so the common
path (every key fine) costs a dict lookup per key.
"""

from __future__ import annotations

from tracer.catalog.metakeys import _GOOD as _FINE_KEYS
from tracer.catalog.metakeys import (
    NESTED,
    NO_META,
    check_baggage,
    check_traceparent,
    check_tracestate,
    extension_id_problem,
    key_problems,
    meta_objects,
    top_meta,
)
from tracer.catalog.registry import rule
from tracer.jsonpath import member
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import (
    META_CLIENT_CAPS,
    MODERN,
    since,
)
from tracer.session import Session

L3_PLUS = since("2025-06-18")

L4_PLUS = since("2025-11-25")


BASIC = "spec/2026-07-28/basic/index.mdx"


def _has_key_problems(m: Analysed, s: Session) -> bool:
    """The gate of MCP301-MCP304: each reports some of these keys, so with none all four are
    skipped after one look (nearly every message: its keys are the spec's own)."""
    top = top_meta(m)
    # (metakeys.all_keys_fine, inlined: this gate runs on every message)
    if top is NO_META or (top is not NESTED and _FINE_KEYS.issuperset(top)):
        return False
    return bool(key_problems(m))


_TRACE_KEYS = (
    ("traceparent", check_traceparent),
    ("tracestate", check_tracestate),
    ("baggage", check_baggage),
)


def _discover_result_caps(m: Analysed) -> dict | None:
    res = m.result
    caps = res.get("capabilities") if res is not None else None
    return caps if type(caps) is dict else None


def legacy_server(s: Session) -> bool:
    """The server showed it is legacy-only: it rejected the `server/discover` probe with an error
    that is not a modern one (-32020/-32021/-32022), so modern-result rules do not apply to it."""
    disc = s.discover
    return disc is not None and disc.outcome == "error" and disc.error_code not in (-32020, -32021, -32022)


def _pending_listens(s: Session) -> list:
    return [r for r in s.pending.values() if r.method == "subscriptions/listen" and r.dir is _DIR_C2S]


@rule(
    "MCP301",
    "meta-key-bad-prefix",
    Severity.ERROR,
    versions=L3_PLUS,
    gate=_has_key_problems,
    spec="spec/2025-06-18/basic/index.mdx:L138-139; spec/2025-11-25/basic/index.mdx:L205-206; "
    f"{BASIC}:L334-335",
)
def meta_key_bad_prefix(m: Analysed, s: Session):
    """A `_meta` key prefix is malformed (in any `_meta` object of the message, nested ones such as
    `Tool._meta` included).

    A prefix "MUST be a series of labels separated by dots (.), followed by a slash (/). Labels MUST
    start with a letter and end with a letter or digit; interior characters can be letters,
    digits, or hyphens". Example: `"_meta": {"com.example-/flag": true}` or `{"1password.com/x": 1}`.
    """
    probs = key_problems(m)
    if not probs:
        return None
    return [
        Hit(
            f"_meta key {key!r}: prefix {v.prefix!r} is not dot-separated labels "
            "(letter first, letter or digit last, letters/digits/hyphens inside) before '/'",
            path=path,
        )
        for path, key, v in probs
        if not v.prefix_ok
    ]


@rule(
    "MCP302",
    "meta-key-bad-name",
    Severity.ERROR,
    versions=L3_PLUS,
    gate=_has_key_problems,
    spec="spec/2025-06-18/basic/index.mdx:L146-147; spec/2025-11-25/basic/index.mdx:L214-215; "
    f"{BASIC}:L343-344",
)
def meta_key_bad_name(m: Analysed, s: Session):
    """A `_meta` key name (the part after the prefix) is malformed.

    "Unless empty, MUST begin and end with an alphanumeric character ([a-z0-9A-Z]). MAY contain
    hyphens (-), underscores (_), dots (.), and alphanumerics in between." Example:
    `"_meta": {"_internal": 1}` or `{"com.example/trace id": "x"}`.
    """
    probs = key_problems(m)
    if not probs:
        return None
    return [
        Hit(
            f"_meta key {key!r}: name {v.name!r} must begin and end with a letter or digit and "
            "contain only letters, digits, '-', '_' and '.'",
            path=path,
        )
        for path, key, v in probs
        if not v.name_ok
    ]


@rule(
    "MCP303",
    "meta-key-reserved-prefix",
    Severity.WARNING,
    versions=L3_PLUS,
    gate=_has_key_problems,
    spec="spec/2025-06-18/basic/index.mdx:L140-142; spec/2025-11-25/basic/index.mdx:L208-210; "
    f"{BASIC}:L337-358 (inferred)",
)
def meta_key_reserved_prefix(m: Analysed, s: Session):
    """A `_meta` key uses a prefix reserved for MCP, but no spec revision or official extension
    defines that key.

    From 2025-11-25 on, "any prefix where the second label is modelcontextprotocol or mcp is
    reserved for MCP use" (`io.modelcontextprotocol/`, `dev.mcp/`); 2025-06-18 reserved a label
    `modelcontextprotocol`/`mcp` followed by another label (`modelcontextprotocol.io/`). Example:
    `"_meta": {"io.modelcontextprotocol/myTrace": "abc"}` (use your own reverse-DNS prefix).
    """
    probs = key_problems(m)
    if not probs:
        return None
    l3 = m.era is not _ERA_MODERN and m.version == "2025-06-18"
    out = []
    for path, key, v in probs:
        if l3 and v.reserved_l3:
            out.append(
                Hit(
                    f"_meta key {key!r} uses a prefix 2025-06-18 reserves for MCP, and MCP "
                    "defines no such key",
                    path=path,
                )
            )
        elif not l3 and v.reserved:
            out.append(
                Hit(
                    f"_meta key {key!r} uses the MCP-reserved prefix {v.prefix + '/'!r}, but "
                    "neither the spec nor an official extension defines it",
                    path=path,
                )
            )
    return out


@rule(
    "MCP304",
    "meta-prefix-not-reverse-dns",
    Severity.WARNING,
    versions=L4_PLUS,
    gate=_has_key_problems,
    spec=f"spec/2025-11-25/basic/index.mdx:L207; {BASIC}:L336 (inferred detection)",
)
def meta_prefix_not_reverse_dns(m: Analysed, s: Session):
    """A `_meta` prefix looks like a domain written forwards instead of in reverse-DNS order
    (heuristic: its last label is a well-known top-level domain and its first is not).

    "Implementations SHOULD use reverse DNS notation (e.g., com.example/ rather than
    example.com/)". Example: `"_meta": {"example.com/requestId": "r-1"}`.
    """
    probs = key_problems(m)
    if not probs:
        return None
    return [
        Hit(
            f"_meta key {key!r}: prefix {v.prefix!r} looks like a forward domain; use reverse "
            f"DNS ({'.'.join(reversed(v.prefix.split('.')))}/)",
            path=path,
        )
        for path, key, v in probs
        if v.forward_dns
    ]


@rule(
    "MCP305",
    "meta-trace-context-invalid",
    Severity.ERROR,
    versions=MODERN,
    spec=f"{BASIC}:L421-424 (SEP-414); W3C Trace Context; W3C Baggage",
)
def meta_trace_context_invalid(m: Analysed, s: Session):
    """`_meta.traceparent`, `tracestate` or `baggage` does not follow the W3C Trace Context / W3C
    Baggage syntax.

    "When present, their values MUST follow W3C Trace Context and W3C Baggage formats
    respectively." Example: `"traceparent": "00-abc-def-01"` (the trace id must be 32 hex digits).
    """
    top = top_meta(m)
    if top is NO_META or (
        top is not NESTED and "traceparent" not in top and "tracestate" not in top and "baggage" not in top
    ):
        return None
    out = None
    for path, meta in meta_objects(m):
        if "traceparent" not in meta and "tracestate" not in meta and "baggage" not in meta:
            continue
        for key, check in _TRACE_KEYS:
            if key in meta:
                why = check(meta[key])
                if why is not None:
                    out = out or []
                    out.append(Hit(f"_meta {key} {why}", path=f"{path}.{key}"))
    return out


@rule(
    "MCP306",
    "capability-extension-id-invalid",
    Severity.WARNING,
    versions=MODERN,
    kinds=(Kind.REQUEST, Kind.RESULT),
    possible=lambda kind, method, direction, versions: kind is not Kind.RESULT or method == "server/discover",
    spec="spec/2026-07-28/basic/versioning.mdx:L85-87; schema/2026-07-28/schema.ts "
    "ClientCapabilities.extensions / ServerCapabilities.extensions",
)
def capability_extension_id_invalid(m: Analysed, s: Session):
    """A capability `extensions` key is not a valid extension identifier: it lacks the mandatory
    prefix or breaks the `_meta` key rules. (MUST in the text; a warning because it is a
    declaration, not traffic.)

    "Extension identifiers MUST follow the _meta key naming rules, with a mandatory prefix."
    Example: `"extensions": {"tasks": {}}` instead of `{"io.modelcontextprotocol/tasks": {}}`.
    """
    if m.kind is _KIND_REQUEST:
        meta = m.meta
        caps = meta.get(META_CLIENT_CAPS) if meta is not None else None
        if type(caps) is not dict:
            return None
    else:
        if m.answers_method != "server/discover":
            return None
        caps = _discover_result_caps(m)
        if caps is None:
            return None
    ext = caps.get("extensions")
    if type(ext) is not dict or not ext:
        return None
    if m.kind is _KIND_REQUEST:
        path = member("$.params._meta", META_CLIENT_CAPS) + ".extensions"
    else:
        path = "$.result.capabilities.extensions"
    out = None
    for key in ext:
        why = extension_id_problem(key)
        if why is not None:
            out = out or []
            out.append(Hit(f"extension identifier {key!r} {why}", path=path))
    return out
