"""MCP350-MCP359 (RULES.md 3e): error codes. Which codes an era may emit and the `data` the
MCP-defined errors carry (tool errors answered in the wrong form, MCP360-MCP361, are in
mcp36_tool_errors.py).
"""

from __future__ import annotations

import re

from tracer.catalog.registry import RESPONSES, not_by_client, rule
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import (
    LEG,
    LEGACY_VERSIONS,
    META_PROTOCOL_VERSION,
    MODERN,
    MODERN_VERSION,
)
from tracer.rules.mcp30_meta_keys import legacy_server
from tracer.session import Session

ERROR = (Kind.ERROR,)

BASIC = "spec/2026-07-28/basic/index.mdx"

HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION = -32020, -32021, -32022

MCP_CODES = frozenset({HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION})

RETIRED_CODES = {
    -32002: "resource not found (2025-11-25 and earlier; use -32602)",
    -32042: "URL elicitation required (2025-11-25 only)",
}

JSONRPC_CODES = frozenset({-32700, -32600, -32601, -32602, -32603})


def _code(m: Analysed):
    """The error code when it is an integer (a malformed one is MCP115), else None."""
    err = m.error
    if err is None:
        return None
    code = err.get("code")
    if type(code) is int:
        return code
    if type(code) is float and code.is_integer():
        return int(code)
    return None


def _server_error(m: Analysed, s: Session) -> bool:
    """A server's error to a modern peer. Errors from a server that showed it is legacy-only (it
    rejected `server/discover` with a non-modern error) are judged by the legacy rules instead, and
    so is the rejection that shows it (`_legacy_rejection`)."""
    return m.rec.dir is not _DIR_C2S and not legacy_server(s) and not _legacy_rejection(m, s)


def _legacy_rejection(m: Analysed, s: Session) -> bool:
    """The error is how a legacy server turns a modern probe away, before any modern answer was
    seen: "Anything else [than a recognized modern error] identifies a legacy server" (2026-07-28
    versioning): its answer to `server/discover` on stdio, or its `400 Bad Request` to a modern
    request over Streamable HTTP. Its code is a legacy server's own, not a 2026-07-28 emitter's."""
    if _code(m) in MCP_CODES:
        return False
    disc = s.discover
    if disc is not None and disc.outcome == "result":
        return False
    req = m.request
    if req is not None and req.method == "server/discover":
        return True
    http = m.rec.http
    return http is not None and http.get("status") == 400 and s.modern_requests <= 1


def _data(m: Analysed) -> dict | None:
    err = m.error
    data = err.get("data") if err is not None else None
    return data if type(data) is dict else None


def _requested_version(m: Analysed):
    req = m.request
    meta = req.meta if req is not None else None
    if meta is None or META_PROTOCOL_VERSION not in meta:
        return None, None
    return req, meta[META_PROTOCOL_VERSION]


_VERSION_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")

# Errors that may legitimately come before (or instead of) the version check.
_NOT_VERSION_ANSWERS = frozenset({UNSUPPORTED_VERSION, HEADER_MISMATCH, -32700, -32600})


def _unsupported_version(asked, s: Session) -> str | None:
    """Why the server cannot implement the requested version, or None when it may."""
    if type(asked) is not str:
        return f"{asked!r} is not a version string"
    disc = s.discover
    if disc is None and asked == MODERN_VERSION:
        return None  # the common case
    res = disc.result if disc is not None else None
    sup = res.get("supportedVersions") if res is not None else None
    if type(sup) is list and sup:
        if asked not in sup:
            return f"{asked!r} is not in the server's server/discover supportedVersions {sup}"
        return None
    if asked in LEGACY_VERSIONS:
        return f"{asked!r} is a handshake-era version, which no request can carry in _meta"
    if _VERSION_SHAPE.match(asked) is None or asked < MODERN_VERSION:
        return f"{asked!r} is not a protocol version"
    return None


