"""`mcptrace view`: the Textual viewer, for a capture file (live with --follow) or a pick of the
recent captures."""

from __future__ import annotations

import argparse
import os
import sys

NAME = "view"
HELP = "open a capture (or anything lint reads) in the terminal viewer; no FILE: pick a recent capture"
EXAMPLE = """  mcptrace view ~/.local/state/mcptrace/captures/20261129-200431-weather-4242.jsonl
  mcptrace view --follow capture.jsonl        # while `mcptrace stdio -o capture.jsonl -- ...` runs
  mcptrace view --follow mcp-server-weather.log   # a host's log as it is written (Claude Desktop)
  mcptrace view --follow flows.mitm            # while `mitmdump -w flows.mitm` runs
  mcptrace view                                # choose among recent captures"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", metavar="FILE", help="capture, NDJSON, host log, HAR or .mitm file")
    p.add_argument(
        "--follow",
        "-F",
        action="store_true",
        help="tail a capture, host log, NDJSON or .mitm file that is still being written (a HAR is read once; press f in the viewer to toggle)",
    )
    p.add_argument(
        "--input-format", metavar="NAME", help="skip detection: capture, ndjson, hostlog, har, mitm"
    )


def _check_input(path: str, args: argparse.Namespace) -> str | None:
    """The answer lint, replay and mock give for bad input (one line, exit 2), before any screen
    opens: an empty file (unless followed: the recorder has not written yet), bytes that are no
    input we know, a forced --input-format that reads nothing. Returns the input's format name
    (None: a followed file too short yet to tell its format, which the viewer waits for)."""
    import stat

    from tracer.cli import UsageError
    from tracer.inputs import InputError, decidable_file, open_input

    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        # the viewer indexes its file and reads rows on demand: a stream has no rows to go back to
        raise UsageError(
            f"{path}: not a regular file; the viewer needs one (save the stream to a file, "
            f"or check it with `mcptrace lint {path}`)"
        )
    if args.follow and args.input_format is None and not decidable_file(path):
        return None
    if args.follow and st.st_size == 0:  # (a forced format: nothing to prove it on yet)
        return None
    try:
        # (a forced format is proven on the file's first MiB when a message is there: the proof on
        # the whole file parsed a HAR's whole document here before its converter began)
        inp = open_input(path, fmt=args.input_format, proof_bytes=1 << 20)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    inp.fh.close()
    return inp.format.name


def start_early(path: str, fmt_name: str | None) -> None:
    """An input converted in the background (HAR, .mitm: tracer.cli.spool) starts converting now,
    before the viewer imports Textual and the app (0.4 s on a quiet machine): the converter's own
    imports (mitmproxy's for a flow file) and its first batch run on the other core meanwhile, so the
    first screen waits for the longer of the two start-ups, not for their sum. The viewer takes the
    process over when it opens the file (tracer.inputs.spooled.take_early)."""
    from tracer.cli.spool import STREAMED

    if fmt_name in STREAMED:
        from tracer.inputs.spooled import start_early as start

        try:
            start(path, fmt_name)
        except OSError:  # (no process: the viewer starts its own when it opens the file)
            pass


def check_terminal() -> None:
    from tracer.cli import UsageError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the viewer needs a terminal; for a report on stdout use `mcptrace lint FILE`")


def run(args: argparse.Namespace) -> int:
    from tracer.cli import UsageError

    path = args.file
    if path is not None:
        from tracer.cli.viewpipe import is_stream

        if is_stream(path):  # (`cmd | mcptrace view -`, `view <(cmd)`: spooled to a file it follows)
            from tracer.cli.viewpipe import run as view_stream

            return view_stream(args)
    if path == "-":
        raise UsageError(
            "the viewer reads a file, not standard input (its keyboard is the terminal); "
            "save the stream to a file, or check it with `mcptrace lint -`"
        )
    if path is not None:
        if not os.path.exists(path) and not args.follow:
            raise UsageError(f"{path}: no such file")
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory")
        if args.follow and not os.path.exists(path):
            raise UsageError(f"{path}: no such file (start the recorder first, then follow its capture)")
    from tracer.cli.inputs import register_optional_inputs

    register_optional_inputs()
    fmt_name = _check_input(path, args) if path is not None else None
    check_terminal()
    from tracer import temps

    temps.end_by_signals()  # (SIGTERM, SIGHUP: the conversions in $TMPDIR go, not only at q)
    if path is not None and not (args.follow and fmt_name == "mitm"):  # (followed: its own converter)
        start_early(path, fmt_name)
    from tracer.paths import captures_dir, recent_captures
    from ui.app import McpTraceApp

    if path is None:
        app = McpTraceApp(captures=recent_captures(), directory=str(captures_dir(create=False)))
    else:
        app = McpTraceApp(path, follow=args.follow, fmt=args.input_format)
    app.run()
    for note in app.exit_notes:  # (a followed flow file ending inside a flow: never shown)
        sys.stderr.write(f"mcptrace: {note}\n")
    return 0


def start_proxy_thread(runner, bound: float = 30.0):
    """Run a ProxyRunner (addons/proxy.py) on its own event loop in a daemon thread; returns its
    ProxyInfo once it listens. Raises tracer.cli.UsageError with mitmproxy's one-line reason.

    Why a thread and not Textual's loop: the capture file is the interface. mitmproxy writes it
    and never waits for the screen; the viewer follows it like any other capture (one code path
    for live and offline, and a slow terminal cannot back-pressure traffic)."""
    import threading

    from tracer.cli import UsageError

    ready = threading.Event()
    box: dict = {}

    def main() -> None:
        try:
            runner.run(lambda info: (box.__setitem__("info", info), ready.set()), handle_signals=False)
        except Exception as exc:  # ProxyError and anything mitmproxy raises while starting
            box["error"] = str(exc)
        finally:
            ready.set()

    thread = threading.Thread(target=main, name="mcptrace-proxy", daemon=True)
    thread.start()
    if not ready.wait(bound) or "info" not in box:
        runner.stop()
        raise UsageError(box.get("error") or "the proxy did not start")
    box["info"].thread = thread
    return box["info"]


def run_proxy_with_viewer(runner) -> int:
    """`mcptrace proxy` in a terminal: mitmproxy in a thread, the viewer following its capture."""
    from ui.app import McpTraceApp

    info = start_proxy_thread(runner)
    try:
        # (fmt: its own capture, known to be one while still empty: no wait to tell its format)
        McpTraceApp(info.capture, follow=True, fmt="capture", hint="  ".join(info.lines[:-1])).run()
    finally:
        runner.stop()
        info.thread.join(timeout=10)
    for line in info.lines:
        sys.stderr.write(f"mcptrace: {line}\n")
    return 0
