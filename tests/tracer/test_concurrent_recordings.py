"""Two or more tees appending to one capture file at once (a host starting the same server twice
with a fixed `-o`): each header lands in the middle of the other tees' sessions. A header ends the
sessions of the recording before it, but not a tee's own (`stdio-<pid>`, opened by its `started`
event, ended by its `exit`), so every session reads as it would from a file of its own, in one
process and sharded alike. The recordings are the official SDK's sessions through the real tee
(fixtures/captures), interleaved line by line as concurrent appends write them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CAPTURES = [REPO / "fixtures" / "captures" / f"sdk-stdio-{era}.jsonl" for era in ("legacy", "modern", "auto")]
BOUND_S = 120
LINT = [
    sys.executable,
    "-m",
    "tracer",
    "lint",
    "--no-config",
    "--no-progress",
    "--fail-on",
    "never",
    "-f",
    "json",
]


def _lint(*paths: Path, jobs: int = 1) -> dict:
    env = {**os.environ, "MCPTRACE_LINT_POOL_MIN": "0", "MCPTRACE_LINT_SHARD_MIN": "0"}
    p = subprocess.run(
        [*LINT, "--jobs", str(jobs), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        cwd=REPO,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _interleaved(tmp_path: Path) -> Path:
    """Each recording starts (its header) a few lines into the one before it, then all go on at
    once, a line each in turn, as tees appending to one file write them."""
    recordings = [c.read_bytes().splitlines(keepends=True) for c in CAPTURES]
    lines: list[bytes] = []
    live: list[list[bytes]] = []
    for rec in recordings:
        live.append(rec)
        for _ in range(4):  # the recordings begun so far go on before the next one starts
            for r in live:
                if r:
                    lines.append(r.pop(0))
    while any(live):
        for r in live:
            if r:
                lines.append(r.pop(0))
    path = tmp_path / "shared.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def test_sessions_of_tees_appending_at_once_read_as_each_on_its_own(tmp_path):
    shared = _interleaved(tmp_path)
    alone = [_lint(c) for c in CAPTURES]
    together = _lint(shared)
    assert sorted(f["rule"] for r in alone for f in r["findings"]) == sorted(
        f["rule"] for f in together["findings"]
    )
    assert together["summary"]["messages"] == sum(r["summary"]["messages"] for r in alone)
    eras: dict[str, int] = {}
    for r in alone:
        for era, n in r["summary"]["eras"].items():
            eras[era] = eras.get(era, 0) + n
    assert together["summary"]["eras"] == eras  # (no message of a cut session in era "unknown")
    assert len(together["summary"]["sessions"]) == len(CAPTURES)


def test_tees_appending_at_once_lint_alike_sharded_and_in_one_process(tmp_path):
    shared = _interleaved(tmp_path)
    one = _lint(shared)
    for jobs in (2, 4):
        assert _lint(shared, jobs=jobs) == one


def test_a_header_still_ends_a_session_that_no_tee_opened(tmp_path):
    # a recording without the tee's `started` event (a foreign or hand-made file) reusing one
    # connection name: its sessions end at the next header as before (two sessions, not one)
    lines = []
    for version in ("2025-06-18", "2025-11-25"):
        lines.append({"type": "header", "format": "mcptrace", "version": 1, "t_ns": 1, "transport": "stdio"})
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
        init["params"] = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }
        lines.append(
            {
                "type": "message",
                "seq": 1,
                "t_ns": 2,
                "dir": "c2s",
                "conn": "stdio-7",
                "text": json.dumps(init),
            }
        )
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert len(_lint(path)["summary"]["sessions"]) == 2
