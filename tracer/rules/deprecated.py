"""MCP905: 2026-07-28 features deprecated by SEP-2577 (Roots, Sampling, Logging) and sampling's
`includeContext` `thisServer` / `allServers`. Reported once per feature and session: the analyser
remembers what was already reported (tracer.tracking.Tracking.deprecated)."""

from __future__ import annotations

from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import MODERN
from tracer.rules.registry import rule
from tracer.tracking import deprecated_uses

REMOVAL = "earliest removal in the first revision on or after 2027-07-28"


@rule(
    "MCP905",
    "deprecated-feature",
    Severity.INFO,
    kinds=(Kind.REQUEST, Kind.NOTIFICATION, Kind.RESULT),
    versions=MODERN,
    spec="spec/2026-07-28/deprecated.mdx:L24-31; spec/2026-07-28/changelog.mdx:L73-91",
)
def deprecated_feature(m: Analysed, s):
    """A feature deprecated in 2026-07-28 is in use: Roots, Sampling or Logging (SEP-2577; earliest
    removal in the first revision on or after 2027-07-28), or sampling's `includeContext`
    `"thisServer"` / `"allServers"`. Reported once per feature and session.

    Example: a modern request with `"io.modelcontextprotocol/logLevel": "info"` in `_meta`.
    """
    uses = deprecated_uses(m)
    if not uses:
        return None
    seen = set(s.track.deprecated)  # reported earlier in this session
    out = []
    for feature, path, what in uses:
        if feature in seen:
            continue
        seen.add(feature)
        out.append(Hit(f"{feature} is deprecated in 2026-07-28 ({REMOVAL}): {what}", path=path))
    return out
