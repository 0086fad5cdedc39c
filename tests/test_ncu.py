"""kernelplan.ncu on the CPU: finding ncu and ncu_report, the command line, reading a report
through a stand-in for Nsight Compute's ``ncu_report`` module, the summary and its units, and
the error paths (ncu missing, ncu failing, nothing profiled, an unreadable report), none of
which may leave a record behind.
"""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from kernelplan import ncu
from kernelplan.ncu import (
    KERNELPLAN_SECTIONS,
    NcuError,
    NcuKernel,
    NcuOptions,
    build_command,
    find_ncu,
    nvtx_filter,
    nvtx_pattern,
    summarize_kernels,
)
from kernelplan.records import load_records

from .inhouse_axpby import AxpbyPlan

GMMA = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
HMMA = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


# -- a stand-in for ncu_report ----------------------------------------------------------------
class FakeMetric:
    def __init__(self, value, unit):
        self.value, self._unit = value, unit

    def as_double(self):
        if isinstance(self.value, str):
            raise TypeError("not a number")
        return float(self.value)

    def as_uint64(self):
        return int(self.value)

    def as_string(self):
        return str(self.value)

    def unit(self):
        return self._unit


class FakeAction:
    def __init__(self, name, metrics):
        self._name, self._m = name, metrics

    def name(self, base=None):
        return self._name

    def metric_names(self):
        return tuple(self._m)

    def metric_by_name(self, n):
        return FakeMetric(*self._m[n]) if n in self._m else None


class FakeRange:
    def __init__(self, actions):
        self.actions = actions

    def num_actions(self):
        return len(self.actions)

    def action_by_idx(self, i):
        return self.actions[i]


class FakeContext:
    def __init__(self, ranges):
        self.ranges = ranges

    def num_ranges(self):
        return len(self.ranges)

    def range_by_idx(self, i):
        return self.ranges[i]


def fake_module(actions=None, error: Exception | None = None):
    def load_report(path):
        if error is not None:
            raise error
        return FakeContext([FakeRange(list(actions or []))])

    return types.SimpleNamespace(load_report=load_report)


