"""The core never imports the UI, mitmproxy or the addons (DESIGN: tracer/ is pure)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import tracer


def test_importing_every_core_module_loads_no_ui_and_no_mitmproxy():
    mods = [
        m.name
        for m in pkgutil.walk_packages(tracer.__path__, "tracer.")
        if not m.name.startswith(("tracer.cli", "tracer.__main__"))
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'mitmproxy', 'ui', 'addons'))\n"
        "print(','.join(bad))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == ""


def test_the_cli_entry_and_lint_load_no_ui_and_no_mitmproxy():
    code = (
        "import sys\nfrom tracer.cli import build_parser\nbuild_parser()\n"
        "import tracer.lint, tracer.report.sarif\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'mitmproxy'))))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == ""


def test_building_the_command_line_loads_no_analyser():
    """Every command pays for the parser, the tee on each spawn by a host: it stays light."""
    code = (
        "import sys\nfrom tracer.cli import build_parser\nbuild_parser()\n"
        "print(','.join(sorted(m for m in sys.modules if m in ('tracer.analyser', 'tracer.lint', "
        "'tracer.rules', 'pydantic'))))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == ""
