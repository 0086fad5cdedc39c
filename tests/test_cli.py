"""Bad input ends with one ``error:`` line and a non-zero exit, and writes no record."""

import json

import pytest

from kernelplan.cli import build_parser, package_main, parse
from kernelplan.errors import KernelPlanError
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
            "tile_mn 96x256 unsupported",
        ),
        (
            ["hopper_dense_gemm", "--config", "cluster_mn=4x2", "--prof_type", "static"],
            "cluster_mn 4x2 unsupported",
        ),
        (["hopper_dense_gemm", "--prof_type", "static", "--arch", "sm_42x"], "unknown SM"),
        (["no_such_kernel"], "unknown gemm kernel 'no_such_kernel'"),
        # problem flags come from the workload's dataclass, typed
        (["hopper_dense_gemm", "--m", "abc"], "--m: Expected a <class 'int'>. Got value: abc"),
        (["hopper_dense_gemm", "--init", "ones"], "--init: one of randn, randint (got 'ones')"),
        (["hopper_dense_gemm", "--b", "32"], "unrecognized arguments: --b"),
        # --config by the config's field types
        (
            ["hopper_dense_gemm", "--config", "tile_mn=abc"],
            "--config tile_mn=abc: not a tuple of int",
        ),
        (["hopper_dense_gemm", "--config", "tile_mn"], "--config expects key=value"),
        (
            ["hopper_dense_gemm", "--config", "tile_mn=128x128", "tile_mn=128x256"],
            "--config tile_mn given twice (tile_mn=128x128, tile_mn=128x256): give each key once",
        ),
        (
            ["hopper_dense_gemm", "--config", "tile_mn=128x128 tile_mn=128x128"],
            "--config tile_mn given twice",
        ),
        (["hopper_dense_gemm", "--config", "tile_mn=1", "--config", "tile_mn=2"], "given twice"),
        (
            ["hopper_dense_gemm_persistent", "--config", "raster_along_m=maybe"],
            "--config raster_along_m=maybe: not a bool",
        ),
        (
            ["hopper_dense_gemm_persistent", "--config", "swizzle_size=2,raster_along_m=true"],
            "not an int (separate items with spaces: --config swizzle_size=2 raster_along_m=true)",
        ),
        (
            ["hopper_dense_gemm_persistent", "--config", "swizzle_size=0"],
            "swizzle_size must be a positive integer (got 0)",
        ),
        (
            ["hopper_dense_gemm", "--config", "sm_count=100"],
            "unknown config key 'sm_count' for this implementation; known: tile_mn, cluster_mn",
        ),
        (["torch_matmul", "--config", "tile_mn=128x128"], "known: fp16_reduced_precision"),
        # --sm_count: the target's, validated
        (["hopper_dense_gemm_persistent", "--sm_count", "0"], "--sm_count must be a positive"),
        (["hopper_dense_gemm_persistent", "--sm_count", "-4"], "(got '-4')"),
        (["hopper_dense_gemm_persistent", "--sm_count", "abc"], "(got 'abc')"),
        (["hopper_dense_gemm", "--prof_type", "static", "--sm_count", "abc"], "--sm_count"),
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


def _plan(kernel="hopper_dense_gemm"):
    from kernelplan.registry import load_plan_class

    return load_plan_class("gemm", kernel)()


def test_init_option_reaches_the_problem_and_the_tensor_specs():
    plan = _plan()
    prob, _items, _opts = parse(plan, ["--init", "randint"])
    assert prob.init == "randint"
    specs = plan.tensor_specs(prob)
    assert specs["a"].init == specs["b"].init == "randint" and specs["a"].scale == 2.0
    default, _, _ = parse(plan, [])
    assert default.init == "randn" and plan.tensor_specs(default)["a"].init == "randn"


