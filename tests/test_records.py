import json

import pytest

from kernelplan.errors import KernelPlanError
from kernelplan.records import load_records, write_record


def _rec(**kw):
    return {
        "kind": "benchmark",
        "package": "gemm",
        "kernel": "k",
        "timing": {"median_us": 5.0},
        **kw,
    }


def test_records_are_appended_never_overwritten(tmp_path):
    paths = [write_record(_rec(i=i), tmp_path) for i in range(20)]  # same second, same names
    assert len(set(paths)) == 20
    assert [json.loads(p.read_text())["i"] for p in paths] == list(range(20))
    first = paths[0].read_text()
    write_record(_rec(i=99), tmp_path)
    assert paths[0].read_text() == first


def test_record_carries_schema_and_time_and_loads_back(tmp_path):
    p = write_record(_rec(), tmp_path)
    rec = json.loads(p.read_text())
    assert rec["schema"] == 1 and rec["created_utc"].endswith("+00:00")
    assert p.parent == tmp_path / "gemm" / "k"
    loaded = load_records(tmp_path, "gemm", "k", kind="benchmark")
    assert [lp for lp, _ in loaded] == [p]
    assert load_records(tmp_path, "gemm", "k", kind="check") == []


@pytest.mark.parametrize("missing", ["kind", "package", "kernel"])
def test_record_without_identity_is_refused(tmp_path, missing):
    rec = _rec()
    rec.pop(missing)
    with pytest.raises(KernelPlanError, match=missing):
        write_record(rec, tmp_path)
    assert not any(tmp_path.rglob("*.json"))
