"""`mcptrace proxy`: put mitmproxy, with the MCP capture addon, between a host and a remote MCP server."""

from __future__ import annotations

import argparse
import sys

NAME = "proxy"
HELP = (
    "capture Streamable HTTP and HTTP+SSE MCP traffic through mitmproxy (reverse proxy or any mitmproxy mode)"
)
EXAMPLE = """  mcptrace proxy --upstream http://127.0.0.1:8765/mcp          then give the host the printed URL
  mcptrace proxy --upstream https://mcp.example.com/mcp --listen 127.0.0.1:9000 -o cap.jsonl
  mcptrace proxy --mode regular                                 an HTTPS proxy (trust ~/.mitmproxy's CA)"""


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        value = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is out of range")
    return host, value


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return key, value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--upstream", metavar="URL", help="the MCP server's URL: run as a reverse proxy to it")
    p.add_argument(
        "--listen",
        type=_listen,
        metavar="HOST:PORT",
        help="where the proxy listens (default 127.0.0.1:8788; port 0 picks a free one)",
    )
    p.add_argument(
        "--mode",
        action="append",
        metavar="MODE",
        help="a mitmproxy mode instead of the reverse proxy: regular, upstream:URL, local, "
        "socks5, wireguard... (repeatable)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="capture file (default: a new file in $XDG_STATE_HOME/mcptrace/captures/)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing -o file (default: a new session is appended to a capture)",
    )
    p.add_argument("--label", help="label for the capture file name and header")
    p.add_argument(
        "--filter",
        default="",
        metavar="EXPR",
        help="only look at flows matching this mitmproxy filter expression (e.g. '~d example.com')",
    )
    p.add_argument(
        "--no-redact", action="store_true", help="keep credentials (Authorization, Cookie...) in the capture"
    )
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        type=_setting,
        default=[],
        metavar="NAME=VALUE",
        help="any other mitmproxy option, e.g. --set ssl_insecure=true (repeatable)",
    )
    p.add_argument(
        "-s",
        "--script",
        dest="scripts",
        action="append",
        default=[],
        metavar="FILE",
        help="also load this mitmproxy addon script, as mitmdump -s does (repeatable)",
    )
    p.add_argument(
        "--all-addons",
        action="store_true",
        help="load every mitmproxy default addon, as mitmdump does (default: only those the mode "
        "and the --set options need, which keeps the proxy fast)",
    )
    p.add_argument(
        "--otlp",
        nargs="?",
        const="",
        metavar="URL",
        help="also export the traffic live as OpenTelemetry spans over OTLP/HTTP to URL (default: "
        "$OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318); never slows the proxy",
    )
    p.add_argument(
        "--otlp-bodies",
        action="store_true",
        help="with --otlp: add tool arguments and results to the spans (default: no content)",
    )
    p.add_argument(
        "--no-ui", action="store_true", help="no live viewer: print where to connect, capture until Ctrl-C"
    )


def run(args: argparse.Namespace) -> int:
    from tracer.cli import UsageError

    try:
        from addons.proxy import DEFAULT_PORT, ProxyConfig, ProxyError, ProxyRunner
    except ImportError as exc:
        raise UsageError(f"the proxy needs mitmproxy and the addons package: {exc}") from None
    from tracer.output import check_output
    from tracer.safejson import terminal_text

    host, port = args.listen or ("127.0.0.1", DEFAULT_PORT)
    if args.output:
        try:  # before anything listens: a bad -o must not cost the user a whole session
            check_output(args.output, overwrite=args.overwrite)
        except OSError as exc:
            raise UsageError(f"cannot write the capture {args.output}: {exc.strerror or exc}") from None
    cfg = ProxyConfig(
        upstream=args.upstream,
        modes=args.mode or [],
        listen_host=host,
        listen_port=port,
        output=args.output,
        overwrite=args.overwrite,
        redact=not args.no_redact,
        flow_filter=args.filter,
        label=args.label,
        settings=dict(args.settings),
        scripts=list(args.scripts),
        lean=not args.all_addons,
    )
    runner = ProxyRunner(cfg)
    otlp = _start_otlp(args, runner)
    if not args.no_ui and sys.stdin.isatty() and sys.stdout.isatty():
        # In a terminal: mitmproxy runs in a thread and the viewer follows its capture file
        # (tracer/cli/view.py says why). --no-ui, or no terminal: headless, as below.
        from tracer.cli.view import run_proxy_with_viewer

        code = run_proxy_with_viewer(runner)
        _finish_otlp(otlp)
        for line in runner.notices:  # (kept off the screen while the viewer ran)
            sys.stderr.write(f"mcptrace: {terminal_text(line)}\n")
        return code

    def notice(line: str) -> None:  # (a notice may quote a peer: a URL, a header)
        sys.stderr.write(f"mcptrace: {terminal_text(line)}\n")
        sys.stderr.flush()

    runner.on_notice = notice

    def ready(info) -> None:
        for line in info.lines:
            sys.stderr.write(f"mcptrace: {line}\n")
        sys.stderr.write("mcptrace: capturing; Ctrl-C to stop\n")
        sys.stderr.flush()

    try:
        runner.run(ready)
    except ProxyError as exc:
        raise UsageError(str(exc)) from None
    written = runner.addon.writer.records_written if runner.addon.writer is not None else 0
    if runner.info is not None:
        sys.stderr.write(f"mcptrace: stopped; {written} records in {runner.info.capture}\n")
    _finish_otlp(otlp)
    return 0


def _start_otlp(args: argparse.Namespace, runner):
    """--otlp: an exporter process follows the capture file once its first record is written (the
    proxy's event loop only writes the capture, as always)."""
    if args.otlp is None:
        return None
    from tracer.export.live import LiveFollower

    started: list = []

    def first_record(rec) -> None:
        if not started and runner.addon.path:
            started.append(
                LiveFollower(args.otlp or None, runner.addon.path, include_bodies=args.otlp_bodies)
            )

    runner.listeners.append(first_record)
    return started


def _finish_otlp(otlp) -> None:
    """The capture is complete: the exporter reads its end, exports and reports (on stderr) before
    the proxy exits, within a bound."""
    if otlp:
        otlp[0].stop(wait_s=40.0)
