"""The catalog is addressable by id: a rule MCPabc lives in the module of tracer/rules whose digits
are the longest prefix of "abc" (MCP310 in mcp31_request_meta.py, MCP211 in mcp2_correlation.py)."""

from __future__ import annotations

import re
from pathlib import Path

import tracer.rules
from tracer.rules import all_rules

RULES_DIR = Path(tracer.rules.__file__).parent
MODULE = re.compile(r"mcp(\d+)_[a-z0-9_]+")
# not rule modules: the package itself
NOT_RULE_MODULES = {"__init__"}


def rule_modules() -> dict[str, str]:
    """digits -> module name, for every rule module in the folder."""
    out: dict[str, str] = {}
    for path in sorted(RULES_DIR.glob("*.py")):
        if path.stem in NOT_RULE_MODULES:
            continue
        m = MODULE.fullmatch(path.stem)
        assert m, f"{path.name}: a rule module is named mcp<id digits>_<topic>.py"
        assert m.group(1) not in out, f"{path.name} and {out[m.group(1)]}.py claim the same ids"
        out[m.group(1)] = path.stem
    return out


def home_of(rule_id: str, modules: dict[str, str]) -> str | None:
    digits = rule_id.removeprefix("MCP")
    prefixes = [d for d in modules if digits.startswith(d)]
    return modules[max(prefixes, key=len)] if prefixes else None


def test_every_rule_lives_in_the_module_its_id_names():
    modules = rule_modules()
    misplaced = [
        f"{r.id} is in {r.fn.__module__}, its id names tracer.rules.{home_of(r.id, modules)}"
        for r in all_rules().values()
        if r.fn.__module__ != f"tracer.rules.{home_of(r.id, modules)}"
    ]
    assert misplaced == []


def test_every_rule_module_registers_a_rule_of_its_block():
    homes = {r.fn.__module__.rsplit(".", 1)[-1] for r in all_rules().values()}
    assert sorted(set(rule_modules().values()) - homes) == []


def test_the_home_of_an_id_is_found_from_the_id_alone():
    modules = rule_modules()
    assert home_of("MCP310", modules) == "mcp31_request_meta"
    assert home_of("MCP504", modules) == "mcp50_cancellation"
    assert home_of("MCP714", modules) == "mcp71_sse"
    assert home_of("MCP901", modules) == "mcp9_legacy"


def test_every_rule_module_stays_under_500_lines():
    long = {
        p.name: n
        for p in RULES_DIR.glob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) >= 500
    }
    assert long == {}
