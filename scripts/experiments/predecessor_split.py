"""Experiment: an alternated run's per-round ratios split by what was launched just before.

``python -m kernelplan.alternate`` times its entries in rounds, one launch of each per round.
Under a power cap a kernel's time can depend on the kernel launched right before it (the power
and heat it leaves), so an entry that always follows the same one carries that one's effect.
Until session 25 the rounds rotated one order, which fixed every entry's predecessor; since
then they follow a Williams design (each entry right after each other one equally often), and
each record names the design and the entries' index order (``launch_order``). This script takes
the records of one run, rebuilds every round's order, and prints for each entry its per-round
ratio to a reference entry (the median over the rounds, as ``kernelplan.report ratios``), split
by the entry's predecessor in the round (``(first)``: the round's first launch, whose
predecessor is the previous round's last) and by the reference's:

    uv run python scripts/experiments/predecessor_split.py --ref LABEL RECORD.json ...

LABEL is an entry's table label (``mla/mla_decode_sm90[step=39]``). Records written before
``launch_order`` existed were rotated: give ``--rotated "LABEL;LABEL;..."``, the entries in the
order the run named them (its log's table lists them so). Bad input: one line and exit 2.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared" / "kernelplan" / "src"))
from kernelplan.alternate import round_orders  # noqa: E402


def load(paths: list[Path]) -> tuple[dict[str, list[float]], dict | None]:
    """label -> per-round samples of one run's records (labels as
    :func:`kernelplan.report.rounds_by_label` finds them: the one name of the run a record does
    not list), and the run's ``launch_order``; raises ValueError with one line."""
    from kernelplan.report import rounds_by_label

    recs = []
    for p in paths:
        try:
            rec = json.loads(p.read_text())
            rec["timing"]["samples_us"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{p}: not an alternated benchmark record ({e!r})") from None
        recs.append((p, rec))
    runs = rounds_by_label(recs)
    if len(runs) != 1:
        raise ValueError(f"the records hold {len(runs)} alternated runs: give one run's records")
    (by_label,) = runs.values()
    samples = {
        lab: [float(x) for x in rec["timing"]["samples_us"]] for lab, (_, rec) in by_label.items()
    }
    order = next(iter(by_label.values()))[1].get("launch_order")
    return samples, order


def orders_for(labels: list[str], n_rounds: int, launch_order, rotated: str | None):
    """Each round's launch order (labels), from the records' design or the rotated list."""
    if rotated:
        names = [x.strip() for x in rotated.split(";") if x.strip()]
        if sorted(names) != sorted(labels):
            raise ValueError(f"--rotated names {names}, the records hold {sorted(labels)}")
        return [names[i % len(names) :] + names[: i % len(names)] for i in range(n_rounds)]
    if not launch_order or launch_order.get("design") != "williams":
        raise ValueError(
            "the records have no launch_order (written before session 25): "
            "give --rotated with the run's entries in their order"
        )
    names = [x.split(" (")[0] for x in launch_order["entries"]]
    if sorted(names) != sorted(labels):
        raise ValueError(f"launch_order names {names}, the records hold {sorted(labels)}")
    rows = round_orders(len(names))
    return [[names[j] for j in rows[i % len(rows)]] for i in range(n_rounds)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--ref", required=True, help="the reference entry's table label")
    ap.add_argument("--rotated", help="for records before launch_order: 'LABEL;LABEL;...'")
    a = ap.parse_args(argv)
    try:
        samples, launch_order = load(a.records)
        if a.ref not in samples:
            raise ValueError(f"--ref {a.ref!r} is none of {sorted(samples)}")
        n = min(len(s) for s in samples.values())
        orders = orders_for(list(samples), n, launch_order, a.rotated)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("| entry | predecessor | rounds | entry / ref, median per round |")
    print("|---|---|---|---|")
    for lab in samples:
        if lab == a.ref:
            continue
        by = {}
        for i, order in enumerate(orders):
            k = order.index(lab)
            prev = order[k - 1] if k else "(first)"
            by.setdefault(prev, []).append(samples[lab][i] / samples[a.ref][i])
        for prev, r in sorted(by.items()):
            print(f"| {lab} | {prev} | {len(r)} | {statistics.median(r):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
