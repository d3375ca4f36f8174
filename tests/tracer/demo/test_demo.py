"""`mcptrace demo --no-ui`: a real tee, the bundled server, both eras, the deliberate violations."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from tracer.analyser import analyse_all
from tracer.capture import read_capture
from tracer.model import Era, Kind

DELIBERATE = {"MCP111", "MCP203", "MCP211", "MCP312", "MCP314", "MCP320"}


def test_demo_records_both_eras_through_the_tee_and_prints_the_deliberate_violations(tmp_path):
    out = tmp_path / "demo.jsonl"
    p = subprocess.run(
        [sys.executable, "-m", "tracer", "demo", "--no-ui", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert f"capture written to {out}" in p.stderr
    for rule in DELIBERATE:
        assert rule in p.stdout
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    with open(out, "rb") as fh:
        recs = list(read_capture(fh, str(out)))
    headers = [r for r in recs if r.type.value == "header"]
    assert len(headers) == 2 and all("tracer.demo.server" in " ".join(h.data["command"]) for h in headers)
    seqs = [r.seq for r in recs if r.type.value != "header"]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    msgs, ends = analyse_all(r for r in recs)
    eras = {m.era for m in msgs}
    assert {Era.LEGACY, Era.MODERN} <= eras
    fired = {f.rule for m in msgs for f in m.findings} | {f.rule for f in ends}
    assert fired == DELIBERATE  # the violations are the ones the demo documents, no others
    mrtr = [m for m in msgs if m.kind is Kind.REQUEST and m.op_seq is not None]
    assert len(mrtr) == 2  # book_flight's two rounds are one operation


def test_demo_refuses_to_open_the_viewer_without_a_terminal(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "tracer", "demo", "-o", str(tmp_path / "d.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "terminal" in p.stderr
