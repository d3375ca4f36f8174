"""MCP540-MCP547: 2026-07-28 `subscriptions/listen` streams (acknowledgment, subscription ids,
filters). The listens of a session are tracked once by the analyser (tracer.tracking.Listen)."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.classify import id_key
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import META_SUBSCRIPTION_ID, MODERN
from tracer.rules.mcp41_capabilities import subscribed
from tracer.session import find_pending_any_type
from tracer.tracking import MISSING, flow_of, listen_of

NOTE = (Kind.NOTIFICATION,)

SUBS = "spec/2026-07-28/basic/patterns/subscriptions.mdx"

ACK = "notifications/subscriptions/acknowledged"

# notification -> the filter field that opts in to it
OPT_IN = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
    "notifications/resources/updated": "resourceSubscriptions",
}

STREAM_NOTES = (ACK, *OPT_IN)

FILTER_FLAGS = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


def _sub_id(m: Analysed):
    meta = m.meta
    return meta.get(META_SUBSCRIPTION_ID, MISSING) if meta is not None else MISSING


@rule(
    "MCP540",
    "notification-before-acknowledgment",
    Severity.ERROR,
    kinds=NOTE,
    methods=tuple(OPT_IN),
    versions=MODERN,
    scope="pairing",
    spec=f"{SUBS}:L54-59; schema/2026-07-28/schema.ts:L1386-1391",
)
def notification_before_acknowledgment(m: Analysed, s):
    """A notification for a subscription is sent before that subscription's
    `notifications/subscriptions/acknowledged`. The acknowledgment MUST be the first message carrying
    the subscription id (other subscriptions' messages may interleave on stdio).

    Example: `subscriptions/listen` id 1, then `notifications/tools/list_changed` tagged 1, then the ack.
    """
    listen = listen_of(m, s.track)
    if listen is None or listen.ack_seq is not None or m.rec.dir is not _DIR_S2C:
        return None
    return Hit(
        f"subscription {listen.idkey[1]!r} (seq {listen.seq}) has not been acknowledged yet",
        path="$.params._meta",
        related_seq=listen.seq,
    )


@rule(
    "MCP541",
    "subscription-id-mismatch",
    Severity.ERROR,
    kinds=NOTE,
    versions=MODERN,
    scope="pairing",
    spec=f"{SUBS}:L85-92, :L151-154; schema/2026-07-28/schema.ts:L128-133",
)
def subscription_id_mismatch(m: Analysed, s):
    """A message on a listen stream carries an `io.modelcontextprotocol/subscriptionId` that is not
    the JSON-RPC id of the `subscriptions/listen` request that opened it: no listen has that id
    (value and type must match: `1` is not `"1"`), or (HTTP) the stream belongs to another listen.
    (The closing result is MCP546.)

    Example: `subscriptions/listen` id 1, then an acknowledgment tagged `"1"`.
    """
    sid = _sub_id(m)
    if sid is MISSING or m.rec.dir is not _DIR_S2C:
        return None
    t = s.track
    key = id_key(sid)
    flow = flow_of(m)
    carrier = t.flows.get(flow) if flow is not None else None
    if carrier is not None and carrier.method == "subscriptions/listen" and carrier.idkey != key:
        return Hit(
            f"subscriptionId {sid!r} on the stream of the listen with id {carrier.id!r} (seq {carrier.seq})",
            path="$.params._meta",
            related_seq=carrier.seq,
        )
    if key is not None and key in t.listens:
        return None
    other = find_pending_any_type(s, _DIR_C2S, key) if key is not None else None
    if other is not None and other.method == "subscriptions/listen":
        return Hit(
            f"subscriptionId {sid!r} has another JSON type than the listen id {other.id!r} (seq {other.seq})",
            path="$.params._meta",
            related_seq=other.seq,
        )
    return Hit(f"subscriptionId {sid!r} names no subscriptions/listen request", path="$.params._meta")


@rule(
    "MCP542",
    "notification-not-opted-in",
    Severity.ERROR,
    kinds=NOTE,
    methods=tuple(OPT_IN),
    versions=MODERN,
    scope="pairing",
    spec=f"{SUBS}:L14-16, :L40-50; schema/2026-07-28/schema.ts:L1262-1290",
)
def notification_not_opted_in(m: Analysed, s):
    """The server sends a notification type the subscription did not opt into: `tools/list_changed`
    without `toolsListChanged: true`, `prompts/list_changed` without `promptsListChanged`,
    `resources/list_changed` without `resourcesListChanged`, `resources/updated` for a URI not in
    `resourceSubscriptions` (sub-resources allowed).

    Example: listen with `{"toolsListChanged": true}`, then `notifications/prompts/list_changed` on it.
    """
    listen = listen_of(m, s.track)
    if listen is None or listen.filter is None or m.rec.dir is not _DIR_S2C:
        return None
    field = OPT_IN[m.method]
    if field != "resourceSubscriptions":
        if listen.filter.get(field) is True:
            return None
        return Hit(
            f"subscription {listen.idkey[1]!r} did not ask for {m.method} ({field} is not true)",
            path="$.method",
            related_seq=listen.seq,
        )
    uri = (m.params or {}).get("uri")
    subs = listen.filter.get("resourceSubscriptions")
    subs = [u for u in subs if type(u) is str] if type(subs) is list else []
    if type(uri) is str and not subscribed(uri, subs):
        return Hit(
            f"subscription {listen.idkey[1]!r} did not subscribe to {uri!r}",
            path="$.params.uri",
            related_seq=listen.seq,
        )
    return None


@rule(
    "MCP543",
    "acknowledged-more-than-requested",
    Severity.WARNING,
    kinds=NOTE,
    methods=(ACK,),
    versions=MODERN,
    scope="pairing",
    spec=f"{SUBS}:L61-62; schema/2026-07-28/schema.ts:L1371-1381",
)
def acknowledged_more_than_requested(m: Analysed, s):
    """(inferred) The acknowledged `notifications` filter contains a type the client did not
    request. It reflects "the subset the server agreed to honor".

    Example: listen asks `{"toolsListChanged": true}`; the ack says `{"promptsListChanged": true}`.
    """
    listen = listen_of(m, s.track)
    ack = (m.params or {}).get("notifications")
    if listen is None or listen.filter is None or type(ack) is not dict:
        return None
    asked = listen.filter
    extra = [f for f in FILTER_FLAGS if ack.get(f) is True and asked.get(f) is not True]
    acked_uris = ack.get("resourceSubscriptions")
    asked_uris = asked.get("resourceSubscriptions")
    if type(acked_uris) is list:
        pool = asked_uris if type(asked_uris) is list else []
        extra += [f"resourceSubscriptions {u!r}" for u in acked_uris if u not in pool]
    if extra:
        return Hit(
            f"the acknowledgment grants what was not requested: {', '.join(extra)}",
            path="$.params.notifications",
            related_seq=listen.seq,
        )
    return None


@rule(
    "MCP544",
    "change-notification-outside-listen",
    Severity.ERROR,
    kinds=NOTE,
    methods=tuple(OPT_IN),
    versions=MODERN,
    scope="pairing",
    spec="schema/2026-07-28/schema.ts:L1249-1255, :L1746-1751, :L1888-1893; "
    "spec/2026-07-28/basic/transports/streamable-http.mdx:L127-131",
)
def change_notification_outside_listen(m: Analysed, s):
    """(inferred) A list_changed or `resources/updated` notification is sent outside any
    `subscriptions/listen` stream: untagged on stdio, or on a request's response stream over HTTP.
    These notifications are "only delivered on a subscriptions/listen stream".

    Example: a modern stdio server writes `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`.
    """
    if m.rec.dir is not _DIR_S2C or _sub_id(m) is not MISSING:
        return None
    flow = flow_of(m)
    carrier = s.track.flows.get(flow) if flow is not None else None
    if carrier is not None and carrier.method == "subscriptions/listen":
        return None  # on a listen stream but untagged: MCP315
    where = (
        f"on the response stream of {carrier.method} (seq {carrier.seq})"
        if carrier is not None
        else "without a subscriptionId"
    )
    return Hit(f"{m.method} must be delivered on a subscriptions/listen stream, not {where}", path="$.method")


@rule(
    "MCP546",
    "listen-result-subscription-id",
    Severity.ERROR,
    kinds=(Kind.RESULT,),
    methods=("subscriptions/listen",),
    versions=MODERN,
    spec="schema/2026-07-28/schema.ts:L1326-1352",
)
def listen_result_subscription_id(m: Analysed, s):
    """A `SubscriptionsListenResult` (the graceful close of a listen) lacks
    `_meta["io.modelcontextprotocol/subscriptionId"]`, or its value differs from the response `id`.

    Example: `{"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}` closing listen 1.
    """
    r = m.result
    if r is None:
        return None
    meta = r.get("_meta")
    sid = meta.get(META_SUBSCRIPTION_ID, MISSING) if type(meta) is dict else MISSING
    if sid is MISSING:
        return Hit(
            "the listen's closing result must carry _meta io.modelcontextprotocol/subscriptionId",
            path="$.result._meta",
        )
    if id_key(sid) != m.idkey:
        return Hit(f"subscriptionId {sid!r} differs from the response id {m.id!r}", path="$.result._meta")
    return None


@rule(
    "MCP547",
    "listen-request-malformed",
    Severity.ERROR,
    kinds=(Kind.REQUEST,),
    methods=("subscriptions/listen",),
    versions=MODERN,
    spec="schema/2026-07-28/schema.ts:L1270-1300",
)
def listen_request_malformed(m: Analysed, s):
    """A `subscriptions/listen` request lacks `params.notifications`, or a filter field has the
    wrong type (the flags are booleans; `resourceSubscriptions` is an array of strings).

    Example: `"notifications": {"toolsListChanged": "yes"}`.
    """
    params = m.params or {}
    filt = params.get("notifications")
    if type(filt) is not dict:
        return Hit("subscriptions/listen needs params.notifications (the filter object)", path="$.params")
    out = []
    for f in FILTER_FLAGS:
        if f in filt and type(filt[f]) is not bool:
            out.append(Hit(f"{f} must be a boolean, not {filt[f]!r}", path=f"$.params.notifications.{f}"))
    subs = filt.get("resourceSubscriptions", MISSING)
    if subs is not MISSING and (type(subs) is not list or not all(type(u) is str for u in subs)):
        out.append(
            Hit(
                "resourceSubscriptions must be an array of URI strings",
                path="$.params.notifications.resourceSubscriptions",
            )
        )
    return out
