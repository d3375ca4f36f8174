"""The cost of OpenTelemetry export, measured side by side in one run (noisy machines: read ratios).

    python tests/bench/bench_export.py            # 200,000-message capture, 10,000 round trips
    python tests/bench/bench_export.py --quick    # smaller, for a smoke run
    python tests/bench/bench_export.py --only latency --rounds 7   # (b) alone, on a quiet machine

(a) throughput on one generated capture (tests/gencapture.py), alternating, medians of 3 runs:
    `lint` (every rule, a reporter that drops findings) beside `export --format otlp-json` (the same
    analysis, plus spans and their OTLP/JSON encoding) and beside the SDK path of `--format otlp`
    (spans through the official BatchSpanProcessor to an exporter that discards them: the SDK's own
    cost, without a network). Messages per second, and export/lint ratios.
(b) latency: request/response round trips to tests/servers/echo.py through `mcptrace stdio`, without
    and with `--otlp` (to a local OTLP/HTTP receiver), alternating; median and p99, and their ratio
    (target: within 5%).

Not a test: no assertion, figures only.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult  # noqa: E402

from tests.bench.bench_tee import ECHO, pct, round_trips, tee  # noqa: E402
from tests.gencapture import generate  # noqa: E402
from tracer.analyser import Analyser, RuleSet  # noqa: E402
from tracer.export import build_spans  # noqa: E402
from tracer.export.otel import OtelSink  # noqa: E402
from tracer.export.otlp_json import OtlpJsonWriter  # noqa: E402
from tracer.inputs import open_input  # noqa: E402
from tracer.lint import Reporter, lint_paths  # noqa: E402
from tracer.rules import select_rules  # noqa: E402


class _Discard(SpanExporter):
    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def run_lint(path: Path, rules: RuleSet) -> tuple[int, float]:
    t = time.perf_counter()
    stats = lint_paths([str(path)], rules, Reporter(), progress=False)
    return stats.messages, time.perf_counter() - t


def run_otlp_json(path: Path, rules: RuleSet) -> tuple[int, float]:
    t = time.perf_counter()
    out = io.BytesIO()
    writer = OtlpJsonWriter(out)
    analyser = Analyser(rules)
    build_spans(open_input(str(path)).records, writer, source=str(path), identity="bench", analyser=analyser)
    writer.close()
    return analyser.messages, time.perf_counter() - t


def run_sdk(path: Path, rules: RuleSet) -> tuple[int, float]:
    t = time.perf_counter()
    sink = OtelSink(exporter=_Discard(), metrics=False, max_queue=1 << 20)
    analyser = Analyser(rules)
    build_spans(open_input(str(path)).records, sink, source=str(path), identity="bench", analyser=analyser)
    sink.close(60.0)
    return analyser.messages, time.perf_counter() - t


def bench_throughput(messages: int, rounds: int, tmp: Path) -> None:
    path = tmp / "big.jsonl"
    generate(path, messages)
    rules = RuleSet(select_rules(None, None))
    variants = {"lint": run_lint, "export otlp-json": run_otlp_json, "export otlp (SDK, no network)": run_sdk}
    rates: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            n, secs = fn(path, rules)
            rates[name].append(n / secs)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"(a) throughput on a {messages:,}-message capture, median of {rounds} runs")
    for k, v in med.items():
        print(f"    {k:32} {v:10,.0f} messages/s   {v / med['lint']:5.2f} x lint")


def _far_away() -> None:
    """The receiver stands for a backend on another machine: here it gets only idle CPU, so decoding
    spans does not take the cores the relay is measured on (the exporter itself runs as it would)."""
    os.setpriority(os.PRIO_PROCESS, 0, 19)
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    with open("/proc/self/autogroup", "w") as f:
        f.write("19")


def bench_latency(n: int, rounds: int, tmp: Path) -> None:
    runs: dict[str, tuple[list[float], list[float]]] = {"tee": ([], []), "tee --otlp": ([], [])}
    # the receiver in a process of its own: decoding spans must not hold the measuring interpreter
    rx = subprocess.Popen(
        [sys.executable, "-m", "tests.otlp_receiver"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_far_away,
    )
    url = rx.stdout.readline().removeprefix("listening on ").strip()
    warmup, expected, delivery = 500, 0, []
    try:
        for r in range(rounds):
            for name in runs:
                cmd = tee(tmp / f"lat{r}-{len(name)}.jsonl", *ECHO)
                if name == "tee --otlp":
                    cmd.insert(cmd.index("--"), f"--otlp={url}")
                xs = round_trips(cmd, n, warmup)
                runs[name][0].append(statistics.median(xs))
                runs[name][1].append(pct(xs, 0.99))
                if name == "tee --otlp":
                    # the exporter catches up after the tee exits: wait for its spans before the next
                    # run, so no round is measured beside another's export
                    expected += n + warmup
                    t = time.perf_counter()
                    rx.stdin.write(f"wait {expected} 60\n")
                    rx.stdin.flush()
                    rx.stdout.readline()  # "spans K"
                    delivery.append(time.perf_counter() - t)
    finally:
        out, _ = rx.communicate("", timeout=60)
    spans = int(out.split()[-1]) if out.strip() else 0
    med = {k: statistics.median(v[0]) / 1000 for k, v in runs.items()}
    p99 = {k: statistics.median(v[1]) / 1000 for k, v in runs.items()}
    print(
        f"(b) latency, {n:,} round trips to tests/servers/echo.py, median of {rounds} runs "
        f"({spans:,} of {expected:,} spans received; the last span "
        f"{statistics.median(delivery) if delivery else 0:.1f} s after the tee exited, median)"
    )
    for k in runs:
        print(
            f"    {k:12} median {med[k]:7.1f} us   p99 {p99[k]:8.1f} us   "
            f"ratios {med[k] / med['tee']:5.3f} x / {p99[k] / p99['tee']:5.3f} x"
        )
    print("    target: --otlp within 5% of the plain tee")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("throughput", "latency"), help="run one part")
    ap.add_argument("--rounds", type=int, help="alternating runs per variant (default 3)")
    args = ap.parse_args()
    messages, n, rounds = (40_000, 2_000, 3) if args.quick else (200_000, 10_000, 3)
    rounds = args.rounds or rounds
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.only != "latency":
            bench_throughput(messages, rounds, tmp)
        if args.only != "throughput":
            bench_latency(n, rounds, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
