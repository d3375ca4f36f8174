"""README's rule table is generated from the registry, and `mcptrace rules ID` shows a failing example."""

from __future__ import annotations

from tests.cases import ROOT
from tracer.catalog.docs import END, START, main, readme_block, table_markdown
from tracer.cli import main as cli_main
from tracer.rules import all_rules

README = ROOT / "README.md"
FIX = "python -m tracer.rules --write-readme README.md"


def test_readme_rule_table_is_exactly_the_generated_one():
    text = README.read_text(encoding="utf-8") if README.exists() else ""
    assert START in text and END in text, f"README.md has no generated rule table; run: {FIX}"
    between = text[text.index(START) + len(START) : text.index(END)]
    assert between.strip("\n") == table_markdown(all_rules().values()).strip("\n"), (
        f"README.md's rule table is out of date; run: {FIX}"
    )


def test_write_readme_replaces_only_the_part_between_the_markers(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# Title\n\nIntro.\n\n{START}\n| stale |\n{END}\n\n## After\nMore.\n", encoding="utf-8"
    )
    assert main(["--write-readme", str(readme)], all_rules().values()) == 0
    once = readme.read_text(encoding="utf-8")
    assert once.startswith("# Title\n\nIntro.\n\n") and once.endswith("\n\n## After\nMore.\n")
    assert readme_block(all_rules().values()) in once and "| stale |" not in once
    assert main(["--write-readme", str(readme)], all_rules().values()) == 0
    assert readme.read_text(encoding="utf-8") == once  # idempotent
    capsys.readouterr()


def test_write_readme_appends_a_section_when_the_markers_are_missing(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n", encoding="utf-8")
    assert main(["--write-readme", str(readme)], all_rules().values()) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# Title\n\n## Rule catalog\n\n" + START)
    assert "appended" in capsys.readouterr().err


def test_every_registered_rule_has_a_row_in_the_generated_table():
    table = table_markdown(all_rules().values())
    rows = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
    assert rows == sorted(all_rules())


def test_rules_command_shows_a_failing_example(capsys):
    assert cli_main(["rules", "MCP322"]) == 0
    out = capsys.readouterr().out
    assert "Fails on: `tools/list` answered with" in out
    assert "Failing mini-session (fixtures/rules/MCP322.yaml" in out
    assert out.count("◀ fires here") == 1
