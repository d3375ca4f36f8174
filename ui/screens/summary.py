"""The session summary (`s`): eras and compatibility cells, versions, capabilities, counts by
kind and by rule, latency p50/p95/max per method. Numbers come from tracer.summary, built by the
background analysis in the same pass as everything else."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from tracer.safejson import dumps_text
from ui.format import duration, when
from ui.keys import bindings
from ui.widgets.detail_render import rule_info


def _caps(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict) and not value:
        return "{} (none declared)"
    return dumps_text(value)


def _info(value: Any) -> str:
    if isinstance(value, dict):
        return f"{value.get('name', '?')} {value.get('version', '')}".strip()
    return "—" if value is None else str(value)


def _cells(t: Table, *cells: object, style: str | None = None) -> None:
    # Names, methods, ids and capabilities come from the capture: as Text they are shown, never read
    # as Rich markup (a server named "[/]" would otherwise raise MarkupError and end the viewer).
    t.add_row(*(Text(str(c)) for c in cells), style=style)


def render_summary(s: dict[str, Any] | None, *, done: bool) -> RenderableType:
    if not s:
        return Text("The analysis has not reported yet.", style="italic")
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{s.get('messages', 0):,} messages", style="bold")
    recs = s.get("records") or {}
    others = [f"{recs[k]:,} {k}" for k in ("stderr", "http", "event") if recs.get(k)]
    if others:
        head.append("  ·  " + ", ".join(others))
    if s.get("first_t_ns"):
        span = (s.get("last_t_ns") or 0) - s["first_t_ns"]
        head.append(f"  ·  {when(s['first_t_ns'])}, over {duration(span)}", style="dim")
    if not done:
        head.append(f"  ·  partial: analysed {s.get('analysed_rows', 0):,} rows so far", style="yellow")
    parts.append(head)

    for sess in s.get("sessions") or ():
        t = Table(
            title=Text(f"Session {sess['conn']} ({sess.get('transport')})", style="table.title"),
            title_justify="left",
            show_header=False,
            box=None,
            padding=(0, 1),
        )
        t.add_column(style="bold cyan", no_wrap=True)
        t.add_column()
        _cells(t, "compatibility", sess.get("cell") or "—")
        eras = ", ".join(f"{k} {v:,}" for k, v in sorted((sess.get("eras") or {}).items()))
        _cells(t, "eras", eras or "—")
        if sess.get("requested_version") or sess.get("negotiated_version"):
            _cells(
                t,
                "initialize",
                f"requested {sess.get('requested_version') or '—'}, "
                f"negotiated {sess.get('negotiated_version') or '— (no answer)'}",
            )
        if sess.get("modern_versions"):
            _cells(t, "per-request _meta", ", ".join(sess["modern_versions"]))
        if sess.get("discover"):
            sv = sess.get("supported_versions")
            _cells(
                t,
                "server/discover",
                sess["discover"] + (f"; supports {', '.join(map(str, sv))}" if sv else ""),
            )
        _cells(t, "client", _info(sess.get("client_info")))
        _cells(t, "server", _info(sess.get("server_info")))
        _cells(t, "client capabilities", _caps(sess.get("client_caps")))
        _cells(t, "server capabilities", _caps(sess.get("server_caps")))
        _cells(t, "messages", f"{sess.get('messages', 0):,}")
        parts.append(Text(""))
        parts.append(t)

    counts = Table(title="Messages by kind", title_justify="left", box=None, padding=(0, 1))
    counts.add_column("kind")
    counts.add_column("count", justify="right")
    for k, v in sorted((s.get("kinds") or {}).items(), key=lambda kv: -kv[1]):
        _cells(counts, k, f"{v:,}")
    for k, v in sorted((s.get("dirs") or {}).items()):
        _cells(counts, {"c2s": "host → server", "s2c": "server → host"}.get(k, k), f"{v:,}", style="dim")
    for k, v in sorted((s.get("eras") or {}).items()):
        _cells(counts, f"era {k}", f"{v:,}", style="dim")
    parts.append(Text(""))
    parts.append(counts)

    rules = s.get("rules") or {}
    names = rule_info() if rules else {}
    rt = Table(
        title=f"Findings by rule ({sum(rules.values()):,})", title_justify="left", box=None, padding=(0, 1)
    )
    rt.add_column("rule")
    rt.add_column("name")
    rt.add_column("count", justify="right")
    for rid, n in rules.items():
        _cells(rt, rid, names.get(rid, ("", ""))[0], f"{n:,}")
    if not rules:
        _cells(rt, "—", "no findings", "0")
    parts.append(Text(""))
    parts.append(rt)

    lat = s.get("latency") or {}
    lt = Table(title="Latency per method", title_justify="left", box=None, padding=(0, 1))
    for col in ("method", "count", "p50", "p95", "max"):
        lt.add_column(col, justify="left" if col == "method" else "right")
    for method, v in lat.items():
        _cells(lt, method, f"{v['count']:,}", duration(v["p50"]), duration(v["p95"]), duration(v["max"]))
    if not lat:
        _cells(lt, "—", "0", "", "", "")
    parts.append(Text(""))
    parts.append(lt)

    cf = s.get("capture_findings") or []
    if cf:
        parts.append(Text("\nFindings about the capture as a whole", style="bold"))
        for f in cf:
            parts.append(Text(f"  {f[0]}: {f[2]}"))
    return Group(*parts)


class SummaryScreen(Screen):
    BINDINGS = bindings("summary")  # the one keys table, ui/keys.py

    def __init__(self, summary: dict[str, Any] | None, *, done: bool, name: str = "") -> None:
        super().__init__()
        self.summary = summary
        self.done = done
        self.title_name = name

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Session summary — {self.title_name}", style="bold"), id="summary-title")
        with VerticalScroll(id="summary-scroll"):
            yield Static(render_summary(self.summary, done=self.done), id="summary-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#summary-scroll").focus()