_NOT_FOUND = re.compile(r"not\s*found", re.I)


@rule(
    "MCP350",
    "retired-error-code",
    Severity.ERROR,
    versions=MODERN,
    kinds=ERROR,
    spec=f"{BASIC}:L137-144; spec/2026-07-28/changelog.mdx:L37; spec/2026-07-28/server/resources.mdx:L404-408",
)
def retired_error_code(m: Analysed, s: Session):
    """A modern implementation emits a retired code: -32002 (resource not found, up to
    2025-11-25) or -32042 (URL elicitation required, 2025-11-25 only).

    "Implementations of this protocol version MUST NOT emit these codes". Example:
    `{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"Resource not found"}}` answering a
    modern `resources/read` (use -32602).
    """
    code = _code(m)
    if code not in RETIRED_CODES or not _server_error(m, s):
        return None
    return [Hit(f"error code {code} ({RETIRED_CODES[code]}) is retired in 2026-07-28", path="$.error.code")]


@rule(
    "MCP351",
    "reserved-mcp-error-code",
    Severity.ERROR,
    versions=MODERN,
    kinds=ERROR,
    spec=f"{BASIC}:L122-135; schema/2026-07-28/schema.ts:L418-450",
)
def reserved_mcp_error_code(m: Analysed, s: Session):
    """A code in -32020..-32099 that the spec does not define (only -32020 HeaderMismatch, -32021
    MissingRequiredClientCapability and -32022 UnsupportedProtocolVersion exist), or -32020 used
    with another meaning: a header mismatch on stdio, which has no headers.

    "Implementations MUST NOT emit any code from this sub-range that is not defined by this
    specification and MUST use defined codes only with their specified meanings." Example:
    `{"code": -32050, "message": "Quota exceeded"}`.
    """
    code = _code(m)
    if code is None or not -32099 <= code <= -32020 or not _server_error(m, s):
        return None
    if code not in MCP_CODES:
        return [
            Hit(
                f"error code {code} is in -32020..-32099, reserved for codes the MCP spec "
                "defines (only -32020, -32021, -32022 exist)",
                path="$.error.code",
            )
        ]
    if code == HEADER_MISMATCH and m.rec.transport == "stdio":
        return [
            Hit(
                "error -32020 (HeaderMismatch) on stdio, which has no HTTP headers to mismatch",
                path="$.error.code",
            )
        ]
    return None


@rule(
    "MCP352",
    "legacy-range-error-code",
    Severity.WARNING,
    versions=MODERN,
    kinds=ERROR,
    spec=f"{BASIC}:L117-121",
)
def legacy_range_error_code(m: Analysed, s: Session):
    """A code in the legacy sub-range -32000..-32019 (-32002 is MCP350). Pre-release SDKs that
    still send the draft codes -32001/-32003/-32004 land here too.

    "New implementations SHOULD NOT use codes from this sub-range at all"; receivers "MUST NOT
    assume any specific meaning". Example: `{"code": -32000, "message": "Connection closed"}`.
    """
    code = _code(m)
    if code is None or not -32019 <= code <= -32000 or code == -32002 or not _server_error(m, s):
        return None
    return [
        Hit(
            f"error code {code} is in the legacy sub-range -32000..-32019, which new "
            "implementations should not use",
            path="$.error.code",
        )
    ]


@rule(
    "MCP353",
    "application-code-in-reserved-range",
    Severity.WARNING,
    versions=MODERN,
    kinds=ERROR,
    spec=f"{BASIC}:L153-155; JSON-RPC §5.1",
)
def application_code_in_reserved_range(m: Analysed, s: Session):
    """An application-defined code inside the JSON-RPC reserved range -32768..-32000 that is
    neither a JSON-RPC code (-32700, -32600..-32603) nor in MCP's -32000..-32099 partition.

    "New error codes for purposes not defined by this specification SHOULD be allocated outside
    the JSON-RPC reserved range (-32768 to -32000)". Example: `{"code": -32500, "message": "Busy"}`.
    """
    code = _code(m)
    if code is None or not -32768 <= code <= -32100 or code in JSONRPC_CODES or not _server_error(m, s):
        return None
    return [
        Hit(
            f"error code {code} is inside the JSON-RPC reserved range -32768..-32000; "
            "application errors belong outside it",
            path="$.error.code",
        )
    ]


