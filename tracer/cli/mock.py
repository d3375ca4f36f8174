"""`mcptrace mock`: serve the server's side of a capture, to test a host against a server that is not there."""

from __future__ import annotations

import argparse
import sys

NAME = "mock"
HELP = "serve the server's side of a capture (stdio for a host's config, or Streamable HTTP with --listen)"
EXAMPLE = """  mcptrace mock capture.jsonl                         # stdio: put this in a host's config
  mcptrace mock capture.jsonl --listen 127.0.0.1:8765  # Streamable HTTP at http://127.0.0.1:8765/mcp
  mcptrace mock --match strict session.har            # the host must repeat the recorded requests exactly"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "capture", metavar="CAPTURE", help="any input lint reads: capture, NDJSON, host log, HAR, .mitm"
    )
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="serve Streamable HTTP here (port 0 picks a free one) instead of stdio",
    )
    p.add_argument(
        "--match",
        choices=["params", "sequential", "strict"],
        default="params",
        help="params: method and params, any order, ignoring ids and _meta (default); sequential: the "
        "recorded order, by method; strict: the recorded order, params and _meta included",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds to wait for the host's answer to a recorded server request (default 30)",
    )
    p.add_argument(
        "--input-format", metavar="NAME", help="skip detection: capture, ndjson, hostlog, har, mitm"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no per-request notes on stderr, only errors")


def parse_listen(text: str) -> tuple[str, int]:
    from tracer.cli import UsageError

    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(
            f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8765 (port 0 picks a free one)"
        )
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from tracer.cli import UsageError
    from tracer.cli.inputs import register_optional_inputs
    from tracer.cli.replay import load_recording
    from tracer.mock.engine import MockServer
    from tracer.replay.matcher import MatchMode
    from tracer.safejson import terminal_text

    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    listen = parse_listen(args.listen) if args.listen else None
    if listen is None and args.capture == "-":
        # over stdio the host speaks on standard input: it cannot also carry the capture
        raise UsageError(
            "a stdio mock reads its host on standard input, so the capture cannot come from "
            "there; give a file, or serve it over HTTP with --listen"
        )
    register_optional_inputs()
    recording = load_recording(args.capture, args.input_format, side="server")
    if recording is None:
        return 2
    if not any(ex.answer is not None for ex in recording.host_requests()):
        sys.stderr.write(
            f"mcptrace: error: {args.capture}: the recorded server answered no request, "
            f"so there is nothing to serve\n"
        )
        return 2

    def log(line: str) -> None:
        if not args.quiet:
            sys.stderr.write(f"mcptrace mock: {terminal_text(line)}\n")  # (it quotes what the host sent)
            sys.stderr.flush()

    server = MockServer(recording, MatchMode(args.match), timeout=args.timeout, log=log)
    try:
        if listen is None:
            from tracer.mock.stdio import serve_stdio

            asyncio.run(serve_stdio(server, sys.stdin.fileno(), sys.stdout.buffer))
        else:
            asyncio.run(_serve_http(server, listen, args.capture, log))
    except OSError as exc:
        sys.stderr.write(f"mcptrace: error: cannot listen on {args.listen}: {exc.strerror or exc}\n")
        return 2
    st = server.stats
    log(
        f"served {st['served']} request(s), {st['unmatched']} without a recorded match"
        + (f", {st['no_answer']} the recording never answered" if st["no_answer"] else "")
    )
    return 0 if server.ok else 1


async def _serve_http(server, listen: tuple[str, int], capture: str, log) -> None:
    import asyncio
    import signal

    from tracer.mock.http import MockHttpServer

    http = MockHttpServer(server, *listen)
    host, port = await http.start()
    shown = f"[{host}]" if ":" in host else host
    # The URL goes to stdout (one line) so scripts can start the mock on port 0 and read where it is.
    sys.stdout.write(f"http://{shown}:{port}/mcp\n")
    sys.stdout.flush()
    n = len(server.host_exchanges)
    log(
        f"serving {capture} ({n} recorded request(s), match: {server.mode.value}) on http://{shown}:{port}/mcp"
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    serving = asyncio.create_task(http.serve_forever())
    try:
        await stop.wait()
    finally:
        await http.close()
        if http.dropped_after:
            log(
                f"{http.dropped_after} notification(s) that followed an answer were not sent: the host had "
                f"no GET stream open to carry them"
            )
        serving.cancel()
        try:
            await serving
        except asyncio.CancelledError:
            pass
