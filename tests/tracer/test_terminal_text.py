"""What a peer sent reaches the user's terminal (and CI log viewers) only as text: the reports of
lint, replay and the mock's log write an ESC or OSC sequence, a bidi override (Trojan Source) or a
line break from the traffic as its escape, so a hostile method name can neither restyle the
terminal, set its title, reorder what is read, nor forge a line of a report."""

from __future__ import annotations

import json
from pathlib import Path

from tests.replay_support import mcptrace, req, res, write_capture
from tests.sdk_peers import server_cmd
from tracer.cli import main
from tracer.safejson import terminal_text

EVIL = "acme/\x1b]0;owned\x07\x1b[8m\u202eevil\u2066\x9b\nfile.jsonl:1: MCP999 [error] forged"
OBEYED = ("\x1b", "\x07", "\u202e", "\u2066", "\x9b")
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def _hostile_capture(tmp_path: Path) -> Path:
    return write_capture(tmp_path / "evil.jsonl", ("c2s", req(1, EVIL, {"_meta": META})), ("s2c", res(1, {})))


def _clean(text: str) -> None:
    assert not any(c in text for c in OBEYED), repr(text)
    assert "MCP999" not in "".join(line[:30] for line in text.splitlines())  # no line of its own


def test_terminal_text_escapes_what_a_terminal_obeys_and_keeps_the_rest():
    assert terminal_text("tools/call héllo 漢字 ✓") == "tools/call héllo 漢字 ✓"
    assert terminal_text("a\x1b[31mb\u202ec\x7f\x9b") == "a\\x1b[31mb\\u202ec\\x7f\\x9b"
    assert terminal_text("a\nb\td", keep="\n") == "a\nb\\x09d"
    assert terminal_text("lone \ud800") == "lone \\ud800"  # (valid UTF-8 on any stdout)


def test_lint_text_and_github_reports_quote_a_hostile_method_as_text(tmp_path, capsys):
    path = str(_hostile_capture(tmp_path))
    for fmt in ("text", "github"):
        main(["lint", "--no-progress", "--fail-on", "never", "--format", fmt, path])
        out, err = capsys.readouterr()
        _clean(out + err)
        assert "acme/\\x1b]0;owned\\x07\\x1b[8m\\u202eevil" in out
    assert "evil\\u2066\\x9b%0Afile.jsonl" in out  # GitHub's own line break escape stays


def test_replay_report_quotes_a_hostile_method_as_text(tmp_path):
    proc = mcptrace(
        "replay", str(_hostile_capture(tmp_path)), "-o", str(tmp_path / "n.jsonl"), "--", *server_cmd()
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    _clean(proc.stdout)
    row = next(line for line in proc.stdout.splitlines() if "acme/" in line)
    assert "acme/\\x1b]0;owned" in row and "new error" in row


def test_the_mocks_log_quotes_a_hostile_request_as_text(tmp_path):
    recorded = write_capture(
        tmp_path / "rec.jsonl", ("c2s", req(1, "tools/list", {})), ("s2c", res(1, {"tools": []}))
    )
    line = json.dumps(req(2, EVIL, {"q": "\u202e"}), ensure_ascii=False) + "\n"
    proc = mcptrace("mock", str(recorded), stdin=line)
    assert "Traceback" not in proc.stderr
    _clean(proc.stderr)
    assert "no match for acme/\\x1b]0;owned" in proc.stderr
    answer = json.loads(proc.stdout)  # the host still gets its one error answer, the method exact
    assert answer["id"] == 2 and answer["error"]["code"] == -32601 and EVIL in answer["error"]["message"]
