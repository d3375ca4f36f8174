"""`mcptrace export` of a capture that tees appended to at once (a host starting the same server
twice with a fixed `-o`): each recording's spans are those of its own file. A header leaves a tee's
own session open (the analyser decides: tracer.analyser.tee_session), so its spans keep the ids of
the recording they began in instead of switching at another tee's header."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

from tests.tracer.test_concurrent_recordings import BOUND_S, CAPTURES, REPO, _interleaved

CAPTURE_FILE = "mcptrace.capture.file"  # (the input's path: the one thing that differs by design)


def _spans(path) -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-m", "tracer", "export", "-f", "otlp-json", str(path)],
        cwd=REPO,
        capture_output=True,
        timeout=BOUND_S,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    assert done.returncode == 0, done.stderr
    spans = []
    for line in done.stdout.splitlines():
        for rs in orjson.loads(line).get("resourceSpans", ()):
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s["attributes"] = [a for a in s["attributes"] if a["key"] != CAPTURE_FILE]
                    spans.append(s)
    return sorted(spans, key=lambda s: (s["traceId"], s["spanId"]))


def test_export_of_tees_appending_at_once_gives_the_spans_of_each_recording_alone(tmp_path):
    shared = _interleaved(tmp_path)
    alone = sorted((s for c in CAPTURES for s in _spans(c)), key=lambda s: (s["traceId"], s["spanId"]))
    together = _spans(shared)
    assert len({s["traceId"] for s in alone}) == len(CAPTURES)  # (one trace per session)
    assert together == alone
