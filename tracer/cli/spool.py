"""Convert an input to a capture in a process of its own, for the viewer (tracer.inputs.spooled's
SpoolIndex shows the capture's rows as they are written).

A HAR's entries are replayed in time order across the whole document and .mitm flows likewise, so
their rows cannot be made one at a time from the file; the conversion runs here, on the machine's
other core, rather than in a thread that would take the viewer's interpreter lock from the screen.
The capture is written in batches (each batch of whole lines, flushed), and after each batch the
input position reached goes to stdout (`pos N`), for the viewer's progress. A reader that stops on
the input says why on stderr (one line) and exits 2; what was written stays.

    python -m tracer.cli.spool INPUT CAPTURE --input-format NAME [--whole | --follow]

A HAR is read entry by entry (tracer.inputs.harstream) and a flow file flow by flow
(addons.mitm_stream), so the first rows are written before the whole file is read; when the file
is not one those readers give the whole-file reader's records for, the conversion stops with exit
code 3 (RESTART) and the viewer converts it again with --whole (the whole file first).

With --follow (`mcptrace view --follow` on a host log, NDJSON or flow file still being written) the
input is read on as it grows (tracer.inputs.follow; a flow file: addons.mitm_follow, which also says
`torn N BYTES` when it waits with flow N not whole yet) until the viewer stops this process; a file
truncated or rotated away ends it with exit code 4 (FOLLOW_ENDED) and one line on stderr saying so.

It is a command of its own (a process the viewer starts), so it lives with the CLI: it may register
the readers that need optional dependencies (tracer.cli.inputs: the .mitm reader in addons/), which
the core's input package must not import.
"""

from __future__ import annotations

import argparse
import sys

BATCH = 1024  # lines written and flushed at a time
# the first batch: a screenful (the viewer's first screen waits for it, not for 1,024); then 4x as
# many each time up to BATCH, so a taller screen fills soon after (a .mitm's first screen waited for
# 384 flows with a first batch of 256, 288 with 64: 9% less of the converter's CPU before it)
FIRST_BATCH = 64
RESTART = 3  # exit code: convert again with --whole
FOLLOW_ENDED = 4  # exit code: the followed file was truncated or rotated (said on stderr)


STREAMED = ("har", "mitm")  # formats read record by record here (the first rows come at once)


def _streamed(path: str, fmt: str, problems: list):
    """An OpenInput of a HAR or a flow file read entry by entry, flow by flow (the records
    open_input's would give, or tracer.inputs.harstream.Unstreamable); PROBLEMS gets its read
    problems once the file is read."""
    from tracer.inputs import BOM, FORMATS, OpenInput, _ensure_builtin
    from tracer.inputs.harstream import Unstreamable
    from tracer.inputs.settle import settle

    _ensure_builtin()
    if fmt == "har":
        from tracer.inputs.harstream import stream
    else:
        from addons.mitm_stream import stream
    fh = open(path, "rb")  # noqa: SIM115 (closed by convert)
    if fh.read(len(BOM)) != BOM:  # (open_input reads past one)
        fh.seek(0)

    def records():
        try:
            yield from stream(fh, path, problems)
        except (Unstreamable, OSError):
            raise
        except Exception as exc:  # out of order, or whatever a hostile file trips: read it whole
            raise Unstreamable(f"{type(exc).__name__}: {exc}") from None

    found = next(f for f in FORMATS if f.name == fmt)
    return OpenInput(path, found, settle(records()), fh)


