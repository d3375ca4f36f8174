"""Read mitmproxy flow files (`mitmdump -w`, mitmweb's "Save") as MCP records, through mitmproxy's
own reader (mitmproxy.io), so `mcptrace lint capture.mitm` works on traffic recorded without us.

Each HTTP flow is replayed through the same recorder the live addon uses (tracer.http.recorder),
in wire order: every flow's request, response head, response end and error are put on one
timeline by their timestamps. A flow file holds whole bodies only, so SSE events get the time the
response ended (plain mitmdump buffers SSE anyway: mitmproxy#4469); an SSE body that mitmproxy
streamed without `store_streamed_bodies` was not stored and cannot be read back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from tracer.capture import ReadProblem
from tracer.inputs import InputFormat
from tracer.inputs import register as register_format
from tracer.model import Record

if TYPE_CHECKING:
    from tracer.http.flows import Step
    from tracer.http.recorder import Exchange

# (the HTTP replay is imported when a flow file is read, not when the format is registered: every
# lint registers it, and most read mcptrace's own captures)

# A flow file is a sequence of tnetstrings: `<length>:<payload><type>`, each a dict whose first key
# is a short name (`9:websocket;`, `7:version;`...).
_HEAD = re.compile(rb"\A\d{1,10}:\d{1,3}:[a-z_]{1,32};")


def sniff(head: bytes) -> bool:
    return _HEAD.match(head) is not None


def _seconds_ns(t: float | None) -> int:
    return int(t * 1e9) if t else 0


def flow_steps(f, index: int) -> tuple[Exchange, list[Step], int]:
    """(the exchange, its steps, when its client connection closed or 0) of HTTP flow F, the
    INDEXth of the file (addons.mitm_stream reads them one by one too)."""
    from addons.flows import exchange_of, note_response
    from tracer.http.flows import END, FAILED, HEAD, REQUEST, Step

    ex = exchange_of(f, live=False)
    steps = [Step(ex.t_ns, REQUEST, index, ex)]
    closed = _seconds_ns(f.client_conn.timestamp_end) if f.client_conn is not None else 0
    resp = f.response
    if resp is not None:
        note_response(ex, f, live=False)
        steps.append(Step(ex.t_resp_ns or ex.t_ns, HEAD, index, ex))
        if resp.timestamp_end is not None or f.error is None:  # else it broke mid-body
            body = resp.get_content(strict=False) if resp.raw_content is not None else None
            end = _seconds_ns(resp.timestamp_end) or ex.t_resp_ns or ex.t_ns
            steps.append(Step(end, END, index, ex, body=body))
    if f.error is not None:
        t = _seconds_ns(f.error.timestamp) or ex.t_ns
        steps.append(Step(t, FAILED, index, ex, why=f.error.msg))
    return ex, steps, closed


def read(fh: IO[bytes], source: str) -> Iterator[Record | ReadProblem]:
    from mitmproxy import exceptions, http, io

    from tracer.http.flows import CLIENT_CLOSED, Step, replay
    from tracer.http.recorder import Exchange

    steps: list[Step] = []
    closed: dict[str, tuple[int, int]] = {}  # client connection id -> (when it closed, its last flow)
    index = 0
    problem = None
    try:
        for f in io.FlowReader(fh).stream():
            index += 1
            if not isinstance(f, http.HTTPFlow):
                continue
            ex, flow, end = flow_steps(f, index)
            steps.extend(flow)
            if end and ex.client_id:
                closed[ex.client_id] = (max(end, closed.get(ex.client_id, (0, 0))[0]), index)
    except (exceptions.FlowReadException, MemoryError) as exc:
        # (MemoryError: a length prefix of a terabyte, which a file's buffered read allocates before
        # it finds the file shorter: a cut file like any other, the flows before it kept)
        problem = ReadProblem(source, index + 1, f"cannot read flow {index + 1}: {exc or type(exc).__name__}")
    for cid, (t, last) in closed.items():
        steps.append(
            Step(t, CLIENT_CLOSED, last, Exchange(id="", client="", method="", url="", client_id=cid))
        )
    yield from replay(steps, source)
    if problem is not None:
        yield problem


def register() -> None:
    register_format(InputFormat("mitm", "mitmproxy flow file (mitmdump -w)", sniff, read, priority=40))
