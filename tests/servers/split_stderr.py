"""Starts a stderr log line, prints a banner on stdout (a finding the tee reports on stderr), and
finishes the stderr line only when the first request arrives: the tee's note must not cut it."""

from _common import answer, err, out, requests

err(b"loading config from /etc/weather.toml ...")
out(b"weather server ready\n")
for req in requests():
    err(b" done\n")
    out(answer(req))
