"""A rule's spec reference, structured: which published page (or schema) of which version, and the
lines it cites, parsed once from the rule's `spec=` text and rendered as modelcontextprotocol.io
URLs (the spec's repository, whose file names the text cites, is not shipped).

`spec=` names spec pages as `spec/<version>/<page>.mdx:L<lines>` and the schema as
`schema/<version>/schema.ts:L<lines>`; "JSON-RPC" in it cites the JSON-RPC 2.0 specification.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracer.protocol import M as LATEST

SPEC_SITE = "https://modelcontextprotocol.io/specification/"
JSONRPC_SPEC = "https://www.jsonrpc.org/specification"
_SPEC_REF = re.compile(
    r"\b(spec|schema)/(\d{4}-\d{2}-\d{2})/([\w./-]+?)(?:\.mdx|\.ts)?(?::(L[\d,L-]+))?(?=[:;,\s)]|$)"
)


@dataclass(frozen=True, slots=True)
class SpecRef:
    kind: str  # "page", "schema" or "jsonrpc"
    version: str | None = None  # the spec version, e.g. "2025-11-25"
    page: str | None = None  # a page of that version, e.g. "basic/lifecycle" ("" for the index)
    lines: str | None = None  # the lines cited in the spec's sources, e.g. "L217-220"

    @property
    def url(self) -> str:
        if self.kind == "jsonrpc":
            return JSONRPC_SPEC
        if self.kind == "schema":
            return f"{SPEC_SITE}{self.version}/schema"
        return f"{SPEC_SITE}{self.version}/{self.page}".rstrip("/")


def parse_spec(spec: str) -> tuple[SpecRef, ...]:
    """The references a rule's `spec=` text makes, in order."""
    refs: list[SpecRef] = []
    for kind, version, page, lines in _SPEC_REF.findall(spec):
        if kind == "schema":
            refs.append(SpecRef("schema", version, None, lines or None))
        else:
            page = page.removesuffix("/index").removesuffix("index")
            refs.append(SpecRef("page", version, page, lines or None))
    if "JSON-RPC" in spec:
        refs.append(SpecRef("jsonrpc"))
    if not refs and spec.startswith("schema"):  # "schema: ..." with no version: every version's
        refs.append(SpecRef("schema", LATEST))
    return tuple(refs)


def urls(refs: tuple[SpecRef, ...]) -> tuple[str, ...]:
    """The pages of `refs`, in order, without repeats."""
    out: list[str] = []
    for ref in refs:
        if ref.url not in out:
            out.append(ref.url)
    return tuple(out)


__all__ = ["JSONRPC_SPEC", "SPEC_SITE", "SpecRef", "parse_spec", "urls"]
