"""export says what it leaves out of a file (a broken line, where a HAR is cut short) on stderr, as
lint reports it (FILE:LINE: why), and a file of broken lines says a bounded number of them."""

from __future__ import annotations

from tracer.cli import main
from tracer.cli.export import TOLD

DEMO = "fixtures/captures/demo.jsonl"


def test_export_says_each_broken_line_it_leaves_out_and_stays_bounded(tmp_path, capsys):
    with open(DEMO, "rb") as fh:
        lines = fh.read().splitlines()
    broken = tmp_path / "broken.jsonl"
    # line 3 broken once; then TOLD + 10 more broken lines after the good ones
    broken.write_bytes(b"\n".join([*lines[:2], b"{not json", *lines[2:], *[b"{nope"] * (TOLD + 10)]) + b"\n")
    assert main(["export", "-f", "otlp-json", str(broken), "-o", str(tmp_path / "spans.jsonl")]) == 0
    err = capsys.readouterr().err.splitlines()
    said = [e for e in err if e.startswith(f"mcptrace: {broken}:")]
    assert said[0].startswith(f"mcptrace: {broken}:3: ") and len(said) == TOLD
    assert sum("more read problems than" in e for e in err) == 1
    assert err[-1].startswith("mcptrace: ") and "spans from" in err[-1]
