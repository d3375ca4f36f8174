"""Answers each request with one 10 MB line (a large tool result)."""

from _common import out, requests, result

SIZE = 10 * 1024 * 1024
for req in requests():
    out(result(req, {"content": [{"type": "text", "text": "x" * SIZE}]}))
