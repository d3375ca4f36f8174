"""A flow file whose next length prefix asks for more memory than there is (a tnetstring length of a
terabyte, read from a real file: its buffered read allocates first) is a cut file like any other:
the flows before it are read and the rest is one read problem, not "cannot be read" for the whole."""

from __future__ import annotations

from tests.addon_helpers import INIT, INIT_RESULT, body, post
from tests.addons.test_addon_mitm_import import LIST, LIST_RESULT, _read, _timed, _write
from tracer.model import RecordType


def test_a_length_prefix_past_the_memory_keeps_the_flows_before_it(tmp_path):
    path = tmp_path / "odd.mitm"
    _write(path, [_timed(post(INIT, resp=INIT_RESULT), 1000.0), _timed(post(LIST, resp=LIST_RESULT), 1001.0)])
    with open(path, "ab") as fh:
        fh.write(b"999999999999:xx")  # ~1 TB: past RAM and overcommit, within an index-sized integer
    fmt, recs, problems = _read(path)
    assert fmt == "mitm" and len(problems) == 1 and "flow 3" in problems[0].message
    assert [r.raw for r in recs if r.type is RecordType.MESSAGE] == [
        body(INIT),
        body(INIT_RESULT),
        body(LIST),
        body(LIST_RESULT),
    ]
