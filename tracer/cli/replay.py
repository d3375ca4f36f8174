"""`mcptrace replay`: re-drive a captured session against a server and report what changed."""

from __future__ import annotations

import argparse
import sys

NAME = "replay"
HELP = "re-send a capture's host side to a server (stdio command or URL) and diff the answers"
EXAMPLE = """  mcptrace replay capture.jsonl -- python server.py
  mcptrace replay capture.jsonl --url http://127.0.0.1:8000/mcp -o new.jsonl
  mcptrace replay capture.jsonl --ignore '$.result._meta' '$..createdAt' --format json -- ./server"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.usage = "mcptrace replay CAPTURE (-- CMD [ARGS...] | --url URL) [options]"
    p.add_argument(
        "capture", metavar="CAPTURE", help="any input lint reads: capture, NDJSON, host log, HAR, .mitm"
    )
    p.set_defaults(server_command=[])
    _split_at_double_dash(p)
    p.add_argument(
        "--url", help="a Streamable HTTP endpoint instead of a command, e.g. http://127.0.0.1:8000/mcp"
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="NEW_CAPTURE",
        help="write the new traffic here (default: a new file in $XDG_STATE_HOME/mcptrace/captures/; "
        "an existing capture gets it appended as a new session)",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="replace an existing -o file instead of appending"
    )
    p.add_argument(
        "--ignore",
        nargs="+",
        action="append",
        metavar="PATH",
        default=[],
        help="answer paths not to compare: '$.result._meta', '$..timestamp', '$.result.content[*].text' "
        "(ids, requestState and timestamps are always ignored)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds to wait for each answer (default 10)",
    )
    p.add_argument(
        "--format", "-f", choices=["text", "json"], default="text", help="report format (default text)"
    )
    p.add_argument(
        "--conn",
        action="append",
        metavar="ID",
        help="replay only this connection of the capture (repeatable; default: all, one after another)",
    )
    p.add_argument(
        "--header",
        "-H",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra HTTP header for every request (with --url), e.g. 'Authorization: Bearer ...'",
    )
    p.add_argument(
        "--input-format", metavar="NAME", help="skip detection: capture, ndjson, hostlog, har, mitm"
    )
    p.add_argument("--no-redact", action="store_true", help="keep credentials in the new capture's headers")


def _split_at_double_dash(p: argparse.ArgumentParser) -> None:
    """Everything after the first `--` is the server command, wherever the options are.

    A positional `nargs="*"` cannot do this: argparse fills it (empty) together with CAPTURE, so
    `replay cap.jsonl -o new.jsonl -- python server.py` would leave the command unrecognised.
    """
    parse = p.parse_known_args

    def parse_known_args(args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        tail: list[str] = []
        if "--" in args:
            i = args.index("--")
            args, tail = args[:i], args[i + 1 :]
        ns, extras = parse(args, namespace)
        ns.server_command = tail
        return ns, extras

    p.parse_known_args = parse_known_args  # type: ignore[method-assign]


def load_recording(path: str, fmt: str | None, *, side: str):
    """Read an input for replay (side="host") or mock (side="server"); problems go to stderr.

    Returns None (after one line on stderr) when the input cannot be read at all.
    """
    from tracer.inputs import InputError
    from tracer.replay.recording import load

    try:
        recording = load(path, fmt)
    except InputError as exc:
        sys.stderr.write(f"mcptrace: error: {exc}\n")
        return None
    except OSError as exc:
        sys.stderr.write(f"mcptrace: error: {path}: {exc.strerror or exc}\n")
        return None
    for prob in recording.problems:
        sys.stderr.write(f"mcptrace: warning: {prob}\n")
    if not recording.host_requests():
        what = "no requests from the host" if recording.message_count else "no MCP messages"
        sys.stderr.write(
            f"mcptrace: error: {path}: {what} to {'replay' if side == 'host' else 'serve'} "
            f"(read as {recording.format})\n"
        )
        return None
    unanswered = recording.unanswered()
    if unanswered:
        first = unanswered[0]
        where = f"line {first.line}" if first.line else f"seq {first.seq}"
        more = f" and {len(unanswered) - 1} more" if len(unanswered) > 1 else ""
        it = "they are" if len(unanswered) > 1 else "it is"
        consequence = (
            f"{it} re-sent but cannot be compared"
            if side == "host"
            else f"the mock answers {'them' if len(unanswered) > 1 else 'it'} with an error"
        )
        sys.stderr.write(
            f"mcptrace: warning: {path}: the recorded server never answered {first.label()} "
            f"({where}){more}; {consequence}\n"
        )
    return recording


def _parse_headers(values: list[str]) -> list[tuple[str, str]]:
    from tracer.cli import UsageError

    out = []
    for v in values:
        name, sep, value = v.partition(":")
        if not sep or not name.strip() or any(c in name for c in " \t\r\n") or "\n" in value or "\r" in value:
            raise UsageError(f"--header {v!r}: expected 'Name: value'")
        out.append((name.strip(), value.strip()))
    return out


def run(args: argparse.Namespace) -> int:
    import asyncio
    import os

    from tracer.capture import CaptureWriter, header_record
    from tracer.cli import UsageError
    from tracer.cli.inputs import register_optional_inputs
    from tracer.replay.diff import Ignores, PatternError
    from tracer.replay.peers import PeerError
    from tracer.replay.report import build_report, render_json, render_text
    from tracer.replay.runner import Target, plans_for, replay_all

    command = list(args.server_command)
    if bool(command) == bool(args.url):
        raise UsageError("give the server either as '-- CMD [ARGS...]' or as --url URL (exactly one)")
    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if args.header and not args.url:
        raise UsageError("--header applies to --url only")
    if args.url:
        from tracer.http.wire import Url

        try:
            Url.parse(args.url)
        except ValueError as exc:
            raise UsageError(f"--url: {exc}") from None
    try:
        ignores = Ignores([p for group in args.ignore for p in group])
    except PatternError as exc:
        raise UsageError(f"--ignore: {exc}") from None
    target = Target(command or None, args.url, _parse_headers(args.header))

    if (
        args.output
        and os.path.exists(args.output)
        and os.path.exists(args.capture)
        and os.path.samefile(args.output, args.capture)
    ):
        raise UsageError("-o names the capture being replayed; the new traffic needs a file of its own")
    register_optional_inputs()
    recording = load_recording(args.capture, args.input_format, side="host")
    if recording is None:
        return 2
    plans = plans_for(recording, args.conn)
    if not plans:
        known = ", ".join(sorted({c.conn for c in recording.conversations}))
        sys.stderr.write(
            f"mcptrace: error: no connection {', '.join(args.conn or [])!s} in {args.capture} "
            f"(connections: {known})\n"
        )
        return 2

    out_path = args.output
    if out_path is None:
        from tracer.paths import default_capture_path, label_for_command

        out_path = str(default_capture_path("replay-" + (label_for_command(command) if command else "http")))
    head = header_record(
        target.transport,
        command=command or None,
        upstream=args.url,
        label=f"replay of {args.capture}",
        extra={"replay_of": args.capture},
    )
    try:
        writer = CaptureWriter(out_path, head, redact=not args.no_redact, overwrite=args.overwrite)
    except OSError as exc:
        sys.stderr.write(f"mcptrace: error: cannot write {out_path}: {exc.strerror or exc}\n")
        return 2
    if writer.redact:  # (hidden wherever the server or the replayed messages repeat them)
        writer.stderr_secrets = target.secrets()
    try:
        runs = asyncio.run(replay_all(plans, target, writer, timeout=args.timeout))
    except PeerError as exc:
        sys.stderr.write(f"mcptrace: error: {exc}\n")
        return 2
    finally:
        writer.close()
    report = build_report(
        runs,
        ignores,
        capture=args.capture,
        target=target.label,
        transport=target.transport,
        new_capture=out_path,
        input_problems=[str(p) for p in recording.problems],
    )
    if args.format == "json":
        render_json(report, sys.stdout)
    else:
        render_text(report, sys.stdout, color=sys.stdout.isatty())
    return 1 if report.failed else 0
