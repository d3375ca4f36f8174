"""MCP annotations on mitmproxy's own flows, so mitmproxy's UIs (mitmweb's flow list, the console)
and filters (`~comment MCP`, `~meta "mcp.era: modern"`, `~marker`) show what each exchange was:
method, kind, era, and how many rules fired.

The analysis only serves these annotations, so it stays off the forwarding path: records are
queued and analysed in batches on mitmproxy's event loop a moment later (ANALYSE_AFTER_S), in the
order they were written, once the request, the answer or the SSE chunk has been handed on. Its
results are announced to mitmproxy's views (UpdateHook), at most a few times a second per flow.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from mitmproxy import ctx, hooks, http

from tracer.analyser import Analyser
from tracer.events import all_findings
from tracer.model import Analysed, Record, Severity

MARKERS = {Severity.ERROR: ":red_circle:", Severity.WARNING: ":large_orange_diamond:"}
UPDATE_EVERY_S = 0.25
ANALYSE_AFTER_S = 0.02  # a human does not see 20 ms; a proxy answering in 3 ms would


class FlowAnnotator:
    def __init__(self) -> None:
        self.analyser = Analyser()
        self._flows: dict[str, http.HTTPFlow] = {}  # live flows that may get records
        self._notes: dict[str, dict[str, Any]] = {}
        self._pushed: dict[str, float] = {}
        self._tasks: set[asyncio.Task] = set()
        self._queue: list[tuple[str, Any]] = []  # ("records", [Record...]) | ("finish", flow), in order
        self._timer: asyncio.TimerHandle | None = None

    def track(self, flow: http.HTTPFlow) -> None:
        self._flows[flow.id] = flow

    def records(self, records: list[Record]) -> None:
        """Analyse RECORDS a moment from now (at once, when no event loop runs)."""
        self._later("records", records)

    def finish(self, flow: http.HTTPFlow) -> None:
        """The flow is over: after the analysis of its last records, announce and forget it."""
        self._later("finish", flow)

    def _later(self, what: str, item: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # offline (tests, importers): no loop to keep free
            if what == "records":
                self._run(item, False)
            else:
                self._finish(item, False)
            return
        self._queue.append((what, item))
        if self._timer is None:
            self._timer = loop.call_later(ANALYSE_AFTER_S, self._drain)

    def _drain(self) -> None:
        self._timer = None
        queue, self._queue = self._queue, []
        for what, item in queue:
            if what == "records":
                self._run(item, True)
            else:
                self._finish(item, True)

    def _run(self, records: list[Record], deferred: bool) -> None:
        touched = {}
        for rec in records:
            flow = self._analyse(rec)
            if flow is not None:
                touched[flow.id] = flow
        if deferred:
            now = time.monotonic()
            due = [f for fid, f in touched.items() if now - self._pushed.get(fid, 0.0) >= UPDATE_EVERY_S]
            for f in due:
                self._pushed[f.id] = now
            self._announce(due)

    def _finish(self, flow: http.HTTPFlow, deferred: bool) -> None:
        if deferred and flow.id in self._notes:
            self._announce([flow])
        self._flows.pop(flow.id, None)
        self._notes.pop(flow.id, None)
        self._pushed.pop(flow.id, None)

    def _announce(self, flows: list[http.HTTPFlow]) -> None:
        if not flows:
            return
        task = asyncio.get_running_loop().create_task(
            ctx.master.addons.trigger_event(hooks.UpdateHook(flows))
        )
        self._tasks.add(task)  # keep a reference until it ran
        task.add_done_callback(self._tasks.discard)

    def _analyse(self, rec: Record) -> http.HTTPFlow | None:
        events = self.analyser.feed(rec)
        flow_id = rec.http.get("flow") if rec.http else None
        flow = self._flows.get(flow_id) if flow_id is not None else None
        if flow is None:
            return None
        note = self._notes.setdefault(flow_id, {"kinds": [], "findings": 0, "worst": None, "rules": []})
        note["conn"] = rec.conn
        findings = []
        for ev in events:
            if ev.__class__ is Analysed:
                if "method" not in note and (ev.method or ev.answers_method):
                    note["method"] = ev.method or ev.answers_method
                if ev.kind.value not in note["kinds"]:
                    note["kinds"].append(ev.kind.value)
                note["era"] = ev.era.value
            findings.extend(all_findings(ev))
        for f in findings:
            note["findings"] += 1
            if f.rule not in note["rules"]:
                note["rules"].append(f.rule)
            if note["worst"] is None or f.severity > note["worst"]:
                note["worst"] = f.severity
        annotate(flow, note)
        return flow


def annotate(flow: http.HTTPFlow, note: dict[str, Any]) -> None:
    """Write NOTE on FLOW: a comment (unless the user wrote one), `mcp.*` metadata, and a marker
    when a rule fired (unless the user marked the flow)."""
    n = note["findings"]
    era = note.get("era", "unknown")
    rules = f" ({', '.join(note['rules'][:4])})" if n else ""
    text = " · ".join(
        [
            f"MCP {note.get('method') or '(no method)'}",
            "/".join(note["kinds"]) or "http",
            era,
            f"{n} finding{'s' if n != 1 else ''}{rules}",
        ]
    )
    if not flow.comment or flow.metadata.get("mcp.comment") == flow.comment:
        flow.comment = text
        flow.metadata["mcp.comment"] = text
    flow.metadata.update(
        {
            "mcp.method": note.get("method") or "",
            "mcp.kind": "/".join(note["kinds"]),
            "mcp.era": era,
            "mcp.findings": n,
            "mcp.conn": note.get("conn", ""),
        }
    )
    marker = MARKERS.get(note["worst"]) if note["worst"] is not None else None
    if marker and (not flow.marked or flow.marked in MARKERS.values()):
        flow.marked = marker
