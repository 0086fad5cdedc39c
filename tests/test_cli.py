"""Bad input ends with one ``error:`` line and a non-zero exit, and writes no record."""

import pytest

from kernelplan.cli import package_main
from kernelplan.sessions import main as sessions_main

from .conftest import needs_sources


def _run(capsys, argv, package="gemm"):
    rc = package_main(package, argv)
    err = capsys.readouterr().err.strip()
    return rc, err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["hopper_dense_gemm", "--m", "0"], "--m must be a positive integer (got 0)"),
        (["hopper_dense_gemm", "--l", "-2"], "--l must be a positive integer"),
        (["hopper_dense_gemm", "--dtype", "float32"], "does not take dtype float32"),
        (["hopper_dense_gemm", "--k", "100"], "use a multiple of 8"),
        (["hopper_dense_gemm", "--dtype", "float16", "--n", "1001"], "N (C rows)"),
        (
            ["hopper_dense_gemm", "--config", "tile_mn=96x256", "--prof_type", "static"],
            "tile_mn (96, 256) unsupported",
        ),
        (
            ["hopper_dense_gemm", "--config", "cluster_mn=4x2", "--prof_type", "static"],
            "cluster_mn (4, 2) unsupported",
        ),
        (["hopper_dense_gemm", "--prof_type", "static", "--arch", "sm_42x"], "unknown SM"),
        (["no_such_kernel"], "unknown gemm kernel 'no_such_kernel'"),
    ],
)
def test_bad_input_is_one_line_and_nonzero_and_records_nothing(capsys, results_dir, argv, needle):
    rc, err = _run(capsys, argv)
    assert rc == 2
    assert err.startswith("error: ") and "\n" not in err
    assert needle in err
    assert not results_dir.exists() or not any(results_dir.rglob("*.json"))


def test_kernel_that_cannot_run_here_says_which_sm_it_needs(capsys, results_dir):
    # On the CPU-only CI machine there is no GPU; on a non-Hopper GPU the SM differs.
    import torch

    if torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0):
        pytest.skip("an sm_90 GPU is present: the Hopper kernel would run")
    rc, err = _run(capsys, ["hopper_dense_gemm", "--check"])
    assert rc == 2 and "sm_90a" in err and "\n" not in err
    assert not results_dir.exists() or not any(results_dir.rglob("*.json"))


def test_missing_cutlass_sources_say_how_to_get_them(capsys, results_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("CUTLASS_DIR", str(tmp_path / "nowhere"))
    rc, err = _run(capsys, ["hopper_dense_gemm", "--prof_type", "static"])
    assert rc == 2 and "\n" not in err
    assert "git submodule update --init third_party/cutlass" in err and "CUTLASS_DIR" in err
    assert not results_dir.exists() or not any(results_dir.rglob("*.json"))


def test_unknown_package_lists_the_known_ones(capsys):
    rc = sessions_main(["check", "no-such-package", "--no-record"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "unknown package 'no-such-package'" in err and "gemm" in err


def test_list_shows_the_kernels(capsys):
    assert package_main("gemm", ["--list"]) == 0
    out = capsys.readouterr().out
    for k in ("hopper_dense_gemm", "hopper_dense_gemm_persistent", "torch_matmul"):
        assert k in out


@needs_sources
def test_static_run_writes_exactly_one_new_record(capsys, results_dir):
    rc = package_main(
        "gemm",
        ["hopper_dense_gemm", "--prof_type", "static", "--m", "512", "--n", "512", "--k", "512"],
    )
    assert rc == 0, capsys.readouterr().err
    recs = list(results_dir.rglob("*.json"))
    assert len(recs) == 1 and recs[0].parent.name == "hopper-dense-gemm"


def test_init_option_reaches_the_problem_and_the_tensor_specs():
    from kernelplan.cli import build_parser
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("gemm", "hopper_dense_gemm")()
    args = build_parser(plan).parse_args(["--init", "randint"])
    prob = plan.problem_from_args(args)
    assert prob["init"] == "randint"
    specs = plan.tensor_specs(prob)
    assert specs["a"].init == specs["b"].init == "randint" and specs["a"].scale == 2.0
    default = plan.problem_from_args(build_parser(plan).parse_args([]))
    assert "init" not in default and plan.tensor_specs(default)["a"].init == "randn"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ["hopper_dense_gemm", "--prof_type", "static", "--config", "tile_nm=128x128"],
            "unknown config key(s) tile_nm; known: cluster_mn, sm_count, tile_mn",
        ),
        (
            ["hopper_dense_gemm", "--prof_type", "static", "--arch", "sm_100a"],
            "--arch sm_100a is not one of its targets",
        ),
        (
            ["hopper_dense_gemm", "--prof_type", "static", "--results-dir", "/proc/no/such"],
            "cannot write result records under /proc/no/such",
        ),
    ],
)
def test_refused_before_any_work(capsys, results_dir, argv, needle):
    rc, err = _run(capsys, argv)
    assert rc == 2 and err.startswith("error: ") and "\n" not in err and needle in err
    assert not results_dir.exists() or not any(results_dir.rglob("*.json"))


