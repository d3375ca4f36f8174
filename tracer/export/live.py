"""Live export for `mcptrace stdio --otlp` and `mcptrace proxy --otlp`: never on the relay's path.

The door only writes its capture, as always. A process of its own (tracer.export.follow) follows
the capture file from this session's header on, runs the analyser (every rule, so findings become
span events), the span builder and the SDK's batch exporter: it shares no interpreter lock with the
relay, the capture writer or mitmproxy's event loop, and it runs on idle CPU. A backend that is
down or slow costs counted drops (spans the exporter could not deliver, the end of the capture not
read in time), never a stalled host; the capture file has everything regardless.
"""

from __future__ import annotations

import os
import subprocess
import sys

CLOSE_TIMEOUT_S = 5.0  # at the end: how long the last spans may take to reach a healthy backend
FAILING_TIMEOUT_S = 0.5  # ...and a backend that refused the last batch, or is slow to take one
DEFAULT_ENDPOINT = "http://localhost:4318"


def signal_url(base: str | None, signal: str) -> str | None:
    """The OTLP/HTTP URL of a signal ("traces", "metrics") under a base URL given on the command line
    (`--otlp http://collector:4318`); a URL that already names a signal's path is moved to this one.
    None: the exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT itself (default localhost:4318)."""
    if not base:
        return None
    base = base.rstrip("/")
    for known in ("/v1/traces", "/v1/metrics", "/v1/logs"):
        if base.endswith(known):
            base = base[: -len(known)]
    return f"{base}/v1/{signal}"


def where(base: str | None) -> str:
    """Where spans go, for messages."""
    return (
        signal_url(base, "traces")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or signal_url(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT, "traces")
        or ""
    )


def capture_identity(path: str) -> str:
    """The span-id identity of the session a capture file's last header opened (the same one
    `mcptrace export` derives from that header), else the file's name."""
    import orjson

    from tracer.export import identity_of

    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - (1 << 20)))
            tail = fh.read()
    except OSError:
        return os.path.basename(path)
    for line in reversed(tail.splitlines()):
        if line.startswith(b'{"type":"header"'):
            try:
                return identity_of(orjson.loads(line), os.path.basename(path))
            except orjson.JSONDecodeError:
                break
    return os.path.basename(path)


def session_offset(path: str) -> int:
    """Where the last session of a capture file starts (its header line): a live export reads from
    there, not the earlier sessions an appended capture holds."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - (1 << 20))
            fh.seek(start)
            tail = fh.read()
    except OSError:
        return 0
    at = tail.rfind(b'\n{"type":"header"')
    if at >= 0:
        return start + at + 1
    return start if tail.startswith(b'{"type":"header"') else 0


class LiveFollower:
    """The exporter process of one session (tracer.export.follow). `stop` closes its stdin: it then
    reads the rest of the capture, exports, reports on stderr and exits on its own."""

    def __init__(
        self,
        endpoint: str | None,
        path: str,
        *,
        quiet: bool = False,
        include_bodies: bool = False,
        own_connection: bool = False,
    ):
        argv = [sys.executable, "-m", "tracer.export.follow", "--offset", str(session_offset(path)), path]
        if own_connection:  # (the tee: `own` names its connection once the server runs)
            argv.insert(3, "--conn-from-stdin")
        if endpoint:
            argv[3:3] = ["--otlp", endpoint]
        if quiet:
            argv.insert(3, "-q")
        if include_bodies:
            argv.insert(3, "--include-bodies")
        self.pid = os.getpid()
        # its own session: a host that ends the server's process group does not cut its export short
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, close_fds=True, start_new_session=True
        )

    def own(self, conn: str) -> None:
        """The session's connection (the tee's `stdio-<server pid>`): the only one exported."""
        try:
            self.proc.stdin.write(conn.encode("utf-8", "replace") + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass  # (the exporter is gone: the capture has everything)

    def stop(self, wait_s: float = 0.0) -> None:
        if self.pid != os.getpid():  # (a forked child holds a copy of this object, not the process)
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if wait_s:
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                pass


def summary(stats: dict, where: str) -> str | None:
    """The one line mcptrace says about a live export."""
    if stats.get("error"):
        return (
            f"otlp export stopped on an internal error ({stats['error']}); the capture is complete, "
            f"export it with: mcptrace export --format otlp FILE"
        )
    lost = []
    if stats.get("dropped"):
        lost.append(f"{stats['dropped']} spans")
    if stats.get("behind_bytes"):
        lost.append(f"the last {stats['behind_bytes']:,} bytes of the capture")
    out = stats.get("sampled_out") or 0
    sampled = f"; {out} sampled out ({stats.get('sampler')})" if out else ""
    if lost:
        return (
            f"otlp: {stats['exported']} of {stats['spans'] - out} spans reached {where}; "
            f"{' and '.join(lost)} dropped (backend down or slow; the capture has everything); "
            f"the relay was not slowed{sampled}"
        )
    return f"otlp: {stats['spans'] - out} spans sent to {where}{sampled}"


def wrap_writer(
    writer, endpoint: str | None, path: str, *, quiet: bool = False, include_bodies: bool = False
) -> ExportingWriter:
    """`mcptrace stdio --otlp`: the exporter process starts now (before the capture process and the
    server); it is told the capture is complete when the tee closes the writer."""
    follower = LiveFollower(endpoint, path, quiet=quiet, include_bodies=include_bodies, own_connection=True)
    return ExportingWriter(writer, follower)


class ExportingWriter:
    """The tee's capture writer, unchanged, plus the end-of-capture signal to the exporter process."""

    def __init__(self, inner, follower: LiveFollower):
        self._inner = inner
        self.follower = follower

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self.follower.stop()  # (no wait: the tee exits at once; the exporter finishes on its own)
