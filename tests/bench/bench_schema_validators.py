"""Which JSON Schema validator the schema rules (MCP150-MCP152) use, and why: measured side by side.

Run: python tests/bench/bench_schema_validators.py [--n 20000]

For a few real-shaped messages of both dialects (draft-07: 2024-11-05; 2020-12: 2025-11-25 and
2026-07-28), each checked against the definition mcptrace's dispatch picks (a small wrapper whose $refs
point into the whole official schema document), prints messages/s for:
  - jsonschema-rs on the parsed object, wrapper compiled against a registry (what mcptrace does);
  - jsonschema-rs with the definitions copied inline into the wrapper (the other way to compile);
  - orjson.loads + jsonschema-rs (parse included: what a message costs end to end);
  - jsonschema-rs given the raw JSON text: NOT equivalent (the binding takes no JSON text as an
    instance; a str is validated as a JSON string), shown to record why mcptrace validates the object
    it already parsed instead of re-serialising or passing text;
  - fastjsonschema (compiles to Python; draft-04/06/07 only, so the 2020-12 documents are compiled as
    draft-07, which their keywords allow);
  - jsonschema (the reference Python implementation), with json.loads;
and the compile time of each. Ratios matter more than absolute numbers on these noisy machines.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tracer.schemas import defs_key, load_schema
from tracer.schemas.dispatch import catalog

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.0"},
}
TOOLS = [
    {
        "name": f"tool_{i}",
        "description": "Looks things up " * 4,
        "inputSchema": {
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["q"],
        },
    }
    for i in range(10)
]

CASES = [
    (
        "2024-11-05",
        "tools/call request",
        lambda c: c.request("tools/call"),
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"q": "x"}},
        },
    ),
    (
        "2024-11-05",
        "tools/call result",
        lambda c: c.result("tools/call", {}, None),
        {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "found 3 things"}]}},
    ),
    (
        "2025-11-25",
        "tools/list result, 10 tools",
        lambda c: c.result("tools/list", {}, None),
        {"jsonrpc": "2.0", "id": 3, "result": {"tools": TOOLS}},
    ),
    (
        "2025-11-25",
        "progress notification",
        lambda c: c.notification("notifications/progress"),
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 5}},
    ),
    (
        "2026-07-28",
        "tools/call request",
        lambda c: c.request("tools/call"),
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"q": "x"}, "_meta": META},
        },
    ),
    (
        "2026-07-28",
        "tools/call result",
        lambda c: c.result("tools/call", {"resultType": "complete"}, None),
        {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "resultType": "complete",
                "content": [{"type": "text", "text": "found 3 things"}],
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench-server", "version": "1.0"}},
            },
        },
    ),
]


def rate(fn, n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t)


def timed(build):
    t = time.perf_counter()
    out = build()
    return out, (time.perf_counter() - t) * 1000


def inline(version: str, schema: dict) -> dict:
    """The wrapper with the whole document's definitions inline and local $refs."""
    doc = load_schema(version)
    key = defs_key(doc)
    text = json.dumps(schema).replace(f"urn:mcptrace:mcp-schema:{version}#", "#")
    out = json.loads(text)
    out[key] = doc[key]
    return out


def main() -> None:
    import fastjsonschema
    import jsonschema
    import jsonschema_rs
    from referencing import Registry, Resource

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000, help="validations per measurement (jsonschema: n/20)")
    args = ap.parse_args()
    n = args.n
    for version, what, pick, msg in CASES:
        target, ms_rs = timed(lambda pick=pick, version=version: pick(catalog(version)))
        raw = orjson.dumps(msg)
        v = target.validator
        assert v.is_valid(msg), list(v.iter_errors(msg))
        full = inline(version, target.schema)
        v_inline, ms_inline = timed(
            lambda full=full: jsonschema_rs.validator_for(full, validate_formats=False)
        )
        fj_schema = copy.deepcopy(full)
        fj_schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        fj, ms_fj = timed(lambda s=fj_schema: fastjsonschema.compile(s, use_formats=False))
        reg = Registry().with_resource(
            f"urn:mcptrace:mcp-schema:{version}", Resource.from_contents(load_schema(version))
        )
        js, ms_js = timed(
            lambda t=target, reg=reg: jsonschema.validators.validator_for(t.schema)(t.schema, registry=reg)
        )
        text = raw.decode()
        r_rs = rate(lambda v=v, msg=msg: v.is_valid(msg), n)
        r_inline = rate(lambda v=v_inline, msg=msg: v.is_valid(msg), n)
        r_parse = rate(lambda v=v, raw=raw: v.is_valid(orjson.loads(raw)), n)
        r_text = rate(lambda v=v, text=text: v.is_valid(text), n)
        r_fj = rate(lambda f=fj, msg=msg: f(msg), n)
        r_js = rate(lambda js=js, text=text: js.is_valid(json.loads(text)), max(200, n // 20))
        print(f"{version} {what} ({target.definition}, {len(raw)} bytes)")
        print(f"  jsonschema-rs, registry (mcptrace) {r_rs:>11,.0f}/s  compile {ms_rs:6.1f} ms")
        print(f"  jsonschema-rs, definitions inline  {r_inline:>11,.0f}/s  compile {ms_inline:6.1f} ms")
        print(f"  orjson.loads + jsonschema-rs       {r_parse:>11,.0f}/s")
        print(
            f"  jsonschema-rs on the raw text      {r_text:>11,.0f}/s  (not equivalent: validates a string;"
            f" is_valid={v.is_valid(text)})"
        )
        print(f"  fastjsonschema (as draft-07)       {r_fj:>11,.0f}/s  compile {ms_fj:6.1f} ms")
        print(
            f"  json.loads + jsonschema            {r_js:>11,.0f}/s  compile {ms_js:6.1f} ms (lazy: it compiles as it goes)"
        )
        print(f"  jsonschema-rs / fastjsonschema x{r_rs / r_fj:.1f}, / jsonschema x{r_rs / r_js:.0f}")


if __name__ == "__main__":
    main()
