"""Every rule can be found: `mcptrace rules ID` names where it is defined, its cases and its spec pages."""

from __future__ import annotations

import re

from tests.cases import ROOT
from tracer.catalog.docs import spec_links
from tracer.cli import main
from tracer.rules import all_rules


def test_rules_id_names_the_file_and_line_that_define_the_rule(capsys):
    assert main(["rules", "MCP310"]) == 0
    out = capsys.readouterr().out
    where = re.search(r"defined:\s+(\S+):(\d+)", out)
    assert where, out
    path, line = ROOT / where.group(1), int(where.group(2))
    source = path.read_text(encoding="utf-8").splitlines()
    assert source[line - 1].lstrip().startswith(("@rule", "def ")), source[line - 1]
    assert "def modern_request_missing_meta" in "\n".join(source[line - 1 : line + 12])
    assert "cases:    fixtures/rules/MCP310.yaml" in out
    assert "https://modelcontextprotocol.io/specification/2026-07-28/basic" in out


def test_every_rule_links_to_a_published_spec_page():
    for r in all_rules().values():
        links = spec_links(r)
        assert links, r.id
        assert all(
            u.startswith(
                ("https://modelcontextprotocol.io/specification/20", "https://www.jsonrpc.org/specification")
            )
            for u in links
        ), (r.id, links)
        assert not any(u.endswith((".mdx", ".ts")) for u in links), (r.id, links)


def test_sarif_rules_carry_a_help_uri(tmp_path, capsys):
    empty = tmp_path / "e.jsonl"
    empty.write_text('{"jsonrpc":"2.0","id":1,"method":"ping"}\n', encoding="utf-8")
    main(["lint", "--format", "sarif", "--fail-on", "never", str(empty)])
    import json

    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert rules and all(r["helpUri"].startswith("https://") for r in rules)


def test_the_text_report_gives_each_rule_found_its_spec_page_once(capsys):
    main(["lint", "--fail-on", "never", str(ROOT / "fixtures" / "captures" / "demo.jsonl")])
    out = capsys.readouterr().out
    finding_lines = [line for line in out.splitlines() if ": MCP" in line]
    summary = out.split("Findings by rule:", 1)[1]
    rule = all_rules()["MCP211"]
    assert f"  MCP211 {rule.name}" in summary and spec_links(rule)[0] in summary
    assert finding_lines and not any("https://" in line for line in finding_lines)  # not on every line


def test_the_viewers_finding_detail_links_the_rules_spec_page():
    from ui.widgets.detail_render import _findings

    rule = all_rules()["MCP211"]
    (_, text) = _findings({"f": [["MCP211", 2, "never answered", None, None]]})
    assert spec_links(rule)[0] in text.plain
    assert any(f"link {spec_links(rule)[0]}" in str(span.style) for span in text.spans)
