"""Closing a host log's or NDJSON file's lazy rows (the viewer quitting) while its indexing thread
is inside the reader: the close says nothing (it raised "generator already executing", a traceback
as `q` was pressed on a large log still being read), and the reading stops."""

from __future__ import annotations

import sys
import threading

from tests.tracer.view.test_view_lazy_rows import HOSTLOG
from tracer.inputs import open_input
from tracer.inputs.lazy import RecordIndex

BOUND_S = 120  # generous: the machine is shared


def test_closing_lazy_rows_while_another_thread_is_reading_them_raises_nothing(tmp_path, monkeypatch):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(HOSTLOG * 50)
    idx = RecordIndex(open_input(str(path)))
    inside, go = threading.Event(), threading.Event()
    settle = sys.modules["tracer.inputs.settle"]
    real = settle._shape

    def held(rec):  # (the reader's generator is executing while this waits)
        inside.set()
        go.wait(BOUND_S)
        return real(rec)

    monkeypatch.setattr(settle, "_shape", held)
    reader = threading.Thread(target=lambda: _ignore_errors(idx.update), daemon=True)
    reader.start()
    try:
        assert inside.wait(BOUND_S)
        idx.close()
    finally:
        go.set()
        reader.join(BOUND_S)
    assert not reader.is_alive() and idx.closed
    assert idx.update() == 0


def _ignore_errors(call) -> None:
    try:
        call()
    except Exception:  # (the indexing thread's own: the viewer's worker says it, or the view is gone)
        pass
