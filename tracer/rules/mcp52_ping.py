"""MCP520-MCP522: ping."""

from __future__ import annotations

from tracer.catalog.registry import RESPONSES, rule
from tracer.model import KIND_ERROR as _KIND_ERROR  # (enum members as globals: tracer.model)
from tracer.model import Analysed, Hit, Severity
from tracer.protocol import LEG
from tracer.rules.mcp50_cancellation import REQUEST

PING_PROMPT_MS = 1000  # "promptly": the inspector's threshold


@rule(
    "MCP520",
    "ping-answer-not-empty",
    Severity.ERROR,
    kinds=RESPONSES,
    versions=LEG,
    methods=("ping",),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/ping.mdx:L29-37; spec/2024-11-05/basic/utilities/ping.mdx:L28",
)
def ping_answer_not_empty(m: Analysed, s):
    """A `ping` is answered with an error, or with a result that has members other than `_meta`.
    "The receiver MUST respond promptly with an empty response."

    Example: `ping` answered with `{"result": {"status": "ok"}}`.
    """
    if m.kind is _KIND_ERROR:
        return Hit("a ping must be answered with an empty result, not an error", path="$.error")
    r = m.result
    extra = [k for k in r if k != "_meta"] if r is not None else []
    if extra:
        return Hit(f"a ping's result must be empty; it has {', '.join(extra)}", path="$.result")
    return None


@rule(
    "MCP521",
    "ping-slow",
    Severity.WARNING,
    kinds=RESPONSES,
    versions=LEG,
    methods=("ping",),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/ping.mdx:L29, :L57-66",
)
def ping_slow(m: Analysed, s):
    """A `ping` is not answered "promptly": the answer took longer than 1 s (mcptrace's threshold).
    A slow ping usually means a blocked event loop or a stuck peer.

    Example: `ping` at t=0, its empty result at t=3 s.
    """
    if m.latency_ns is not None and m.latency_ns > PING_PROMPT_MS * 1_000_000 and m.pair_status == "paired":
        return Hit(
            f"ping answered after {m.latency_ns / 1e6:.0f} ms (more than {PING_PROMPT_MS} ms)",
            related_seq=m.partner_seq,
        )
    return None


@rule(
    "MCP522",
    "ping-with-params",
    Severity.WARNING,
    kinds=REQUEST,
    versions=LEG,
    methods=("ping",),
    spec="spec/2025-11-25/basic/utilities/ping.mdx:L17-19",
)
def ping_with_params(m: Analysed, s):
    """(inferred) A `ping` request has params other than `_meta`: it is "a standard JSON-RPC request
    with no parameters".

    Example: `{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"echo": "x"}}`.
    """
    params = m.params
    extra = [k for k in params if k != "_meta"] if params is not None else []
    if extra:
        return Hit(f"ping takes no parameters; got {', '.join(extra)}", path="$.params")
    return None
