"""MCP320-MCP329: `resultType` on results that answer modern requests (MCP320-MCP321), and Multi
Round-Trip Requests (2026-07-28 `InputRequiredResult` and its retries); the retries' responses,
MCP330-MCP332, are in mcp33_mrtr_retry.py.

Retries are linked to the round that asked for input once, by the analyser (tracer.tracking
.link_retry): by an exactly echoed `requestState`, else by method plus name/uri plus arguments.
These rules only read that link (`PendingRequest.retry_of`).
"""

from __future__ import annotations

import json

from tracer.catalog.registry import rule
from tracer.jsonpath import member
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import META_CLIENT_CAPS, META_PROTOCOL_VERSION, MODERN
from tracer.rules.mcp30_meta_keys import BASIC, legacy_server
from tracer.session import PendingRequest, Session
from tracer.tracking import MISSING, MRTR_METHODS, is_input_required, request_client_caps

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


def _advertised_extensions(req) -> dict | None:
    meta = req.meta
    caps = meta.get(META_CLIENT_CAPS) if meta is not None else None
    ext = caps.get("extensions") if type(caps) is dict else None
    return ext if type(ext) is dict else None


REQUEST = (Kind.REQUEST,)

MRTR = "spec/2026-07-28/basic/patterns/mrtr.mdx"

INPUT_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")


def input_required(m: Analysed) -> dict | None:
    """The result when it is an `InputRequiredResult`, else None."""
    r = m.result
    return r if r is not None and r.get("resultType") == "input_required" else None


def _asks_input(m: Analysed, s) -> bool:
    """The gate of MCP322-MCP326: each judges an InputRequiredResult only, so every other result
    skips all five after one look."""
    return input_required(m) is not None


def own_pending(m: Analysed, s: Session) -> PendingRequest | None:
    """A request's own entry in the pending table (registered before the rules run)."""
    return s.pending.get((m.rec.dir, m.idkey)) if m.idkey is not None else None


def retry_params(m: Analysed, s) -> bool:
    """The gate of MCP328-MCP332: each judges a request carrying `inputResponses` or `requestState`
    (an MRTR retry, or one that looks like it), so the usual request skips all five after one look."""
    params = m.params
    return params is not None and ("inputResponses" in params or "requestState" in params)


def retried_round(m: Analysed, s: Session):
    """The round (tracer.tracking.Round) a retry was linked to by the analyser, or None. Cheap for
    the usual request, which carries neither `inputResponses` nor `requestState`."""
    params = m.params
    if params is None or ("inputResponses" not in params and "requestState" not in params):
        return None
    req = own_pending(m, s)
    return req.retry_of if req is not None else None


def _needs(caps: dict, method: str, params: dict) -> str | None:
    """What a client capability set lacks for one input request, or None."""
    if method == "elicitation/create":
        el = caps.get("elicitation")
        if type(el) is not dict:
            return "elicitation"
        if params.get("mode") == "url":
            return None if "url" in el else "elicitation.url"
        return None if (not el or "form" in el) else "elicitation.form"
    if method == "sampling/createMessage":
        sm = caps.get("sampling")
        if type(sm) is not dict:
            return "sampling"
        if ("tools" in params or "toolChoice" in params) and "tools" not in sm:
            return "sampling.tools"
        return None
    if method == "roots/list":
        return None if type(caps.get("roots")) is dict else "roots"
    return None


class _Obj(dict):
    __slots__ = ("dups",)


def _pairs(pairs: list) -> _Obj:
    d = _Obj(pairs)
    d.dups = (
        [k for i, (k, _) in enumerate(pairs) if any(k == k2 for k2, _ in pairs[:i])]
        if len(d) != len(pairs)
        else []
    )
    return d


__all__ = ["input_required", "is_input_required", "own_pending"]


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
    if res is None or "resultType" in res or m.rec.dir is _DIR_C2S:
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


@rule(
    "MCP322",
    "input-required-on-unsupported-method",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    scope="pairing",
    gate=_asks_input,
    spec=f"{MRTR}:L184-192",
)
def input_required_on_unsupported_method(m: Analysed, s):
    """An `InputRequiredResult` answers a method other than `tools/call`, `prompts/get` or
    `resources/read`. "Servers MUST NOT send InputRequiredResult responses on any other client
    requests."

    Example: `tools/list` answered with `{"resultType": "input_required", "requestState": "x"}`.
    """
    if m.answers_method is not None and m.answers_method not in MRTR_METHODS and input_required(m):
        return Hit(
            f"{m.answers_method} cannot ask for input; only tools/call, prompts/get and "
            f"resources/read may return an InputRequiredResult",
            path="$.result.resultType",
            related_seq=m.partner_seq,
        )
    return None


