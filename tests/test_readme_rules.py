"""The rule catalog lives in `mcptrace rules` (generated from the registry, so it cannot go stale), not
in the README; the README and the help pages name only rules that exist; `mcptrace rules ID` shows a
failing example. The README stays a front door: short, and its test command is the one CI runs."""

from __future__ import annotations

import re

import pytest

from tests.cases import ROOT
from tracer import help as pages
from tracer.catalog.docs import START, table_markdown, table_text
from tracer.cli import COMMANDS, OPTIONAL_COMMANDS
from tracer.cli import main as cli_main
from tracer.rules import all_rules

README = ROOT / "README.md"
# Ids the pages name on purpose although no rule has them: catalog ids left out (each page says
# why) and the free range the schema rules were placed in.
NOT_RULES = {"MCP124", "MCP411", "MCP523", "MCP545", "MCP125", "MCP149"}


def test_rules_lists_every_registered_rule_once_in_id_order(capsys):
    assert cli_main(["rules"]) == 0
    out = capsys.readouterr().out
    assert out == table_text(all_rules().values())
    assert [line.split()[0] for line in out.splitlines()[1:]] == sorted(all_rules())


def test_rules_as_markdown_is_the_generated_table_with_a_row_per_rule(capsys):
    assert cli_main(["rules", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out == table_markdown(all_rules().values())
    assert [line.split("|")[1].strip() for line in out.splitlines()[2:]] == sorted(all_rules())


def test_the_readme_holds_no_copy_of_the_catalog_and_points_at_it():
    text = README.read_text(encoding="utf-8")
    assert START not in text and "`mcptrace rules`" in text
    rows = [line for line in text.splitlines() if re.match(r"\| MCP\d{3} \|", line)]
    assert rows == [], "the rule table is `mcptrace rules`, not the README"


@pytest.mark.parametrize("page", ["README.md", *pages.names()])
def test_every_rule_id_a_page_names_is_a_registered_rule(page):
    text = README.read_text(encoding="utf-8") if page == "README.md" else pages.raw(page)
    named = set(re.findall(r"\bMCP\d{3}\b", text))
    unknown = named - set(all_rules()) - NOT_RULES
    assert not unknown, f"{page} names rules that do not exist: {sorted(unknown)}"


def test_the_ids_named_as_not_rules_are_still_not_rules():
    """When one of them is implemented, the pages that say it is left out must change."""
    assert not NOT_RULES & set(all_rules())


def test_the_readme_is_a_front_door_whose_test_command_is_the_one_ci_runs():
    text = README.read_text(encoding="utf-8")
    assert 200 <= len(text.splitlines()) <= 300
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ".venv/bin/python -m pytest -q -p no:cacheprovider"
    assert command in ci and f"\n{command}\n" in text
    assert "`mcptrace help`" in text and "tests/bench/README.md" in text
    for name in COMMANDS + OPTIONAL_COMMANDS:  # every command is at least named at the front door
        assert f"mcptrace {name}" in text, name


def test_rules_command_shows_a_failing_example(capsys):
    assert cli_main(["rules", "MCP322"]) == 0
    out = capsys.readouterr().out
    assert "Fails on: `tools/list` answered with" in out
    assert "Failing mini-session (fixtures/rules/MCP322.yaml" in out
    assert out.count("◀ fires here") == 1


def test_the_readme_shows_the_help_listing_as_it_is(capsys):
    assert cli_main(["help"]) == 0
    listing = capsys.readouterr().out
    assert f"$ .venv/bin/mcptrace help\n{listing}```" in README.read_text(encoding="utf-8")


def test_the_readme_lint_screen_is_what_lint_prints_on_the_demo_capture(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli_main(["lint", "fixtures/captures/demo.jsonl"]) == 1
    out = capsys.readouterr().out
    assert f"```\n{out}```" in README.read_text(encoding="utf-8")


def test_the_readme_replay_screen_is_lines_replay_prints(capsys, monkeypatch, tmp_path):
    """The README's replay screen is abridged ("..."), but every line it shows is printed by a real
    replay of the SDK capture against the SDK server's `--variant changed`, in that order."""
    import sys

    text = README.read_text(encoding="utf-8")
    start = text.index("replay of fixtures/captures/sdk-stdio-legacy.jsonl against")
    screen = text[start : text.index("```", start)].splitlines()
    monkeypatch.chdir(ROOT)
    server = [sys.executable, "fixtures/sdk/server.py", "--variant", "changed"]
    capture = "fixtures/captures/sdk-stdio-legacy.jsonl"
    assert cli_main(["replay", capture, "-o", str(tmp_path / "new.jsonl"), "--", *server]) == 1
    out = capsys.readouterr().out.replace(sys.executable, ".venv/bin/python").splitlines()
    shown = [line for line in screen if line.strip() != "..." and not line.startswith("new capture:")]
    assert [line for line in out if line in shown] == shown


def test_the_readme_export_screen_lists_spans_export_writes(capsys, monkeypatch, tmp_path):
    """Each span line of the README's export screen (name, duration, ERROR) is a span that
    `export --format otlp-json` writes for the demo capture."""
    import json

    monkeypatch.chdir(ROOT)
    out = tmp_path / "spans.jsonl"
    assert cli_main(["export", "--format", "otlp-json", "-o", str(out), "fixtures/captures/demo.jsonl"]) == 0
    spans = set()
    for line in out.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    ms = (int(sp["endTimeUnixNano"]) - int(sp["startTimeUnixNano"])) / 1e6
                    error = sp.get("status", {}).get("code") == 2
                    spans.add((sp["name"], f"{ms:.3f}", error))
    text = README.read_text(encoding="utf-8")
    start = text.index("trace 1: mcptrace.connection")
    shown = re.findall(r"^(?:trace \d: )?\s*(\S.*?)\s+(\d+\.\d{3}) ms(  ERROR)?", text[start:], re.M)
    assert len(shown) >= 10
    for name, ms, error in shown:
        assert (name, ms, bool(error)) in spans, (name, ms, error)
    summary = capsys.readouterr().err.replace(str(out), "spans.jsonl")
    assert summary in text