def test_problem_flags_are_the_workloads_dataclass_fields():
    from kernelplan.workloads.gemm import GemmProblem

    from .inhouse_axpby import AxpbyPlan, AxpbyProblem

    gemm = build_parser(_plan()).format_help()
    for f in GemmProblem.field_names():
        assert f"--{f} " in gemm, f
    prob, _, _ = parse(_plan(), ["--m", "1000", "--n", "1112", "--k", "1024", "--l", "3"])
    assert prob == GemmProblem(1000, 1112, 1024, l=3) and prob.c_dtype == "float16"
    axpby = build_parser(AxpbyPlan()).format_help()
    assert "--n N" in axpby and "--alpha ALPHA" in axpby and "--m M" not in axpby
    prob, _, _ = parse(AxpbyPlan(), ["--n", "64", "--alpha", "-0.5"])
    assert prob == AxpbyProblem(64, -0.5)
    with pytest.raises(KernelPlanError, match="--n must be a positive integer"):
        parse(AxpbyPlan(), ["--n", "0"])


@pytest.mark.parametrize(
    "items",
    [
        ["tile_mn=128,256"],
        ["tile_mn=128x256"],
        ["tile_mn=128x256", "cluster_mn=2,1"],
        ["tile_mn=128,256 cluster_mn=2x1"],  # one quoted string
    ],
)
def test_config_items_parse_by_field_type(items):
    plan = _plan("hopper_dense_gemm_persistent")
    prob, parsed, _ = parse(plan, ["--config", *items])
    cfg = plan.config(prob, parsed)
    assert cfg.tile_mn == (128, 256) and isinstance(cfg.tile_mn, tuple)
    assert cfg.cluster_mn == ((2, 1) if len(parsed) > 1 else (1, 1))
    assert cfg.raster_along_m is True and cfg.swizzle_size == 1  # the defaults stay
    cfg = plan.config(prob, {"raster_along_m": "false", "swizzle_size": "4"})
    assert cfg.raster_along_m is False and cfg.swizzle_size == 4
    _, parsed, _ = parse(plan, ["--config", "tile_mn=128,256", "--config", "swizzle_size=2"])
    assert parsed == {"tile_mn": "128,256", "swizzle_size": "2"}  # a second --config adds


def test_unknown_config_key_and_bad_value_are_shape_errors():
    from kernelplan import ShapeError

    plan = _plan()
    prob = plan.problem()
    with pytest.raises(
        ShapeError, match="unknown config key 'tile_nm'.*known: tile_mn, cluster_mn"
    ):
        plan.config(prob, {"tile_nm": "128x128"})
    with pytest.raises(ShapeError, match=r"--config tile_mn=128xabc: not a tuple of int"):
        plan.config(prob, {"tile_mn": "128xabc"})
    with pytest.raises(ShapeError, match="tile_mn 128x96 unsupported"):
        plan.config(prob, {"tile_mn": "128x96"})


def test_sm_count_reaches_the_target():
    plan = _plan("hopper_dense_gemm_persistent")
    _, _, opts = parse(plan, ["--sm_count", "114"])
    t = plan.target(opts.arch, opts.sm_count)
    assert (t.sm, t.sm_count, t.sm_count_from) == ("sm_90a", 114, "--sm_count")
    _, _, opts = parse(plan, [])
    assert plan.target(opts.arch, opts.sm_count).sm_count_from in ("table", "this GPU")


@needs_sources
def test_static_record_carries_workload_target_and_the_dataclasses(capsys, results_dir):
    rc = package_main(
        "gemm",
        [
            "hopper_dense_gemm_persistent",
            "--prof_type",
            "static",
            "--m",
            "512",
            "--config",
            "cluster_mn=2x1",
            "--sm_count",
            "96",
        ],
    )
    assert rc == 0, capsys.readouterr().err
    (path,) = results_dir.rglob("*.json")
    rec = json.loads(path.read_text())
    assert rec["schema"] == 2 and rec["workload"] == "gemm"
    assert rec["target"] == {"sm": "sm_90a", "sm_count": 96, "sm_count_from": "--sm_count"}
    assert rec["problem"]["m"] == 512 and rec["problem"]["c_dtype"] == "float16"
    assert rec["config"]["cluster_mn"] == [2, 1] and "sm_count" not in rec["config"]
    assert rec["static"]["max_active_clusters"] == 48  # 96 SMs / clusters of 2


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ["hopper_dense_gemm", "--prof_type", "static", "--config", "tile_nm=128x128"],
            "unknown config key 'tile_nm' for this implementation; known: tile_mn, cluster_mn",
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
    prob = plan.problem(m=4096, n=4096, k=4096)
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
    rec, st, roof = plan.benchmark_record(prob, plan.default_config(prob), log=lines.append)
    assert st is stats and rec["kind"] == "benchmark" and rec["kernel"] == "torch_matmul"
    assert rec["workload"] == "gemm" and rec["problem"] == prob.to_dict()
    assert rec["target"]["sm"] == "sm_90" and rec["config"] == plan.default_config(prob).to_dict()
    assert rec["timing"]["median_us"] == 181.0
    assert rec["roofline"]["tflops"] == pytest.approx(2 * 4096**3 / 181e-6 / 1e12)
    assert rec["clocks"] == {
        "before": {"sm_mhz": 1980},
        "after": {"sm_mhz": 1400, "throttle_reasons": 4},
    }
    assert rec["throttle"]["throttled"] is True and lines and lines[0].startswith("warning:")