@rule(
    "MCP323",
    "input-required-empty",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    gate=_asks_input,
    spec=f"{MRTR}:L245; schema/2026-07-28/schema.ts:L575",
)
def input_required_empty(m: Analysed, s):
    """An `InputRequiredResult` has neither `inputRequests` nor `requestState`: the client has
    nothing to fulfil and nothing to echo. Servers MUST include at least one of them.

    Example: `{"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}}`.
    """
    r = input_required(m)
    if r is not None and "inputRequests" not in r and "requestState" not in r:
        return Hit(
            "an InputRequiredResult must carry inputRequests or requestState (or both)", path="$.result"
        )
    return None


@rule(
    "MCP324",
    "input-request-malformed",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    gate=_asks_input,
    spec=f"{MRTR}:L229; schema/2026-07-28/schema.ts:L537-565",
)
def input_request_malformed(m: Analysed, s):
    """An `inputRequests` value is not an input request object: not an object, a `method` other
    than `elicitation/create`, `sampling/createMessage` or `roots/list`, `params` missing (or not an
    object), or JSON-RPC members (`jsonrpc`, `id`) that input requests do not have. The payload of
    each request type is checked by MCP627 (sampling) and MCP628 (elicitation).

    Example: `"inputRequests": {"q": {"jsonrpc": "2.0", "id": 5, "method": "ping"}}`.
    """
    r = input_required(m)
    reqs = r.get("inputRequests") if r is not None else None
    if reqs is None:
        return None
    if type(reqs) is not dict:
        return Hit(
            "inputRequests must be an object mapping keys to input requests", path="$.result.inputRequests"
        )
    out = []
    for key, value in reqs.items():
        path = member("$.result.inputRequests", key)
        if type(value) is not dict:
            out.append(Hit(f"input request {key!r} is not an object", path=path))
            continue
        method = value.get("method")
        if method not in INPUT_METHODS:
            out.append(
                Hit(
                    f"input request {key!r} has method {method!r}; only elicitation/create, "
                    f"sampling/createMessage and roots/list may be requested",
                    path=path + ".method",
                )
            )
            continue
        params = value.get("params", MISSING)
        if params is MISSING and method != "roots/list":
            out.append(Hit(f"input request {key!r} ({method}) lacks params", path=path))
        elif params is not MISSING and type(params) is not dict:
            out.append(Hit(f"input request {key!r} has params that are not an object", path=path + ".params"))
        extra = [k for k in ("jsonrpc", "id") if k in value]
        if extra:
            out.append(
                Hit(
                    f"input request {key!r} carries {', '.join(extra)}: input requests are not "
                    f"JSON-RPC messages (they have method and params only)",
                    path=path,
                )
            )
    return out


@rule(
    "MCP325",
    "input-request-capability-missing",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    scope="pairing",
    gate=_asks_input,
    spec=f"{MRTR}:L246; spec/2026-07-28/client/elicitation.mdx:L81; spec/2026-07-28/client/sampling.mdx:L52",
)
def input_request_capability_missing(m: Analysed, s):
    """`inputRequests` asks for something the request's `clientCapabilities` did not declare:
    elicitation without `elicitation` (URL mode needs `elicitation.url`; `{}` means form mode
    only), sampling without `sampling` (with `tools`/`toolChoice`: `sampling.tools`), `roots/list`
    without `roots`. Capabilities are per request in 2026-07-28.

    Example: a `tools/call` with `clientCapabilities: {}` answered with an `elicitation/create`
    input request.
    """
    r = input_required(m)
    reqs = r.get("inputRequests") if r is not None else None
    if type(reqs) is not dict or m.request is None:
        return None
    caps = request_client_caps(m.request)
    if caps is None:
        return None  # MCP310 reports a request without clientCapabilities
    out = []
    for key, value in reqs.items():
        if type(value) is not dict:
            continue
        params = value.get("params")
        lack = _needs(caps, value.get("method"), params if type(params) is dict else {})
        if lack is not None:
            out.append(
                Hit(
                    f"input request {key!r} ({value.get('method')}) needs the client capability "
                    f"{lack}, which request seq {m.request.seq} did not declare",
                    path=member("$.result.inputRequests", key),
                    related_seq=m.request.seq,
                )
            )
    return out