def test_unreadable_record_is_skipped_with_a_warning(tmp_path, capsys):
    from kernelplan.records import load_records, write_record

    good = write_record({"kind": "check", "package": "gemm", "kernel": "k"}, tmp_path)
    bad = good.parent / "truncated.json"
    bad.write_text('{"kind": "che')
    assert [p for p, _ in load_records(tmp_path)] == [good]
    assert f"skipping unreadable record {bad}" in capsys.readouterr().err


def test_missing_ncu_is_reported_before_the_device_check(
    capsys, results_dir, monkeypatch, tmp_path
):
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))
    monkeypatch.setenv("KERNELPLAN_NCU_ROOTS", str(tmp_path / "none"))
    monkeypatch.delenv("KERNELPLAN_NCU", raising=False)
    rc, err = _run(capsys, ["hopper_dense_gemm", "--prof_type", "ncu"])
    assert rc == 2 and err.startswith("error: ") and "\n" not in err
    assert "ncu" in err.lower() and "GPU" not in err.split("ncu")[0]
    assert not results_dir.exists() or not any(results_dir.rglob("*.json"))


def test_benchmark_record_holds_timing_roofline_clocks_and_throttle(monkeypatch):
    """The one place a timed run becomes a record (CLI, profile and the ncu pair use it)."""
    from kernelplan import device as devmod
    from kernelplan.registry import load_plan_class
    from kernelplan.timing import summarize

    plan = load_plan_class("gemm", "torch_matmul")()
    prob = plan.problem(4096, 4096, 4096)
    h200 = devmod.DeviceInfo(
        name="NVIDIA H200",
        sm="sm_90",
        sm_count=132,
        memory_bytes=1,
        l2_bytes=1,
        clocks_max={"sm_mhz": 1980, "mem_mhz": 3201},
    )
    clocks = iter([{"sm_mhz": 1980}, {"sm_mhz": 1400, "throttle_reasons": 4}])
    monkeypatch.setattr(devmod, "current_device", lambda: h200)
    monkeypatch.setattr(devmod, "clocks_now", lambda: next(clocks))
    stats = summarize([180.0, 182.0, 181.0], warmup=1, workspaces=2, cuda_graph=False)
    monkeypatch.setattr(type(plan), "run_benchmark", lambda self, *a, **k: stats)
    lines = []
    rec, st, roof = plan.benchmark_record(prob, {}, log=lines.append)
    assert st is stats and rec["kind"] == "benchmark" and rec["kernel"] == "torch_matmul"
    assert rec["timing"]["median_us"] == 181.0
    assert rec["roofline"]["tflops"] == pytest.approx(2 * 4096**3 / 181e-6 / 1e12)
    assert rec["clocks"] == {
        "before": {"sm_mhz": 1980},
        "after": {"sm_mhz": 1400, "throttle_reasons": 4},
    }
    assert rec["throttle"]["throttled"] is True and lines and lines[0].startswith("warning:")
