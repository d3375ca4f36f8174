"""How values look on screen: times, latencies, kinds, era badges, severities."""

from __future__ import annotations

import time

from rich.style import Style

KIND_SHORT = {
    "request": "request",
    "notification": "notify",
    "result": "result",
    "error": "error",
    "invalid": "INVALID",
    "batch": "batch",
    "stderr": "stderr",
    "http": "http",
    "event": "event",
    "header": "capture",
    "broken": "broken",
    "blank": "blank",
}
KIND_STYLE = {
    "request": Style(color="bright_cyan"),
    "notification": Style(color="magenta"),
    "result": Style(color="green"),
    "error": Style(color="red", bold=True),
    "invalid": Style(color="bright_white", bgcolor="red", bold=True),
    "batch": Style(color="yellow"),
}
ERA_BADGE = {"modern": " M ", "legacy": " L ", "unknown": " ? "}
ERA_STYLE = {
    "modern": Style(color="black", bgcolor="green"),
    "legacy": Style(color="black", bgcolor="yellow"),
    "unknown": Style(color="white", bgcolor="grey37"),
}
SEVERITY_NAME = {1: "info", 2: "warning", 3: "error"}
SEVERITY_STYLE = {
    1: Style(color="bright_blue"),
    2: Style(color="yellow", bold=True),
    3: Style(color="red", bold=True),
}
DIR_ARROW = {"c2s": "→", "s2c": "←"}
DIR_WORDS = {"c2s": "host → server", "s2c": "server → host"}
DIM = Style(dim=True)


def clock(t_ns: int) -> str:
    """Local wall-clock time with milliseconds: 20:04:31.165."""
    if not t_ns:
        return ""
    secs, rest = divmod(t_ns, 1_000_000_000)
    return time.strftime("%H:%M:%S", time.localtime(secs)) + f".{rest // 1_000_000:03d}"


def when(t_ns: int) -> str:
    """Date and time for the detail pane."""
    if not t_ns:
        return "no time"
    secs, rest = divmod(t_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(secs)) + f".{rest // 1000:06d}"


def duration(ns: int | None) -> str:
    if ns is None:
        return ""
    if ns < 1_000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.0f}µs"
    if ns < 10_000_000:
        return f"{ns / 1_000_000:.1f}ms"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.0f}ms"
    if ns < 100_000_000_000:
        return f"{ns / 1_000_000_000:.2f}s"
    return f"{ns / 1_000_000_000:.0f}s"


def size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def id_repr(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


# Control characters from the capture are drawn as their Unicode control pictures (ESC as ␛), one
# cell for one character so column widths hold: written raw, an ESC or OSC sequence in a method, id,
# stderr line or body would reach the terminal and restyle it, move the cursor or set its title
# (Rich and Textual strip only BEL, BS, VT, FF and CR). C1 controls become U+FFFD, and so do the
# bidirectional marks, embeddings, overrides and isolates: written raw they let a peer reorder what
# the user reads (Trojan Source). Only what is drawn changes; captures and exports keep the bytes.
BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
VISIBLE: dict[int, int] = (
    {c: 0x2400 + c for c in range(32)}
    | {0x7F: 0x2421}
    | dict.fromkeys(range(0x80, 0xA0), 0xFFFD)
    | dict.fromkeys(BIDI, 0xFFFD)
)
VISIBLE_LINES = {c: v for c, v in VISIBLE.items() if c != 0x0A}  # a pane of lines keeps its newlines
VISIBLE_TEXT = {c: v for c, v in VISIBLE_LINES.items() if c != 0x09}  # an editor's text keeps its tabs