@rule(
    "MCP354",
    "unsupported-version-error-data",
    Severity.ERROR,
    versions=MODERN,
    kinds=ERROR,
    spec="schema/2026-07-28/schema.ts:L483-500; spec/2026-07-28/basic/versioning.mdx:L48-67",
)
def unsupported_version_error_data(m: Analysed, s: Session):
    """A -32022 UnsupportedProtocolVersion error lacks `data.supported` (an array of strings) or
    `data.requested` (a string).

    The server "MUST respond with an UnsupportedProtocolVersionError listing the versions it does
    support". Example: `{"code": -32022, "message": "Unsupported protocol version"}` with no data.
    """
    if _code(m) != UNSUPPORTED_VERSION:
        return None
    data = _data(m)
    if data is None:
        return [Hit("-32022 error has no data object with supported and requested", path="$.error")]
    out = []
    sup = data.get("supported")
    if type(sup) is not list or any(type(v) is not str for v in sup):
        out.append(
            Hit("-32022 data.supported is not an array of version strings", path="$.error.data.supported")
        )
    if type(data.get("requested")) is not str:
        out.append(Hit("-32022 data.requested is not a string", path="$.error.data.requested"))
    return out


@rule(
    "MCP355",
    "missing-capability-error-data",
    Severity.ERROR,
    versions=MODERN,
    kinds=ERROR,
    spec=f"schema/2026-07-28/schema.ts:L513-527; {BASIC}:L387-392",
)
def missing_capability_error_data(m: Analysed, s: Session):
    """A -32021 MissingRequiredClientCapability error lacks `data.requiredCapabilities` (a
    `ClientCapabilities` object).

    The server "MUST return a MissingRequiredClientCapabilityError (-32021) whose
    data.requiredCapabilities lists the missing capabilities". Example:
    `{"code": -32021, "message": "Elicitation required", "data": {}}`.
    """
    if _code(m) != MISSING_CAPABILITY:
        return None
    data = _data(m)
    if data is not None and type(data.get("requiredCapabilities")) is dict:
        return None
    return [
        Hit(
            "-32021 error has no data.requiredCapabilities object",
            path="$.error.data" if data is not None else "$.error",
        )
    ]


@rule(
    "MCP356",
    "unsupported-version-error-mismatch",
    Severity.WARNING,
    versions=MODERN,
    kinds=ERROR,
    scope="pairing",
    spec="schema/2026-07-28/schema.ts:L494-498 (inferred)",
)
def unsupported_version_error_mismatch(m: Analysed, s: Session):
    """A -32022's `data.requested` differs from the protocolVersion the request carried in
    `_meta`, or its `data.supported` lists that very version.

    The schema documents `requested` as "the protocol version that was requested by the client"
    and `supported` as the versions the server supports. Example: the client asks 2026-07-28 and
    the error says `"requested": "2025-11-25"`, or `"supported": ["2026-07-28"]`.
    """
    if _code(m) != UNSUPPORTED_VERSION:
        return None
    data = _data(m)
    req, asked = _requested_version(m)
    if data is None or req is None:
        return None
    out = []
    requested = data.get("requested")
    if type(requested) is str and requested != asked:
        out.append(
            Hit(
                f"-32022 data.requested {requested!r} is not the version the request asked for ({asked!r})",
                path="$.error.data.requested",
                related_seq=req.seq,
            )
        )
    sup = data.get("supported")
    if type(sup) is list and asked in sup:
        out.append(
            Hit(
                f"-32022 rejects {asked!r} but data.supported lists it",
                path="$.error.data.supported",
                related_seq=req.seq,
            )
        )
    return out


