"""scripts/experiments/clock_split_medians.py on hand-made benchmark records: each record's
median over the two round ranges, its record written with --record, and bad input (a range
that is not A:B, a record without samples or with null ones, a missing file, a record of a
run that was not alternated, more rounds asked than held) refused in one line on stderr with
exit status 2."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "scripts" / "experiments" / "clock_split_medians.py"


def _record(path: Path, samples, step=None):
    path.write_text(
        json.dumps(
            {
                "package": "mla",
                "kernel": "mla_decode_sm90",
                "config": {} if step is None else {"step": step},
                "alternated_with": ["mla/mla_decode_sm90", "mla/flashinfer_mla"],
                "timing": {
                    "median_us": sorted(samples)[len(samples) // 2],
                    "samples_us": samples,
                    "clocks_during": {"busy_sm_mhz": [1980, 1980, 1710]},
                },
            }
        )
    )
    return path


def _run(*args, env=None):
    return subprocess.run(
        [sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, env=env
    )


def test_medians_per_range_and_record(tmp_path):
    a = _record(tmp_path / "a.json", [10.0, 11.0, 12.0, 20.0, 21.0, 22.0], step=40)
    b = _record(tmp_path / "b.json", [5.0, 5.0, 6.0, 6.0, 7.0, 7.0])
    env = {"KERNELPLAN_RESULTS": str(tmp_path / "res"), "PATH": "/usr/bin:/bin"}
    r = _run("--hi", "0:3", "--lo", "3:6", a, b, "--record", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "step=40: 11.0 us (rounds 0-2) / 21.0 us (rounds 3-5)" in r.stdout
    assert "mla/mla_decode_sm90: 5.0 us (rounds 0-2) / 7.0 us (rounds 3-5)" in r.stdout
    recs = list((tmp_path / "res").rglob("*.json"))
    assert len(recs) == 1
    rows = json.loads(recs[0].read_text())["result"]["rows"]
    assert [(x["median_us_hi"], x["median_us_lo"]) for x in rows] == [(11.0, 21.0), (5.0, 7.0)]


def test_bad_input_in_one_line(tmp_path):
    good = _record(tmp_path / "a.json", [1.0, 2.0, 3.0, 4.0])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"timing": {}}))
    nulls = tmp_path / "nulls.json"
    nulls.write_text(json.dumps({"timing": {"samples_us": None}}))
    single = _record(tmp_path / "single.json", [1.0, 2.0, 3.0, 4.0])
    rec = json.loads(single.read_text())
    del rec["alternated_with"]
    single.write_text(json.dumps(rec))
    r = _run("--hi", "0-3", "--lo", "3:4", good)
    assert r.returncode == 2 and "a round range is A:B" in r.stderr
    for f in (bad, nulls, tmp_path / "missing.json"):
        r = _run("--hi", "0:2", "--lo", "2:4", f)
        assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    r = _run("--hi", "0:2", "--lo", "2:4", single)
    assert r.returncode == 2 and "not from an alternated run" in r.stderr
    r = _run("--hi", "0:2", "--lo", "2:9", good)
    assert r.returncode == 2 and "has 4 rounds, fewer than the ranges ask" in r.stderr
