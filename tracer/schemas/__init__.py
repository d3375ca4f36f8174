"""The official MCP `schema.json` of every protocol version, vendored verbatim (see SOURCE.md).

`load_schema(version)` returns a parsed copy with the one documented correction applied (the
2026-07-28 `JSONValue` scalar branch, see SOURCE.md); the files on disk stay byte-identical to
upstream. Files are found with importlib.resources, so they work from a wheel as from the tree.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import orjson

from tracer.protocol import VERSIONS

SCHEMA_FILE = "schema.json"


class SchemaLoadError(RuntimeError):
    """A vendored schema is missing or no longer has the shape this code was written against."""


def schema_bytes(version: str) -> bytes:
    """The vendored file exactly as upstream published it."""
    if version not in VERSIONS:
        raise KeyError(f"no vendored schema for protocol version {version!r}")
    try:
        return resources.files(__name__).joinpath(version, SCHEMA_FILE).read_bytes()
    except FileNotFoundError as exc:  # a broken install, not bad input
        raise SchemaLoadError(f"vendored schema {version}/{SCHEMA_FILE} is missing") from exc


def license_text() -> str:
    return resources.files(__name__).joinpath("LICENSE").read_text(encoding="utf-8")


def defs_key(doc: dict[str, Any]) -> str:
    """`definitions` (draft-07: 2024-11-05 to 2025-06-18) or `$defs` (2020-12: 2025-11-25 on)."""
    return "$defs" if "$defs" in doc else "definitions"


def _widen_json_value(doc: dict[str, Any]) -> None:
    """schema.ts says JSONValue = string | number | boolean | null | object | array, but the generated
    schema.json lists the scalars as string | integer | boolean. Widen that branch (SOURCE.md)."""
    defs = doc[defs_key(doc)]
    jv = defs.get("JSONValue")
    if jv is None:
        return
    branches = jv.get("anyOf")
    scalars = [b for b in branches or () if isinstance(b.get("type"), list)]
    if not branches or len(branches) != 3 or len(scalars) != 1 or sorted(scalars[0]["type"]) != [
        "boolean", "integer", "string"]:
        raise SchemaLoadError(
            "JSONValue no longer has the shape the load-time correction expects "
            "(anyOf with a [string, integer, boolean] branch): re-check tracer/schemas/SOURCE.md")
    scalars[0]["type"] = ["string", "number", "boolean", "null"]


@cache
def load_schema(version: str) -> dict[str, Any]:
    """The parsed schema document of `version` (cached; treat it as read-only)."""
    doc = orjson.loads(schema_bytes(version))
    _widen_json_value(doc)
    return doc


def definitions(version: str) -> dict[str, Any]:
    doc = load_schema(version)
    return doc[defs_key(doc)]


__all__ = ["SchemaLoadError", "definitions", "defs_key", "license_text", "load_schema", "schema_bytes"]
