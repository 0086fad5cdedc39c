"""scripts/experiments/predecessor_split.py on hand-made records of one alternated run: each
entry's per-round ratio to the reference split by its predecessor in the round, for a run in
the Williams design (``launch_order``) and for an older rotated run (``--rotated``), and bad
input (records of two runs, an unknown reference, a rotated list that does not name the run's
entries, a run without ``launch_order`` and no ``--rotated``) refused in one line with exit 2."""

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
            "timing": {"median_us": sorted(s)[len(s) // 2], "samples_us": s},
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
    c = []
    for i in range(12):
        order = rows[i % len(rows)]
        k = order.index(2)
        c.append(12.0 if k and order[k - 1] == 1 else 10.0)
    recs = _records(tmp_path, {"mla/a": [10.0] * 12, "mla/b": [10.0] * 12, "mla/c": c})
    r = _run("--ref", "mla/a", *recs)
    assert r.returncode == 0, r.stderr
    lines = {tuple(x.strip() for x in ln.strip("|").split("|")) for ln in r.stdout.splitlines()}
    assert ("mla/c", "mla/b", "4", "1.200") in lines
    assert ("mla/c", "mla/a", "4", "1.000") in lines
    assert ("mla/b", "mla/c", "4", "1.000") in lines


def test_rotated_runs_and_bad_input(tmp_path):
    old = _records(tmp_path, {lab: [10.0, 11.0, 12.0] for lab in LABELS}, williams=False)
    r = _run("--ref", "mla/a", "--rotated", "mla/a;mla/b;mla/c", *old)
    assert r.returncode == 0, r.stderr
    # rotated: b always follows a (rounds 0 and 2) or is first (round 1)
    assert "| mla/b | mla/a | 2 | 1.000 |" in r.stdout and "| mla/b | (first) | 1 |" in r.stdout
    other = _records(tmp_path, {lab: [10.0, 10.0] for lab in LABELS}, run="r2")
    for args, needle in (
        (["--ref", "mla/a", *old, *other], "2 alternated runs"),
        (["--ref", "mla/z", *old], "--ref 'mla/z' is none of"),
        (["--ref", "mla/a", "--rotated", "mla/a;mla/b", *old], "--rotated names"),
        (["--ref", "mla/a", *old], "give --rotated"),
        (["--ref", "mla/a", tmp_path / "missing.json"], "not an alternated benchmark record"),
    ):
        r = _run(*args)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(err) == 1 and needle in err[0], (args, r.stderr)