def gemm_metrics(ns=1_400_000, gmma=85.0, stalls=True, tensor=True):
    m = {
        "gpu__time_duration.sum": (ns, "nsecond"),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": (88.0, "%"),
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": (45.0, "%"),
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": (31.5, "%"),
        "sm__warps_active.avg.pct_of_peak_sustained_active": (12.4, "%"),
        "sm__maximum_warps_per_active_cycle_pct": (12.5, "%"),
        "launch__registers_per_thread": (168, "register/thread"),
        "launch__shared_mem_per_block_static": (1024, "byte/block"),
        "launch__shared_mem_per_block_dynamic": (201728, "byte/block"),
        "lts__t_sector_hit_rate.pct": (62.0, "%"),
        "sm__cycles_elapsed.avg.per_second": (1.98, "cycle/nsecond"),
        "launch__grid_size": (2048, "block"),
        "launch__block_size": (384, "thread"),
        "device__attribute_display_name": ("NVIDIA H200", ""),  # not wanted: dropped
    }
    if tensor:
        m[GMMA] = (gmma, "%")
        m[HMMA] = (0.0, "%")
    if stalls:
        for reason, v in (
            ("long_scoreboard", 0.4),
            ("wait", 1.2),
            ("math_pipe_throttle", 2.5),
            ("barrier", 0.9),
            ("selected", 1.0),
            ("sleeping", 0.1),
        ):
            m[f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"] = (v, "")
    return m


def three_launches_two_kernels():
    reduce = {"gpu__time_duration.sum": (20_000, "nsecond")}
    acts = []
    for i in range(3):
        acts.append(FakeAction("gemm_kernel", gemm_metrics(ns=1_400_000 + 10_000 * i)))
        acts.append(FakeAction("splitk_reduce", reduce))
    return acts


# -- finding ncu ------------------------------------------------------------------------------
def _exe(p: Path, text: str = "#!/bin/bash\nexit 0\n") -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    p.chmod(0o755)
    return p


def test_ncu_missing_is_one_line_naming_what_to_install(tmp_path):
    with pytest.raises(NcuError) as e:
        find_ncu(env={}, path="", roots=[str(tmp_path / "nothing*")])
    msg = str(e.value)
    assert "ncu" in msg and "Nsight Compute" in msg and "install" in msg
    assert "KERNELPLAN_NCU" in msg and "\n" not in msg


def test_explicit_ncu_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(NcuError, match="KERNELPLAN_NCU=.*not an executable"):
        find_ncu(env={"KERNELPLAN_NCU": str(tmp_path / "ncu")}, path="", roots=[])


def test_ncu_is_found_on_path_then_under_the_roots_newest_first(tmp_path):
    onpath = _exe(tmp_path / "bin" / "ncu")
    assert find_ncu(env={}, path=str(tmp_path / "bin"), roots=[]) == onpath
    _exe(tmp_path / "opt" / "nsight-compute-2024.1.0" / "ncu")
    new = _exe(tmp_path / "opt" / "nsight-compute-2025.3.1" / "ncu")
    assert find_ncu(env={}, path="", roots=[str(tmp_path / "opt" / "nsight-compute*")]) == new
    roots_env = {"KERNELPLAN_NCU_ROOTS": str(tmp_path / "opt" / "nsight-compute-2024*")}
    assert find_ncu(env=roots_env, path="").parent.name == "nsight-compute-2024.1.0"


def test_ncu_report_is_found_from_the_ncu_binary(tmp_path, monkeypatch):
    # standalone install: <install>/ncu and <install>/extras/python/ncu_report.py
    inst = tmp_path / "nsight-compute-2025.3.1"
    exe = _exe(inst / "ncu")
    (inst / "extras" / "python").mkdir(parents=True)
    (inst / "extras" / "python" / "ncu_report.py").write_text("MARK = 'standalone'\n")
    assert ncu.ncu_python_dirs(exe) == [inst / "extras" / "python"]
    # CUDA toolkit: <cuda>/bin/ncu (a wrapper) and <cuda>/nsight-compute-*/extras/python
    cuda = tmp_path / "cuda-13.0"
    wrapper = _exe(cuda / "bin" / "ncu")
    (cuda / "nsight-compute-2025.3.1" / "extras" / "python").mkdir(parents=True)
    (cuda / "nsight-compute-2025.3.1" / "extras" / "python" / "ncu_report.py").write_text("")
    assert ncu.ncu_python_dirs(wrapper)[0].parts[-3] == "nsight-compute-2025.3.1"

    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    mod = ncu.load_ncu_report(exe)
    assert mod is not None and mod.MARK == "standalone"
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)


# -- the command line -----------------------------------------------------------------------
RANGE = "gemm/hopper_dense_gemm tile_mn=128x256 cluster_mn=1x1"


def test_default_command_profiles_the_timed_nvtx_range_with_clocks_as_found():
    child = ["python", "-m", "kernelplan.ncu", "child", "{}"]
    cmd = build_command(
        "/x/ncu", "/r/base", child, NcuOptions(), range_name=RANGE, nvtx_domain="kernelplan"
    )
    s = " ".join(cmd)
    assert cmd[0] == "/x/ncu" and cmd[-5:] == child
    assert "--clock-control none" in s and "--cache-control all" in s
    assert "-o /r/base" in s and "-c 48" in s
    warm = build_command(
        "/x/ncu",
        "/r/base",
        child,
        NcuOptions(cache_control="none"),
        range_name=RANGE,
        nvtx_domain=None,
    )
    assert warm[warm.index("--cache-control") + 1] == "none"
    i = cmd.index("--nvtx-include")
    assert "--nvtx" in cmd and cmd[i + 1] == nvtx_filter(RANGE, "kernelplan")
    assert cmd[i + 1] == "regex:kernelplan@gemm.hopper_dense_gemm tile_mn=128x256 cluster_mn=1x1/"
    assert [cmd[j + 1] for j, a in enumerate(cmd) if a == "--section"] == list(KERNELPLAN_SECTIONS)
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert "gpu__time_duration.sum" in metrics and GMMA in metrics


