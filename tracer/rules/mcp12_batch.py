"""MCP120-MCP123: JSON-RPC batches (allowed in 2025-03-26 only)."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.model import KIND_ERROR as _KIND_ERROR  # (enum members as globals: tracer.model)
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import L1, L2, since

BATCH = (Kind.BATCH,)


@rule(
    "MCP120",
    "batch-removed",
    Severity.ERROR,
    kinds=BATCH,
    versions=since("2025-06-18"),
    spec="spec/2025-06-18/changelog.mdx:L12; spec/2026-07-28/basic/transports/stdio.mdx:L12",
)
def batch_removed(m: Analysed, s):
    """A JSON array (a JSON-RPC batch) is on the wire. Batching was removed in 2025-06-18: every
    message is a single request, notification or response.

    Example: `[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]` in a 2025-06-18 session.
    """
    yield f"JSON-RPC batch of {len(m.obj)} messages; batching was removed in 2025-06-18"


@rule(
    "MCP121",
    "batch-in-2024-11-05",
    Severity.WARNING,
    kinds=BATCH,
    versions=frozenset({L1}),
    spec="schema/2024-11-05/schema.ts:L2 (JSONRPCMessage has no batch type) (inferred)",
)
def batch_in_2024_11_05(m: Analysed, s):
    """A batch array in 2024-11-05 traffic: that version's message union has no batch type (MCP
    added batching only in 2025-03-26).

    Example: `[{"jsonrpc": "2.0", "method": "notifications/initialized"}]` in a 2024-11-05 session.
    """
    yield "JSON-RPC batch in a 2024-11-05 session; that version defines no batches"


@rule(
    "MCP122",
    "initialize-in-batch",
    Severity.ERROR,
    kinds=BATCH,
    versions=frozenset({L2}),
    spec="spec/2025-03-26/basic/lifecycle.mdx:L72-76",
)
def initialize_in_batch(m: Analysed, s):
    """An `initialize` request is inside a batch; it MUST NOT be part of a JSON-RPC batch.

    Example: `[{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {...}}]`.
    """
    for i, member in enumerate(m.obj):
        if type(member) is dict and member.get("method") == "initialize":
            yield Hit("initialize is inside a batch", path=f"$[{i}]")


@rule(
    "MCP123",
    "malformed-batch",
    Severity.ERROR,
    kinds=BATCH,
    versions=frozenset({L2}),
    spec="spec/2025-03-26/basic/transports.mdx:L90-95; JSON-RPC §6",
)
def malformed_batch(m: Analysed, s):
    """The batch is empty, or mixes responses with requests/notifications (a batch holds either
    requests and notifications, or responses).

    Example: `[]`, or `[{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","method":"x"}]`.
    """
    members = m.members or []
    if not m.obj:
        yield "empty batch (JSON-RPC: Invalid Request)"
        return
    calls = sum(1 for x in members if x.kind in (_KIND_REQUEST, _KIND_NOTIFICATION))
    answers = sum(1 for x in members if x.kind in (_KIND_RESULT, _KIND_ERROR))
    if calls and answers:
        yield f"batch mixes {calls} requests/notifications with {answers} responses"
