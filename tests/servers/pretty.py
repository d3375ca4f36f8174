"""Pretty-prints its answers (`json.dumps(..., indent=2)`): each message spreads over lines."""

import json

from _common import out, requests

for req in requests():
    out(
        json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"echo": req["method"]}}, indent=2).encode()
        + b"\n"
    )
