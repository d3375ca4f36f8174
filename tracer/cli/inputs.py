"""Input readers that need optional heavy dependencies, registered only by CLI commands."""

from __future__ import annotations


def register_optional_inputs() -> None:
    """The .mitm flow reader lives in addons/ (it needs mitmproxy); register it if importable."""
    try:
        from addons.mitm_import import register
    except ImportError:
        return
    register()
