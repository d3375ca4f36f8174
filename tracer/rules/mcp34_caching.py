"""MCP340-MCP344: 2026-07-28 caching hints (`ttlMs`, `cacheScope`) on cacheable results."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import MODERN
from tracer.tracking import MISSING

RESULT = (Kind.RESULT,)

CACHING = "spec/2026-07-28/server/utilities/caching.mdx"

CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


def _complete(m: Analysed) -> dict | None:
    r = m.result
    return r if r is not None and r.get("resultType") != "input_required" else None


def _bad_ttl(v) -> bool:
    t = type(v)
    if t is int:
        return v < 0
    if t is float:
        return not v.is_integer() or v < 0
    return True


@rule(
    "MCP340",
    "cacheable-result-without-hints",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    methods=CACHEABLE,
    scope="pairing",
    spec=f"{CACHING}:L13-21; schema/2026-07-28/schema.ts:L1081-1110",
)
def cacheable_result_without_hints(m: Analysed, s):
    """A complete result of `server/discover`, `tools/list`, `prompts/list`, `resources/list`,
    `resources/templates/list` or `resources/read` lacks `ttlMs` or `cacheScope`. "Servers MUST
    include caching hints" on these results.

    Example: `tools/list` answered with `{"resultType": "complete", "tools": []}`.
    """
    r = _complete(m)
    if r is None or m.answers_method not in CACHEABLE:
        return None
    lack = [k for k in ("ttlMs", "cacheScope") if k not in r]
    if lack:
        return Hit(f"a complete {m.answers_method} result must carry {' and '.join(lack)}", path="$.result")
    return None


@rule(
    "MCP341",
    "ttl-invalid",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    methods=CACHEABLE,
    spec=f"{CACHING}:L43, :L60; schema.json ttlMs integer minimum 0",
)
def ttl_invalid(m: Analysed, s):
    """`ttlMs` is negative or not an integer. "Servers MUST provide a ttlMs value that is >= 0"
    (milliseconds, an integer).

    Example: `"ttlMs": -1` or `"ttlMs": "60s"`.
    """
    r = _complete(m)
    if r is None:
        return None
    ttl = r.get("ttlMs", MISSING)
    if ttl is not MISSING and _bad_ttl(ttl):
        return Hit(f"ttlMs must be an integer >= 0, not {ttl!r}", path="$.result.ttlMs")
    return None


@rule(
    "MCP342",
    "cache-scope-invalid",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    methods=CACHEABLE,
    spec=f"schema/2026-07-28/schema.ts:L1109; {CACHING}:L44",
)
def cache_scope_invalid(m: Analysed, s):
    """`cacheScope` is not `"public"` or `"private"`.

    Example: `"cacheScope": "shared"`.
    """
    r = _complete(m)
    if r is None:
        return None
    scope = r.get("cacheScope", MISSING)
    if scope is not MISSING and scope not in ("public", "private"):
        return Hit(f'cacheScope must be "public" or "private", not {scope!r}', path="$.result.cacheScope")
    return None


@rule(
    "MCP343",
    "cache-scope-differs-across-pages",
    Severity.ERROR,
    kinds=RESULT,
    versions=MODERN,
    methods=CACHEABLE - {"server/discover", "resources/read"},
    scope="pairing",
    spec=f"{CACHING}:L166-169",
)
def cache_scope_differs_across_pages(m: Analysed, s):
    """Pages of one paginated list (a `cursor`/`nextCursor` chain) carry different `cacheScope`
    values. "Servers MUST apply the same cacheScope to all response pages for a given list request."

    Example: page 1 of `tools/list` is `"private"`, the page fetched with its `nextCursor` is `"public"`.
    """
    r = _complete(m)
    req = m.request
    if r is None or req is None or req.params is None:
        return None
    chain = s.track.chain_for(req.method, req.params.get("cursor"))
    scope = r.get("cacheScope")
    if chain is None or type(chain.scope) is not str or type(scope) is not str or scope == chain.scope:
        return None
    return Hit(
        f"this page's cacheScope {scope!r} differs from {chain.scope!r} on the first page "
        f"(seq {chain.start_seq})",
        path="$.result.cacheScope",
        related_seq=chain.start_seq,
    )


@rule(
    "MCP344",
    "input-required-with-cache-hints",
    Severity.WARNING,
    kinds=RESULT,
    versions=MODERN,
    spec=f"{CACHING}:L23-25",
)
def input_required_with_cache_hints(m: Analysed, s):
    """(inferred) An `InputRequiredResult` carries `ttlMs` or `cacheScope`. Interim results "are not
    cacheable and carry no caching hints".

    Example: `{"resultType": "input_required", "requestState": "x", "ttlMs": 60000}`.
    """
    r = m.result
    if r is None or r.get("resultType") != "input_required":
        return None
    has = [k for k in ("ttlMs", "cacheScope") if k in r]
    if has:
        return Hit(f"an InputRequiredResult is not cacheable; drop {' and '.join(has)}", path="$.result")
    return None
