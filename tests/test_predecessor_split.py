"""scripts/experiments/predecessor_split.py on hand-made records of one alternated run: each
entry's per-round ratio to the reference split by its predecessor (in the round, or the
previous round's last launch), for a run in the Williams design (``launch_order``) and for an
older rotated run (``--rotated``); rounds with a zero or non-finite time are skipped; bad input
(a record of another run, even one among several, records that do not name each other, empty
or null samples, different round counts, an unknown reference, a rotated list that does not
name the run's entries, a run without ``launch_order`` and no ``--rotated``, a missing file)
refused in one line with exit 2."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "scripts" / "experiments" / "predecessor_split.py"
LABELS = ["mla/a", "mla/b", "mla/c"]


def _records(tmp_path: Path, samples: dict, williams=True, run="r1"):
    paths = []
    for lab, s in samples.items():
        rec = {
            "kind": "benchmark",
            "package": "mla",
            "kernel": lab.split("/")[1],
            "round_id": run,
            "alternated_with": [x for x in samples if x != lab],
            "timing": {"median_us": sorted(s)[len(s) // 2] if s else None, "samples_us": s},
        }
        if williams:
            rec["launch_order"] = {"design": "williams", "entries": list(samples)}
        p = tmp_path / f"{run}-{lab.split('/')[1]}.json"
        p.write_text(json.dumps(rec))
        paths.append(p)
    return paths


def _run(*args):
    return subprocess.run(
        [sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True
    )


def test_ratios_split_by_predecessor_in_the_williams_order(tmp_path):
    # 3 entries: 6 rows; c takes 12 when it follows b and 10 otherwise; a and b take 10
    from kernelplan.alternate import round_orders

    rows = round_orders(3)

    def prev_of(i):  # c's predecessor in round i: in the round, else the last round's last
        order = rows[i % len(rows)]
        k = order.index(2)
        return order[k - 1] if k else (rows[(i - 1) % len(rows)][-1] if i else None)

    c = [12.0 if prev_of(i) == 1 else 10.0 for i in range(12)]
    after_b = sum(prev_of(i) == 1 for i in range(12) if i != 5)
    a = [10.0] * 12
    a[5] = 0.0  # a round with a zero reference time is skipped, not divided by
    recs = _records(tmp_path, {"mla/a": a, "mla/b": [10.0] * 12, "mla/c": c})
    r = _run("--ref", "mla/a", *recs)
    assert r.returncode == 0, r.stderr
    wrong = _run("--ref", "mla/a", "--rotated", "mla/a;mla/b;mla/c", *recs)
    assert wrong.returncode == 2 and "drop --rotated" in wrong.stderr
    lines = {tuple(x.strip() for x in ln.strip("|").split("|")) for ln in r.stdout.splitlines()}
    assert ("mla/c", "mla/b", str(after_b), "1.200") in lines
    # c is first in rounds whose previous round ended with a or b; round 0 has no predecessor
    firsts = [i for i in range(12) if rows[i % len(rows)][0] == 2]
    prevs = ["(none)" if i == 0 else "mla/" + "abc"[rows[(i - 1) % len(rows)][-1]] for i in firsts]
    assert all(any(ln[:2] == ("mla/c", p) for ln in lines) for p in prevs)
    counted = sum(int(ln[2]) for ln in lines if ln[0] == "mla/c")
    assert counted == 11  # 12 rounds, one skipped


def test_rotated_runs_and_bad_input(tmp_path):
    old = _records(tmp_path, {lab: [10.0, 11.0, 12.0] for lab in LABELS}, williams=False)
    r = _run("--ref", "mla/a", "--rotated", "mla/a;mla/b;mla/c", *old)
    assert r.returncode == 0, r.stderr
    # rotated: b follows a in rounds 0 and 2 and is first in round 1, after round 0's last (c)
    assert "| mla/b | mla/a | 2 | 1.000 |" in r.stdout and "| mla/b | mla/c | 1 |" in r.stdout
    other = _records(tmp_path, {lab: [10.0, 10.0] for lab in LABELS}, run="r2")
    bad = tmp_path / "bad"
    bad.mkdir()
    empty = _records(bad, {"mla/a": [], "mla/b": [1.0], "mla/c": [1.0]}, run="r3")
    null = json.loads(old[0].read_text())
    null["timing"]["samples_us"] = None
    (bad / "null.json").write_text(json.dumps(null))
    short = _records(bad, {"mla/a": [1.0], "mla/b": [1.0, 2.0], "mla/c": [1.0]}, run="r4")
    for args, needle in (
        (["--ref", "mla/a", *old, *other], "come from 2 runs"),
        (["--ref", "mla/a", *old, other[0]], "come from 2 runs"),
        (["--ref", "mla/a", *old[:2]], "have no record here"),
        (["--ref", "mla/a", *empty], "no per-round samples"),
        (["--ref", "mla/a", bad / "null.json", *old[1:]], "no per-round samples"),
        (["--ref", "mla/a", *short], "different numbers of rounds"),
        (["--ref", "mla/z", *old], "--ref 'mla/z' is none of"),
        (["--ref", "mla/a", "--rotated", "mla/a;mla/b", *old], "--rotated names"),
        (["--ref", "mla/a", *old], "give --rotated"),
        (["--ref", "mla/a", tmp_path / "missing.json"], "not an alternated benchmark record"),
    ):
        r = _run(*args)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(err) == 1 and needle in err[0], (args, r.stderr)
