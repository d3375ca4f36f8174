"""What honouring OTEL_TRACES_SAMPLER costs the otlp-json encoding, side by side in one run.

    python tests/bench/bench_sampling.py              # 100,000-message capture, 7 rounds
    python tests/bench/bench_sampling.py --quick

The spans of one generated capture (tests/gencapture.py, 64 connections: 64 traces) are built once,
then encoded by OtlpJsonWriter, alternating: with a sampling that keeps every span without asking
(what the writer did before), with the default sampler (parentbased_always_on, through the SDK's
sampler) and with traceidratio 0.5. CPU time (process_time), medians, and each one's ratio to the first.

Not a test: no assertion, figures only.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gencapture import generate  # noqa: E402
from tracer.analyser import Analyser  # noqa: E402
from tracer.export import build_spans  # noqa: E402
from tracer.export.otlp_json import OtlpJsonWriter  # noqa: E402
from tracer.export.sampling import TraceSampling, sampler_from_env  # noqa: E402
from tracer.inputs import open_input  # noqa: E402


class _KeepAll(TraceSampling):
    def keep(self, span) -> bool:
        return True


def _encode(spans, sampling: TraceSampling) -> tuple[float, int]:
    t = time.process_time()
    writer = OtlpJsonWriter(io.BytesIO(), sampling)
    for span in spans:
        writer(span)
    writer.close()
    return time.process_time() - t, writer.spans


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    messages = 20_000 if args.quick else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        generate(path, messages, connections=64)  # 64 traces: a ratio has traces to choose among
        spans: list = []
        build_spans(
            open_input(str(path)).records, spans.append, source=str(path), identity="b", analyser=Analyser()
        )
    variants = {
        "keep all, no sampler (before)": lambda: _KeepAll(*reversed(sampler_from_env({}))),
        "parentbased_always_on (default)": lambda: TraceSampling(*reversed(sampler_from_env({}))),
        "traceidratio 0.5": lambda: TraceSampling(
            *reversed(
                sampler_from_env({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"})
            )
        ),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    kept: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, make in variants.items():
            secs, n = _encode(spans, make())
            times[name].append(secs)
            kept[name] = n
    base = statistics.median(times["keep all, no sampler (before)"])
    print(
        f"otlp-json encoding of {len(spans):,} spans ({messages:,} messages), CPU time, median of {args.rounds}"
    )
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"    {name:34} {med * 1000:8.1f} ms  {med / base:5.3f} x before   {kept[name]:,} spans written"
        )


if __name__ == "__main__":
    main()
