"""A well-behaved stdio server: answers every request with its method and params; exits on EOF."""

from _common import answer, out, requests

for req in requests():
    out(answer(req))