# -- fresh-user trial 4, defects 7 and 8 ---------------------------------------------------------
def _mla_plan(kernel="torch_reference"):
    from kernelplan.registry import load_plan_class

    return load_plan_class("mla", kernel)()


@pytest.mark.parametrize(
    ("value", "want"),
    [("1,2,3", (1, 2, 3)), ("[1,2,3]", (1, 2, 3)), ("1, 2,3", (1, 2, 3)), ("null", None)],
)
def test_a_tuple_flag_takes_a_comma_list_as_config_does(value, want):
    """``--seqlens 1,2,3`` (the --config tuple syntax) and ``--seqlens=1,2,3`` as ``[1,2,3]``."""
    plan = _mla_plan()
    for argv in (["--b", "3", "--seqlens", value], ["--b", "3", f"--seqlens={value}"]):
        prob, _, _ = parse(plan, argv)
        assert prob.seqlens == want, argv
    prob, _, _ = parse(plan, ["--b", "1", "--seqlens", "5"])
    assert prob.seqlens == (5,)
    with pytest.raises(KernelPlanError, match=r"--seqlens: expected a list such as 1,2,3"):
        parse(plan, ["--b", "3", "--seqlens", "a,b,c"])


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ["--softmax_scale", "nan"],
            "--softmax_scale: expected a finite number such as 0.0417, or null (got nan)",
        ),
        (["--softmax_scale", "inf"], "(got inf)"),
        (["--num_pages", "x"], "--num_pages: expected an integer, or null (got x)"),
    ],
)
def test_an_optional_number_flag_says_what_it_takes(argv, needle):
    """A float or int flag that may be null names the kind of value and echoes the bad one
    (it said "not a valid value; see --help for its type", and --help shows a float)."""
    with pytest.raises(KernelPlanError) as e:
        parse(_mla_plan(), argv)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_help_has_no_sphinx_roles_and_each_default_once():
    import re

    text = build_parser(_mla_plan()).format_help()
    assert not re.search(r":(func|data|mod|class|meth):`", text), text
    assert "SPARE_PAGES" in text  # the role's name stays
    flat = " ".join(text.split())
    assert "(default: the target) (default: null)" not in flat
    assert "--arch ARCH SM to compile for (default: the target) --sm_count" in flat
    assert "(default: results/) (default:" not in flat
    assert "reuse one input set (default: rotate copies) --cuda-graph" in flat
    assert "timed launches profiled (default 3) (type: int) " in flat
    assert "(type: int, default: 32)" in flat  # a generated default where the text has none


def test_a_bad_bool_says_true_or_false(capsys):
    rc, err = _run(capsys, ["torch_reference", "--varlen", "maybe"], package="mla")
    assert rc == 2 and err == "error: --varlen expects true or false, got 'maybe'"


def test_a_value_outside_a_literal_field_names_the_choices(capsys):
    rc, err = _run(capsys, ["torch_reference", "--init", "spiky2"], package="mla")
    assert rc == 2 and err == "error: --init: one of randn, spiky (got 'spiky2')"
    rc, err = _run(capsys, ["torch_reference", "--kv_scale", "foo"], package="mla")
    assert rc == 2 and err == "error: --kv_scale: one of per_token, per_block (got 'foo')"
