"""The vendored schema.json files are generated from schema.ts; where the generator narrowed a
union's `number` to `integer`, tracer.schemas corrects it at load (ARTEFACTS). These tests guard the
correction both ways: each known artefact is corrected, and no other narrowed union is left."""

from __future__ import annotations

import copy

import orjson
import pytest

from tracer.protocol import VERSIONS
from tracer.schemas import ARTEFACTS, SchemaLoadError, correct_artefacts, defs_key, load_schema, schema_bytes

# unions with an integer member whose integer is the spec's word, not the generator's:
# "Requests MUST include a string or integer ID"; "Progress tokens MUST be a string or integer value";
# a task's ttl is `number | null` on a field (not a union member), so its integer is the generator's
# deliberate default for plain fields
INTEGER_BY_SPEC = {"RequestId", "ProgressToken", "Task/properties/ttl"}


def _integer_unions(node, path=""):
    if isinstance(node, dict):
        t = node.get("type")
        if isinstance(t, list) and "integer" in t and len(t) > 1:
            yield path.lstrip("/")
        for k, v in node.items():
            yield from _integer_unions(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _integer_unions(v, f"{path}/{i}")


@pytest.mark.parametrize("version", VERSIONS)
def test_no_union_narrows_number_to_integer_after_loading_except_where_the_spec_says_integer(version):
    doc = load_schema(version)
    assert set(_integer_unions(doc[defs_key(doc)])) <= INTEGER_BY_SPEC


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_an_elicitation_answer_with_a_fractional_number_is_valid_after_loading_only(version):
    raw = orjson.loads(schema_bytes(version))
    fixed = load_schema(version)

    def scalar_types(doc):
        content = doc[defs_key(doc)]["ElicitResult"]["properties"]["content"]["additionalProperties"]
        branches = content.get("anyOf", [content])
        return next(b["type"] for b in branches if isinstance(b.get("type"), list))

    assert "number" not in scalar_types(raw)  # upstream as published
    assert "number" in scalar_types(fixed)


@pytest.mark.parametrize(("index", "entry"), list(enumerate(ARTEFACTS)))
def test_each_correction_refuses_a_schema_that_no_longer_has_the_generated_shape(index, entry):
    versions, path, _generated, declared = entry
    version = sorted(versions)[0]
    doc = copy.deepcopy(orjson.loads(schema_bytes(version)))
    node = doc[defs_key(doc)]
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = list(declared)  # as if upstream had fixed the generator
    with pytest.raises(SchemaLoadError):
        correct_artefacts(doc, version)
