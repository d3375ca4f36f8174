"""Answers the first request, then dies in the middle of writing the second answer (exit 3)."""

import os

from _common import answer, out, requests

for n, req in enumerate(requests()):
    data = answer(req)
    if n == 0:
        out(data)
        continue
    out(data[: len(data) // 2])
    os._exit(3)
