"""`mcptrace stdio -- CMD ARGS...`: put the tee in front of a stdio MCP server.

Usable by hand in a terminal or as the `command` of a host's server config. Nothing but the
server's own bytes ever reaches our stdout: before anything else runs, fd 1 is moved aside for the
relay and pointed at stderr, so even a stray print from a library cannot corrupt the stream.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

SWITCH_INTERVAL_S = 0.00005

NAME = "stdio"
HELP = "run a stdio MCP server behind a byte-exact tee that records everything (use it in a host's config)"
EXAMPLE = """  mcptrace stdio -- python server.py
  mcptrace stdio -o weather.jsonl --name weather -- uv run weather-server
  host config: {"command": "mcptrace", "args": ["stdio", "--", "npx", "-y", "@modelcontextprotocol/server-everything"]}

Without -o the capture goes to $XDG_STATE_HOME/mcptrace/captures/ (~/.local/state/...) and one
line on stderr says where. Framing problems (a banner on stdout, pretty-printed JSON, CRLF, bad
UTF-8...) are reported on stderr as they happen, with the byte offset in the stream."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o", "--output", metavar="FILE", help="capture file (default: a new file in the captures directory)"
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing -o file (default: a new session is appended to a capture, so "
        "a host that restarts the server keeps every session)",
    )
    p.add_argument("--name", metavar="LABEL", help="label for the capture (default: from the command)")
    p.add_argument(
        "--no-redact",
        action="store_true",
        help="keep credential-looking arguments in the capture header as they are",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="after stdin closes, wait this long for the server to exit before SIGTERM, and "
        "as long again before SIGKILL (default: 3)",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="say nothing on stderr except errors (the server's stderr is still relayed)",
    )
    p.add_argument(
        "--no-live-lint",
        action="store_true",
        help="do not run the stdio framing rules while capturing (lint the capture later)",
    )
    p.add_argument(
        "--queue-mb",
        type=float,
        default=64.0,
        metavar="MB",
        help="bytes the capture process may hold behind the relay (a flood's copies wait for it in a "
        "ring of up to 4x that, given back once the flood is over); beyond, the relay waits for the capture "
        "as long as it keeps taking copies, and drops (and records) chunks only when it took none "
        "for 0.5 s (default: 64)",
    )
    p.add_argument(
        "--drop-when-behind",
        action="store_true",
        help="never wait for the capture: a chunk beyond --queue-mb is dropped from the capture at once "
        "(recorded; the host and the server still get every byte)",
    )
    p.add_argument(
        "--otlp",
        nargs="?",
        const="",
        metavar="URL",
        help="also export the traffic live as OpenTelemetry spans over OTLP/HTTP to URL (default: "
        "$OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318); never slows the relay",
    )
    p.add_argument(
        "--otlp-bodies",
        action="store_true",
        help="with --otlp: add tool arguments and results to the spans (default: no content)",
    )
    # (not "command": the top-level parser keeps the subcommand's name under that dest)
    p.add_argument(
        "server_command",
        nargs=argparse.REMAINDER,
        metavar="-- CMD [ARGS...]",
        help="the server command and its arguments",
    )