def test_command_options_clock_set_range_kernel():
    opts = NcuOptions(set="basic", clock_control="base", range="profiler", kernel_regex="gemm")
    cmd = build_command("ncu", "b", ["c"], opts, range_name=RANGE, nvtx_domain=None)
    s = " ".join(cmd)
    assert "--clock-control base" in s and "--set basic" in s and "--section" not in s
    assert "--profile-from-start off" in s and "--nvtx" not in s and "-k regex:gemm" in s
    no_metrics = build_command(
        "ncu", "b", ["c"], opts, range_name=RANGE, nvtx_domain=None, with_metrics=False
    )
    assert "--metrics" not in no_metrics
    none = build_command(
        "ncu",
        "b",
        ["c"],
        NcuOptions(range="none"),
        range_name=RANGE,
        nvtx_domain=None,
        child_warmup=1,
    )
    assert "--launch-skip 1" in " ".join(none)


@pytest.mark.parametrize(
    "name",
    [RANGE, "gemm/torch_matmul a=True b=1.5 (x)[y]{z}|w+v*u?^$\\@c:d", "mla/k default"],
)
def test_nvtx_pattern_has_no_special_character_and_matches_the_name(name):
    pat = nvtx_pattern(name)
    assert not set(pat) & set("/@\\^$|?*+()[]{}:")
    assert re.fullmatch(pat, name)
    assert nvtx_filter(name, None) == f"regex:{pat}/"


def test_options_from_the_cli():
    from kernelplan.cli import build_parser

    args = build_parser(AxpbyPlan()).parse_args(
        [
            "--prof_type",
            "ncu",
            "--ncu-set",
            "full",
            "--ncu-clock-control",
            "base",
            "--ncu-cache-control",
            "none",
            "--ncu-launches",
            "5",
            "--ncu-metrics",
            "a.sum,b.sum",
            "--ncu-pair",
        ]
    )
    o = NcuOptions.from_args(args)
    assert (o.set, o.clock_control, o.launches, o.pair) == ("full", "base", 5, True)
    assert o.cache_control == "none"
    assert o.metrics()[-2:] == ["a.sum", "b.sum"]
    d = NcuOptions.from_args(build_parser(AxpbyPlan()).parse_args([]))
    assert (d.set, d.clock_control, d.range, d.launches) == ("kernelplan", "none", "nvtx", 3)
    assert d.cache_control == "all"


def _child_round_trip(plan, problem, config, target, **kw):
    """child_argv, then the single-kernel command's own parser on it."""
    from kernelplan.cli import child_argv, parse

    argv = child_argv(plan, problem, config, target, **kw)
    assert argv[:3] == [sys.executable, "-m", "kernelplan.cli"]
    rest = argv[3:]
    if rest[0] == "--plan":  # an implementation no package lists: by import path
        head, rest = rest[:2], rest[2:]
    else:
        head, rest = rest[:2], rest[2:]
        assert head == [plan.package, plan.name]
    prob, items, opts = parse(plan, rest)
    return argv, head, prob, plan.config(prob, items), opts


def test_the_ncu_child_is_the_single_kernel_command_and_parses_back():
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("gemm", "hopper_dense_gemm_persistent")()
    prob = plan.problem(m=1000, n=1112, k=1024, l=3, init="randint")
    cfg = plan.config(prob, {"cluster_mn": "2x1", "raster_along_m": "false", "swizzle_size": "2"})
    target = plan.target(None, 96)
    argv, head, back, back_cfg, opts = _child_round_trip(plan, prob, cfg, target, reps=5)
    assert head == ["gemm", "hopper_dense_gemm_persistent"]
    assert back == prob and back_cfg == cfg
    assert plan.target(opts.arch, opts.sm_count) == target.__class__("sm_90a", 96, "--sm_count")
    assert (opts.warmup, opts.reps, opts.ncu_child, opts.warm_l2) == (1, 5, "nvtx", False)
    assert opts.check is False and opts.autotune is False  # the child only times
    _, _, _, _, warm = _child_round_trip(
        plan, prob, cfg, target, reps=3, cold_l2=False, range_mode="profiler"
    )
    assert warm.warm_l2 is True and warm.ncu_child == "profiler"


def test_the_ncu_child_of_an_unlisted_implementation_names_its_class():
    plan = AxpbyPlan()
    prob = plan.problem(n=64, alpha=-0.5)
    cfg = plan.config(prob, {"tile_mn": "64x64", "fast": "true"})
    target = plan.target()
    argv, head, back, back_cfg, opts = _child_round_trip(plan, prob, cfg, target, reps=3)
    assert head == ["--plan", "tests.inhouse_axpby:AxpbyPlan"]
    assert back == prob and back_cfg == cfg and opts.sm_count == str(target.sm_count)
    from kernelplan.cli import main

    assert main(["--plan", "tests.inhouse_axpby:NoSuchPlan", "--n", "4"]) == 2


