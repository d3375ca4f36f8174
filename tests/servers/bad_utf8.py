"""Answers with a Latin-1 byte (0xE9, "é") inside the JSON text: not UTF-8."""

from _common import out, requests, result

for req in requests():
    data = result(req, {"content": [{"type": "text", "text": "caf__"}]})
    out(data.replace(b"caf__", b"caf\xe9"))