@rule(
    "MCP357",
    "unsupported-version-not-rejected",
    Severity.ERROR,
    versions=MODERN,
    kinds=RESPONSES,
    possible=not_by_client,
    scope="pairing",
    spec="spec/2026-07-28/basic/versioning.mdx:L48-52; spec/2026-07-28/basic/transports/streamable-http.mdx:L263-267",
)
def unsupported_version_not_rejected(m: Analysed, s: Session):
    """The server answers (with a result or another error) a request whose protocolVersion it does
    not implement, instead of returning -32022. Detected when the version is absent from the
    server's `server/discover` `supportedVersions`, or (without a discover) when it is no modern
    version at all: a 2025-or-earlier version, or not a YYYY-MM-DD string.

    "If the server does not implement the requested version ... it MUST respond with an
    UnsupportedProtocolVersionError". Example: a `tools/list` with protocolVersion "1900-01-01"
    answered with a result.
    """
    req, asked = _requested_version(m)
    if req is None or m.rec.dir is _DIR_C2S:
        return None
    why = _unsupported_version(asked, s)
    if why is None or _code(m) in _NOT_VERSION_ANSWERS or legacy_server(s):
        return None
    what = "a result" if m.kind is Kind.RESULT else f"error {_code(m)}"
    return [
        Hit(
            f"answered with {what} although {why}; expected -32022 UnsupportedProtocolVersion",
            related_seq=req.seq,
        )
    ]


@rule(
    "MCP358",
    "url-elicitation-error-data",
    Severity.ERROR,
    versions=frozenset({"2025-11-25"}),
    kinds=ERROR,
    spec="spec/2025-11-25/client/elicitation.mdx:L426-430; schema/2025-11-25/schema.ts:L181-197",
)
def url_elicitation_error_data(m: Analysed, s: Session):
    """A -32042 URLElicitationRequiredError has no `data.elicitations` array, or an entry is not a
    URL-mode elicitation (`mode: "url"`) carrying an `elicitationId`.

    The error "MUST include" the elicitations the client must complete. Example:
    `{"code": -32042, "message": "Authorization required", "data": {}}`.
    """
    if _code(m) != -32042:
        return None
    data = _data(m)
    items = data.get("elicitations") if data is not None else None
    if type(items) is not list or not items:
        return [Hit("-32042 error has no data.elicitations array", path="$.error.data")]
    out = []
    for i, e in enumerate(items):
        if type(e) is not dict or e.get("mode") != "url" or type(e.get("elicitationId")) is not str:
            out.append(
                Hit(
                    "entry is not a URL-mode elicitation with an elicitationId",
                    path=f"$.error.data.elicitations[{i}]",
                )
            )
    return out


@rule(
    "MCP359",
    "resource-not-found-code",
    Severity.WARNING,
    versions=LEG,
    kinds=ERROR,
    methods=("resources/read",),
    scope="pairing",
    spec="spec/2024-11-05/server/resources.mdx:L337; spec/2025-11-25/server/resources.mdx:L386-388",
)
def resource_not_found_code(m: Analysed, s: Session):
    """(heuristic) A `resources/read` error whose message says "not found" uses a code other than
    -32002. (At 2026-07-28 the code is -32602 and -32002 is MCP350.)

    "Resource not found: -32002" is the code the legacy revisions' error-handling section gives
    (SHOULD). Example: `{"code": -32603, "message": "Resource not found: file:///x"}`.
    """
    err = m.error
    msg = err.get("message") if err is not None else None
    code = _code(m)
    if code == -32002 or type(msg) is not str or _NOT_FOUND.search(msg) is None:
        return None
    return [
        Hit(
            f'resources/read "not found" error uses code {code}; legacy revisions give -32002',
            path="$.error.code",
        )
    ]
