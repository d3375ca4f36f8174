"""Input readers that need optional heavy dependencies, registered only by CLI commands."""

from __future__ import annotations


def register_optional_inputs() -> None:
    """The .mitm flow reader lives in addons/ (it needs mitmproxy); register it if importable."""
    try:
        from addons.mitm_import import register
    except ImportError:
        return
    register()
    # (the viewer's `G` reads the last flows ahead of the background conversion)
    from dataclasses import replace

    from tracer.inputs import FORMATS
    from tracer.inputs import register as register_format

    fmt = next(f for f in FORMATS if f.name == "mitm")
    register_format(replace(fmt, tail=_mitm_tail))


def _mitm_tail(path: str) -> list[bytes] | None:
    # (imported when the viewer asks: addons.mitm_stream loads the HTTP replay, which a lint of
    # mcptrace's own captures never needs)
    from addons.mitm_stream import read_tail

    return read_tail(path)
