"""Experiment: the medians of an alternated run's rounds before and after an SM clock change.

A benchmark record of ``python -m kernelplan.alternate`` keeps every round's time
(``timing.samples_us``, one per round, the implementations alternated) and the SM clock read
while it ran (``timing.clocks_during.busy_sm_mhz``). When the clock drops mid-run the run's
median mixes two regimes; this script gives each record's median over two round ranges, so
implementations can be compared at each clock (the devlog of mla_decode_sm90, "Session 15").

    uv run python scripts/experiments/clock_split_medians.py --hi 0:14 --lo 14:30 \\
        RECORD.json [RECORD.json ...] [--record]

``--hi A:B`` and ``--lo A:B`` are round ranges (Python slices), chosen where every entry's
time jumps in the same round; the clock series (about 15 readings over the run, not one per
round) only confirms that the SM clock changed, so it is printed beside them and not used to
cut. Only records of an alternated run (``alternated_with``) are taken. With ``--record`` it
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


def summarise(path: Path, hi: slice, lo: slice) -> dict:
    """One alternated benchmark record's row: medians over ``hi`` and ``lo`` (one decimal),
    the run's median and its clock series. Raises ValueError with a one-line reason for a file
    that is not such a record or holds fewer rounds than the ranges ask."""
    try:
        rec = json.loads(path.read_text())
        timing = rec["timing"]
        samples = [float(x) for x in timing["samples_us"]]
        clocks = timing["clocks_during"]["busy_sm_mhz"]
        impl = f"{rec['package']}/{rec['kernel']}"
        median = round(float(timing["median_us"]), 1)
        config = rec.get("config") or {}
        alternated = rec.get("alternated_with")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} cannot be read ({e.__class__.__name__})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(
            f"{path} is not a benchmark record with samples and clocks ({e!r})"
        ) from None
    if not alternated:
        raise ValueError(
            f"{path} is not from an alternated run (no alternated_with): its samples are "
            "repetitions of one entry, not rounds (time with python -m kernelplan.alternate)"
        )
    if len(samples) < max(hi.stop, lo.stop):
        raise ValueError(f"{path} has {len(samples)} rounds, fewer than the ranges ask")
    step = config.get("step") if isinstance(config, dict) else None
    return {
        "record": str(path),
        "implementation": impl,
        "step": step,
        "config": config,
        "median_us_hi": round(statistics.median(samples[hi]), 1),
        "median_us_lo": round(statistics.median(samples[lo]), 1),
        "median_us_all": median,
        "busy_sm_mhz": clocks,
    }


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
            row = summarise(path, args.hi, args.lo)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        rows.append(row)
        step = row["step"]
        print(
            f"{row['implementation']}{'' if step is None else f' step={step}'}: "
            f"{row['median_us_hi']} us (rounds {args.hi.start}-{args.hi.stop - 1}) / "
            f"{row['median_us_lo']} us (rounds {args.lo.start}-{args.lo.stop - 1}); all "
            f"{row['median_us_all']}; clocks {row['busy_sm_mhz']}"
        )
    if args.record:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared/kernelplan/src"))
        try:
            from kernelplan.records import write_experiment
        except ImportError as e:
            print(f"error: --record needs the project's kernelplan ({e}): run it with uv run",
                  file=sys.stderr)  # fmt: skip
            return 2
        path = write_experiment(
            "clock-split-medians",
            "scripts/experiments/clock_split_medians.py",
            {
                "hi_rounds": [args.hi.start, args.hi.stop],
                "lo_rounds": [args.lo.start, args.lo.stop],
            },
            {"rows": rows},
        )
        print(f"record: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
