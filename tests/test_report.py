"""kernelplan.report on synthetic records: the comparison table, the fidelity math, the best
autotuned config, and the package report's markdown and PNG plots (written beside the
records, never over them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelplan import registry, report
from kernelplan.errors import KernelPlanError
from kernelplan.records import load_records, write_record

H200 = {"name": "NVIDIA H200", "sm": "sm_90", "clocks_max": {"sm_mhz": 1980, "mem_mhz": 3201}}
CFG = {"tile_mn": [128, 256], "cluster_mn": [1, 1]}
TORCH_CFG = {"fp16_reduced_precision_reduction": True}


def prob(s):
    return {"m": s, "n": s, "k": s, "l": 1, "dtype": "float16", "c_dtype": "float16"}


def roof(s, us):
    flops, nbytes = 2.0 * s**3, 3.0 * 2 * s * s
    tflops = flops / (us * 1e-6) / 1e12
    return {
        "flops": flops,
        "bytes": nbytes,
        "time_us": us,
        "tflops": tflops,
        "gbps": nbytes / (us * 1e-6) / 1e9,
        "intensity": flops / nbytes,
        "peak_tflops": 989.4,
        "peak_gbps": 4800.0,
        "pct_peak_tflops": 100 * tflops / 989.4,
        "bound": "compute",
    }


def bench(kernel, s, us, *, t, spread=1.0, cfg=None, pair=None, mhz=1900, thr=False, tune=None):
    rec = {
        "kind": "benchmark",
        "package": "gemm",
        "kernel": kernel,
        "target_sm": [] if kernel == "torch_matmul" else ["sm_90a"],
        "problem": prob(s),
        "config": cfg if cfg is not None else (TORCH_CFG if kernel == "torch_matmul" else CFG),
        "device": H200,
        "created_utc": t,
        "timing": {
            "median_us": us,
            "p10_us": us * 0.995,
            "p90_us": us * 1.005,
            "spread_pct": spread,
            "workspaces": 2,
            "cuda_graph": False,
            "clocks_during": {"sm_mhz_median": mhz, "sm_mhz_min": mhz - 15},
        },
        "roofline": roof(s, us),
        "clocks": {"before": {"sm_mhz": 1980}, "after": {"sm_mhz": mhz}},
        "throttle": {"throttled": thr, "min_busy_sm_mhz": mhz, "reasons": ["sw_power_cap"]},
    }
    if pair:
        rec["pair_id"] = pair
    if tune:
        rec["autotune"] = tune
    return rec


def ncu_rec(
    kernel,
    s,
    us,
    *,
    t,
    tc=85.0,
    dram=31.5,
    occ=12.4,
    regs=168,
    smem=202752,
    pair=None,
    clock="none",
    complete=True,
    mhz=1980.0,
):
    rec = {
        "kind": "ncu",
        "package": "gemm",
        "kernel": kernel,
        "target_sm": [] if kernel == "torch_matmul" else ["sm_90a"],
        "problem": prob(s),
        "config": TORCH_CFG if kernel == "torch_matmul" else CFG,
        "device": H200,
        "created_utc": t,
        "ncu": {
            "duration_us": us,
            "primary_kernel": f"{kernel}_kernel",
            "metrics": {
                "duration_us": us,
                "sm_throughput_pct": 88.0,
                "memory_throughput_pct": 45.0,
                "dram_throughput_pct": dram,
                "tensor_pipe_pct": tc,
                "achieved_occupancy_pct": occ,
                "registers_per_thread": regs,
                "smem_per_block_bytes": smem,
                "l2_hit_rate_pct": 62.0,
                "sm_clock_mhz": mhz,
            },
            "stalls": [{"reason": "math_pipe_throttle", "cycles_per_issue": 2.5}],
            "complete": complete,
            "incomplete_reason": None if complete else "not in the report (set basic): x",
            "clock_control": clock,
            "cache_control": "all",
            "child": {"cold_l2": True},
        },
    }
    if pair:
        rec["pair_id"] = pair
    return rec


T0 = "2026-11-30T10:00:00+00:00"
T1 = "2026-11-30T10:05:00+00:00"
T2 = "2026-11-30T10:10:00+00:00"
OLD = "2026-11-28T10:00:00+00:00"


@pytest.fixture
def records(tmp_path):
    root = tmp_path / "results"
    tune = [
        {"config": {"tile_mn": [128, 256], "cluster_mn": [2, 1]}, "median_us": 1690.4},
        {"config": {"tile_mn": [128, 256], "cluster_mn": [1, 1]}, "median_us": 1445.7},
        {"config": {"tile_mn": [128, 128], "cluster_mn": [1, 2]}, "error": "rejected"},
    ]
    recs = [
        # hopper at 8192: ncu + its pair, a second harness run, and a stale one two days back
        ncu_rec("hopper_dense_gemm", 8192, 1420.0, t=T1, pair="p1"),
        bench("hopper_dense_gemm", 8192, 1445.7, t=T1, pair="p1", spread=1.2, mhz=1950),
        bench("hopper_dense_gemm", 8192, 1450.0, t=T2, spread=1.1),
        bench("hopper_dense_gemm", 8192, 1700.8, t=OLD, spread=2.3, tune=tune),
        # torch at 8192: the harness ran at a throttled clock
        ncu_rec("torch_matmul", 8192, 1380.0, t=T1, tc=88.0, regs=230, smem=99 * 1024, occ=18.0),
        bench("torch_matmul", 8192, 1500.0, t=T1, mhz=1470, thr=True, spread=1.5),
        # 4096: both, for the sweeps and a passing fidelity row
        ncu_rec("hopper_dense_gemm", 4096, 183.0, t=T0),
        bench("hopper_dense_gemm", 4096, 186.1, t=T0, spread=0.9),
        bench("torch_matmul", 4096, 180.0, t=T0, spread=0.8),
        # a short kernel: no verdict under 50 us
        ncu_rec("hopper_dense_gemm_persistent", 1024, 12.0, t=T0),
        bench("hopper_dense_gemm_persistent", 1024, 13.5, t=T0, cfg=CFG),
    ]
    paths = [write_record(r, root) for r in recs]
    return root, paths


def _side_rows(table: str) -> dict[str, list[str]]:
    rows = {}
    for line in table.splitlines():
        if line.startswith("| ") and not line.startswith("| Metric"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells[1:]
    return rows


# -- compare --------------------------------------------------------------------------------
def test_compare_renders_the_requests_table_with_differences_and_insights(records):
    root, _ = records
    recs = load_records(root, "gemm")
    a, b = report.compare_kernels(recs, "hopper_dense_gemm", "torch_matmul", {"m": 8192})
    text = report.compare_table(a, b)
    assert text.startswith("### hopper_dense_gemm vs torch_matmul: m=8192")
    assert "| Metric | hopper_dense_gemm | torch_matmul | Difference | Insight |" in text
    rows = _side_rows(text)
    for label in (
        "Time (us)",
        "TC%",
        "DRAM%",
        "Occupancy (%)",
        "Registers/thread",
        "SMEM/block (KB)",
    ):
        assert label in rows, label
    # time is the harness median of the paired record, not ncu's duration
    assert rows["Time (us)"][:2] == ["1445.7", "1500.0"]
    assert rows["Time (us)"][2] == "torch_matmul 3.8% slower (0.96x)"
    assert "throttled" in rows["Time (us)"][3]
    assert "compute-bound on the roofline" in rows["Time (us)"][3]
    assert rows["TC%"][:3] == ["85.0", "88.0", "torch_matmul +3.0 pts"]
    assert "both keep the tensor pipe busy" in rows["TC%"][3]
    assert "not memory-bound" in rows["DRAM%"][3]
    assert rows["Registers/thread"][2] == "torch_matmul +62"
    assert "register-heavy" in rows["Registers/thread"][3]
    assert rows["SMEM/block (KB)"][:2] == ["198.0", "99.0"]
    assert "hopper_dense_gemm 1, torch_matmul 2" in rows["SMEM/block (KB)"][3]
    assert rows["ncu duration (us)"][:2] == ["1420.0", "1380.0"]
    assert "hopper_dense_gemm: compute-bound by ncu's Speed Of Light" in text
    assert "torch_matmul: compute-bound by ncu's Speed Of Light" in text
    assert "Sources: hopper_dense_gemm: ncu `" in text


def test_compare_from_record_paths_and_the_command_line(records, capsys, tmp_path):
    root, paths = records
    out = tmp_path / "cmp.md"
    rc = report.main(
        ["compare", str(paths[0]), str(paths[4]), "--results-dir", str(root), "--out", str(out)]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert out.read_text() in printed + "\n"
    assert "| Time (us) | 1445.7 | 1500.0 |" in printed
    # a benchmark record on one side finds its kernel's ncu record
    rc = report.main(["compare", str(paths[1]), str(paths[4]), "--results-dir", str(root)])
    assert rc == 0 and "| Time (us) | 1445.7 |" in capsys.readouterr().out
    rc = report.main(
        [
            "compare",
            "gemm",
            "hopper_dense_gemm",
            "torch_matmul",
            "--problem",
            "m=4096",
            "--results-dir",
            str(root),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "no ncu record of torch_matmul at m=4096" in err


def test_compare_without_ncu_records_says_what_to_run(records):
    root, _ = records
    recs = load_records(root, "gemm")
    with pytest.raises(KernelPlanError, match="no ncu record of nope.*--prof_type ncu"):
        report.compare_kernels(recs, "nope", "torch_matmul", None)


def test_incomplete_ncu_records_are_marked_in_the_table(tmp_path):
    root = tmp_path / "r"
    pa = write_record(ncu_rec("hopper_dense_gemm", 8192, 1420.0, t=T1, complete=False), root)
    pb = write_record(ncu_rec("torch_matmul", 8192, 1380.0, t=T1), root)
    recs = load_records(root, "gemm")
    text = report.compare_table(
        report.side_from_record(pa, json.loads(pa.read_text()), recs),
        report.side_from_record(pb, json.loads(pb.read_text()), recs),
    )
    assert "**hopper_dense_gemm: incomplete ncu record**" in text
    # no harness record: the time row falls back to ncu's duration and says so
    assert "| Time (us) | 1420.0 | 1380.0 |" in text and "ncu" in text.split("Time: ")[1]


# -- fidelity -------------------------------------------------------------------------------
def test_fidelity_ratios_spreads_and_verdicts(records):
    root, _ = records
    rows = {
        (r["kernel"], r["problem"].split()[0]): r
        for r in report.fidelity_rows(load_records(root, "gemm"))
    }
    h8 = rows[("hopper_dense_gemm", "m=8192")]
    assert h8["paired"] and h8["harness_us"] == 1445.7 and h8["ncu_us"] == 1420.0
    assert h8["ratio"] == pytest.approx(1445.7 / 1420.0)
    assert h8["deviation_pct"] == pytest.approx(100 * (1445.7 / 1420.0 - 1))
    # run to run: the two runs of this session, not the stale one from two days earlier
    assert h8["harness_runs"] == 2
    assert h8["run_to_run_spread_pct"] == pytest.approx(100 * 4.3 / 1447.85)
    assert h8["clock_normalised_ratio"] == pytest.approx(1445.7 / 1420.0 * 1950 / 1980)
    assert h8["verdict"] == "PASS"

    t8 = rows[("torch_matmul", "m=8192")]
    assert t8["ratio"] == pytest.approx(1500.0 / 1380.0) and t8["verdict"] == "FAIL"
    assert t8["throttled"] is True
    assert t8["clock_normalised_ratio"] == pytest.approx(1500 / 1380 * 1470 / 1980)

    assert rows[("hopper_dense_gemm", "m=4096")]["verdict"] == "PASS"
    assert rows[("hopper_dense_gemm_persistent", "m=1024")]["verdict"].startswith("n/a: under")
    table = report.fidelity_table(list(rows.values()))
    assert "| hopper_dense_gemm | m=8192" in table and "FAIL" in table


def test_fidelity_fails_on_spread_and_skips_a_different_clock_policy(tmp_path):
    root = tmp_path / "r"
    write_record(ncu_rec("k", 8192, 1000.0, t=T1, pair="x"), root)
    write_record(bench("k", 8192, 1010.0, t=T1, pair="x", spread=2.5), root)
    (row,) = report.fidelity_rows(load_records(root, "gemm"))
    assert row["deviation_pct"] == pytest.approx(1.0) and row["verdict"] == "FAIL"
    root2 = tmp_path / "r2"
    write_record(ncu_rec("k", 8192, 1000.0, t=T1, pair="y", clock="base"), root2)
    write_record(bench("k", 8192, 1000.0, t=T1, pair="y"), root2)
    (row,) = report.fidelity_rows(load_records(root2, "gemm"))
    assert row["verdict"].startswith("n/a: ncu locked clocks")
    assert report.run_to_run_spread([100.0]) is None
    assert report.run_to_run_spread([99.0, 100.0, 101.0]) == pytest.approx(2.0)


def test_fidelity_command_records_each_row_and_fails_on_a_fail(records, capsys):
    root, _ = records
    before = {p for p, _ in load_records(root, "gemm")}
    rc = report.main(["fidelity", "gemm", "--record", "--results-dir", str(root)])
    assert rc == 1  # the throttled torch row fails
    fid = load_records(root, "gemm", kind="fidelity")
    assert len(fid) == 4 and before <= {p for p, _ in load_records(root, "gemm")}
    r = next(r for _p, r in fid if r["kernel"] == "hopper_dense_gemm" and r["problem"]["m"] == 8192)
    assert r["fidelity"]["verdict"] == "PASS" and r["fidelity"]["tolerance_pct"] == 3.0
    assert not Path(r["fidelity"]["ncu_record"]).is_absolute()
    assert (root / r["fidelity"]["ncu_record"]).exists()


# -- best config ----------------------------------------------------------------------------
def test_best_config_is_the_fastest_autotune_row_and_round_trips(records, capsys):
    root, _ = records
    cfg, us, _path = report.best_config(
        load_records(root, "gemm"), "hopper_dense_gemm", {"m": 8192, "dtype": "float16"}
    )
    assert cfg == {"tile_mn": [128, 256], "cluster_mn": [1, 1]} and us == 1445.7
    items = report.config_overrides({**cfg, "raster_along_m": False, "swizzle_size": 2})
    assert items[:2] == ["tile_mn=128x256", "cluster_mn=1x1"]
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("gemm", "hopper_dense_gemm_persistent")()
    back = plan.config(plan.problem(), dict(i.split("=", 1) for i in items))
    assert back.to_dict() == {**cfg, "raster_along_m": False, "swizzle_size": 2}
    rc = report.main(
        [
            "best-config",
            "gemm",
            "hopper_dense_gemm",
            "--problem",
            "m=8192",
            "--results-dir",
            str(root),
        ]
    )
    assert rc == 0 and capsys.readouterr().out.strip() == "tile_mn=128x256 cluster_mn=1x1"


# -- the package report ---------------------------------------------------------------------
def _snapshot(root: Path) -> dict[str, str]:
    return {str(p): p.read_text() for p in root.rglob("*.json")}


def test_report_writes_markdown_and_pngs_and_leaves_records_alone(records):
    pytest.importorskip("matplotlib", reason="the PNG plots need matplotlib")
    root, _ = records
    before = _snapshot(root)
    files = report.render_report("gemm", root, log=lambda s: None)
    out = root / "workloads" / "gemm" / "report"  # gemm is a workload (and a package)
    names = sorted(p.name for p in files)
    assert names == ["report.md", "roofline.png", "sweep-tflops.png", "sweep-time.png"]
    for p in files:
        assert p.parent == out and p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text()
    for needle in (
        "![roofline.png](roofline.png)",
        "## Workload gemm",
        "### Harness timings",
        "### Nsight Compute",
        "### Timing fidelity",
        "### Comparisons with the peers",
        "### hopper_dense_gemm vs torch_matmul",
    ):
        assert needle in md, needle
    assert _snapshot(root) == before  # no record written, none changed


def test_report_without_matplotlib_still_writes_the_markdown(records, monkeypatch):
    root, _ = records

    def no_mpl():
        raise KernelPlanError("the PNG plots need matplotlib (add it: uv add ...)")

    monkeypatch.setattr(report, "_mpl", no_mpl)
    lines: list[str] = []
    files = report.render_report("gemm", root, root / "elsewhere", log=lines.append)
    assert [p.name for p in files] == ["report.md"]
    assert any("roofline.png skipped: the PNG plots need matplotlib" in ln for ln in lines)


def test_report_of_an_unknown_package_is_an_error(tmp_path):
    with pytest.raises(KernelPlanError, match="no records of package 'nope'"):
        report.render_report("nope", tmp_path)


# -- across packages: one workload, every implementation ------------------------------------
def static_rec(package, kernel, *, t, regs, smem, mma, arch="sm_90a", problem=None, schema1=True):
    rec = {
        "kind": "static",
        "package": package,
        "kernel": kernel,
        "target_sm": [arch],
        "problem": problem or prob(4096),
        "config": {},
        "device": None,
        "created_utc": t,
        "static": {
            "kernel": "k",
            "arch": arch,
            "registers": regs,
            "spill_store_bytes": 0,
            "spill_load_bytes": 0,
            "static_smem_bytes": 1024,
            "dynamic_smem_bytes": smem,
            "cubin_bytes": 20480,
            "instructions": 700,
            "categories": {"mma": mma, "tma": 20, "tmem": 0, "mbarrier": 28},
            "mma_mnemonics": {"HGMMA.64x128x16.F32": mma},
            "barriers": 2,
        },
    }
    if not schema1:
        rec["workload"] = "gemm"
    return rec


@pytest.fixture
def two_packages(tmp_path):
    """Schema-1 records (no ``workload`` field) of gemm and gemm-tutorial, and one of
    another workload."""
    root = tmp_path / "results"
    recs = [
        static_rec("gemm", "hopper_dense_gemm", t=T0, regs=154, smem=230400, mma=16),
        {
            **static_rec("gemm", "hopper_dense_gemm", t=T1, regs=154, smem=196608, mma=16),
            "config": {"tile_mn": [128, 256], "cluster_mn": [1, 1], "sm_count": 132},
        },
        static_rec(
            "gemm-tutorial",
            "fp16_gemm_0",
            t=T0,
            regs=72,
            smem=197632,
            mma=12,
            arch="sm_100a",
            problem={**prob(8192), "init": "randint"},
        ),
        {
            **static_rec(
                "mla",
                "cutlass_mla_decode_fp16",
                t=T0,
                regs=168,
                smem=232448,
                mma=8,
                arch="sm_100a",
                problem={"b": 32},
            ),
            "workload": "mla_decode",
        },
    ]
    paths = [write_record(r, root) for r in recs]
    return root, paths


def test_schema_1_records_get_their_workload_from_the_registry(two_packages):
    root, _ = two_packages
    recs = {(r["package"], r["kernel"]): r for _p, r in report._load(root)}
    assert recs[("gemm", "hopper_dense_gemm")]["workload"] == "gemm"
    assert recs[("gemm-tutorial", "fp16_gemm_0")]["workload"] == "gemm"
    assert recs[("mla", "cutlass_mla_decode_fp16")]["workload"] == "mla_decode"
    # problem and config as today's dataclasses write them: schema-1 gaps filled, sm_count gone
    hop = recs[("gemm", "hopper_dense_gemm")]
    assert hop["problem"]["init"] == "randn" and "sm_count" not in hop["config"]
    assert report.workload_of({"package": "nope", "kernel": "x"}) is None


def test_implementations_of_a_workload_span_packages():
    impls = registry.implementations("gemm")
    assert ("gemm", "hopper_dense_gemm") in impls and ("gemm-tutorial", "fp16_gemm_0") in impls
    assert report.resolve_implementation("fp16_gemm_0", "gemm") == ("gemm-tutorial", "fp16_gemm_0")
    assert report.resolve_implementation("gemm/torch_matmul", None) == ("gemm", "torch_matmul")
    assert report.resolve_implementation("hopper_dense_gemm", "gemm") == (
        "gemm",
        "hopper_dense_gemm",
    )
    with pytest.raises(KernelPlanError, match="unknown gemm kernel 'nope'.*gemm-tutorial/fp16"):
        report.resolve_implementation("nope", "gemm")
    with pytest.raises(KernelPlanError, match="unknown gemm-tutorial kernel 'hopper_dense_gemm'"):
        report.resolve_implementation("hopper_dense_gemm", "gemm-tutorial")  # a package scope
    with pytest.raises(KernelPlanError, match="unknown package 'nopkg'"):
        report.resolve_implementation("nopkg/k", None)


def test_a_bare_name_two_packages_share_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "implementations", lambda w: [("a", "k"), ("b", "k"), ("b", "j")])
    assert report.resolve_implementation("j", "gemm") == ("b", "j")
    with pytest.raises(KernelPlanError, match="'k' is ambiguous in the workload gemm: a/k, b/k"):
        report.resolve_implementation("k", "gemm")


def test_compare_across_packages_shows_the_static_columns(two_packages, capsys):
    root, paths = two_packages
    rc = report.main(
        ["compare", "gemm", "hopper_dense_gemm", "fp16_gemm_0", "--results-dir", str(root)]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.startswith(
        "### gemm/hopper_dense_gemm vs gemm-tutorial/fp16_gemm_0: static footprint (workload gemm)"
    )
    rows = {
        cells[0]: cells[1:]
        for line in out.splitlines()
        if line.startswith("| ")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert rows["Target SM"][:2] == ["sm_90a", "sm_100a"]
    assert rows["Registers/thread"] == ["154", "72", "gemm-tutorial/fp16_gemm_0 -82"]
    assert rows["SMEM/block (KB)"][:2] == ["193.0", "194.0"]  # the newest gemm record
    assert rows["MMA instructions"][:2] == ["16", "12"]
    assert rows["Problem"][2] == "differ"
    # the same by package/kernel, and from the two record files
    rc = report.main(
        [
            "compare",
            "gemm/hopper_dense_gemm",
            "gemm-tutorial/fp16_gemm_0",
            "--results-dir",
            str(root),
        ]
    )
    assert rc == 0 and "| Registers/thread | 154 | 72 |" in capsys.readouterr().out
    rc = report.main(["compare", str(paths[1]), str(paths[2]), "--results-dir", str(root)])
    assert rc == 0 and "| Registers/thread | 154 | 72 |" in capsys.readouterr().out
    # implementations of two workloads are not compared
    rc = report.main(
        [
            "compare",
            "gemm",
            "hopper_dense_gemm",
            "mla/cutlass_mla_decode_fp16",
            "--results-dir",
            str(root),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "implements gemm" in err and "implements mla_decode" in err
    rc = report.main(["compare", "gemm", "torch_matmul", "fp16_gemm_0", "--results-dir", str(root)])
    assert rc == 2 and "no ncu or static record of gemm/torch_matmul" in capsys.readouterr().err


def test_workload_report_covers_every_package_and_package_report_its_own(two_packages):
    root, _ = two_packages
    files = report.render_report("gemm", root, log=lambda s: None)
    md = files[0].read_text()
    assert files[0].parent == root / "workloads" / "gemm" / "report"
    assert "## Workload gemm" in md and "mla_decode" not in md
    assert "| gemm/hopper_dense_gemm | sm_90a |" in md
    assert "| gemm-tutorial/fp16_gemm_0 | sm_100a |" in md
    md = report.render_report("gemm-tutorial", root, root / "tut", log=lambda s: None)[0]
    text = md.read_text()
    assert "gemm-tutorial/fp16_gemm_0" in text and "gemm/hopper_dense_gemm" not in text
    md = report.render_report("mla", root, root / "mla", log=lambda s: None)[0].read_text()
    assert "## Workload mla_decode" in md
    assert not any(p.suffix == ".json" for p in (root / "workloads").rglob("*"))


def test_committed_records_compare_across_packages_and_render(tmp_path, capsys):
    """On the repository's own records: the Hopper GEMM of ``gemm`` against the tutorial's
    Blackwell step of ``gemm-tutorial`` (static), and the workload report."""
    from kernelplan.records import load_records, results_root

    root = results_root()
    have = {(r.get("package"), r.get("kernel")) for _p, r in load_records(root, kind="static")}
    if not {("gemm", "hopper_dense_gemm"), ("gemm-tutorial", "fp16_gemm_6")} <= have:
        pytest.skip("the committed static records are not in this checkout")
    before = _snapshot(root)
    rc = report.main(["compare", "gemm", "hopper_dense_gemm", "fp16_gemm_6"])
    out = capsys.readouterr().out
    assert rc == 0 and "| Target SM | sm_90a | sm_100a |" in out
    assert "| MMA kind | HGMMA" in out and "UTCHMMA" in out
    files = report.render_report("gemm", root, tmp_path / "rep", log=lambda s: None)
    md = files[0].read_text()
    assert "## Workload gemm" in md and "gemm-tutorial/fp16_gemm_6" in md
    assert "### Harness timings" in md and "### Static footprint" in md
    assert _snapshot(root) == before


# -- alternated rounds: every implementation per setting, and --focus -----------------------
def _alt(kernel, s, us, rid, t):
    rec = bench(kernel, s, us, t=t)
    rec.update(workload="gemm", round_id=rid, alternated_with=["x"])
    rec["timing"]["cuda_graph"] = True
    return rec


@pytest.fixture
def rounds(tmp_path):
    root = tmp_path / "results"
    recs = [
        # 4096: an old round (superseded) and the newest, where torch is the fastest
        _alt("hopper_dense_gemm", 4096, 300.0, "old1", OLD),
        _alt("torch_matmul", 4096, 100.0, "old1", OLD),
        _alt("hopper_dense_gemm", 4096, 200.0, "r4k", T1),
        _alt("torch_matmul", 4096, 160.0, "r4k", T1),
        _alt("hopper_dense_gemm_persistent", 4096, 180.0, "r4k", T1),
        # 8192: the focus is the fastest; the persistent kernel did not take it
        _alt("hopper_dense_gemm", 8192, 1400.0, "r8k", T2),
        _alt("torch_matmul", 8192, 1750.0, "r8k", T2),
        # a plain benchmark (no round): not in the alternated table
        bench("torch_matmul", 2048, 20.0, t=T0),
    ]
    for r in recs:
        write_record(r, root)
    return root


def test_alternated_table_ratio_of_the_focus_to_the_fastest_peer(rounds):
    recs = report._load(rounds)
    rs = report.alternated_rounds(recs)
    assert [m[0][1]["round_id"] for m in rs] == ["r4k", "r8k"]  # newest per problem, by size
    focus = ("gemm", "hopper_dense_gemm")
    s4, s8 = (report.round_summary(m, focus) for m in rs)
    assert s4["fastest"] == "torch_matmul" and s4["fastest_peer"] == "torch_matmul"
    assert s4["focus_ratio"] == pytest.approx(200.0 / 160.0)
    # the focus is the fastest: its ratio is to the fastest *other* implementation (< 1)
    assert s8["fastest"] == "hopper_dense_gemm" and s8["fastest_peer"] == "torch_matmul"
    assert s8["focus_ratio"] == pytest.approx(1400.0 / 1750.0)
    assert report.round_summary(rs[0], None)["focus_ratio"] is None
    rows = _side_rows(report.alternated_table(rs, focus))
    header = "| setting | hopper_dense_gemm | "
    assert header in report.alternated_table(rs, focus)  # the focus is the first column
    r4, r8 = rows["4096^3"], rows["8192^3"]
    assert r4[0] == "200.0 (1.25x)" and "160.0 (1.00x)" in r4 and r4[-2:] == ["1.25", "r4k"]
    assert r8[-2:] == ["0.80", "r8k"] and "-" in r8  # the persistent kernel: not in that run
    assert "fastest peer" not in report.alternated_table(rs)  # no focus, no ratio column


def test_report_focus_adds_the_section_and_the_plot(rounds, capsys):
    pytest.importorskip("matplotlib", reason="the PNG plots need matplotlib")
    rc = report.main(
        ["report", "gemm", "--results-dir", str(rounds), "--focus", "hopper_dense_gemm"]
    )
    assert rc == 0
    out = rounds / "workloads" / "gemm" / "report"
    md = (out / "report.md").read_text()
    assert "### Alternated runs (per setting: the newest run of the most implementations)" in md
    assert "hopper_dense_gemm / fastest peer" in md and "| 1.25 | r4k |" in md
    assert "old1" not in md
    assert (out / "alternated.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rc = report.main(["report", "gemm", "--results-dir", str(rounds), "--focus", "nope"])
    assert rc == 2 and "unknown gemm kernel 'nope'" in capsys.readouterr().err


def test_a_later_narrower_run_keeps_the_table_and_gets_its_own(rounds, capsys):
    """A floor run made after the table (the focus against a slow peer the table lacks) must
    not replace the table's row at that setting: the row stays the widest round and the
    floor is listed in a table of its own; a later single-implementation round (the floor
    refused that setting) and the older subset round stay out."""
    T3 = "2026-11-30T11:00:00+00:00"
    for r in (
        _alt("hopper_dense_gemm", 4096, 210.0, "floor4k", T3),
        _alt("torch_naive", 4096, 9000.0, "floor4k", T3),
        _alt("hopper_dense_gemm", 8192, 1500.0, "floor8k", T3),  # torch_naive refused 8192
    ):
        write_record(r, rounds)
    recs = report._load(rounds)
    assert [m[0][1]["round_id"] for m in report.alternated_rounds(recs)] == ["r4k", "r8k"]
    others = report.other_alternated_rounds(recs)
    assert [m[0][1]["round_id"] for m in others] == ["floor4k"]  # not old1, not floor8k
    rc = report.main(["report", "gemm", "--results-dir", str(rounds)])
    assert rc == 0, capsys.readouterr()
    md = (rounds / "workloads" / "gemm" / "report" / "report.md").read_text()
    main, _, other = md.partition("### Other alternated runs")
    assert "| r4k |" in main and "| r8k |" in main and "floor4k" not in main
    assert "| floor4k |" in other and "9000.0 (42.86x)" in other
    assert "old1" not in md and "floor8k" not in md


def test_a_config_field_added_since_a_record_is_not_given_todays_default():
    """A record written before a config field existed keeps no value for it: mla_decode_sm90's
    lockstep records from before ``schedule`` (default now ``auto``, i.e. seesaw) must not be
    labelled with the schedule they did not run; fields the record names are normalised."""
    from kernelplan.report import _config_label, normalized

    old = {
        "package": "mla",
        "kernel": "mla_decode_sm90",
        "config": {"splits": 0, "loads": "cpasync"},
        "problem": {"b": 32, "t": 4096},
    }
    cfg = normalized(old)["config"]
    assert cfg == {"splits": 0, "loads": "cpasync"}
    assert "schedule" not in _config_label(cfg) and "step" not in _config_label(cfg)
    new = dict(old, config={"splits": 2, "schedule": "seesaw", "step": 6})
    assert normalized(new)["config"] == {"splits": 2, "schedule": "seesaw", "step": 6}


# -- ratios: two entries of the same alternated runs, per round ----------------------------
def _run_entry(kernel, s, samples, rid, label, labels, t=T1):
    rec = bench(kernel, s, sorted(samples)[len(samples) // 2], t=t)
    rec.update(workload="gemm", round_id=rid, alternated_with=[x for x in labels if x != label])
    rec["timing"]["samples_us"] = samples
    rec["timing"]["clocks_during"]["busy_sm_mhz"] = [1710.0, 1980.0]
    return rec


def test_report_ratios_pairs_two_entries_round_by_round(tmp_path, capsys):
    """`report ratios A B`: each record's label is the one name its run does not list; the
    ratio is the median of the per-round ratios (a clock drop that hits both entries in one
    round cancels), here 0.5 although the medians' ratio is not; runs without both entries are
    skipped; an unknown label gets one line naming the labels of the runs that hold the other."""
    root = tmp_path / "results"
    labels = ["gemm/hopper_dense_gemm", "gemm/hopper_dense_gemm[stages=4]", "gemm/torch_matmul"]
    a = [10.0, 20.0, 30.0, 40.0, 10.0]  # the 2nd-4th rounds at a lower clock, both entries
    b = [20.0, 40.0, 60.0, 80.0, 20.0]
    for rec in (
        _run_entry("hopper_dense_gemm", 4096, b, "r1", labels[0], labels),
        _run_entry("hopper_dense_gemm", 4096, a, "r1", labels[1], labels),
        _run_entry("torch_matmul", 4096, [15.0] * 5, "r1", labels[2], labels),
        # a run of the default and torch only: no stages=4 entry, left out
        _run_entry("hopper_dense_gemm", 8192, b, "r2", labels[0], [labels[0], labels[2]]),
        _run_entry("torch_matmul", 8192, b, "r2", labels[2], [labels[0], labels[2]]),
    ):
        write_record(rec, root)
    recs = report._load(root)
    rows = report.round_ratios(recs, "hopper_dense_gemm[stages=4]", "gemm/hopper_dense_gemm")
    assert [r["round_id"] for r in rows] == ["r1"]
    assert rows[0]["ratio"] == pytest.approx(0.5) and rows[0]["sm_mhz"] == (1710.0, 1980.0)
    assert (rows[0]["a_us"], rows[0]["b_us"]) == (20.0, 40.0)
    assert [r["round_id"] for r in report.round_ratios(recs, labels[2], labels[0])] == ["r1", "r2"]
    with pytest.raises(KernelPlanError, match="2 alternated run.s. hold both .* none created"):
        report.round_ratios(recs, labels[0], labels[2], since="2099-01-01")
    with pytest.raises(KernelPlanError, match="is not an ISO date"):
        report.round_ratios(recs, labels[0], labels[2], since="yesterday")
    with pytest.raises(KernelPlanError, match="name the same entry"):
        report.round_ratios(recs, "hopper_dense_gemm", labels[0])
    # UTC where no zone is given, compared as times: r1 and r2 both at T1 (10:05 UTC)
    assert len(report.round_ratios(recs, labels[2], labels[0], since="2026-11-30 10:05")) == 2
    with pytest.raises(KernelPlanError, match="none created at or after 2026-11-30T10:06Z"):
        report.round_ratios(recs, labels[2], labels[0], since="2026-11-30T10:06Z")
    # --until: before it, exclusive; with --since it pins a run
    assert len(report.round_ratios(recs, labels[2], labels[0], until="2026-11-30T10:06Z")) == 2
    with pytest.raises(KernelPlanError, match="none created before 2026-11-30T10:05Z"):
        report.round_ratios(recs, labels[2], labels[0], until="2026-11-30T10:05Z")
    with pytest.raises(KernelPlanError, match="--until 'noon' is not an ISO date"):
        report.round_ratios(recs, labels[2], labels[0], until="noon")
    pinned = report.round_ratios(
        recs, labels[2], labels[0], since="2026-11-30T10:05Z", until="2026-11-30T10:06Z"
    )
    assert [r["round_id"] for r in pinned] == ["r1", "r2"]
    rc = report.main(["ratios", "a", "b", "--results-dir", str(tmp_path / "nothing")])
    assert rc != 0 and "not a folder of records" in capsys.readouterr().err
    rc = report.main(["ratios", "gemm/nosuch", labels[0], "--results-dir", str(root)])
    err = capsys.readouterr().err
    assert rc != 0 and "gemm/torch_matmul" in err and "Traceback" not in err
    # a near miss (the config written after a space) lists its right spelling first
    rc = report.main(["ratios", "gemm/hopper_dense_gemm stages=4", "gemm/torch_matmul",
                      "--results-dir", str(root)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc != 0 and "holding one of them: gemm/hopper_dense_gemm[stages=4], " in err
    rc = report.main(["ratios", labels[1], labels[0], "--results-dir", str(root)])
    out = capsys.readouterr().out
    assert rc == 0 and "| 0.500 |" in out and "r1 (" in out


def test_normalized_writes_todays_problem_even_where_the_config_no_longer_parses():
    """A record whose config names a build since removed (mla_decode_sm90's step 41) still has
    its problem written as today's dataclass writes it (fields added since, such as ``init``,
    with their defaults), so it matches the same problem recorded later."""
    from kernelplan.report import normalized

    rec = {
        "package": "mla",
        "kernel": "mla_decode_sm90",
        "problem": {"b": 4, "s": 1, "t": 1000, "h": 16},
        "config": {"step": 41},
    }
    out = normalized(rec)
    assert out["problem"]["init"] == "randn" and out["problem"]["b"] == 4
    assert out["config"] == {"step": 41}  # as written
    assert "init" not in rec["problem"]  # the record itself untouched
