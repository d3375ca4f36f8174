"""The relay floors bench_tee.py reads the tee's figures against: the least a relay costs here,
in Python (threads, splice, a spinning loop) and in C, with no capture at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PY = sys.executable


# The floor: the least any relay process written in Python costs here (two threads copying raw fds,
# no capture at all). The tee's figures are read against it: the gap between plain and floor is the
# price of one more process hop on this machine, the gap between floor and tee is the capture's.
MIN_RELAY = r"""
import os, subprocess, sys, threading
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
def pump(a, b, done):
    while (d := os.read(a, 1 << 20)):
        os.write(b, d)
    done()
threading.Thread(target=pump, args=(0, p.stdin.fileno(), p.stdin.close), daemon=True).start()
pump(p.stdout.fileno(), 1, lambda: os.close(1))
sys.exit(p.wait())
"""


# The zero-copy floor (Linux): the same relay moving pipe to pipe with os.splice, bytes never in
# user space. The best a relay process written in Python can do here, capture aside.
MIN_SPLICE_RELAY = r"""
import os, subprocess, sys, threading
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
def pump(a, b, done):
    while os.splice(a, b, 1 << 20):
        pass
    done()
threading.Thread(target=pump, args=(0, p.stdin.fileno(), p.stdin.close), daemon=True).start()
pump(p.stdout.fileno(), 1, lambda: os.close(1))
sys.exit(p.wait())
"""


# The spinning floor (Linux), for (b) only: one thread relays both ways with splice and, after each
# chunk, polls without sleeping for 200 us before it blocks, as mcptrace's relay loop does, but with
# no capture at all. (Blocking splices: fine for request/response, it could deadlock on a flood.)
MIN_SPIN_RELAY = r"""
import os, select, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
route = {0: (p.stdin.fileno(), p.stdin.close), p.stdout.fileno(): (1, lambda: os.close(1))}
poller = select.poll()
for fd in route:
    poller.register(fd, select.POLLIN)
clock, until = time.monotonic_ns, 0
while route:
    ev = poller.poll(0)
    if not ev:
        if clock() < until:
            continue
        ev = poller.poll()
    for fd, _ in ev:
        if not os.splice(fd, route[fd][0], 1 << 20):
            poller.unregister(fd)
            route.pop(fd)[1]()
    until = clock() + 200_000
sys.exit(p.wait())
"""

# The same spinning relay in C, when a C compiler is at hand: what no Python relay can beat here.
MIN_SPIN_RELAY_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static long long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
int main(int argc, char **argv) {
    int in[2], out[2], st;
    if (argc < 2 || pipe(in) || pipe(out)) return 2;
    pid_t pid = fork();
    if (!pid) { dup2(in[0], 0); dup2(out[1], 1); close(in[1]); close(out[0]); execvp(argv[1], argv + 1); _exit(127); }
    close(in[0]); close(out[1]);
    struct pollfd f[2] = {{0, POLLIN, 0}, {out[0], POLLIN, 0}};
    int dst[2] = {in[1], 1}, live = 2;
    long long until = 0;
    while (live) {
        int r = poll(f, 2, 0);
        if (r == 0) { if (now() < until) continue; poll(f, 2, -1); }
        for (int i = 0; i < 2; i++)
            if (f[i].fd >= 0 && f[i].revents && splice(f[i].fd, 0, dst[i], 0, 1 << 20, 0) <= 0) { f[i].fd = -1; live--; close(dst[i]); }
        until = now() + 200000;
    }
    waitpid(pid, &st, 0);
    return 0;
}
"""


def spin_floor(*cmd: str) -> list[str]:
    return [PY, "-c", MIN_SPIN_RELAY, *cmd]


def c_spin_floor(tmp: Path) -> list[str] | None:
    """Compile the C spinning relay into tmp; None without a compiler (the row is left out)."""
    src, exe = tmp / "spin_relay.c", tmp / "spin_relay"
    src.write_text(MIN_SPIN_RELAY_C)
    for cc in ("cc", "gcc", "clang"):
        try:
            if subprocess.run([cc, "-O2", "-o", str(exe), str(src)], capture_output=True).returncode == 0:
                return [str(exe)]
        except OSError:
            continue
    return None


def floor(*cmd: str) -> list[str]:
    return [PY, "-c", MIN_RELAY, *cmd]


def splice_floor(*cmd: str) -> list[str]:
    return [PY, "-c", MIN_SPLICE_RELAY, *cmd]


# The tee itself, run in-process so that it can say where its CPU time went: the relay loop's thread
# (both directions, tracer.stdio.loop.relay_ways) and the whole capture process (from its fork to its
# exit), written to FILE as "relay capture" in CPU seconds. `python -c` puts the working directory
# first on sys.path: run from another tree (`cwd=`), it is that tree's tee.
TEE_CPU = r"""
import os, resource, sys, time
import tracer.stdio.loop as loop
import tracer.stdio.process as process
out, relay, inner, child = sys.argv[1], [0.0], loop.relay_ways, process._child
def relay_ways(*a, **k):
    t = time.thread_time()
    try:
        return inner(*a, **k)
    finally:
        relay[0] += time.thread_time() - t
def capture(*a, **k):
    try:
        return child(*a, **k)
    finally:
        u = resource.getrusage(resource.RUSAGE_SELF)
        with open(out + ".capture", "w") as f:
            f.write(str(u.ru_utime + u.ru_stime))
loop.relay_ways, process._child = relay_ways, capture
from tracer.cli import main
code = main(sys.argv[2:])
with open(out + ".capture") as f:
    spent = f.read()
os.unlink(out + ".capture")
with open(out, "w") as f:
    f.write(f"{relay[0]} {spent}\n")
sys.exit(code)
"""
