"""Protocol facts: versions, eras, and which methods travel which way in each version.

Source: the `ClientRequest` / `ClientNotification` / `ServerRequest` / `ServerNotification` unions of
each version's schema.ts (shared/spec/RULES.md Appendix A).
"""

from __future__ import annotations

L1, L2, L3, L4, M = "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"
LEGACY_VERSIONS = (L1, L2, L3, L4)
VERSIONS = (*LEGACY_VERSIONS, M)
MODERN_VERSION = M

ALL = frozenset(VERSIONS)
LEG = frozenset(LEGACY_VERSIONS)
MODERN = frozenset({M})


def since(v: str) -> frozenset[str]:
    return frozenset(x for x in VERSIONS if x >= v)


def between(lo: str, hi: str) -> frozenset[str]:
    return frozenset(x for x in VERSIONS if lo <= x <= hi)


VERSION_KEYS = {"L1": L1, "L2": L2, "L3": L3, "L4": L4, "M": M}
KEY_OF_VERSION = {v: k for k, v in VERSION_KEYS.items()}


def describe_versions(vs: frozenset[str]) -> str:
    if vs == ALL:
        return "ALL"
    if vs == LEG:
        return "LEG"
    keys = [KEY_OF_VERSION[v] for v in VERSIONS if v in vs]
    return ",".join(keys)


META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_RELATED_TASK = "io.modelcontextprotocol/related-task"

_L1_C2S_REQ = frozenset(
    {
        "ping",
        "initialize",
        "completion/complete",
        "logging/setLevel",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "tools/call",
        "tools/list",
    }
)
_L1_C2S_NOTE = frozenset(
    {
        "notifications/cancelled",
        "notifications/progress",
        "notifications/initialized",
        "notifications/roots/list_changed",
    }
)
_L1_S2C_REQ = frozenset({"ping", "sampling/createMessage", "roots/list"})
_L1_S2C_NOTE = frozenset(
    {
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    }
)
_TASKS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})

# version -> (client->server requests, c->s notifications, server->client requests, s->c notifications)
DIRECTIONS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]] = {
    L1: (_L1_C2S_REQ, _L1_C2S_NOTE, _L1_S2C_REQ, _L1_S2C_NOTE),
    L2: (_L1_C2S_REQ, _L1_C2S_NOTE, _L1_S2C_REQ, _L1_S2C_NOTE),
    L3: (_L1_C2S_REQ, _L1_C2S_NOTE, _L1_S2C_REQ | {"elicitation/create"}, _L1_S2C_NOTE),
    L4: (
        _L1_C2S_REQ | _TASKS,
        _L1_C2S_NOTE | {"notifications/tasks/status"},
        _L1_S2C_REQ | {"elicitation/create"} | _TASKS,
        _L1_S2C_NOTE | {"notifications/elicitation/complete", "notifications/tasks/status"},
    ),
    M: (
        frozenset(
            {
                "server/discover",
                "completion/complete",
                "prompts/get",
                "prompts/list",
                "resources/list",
                "resources/templates/list",
                "resources/read",
                "subscriptions/listen",
                "tools/call",
                "tools/list",
            }
        ),
        frozenset({"notifications/cancelled"}),
        frozenset(),
        frozenset(
            {
                "notifications/cancelled",
                "notifications/progress",
                "notifications/message",
                "notifications/resources/updated",
                "notifications/resources/list_changed",
                "notifications/tools/list_changed",
                "notifications/prompts/list_changed",
                "notifications/subscriptions/acknowledged",
            }
        ),
    ),
}

# Extension methods that a modern peer may use (tasks moved to an extension in 2026-07-28).
MODERN_EXTENSION_REQUESTS = frozenset(
    {"tasks/get", "tasks/update", "tasks/cancel", "tasks/list", "tasks/result"}
)

ALL_REQUEST_METHODS = frozenset().union(*(d[0] | d[2] for d in DIRECTIONS.values()))
ALL_NOTIFICATION_METHODS = frozenset().union(*(d[1] | d[3] for d in DIRECTIONS.values()))
ALL_METHODS = ALL_REQUEST_METHODS | ALL_NOTIFICATION_METHODS

CLIENT_METHODS_ANY = frozenset().union(*(d[0] | d[1] for d in DIRECTIONS.values()))
SERVER_METHODS_ANY = frozenset().union(*(d[2] | d[3] for d in DIRECTIONS.values()))

# Methods that exist only in the modern revision (their presence alone says "modern").
MODERN_ONLY_METHODS = frozenset(
    {"server/discover", "subscriptions/listen", "notifications/subscriptions/acknowledged"}
)

# Methods the modern revision removed (MCP210): their presence without modern _meta says "legacy".
MODERN_REMOVED_METHODS = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/roots/list_changed",
        "notifications/elicitation/complete",
        "notifications/tasks/status",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
    }
)
LEGACY_ONLY_METHODS = MODERN_REMOVED_METHODS - _TASKS  # tasks/* also exist as a modern extension

LOGGING_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVEL_RANK = {name: i for i, name in enumerate(LOGGING_LEVELS)}


def is_known_version(v: object) -> bool:
    return isinstance(v, str) and v in ALL


def methods_for(version: str, direction_is_c2s: bool, request: bool) -> frozenset[str]:
    d = DIRECTIONS[version]
    if direction_is_c2s:
        return d[0] if request else d[1]
    return d[2] if request else d[3]