def convert(
    path: str, capture: str, fmt: str, out=None, *, whole: bool = False, follow: bool = False
) -> str | None:
    """Append INPUT's records, read as FMT, to CAPTURE as converted lines, reporting positions.
    Raises tracer.inputs.harstream.Unstreamable when a HAR needs the whole-document reader.

    FOLLOW (a host log or NDJSON file still being written): read on as the file grows
    (tracer.inputs.follow), writing out the rows held and saying `idle` whenever the reader waits
    at the file's end; returns why following ended (a truncated or rotated file), if it did."""
    from tracer.inputs import FORMATS, _ensure_builtin, open_input
    from tracer.inputs.lazy import converted_header, converted_records, record_line

    _ensure_builtin()
    if not any(f.name == fmt for f in FORMATS):  # .mitm: its reader needs mitmproxy (addons/)
        from tracer.cli.inputs import register_optional_inputs

        register_optional_inputs()
    buf: list[bytes] = []
    problems: list = []  # the reader's read problems (lint names them; the viewer says them too)
    said: list = [None]  # (input position, torn flow) last said idle at (a followed end is polled often)

    def write_out(idle: bool = False) -> None:
        pos = inp.position()
        torn = getattr(growing, "torn", None) if idle else None  # (a followed flow file's)
        if idle and not buf and said[0] == (pos, torn):
            return
        if buf:
            fh.write(b"\n".join(buf) + b"\n")
            buf.clear()
        fh.flush()
        if idle:
            said[0] = (pos, torn)
        if out is not None:
            out.write(
                f"pos {pos}\n"
                + (f"torn {torn[0]} {torn[1]}\n" if torn is not None else "")
                + ("idle\n" if idle else "")
            )
            out.flush()

    growing = None
    if follow and fmt == "mitm":  # (a flow file being written: read flow by flow as it grows)
        from addons.mitm_follow import follow_flows

        inp, growing = follow_flows(path, on_idle=lambda: write_out(idle=True))
    elif follow:
        from tracer.inputs.follow import follow_input

        inp, growing = follow_input(path, fmt, on_idle=lambda: write_out(idle=True))
    else:
        inp = _streamed(path, fmt, problems) if fmt in STREAMED and not whole else open_input(path, fmt=fmt)
    try:
        with open(capture, "ab") as fh:
            fh.write(converted_header(path, fmt) + b"\n")
            batch = FIRST_BATCH
            tail_due = fmt == "mitm" and not follow  # (see tracer.inputs.spooled.TAIL_SUFFIX)
            for rec in converted_records(inp.records, problems):
                buf.append(record_line(rec))
                if len(buf) >= batch:
                    batch = min(BATCH, batch * 4)
                    write_out()
                    if (
                        tail_due
                    ):  # (after the first screen's rows: G at once, with no mitmproxy in the viewer)
                        tail_due = False
                        _prepare_tail(path, capture)
            if buf:
                fh.write(b"\n".join(buf) + b"\n")
        if out is not None:
            say_problems(problems, out)
    finally:
        inp.fh.close()
    return growing.ended if growing is not None else None


def _prepare_tail(path: str, capture: str) -> None:
    """A flow file's last rows, read ahead here for the viewer's `G` (tracer.inputs.spooled)."""
    from addons.mitm_stream import read_tail
    from tracer.inputs.spooled import write_tail

    try:
        write_tail(capture, read_tail(path))
    except OSError:  # (no prepared tail: the viewer reads the end itself, as before)
        pass


PROBLEMS_SAID = 20  # read problems told to the viewer at most (then how many more)


def say_problems(problems: list, out) -> None:
    """Tell the viewer the read problems (`problem {"line": N, "why": ...}`, the first
    PROBLEMS_SAID, then `problems N` for how many there were), as lint says them."""
    import orjson

    for p in problems[:PROBLEMS_SAID]:
        out.write("problem " + orjson.dumps({"line": p.line, "why": p.message[:2000]}).decode() + "\n")
    if problems:
        out.write(f"problems {len(problems)}\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tracer.cli.spool", description=__doc__.split("\n\n")[0])
    p.add_argument("input")
    p.add_argument("capture")
    p.add_argument("--input-format", required=True)
    p.add_argument("--whole", action="store_true", help="read a HAR as one document")
    p.add_argument(
        "--follow", action="store_true", help="read a host log, NDJSON or flow file on as it grows"
    )
    args = p.parse_args(argv)
    from tracer.inputs import InputError
    from tracer.inputs.harstream import Unstreamable

    try:
        ended = convert(
            args.input, args.capture, args.input_format, sys.stdout, whole=args.whole, follow=args.follow
        )
    except BrokenPipeError:  # the viewer went away
        return 0
    except Unstreamable as exc:
        print(f"converting again as one document: {str(exc)[:400]}", file=sys.stderr)
        return RESTART
    except (InputError, OSError) as exc:
        print(str(exc)[:500], file=sys.stderr)
        return 2
    if ended is not None:
        print(ended[:500], file=sys.stderr)
        return FOLLOW_ENDED
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
