"""The one table from MCP traffic to OpenTelemetry: names, attributes, buckets.

Source: OpenTelemetry semantic conventions for MCP (open-telemetry/semantic-conventions-genai,
docs/gen-ai/mcp.md, status Development). The conventions still move, so every name the exporter
writes is here and nowhere else; `tracer.export.spans` only looks names up. Attributes under
`mcptrace.*` are our own facts (era, findings, capture position), which the conventions lack.
"""

from __future__ import annotations

# -- span attributes: the conventions' names --------------------------------------------------------
METHOD = "mcp.method.name"  # Required
REQUEST_ID = "jsonrpc.request.id"  # string; never for a null or missing id
JSONRPC_VERSION = "jsonrpc.protocol.version"  # only when it is not "2.0"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"  # legacy sessions with Mcp-Session-Id (2026-07-28 is not covered yet)
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
OPERATION = "gen_ai.operation.name"
RESOURCE_URI = "mcp.resource.uri"
ERROR_TYPE = "error.type"
STATUS_CODE = "rpc.response.status_code"
NET_TRANSPORT = "network.transport"
NET_PROTOCOL = "network.protocol.name"
NET_PROTOCOL_VERSION = "network.protocol.version"
# the request line's version, as captures record it -> network.protocol.version (the conventions
# write "1.1", "2", "3")
HTTP_VERSIONS = {
    "HTTP/1.0": "1.0",
    "HTTP/1.1": "1.1",
    "HTTP/2.0": "2",
    "HTTP/2": "2",
    "HTTP/3": "3",
    "HTTP/3.0": "3",
}
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"  # Opt-In: only with --include-bodies
TOOL_RESULT = "gen_ai.tool.call.result"  # Opt-In: only with --include-bodies

# values
EXECUTE_TOOL = "execute_tool"  # gen_ai.operation.name of tools/call (and of nothing else)
TOOL_ERROR = "tool_error"  # error.type of a CallToolResult with isError: true
NETWORK_TRANSPORT = {"stdio": "pipe", "http": "tcp", "http+sse": "tcp"}  # by Record.transport
NETWORK_PROTOCOL = {"http": "http", "http+sse": "http"}  # stdio has none

# Which request parameter names the target (span name `{method} {target}`, and its attribute).
TARGETS: dict[str, tuple[str, str]] = {
    "tools/call": ("name", TOOL_NAME),
    "prompts/get": ("name", PROMPT_NAME),
}
OPERATIONS: dict[str, str] = {"tools/call": EXECUTE_TOOL}
# Methods whose params.uri is recorded as mcp.resource.uri (never in the span name: high cardinality).
RESOURCE_METHODS = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"}
)

# error.type of a request that ended without a response (custom values, as the conventions allow)
NO_RESPONSE = "no_response"
CANCELLED = "cancelled"

# -- W3C trace context in params._meta (SEP-414: unprefixed keys) ------------------------------------
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

# -- mcptrace's own facts ------------------------------------------------------------------------------
ERA = "mcptrace.era"
ERA_REASON = "mcptrace.era.reason"
CAPTURE_FILE = "mcptrace.capture.file"
CAPTURE_SEQ = "mcptrace.capture.seq"  # the request's record
RESPONSE_SEQ = "mcptrace.response.seq"
CONNECTION = "mcptrace.connection"
END_REASON = "mcptrace.end_reason"  # response, cancelled, connection-closed, end-of-capture
KIND = "mcptrace.kind"  # of a short span of its own: notification, invalid, unpaired response
OP_ROUNDS = "mcptrace.mrtr.rounds"
EVENTS_DROPPED = "mcptrace.events.dropped"  # events past the per-span bound, counted
OP_SPAN_NAME = "mcptrace.mrtr.operation"  # prefix of an MRTR operation's parent span name

# span events
FINDING_EVENT = "mcptrace.finding"
FINDING_RULE = "mcptrace.finding.rule"
FINDING_SEVERITY = "mcptrace.finding.severity"
FINDING_MESSAGE = "mcptrace.finding.message"
FINDING_PATH = "mcptrace.finding.path"
FINDING_SEQ = "mcptrace.finding.seq"
SSE_EVENT = "mcptrace.sse.event"
SSE_ID = "mcptrace.sse.id"
SSE_NAME = "mcptrace.sse.name"
SSE_OFFSET_MS = "mcptrace.sse.offset_ms"  # since the response head of its stream
NOTIFICATION_EVENT = "mcptrace.notification"  # progress, cancel: on the request they belong to
NOTIFICATION_METHOD = METHOD
NOTIFICATION_SEQ = CAPTURE_SEQ

# -- metrics ---------------------------------------------------------------------------------------------
OPERATION_DURATION = "mcp.client.operation.duration"  # histogram, seconds
SESSION_DURATION = "mcp.client.session.duration"  # histogram, seconds; legacy sessions
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# the attributes a duration point carries (a low-cardinality subset of the span's)
METRIC_ATTRIBUTES = (
    METHOD,
    ERROR_TYPE,
    TOOL_NAME,
    PROMPT_NAME,
    STATUS_CODE,
    OPERATION,
    PROTOCOL_VERSION,
    NET_PROTOCOL,
    NET_PROTOCOL_VERSION,
    NET_TRANSPORT,
    SERVER_ADDRESS,
    SERVER_PORT,
)

OPERATION_DESCRIPTION = "MCP request duration as seen on the wire"
SESSION_DESCRIPTION = "MCP (legacy) session duration"


def measurement(span) -> tuple[str, float, dict] | None:
    """(metric, seconds, attributes) a span adds to, or None: a request's own span feeds
    OPERATION_DURATION, a legacy connection's root span SESSION_DURATION (one decision for the SDK
    sink and the OTLP/JSON file)."""
    attrs = span.attrs
    seconds = max(0, span.end_ns - span.start_ns) / 1e9
    if REQUEST_ID in attrs and KIND not in attrs:  # a request's own span (not a short one)
        return OPERATION_DURATION, seconds, {k: attrs[k] for k in METRIC_ATTRIBUTES if k in attrs}
    if span.name == ROOT_SPAN_NAME and attrs.get(ERA) == "legacy":
        return (
            SESSION_DURATION,
            seconds,
            {k: attrs[k] for k in (NET_TRANSPORT, PROTOCOL_VERSION) if k in attrs},
        )
    return None


# -- the resource and the instrumentation scope ---------------------------------------------------------
SERVICE_NAME = "service.name"
DEFAULT_SERVICE = "mcptrace"
SCOPE_NAME = "mcptrace"

# mcptrace.end_reason values
END_REASON_RESPONSE = "response"
END_REASON_CANCELLED = "cancelled"
END_REASON_CLOSED = "connection-closed"
END_REASON_END = "end-of-capture"
ROOT_SPAN_NAME = "mcptrace.connection"  # one per connection: the trace of requests without traceparent