def run(args: argparse.Namespace) -> int:
    from tracer.cli import UsageError

    command = list(args.server_command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("give the server command after '--', e.g. mcptrace stdio -- python server.py")
    if args.grace < 0 or args.queue_mb < 0:
        raise UsageError("--grace and --queue-mb must not be negative")
    # The relay threads must get the interpreter back within microseconds when the capture writer
    # is busy: a relay thread waiting for the GIL asks for it after this interval (default 5 ms).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    # From here on fd 1 belongs to the relay alone.
    relay_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    code = tee_main(command, args, relay_out)
    if args.otlp is None and getattr(args, "_own_process", False):
        _exit_at_once(code)
    return code


def _exit_at_once(code: int) -> NoReturn:
    """The session is over and everything is closed: the capture written and its process reaped, the
    server reaped, the notes said. Exit now rather than tear the interpreter down with the analyser's
    hundreds of modules loaded (50-140 ms here), which a host waiting for its server to exit, and the
    end of a flood, would wait for. (Not with --otlp: its exporter's end is the writer's close, and
    teardown is left as it was.)"""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def tee_main(command: list[str], args: argparse.Namespace, relay_out: int) -> int:
    from tracer.analyser import Analyser
    from tracer.cli import UsageError
    from tracer.paths import default_capture_path, label_for_command
    from tracer.rules import select_rules
    from tracer.stdio import splice as tee_splice
    from tracer.stdio.capture import ROOM_WAIT_NS, CaptureSink
    from tracer.stdio.notes import Notes
    from tracer.stdio.tee import SpawnError, Tee, open_capture, spawn

    label = args.name or label_for_command(command)
    try:
        path = args.output or str(default_capture_path(label))
    except OSError as exc:
        raise UsageError(f"cannot create the captures directory: {exc.strerror or exc}") from None
    try:
        writer = open_capture(path, command, label, redact=not args.no_redact, overwrite=args.overwrite)
    except OSError as exc:
        raise UsageError(f"cannot write the capture {path}: {exc.strerror or exc}") from None
    if args.otlp is not None:  # the capture's writer (in the capture process) feeds the live exporter
        from tracer.export.live import wrap_writer

        writer = wrap_writer(
            writer, args.otlp or None, path, quiet=args.quiet, include_bodies=args.otlp_bodies
        )
    notes = Notes(2, quiet=args.quiet, capture=path)
    budget = int(args.queue_mb * 1024 * 1024)
    room_wait_ns = 0 if args.drop_when_behind else ROOM_WAIT_NS
    feed = None
    if tee_splice.available() and not os.environ.get("MCPTRACE_TEE_IN_PROCESS"):
        # The capture in a process of its own (forked now: before the server and before any thread).
        from tracer.stdio.process import CaptureProcess

        feed = CaptureProcess(
            writer,
            budget=budget,
            live_lint=not args.no_live_lint,
            on_finding=notes.finding,
            room_wait_ns=room_wait_ns,
        )
    try:
        child = spawn(command)
    except SpawnError as exc:
        if feed is not None:
            feed.close(5.0)
        if writer.created:
            writer.close()
            try:
                os.unlink(path)  # nothing was captured; do not leave an empty capture behind
            except OSError:
                pass
        else:  # appended to a capture: its earlier sessions stay, this one says why it is empty
            _record_spawn_failure(writer, str(exc))
        notes.say(str(exc), force=True)
        return exc.code
    if not args.output:
        notes.say(f"capturing to {path}")
    if args.otlp is not None:  # (the live exporter sends this connection only: tees may share a file)
        writer.follower.own(f"stdio-{child.pid}")
    if feed is not None:
        feed.set_conn(f"stdio-{child.pid}")
        sink = feed
    else:
        analyser = None if args.no_live_lint else Analyser(select_rules(["MCP8"]))
        sink = CaptureSink(
            writer,
            f"stdio-{child.pid}",
            budget=budget,
            analyser=analyser,
            on_finding=notes.finding,
            room_wait_ns=room_wait_ns,
        )
    sink.start()
    tee = Tee(
        child,
        sink,
        notes,
        in_fd=0,
        out_fd=relay_out,
        grace=args.grace,
        kill_after=args.grace,
        room_wait_ns=room_wait_ns,
    )
    try:
        result = tee.run()
    finally:
        finished = sink.close()
        sink.finish_analysis()
        writer.close()
    if getattr(sink, "ended_unreported", False):  # (the capture must say it, not stderr alone)
        from tracer.stdio.lost import record_capture_incomplete

        record_capture_incomplete(path, f"stdio-{child.pid}", str(sink.write_error))
    _summary(notes, sink, path, finished, server_stopped_reading=tee.server_stopped_reading)
    notes.close()
    return result.exit_code


def _record_spawn_failure(writer, why: str) -> None:
    from tracer.model import Record, RecordType

    try:
        writer.write(
            Record(
                RecordType.EVENT,
                transport="stdio",
                conn="stdio",
                data={"event": "spawn-failed", "error": why},
            )
        )
    except (OSError, ValueError):
        pass  # the one line on stderr still says it
    writer.close()


def _summary(notes, sink, path: str, finished: bool, server_stopped_reading: bool = False) -> None:
    if sink.write_error is not None:
        notes.say(
            f"could not write the capture {path}: {sink.write_error.strerror or sink.write_error}; "
            f"the relay went on unaffected",
            force=True,
        )
    if sink.analysis_error is not None:
        notes.say(
            f"the live stdio check stopped on an internal error ({sink.analysis_error}); the capture "
            f"is complete, lint it with: mcptrace lint {path}",
            force=True,
        )
    if not finished:
        notes.say(f"the capture writer did not finish in time; {path} may lack the last records", force=True)
    dropped = sum(sink.dropped_bytes)
    if dropped:
        notes.say(
            f"the capture fell behind and dropped {dropped:,} bytes in {sink.dropped_chunks} chunks "
            f"(recorded as 'dropped' events; every byte was still relayed)",
            force=True,
        )
    late, late_events = getattr(sink, "late_bytes", 0), getattr(sink, "late_events", 0)
    # The host's bytes read after the server stopped reading reached nobody (a host that goes on
    # writing after Ctrl-C stopped the server): not a relay going on, which is what the rest means.
    undelivered = getattr(sink, "late_stdin_bytes", 0) if server_stopped_reading else 0
    if undelivered:
        notes.say(
            f"{undelivered:,} bytes the host sent after the server had stopped reading came after the "
            f"capture closed: they were not delivered to the server, and are not in {path}",
            force=True,
        )
        late -= undelivered
    if server_stopped_reading:  # (the tee's own notes of that input's end are part of the same story)
        names = getattr(sink, "late_event_names", {})
        late_events -= sum(names.get(n, 0) for n in ("server-stdin-closed", "stdin-eof"))
    if late or late_events:  # (the capture process's notes that came after it closed: never silent)
        events = f" and {late_events} event record{'s' if late_events != 1 else ''}" if late_events else ""
        # (a capture that could not be written, its process killed: that is the cause, said above)
        why = "the capture could not be written" if sink.write_error is not None else None
        notes.say(
            f"{late:,} bytes{events} came after the capture closed and are not in {path} (the relay "
            f"went on: {why or 'a process the server started may hold its pipes open'})",
            force=True,
        )
    if sink.findings:
        counts = ", ".join(f"{rule} ×{n}" for rule, n in sorted(sink.findings.items()))
        notes.say(f"stdio framing findings: {counts}; details: mcptrace lint {path}")