# -- reading and summarising ----------------------------------------------------------------
def test_units_convert_to_the_record_units():
    assert ncu.to_unit(1_400_000, "nsecond", "us") == pytest.approx(1400.0)
    assert ncu.to_unit(1.4, "msecond", "us") == pytest.approx(1400.0)
    assert ncu.to_unit(1400, "usecond", "us") == pytest.approx(1400.0)
    assert ncu.to_unit(1.98, "cycle/nsecond", "MHz") == pytest.approx(1980.0)
    assert ncu.to_unit(1.98e9, "cycle/second", "MHz") == pytest.approx(1980.0)
    assert ncu.to_unit(1.98, "Ghz", "MHz") == pytest.approx(1980.0)
    assert ncu.to_unit(197.0, "Kbyte/block", "bytes") == pytest.approx(197000.0)
    assert ncu.to_unit("x", "%", "%") is None
    assert ncu.to_unit(1.98, "", "MHz") == pytest.approx(1980.0)  # no unit: per nanosecond
    assert ncu.to_unit(1.98e9, "", "MHz") == pytest.approx(1980.0)  # no unit: per second


def test_report_through_ncu_report_gives_the_table_metrics():
    kernels, reader = ncu.read_report(__file__, module=fake_module(three_launches_two_kernels()))
    assert reader == "ncu_report" and len(kernels) == 6
    assert "device__attribute_display_name" not in kernels[0].metrics
    s = summarize_kernels(kernels, launches=3)
    assert s["kernels_per_launch"] == 2 and s["primary_kernel"] == "gemm_kernel"
    assert s["kernel_names"] == ["gemm_kernel", "splitk_reduce"]
    assert s["duration_us"] == pytest.approx(1410.0 + 20.0)  # per launch: GEMM + reduction
    m = s["metrics"]
    assert m["duration_us"] == pytest.approx(1410.0)
    assert m["tensor_pipe_pct"] == 85.0 and s["metric_names"]["tensor_pipe_pct"] == GMMA
    assert m["dram_throughput_pct"] == 31.5 and m["achieved_occupancy_pct"] == 12.4
    assert m["registers_per_thread"] == 168
    assert m["smem_per_block_bytes"] == 1024 + 201728
    assert m["l2_hit_rate_pct"] == 62.0 and m["sm_clock_mhz"] == pytest.approx(1980.0)
    assert [x["reason"] for x in s["stalls"]] == [
        "math_pipe_throttle",
        "wait",
        "barrier",
        "long_scoreboard",
        "sleeping",
    ]  # "selected" (the warp issued) is no stall
    ok, why = ncu.completeness(s, "sections ...")
    assert ok and why is None


def test_tensor_pipe_is_the_largest_of_the_pipes_present():
    k = NcuKernel("k", {**gemm_metrics(gmma=0.0), HMMA: (47.0, "%")})
    s = summarize_kernels([k], launches=1)
    assert s["metrics"]["tensor_pipe_pct"] == 47.0
    assert s["metric_names"]["tensor_pipe_pct"] == HMMA


def test_missing_table_metrics_make_an_incomplete_summary_with_the_reason():
    k = NcuKernel("k", gemm_metrics(stalls=False, tensor=False))
    s = summarize_kernels([k], launches=1)
    ok, why = ncu.completeness(s, "set basic")
    assert not ok
    assert "tensor_pipe_pct (ComputeWorkloadAnalysis)" in why and "WarpStateStats" in why
    assert "set basic" in why


def test_raw_csv_reader_parses_names_units_and_thousands():
    text = (
        '"ID","Kernel Name","gpu__time_duration.sum","launch__registers_per_thread","other"\n'
        '"","","nsecond","register/thread",""\n'
        '"0","gemm","1,400,000","168","x"\n'
    )
    (k,) = ncu.parse_raw_csv(text)
    assert k.name == "gemm" and k.metrics["gpu__time_duration.sum"] == (1400000.0, "nsecond")
    assert "other" not in k.metrics


