"""Floods stderr (megabytes of log lines, a long unterminated line, invalid UTF-8) while it
answers requests normally on stdout."""

from _common import answer, err, out, requests

LINES = 50_000
for req in requests():
    for i in range(LINES):
        err(b"debug: step %d of a very chatty server\n" % i)
    err(b"latin-1 log: caf\xe9\n")
    err(b"z" * (3 * 1024 * 1024))  # one 3 MB "line" without a newline yet
    err(b"\n")
    out(answer(req))
