"""GPU timing: warm-up, many timed launches, median and spread, cold L2, CUDA-graph replay.

Each timed launch sits between two CUDA events recorded on the current torch stream, and the
launches are enqueued back to back, so for kernels longer than the launch overhead the GPU
never waits on the host and each interval is the kernel's own duration. Cold L2: the caller
passes several launchers, one per workspace (its own copies of the inputs), whose total size
exceeds the L2 several times; launches rotate through them so no launch finds its inputs in L2.
Graph mode captures ``graph_launches`` launches into one CUDA graph and times each replay,
which removes the CPU launch cost from short kernels.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import KernelPlanError

#: A kernel that takes less than this per launch is not a measurement: an empty CUDA graph or
#: a launcher that enqueues nothing.
MIN_PLAUSIBLE_US = 1.0


class TimingError(KernelPlanError):
    """The timing would be meaningless (nothing launched, an uncompiled call, ...)."""


@dataclass
class TimingStats:
    """Per-launch durations in microseconds."""

    median_us: float
    p10_us: float
    p90_us: float
    mean_us: float
    min_us: float
    max_us: float
    stdev_us: float
    reps: int
    warmup: int
    workspaces: int
    cuda_graph: bool
    graph_launches: int = 1
    spread_pct: float = 0.0
    samples_us: list[float] = field(default_factory=list, repr=False)
    #: SM/memory clocks sampled (NVML) during the timed region: ``clocks.ClockSampler``.
    clocks_during: dict[str, Any] | None = None
    #: milliseconds the GPU idled before each sample (``kernelplan.alternate --idle-ms``); 0:
    #: the samples ran back to back
    idle_ms: float = 0.0

    def to_dict(self, with_samples: bool = True) -> dict[str, Any]:
        d = asdict(self)
        if not with_samples:
            d.pop("samples_us")
        return d


def _quantile(sorted_vals: Sequence[float], q: float) -> float:
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def summarize(
    samples_us: Sequence[float],
    *,
    warmup: int,
    workspaces: int,
    cuda_graph: bool,
    graph_launches: int = 1,
) -> TimingStats:
    """Median, p10/p90, mean, stdev and ``spread_pct = (p90 - p10) / median * 100``.

    Raises:
        TimingError: no samples, or a median below ``MIN_PLAUSIBLE_US`` (nothing ran).
    """
    if not samples_us:
        raise TimingError("no timing samples: reps must be >= 1")
    s = sorted(samples_us)
    med = statistics.median(s)
    if med < MIN_PLAUSIBLE_US:
        what = "the CUDA graph replays nothing" if cuda_graph else "the launcher enqueues no work"
        raise TimingError(
            f"median {med:.3f} us per launch is below {MIN_PLAUSIBLE_US} us: {what} "
            "(was the graph captured on the stream the kernel launches on?)"
        )
    p10, p90 = _quantile(s, 0.1), _quantile(s, 0.9)
    return TimingStats(
        median_us=med,
        p10_us=p10,
        p90_us=p90,
        mean_us=statistics.fmean(s),
        min_us=s[0],
        max_us=s[-1],
        stdev_us=statistics.stdev(s) if len(s) > 1 else 0.0,
        reps=len(s),
        warmup=warmup,
        workspaces=workspaces,
        cuda_graph=cuda_graph,
        graph_launches=graph_launches,
        spread_pct=100.0 * (p90 - p10) / med,
        samples_us=list(samples_us),
    )


def workspaces_for_cold_l2(
    bytes_per_workspace: int, l2_bytes: int, *, factor: int = 3, cap: int = 64
) -> int:
    """How many input copies make every launch miss L2: enough that one rotation spans
    ``factor`` times the L2 size (at least 2 when cold-L2 is asked for, at most ``cap``)."""
    if bytes_per_workspace <= 0:
        return 1
    need = -(-factor * max(l2_bytes, 1) // bytes_per_workspace) + 1
    return max(2, min(cap, need))


def is_uncompiled_jit(fn: Any) -> bool:
    """True for a ``@cute.jit`` function or bound method (not the result of ``cute.compile``).

    The DSL's decorator returns a wrapper carrying ``_dsl_cls`` / ``_decorator_kind``.
    """
    while isinstance(fn, functools.partial):  # partial(jit_fn, *args) is the same trap
        fn = fn.func
    target = getattr(fn, "__func__", fn)
    return bool(
        getattr(fn, "_kernelplan_uncompiled", False)
        or getattr(target, "_dsl_cls", None) is not None
        or getattr(target, "_decorator_kind", None) is not None
    )


def _check_launcher(fn: Callable[[], Any]) -> None:
    # A @cute.jit function called directly compiles (or looks up its cache) on every call,
    # so its time would be host JIT work. The harness only times compiled objects.
    if is_uncompiled_jit(fn):
        raise TimingError(
            "refusing to time an uncompiled @cute.jit call: compile it first "
            "(cute.compile / CuteKernel.compile) and time the compiled function"
        )


def capture_graphs(launchers: Sequence[Callable[[], Any]], graph_launches: int) -> list:
    """One CUDA graph per launcher, each capturing ``graph_launches`` launches that rotate
    through the launchers from its own start (so replays keep the cold-L2 rotation), captured
    on a side stream the current stream then waits for. Raises what capture raises."""
    import torch

    stream = torch.cuda.current_stream()
    n = len(launchers)
    graphs = []
    side = torch.cuda.Stream()
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        for j in range(n):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=side):
                for k in range(graph_launches):
                    launchers[(j + k) % n]()
            graphs.append(g)
    stream.wait_stream(side)
    torch.cuda.synchronize()
    return graphs


def benchmark(
    launchers: Sequence[Callable[[], Any]],
    *,
    warmup: int = 10,
    reps: int = 100,
    cuda_graph: bool = False,
    graph_launches: int = 20,
    range_name: str | None = None,
) -> TimingStats:
    """Time ``launchers`` (zero-argument callables that enqueue one kernel launch each on the
    current torch stream), rotating through them.

    Args:
        launchers: one per workspace; more than one gives cold-L2 timings.
        warmup: untimed launches first (JIT, clocks ramping, caches).
        reps: timed samples. Without ``cuda_graph`` one sample is one launch; with it, one
            sample is one graph replay of ``graph_launches`` launches, divided by that count.
        range_name: when given, an NVTX range of that name wraps the timed region.

    Returns:
        TimingStats in microseconds per launch.

    Raises:
        TimingError: a launcher is an uncompiled @cute.jit function, nothing ran (< 1 us), or
            no CUDA device is present.
    """
    import torch

    if not launchers:
        raise TimingError("no launchers to time")
    for fn in launchers:
        _check_launcher(fn)
    if not torch.cuda.is_available():
        raise TimingError("timing needs a CUDA GPU; none is visible to torch")
    from .annotate import nvtx_range

    stream = torch.cuda.current_stream()
    n = len(launchers)
    for i in range(warmup):
        launchers[i % n]()
    torch.cuda.synchronize()

    if cuda_graph:
        graphs = capture_graphs(launchers, graph_launches)
        for g in graphs:  # one untimed replay each
            g.replay()
        torch.cuda.synchronize()
        per_sample = graph_launches

        def step(i: int) -> None:
            graphs[i % len(graphs)].replay()
    else:
        per_sample = 1

        def step(i: int) -> None:
            launchers[i % n]()

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    from .clocks import ClockSampler

    with ClockSampler() as clk, nvtx_range(range_name):
        for i in range(reps):
            starts[i].record(stream)
            step(i)
            ends[i].record(stream)
        torch.cuda.synchronize()
    samples = [1000.0 * s.elapsed_time(e) / per_sample for s, e in zip(starts, ends, strict=True)]
    stats = summarize(
        samples, warmup=warmup, workspaces=n, cuda_graph=cuda_graph, graph_launches=per_sample
    )
    stats.clocks_during = clk.summary() or None
    return stats
