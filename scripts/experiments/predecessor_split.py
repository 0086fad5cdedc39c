"""Experiment: an alternated run's per-round ratios split by what was launched just before.

``python -m kernelplan.alternate`` times its entries in rounds, one timed sample of each per
round. Under a power cap a kernel's time could depend on the kernel launched right before it
(the power and heat it leaves), so an entry that always follows the same one would carry that
one's effect. Until session 25 the rounds rotated one order, which fixed every entry's
predecessor; since then they follow a Williams design (within a round each entry follows each
other one equally often), and each record names the design and the entries' index order
(``launch_order``). This script takes the records of one run, rebuilds every round's order,
and prints for each entry its per-round ratio to a reference entry (the median over the
rounds; rounds where either time is not a positive finite number are skipped, as in
``kernelplan.report ratios``), split by the entry's predecessor: the entry before it in the
round, or for a round's first launch the previous round's last (round 0's first: ``(none)``,
only warm-up launches came before it). With ``--cuda-graph`` a sample is one graph of several
launches of the entry, so its predecessor is what ran before its first launch.

    uv run python scripts/experiments/predecessor_split.py --ref LABEL RECORD.json ...

LABEL is an entry's table label (``mla/mla_decode_sm90[step=39]``; in a run over several
problems the records name each other ``label (problem)``, and so does LABEL). Records written
before ``launch_order`` existed were rotated: give ``--rotated "LABEL;LABEL;..."``, the
entries in the order the run named them (its log's table lists them so). Bad input (a record
of another run or of none, a record without samples, labels that do not match): one line on
stderr and exit status 2 (so do a run's entries left without their records).
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared" / "kernelplan" / "src"))
from kernelplan.alternate import per_round_ratio, round_orders  # noqa: E402


def load(paths: list[Path]) -> tuple[dict[str, list[float]], dict | None]:
    """label -> per-round samples of one run's records (labels as
    :func:`kernelplan.report.rounds_by_label` finds them: the one name of the run a record does
    not list), and the run's ``launch_order``; raises ValueError with one line."""
    from kernelplan.report import rounds_by_label

    recs, run_ids = [], {}
    for p in paths:
        try:
            rec = json.loads(p.read_text())
            samples = rec["timing"]["samples_us"]
            run = rec["round_id"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{p}: not an alternated benchmark record ({e!r})") from None
        if not isinstance(samples, list) or not samples or not run:
            raise ValueError(f"{p}: no per-round samples (timing.samples_us) or no round_id")
        run_ids.setdefault(str(run), []).append(p)
        recs.append((p, rec))
    if len(run_ids) != 1:
        many = ", ".join(f"{r} ({len(ps)}, e.g. {ps[0].name})" for r, ps in run_ids.items())
        raise ValueError(f"the records come from {len(run_ids)} runs: {many}; give one run's")
    runs = rounds_by_label(recs)
    if len(runs) != 1 or len(next(iter(runs.values()))) != len(recs):
        raise ValueError(
            "the records do not name each other (alternated_with) as one run's entries do"
        )
    (by_label,) = runs.values()
    named = set(by_label).union(*(rec.get("alternated_with") or () for _, rec in recs))
    if named != set(by_label):
        raise ValueError(
            f"the run's entries {sorted(named - set(by_label))} have no record here: give all "
            "of its records"
        )
    lengths = {len(rec["timing"]["samples_us"]) for _, rec in by_label.values()}
    if len(lengths) != 1:
        raise ValueError(f"the records hold different numbers of rounds ({sorted(lengths)})")
    samples = {lab: list(rec["timing"]["samples_us"]) for lab, (_, rec) in by_label.items()}
    order = next(iter(by_label.values()))[1].get("launch_order")
    return samples, order


def orders_for(labels: list[str], n_rounds: int, launch_order, rotated: str | None):
    """Each round's launch order (labels), from the records' design or the rotated list."""
    if rotated and launch_order:
        raise ValueError(
            "the records name their launch order (launch_order): drop --rotated, which is for "
            "records written before session 25"
        )
    if rotated:
        names = [x.strip() for x in rotated.split(";") if x.strip()]
        if sorted(names) != sorted(labels):
            raise ValueError(f"--rotated names {names}, the records hold {sorted(labels)}")
        return [names[i % len(names) :] + names[: i % len(names)] for i in range(n_rounds)]
    if not isinstance(launch_order, dict) or launch_order.get("design") != "williams":
        raise ValueError(
            "the records have no Williams launch_order (written before session 25?): give "
            "--rotated with the run's entries in their order"
        )
    names = list(launch_order.get("entries") or [])
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
        n = len(samples[a.ref])
        orders = orders_for(list(samples), n, launch_order, a.rotated)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("| entry | predecessor | rounds | entry / ref, median per round |")
    print("|---|---|---|---|")
    for lab in samples:
        if lab == a.ref:
            continue
        by: dict[str, tuple[list[float], list[float]]] = {}
        for i, order in enumerate(orders):
            k = order.index(lab)
            prev = order[k - 1] if k else (orders[i - 1][-1] if i else "(none)")
            xs, refs = by.setdefault(prev, ([], []))
            xs.append(samples[lab][i])
            refs.append(samples[a.ref][i])
        for prev, (xs, refs) in sorted(by.items()):
            # kernelplan.report's ratio (rounds with a non-finite or non-positive time skipped)
            ratio = per_round_ratio(xs, refs)
            if ratio is None:
                continue
            used = sum(per_round_ratio([x], [r]) is not None for x, r in zip(xs, refs, strict=True))
            print(f"| {lab} | {prev} | {used} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
