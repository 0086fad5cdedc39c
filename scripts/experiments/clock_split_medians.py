"""Experiment: the medians of an alternated run's rounds before and after an SM clock change.

A benchmark record of ``python -m kernelplan.alternate`` keeps every round's time
(``timing.samples_us``, one per round, the implementations alternated) and the SM clock read
while it ran (``timing.clocks_during.busy_sm_mhz``). When the clock drops mid-run the run's
median mixes two regimes; this script gives each record's median over two round ranges, so
implementations can be compared at each clock (the devlog of mla_decode_sm90, "Session 15").

    uv run python scripts/experiments/clock_split_medians.py --hi 0:14 --lo 14:30 \\
        RECORD.json [RECORD.json ...] [--record]

``--hi A:B`` and ``--lo A:B`` are round ranges (Python slices) read off the samples and the
clock series; the clock series is printed beside them, not used to cut. With ``--record`` it
writes one result record (package "experiments", kernel "clock-split-medians") holding, per
input record, its path, implementation, config, both medians and the clock series.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path


def rounds(text: str) -> slice:
    """``A:B`` as a slice; raises argparse.ArgumentTypeError otherwise."""
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a round range is A:B, e.g. 0:14 (got {text!r})"
        ) from None
    if not 0 <= a < b:
        raise argparse.ArgumentTypeError(f"a round range needs 0 <= A < B (got {text!r})")
    return slice(a, b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--hi", type=rounds, required=True, help="rounds at the first clock, A:B")
    ap.add_argument("--lo", type=rounds, required=True, help="rounds at the second clock, A:B")
    ap.add_argument("--record", action="store_true", help="write a result record")
    args = ap.parse_args()
    rows = []
    for path in args.records:
        try:
            rec = json.loads(path.read_text())
            samples = rec["timing"]["samples_us"]
            clocks = rec["timing"]["clocks_during"]["busy_sm_mhz"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"error: {path} is not a benchmark record with samples and clocks ({e})")
            return 2
        hi, lo = samples[args.hi], samples[args.lo]
        if len(hi) < args.hi.stop - args.hi.start or len(lo) < args.lo.stop - args.lo.start:
            print(f"error: {path} has {len(samples)} rounds, fewer than the ranges ask")
            return 2
        impl = f"{rec['package']}/{rec['kernel']}"
        step = (rec.get("config") or {}).get("step")
        row = {
            "record": str(path),
            "implementation": impl,
            "config": rec.get("config"),
            "median_us_hi": round(statistics.median(hi), 1),
            "median_us_lo": round(statistics.median(lo), 1),
            "median_us_all": round(rec["timing"]["median_us"], 1),
            "busy_sm_mhz": clocks,
        }
        rows.append(row)
        print(
            f"{impl}{'' if step is None else f' step={step}'}: {row['median_us_hi']} us "
            f"(rounds {args.hi.start}-{args.hi.stop - 1}) / {row['median_us_lo']} us (rounds "
            f"{args.lo.start}-{args.lo.stop - 1}); all {row['median_us_all']}; clocks {clocks}"
        )
    if args.record:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from kernelplan.records import environment, write_record

        path = write_record(
            {
                "kind": "experiment",
                "package": "experiments",
                "kernel": "clock-split-medians",
                "source": "scripts/experiments/clock_split_medians.py",
                "device": {"name": "cpu"},
                "env": environment(),
                "config": {
                    "hi_rounds": [args.hi.start, args.hi.stop],
                    "lo_rounds": [args.lo.start, args.lo.stop],
                },
                "result": {"rows": rows},
            }
        )
        print(f"record: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