@rule(
    "MCP326",
    "input-requests-duplicate-keys",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    gate=_asks_input,
    spec=f"{MRTR}:L228",
)
def input_requests_duplicate_keys(m: Analysed, s):
    """The raw JSON of `inputRequests` repeats a key. Keys "MUST be unique within the scope of the
    request"; most JSON parsers silently keep the last one, so one input request is lost.

    Example: `"inputRequests": {"a": {...elicitation...}, "a": {...sampling...}}`.
    """
    if input_required(m) is None or m.batch_seq is not None:
        return None
    try:
        obj = json.loads(m.rec.raw, object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return None
    reqs = obj.get("result", {}).get("inputRequests") if isinstance(obj, dict) else None
    dups = getattr(reqs, "dups", None)
    if dups:
        return Hit(
            f"inputRequests repeats the key(s) {', '.join(map(repr, dict.fromkeys(dups)))}",
            path="$.result.inputRequests",
        )
    return None


@rule(
    "MCP327",
    "request-state-not-string",
    Severity.ERROR,
    kinds=(Kind.REQUEST, Kind.RESULT),
    needs="requestState",
    versions=MODERN,
    spec="schema/2026-07-28/schema.ts:L584-608",
)
def request_state_not_string(m: Analysed, s):
    """`requestState` is present but is not a string, in an `InputRequiredResult` or in a retry.
    It is an opaque string the client echoes byte for byte.

    Example: `"requestState": {"step": 2}`.
    """
    if m.kind is _KIND_REQUEST:
        holder, path = m.params, "$.params.requestState"
    else:
        holder, path = input_required(m), "$.result.requestState"
    if holder is None:
        return None
    state = holder.get("requestState", MISSING)
    if state is not MISSING and type(state) is not str:
        return Hit(f"requestState must be a string, not {type(state).__name__}", path=path)
    return None


@rule(
    "MCP328",
    "retry-reuses-request-id",
    Severity.ERROR,
    kinds=REQUEST,
    versions=MODERN,
    scope="pairing",
    gate=retry_params,
    spec=f"{MRTR}:L256; spec/2026-07-28/server/tools.mdx:L234",
)
def retry_reuses_request_id(m: Analysed, s):
    """An MRTR retry reuses the JSON-RPC `id` of the request that received the
    `InputRequiredResult`. The id "MUST be different between the initial request and the retry, as
    they are independent requests".

    Example: `tools/call` id 1 -> InputRequiredResult; retry `tools/call` id 1 with `inputResponses`.
    """
    rnd = retried_round(m, s)
    if rnd is not None and rnd.req_idkey == m.idkey:
        return Hit(
            f"this retry uses id {m.id!r} again, like the round it retries (seq {rnd.req_seq})",
            path="$.id",
            related_seq=rnd.req_seq,
        )
    return None


@rule(
    "MCP329",
    "retry-request-state-not-echoed",
    Severity.ERROR,
    kinds=REQUEST,
    versions=MODERN,
    scope="pairing",
    gate=retry_params,
    spec=f"{MRTR}:L254-255",
)
def retry_request_state_not_echoed(m: Analysed, s):
    """A retry does not echo the exact `requestState` its `InputRequiredResult` gave, or sends one
    when the result had none. The retry is matched to its round by method plus name/uri plus
    arguments (inferred correlation).

    Example: the result said `"requestState": "abc"`, the retry sends `"requestState": "abd"`.
    """
    rnd = retried_round(m, s)
    if rnd is None:
        return None
    sent = m.params.get("requestState", MISSING)
    if rnd.state is MISSING:
        if sent is not MISSING:
            return Hit(
                f"the InputRequiredResult at seq {rnd.result_seq} had no requestState, so the "
                f"retry must not send one",
                path="$.params.requestState",
                related_seq=rnd.result_seq,
            )
        return None
    if sent is MISSING:
        return Hit(
            f"the retry omits the requestState that the InputRequiredResult at seq "
            f"{rnd.result_seq} asked it to echo",
            path="$.params",
            related_seq=rnd.result_seq,
        )
    if sent != rnd.state:
        return Hit(
            f"requestState differs from the one given at seq {rnd.result_seq}; clients echo it unchanged",
            path="$.params.requestState",
            related_seq=rnd.result_seq,
        )
    return None
