"""Ends every line with CRLF (a Windows-style writer in text mode)."""

from _common import answer, out, requests

for req in requests():
    out(answer(req)[:-1] + b"\r\n")
