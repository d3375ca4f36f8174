"""MCP320-MCP321: `resultType` on results that answer modern requests."""

from __future__ import annotations

from tracer.model import Analysed, Direction, Hit, Kind, Severity
from tracer.protocol import META_CLIENT_CAPS, META_PROTOCOL_VERSION, MODERN
from tracer.rules.meta import BASIC, legacy_server
from tracer.rules.registry import rule
from tracer.session import Session

RESULT = (Kind.RESULT,)

CORE_RESULT_TYPES = frozenset({"complete", "input_required"})
# resultType values added by official extensions, and the extension that must be advertised.
EXTENSION_RESULT_TYPES = {"task": "io.modelcontextprotocol/tasks"}
KNOWN_EXTENSIONS = frozenset(EXTENSION_RESULT_TYPES.values()) | {
    "io.modelcontextprotocol/ui",
    "io.modelcontextprotocol/oauth-client-credentials",
}


def _modern_request(m: Analysed):
    req = m.request
    if req is None:
        return None
    meta = req.meta
    if meta is None or META_PROTOCOL_VERSION not in meta:
        return None
    return req


@rule(
    "MCP320",
    "modern-result-missing-result-type",
    Severity.ERROR,
    versions=MODERN,
    kinds=RESULT,
    scope="pairing",
    spec=f"{BASIC}:L73, :L85; schema/2026-07-28/schema.ts:L223-235 (Result.required resultType)",
)
def modern_result_missing_result_type(m: Analysed, s: Session):
    """A result answering a modern request (one that carried `_meta` protocolVersion) has no
    `resultType`. An absent `resultType` from a legacy server is fine (clients read it as
    "complete"), so a server that rejected the `server/discover` probe is not judged.

    "The result MUST include a resultType field to indicate the type of the result." Example:
    `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}` answering a modern `tools/list`.
    """
    res = m.result
    if res is None or "resultType" in res or m.rec.dir is Direction.C2S:
        return None
    req = _modern_request(m)
    if req is None or legacy_server(s):
        return None
    return [
        Hit(
            f"result to the modern {req.method} request (seq {req.seq}) has no resultType",
            path="$.result",
            related_seq=req.seq,
        )
    ]


def _advertised_extensions(req) -> dict | None:
    meta = req.meta
    caps = meta.get(META_CLIENT_CAPS) if meta is not None else None
    ext = caps.get("extensions") if type(caps) is dict else None
    return ext if type(ext) is dict else None


@rule(
    "MCP321",
    "unknown-result-type",
    Severity.ERROR,
    versions=MODERN,
    kinds=RESULT,
    scope="pairing",
    spec=f"{BASIC}:L81-84; seps/2663-tasks-extension.md:L128",
)
def unknown_result_type(m: Analysed, s: Session):
    """`resultType` is neither "complete" nor "input_required", and no extension the request
    advertised in `clientCapabilities.extensions` adds it (e.g. "task" needs
    `io.modelcontextprotocol/tasks`). When the request advertised an extension this inspector does
    not know, an unknown value is given the benefit of the doubt.

    "A resultType of any value unrecognized by the client MUST be considered invalid." Example:
    `"resultType": "partial"`.
    """
    res = m.result
    if res is None or "resultType" not in res:
        return None
    rt = res["resultType"]
    if type(rt) is str and rt in CORE_RESULT_TYPES:
        return None
    if type(rt) is not str:
        return [Hit(f"resultType is {type(rt).__name__}, not a string", path="$.result.resultType")]
    req = m.request
    ext = _advertised_extensions(req) if req is not None else None
    needed = EXTENSION_RESULT_TYPES.get(rt)
    if needed is not None:
        if ext is not None and needed in ext:
            return None
        return [
            Hit(
                f"resultType {rt!r} belongs to the {needed} extension, which the request did not "
                "advertise in clientCapabilities.extensions",
                path="$.result.resultType",
                related_seq=req.seq if req is not None else None,
            )
        ]
    if ext is not None and any(k not in KNOWN_EXTENSIONS for k in ext):
        return None  # an extension we do not know may define it
    return [
        Hit(
            f'resultType {rt!r} is not "complete" or "input_required", and no advertised '
            "extension defines it",
            path="$.result.resultType",
        )
    ]
