"""Implementations of one workload timed in one run, alternated: the comparison table.

``python -m kernelplan.alternate <workload> [package/kernel[:key=value,...] ...] [--problems
profile|check] [--problem KEY=VALUE,...] [--where KEY=VALUE ...] [--reps N] [--cuda-graph]
[--check]`` takes every implementation of the workload that runs on this GPU (or those named;
``:key=value,...`` after a name applies ``--config`` items to that implementation, so one
implementation may be named twice with different configs, e.g. ``mla_decode_sm90
mla_decode_sm90:loads=tma``; its table label and ``alternated_with`` entries carry
``[key=value,...]``), and for each problem it takes: checks it (with ``--check``: a failing
implementation is reported and left out of the timing), binds cold-L2 workspaces for each, then
times them in rounds, each round launching every implementation once between CUDA events, in the
orders of a carryover-balanced design (:func:`round_orders`: each implementation first equally
often and right after each other one equally often), so that clock and power drift, and what the
kernel launched just before leaves behind, fall on all of them alike. ``--where h=16``
(repeatable) keeps the problems whose field ``h`` is 16 (a field's value as the problem's record
writes it), to time one row of the table without the others; ``--problem b=128,t=4096,h=32``
(repeatable) times a problem of no list (fields left out take their defaults; a tuple as
``seqlens=[1,0]``). One ``benchmark`` record per implementation and problem (``alternated_with``
names the others and ``round_id`` ties them), and a markdown table (each implementation with
its build where its config resolves per problem) with the ratio of each to the
fastest: of the medians (``x fastest``) and the median of the per-round ratios (``x per round``:
each round's time over the same round's time of the entry with the lowest median, so it can fall
below 1), beside the busy SM clock's range over the run (``SM MHz``). When that range is wider
than :data:`CLOCK_SPREAD_NOTE` of its top, a note line says so: the medians then mix clocks, and
an entry whose pace follows the SM clock can trade places with one that does not (the MLA
devlog, "Session 15"; ``scripts/experiments/clock_split_medians.py`` splits such a run).
``--idle-ms MS`` lets the GPU idle MS milliseconds before each sample (drained, then a host
sleep), so that no sample runs under the power cap that back-to-back samples reach; the
records keep it as ``timing.idle_ms`` (0: back to back, the default).

Comparisons of implementations belong here, in one run; single-kernel timings of different
runs are not compared (the clocks differ: see ``knowledge/anti-patterns/
data-dependent-power-throttling.md``).
"""

from __future__ import annotations

import argparse
import math
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import device as devmod
from .errors import KernelPlanError
from .timing import TimingStats, capture_graphs, summarize

#: a busy SM clock range wider than this fraction of its top gets a note under the table
CLOCK_SPREAD_NOTE = 0.05
#: with ``idle_ms``: GPU cycles of the spin queued ahead of each sample's start event (0.1 ms
#: at 1980 MHz, up to 0.6 ms at an idle 345 MHz), longer than a launch's submission
IDLE_LEAD_CYCLES = 200_000


def per_round_ratio(samples: Sequence[float] | None, ref: Sequence[float] | None) -> float | None:
    """The median over rounds of ``samples[i] / ref[i]`` (both one time per round of the same
    alternated run, warmup excluded), over the rounds where both times are finite and
    positive; None when either is missing or empty, the lengths differ, or no round is left."""
    if not samples or not ref or len(samples) != len(ref):
        return None
    ratios = [
        a / b
        for a, b in zip(samples, ref, strict=True)
        if math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0
    ]
    return statistics.median(ratios) if ratios else None


