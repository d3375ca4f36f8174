"""Gaps a capture records in itself: a `dropped` event (the capture fell behind and lost those
bytes; the relay delivered them) or a `capture-incomplete` event (the tee's capture process died
mid-session). lint judged only what is there, so it must not call such a file clean: each gap is a
read problem on its event's line (exit 3, "read in part"), in every lint path alike (one process,
the `--jobs` router, a worker linting a whole file)."""

from __future__ import annotations

from tracer.capture import ReadProblem
from tracer.model import REC_EVENT as _EVENT
from tracer.model import Record

GAP_EVENTS = frozenset({"dropped", "capture-incomplete"})


def gap_problem(rec: Record, source: str) -> ReadProblem | None:
    """The read problem a record stands for, if it is a recorded gap (any value in it untrusted)."""
    if rec.type is not _EVENT:
        return None
    data = rec.data
    if type(data) is not dict:
        return None
    event = data.get("event")
    if type(event) is not str or event not in GAP_EVENTS:
        return None
    if event == "dropped":
        size, stream = data.get("bytes"), data.get("stream")
        what = f"{size:,} bytes" if type(size) is int and size >= 0 else "bytes"
        where = f" of {stream}" if type(stream) is str and stream.isalnum() and len(stream) <= 16 else ""
        text = f"the capture records that it dropped {what}{where} here: what they held was not analysed"
    else:
        text = "the capture records that it is incomplete from here on (its capture process ended)"
    return ReadProblem(rec.source or source, rec.line, text)