def test_unreadable_and_missing_reports_are_clear_errors(tmp_path):
    bogus = tmp_path / "bogus.ncu-rep"
    bogus.write_bytes(b"not a report")
    with pytest.raises(NcuError, match="cannot read the Nsight Compute report .*bogus"):
        ncu.read_report(bogus, module=fake_module(error=RuntimeError("Failed to load report")))
    with pytest.raises(NcuError, match="no Nsight Compute report at"):
        ncu.read_report(tmp_path / "absent.ncu-rep", module=fake_module([]))
    with pytest.raises(NcuError, match="no profiled kernel"):
        summarize_kernels([], launches=3)


def test_read_command_line_reports_errors_in_one_line(capsys, tmp_path):
    assert ncu.main(["read", str(tmp_path / "absent.ncu-rep")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no Nsight Compute report") and "\n" not in err


# -- a whole run with ncu and the child replaced ---------------------------------------------
class FakeRunner:
    """Stands in for subprocess.run of ncu: each call pops (rc, output, write_report)."""

    def __init__(self, *steps):
        self.steps = list(steps)
        self.calls: list[list[str]] = []

    def __call__(self, cmd, **kw):
        self.calls.append(cmd)
        rc, out, write = self.steps.pop(0)
        if write:
            base = cmd[cmd.index("-o") + 1]
            Path(base + ".ncu-rep").write_bytes(b"fake report")
        return subprocess.CompletedProcess(cmd, rc, stdout=out)


@pytest.fixture
def fake_ncu(tmp_path):
    return _exe(
        tmp_path / "nsight" / "ncu",
        "#!/bin/bash\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\n"
        "echo 'Version 2025.3.1.0 (build 36398880) (public-release)'\n",
    )


PLAN = AxpbyPlan()
PROB = PLAN.problem(n=1 << 20)
CFG = PLAN.default_config(PROB)
TARGET = PLAN.target()


def _profile(results_dir, fake_ncu, runner, module, opts=None):
    return ncu.profile(
        PLAN,
        PROB,
        CFG,
        TARGET,
        opts or NcuOptions(),
        results_dir=results_dir,
        log=lambda s: None,
        runner=runner,
        report_module=module,
        ncu=fake_ncu,
    )


def test_profile_writes_one_complete_ncu_record(results_dir, fake_ncu):
    runner = FakeRunner((0, "==PROF== Disconnected", True))
    rec, path = _profile(results_dir, fake_ncu, runner, fake_module(three_launches_two_kernels()))
    assert path is not None and path.exists()
    (only,) = load_records(results_dir, "tests", "axpby", kind="ncu")
    assert only[0] == path
    n = only[1]["ncu"]
    assert n["complete"] is True and n["incomplete_reason"] is None
    assert n["clock_control"] == "none" and n["cache_control"] == "all"
    assert n["ncu_version"] == "2025.3.1.0" and n["reader"] == "ncu_report"
    assert n["report"].endswith(".ncu-rep.xz") and (results_dir / n["report"]).exists()
    assert (results_dir / n["log"]).read_text() == "==PROF== Disconnected"
    assert n["filter"]["nvtx_range"] == f"tests/axpby {CFG.label()}"
    assert n["duration_us"] == pytest.approx(1430.0)
    cmd = n["command"]
    assert "--clock-control" in cmd and cmd[cmd.index("-m") + 1] == "kernelplan.cli"
    assert cmd[-2:] == ["--ncu-child", "nvtx"] and "tests.inhouse_axpby:AxpbyPlan" in cmd
    assert only[1]["workload"] == "axpby" and only[1]["target"] == TARGET.to_dict()
    from kernelplan.cutlass_src import repo_root

    assert str(repo_root()) + "/" not in path.read_text()  # no path of this machine
    row = ncu.table_row(only[1], path)
    assert row["TC%"] == "85.0" and row["SMEM_KB"] == "198.0" and row["complete"] == "yes"


def test_filter_matching_no_kernel_is_an_error_and_records_nothing(results_dir, fake_ncu):
    out = "==WARNING== No kernels were profiled."
    with pytest.raises(NcuError, match="profiled no kernel.*matched nothing"):
        _profile(results_dir, fake_ncu, FakeRunner((0, out, False)), fake_module([]))
    with pytest.raises(NcuError, match="matched no kernel.*0 results"):
        _profile(results_dir, fake_ncu, FakeRunner((0, "", True)), fake_module([]))
    assert not list(results_dir.rglob("*.json"))


def test_unreadable_report_is_an_error_and_records_nothing(results_dir, fake_ncu):
    mod = fake_module(error=RuntimeError("Failed to load report: invalid file format"))
    with pytest.raises(NcuError, match="cannot read .*invalid file format"):
        _profile(results_dir, fake_ncu, FakeRunner((0, "", True)), mod)
    assert not list(results_dir.rglob("*.json"))


def test_ncu_failing_is_an_error_naming_its_last_error_line(results_dir, fake_ncu):
    out = "==PROF== Connected\n==ERROR== The application returned an error code (2).\n"
    with pytest.raises(NcuError, match=r"ncu exited with 2: ==ERROR== The application"):
        _profile(results_dir, fake_ncu, FakeRunner((2, out, False)), fake_module([]))
    perm = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"
    with pytest.raises(NcuError, match="performance counters"):
        _profile(results_dir, fake_ncu, FakeRunner((1, perm, False)), fake_module([]))
    assert not list(results_dir.rglob("*.json"))


def test_a_rejected_metric_name_is_dropped_and_the_run_repeated(results_dir, fake_ncu):
    bad = f"==ERROR== Failed to find metric {GMMA}\n"
    runner = FakeRunner((1, bad, False), (0, "ok", True))
    acts = [FakeAction("k", gemm_metrics(tensor=False))]
    rec, _ = _profile(results_dir, fake_ncu, runner, fake_module(acts))
    first = runner.calls[0][runner.calls[0].index("--metrics") + 1].split(",")
    second = runner.calls[1][runner.calls[1].index("--metrics") + 1].split(",")
    assert GMMA in first and GMMA not in second and set(second) == set(first) - {GMMA}
    n = rec["ncu"]
    assert n["extra_metrics_dropped"]["metrics"] == [GMMA]
    assert "Failed to find metric" in n["extra_metrics_dropped"]["error"]
    assert n["complete"] is False and "tensor_pipe_pct" in n["incomplete_reason"]


def test_an_unnamed_metric_error_retries_with_the_sections_alone(results_dir, fake_ncu):
    runner = FakeRunner((1, "==ERROR== Invalid metric name\n", False), (0, "ok", True))
    _profile(results_dir, fake_ncu, runner, fake_module([FakeAction("k", gemm_metrics())]))
    assert "--metrics" in runner.calls[0] and "--metrics" not in runner.calls[1]
    assert "--section" in runner.calls[1]


def test_profile_without_ncu_says_what_to_install(results_dir, monkeypatch, tmp_path):
    monkeypatch.delenv("KERNELPLAN_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("KERNELPLAN_NCU_ROOTS", str(tmp_path / "none*"))
    with pytest.raises(NcuError, match="install NVIDIA Nsight Compute"):
        ncu.profile(PLAN, PROB, CFG, TARGET, NcuOptions(), results_dir=results_dir)
    assert not list(results_dir.rglob("*.json"))


FAKE_NCU = """#!/bin/bash
# stands in for ncu: answers --version, writes the report named by -o, records its argv
if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0 (build 1)"; exit 0; fi
printf '%s\\n' "$@" > "$(dirname "$0")/argv.txt"
while [ $# -gt 0 ]; do
    if [ "$1" = "-o" ]; then echo report > "$2.ncu-rep"; fi
    shift
done
echo "==PROF== Disconnected"
"""

FAKE_NCU_REPORT = '''
"""Stands in for Nsight Compute's ncu_report: one GEMM kernel per launch, three launches."""
class _M:
    def __init__(self, v, u): self.v, self.u = v, u
    def as_double(self): return float(self.v)
    def unit(self): return self.u
class _A:
    def __init__(self, m): self.m = m
    def name(self): return "kernel_cutlass_gemm"
    def metric_names(self): return list(self.m)
    def metric_by_name(self, n): return _M(*self.m[n])
class _R:
    def __init__(self, acts): self.acts = acts
    def num_actions(self): return len(self.acts)
    def action_by_idx(self, i): return self.acts[i]
class _C:
    def __init__(self, r): self.r = r
    def num_ranges(self): return 1
    def range_by_idx(self, i): return self.r
METRICS = {}
def load_report(path):
    if open(path).read().strip() != "report":
        raise RuntimeError("Failed to load report")
    return _C(_R([_A(METRICS) for _ in range(3)]))
'''


def test_profile_end_to_end_with_a_stand_in_ncu_install(results_dir, tmp_path, monkeypatch):
    inst = tmp_path / "nsight-compute-2025.3.1"
    _exe(inst / "ncu", FAKE_NCU)
    (inst / "extras" / "python").mkdir(parents=True)
    (inst / "extras" / "python" / "ncu_report.py").write_text(FAKE_NCU_REPORT)
    monkeypatch.setenv("KERNELPLAN_NCU", str(inst / "ncu"))
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    mod = ncu.load_ncu_report(inst / "ncu")
    mod.METRICS.update(gemm_metrics())
    lines: list[str] = []
    rec, path = ncu.profile(
        PLAN, PROB, CFG, TARGET, NcuOptions(), results_dir=results_dir, log=lines.append
    )
    argv = (inst / "argv.txt").read_text().splitlines()
    assert argv[:4] == ["--clock-control", "none", "--cache-control", "all"]
    child = argv[argv.index(sys.executable) :]
    assert child[1:5] == ["-m", "kernelplan.cli", "--plan", "tests.inhouse_axpby:AxpbyPlan"]
    assert "--ncu-child" in child and f"--n={PROB.n}" in child
    assert lines[0].startswith(f"ncu: {inst / 'ncu'} --clock-control none")
    n = rec["ncu"]
    assert n["complete"] and n["reader"] == "ncu_report" and n["ncu_version"] == "2025.3.1.0"
    assert n["kernels_per_launch"] == 1 and n["duration_us"] == pytest.approx(1400.0)
    assert path.parent == results_dir / "tests" / "axpby"
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)


def test_profile_session_with_ncu_runs_what_the_sm_can_and_skips_the_rest(monkeypatch, capsys):
    from kernelplan import device as devmod
    from kernelplan import sessions

    dev = devmod.DeviceInfo(
        "NVIDIA H200", "sm_90", 132, 1 << 30, 60 << 20, clocks_max={"sm_mhz": 1980}
    )
    monkeypatch.setattr(devmod, "current_device", lambda: dev)
    monkeypatch.setattr(ncu, "find_ncu", lambda *a, **k: Path("/opt/ncu"))
    # the imported examples are profiled too: their CUTLASS sources count as present here
    # (ncu.profile is faked; a clone without sources skips them: tests/test_sessions_skip.py)
    monkeypatch.setattr(sessions, "sources_absent", lambda plans: ([], None))
    calls = []

    def fake_profile(plan, prob, config, target, opts, **kw):
        calls.append((plan.name, prob.m, prob.dtype, opts.set, kw["ncu"], target.sm))
        if plan.name == "torch_matmul" and prob.m == 8192 and prob.dtype == "bfloat16":
            raise NcuError("ncu exited with 1: boom")
        summary = summarize_kernels([NcuKernel("k", gemm_metrics())], 1)
        rec = {"kernel": plan.name, "problem": prob.to_dict(), "ncu": {**summary, "complete": True}}
        return rec, None

    monkeypatch.setattr(ncu, "profile", fake_profile)
    rc = sessions.main(["profile", "gemm", "--ncu", "--ncu-set", "basic", "--no-record"])
    out = capsys.readouterr().out
    assert rc == 1  # one run failed
    assert "error: torch_matmul m=8192" in out and "boom" in out
    names = {c[0] for c in calls}
    assert {"hopper_dense_gemm", "hopper_dense_gemm_persistent", "torch_matmul"} <= names
    assert all(c[3] == "basic" and c[4] == Path("/opt/ncu") for c in calls)
    assert {c[5] for c in calls if c[0].startswith("hopper")} == {"sm_90a"}
    for line in out.splitlines():  # kernels built for another SM: one line each, not run
        if line.startswith("skip: "):
            assert "sm_90" in line
    assert not any(n.startswith("dense_gemm") for n in names)
    assert "| problem | kernel | ncu_us | TC% |" not in out  # the ncu table has its own columns
    assert "| kernel | problem | ncu_us | TC% | DRAM% |" in out
