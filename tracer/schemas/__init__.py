"""The official MCP `schema.json` of every protocol version, vendored verbatim (see SOURCE.md).

`load_schema(version)` returns a parsed copy with the documented generator artefacts corrected
(`ARTEFACTS`: union members schema.ts types `number` that schema.json narrows to `integer`, see
SOURCE.md); the files on disk stay byte-identical to upstream. Files are found with importlib.resources, so they work from a wheel as from the tree.
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


# The generator emits a TypeScript `number` as "integer" unless the field is annotated
# `@TJS-type number`, and a member of a union cannot be annotated. Where schema.ts (and no spec
# sentence) says `number` inside a union, the generated schema.json wrongly forbids fractions.
# Each entry: (versions, path inside the definitions, the scalar types as generated, as schema.ts
# declares them). Found by diffing every vendored schema.json against its schema.ts (SOURCE.md);
# RequestId and ProgressToken (`string | number`) stay integer: the spec's prose says "string or
# integer" for both.
ARTEFACTS: tuple[tuple[frozenset[str], tuple, tuple[str, ...], list[str]], ...] = (
    # JSONValue = string | number | boolean | null | JSONObject | JSONArray
    (
        frozenset({"2026-07-28"}),
        ("JSONValue", "anyOf", 2, "type"),
        ("boolean", "integer", "string"),
        ["string", "number", "boolean", "null"],
    ),
    # ElicitResult.content: { [key: string]: string | number | boolean }
    (
        frozenset({"2025-06-18"}),
        ("ElicitResult", "properties", "content", "additionalProperties", "type"),
        ("boolean", "integer", "string"),
        ["string", "number", "boolean"],
    ),
    # ... | string[] (2025-11-25 on)
    (
        frozenset({"2025-11-25", "2026-07-28"}),
        ("ElicitResult", "properties", "content", "additionalProperties", "anyOf", 1, "type"),
        ("boolean", "integer", "string"),
        ["string", "number", "boolean"],
    ),
)


def _at(defs: dict[str, Any], path: tuple) -> tuple[Any, Any]:
    """(the container holding the last step of PATH, the value there), or (None, None)."""
    node: Any = defs
    for step in path[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return None, None
    try:
        return node, node[path[-1]]
    except (KeyError, IndexError, TypeError):
        return None, None


def correct_artefacts(doc: dict[str, Any], version: str) -> None:
    """Apply every ARTEFACTS entry of VERSION to DOC; refuse to load a schema where one no longer has
    the generated shape (a refreshed upstream file that fixed it must not keep a stale patch)."""
    defs = doc[defs_key(doc)]
    for versions, path, generated, declared in ARTEFACTS:
        if version not in versions:
            continue
        holder, value = _at(defs, path)
        if type(value) is not list or tuple(sorted(value)) != generated:
            raise SchemaLoadError(
                f"{version} {'/'.join(map(str, path))} no longer has the generated shape "
                f"{list(generated)} the load-time correction expects: re-check tracer/schemas/SOURCE.md"
            )
        holder[path[-1]] = list(declared)


@cache
def load_schema(version: str) -> dict[str, Any]:
    """The parsed schema document of `version` (cached; treat it as read-only)."""
    doc = orjson.loads(schema_bytes(version))
    correct_artefacts(doc, version)
    return doc


def definitions(version: str) -> dict[str, Any]:
    doc = load_schema(version)
    return doc[defs_key(doc)]


__all__ = [
    "ARTEFACTS",
    "SchemaLoadError",
    "correct_artefacts",
    "definitions",
    "defs_key",
    "license_text",
    "load_schema",
    "schema_bytes",
]
