"""Timing guards and clocks on the CPU: uncompiled @cute.jit calls, empty CUDA graphs, cold L2
by default, the clock sampler and throttle flag, and the clock-lock script's refusal.

The empty-graph test drives ``timing.benchmark`` through a stand-in for ``torch`` whose CUDA
graph replays what was captured on its stream, and whose clock only advances for work
enqueued: a launcher that puts its kernel on another (cached) stream leaves the graph empty.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from kernelplan import clocks, timing
from kernelplan.plan import KernelPlan
from kernelplan.timing import (
    MIN_PLAUSIBLE_US,
    TimingError,
    benchmark,
    is_uncompiled_jit,
    summarize,
    workspaces_for_cold_l2,
)

from .inhouse_axpby import axpby

ROOT = Path(__file__).resolve().parents[1]


# -- uncompiled @cute.jit -------------------------------------------------------------------
def test_planted_uncompiled_jit_call_is_refused_before_any_gpu_work():
    with pytest.raises(TimingError, match="uncompiled @cute.jit"):
        benchmark([axpby])


@pytest.mark.parametrize(
    "wrap",
    [
        lambda f: f,
        lambda f: functools.partial(f, 1, 2),
        lambda f: functools.partial(functools.partial(f, 1), 2),
    ],
    ids=["plain", "partial", "nested-partial"],
)
def test_uncompiled_jit_is_recognised_directly_and_through_partial(wrap):
    assert is_uncompiled_jit(wrap(axpby))
    with pytest.raises(TimingError, match="compile it first"):
        benchmark([lambda: None, wrap(axpby)])  # one bad launcher among good ones


def test_bound_jit_method_and_marked_objects_are_recognised():
    class Host:
        def __call__(self):
            return None

    Host.__call__._dsl_cls = object  # what the DSL's decorator leaves on its wrapper
    assert is_uncompiled_jit(Host().__call__)

    def marked():
        return None

    marked._kernelplan_uncompiled = True
    assert is_uncompiled_jit(marked)
    assert not is_uncompiled_jit(lambda: None)
    assert not is_uncompiled_jit(functools.partial(print, "x"))


# -- empty CUDA graph / nothing enqueued ----------------------------------------------------
def test_summarize_rejects_a_median_under_one_microsecond():
    with pytest.raises(TimingError, match="CUDA graph replays nothing"):
        summarize([0.05] * 20, warmup=1, workspaces=1, cuda_graph=True, graph_launches=20)
    with pytest.raises(TimingError, match="enqueues no work"):
        summarize([0.3] * 20, warmup=1, workspaces=1, cuda_graph=False)
    with pytest.raises(TimingError, match="no timing samples"):
        summarize([], warmup=1, workspaces=1, cuda_graph=False)
    ok = summarize([MIN_PLAUSIBLE_US] * 5, warmup=1, workspaces=1, cuda_graph=False)
    assert ok.median_us == MIN_PLAUSIBLE_US


def test_summarize_spread_is_p10_to_p90_over_median():
    st = summarize([float(x) for x in range(100, 201)], warmup=0, workspaces=2, cuda_graph=False)
    assert st.median_us == 150.0
    assert st.p10_us == pytest.approx(110.0) and st.p90_us == pytest.approx(190.0)
    assert st.spread_pct == pytest.approx(100.0 * 80.0 / 150.0)


class _FakeCuda:
    """Enough of ``torch.cuda`` for ``timing.benchmark``: a GPU clock in microseconds that
    advances only for work enqueued eagerly or replayed from a graph."""

    def __init__(self, graph_launch_us: float = 2.0):
        self.now_us = 0.0
        self.capturing: list | None = None
        self.graph_launch_us = graph_launch_us
        fake = self

        class Stream:
            def wait_stream(self, other):
                return None

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self, stream=None):
                self.t = fake.now_us

            def elapsed_time(self, end):
                return (end.t - self.t) / 1000.0  # milliseconds, as torch

        class CUDAGraph:
            def __init__(self):
                self.work: list[float] = []

            def replay(self):
                fake.now_us += fake.graph_launch_us + sum(self.work)

        self.Stream, self.Event, self.CUDAGraph = Stream, Event, CUDAGraph
        self._current = Stream()

    def is_available(self):
        return True

    def current_stream(self):
        return self._current

    def synchronize(self):
        return None

    @contextlib.contextmanager
    def stream(self, s):
        yield

    @contextlib.contextmanager
    def graph(self, g, stream=None):
        self.capturing = g.work
        try:
            yield
        finally:
            self.capturing = None

    def kernel(self, us: float, captured: bool = True):
        """Enqueue a kernel of ``us``: into the graph being captured, or (on an uncaptured,
        cached stream) run eagerly at once."""
        if self.capturing is not None and captured:
            self.capturing.append(us)
        else:
            self.now_us += us


@pytest.fixture
def fake_torch(monkeypatch):
    cuda = _FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setenv(clocks.SAMPLER_ENV, "0")
    return cuda


def test_planted_empty_cuda_graph_is_rejected(fake_torch):
    # The kernel goes to a stream the capture does not see: the graph holds nothing.
    def launch_on_cached_stream():
        fake_torch.kernel(100.0, captured=False)

    with pytest.raises(TimingError, match="CUDA graph replays nothing"):
        benchmark([launch_on_cached_stream], warmup=2, reps=10, cuda_graph=True)


def test_graph_that_holds_the_kernel_times_it(fake_torch):
    def launch():
        fake_torch.kernel(100.0)

    st = benchmark([launch], warmup=2, reps=10, cuda_graph=True, graph_launches=20)
    assert st.cuda_graph and st.graph_launches == 20
    assert st.median_us == pytest.approx(100.0 + 2.0 / 20)
    eager = benchmark([launch, launch], warmup=2, reps=10)
    assert eager.median_us == pytest.approx(100.0) and eager.workspaces == 2


# -- cold L2 --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "per_ws, l2",
    [(10 << 20, 50 << 20), (384 << 20, 50 << 20), (1 << 20, 60 << 20), (50 << 20, 50 << 20)],
)
def test_cold_l2_rotation_spans_three_l2s_before_reuse(per_ws, l2):
    n = workspaces_for_cold_l2(per_ws, l2)
    assert 2 <= n <= 64
    if n < 64:
        # the data touched between two uses of one workspace is at least 3x the L2
        assert (n - 1) * per_ws >= 3 * l2


def test_cold_l2_caps_and_degenerate_sizes():
    assert workspaces_for_cold_l2(1024, 50 << 20) == 64
    assert workspaces_for_cold_l2(0, 50 << 20) == 1
    assert workspaces_for_cold_l2(1 << 30, 50 << 20) == 2


def test_cold_l2_is_the_default_of_the_harness_and_the_cli():
    assert inspect.signature(KernelPlan.run_benchmark).parameters["cold_l2"].default is True
    from kernelplan.cli import build_parser

    from .inhouse_axpby import AxpbyPlan

    args = build_parser(AxpbyPlan()).parse_args([])
    assert args.warm_l2 is False  # cold unless --warm-l2 is given


# -- clocks ---------------------------------------------------------------------------------
def _reader(values):
    it = iter(values)

    def read():
        sm, reasons = next(it)
        return {"sm_mhz": sm, "mem_mhz": 3201, "throttle_reasons": reasons}

    return read


def test_sampler_samples_during_the_block_and_summarises():
    vals = [(1980, 0)] * 3 + [(1410, 0x4)] * 200
    with clocks.ClockSampler(interval_s=0.001, reader=_reader(vals), max_sm_mhz=1980) as s:
        import time

        time.sleep(0.02)
    summ = s.summary()
    assert summ["n"] >= 3
    assert summ["sm_mhz_max"] == 1980 and summ["sm_mhz_min"] == 1410
    assert "sw_power_cap" in summ["reasons"]
    assert summ["busy_below_threshold"] >= 1


def test_throttle_flag_judges_busy_samples_only():
    idle_before = {"sm_mhz": 345, "throttle_reasons": 0x1}
    during = clocks.summarize_samples(
        [{"sm_mhz": 1980, "throttle_reasons": 0}, {"sm_mhz": 1965, "throttle_reasons": 0}], 1980
    )
    ok = clocks.throttle_flag(idle_before, {"sm_mhz": 1980}, during, 1980)
    assert ok["throttled"] is False and ok["sm_mhz_before"] == 345

    during = clocks.summarize_samples(
        [{"sm_mhz": 1980, "throttle_reasons": 0}, {"sm_mhz": 1395, "throttle_reasons": 0x4}], 1980
    )
    bad = clocks.throttle_flag(idle_before, {"sm_mhz": 1440, "throttle_reasons": 4}, during, 1980)
    assert bad["throttled"] is True
    assert bad["min_busy_sm_mhz"] == 1395 and bad["threshold_mhz"] == 1485.0
    assert "sw_power_cap" in bad["reasons"] and "1395 MHz" in bad["message"]

    # an idle-marked low sample is no throttle; nothing measured is None, not False
    during = clocks.summarize_samples([{"sm_mhz": 400, "throttle_reasons": 0x1}], 1980)
    assert clocks.throttle_flag(None, {"sm_mhz": 1980}, during, 1980)["throttled"] is False
    assert clocks.throttle_flag(None, None, None, 1980)["throttled"] is None


def test_record_throttle_puts_the_flag_in_the_record_and_warns():
    class Dev:
        clocks_max = {"sm_mhz": 1980}

    class St:
        clocks_during = clocks.summarize_samples([{"sm_mhz": 1400, "throttle_reasons": 4}], 1980)

    rec, lines = {"kernel": "k"}, []
    clocks.record_throttle(rec, Dev(), {"sm_mhz": 1980}, {"sm_mhz": 1410}, St(), lines.append)
    assert rec["throttle"]["throttled"] is True
    assert lines and lines[0].startswith("warning: k: SM clock fell to 1400 MHz")
    assert clocks.decode_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]


def test_sampler_is_off_without_nvml_or_when_disabled(monkeypatch):
    monkeypatch.setenv(clocks.SAMPLER_ENV, "0")
    with clocks.ClockSampler() as s:
        pass
    assert s.summary() == {}
    st = timing.TimingStats(1, 1, 1, 1, 1, 1, 0, 1, 0, 1, False)
    assert "clocks_during" in st.to_dict()


# -- the clock-lock script ------------------------------------------------------------------
def _fake_nvidia_smi(tmp_path: Path) -> tuple[dict, Path]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "nvidia-smi.log"
    smi = bindir / "nvidia-smi"
    smi.write_text(
        '#!/bin/bash\necho "$*" >> "$NVSMI_LOG"\ncase "$*" in *--query-gpu*) echo 1755 ;; esac\n'
    )
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "NVSMI_LOG": str(log)}
    return env, log


def test_lock_script_refuses_without_the_flag_and_never_calls_nvidia_smi(tmp_path):
    env, log = _fake_nvidia_smi(tmp_path)
    for argv in (["--mhz", "1500"], ["--base"], ["--max", "--", "true"], []):
        p = subprocess.run(
            ["bash", str(ROOT / "scripts/lock-gpu-clock.sh"), *argv],
            env=env,
            capture_output=True,
            text=True,
        )
        assert p.returncode == 3, argv
        assert "refusing" in p.stderr and "--i-own-this-gpu" in p.stderr
    assert not log.exists()  # nvidia-smi never ran, not even a query


def test_lock_script_with_the_flag_locks_runs_and_restores(tmp_path):
    env, log = _fake_nvidia_smi(tmp_path)
    p = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts/lock-gpu-clock.sh"),
            "--i-own-this-gpu",
            "--base",
            "--",
            "bash",
            "-c",
            "exit 7",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 7  # the command's own exit code
    calls = log.read_text().splitlines()
    assert calls[-2:] == ["-i 0 -lgc 1755,1755", "-i 0 -rgc"]
