"""A test OTLP/HTTP receiver on 127.0.0.1: what a collector would get, decoded with the official
opentelemetry-proto messages. Waits are on conditions with a bound, never sleeps.

    with OtlpReceiver() as rx:          # rx.url: http://127.0.0.1:PORT (the base URL)
        ...                              # export to it
        rx.wait_for(lambda spans: len(spans) >= 3)
        rx.spans                         # every span received, as {"name", "trace_id", ..., "attrs"}
"""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

BOUND_S = 60


def _value(v) -> Any:
    which = v.WhichOneof("value")
    return getattr(v, which) if which else None


def _attrs(kvs) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def decode_spans(req: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    out = []
    for rs in req.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    {
                        "name": s.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent": s.parent_span_id.hex() or None,
                        "kind": s.kind,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attrs": _attrs(s.attributes),
                        "trace_state": s.trace_state,
                        "events": [
                            {"name": e.name, "t": e.time_unix_nano, "attrs": _attrs(e.attributes)}
                            for e in s.events
                        ],
                        "status": (s.status.code, s.status.message),
                        "resource": resource,
                        "scope": ss.scope.name,
                    }
                )
    return out


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.requests = 0
        self._cv = threading.Condition()
        rx = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path.endswith("/v1/traces"):
                    req = ExportTraceServiceRequest.FromString(body)
                    with rx._cv:
                        rx.spans.extend(decode_spans(req))
                        rx.requests += 1
                        rx._cv.notify_all()
                    reply = ExportTraceServiceResponse().SerializeToString()
                elif self.path.endswith("/v1/metrics"):
                    with rx._cv:
                        rx.metrics.append(ExportMetricsServiceRequest.FromString(body))
                        rx._cv.notify_all()
                    reply = b""
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening (a backend going down): later exports find the port closed."""
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def wait_for(self, predicate, what: str = "spans") -> list[dict[str, Any]]:
        with self._cv:
            if not self._cv.wait_for(lambda: predicate(self.spans), timeout=BOUND_S):
                raise AssertionError(
                    f"the receiver did not get the {what} within {BOUND_S}s; "
                    f"got {[s['name'] for s in self.spans]}"
                )
            return list(self.spans)

    def metric_names(self) -> set[str]:
        with self._cv:
            return self._names()

    def _names(self) -> set[str]:
        return {
            m.name
            for req in self.metrics
            for rm in req.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        }

    def wait_for_metrics(self, names: set[str]) -> dict[str, object]:
        """Wait until every metric in `names` arrived; returns the last data point seen of each."""
        with self._cv:
            if not self._cv.wait_for(lambda: names <= self._names(), timeout=BOUND_S):
                raise AssertionError(f"metrics {names - self._names()} did not arrive within {BOUND_S}s")
            return {
                m.name: m
                for req in self.metrics
                for rm in req.resource_metrics
                for sm in rm.scope_metrics
                for m in sm.metrics
            }


def main() -> None:
    """Serve in a process of its own (benchmarks: decoding must not share the measuring process's
    interpreter): prints 'listening on URL'; each line `wait N S` on stdin is answered `spans K` once
    N spans arrived or S seconds passed; at the end of stdin, prints the spans received."""
    import sys

    with OtlpReceiver() as rx:
        print(f"listening on {rx.url}", flush=True)
        for line in sys.stdin:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "wait":
                want, bound = int(parts[1]), float(parts[2])
                with rx._cv:
                    rx._cv.wait_for(lambda want=want: len(rx.spans) >= want, timeout=bound)
                    got = len(rx.spans)
                print(f"spans {got}", flush=True)
        print(f"spans {len(rx.spans)}", flush=True)


if __name__ == "__main__":
    main()
