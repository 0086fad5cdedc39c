import json
import shutil
from pathlib import Path

import pytest

from kernelplan.cutlass_src import repo_root
from kernelplan.errors import KernelPlanError
from kernelplan.records import (
    SCHEMA_VERSION,
    drop_machine_paths,
    load_records,
    portable,
    record_problem_config,
    write_record,
)


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
    assert rec["schema"] == SCHEMA_VERSION == 2 and rec["created_utc"].endswith("+00:00")
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


# -- no path of the writer's machine --------------------------------------------------------
def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def test_a_new_record_holds_no_absolute_path_under_the_checkout(tmp_path):
    root = repo_root()
    cubin = root / ".cache" / "kernelplan" / "static" / "ab" / "abcd" / "main.cubin"
    rec = _rec(
        kind="static",
        static={
            "cubin_path": str(cubin),
            "functions": [{"kernel": "f", "cubin_path": cubin}],  # a Path, too
            "cache": {"hit": False, "key": "abcd", "entry": str(cubin.parent)},
        },
        ncu={
            "report": "gemm/k/ncu-reports/x.ncu-rep",  # already relative: unchanged
            "command": ["/opt/ncu", "-o", str(root / "results" / "x"), f"{root}/.venv/bin/py"],
            "error": f"failed at {root}/third_party/cutlass/examples/x.py:L3",
        },
        where=str(root),
    )
    rec_text = write_record(rec, tmp_path).read_text()
    assert str(root) not in rec_text and str(root.resolve()) not in rec_text
    back = json.loads(rec_text)
    assert back["static"]["cubin_path"] == ".cache/kernelplan/static/ab/abcd/main.cubin"
    assert back["static"]["functions"][0]["cubin_path"] == back["static"]["cubin_path"]
    assert back["static"]["cache"]["entry"] == ".cache/kernelplan/static/ab/abcd"
    assert back["ncu"]["command"] == ["/opt/ncu", "-o", "results/x", ".venv/bin/py"]
    assert back["ncu"]["report"] == "gemm/k/ncu-reports/x.ncu-rep"
    assert back["ncu"]["error"] == "failed at third_party/cutlass/examples/x.py:L3"
    assert back["where"] == "."
    home = str(Path.home())
    if home not in ("/", "") and not str(root).startswith(home):
        assert portable(f"{home}/.cache/x") == "~/.cache/x"


def test_a_static_record_from_a_real_run_holds_no_machine_path(tmp_path, monkeypatch):
    """The static record of the in-house kernel, compiled here into the checkout's cache
    folder, as ``--prof_type static`` writes it."""
    pytest.importorskip("cutlass")
    from kernelplan.cli import run_argv

    from .inhouse_axpby import AxpbyPlan

    cache = repo_root() / ".cache" / "kernelplan-test-records"
    monkeypatch.setenv("KERNELPLAN_CACHE", str(cache))
    results = tmp_path / "results"
    rc = run_argv(
        AxpbyPlan(),
        ["--n", "4096", "--prof_type", "static", "--results-dir", str(results)],
        log=lambda s: None,
    )
    assert rc == 0
    (path,) = results.rglob("*.json")
    text = path.read_text()
    rec = json.loads(text)
    assert rec["static"]["cubin_path"].startswith(".cache/kernelplan-test-records/static/")
    for s in _strings(rec):
        assert not s.startswith(str(repo_root())) and str(repo_root()) + "/" not in s, s
    shutil.rmtree(cache, ignore_errors=True)


def test_readers_ignore_the_machine_paths_of_older_records(tmp_path):
    """Committed records are never rewritten; their absolute cubin, cache-entry and ncu
    paths are dropped on reading (a relative path stays)."""
    folder = tmp_path / "gemm" / "k"
    folder.mkdir(parents=True)
    old = {
        "schema": 1,
        "created_utc": "2026-11-29T13:51:01+00:00",
        **_rec(kind="static"),
        "static": {
            "registers": 154,
            "cubin_path": "/work/elsewhere/.cache/kernelplan/static/67/x/main.cubin",
            "functions": [{"cubin_path": "/somewhere/main.cubin"}],
            "cache": {"hit": False, "key": "67", "entry": "/work/elsewhere/.cache/67"},
        },
        "ncu": {"ncu_path": "/usr/local/cuda/bin/ncu", "report": "gemm/k/ncu-reports/r"},
    }
    (folder / "old.json").write_text(json.dumps(old))
    ((_p, rec),) = load_records(tmp_path, "gemm", "k")
    assert rec["static"]["registers"] == 154
    assert rec["static"]["cubin_path"] is None and rec["static"]["cache"]["entry"] is None
    assert rec["static"]["functions"][0]["cubin_path"] is None
    assert rec["ncu"]["ncu_path"] is None and rec["ncu"]["report"] == "gemm/k/ncu-reports/r"
    assert drop_machine_paths({"cubin_path": "rel/main.cubin"}) == {"cubin_path": "rel/main.cubin"}
    assert json.loads((folder / "old.json").read_text()) == old  # the file is untouched


def test_schema_1_records_give_the_problem_and_config_dataclasses():
    from .inhouse_axpby import AxpbyPlan

    plan = AxpbyPlan()
    v1 = {"schema": 1, "problem": {"n": 64}, "config": {"tile_mn": [128, 128], "sm_count": 132}}
    problem, config = record_problem_config(plan, v1)
    assert problem == plan.problem(n=64) and config.tile_mn == (128, 128)  # sm_count dropped
    v2 = {"schema": 2, "problem": problem.to_dict(), "config": config.to_dict()}
    assert record_problem_config(plan, v2) == (problem, config)
    assert record_problem_config(plan, {"problem": {"n": 64, "renamed": 1}}) is None
