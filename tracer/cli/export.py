"""`mcptrace export`: recorded MCP traffic as OpenTelemetry spans (to a backend, or an OTLP/JSON file)
or as a HAR file."""

from __future__ import annotations

import argparse
import sys

NAME = "export"
HELP = "export recorded traffic as OpenTelemetry spans (OTLP/HTTP, OTLP/JSON) or as HAR"
EXAMPLE = """  mcptrace export --format otlp capture.jsonl                 to $OTEL_EXPORTER_OTLP_ENDPOINT (default localhost:4318)
  mcptrace export --format otlp -o http://collector:4318 logs/*.jsonl
  mcptrace export --format otlp-json -o spans.jsonl capture.jsonl   a collector's otlpjsonfile receiver reads it
  mcptrace export --format har -o session.har http-capture.jsonl    open it in browser devtools

Every input lint reads works (captures, HAR, .mitm, host logs, NDJSON). Spans follow the OpenTelemetry
semantic conventions for MCP, plus mcptrace.* attributes (era, findings as span events). No message
content leaves the machine unless --include-bodies is given; credential headers never do."""

FORMATS = ("otlp", "otlp-json", "har")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="INPUT", help="inputs; the format is detected from content")
    p.add_argument(
        "--format",
        "-f",
        required=True,
        choices=FORMATS,
        help="otlp: send to a backend over OTLP/HTTP; otlp-json: write OTLP/JSON lines; har: HAR 1.2",
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="OUT",
        help="otlp-json/har: the file to write (default: stdout); otlp: the backend's base URL "
        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)",
    )
    p.add_argument(
        "--include-bodies",
        action="store_true",
        help="add tool arguments and results (gen_ai.tool.call.arguments/.result) to spans",
    )
    p.add_argument(
        "--input-format", metavar="NAME", help="skip detection: capture, ndjson, hostlog, har, mitm"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="otlp: how long to wait for the backend to take the last spans (default: 30)",
    )


def run(args: argparse.Namespace) -> int:
    from tracer.cli.inputs import register_optional_inputs
    from tracer.inputs import InputError, open_input

    register_optional_inputs()
    try:
        opened = [open_input(p, fmt=args.input_format) for p in args.paths]  # all first: fail before output
    except InputError as exc:
        sys.stderr.write(f"mcptrace: error: {exc}\n")
        return 2
    for inp in opened:
        inp.records = _told(inp.records)
    if args.format == "har":
        return _har(args, opened)
    if args.format == "otlp":
        return _otlp(args, opened)
    out = _open_out(args.output, args.paths)
    try:
        from tracer.export.otlp_json import OtlpJsonWriter

        writer = OtlpJsonWriter(out)
        messages = _spans(args, opened, writer)
        writer.close()
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    where = args.output or "stdout"
    sys.stderr.write(
        f"mcptrace: {writer.spans} spans from {messages} messages written to {where}"
        f"{_sampled_out(writer.sampled_out, writer.sampling.description)}\n"
    )
    return 0


TOLD = 20  # read problems said on stderr (a file of broken lines must not flood it)


def _told(records):
    """RECORDS, each read problem said on stderr as lint says it (FILE:LINE: why): what an export
    leaves out of a file (a broken line, where a HAR is cut short) is not left out silently."""
    from tracer.capture import ReadProblem
    from tracer.safejson import terminal_text

    told = 0
    for rec in records:
        if isinstance(rec, ReadProblem):
            told += 1
            if told <= TOLD:
                sys.stderr.write(f"mcptrace: {terminal_text(str(rec))}\n")
            elif told == TOLD + 1:
                sys.stderr.write(
                    f"mcptrace: more read problems than {TOLD}; `mcptrace lint` lists every one\n"
                )
        yield rec


def _open_out(path: str | None, inputs: list[str]):
    """The output file, private to the user (a HAR holds message bodies; spans may, with
    --include-bodies). Never one of the inputs: writing it would truncate the capture being read."""
    import os

    from tracer.cli import UsageError

    if path is None or path == "-":
        return sys.stdout.buffer
    for inp in inputs:
        try:
            if os.path.samefile(path, inp):
                raise UsageError(f"-o {path} is one of the inputs; exporting onto it would destroy it")
        except OSError:
            pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    return os.fdopen(fd, "wb")


def _spans(args: argparse.Namespace, opened, emit) -> int:
    """Every input through the analyser (every rule) and the span builder; the message count."""
    import os

    from tracer.analyser import Analyser, RuleSet
    from tracer.export import build_spans
    from tracer.rules import select_rules

    rules = RuleSet(select_rules(None, None))
    messages = 0
    for inp in opened:
        analyser = Analyser(rules)
        build_spans(
            inp.records,
            emit,
            source=inp.path,
            identity=os.path.basename(inp.path),
            analyser=analyser,
            include_bodies=args.include_bodies,
        )
        messages += analyser.messages
    return messages


def _otlp(args: argparse.Namespace, opened) -> int:
    from tracer.export.live import where as endpoint_of
    from tracer.export.otel import OtelSink

    sink = OtelSink(args.output, flush_every=512)  # (a file: wait for the backend rather than drop)
    messages = _spans(args, opened, sink)
    finished = sink.close(args.timeout)
    where = endpoint_of(args.output)
    sampled = _sampled_out(sink.sampled_out, sink.sampling.description)
    if sink.dropped or not finished:
        sys.stderr.write(
            f"mcptrace: {sink.exporter.exported} of {sink.spans - sink.sampled_out} spans from {messages} "
            f"messages reached {where}; {sink.dropped} dropped (backend down, slow or refusing){sampled}\n"
        )
        return 1
    sent = sink.spans - sink.sampled_out
    sys.stderr.write(f"mcptrace: {sent} spans from {messages} messages sent to {where}{sampled}\n")
    return 0


def _sampled_out(n: int, sampler: str) -> str:
    """What the end line says of the spans OTEL_TRACES_SAMPLER left out (neither sent nor lost)."""
    return f"; {n} sampled out ({sampler})" if n else ""


def _har(args: argparse.Namespace, opened) -> int:
    from tracer.capture import ReadProblem
    from tracer.export.har import HarBuilder

    har = HarBuilder()
    for i, inp in enumerate(opened):
        prefix = f"{i}:" if len(opened) > 1 else ""
        for rec in inp.records:
            if isinstance(rec, ReadProblem):
                continue
            if prefix and isinstance(rec.http, dict) and isinstance(rec.http.get("flow"), str):
                rec.http = {**rec.http, "flow": prefix + rec.http["flow"]}  # flows of two files never merge
            har.feed(rec)
    if not har.flows:
        sys.stderr.write(
            "mcptrace: error: no HTTP exchanges in the input (a HAR holds HTTP traffic; a stdio "
            "capture has none: use --format otlp-json)\n"
        )
        return 2
    out = _open_out(args.output, args.paths)
    try:
        n = har.write(out)
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    sys.stderr.write(f"mcptrace: {n} HTTP exchanges written to {args.output or 'stdout'} (HAR 1.2)\n")
    return 0