def busy_clock_span(*clocks_during: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """(lowest, highest) busy SM clock in MHz over the samples of one or more
    ``clocks_during`` summaries (a timing's, as records keep it), or None when none holds a
    finite sample."""
    busy = [
        x
        for c in clocks_during
        for x in ((c or {}).get("busy_sm_mhz") or [])
        if isinstance(x, (int, float)) and math.isfinite(x)
    ]
    return (min(busy), max(busy)) if busy else None


def sm_clock_span(stats: Any) -> tuple[float, float] | None:
    """(lowest, highest) busy SM clock in MHz sampled during the run (``stats.clocks_during``),
    or None when the clock was not sampled."""
    return busy_clock_span(getattr(stats, "clocks_during", None))


def clock_note(problem: str, span: tuple[float, float] | None) -> str | None:
    """The note line for a problem whose run saw the busy SM clock span more than
    :data:`CLOCK_SPREAD_NOTE` of its top, else None."""
    if not span or span[1] <= 0 or (span[1] - span[0]) <= CLOCK_SPREAD_NOTE * span[1]:
        return None
    return (
        f"note: {problem}: the SM clock moved between {span[0]:.0f} and {span[1]:.0f} MHz "
        "during these rounds, so the medians mix clocks; 'x per round' compares each round's "
        "times (scripts/experiments/clock_split_medians.py splits the run)"
    )


def round_orders(n: int) -> list[list[int]]:
    """The launch orders of one cycle of rounds for ``n`` implementations (indices): a
    Williams design, a Latin square in which each index also follows every other exactly once
    (for odd ``n``, that square and its mirror, 2n rows, each pair twice). Rounds cycle through
    the rows. Until session 25 round i rotated one order by i, which kept each
    implementation's predecessor fixed, so that whatever one kernel leaves behind (the power
    drawn under a power cap, the L2's contents) would fall on the same next one every round.
    That was suspected when two builds of one split kernel (MLA steps 39 and 61 where nothing
    is cut, identical SASS) differed by 3.7% per round at h=128 (128, 4096) on an H100, and
    refuted by splitting those rounds by predecessor (``scripts/experiments/
    predecessor_split.py``: 1.037 after FlashInfer's kernel, 1.035 after step 39's; the MLA
    devlog, "Session 25"); the balanced order stays, as it costs nothing. Its balance holds
    within a round and over whole cycles of rows: a round's first launch follows the previous
    round's last, which the design does not balance, a ``reps`` that is not a multiple of the
    row count leaves the last cycle partial, and with ``cuda_graph`` each sample replays
    several launches of one entry, so inside a sample an entry follows itself. Williams,
    E. J. (1949), "Experimental designs balanced for the estimation of residual effects of
    treatments", Australian Journal of Scientific Research A 2(3)."""
    if n <= 1:
        return [list(range(n))]
    first, lo, hi = [0], 1, n - 1  # 0, 1, n-1, 2, n-2, ...
    while len(first) < n:
        if len(first) % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def alternate(
    launchers: dict[str, list[Callable[[], Any]]],
    *,
    warmup: int = 5,
    reps: int = 50,
    cuda_graph: bool = False,
    graph_launches: int = 10,
    idle_ms: float = 0.0,
) -> dict[str, TimingStats]:
    """Time several implementations in rounds: round ``i`` launches each once, in row
    ``i`` (cyclically) of :func:`round_orders`, each between two CUDA events; workspaces
    rotate per implementation.

    Args:
        launchers: label -> zero-argument launchers (one per workspace).
        cuda_graph: time CUDA-graph replays of ``graph_launches`` launches per sample.
        idle_ms: before each sample, wait for the GPU to drain and sleep this long on the
            host, so that every sample starts from an idle GPU (a power controller that
            capped the clock under sustained load has let go; the anti-pattern
            ``knowledge/anti-patterns/data-dependent-power-throttling.md``); 0 times the
            samples back to back, as a serving loop runs them.

    Returns:
        label -> TimingStats (microseconds per launch), or a KernelPlanError for an
        implementation whose launches could not be captured in a CUDA graph.
    """
    import torch

    from .clocks import ClockSampler

    labels = list(launchers)
    stream = torch.cuda.current_stream()
    for lab in labels:
        fns = launchers[lab]
        for i in range(warmup):
            fns[i % len(fns)]()
    torch.cuda.synchronize()
    steps: dict[str, Callable[[int], None]] = {}
    uncapturable: dict[str, str] = {}
    per_sample = graph_launches if cuda_graph else 1
    for lab in list(labels):
        fns = launchers[lab]
        if cuda_graph:
            try:
                graphs = capture_graphs(fns, graph_launches)
            except Exception as e:  # an implementation that cannot be captured is left out
                torch.cuda.synchronize()
                msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
                uncapturable[lab] = msg
                labels.remove(lab)
                continue
            steps[lab] = lambda i, gs=graphs: gs[i % len(gs)].replay()
        else:
            steps[lab] = lambda i, fs=fns: fs[i % len(fs)]()
    events = {lab: [] for lab in labels}
    orders = round_orders(len(labels))
    with ClockSampler() as clk:
        for i in range(reps):
            for lab in (labels[j] for j in orders[i % len(orders)]):
                if idle_ms > 0:
                    torch.cuda.synchronize()
                    time.sleep(idle_ms / 1000.0)
                    # a short spin ahead of the start event, so that the host's submission of
                    # the launch falls inside it and not between the two events
                    torch.cuda._sleep(IDLE_LEAD_CYCLES)
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(stream)
                steps[lab](i)
                e.record(stream)
                events[lab].append((s, e))
        torch.cuda.synchronize()
    clocks = clk.summary() or None
    out = {}
    for lab in labels:
        samples = [1000.0 * s.elapsed_time(e) / per_sample for s, e in events[lab]]
        st = summarize(
            samples,
            warmup=warmup,
            workspaces=len(launchers[lab]),
            cuda_graph=cuda_graph,
            graph_launches=per_sample,
        )
        st.clocks_during = clocks
        st.idle_ms = float(idle_ms)
        out[lab] = st
    for lab, why in uncapturable.items():
        out[lab] = KernelPlanError(f"CUDA graph capture failed: {why}")
    return out


#: one implementation ready to be timed: (plan, problem, config, target, kernel, launchers)
Entry = tuple


def prepare_entry(plan, problem, config, *, label: str, check: bool = True, log=print):
    """Check ``plan`` on ``problem`` with ``config`` (unless ``check`` is false; two launches,
    see :meth:`KernelPlan.run_check`), build its
    kernel and bind cold-L2 workspaces: the :data:`Entry` :func:`time_entries` takes, or
    ``None`` when the check failed (the failure logged as one ``FAIL`` line).

    Raises:
        KernelPlanError: the implementation cannot build or run this problem.
    """
    tgt = plan.target()
    if check:
        # two launches, the outputs poisoned again before the second: the timed launches
        # repeat the kernel, so what it keeps between launches is checked as well
        ok, results, _info = plan.run_check(problem, config, target=tgt, launches=2)
        if not ok:
            log(f"FAIL {label} {problem.label()}: " + "; ".join(r.line() for r in results))
            return None
    kernel = plan.kernel(problem, config, tgt)
    # several implementations hold their copies at once: a smaller share of memory
    n_ws = plan.cold_l2_workspaces(problem, memory_share=0.3)
    launchers = [kernel.bind(plan.prepare_inputs(problem, seed=i)) for i in range(n_ws)]
    return (plan, problem, config, tgt, kernel, launchers)


@dataclass
class Timed:
    """One entry's result of :func:`time_entries`."""

    label: str
    plan: Any
    problem: Any
    stats: TimingStats
    roofline: Any
    record_path: Any  # the record written, or None
    #: what the entry's config built for the problem (the plan's build_label), or None
    build: str | None = None

    @property
    def record_name(self) -> str:
        return self.record_path.name if self.record_path else "-"

    def cells(self) -> dict[str, str]:
        """The table's timing columns: median, p10-p90, TFLOP/s, GB/s."""
        st, roof = self.stats, self.roofline
        return {
            "median_us": f"{st.median_us:.1f}",
            "p10-p90_us": f"{st.p10_us:.1f}-{st.p90_us:.1f}",
            "TFLOP/s": f"{roof.tflops:.1f}",
            "GB/s": f"{roof.gbps:.0f}",
        }


def time_entries(
    entries: dict[str, Entry],
    *,
    device_name: str | None,
    warmup: int = 5,
    reps: int = 50,
    cuda_graph: bool = False,
    checked: bool = True,
    record: bool = True,
    results_dir=None,
    idle_ms: float = 0.0,
    log=print,
) -> list[Timed]:
    """Time ``entries`` (label -> :data:`Entry`) in ONE alternated run (:func:`alternate`) and
    write one ``benchmark`` record each (unless ``record`` is false): ``alternated_with``
    names the other entries, ``round_id`` ties them, ``launch_order`` gives the design and the
    entries in its index order (sample i was taken in row i of :func:`round_orders` of that
    many entries, cyclically), ``check`` is ``{"passed": True}`` when
    they were checked first. The entries may be of different problems (e.g. one kernel on
    two cache formats): then each ``alternated_with`` name carries its problem,
    ``"label (problem)"``. An entry that could not be captured in a CUDA graph is logged
    (``skip``) and left out. Returns the timed entries in the order given."""
    from .records import write_record

    if not entries:
        return []
    before = devmod.clocks_now()
    stats = alternate(
        {lab: e[5] for lab, e in entries.items()},
        warmup=warmup,
        reps=reps,
        cuda_graph=cuda_graph,
        idle_ms=idle_ms,
    )
    after = devmod.clocks_now()
    entries = dict(entries)
    for lab, st in list(stats.items()):
        if isinstance(st, KernelPlanError):
            log(f"skip {lab} {entries[lab][1].label()}: {st}")
            del stats[lab], entries[lab]
    one_problem = len({e[1].label() for e in entries.values()}) <= 1
    names = {lab: lab if one_problem else f"{lab} ({e[1].label()})" for lab, e in entries.items()}
    round_id = secrets.token_hex(4)
    out = []
    for lab, (plan, p, cfg, tgt, kernel, _l) in entries.items():
        st = stats[lab]
        roof = plan.roofline_for(p, st.median_us, device_name)
        rec = plan.record_base("benchmark", p, cfg, tgt)
        rec.update(
            timing=st.to_dict(),
            roofline=roof.to_dict(),
            clocks={"before": before, "after": after},
            kernel_meta=getattr(kernel, "meta", None) or None,
            alternated_with=[names[x] for x in entries if x != lab],
            host_launch_hidden=cuda_graph,
            round_id=round_id,
            launch_order={"design": "williams", "entries": [names[x] for x in entries]},
            check={"passed": True} if checked else None,
        )
        path = write_record(rec, results_dir) if record else None
        out.append(Timed(lab, plan, p, st, roof, path, rec.get("build")))
    return out


def split_items(text: str) -> list[str]:
    """``a=1,b=[2,3],c=4`` -> ``["a=1", "b=[2,3]", "c=4"]``: split at the commas outside
    brackets, so that a tuple value may be written ``[2,3]``."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth = max(depth - 1, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse_items(spec: str, text: str, what: str) -> dict[str, str]:
    """The ``key=value`` items of ``text`` (comma-separated, see :func:`split_items`), as
    strings; ``spec`` and ``what`` ("config items after ':'", "--problem") name them in the
    error.

    Raises:
        KernelPlanError: an item without ``=``, an empty key, or a key given twice.
    """
    items: dict[str, str] = {}
    for part in split_items(text):
        key, eq, val = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise KernelPlanError(f"{spec!r}: {what} are key=value, comma-separated (got {part!r})")
        if key in items:
            raise KernelPlanError(f"{spec!r}: key {key!r} given twice")
        items[key] = val.strip()
    return items


def parse_impl_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``ref[:key=value[,key=value...]]`` -> (ref, config overrides). ``ref`` is what
    :func:`~kernelplan.report.resolve_implementation` takes (``package/kernel`` or a bare
    kernel name); the items are ``--config`` strings, parsed later by the implementation's
    config type.

    Raises:
        KernelPlanError: an item without ``=``, an empty key, or a key given twice.
    """
    ref, sep, rest = spec.partition(":")
    if not ref:
        raise KernelPlanError(f"{spec!r}: no implementation before ':'")
    return ref, (parse_items(spec, rest, "config items after ':'") if sep else {})


def parse_problems(workload, specs: Sequence[str]) -> list:
    """``--problem`` specs (``b=128,t=4096,h=32``; fields left out take the problem's
    defaults) -> the workload's problems, each value parsed by its field's type.

    Raises:
        KernelPlanError: an item without ``=`` or a key given twice; ShapeError: an unknown
            field, a value of the wrong type or a problem the workload rejects (one line
            naming the field).
    """
    return [
        workload.problem_type.from_overrides(None, parse_items(spec, spec, "--problem items"))
        for spec in specs
    ]


def impl_label(package: str, kernel: str, overrides: dict[str, str]) -> str:
    """The table's name of an implementation: ``package/kernel``, and ``[k=v,...]`` when
    config items were given."""
    base = f"{package}/{kernel}"
    if not overrides:
        return base
    return base + "[" + ",".join(f"{k}={v}" for k, v in overrides.items()) + "]"


def run_table(
    workload: str,
    impls: Sequence[str] = (),
    *,
    problems: str = "profile",
    reps: int = 50,
    warmup: int = 5,
    cuda_graph: bool = False,
    check: bool = True,
    results_dir=None,
    record: bool = True,
    where: Sequence[str] = (),
    problem: Sequence[str] = (),
    idle_ms: float = 0.0,
    log=print,
) -> int:
    """The comparison table of ``workload`` on this GPU (see the module docstring). Returns
    the exit code: 1 when an implementation failed its check."""
    from .records import ensure_writable
    from .registry import implementations, load_plan_class
    from .report import resolve_implementation
    from .tables import markdown
    from .workloads import get

    wl = get(workload)
    # the problem list (--problem's own problems in place of the named list) and the --where
    # filter, checked before the GPU is looked for
    if problem:
        listed, problems = parse_problems(wl, problem), "--problem"
    else:
        listed = wl.profile_problems() if problems == "profile" else wl.check_problems()
    probs = select_problems(listed, where, problems)
    # implementations and their config items, checked before the GPU is looked for (a typo
    # in a key or a value is one line on any machine)
    specs = [parse_impl_spec(r) for r in impls]
    chosen = [(*resolve_implementation(r, workload), ov) for r, ov in specs] or [
        (pkg, k, {}) for pkg, k in implementations(workload)
    ]
    labels = [impl_label(pkg, k, ov) for pkg, k, ov in chosen]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise KernelPlanError(f"implementation named twice with the same config: {', '.join(dup)}")
    for pkg, k, ov in chosen:
        if ov:
            load_plan_class(pkg, k).config_type.from_overrides(None, ov)
    dev = devmod.current_device()
    if dev is None:
        raise KernelPlanError("the comparison table needs a CUDA GPU; none is visible")
    if record:
        ensure_writable(results_dir)
    plans = []
    for pkg, k, ov in chosen:
        plan = load_plan_class(pkg, k)()
        try:
            devmod.require_plan_runs_on(plan, dev)
        except devmod.ArchMismatch as e:
            log(f"skip: {e}")
            continue
        plans.append((plan, ov))
    log(f"device: {dev.name} ({dev.sm}); {len(plans)} implementation(s) of {workload}")
    if idle_ms > 0:
        log(
            f"timing: every sample starts from an idle GPU (--idle-ms {idle_ms:g}: drained, "
            "then a host sleep), not back to back"
        )
    rows, notes, failed = [], [], 0
    for prob in probs:
        entries = {}
        for plan, ov in plans:
            if not plan.takes(prob):
                continue
            p = plan.problem(prob.to_dict())
            label = impl_label(plan.package, plan.name, ov)
            try:
                entry = prepare_entry(
                    plan, p, plan.config(p, ov), label=label, check=check, log=log
                )
            except KernelPlanError as e:
                log(f"skip {label} {p.label()}: {e}")
                continue
            if entry is None:
                failed += 1
                continue
            entries[label] = entry
        timed = time_entries(
            entries,
            device_name=dev.name,
            warmup=warmup,
            reps=reps,
            cuda_graph=cuda_graph,
            checked=check,
            record=record,
            results_dir=results_dir,
            idle_ms=idle_ms,
            log=log,
        )
        rows.extend(table_rows(timed))
        note = clock_note(prob.label(), sm_clock_span(timed[0].stats) if timed else None)
        if note:
            notes.append(note)
    log(markdown(rows))
    for note in notes:
        log(note)
    return 1 if failed else 0


def table_rows(timed: Sequence[Timed]) -> list[dict[str, str]]:
    """The table's rows for the entries of one alternated run: the implementation with its
    build where the plan names one (``mla/mla_decode_sm90 (seesaw step 67)``), the timing
    columns, the ratio of each median to the fastest median, the median per-round ratio to
    the fastest entry (``-`` when the rounds do not line up), the busy SM clock range and the
    record."""
    if not timed:
        return []
    fastest = min(timed, key=lambda t: t.stats.median_us)
    rows = []
    for t in timed:
        r = per_round_ratio(t.stats.samples_us, fastest.stats.samples_us)
        span = sm_clock_span(t.stats)
        rows.append(
            {
                "problem": t.problem.label(),
                # the build too, where the config resolves per problem (a default step)
                "implementation": f"{t.label} ({t.build})" if t.build else t.label,
                **t.cells(),
                "x fastest": f"{t.stats.median_us / fastest.stats.median_us:.2f}",
                "x per round": "-" if r is None else f"{r:.3f}",
                "SM MHz": "-" if span is None else f"{span[0]:.0f}-{span[1]:.0f}",
                "record": t.record_name,
            }
        )
    return rows


def select_problems(probs: list, where: Sequence[str], kind: str = "profile") -> list:
    """The problems whose fields match every ``KEY=VALUE`` of ``where`` (the value compared
    as text with the field's value in ``problem.to_dict()``; all of them without ``where``).
    Raises KernelPlanError for an item without ``=``, a key no problem has, or a filter that
    keeps none (naming the values there are)."""
    keep = list(probs)
    for item in where:
        key, eq, want = item.partition("=")
        if not eq or not key:
            raise KernelPlanError(f"--where takes KEY=VALUE (got {item!r})")
        fields = [p.to_dict() for p in probs]
        if not any(key in f for f in fields):
            names = sorted({k for f in fields for k in f})
            raise KernelPlanError(
                f"--where {item}: the {kind} problems have no field {key!r} "
                f"(they have: {', '.join(names)})"
            )
        keep = [p for p in keep if str(p.to_dict().get(key)) == want]
        if not keep:
            seen = sorted({str(f.get(key)) for f in fields})
            raise KernelPlanError(
                f"--where {item}: no {kind} problem has {key}={want} "
                f"(values there: {', '.join(seen)})"
            )
    return keep


def main(argv: Sequence[str] | None = None) -> int:
    from .cli import die

    p = argparse.ArgumentParser(prog="python -m kernelplan.alternate")
    p.add_argument("workload")
    p.add_argument(
        "impls",
        nargs="*",
        help="package/kernel or a unique kernel name, optionally with config items: "
        "kernel:key=value,key=value",
    )
    p.add_argument("--problems", choices=("profile", "check"), default="profile")
    p.add_argument(
        "--where", action="append", default=[], metavar="KEY=VALUE",
        help="keep the problems whose field KEY is VALUE (repeatable), e.g. --where h=16",
    )  # fmt: skip
    p.add_argument(
        "--problem", action="append", default=[], metavar="KEY=VALUE,...",
        help="time this problem instead of the --problems list (repeatable; fields left out "
        "take their defaults), e.g. --problem b=128,t=4096,h=32",
    )  # fmt: skip
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--cuda-graph", action="store_true")
    p.add_argument(
        "--idle-ms", type=float, default=0.0, metavar="MS",
        help="let the GPU idle this many milliseconds before each sample (drain, then a host "
        "sleep), so that no sample runs under the power cap that back-to-back samples reach; "
        "default 0: back to back",
    )  # fmt: skip
    p.add_argument("--no-check", action="store_true")
    p.add_argument("--no-record", action="store_true")
    p.add_argument("--results-dir", default=None)
    a = p.parse_args(argv)
    if not (a.idle_ms >= 0 and math.isfinite(a.idle_ms)) or a.idle_ms > 10_000:
        return die(f"--idle-ms takes a number of milliseconds from 0 to 10000 (got {a.idle_ms})")
    try:
        return run_table(
            a.workload,
            a.impls,
            problems=a.problems,
            reps=a.reps,
            warmup=a.warmup,
            cuda_graph=a.cuda_graph,
            check=not a.no_check,
            results_dir=a.results_dir,
            record=not a.no_record,
            where=a.where,
            problem=a.problem,
            idle_ms=a.idle_ms,
        )
    except KernelPlanError as e:
        return die(str(e))


if __name__ == "__main__":
    sys.exit(main())
