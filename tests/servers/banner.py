"""Prints a startup banner on stdout (the classic "Unexpected token" bug), then behaves."""

from _common import answer, out, requests

BANNER = b"Starting weather server v1.2 (stdio)\n"
out(BANNER)
for req in requests():
    out(answer(req))
