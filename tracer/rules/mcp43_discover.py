"""MCP430-MCP432: modern `server/discover`: features it does not list, a server that does not implement it, incomplete results."""

from __future__ import annotations

from tracer.catalog.registry import RESPONSES, rule
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import MODERN
from tracer.rules.mcp41_capabilities import REQUEST, _has

_MODERN_FEATURE = {
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "completion/complete": "completions",
}


@rule(
    "MCP430",
    "feature-not-in-discover",
    Severity.WARNING,
    kinds=REQUEST,
    versions=MODERN,
    methods=tuple(_MODERN_FEATURE),
    scope="pairing",
    spec="spec/2026-07-28/architecture/index.mdx:L165-171; spec/2026-07-28/server/tools.mdx:L47",
)
def feature_not_in_discover(m: Analysed, s):
    """(inferred) The client calls a feature method (`tools/*`, `prompts/*`, `resources/*`,
    `completion/complete`) although the last `server/discover` result did not advertise that
    capability.

    Example: discover returns `"capabilities": {"tools": {}}`, then the client sends `prompts/list`.
    """
    caps = s.track.discover_caps
    if caps is None or m.rec.dir is not _DIR_C2S:
        return None
    cap = _MODERN_FEATURE[m.method]
    if _has(caps, cap):
        return None
    return Hit(
        f"{m.method} needs the {cap} capability, which server/discover (seq {s.track.discover_seq}) "
        f"did not advertise",
        path="$.method",
        related_seq=s.track.discover_seq,
    )


@rule(
    "MCP431",
    "discover-not-implemented",
    Severity.ERROR,
    kinds=RESPONSES,
    versions=MODERN,
    scope="pairing",
    spec="spec/2026-07-28/basic/versioning.mdx:L73-74; spec/2026-07-28/server/discover.mdx:L7-8",
)
def discover_not_implemented(m: Analysed, s):
    """A modern server answers `server/discover` with -32601 (Method not found) while it serves
    other modern requests. Servers MUST implement `server/discover`. Reported once: on the -32601
    if modern results came before it, else on the first modern result after it.

    Example: `server/discover` -> -32601, then `tools/list` with modern `_meta` -> a result.
    """
    t = s.track
    req = m.request
    if req is None or req.era is not _ERA_MODERN:
        return None
    if req.method == "server/discover":
        err = m.error
        if (
            err is not None
            and err.get("code") == -32601
            and t.modern_results
            and t.discover_missing_seq is None
        ):
            return Hit(
                "server/discover is answered -32601 although this server answers modern requests",
                path="$.error.code",
            )
        return None
    if (
        m.kind is _KIND_RESULT
        and t.discover_missing_seq is not None
        and t.modern_results == 0
        and m.pair_status in ("paired", "after-cancel")
    ):
        return Hit(
            f"this server answers modern {req.method} but said server/discover does not exist "
            f"(seq {t.discover_missing_seq})",
            related_seq=t.discover_missing_seq,
        )
    return None


@rule(
    "MCP432",
    "discover-result-incomplete",
    Severity.ERROR,
    kinds=(Kind.RESULT,),
    versions=MODERN,
    methods=("server/discover",),
    spec="schema/2026-07-28/schema.ts:L678-700; spec/2026-07-28/server/discover.mdx:L90-100",
)
def discover_result_incomplete(m: Analysed, s):
    """A `DiscoverResult` lacks `supportedVersions` (an array of strings) or `capabilities` (an
    object). (`ttlMs` and `cacheScope` are MCP340.)

    Example: `{"resultType": "complete", "capabilities": {}, "ttlMs": 0, "cacheScope": "public"}`.
    """
    r = m.result
    if r is None:
        return None
    out = []
    sv = r.get("supportedVersions")
    if type(sv) is not list or not all(type(v) is str for v in sv):
        out.append(
            Hit("supportedVersions must be an array of version strings", path="$.result.supportedVersions")
        )
    if type(r.get("capabilities")) is not dict:
        out.append(Hit("capabilities must be an object", path="$.result.capabilities"))
    return out
