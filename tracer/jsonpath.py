"""One spelling of a JSON path, for every finding and report: `$.params.name`,
`$.result.content[0].text`, `$.params._meta["io.modelcontextprotocol/protocolVersion"]`.

A member whose name is a plain identifier is dotted; any other member is a JSON string in
brackets (JSON's escapes, so the path reads back with any JSON parser, and `mcptrace replay
--ignore` accepts it as written); an array index is `[i]`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def member(base: str, key: Any) -> str:
    """The path to `base[key]` for an object member: `$.a.b` for plain names, `$.a["x:y"]` else."""
    key = str(key)
    return f"{base}.{key}" if _IDENT.fullmatch(key) else f"{base}[{json.dumps(key)}]"


def json_path(segments: Iterable[str | int]) -> str:
    """The path of a sequence of members (str) and array indexes (int) from the root `$`."""
    out = "$"
    for s in segments:
        out = f"{out}[{s}]" if type(s) is int else member(out, s)
    return out


__all__ = ["json_path", "member"]
