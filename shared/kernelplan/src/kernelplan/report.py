"""Tables and plots from result records: the comparison table, timing fidelity, reports.

    python -m kernelplan.report compare <workload|package> <impl A> <impl B> [--problem k=v ...]
    python -m kernelplan.report compare <package>/<A> <package>/<B> [--problem k=v ...]
    python -m kernelplan.report compare <record A.json> <record B.json>
    python -m kernelplan.report fidelity <package> [--record]
    python -m kernelplan.report report <workload|package> [--out DIR] [--focus IMPL]
    python -m kernelplan.report best-config <package> <kernel> [--problem k=v ...]

Comparisons and reports are across the implementations of one *workload*, whatever package
they live in (:func:`implementations`). An implementation is named ``package/kernel``, or by
its bare kernel name where that is unique in the scope (the workload's implementations, or
the package's kernels). Records of schema 1 carry no ``workload``: it is derived from the
implementation's class through the registry, and their problem and config are read back as
the workload's and implementation's dataclasses (:func:`normalized`), so that records of
either schema of the same problem match.

``compare`` renders the request's table (time, TC%, DRAM%, occupancy, registers/thread,
SMEM/block, difference, insight) from the newest ``ncu`` record of each side and, for the time,
the harness's median from the matching ``benchmark`` record (the one with the same
``pair_id``, else the newest of the same kernel, problem and config). Where a side has no ncu
record but both have ``static`` records (compiled on any machine), it renders the static
columns instead (registers, spills, SMEM, SASS instruction mix; :func:`static_compare_table`).

``fidelity`` pairs each newest ``ncu`` record with its harness record: ratio = harness median
/ ncu ``gpu__time_duration``; for kernels of 50 us or more it must lie within 3% of 1 under
the same clock policy (ncu ``--clock-control none``, the harness's clocks as found), and the
harness's spread must stay within 2%: the within-run spread (p90 - p10) / median, and the
run-to-run spread (max - min) / median of the medians of the harness runs of the same
(kernel, problem, config) taken within ten minutes of the paired one. The SM clocks each saw
(NVML median during the harness run, ncu's ``sm__cycles_elapsed.avg.per_second``) give a
clock-normalised ratio, which says how much of a gap is the clock alone.

``report`` writes ``results/<package>/report/report.md`` (``results/workloads/<workload>/
report/`` for a workload) and PNG plots beside it (matplotlib, Agg backend), one section per
workload: the roofline (achieved TFLOP/s against arithmetic intensity on the device's
roof from ``kernelplan.roofline.PEAKS``) and time and TFLOP/s against problem size per kernel.
It writes only there, never a record (``fidelity --record`` writes new ``fidelity`` records).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import math
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import KernelPlanError
from .tables import markdown as _markdown

FIDELITY_MIN_US = 50.0
FIDELITY_TOL_PCT = 3.0
SPREAD_TOL_PCT = 2.0
SESSION_WINDOW_S = 600.0
#: Shared memory per SM (KB) by SM, for the "CTAs per SM" remark (CUDA programming guide,
#: compute capabilities table).
SMEM_PER_SM_KB = {
    "sm_80": 164,
    "sm_86": 100,
    "sm_87": 164,
    "sm_89": 100,
    "sm_90": 228,
    "sm_100": 228,
    "sm_103": 228,
    "sm_120": 100,
}

Rec = tuple[Path, dict]


# -- picking records -----------------------------------------------------------------------
def _canon(d: Mapping[str, Any] | None) -> str:
    return json.dumps(d or {}, sort_keys=True, default=str)


def rec_key(rec: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        rec.get("package", ""),
        rec.get("kernel", ""),
        _canon(rec.get("problem")),
        _canon(rec.get("config")),
    )


def _created(rec: Mapping[str, Any]) -> _dt.datetime:
    try:
        return _dt.datetime.fromisoformat(rec.get("created_utc", ""))
    except ValueError:
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)


def _matches(problem: Mapping[str, Any], filt: Mapping[str, Any] | None) -> bool:
    return all(str(problem.get(k)) == str(v) for k, v in (filt or {}).items())


Impl = tuple[str, str]


def _is(rec: Mapping[str, Any], impl: Impl | str | None) -> bool:
    """Whether ``rec`` is of ``impl``: a (package, kernel) pair or a bare kernel name."""
    if not impl:
        return True
    if isinstance(impl, str):
        return rec.get("kernel") == impl
    return (rec.get("package"), rec.get("kernel")) == tuple(impl)


def newest(
    records: Sequence[Rec],
    *,
    kind: str,
    kernel: Impl | str | None = None,
    problem: Mapping[str, Any] | None = None,
    exact_problem: Mapping[str, Any] | None = None,
) -> Rec | None:
    """The newest record of ``kind`` (and of the implementation ``kernel``: a (package,
    kernel) pair or a bare name) whose problem contains ``problem`` or equals
    ``exact_problem``."""
    best = None
    for p, r in records:
        if r.get("kind") != kind or not _is(r, kernel):
            continue
        if not _matches(r.get("problem") or {}, problem):
            continue
        if exact_problem is not None and _canon(r.get("problem")) != _canon(exact_problem):
            continue
        if best is None or (_created(r), str(p)) >= (_created(best[1]), str(best[0])):
            best = (p, r)
    return best


def _cold_l2(bench: Mapping[str, Any]) -> bool:
    return int((bench.get("timing") or {}).get("workspaces", 1)) > 1


def harness_for(ncu: Mapping[str, Any], records: Sequence[Rec]) -> Rec | None:
    """The benchmark record to set beside an ncu record: same ``pair_id``, else the newest of
    the same kernel, problem and config (and the same cold/warm L2)."""
    pid = ncu.get("pair_id")
    benches = [(p, r) for p, r in records if r.get("kind") == "benchmark" and r.get("timing")]
    if pid:
        for p, r in benches:
            if r.get("pair_id") == pid:
                return p, r
    cold = ((ncu.get("ncu") or {}).get("child") or {}).get("cold_l2", True)
    same = [(p, r) for p, r in benches if rec_key(r) == rec_key(ncu) and _cold_l2(r) == cold]
    return max(same, key=lambda pr: (_created(pr[1]), str(pr[0]))) if same else None


def _load(root: Path | None, package: str | None = None) -> list[Rec]:
    """The records under ``root`` (of ``package``), normalised (:func:`normalized`)."""
    from .records import load_records

    return [(p, normalized(r)) for p, r in load_records(root, package)]


# -- workloads and their implementations ---------------------------------------------------
_CLASSES: dict[Impl, Any] = {}


def implementation_class(package: str | None, kernel: str | None):
    """The KernelPlan class of ``package``/``kernel``, or None where the registry does not
    have it (a retired kernel, an experiment's record)."""
    key = (package or "", kernel or "")
    if key not in _CLASSES:
        from .registry import load_plan_class

        try:
            _CLASSES[key] = load_plan_class(*key)
        except Exception:  # unknown package or kernel, or one that no longer imports
            _CLASSES[key] = None
    return _CLASSES[key]


def workload_of(rec: Mapping[str, Any]) -> str | None:
    """The record's workload: its own field (schema 2), else its implementation's through
    the registry (schema 1), else None."""
    if rec.get("workload"):
        return rec["workload"]
    cls = implementation_class(rec.get("package"), rec.get("kernel"))
    wl = getattr(cls, "workload", None)
    return getattr(wl, "name", None)


def normalized(rec: Mapping[str, Any]) -> dict[str, Any]:
    """``rec`` with ``workload`` set (:func:`workload_of`) and, where they parse, its problem
    as the dataclass of today writes it (schema 1 problems lack fields added since, such as
    ``init``; also where the config no longer parses) and its config as written, values
    normalised (schema 1 configs held
    ``sm_count``; config fields added since are left out, not given today's default). The
    file is not touched."""
    from .records import record_problem_config

    out = dict(rec)
    wl = workload_of(rec)
    if wl:
        out["workload"] = wl
    cls = implementation_class(rec.get("package"), rec.get("kernel"))
    if cls is not None and rec.get("problem") is not None:
        plan = pc = None
        try:
            plan = cls()
            pc = record_problem_config(plan, rec)
        except Exception:  # an adapter that cannot be built here: keep the record as written
            pass
        if pc is not None:
            # the config as recorded: a field added since the record was written keeps no
            # value (today's default need not be what ran: mla_decode_sm90's ``schedule``
            # default became seesaw after its lockstep records were written)
            written = rec.get("config") or {}
            out["problem"] = pc[0].to_dict()
            out["config"] = {k: v for k, v in pc[1].to_dict().items() if k in written}
        elif plan is not None:
            # a config that no longer parses (a step since removed): the problem alone still
            # is today's, so the record matches the same problem written later (one that no
            # longer parses either stays as written)
            with contextlib.suppress(Exception):
                out["problem"] = plan.workload.problem(rec["problem"]).to_dict()
    return out


def _is_workload(name: str) -> bool:
    from .workloads import WORKLOADS

    return name in WORKLOADS


def scope_implementations(scope: str) -> list[Impl]:
    """The implementations of a workload (``gemm``) or the kernels of a package
    (``gemm-tutorial``); a name that is both is the workload.

    Raises:
        KernelPlanError: neither a workload nor a package.
    """
    if _is_workload(scope):
        from .registry import implementations

        return implementations(scope)
    from .registry import kernel_names

    return [(scope, k) for k in kernel_names(scope)]


def resolve_implementation(ref: str, scope: str | None = None) -> Impl:
    """``package/kernel``, or a bare kernel name unique among ``scope``'s implementations
    (a workload's, or a package's kernels), as (package, kernel).

    Raises:
        KernelPlanError: an unknown package or kernel, a bare name no implementation of the
            scope has, or one that several packages have (the message lists them).
    """
    from .registry import load_plan_class

    if "/" in ref:
        pkg, kernel = ref.split("/", 1)
        load_plan_class(pkg, kernel)  # a typo is an error, not a missing profile
        return pkg, kernel
    if scope is None:
        raise KernelPlanError(f"{ref!r}: name it as package/kernel")
    cands = scope_implementations(scope)
    hits = [c for c in cands if c[1] == ref]
    if len(hits) == 1:
        return hits[0]
    what = f"workload {scope}" if _is_workload(scope) else f"package {scope}"
    if not hits:
        if not _is_workload(scope):
            load_plan_class(scope, ref)  # the registry's own message lists the kernels
        known = ", ".join(f"{p}/{k}" for p, k in cands)
        raise KernelPlanError(f"unknown {scope} kernel {ref!r}; the {what} has: {known}")
    raise KernelPlanError(
        f"{ref!r} is ambiguous in the {what}: {', '.join(f'{p}/{k}' for p, k in hits)}; "
        "name it as package/kernel"
    )


def impl_label(impl: Impl, other: Impl | None = None) -> str:
    """``kernel``, or ``package/kernel`` where the two sides' packages differ."""
    if other is not None and other[0] != impl[0]:
        return f"{impl[0]}/{impl[1]}"
    return impl[1]


def _read(path: str | Path) -> Rec:
    p = Path(path)
    try:
        rec = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise KernelPlanError(f"cannot read the record {p}: {e}") from None
    if not isinstance(rec, dict) or "kind" not in rec:
        raise KernelPlanError(f"{p} is not a result record (no 'kind')")
    return p, rec


# -- formatting -----------------------------------------------------------------------------
def _f(v: Any, nd: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, (int, float)):
        return f"{v:,.{nd}f}".replace(",", "")
    return str(v)


def short_problem(problem: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in problem.items())


# -- the comparison table -------------------------------------------------------------------
@dataclass
class Side:
    """One column of the comparison: an ncu record and (optionally) its harness record."""

    label: str
    ncu: Mapping[str, Any] | None
    ncu_path: Path | None = None
    bench: Mapping[str, Any] | None = None
    bench_path: Path | None = None

    def m(self, name: str) -> float | None:
        return (((self.ncu or {}).get("ncu") or {}).get("metrics") or {}).get(name)

    @property
    def n(self) -> Mapping[str, Any]:
        return (self.ncu or {}).get("ncu") or {}

    def time_us(self) -> tuple[float | None, str]:
        if self.bench and (self.bench.get("timing") or {}).get("median_us"):
            return self.bench["timing"]["median_us"], "harness"
        return self.n.get("duration_us"), "ncu"

    def smem_kb(self) -> float | None:
        b = self.m("smem_per_block_bytes")
        return b / 1024 if b is not None else None

    def bound(self) -> str:
        """From Speed Of Light: the busier of compute (SM) and memory, when above 60%."""
        sm, mem = self.m("sm_throughput_pct"), self.m("memory_throughput_pct")
        if sm is None and mem is None:
            return "unknown"
        sm, mem = sm or 0.0, mem or 0.0
        if max(sm, mem) < 60:
            return f"latency-bound (SM {sm:.0f}%, memory {mem:.0f}% of peak)"
        if abs(sm - mem) < 5:
            return (
                f"both compute and memory near their limits by ncu's Speed Of Light (SM "
                f"{sm:.0f}%, memory {mem:.0f}%, which counts L1/SMEM and L2 as well as DRAM)"
            )
        if sm >= mem:
            return f"compute-bound by ncu's Speed Of Light (SM {sm:.0f}% >= memory {mem:.0f}%)"
        # ncu's memory throughput counts L1/SMEM and L2 as well as DRAM
        return f"memory-bound by ncu's Speed Of Light (memory {mem:.0f}% > SM {sm:.0f}%)"

    def throttled(self) -> dict[str, Any] | None:
        thr = (self.bench or {}).get("throttle") or {}
        return thr if thr.get("throttled") else None


def _diff(kind: str, a: float | None, b: float | None, nb: str) -> str:
    if a is None or b is None:
        return "n/a"
    if kind == "time":
        if a <= 0 or b <= 0:
            return "n/a"
        rel = 100.0 * (b - a) / a
        word = "faster" if b < a else "slower"
        return f"{nb} {abs(rel):.1f}% {word} ({a / b:.2f}x)"
    d = b - a
    unit = {"pct": " pts", "count": "", "kb": " KB"}[kind]
    nd = 0 if kind == "count" else 1
    if round(d, nd) == 0:
        return "same"
    return f"{nb} {d:+.{nd}f}{unit}"


def _insight_time(a: Side, b: Side) -> str:
    (ta, _), (tb, _) = a.time_us(), b.time_us()
    if ta is None or tb is None:
        return "time missing on one side"
    rel = 100.0 * abs(tb - ta) / ta
    faster = a.label if ta < tb else b.label
    spreads = [
        (s.bench.get("timing") or {}).get("spread_pct") for s in (a, b) if s.bench is not None
    ]
    spreads = [x for x in spreads if x is not None]
    parts = []
    if spreads and rel <= max(spreads):
        parts.append(f"{rel:.1f}% apart, within the runs' spread ({max(spreads):.1f}%): a tie")
    else:
        parts.append(f"{faster} is {rel:.1f}% faster")
    roof = (a.bench or b.bench or {}).get("roofline") or {}
    if roof.get("bound") and roof.get("intensity") and roof.get("peak_tflops"):
        ridge = roof["peak_tflops"] * 1e3 / roof["peak_gbps"] if roof.get("peak_gbps") else None
        parts.append(
            f"the workload is {roof['bound']}-bound on the roofline (intensity "
            f"{roof['intensity']:.0f} FLOP/B" + (f", ridge {ridge:.0f})" if ridge else ")")
        )
    thr = [s for s in (a, b) if s.throttled()]
    for s in thr:
        t = s.throttled()
        parts.append(
            f"{s.label}'s run was clock-throttled (SM {t.get('min_busy_sm_mhz')} MHz, "
            f"{', '.join(t.get('reasons') or []) or 'no reason given'})"
        )
    return "; ".join(parts)


def _insight_tc(a: Side, b: Side) -> str:
    x, y = a.m("tensor_pipe_pct"), b.m("tensor_pipe_pct")
    if x is None or y is None:
        return "tensor-pipe metric missing (ComputeWorkloadAnalysis)"
    if min(x, y) >= 70:
        return "both keep the tensor pipe busy (>= 70%): bound by the MMA units"
    if max(x, y) < 30:
        return "tensor pipe mostly idle on both: not MMA-bound"
    if abs(x - y) >= 5:
        hi, lo = (a, b) if x > y else (b, a)
        return f"{hi.label} keeps the tensor pipe busier: more of its cycles issue MMA"
    return "similar tensor-pipe use"


def _insight_dram(a: Side, b: Side) -> str:
    x, y = a.m("dram_throughput_pct"), b.m("dram_throughput_pct")
    if x is None or y is None:
        return "DRAM metric missing"
    parts = []
    if max(x, y) >= 70:
        hi = a if x >= y else b
        parts.append(f"{hi.label} is near the HBM bandwidth limit")
    elif max(x, y) < 40:
        parts.append("DRAM far from its limit on both: not memory-bound")
    else:
        parts.append("moderate DRAM traffic")
    la, lb = a.m("l2_hit_rate_pct"), b.m("l2_hit_rate_pct")
    if la is not None and lb is not None and abs(la - lb) >= 5:
        hi = a if la > lb else b
        parts.append(
            f"{hi.label} reuses more from L2 (hit rate {max(la, lb):.0f}% vs {min(la, lb):.0f}%)"
        )
    return "; ".join(parts)


def _insight_occ(a: Side, b: Side) -> str:
    x, y = a.m("achieved_occupancy_pct"), b.m("achieved_occupancy_pct")
    if x is None or y is None:
        return "occupancy missing"
    if max(x, y) < 25:
        return (
            "low on both: few, large CTAs per SM; latency is hidden inside a CTA (pipelined "
            "asynchronous copies and MMA), not by many resident warps"
        )
    if abs(x - y) >= 5:
        hi = a if x > y else b
        return f"{hi.label} keeps more warps resident per SM"
    return "similar occupancy"


def _insight_regs(a: Side, b: Side) -> str:
    x, y = a.m("registers_per_thread"), b.m("registers_per_thread")
    if x is None or y is None:
        return "registers missing"
    parts = []
    if max(x, y) >= 255:
        parts.append("at the 255-register cap: check for spills")
    elif max(x, y) >= 168:
        hi = a if x >= y else b
        parts.append(f"{hi.label} is register-heavy (large accumulator fragments per thread)")
    if x != y:
        hi = a if x > y else b
        parts.append(f"{hi.label} uses {abs(x - y):.0f} more per thread")
    return "; ".join(parts) or "same register budget"


def _insight_smem(a: Side, b: Side, sm: str | None) -> str:
    x, y = a.smem_kb(), b.smem_kb()
    if x is None or y is None:
        return "SMEM missing"
    per_sm = SMEM_PER_SM_KB.get(sm or "")
    parts = []
    if per_sm:
        ca = int(per_sm // x) if x > 0 else None
        cb = int(per_sm // y) if y > 0 else None
        parts.append(f"CTAs/SM allowed by SMEM ({per_sm} KB/SM): {a.label} {ca}, {b.label} {cb}")
    if abs(x - y) >= 1:
        hi = a if x > y else b
        parts.append(f"{hi.label} stages more data on chip (deeper pipeline or larger tiles)")
    return "; ".join(parts) or "same SMEM"


def compare_table(a: Side, b: Side) -> str:
    """The request's comparison table (markdown) with a summary and the sources."""
    if a.ncu is None or b.ncu is None:
        raise KernelPlanError("compare needs an ncu record on each side")
    prob = a.ncu.get("problem") or {}
    dev = (a.ncu.get("device") or {}).get("name") or "?"
    sm = (a.ncu.get("device") or {}).get("sm")
    (ta, sa), (tb, sb) = a.time_us(), b.time_us()
    time_src = "harness median" if sa == sb == "harness" else f"{a.label}: {sa}, {b.label}: {sb}"
    rows = [
        ("Time (us)", ta, tb, "time", 1, _insight_time(a, b)),
        ("TC%", a.m("tensor_pipe_pct"), b.m("tensor_pipe_pct"), "pct", 1, _insight_tc(a, b)),
        (
            "DRAM%",
            a.m("dram_throughput_pct"),
            b.m("dram_throughput_pct"),
            "pct",
            1,
            _insight_dram(a, b),
        ),
        (
            "Occupancy (%)",
            a.m("achieved_occupancy_pct"),
            b.m("achieved_occupancy_pct"),
            "pct",
            1,
            _insight_occ(a, b),
        ),
        (
            "Registers/thread",
            a.m("registers_per_thread"),
            b.m("registers_per_thread"),
            "count",
            0,
            _insight_regs(a, b),
        ),
        ("SMEM/block (KB)", a.smem_kb(), b.smem_kb(), "kb", 1, _insight_smem(a, b, sm)),
    ]
    extra = [
        ("ncu duration (us)", a.n.get("duration_us"), b.n.get("duration_us"), "time", 1),
        ("SM throughput (%)", a.m("sm_throughput_pct"), b.m("sm_throughput_pct"), "pct", 1),
        ("L2 hit rate (%)", a.m("l2_hit_rate_pct"), b.m("l2_hit_rate_pct"), "pct", 1),
        ("SM clock under ncu (MHz)", a.m("sm_clock_mhz"), b.m("sm_clock_mhz"), "count", 0),
    ]
    lines = [
        f"### {a.label} vs {b.label}: {short_problem(prob)} on {dev}",
        "",
        f"| Metric | {a.label} | {b.label} | Difference | Insight |",
        "|---|---|---|---|---|",
    ]
    for label, x, y, kind, nd, insight in rows:
        lines.append(
            f"| {label} | {_f(x, nd)} | {_f(y, nd)} | {_diff(kind, x, y, b.label)} | {insight} |"
        )
    for label, x, y, kind, nd in extra:
        lines.append(f"| {label} | {_f(x, nd)} | {_f(y, nd)} | {_diff(kind, x, y, b.label)} | |")
    st = [s["reason"] for s in a.n.get("stalls") or []][:3]
    st_b = [s["reason"] for s in b.n.get("stalls") or []][:3]
    lines.append(f"| Top warp stalls | {', '.join(st) or 'n/a'} | {', '.join(st_b) or 'n/a'} | | |")
    lines += [
        "",
        f"{a.label}: {a.bound()}; {b.label}: {b.bound()}.",
    ]
    for s in (a, b):
        if not s.n.get("complete", False):
            lines.append(f"**{s.label}: incomplete ncu record** ({s.n.get('incomplete_reason')}).")
    lines += [
        "",
        f"Time: {time_src} (CUDA events per launch, cold L2, clocks as found); ncu: "
        f"gpu__time_duration with --clock-control {a.n.get('clock_control', '?')}/"
        f"{b.n.get('clock_control', '?')}, --cache-control {a.n.get('cache_control', '?')}, "
        f"metrics of the kernel taking most of the time ({a.n.get('primary_kernel', '?')}; "
        f"{b.n.get('primary_kernel', '?')}).",
        "",
        "Sources: " + "; ".join(_sources(s) for s in (a, b)),
    ]
    return "\n".join(lines) + "\n"


def _shown(path: Path) -> str:
    """A record path as a reader finds it: relative to the working folder where it can be."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _sources(s: Side) -> str:
    if s.ncu_path:
        parts = [f"{s.label}: ncu `{_shown(s.ncu_path)}`"]
    else:
        parts = [f"{s.label}: ncu (no path)"]
    if s.bench_path:
        parts.append(f"harness `{_shown(s.bench_path)}`")
    return ", ".join(parts)


def side_from_record(
    path: Path, rec: Mapping[str, Any], records: Sequence[Rec], label: str | None = None
) -> Side:
    """A side from a record path: an ncu record (and its harness record), or a benchmark
    record (and the newest ncu record of the same kernel, problem and config)."""
    label = label or rec.get("kernel", path.stem)
    if rec.get("kind") == "ncu":
        h = harness_for(rec, records)
        return Side(label, rec, path, h[1] if h else None, h[0] if h else None)
    if rec.get("kind") == "benchmark":
        same = [(p, r) for p, r in records if r.get("kind") == "ncu" and rec_key(r) == rec_key(rec)]
        n = max(same, key=lambda pr: (_created(pr[1]), str(pr[0]))) if same else None
        if n is None:
            raise KernelPlanError(
                f"no ncu record of {label} at {short_problem(rec.get('problem') or {})} with "
                f"config {_canon(rec.get('config'))}: run it with --prof_type ncu first"
            )
        return Side(label, n[1], n[0], rec, path)
    raise KernelPlanError(f"{path}: a {rec.get('kind')} record; compare takes ncu or benchmark")


def _labels(a: Impl | str, b: Impl | str) -> tuple[str, str]:
    if isinstance(a, str) or isinstance(b, str):
        return (a if isinstance(a, str) else a[1]), (b if isinstance(b, str) else b[1])
    return impl_label(a, b), impl_label(b, a)


def compare_kernels(
    records: Sequence[Rec],
    kernel_a: Impl | str,
    kernel_b: Impl | str,
    problem: Mapping[str, Any] | None,
) -> tuple[Side, Side]:
    """Newest ncu record of A matching ``problem``; B's newest at exactly A's problem. A and
    B are (package, kernel) pairs (of any packages) or bare kernel names."""
    la, lb = _labels(kernel_a, kernel_b)
    na = newest(records, kind="ncu", kernel=kernel_a, problem=problem)
    if na is None:
        raise KernelPlanError(
            f"no ncu record of {la}"
            + (f" at {short_problem(problem)}" if problem else "")
            + ": run `<package> <kernel> --prof_type ncu ...` (or nox -s profile -- <package> "
            "<kernel> --ncu) first"
        )
    nb = newest(records, kind="ncu", kernel=kernel_b, exact_problem=na[1].get("problem"))
    if nb is None:
        raise KernelPlanError(
            f"no ncu record of {lb} at {short_problem(na[1].get('problem') or {})} "
            f"(the problem of {la}'s newest ncu record {na[0].name})"
        )
    return side_from_record(*na, records, la), side_from_record(*nb, records, lb)


# -- the static comparison (records any machine writes) ----------------------------------
#: (row label, how to read it from a record's ``static``, difference kind)
STATIC_ROWS: tuple[tuple[str, Any, str], ...] = (
    ("Registers/thread", lambda s: s.get("registers"), "count"),
    ("Spill stores/loads (B)", lambda s: _pair(s, "spill_store_bytes", "spill_load_bytes"), ""),
    ("SMEM/block (KB)", lambda s: _smem_kb(s), "kb"),
    ("SASS instructions", lambda s: s.get("instructions"), "count"),
    ("MMA instructions", lambda s: (s.get("categories") or {}).get("mma"), "count"),
    ("MMA kind", lambda s: ", ".join(sorted(s.get("mma_mnemonics") or {})) or "none", ""),
    ("TMA instructions", lambda s: (s.get("categories") or {}).get("tma"), "count"),
    ("TMEM instructions", lambda s: (s.get("categories") or {}).get("tmem"), "count"),
    ("mbarrier instructions", lambda s: (s.get("categories") or {}).get("mbarrier"), "count"),
    ("Named barriers", lambda s: s.get("barriers"), "count"),
    ("max_active_clusters", lambda s: s.get("max_active_clusters"), ""),
    ("Cubin (KB)", lambda s: (s.get("cubin_bytes") or 0) / 1024 or None, "kb"),
)


def _pair(s: Mapping[str, Any], a: str, b: str) -> str:
    return f"{_f(s.get(a), 0)}/{_f(s.get(b), 0)}"


def _smem_kb(s: Mapping[str, Any]) -> float | None:
    parts = [s.get("static_smem_bytes"), s.get("dynamic_smem_bytes")]
    if all(p is None for p in parts):
        return None
    return sum(p or 0 for p in parts) / 1024


def compare_static(
    records: Sequence[Rec],
    impl_a: Impl | str,
    impl_b: Impl | str,
    problem: Mapping[str, Any] | None,
) -> tuple[Rec, Rec]:
    """The newest ``static`` record of A matching ``problem``, and B's at exactly A's problem
    where it has one, else B's newest matching ``problem`` (the footprint of a
    dynamic-layout kernel does not depend on the problem's extents; the table shows both
    problems)."""
    la, lb = _labels(impl_a, impl_b)
    sa = newest(records, kind="static", kernel=impl_a, problem=problem)
    if sa is None:
        raise KernelPlanError(
            f"no ncu or static record of {la}"
            + (f" at {short_problem(problem)}" if problem else "")
            + ": run `<package> <kernel> --prof_type static` (any machine) or --prof_type ncu"
        )
    sb = newest(records, kind="static", kernel=impl_b, exact_problem=sa[1].get("problem"))
    sb = sb or newest(records, kind="static", kernel=impl_b, problem=problem)
    if sb is None:
        raise KernelPlanError(
            f"no ncu or static record of {lb}"
            + (f" at {short_problem(problem)}" if problem else "")
            + ": run `<package> <kernel> --prof_type static` (any machine) first"
        )
    return sa, sb


def static_compare_table(a: Rec, b: Rec, label_a: str, label_b: str) -> str:
    """Two implementations' static footprints (compiled for their own SM, read from the
    cubin) side by side: registers, spills, SMEM, the SASS instruction mix."""
    (pa, ra), (pb, rb) = a, b
    sa, sb = ra.get("static") or {}, rb.get("static") or {}
    rows = [
        {
            "Metric": "Implementation",
            label_a: f"{ra.get('package')}/{ra.get('kernel')}",
            label_b: f"{rb.get('package')}/{rb.get('kernel')}",
            "Difference": "",
        },
        {"Metric": "Target SM", label_a: sa.get("arch"), label_b: sb.get("arch"), "Difference": ""},
        {
            "Metric": "Problem",
            label_a: short_problem(ra.get("problem") or {}),
            label_b: short_problem(rb.get("problem") or {}),
            "Difference": "same"
            if _canon(ra.get("problem")) == _canon(rb.get("problem"))
            else "differ",
        },
        {
            "Metric": "Config",
            label_a: _config_label(ra.get("config") or {}),
            label_b: _config_label(rb.get("config") or {}),
            "Difference": "",
        },
    ]
    for name, get, kind in STATIC_ROWS:
        x, y = get(sa), get(sb)
        num = isinstance(x, (int, float)) and isinstance(y, (int, float))
        nd = 1 if kind == "kb" else 0
        rows.append(
            {
                "Metric": name,
                label_a: _f(x, nd) if num or x is None else x,
                label_b: _f(y, nd) if num or y is None else y,
                "Difference": _diff(kind, x, y, label_b) if num and kind else "",
            }
        )
    wl = ra.get("workload") or rb.get("workload") or "?"
    head = f"### {label_a} vs {label_b}: static footprint (workload {wl})"
    note = (
        "Static analysis: each kernel compiled for its own target SM with fake tensors, the "
        "main kernel's cubin read with cuobjdump/nvdisasm (no GPU; no timing). Sources: "
        f"{label_a}: `{_display_path(pa)}`; {label_b}: `{_display_path(pb)}`"
    )
    return "\n".join([head, "", _markdown(rows), "", note]) + "\n"


# -- fidelity -------------------------------------------------------------------------------
def _harness_clock(bench: Mapping[str, Any]) -> float | None:
    during = (bench.get("timing") or {}).get("clocks_during") or {}
    if during.get("sm_mhz_median"):
        return float(during["sm_mhz_median"])
    after = (bench.get("clocks") or {}).get("after") or {}
    return float(after["sm_mhz"]) if after.get("sm_mhz") else None


def run_to_run_spread(medians: Sequence[float]) -> float | None:
    """(max - min) / median of the run medians, in %; None for fewer than two runs."""
    if len(medians) < 2:
        return None
    return 100.0 * (max(medians) - min(medians)) / statistics.median(medians)


def fidelity_row(
    ncu_path: Path, ncu: Mapping[str, Any], records: Sequence[Rec]
) -> dict[str, Any] | None:
    """Harness median / ncu duration for one ncu record, with the spreads and a verdict."""
    n = ncu.get("ncu") or {}
    nus = n.get("duration_us")
    h = harness_for(ncu, records)
    if not nus or h is None:
        return None
    hp, hr = h
    t = hr["timing"]
    ratio = t["median_us"] / nus
    t0 = _created(hr)
    session = [
        r["timing"]["median_us"]
        for _p, r in records
        if r.get("kind") == "benchmark"
        and r.get("timing")
        and rec_key(r) == rec_key(hr)
        and _cold_l2(r) == _cold_l2(hr)
        and bool(r["timing"].get("cuda_graph")) == bool(t.get("cuda_graph"))
        and (r.get("config") or {}) == (hr.get("config") or {})
        and abs((_created(r) - t0).total_seconds()) <= SESSION_WINDOW_S
    ]
    r2r = run_to_run_spread(session)
    hclk, nclk = _harness_clock(hr), (n.get("metrics") or {}).get("sm_clock_mhz")
    cyc = ratio * hclk / nclk if hclk and nclk else None
    policy_ok = n.get("clock_control", "none") == "none"
    dev_pct = 100.0 * (ratio - 1.0)
    checks = []
    if not policy_ok:
        verdict = "n/a: ncu locked clocks (--clock-control base), the harness did not"
    elif nus < FIDELITY_MIN_US:
        verdict = f"n/a: under {FIDELITY_MIN_US:.0f} us"
    else:
        checks.append(abs(dev_pct) <= FIDELITY_TOL_PCT)
        checks.append(t.get("spread_pct", 0.0) <= SPREAD_TOL_PCT)
        if r2r is not None:
            checks.append(r2r <= SPREAD_TOL_PCT)
        verdict = "PASS" if all(checks) else "FAIL"
    thr = throttle_of(hr)
    return {
        "kernel": ncu.get("kernel"),
        "problem": short_problem(ncu.get("problem") or {}),
        "config": _config_label(ncu.get("config") or {}),
        "harness_us": t["median_us"],
        "ncu_us": nus,
        "ratio": ratio,
        "deviation_pct": dev_pct,
        "within_run_spread_pct": t.get("spread_pct"),
        # the harness's fastest launches against ncu's replays: when the median is off only
        # because a sustained run met the power cap, p10 (the launches before it) still agrees
        "p10_ratio": (t["p10_us"] / nus) if t.get("p10_us") else None,
        "run_to_run_spread_pct": r2r,
        "harness_runs": len(session),
        "harness_sm_mhz": hclk,
        "ncu_sm_mhz": nclk,
        "clock_normalised_ratio": cyc,
        "throttled": thr.get("throttled"),
        "clock_control": n.get("clock_control", "none"),
        "verdict": verdict,
        "ncu_record": str(ncu_path),
        "harness_record": str(hp),
        "paired": bool(ncu.get("pair_id")) and ncu.get("pair_id") == hr.get("pair_id"),
    }


def fidelity_rows(records: Sequence[Rec]) -> list[dict[str, Any]]:
    """One row per (kernel, problem, config): its newest ncu record against its harness."""
    newest_ncu: dict[tuple, Rec] = {}
    for p, r in records:
        if r.get("kind") != "ncu":
            continue
        k = rec_key(r)
        if k not in newest_ncu or _created(r) >= _created(newest_ncu[k][1]):
            newest_ncu[k] = (p, r)
    rows = [fidelity_row(p, r, records) for p, r in newest_ncu.values()]
    return sorted((r for r in rows if r), key=lambda r: (r["kernel"], r["problem"]))


def fidelity_table(rows: Sequence[Mapping[str, Any]]) -> str:
    view = [
        {
            "kernel": r["kernel"],
            "problem": r["problem"],
            "harness us": _f(r["harness_us"]),
            "ncu us": _f(r["ncu_us"]),
            "ratio": _f(r["ratio"], 3),
            "p10 / ncu": _f(r.get("p10_ratio"), 3),
            "within-run spread %": _f(r["within_run_spread_pct"], 2),
            "run-to-run spread %": _f(r["run_to_run_spread_pct"], 2)
            + (f" ({r['harness_runs']} runs)" if r["harness_runs"] > 1 else ""),
            "SM MHz harness/ncu": f"{_f(r['harness_sm_mhz'], 0)}/{_f(r['ncu_sm_mhz'], 0)}",
            "throttled": {True: "yes", False: "no"}.get(r["throttled"], "?"),
            "verdict": r["verdict"],
        }
        for r in rows
    ]
    head = (
        f"Fidelity: harness median / ncu gpu__time_duration; PASS needs |ratio - 1| <= "
        f"{FIDELITY_TOL_PCT:.0f}% and spreads <= {SPREAD_TOL_PCT:.0f}% for kernels of "
        f"{FIDELITY_MIN_US:.0f} us or more, both with the clocks as found. Harness runs "
        "count towards the run-to-run spread only with the same config, L2 policy and graph "
        "mode. SM MHz: NVML's reading during the harness run / ncu's measured SM frequency; "
        "they are different measurements (at 4096^3 the durations agree while they differ by "
        "~25%), so no clock normalisation is applied.\n\n"
    )
    return head + _markdown(view)


def _config_label(config: Mapping[str, Any]) -> str:
    from .plan import config_label

    return config_label(config)


# -- best config ----------------------------------------------------------------------------
def best_config(
    records: Sequence[Rec], kernel: str, problem: Mapping[str, Any] | None
) -> tuple[dict[str, Any], float, Path] | None:
    """The config with the lowest median among the autotune rows of the newest benchmark
    record of ``kernel`` (matching ``problem``) that has them; else the newest record's."""
    cands = [
        (p, r)
        for p, r in records
        if r.get("kind") == "benchmark"
        and r.get("kernel") == kernel
        and _matches(r.get("problem") or {}, problem)
    ]
    tuned = [(p, r) for p, r in cands if r.get("autotune")]
    pick = max(tuned or cands, key=lambda pr: (_created(pr[1]), str(pr[0])), default=None)
    if pick is None:
        return None
    p, r = pick
    rows = [x for x in r.get("autotune") or [] if x.get("median_us") is not None]
    if rows:
        best = min(rows, key=lambda x: x["median_us"])
        return dict(best["config"]), best["median_us"], p
    return dict(r.get("config") or {}), r["timing"]["median_us"], p


def config_overrides(config: Mapping[str, Any]) -> list[str]:
    """``{"tile_mn": [128, 256], "flag": True}`` -> ``["tile_mn=128x256", "flag=true"]`` (what
    ``--config`` parses back to the same values)."""
    out = []
    for k, v in config.items():
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, int) for x in v):
            out.append(f"{k}=" + "x".join(str(x) for x in v))
        else:
            out.append(f"{k}={json.dumps(v)}")
    return out


# -- the package report ---------------------------------------------------------------------
def _newest_per_key(records: Sequence[Rec], kind: str) -> list[Rec]:
    """Per (kernel, problem), the newest record of ``kind``; for benchmarks, preferring plain
    launches (no CUDA graph) whose clock did not throttle, then any."""

    def rank(p: Path, r: Mapping[str, Any]) -> tuple:
        clean = not (r.get("timing") or {}).get("cuda_graph") and not (
            (r.get("throttle") or {}).get("throttled")
        )
        return (clean, _created(r), str(p))

    best: dict[tuple, Rec] = {}
    for p, r in records:
        if r.get("kind") != kind:
            continue
        k = (r.get("package"), r.get("kernel"), _canon(r.get("problem")))
        if k not in best or rank(p, r) >= rank(*best[k]):
            best[k] = (p, r)
    return sorted(
        best.values(),
        key=lambda pr: (pr[1].get("package", ""), pr[1].get("kernel", ""), _size(pr[1])),
    )


def _size(rec: Mapping[str, Any]) -> float:
    roof = rec.get("roofline") or {}
    if roof.get("flops"):
        return float(roof["flops"])
    prod = 1.0
    for v in (rec.get("problem") or {}).values():
        if isinstance(v, int) and not isinstance(v, bool):
            prod *= v
    return prod


def _labelled_fields(problem: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The fields a workload's problem labels by (``label_always``), for a problem dict of
    that workload; None when no workload's problem declares them."""
    from .workloads import WORKLOADS, get

    for name in WORKLOADS:
        try:
            cls = get(name).problem_type
        except Exception:  # a workload that does not import here
            continue
        keys = getattr(cls, "label_always", None)
        if keys and set(problem) <= set(cls.field_names()):
            return tuple(keys)
    return None


def _size_label(problem: Mapping[str, Any]) -> str:
    """``4096^3`` for m = n = k = 4096 (l = 1); ``b=32 s=1 t=4096 h=128`` for a workload whose
    problem names its label fields (plus ``varlen`` when set); else the integer sizes joined
    by ``x``."""
    keys = _labelled_fields(problem)
    if keys:
        lab = " ".join(f"{k}={problem[k]}" for k in keys if k in problem)
        return lab + (" varlen" if problem.get("varlen") else "")
    ints = [v for v in problem.values() if isinstance(v, int) and not isinstance(v, bool)]
    big = [v for v in ints if v != 1]
    if len(big) >= 2 and len(set(big)) == 1:
        return f"{big[0]}^{len(big)}"
    return "x".join(str(v) for v in ints) or "?"


def _series(rec: Mapping[str, Any]) -> str:
    """The kernel and the problem's string fields (dtypes, init): one plotted series."""
    rest = [v for v in (rec.get("problem") or {}).values() if isinstance(v, str)]
    return " ".join([rec.get("kernel", "?"), *dict.fromkeys(rest)])


def throttle_of(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The record's throttle flag; for records written before the flag existed, derived from
    the clocks recorded after the run (``"derived": True``)."""
    if rec.get("throttle"):
        return dict(rec["throttle"])
    from .clocks import throttle_flag

    c = rec.get("clocks") or {}
    max_sm = ((rec.get("device") or {}).get("clocks_max") or {}).get("sm_mhz")
    during = (rec.get("timing") or {}).get("clocks_during")
    return {**throttle_flag(c.get("before"), c.get("after"), during, max_sm), "derived": True}


def _yes_no(thr: Mapping[str, Any]) -> str:
    word = {True: "yes", False: "no"}.get(thr.get("throttled"), "?")
    return word + ("*" if thr.get("derived") and word != "?" else "")


def benchmark_table(benches: Sequence[Rec]) -> str:
    rows = []
    for p, r in benches:
        t, roof = r.get("timing") or {}, r.get("roofline") or {}
        during = t.get("clocks_during") or {}
        thr = throttle_of(r)
        before = ((r.get("clocks") or {}).get("before") or {}).get("sm_mhz")
        after = ((r.get("clocks") or {}).get("after") or {}).get("sm_mhz")
        clk = (
            f"{_f(during.get('sm_mhz_min'), 0)}-{_f(during.get('sm_mhz_median'), 0)}"
            if during
            else f"{_f(before, 0)}->{_f(after, 0)}"
        )
        rows.append(
            {
                "kernel": r.get("kernel"),
                "problem": short_problem(r.get("problem") or {}),
                "config": _config_label(r.get("config") or {}),
                "median us": _f(t.get("median_us")),
                "spread %": _f(t.get("spread_pct"), 2),
                "TFLOP/s": _f(roof.get("tflops")),
                "% peak": _f(roof.get("pct_peak_tflops")),
                "GB/s": _f(roof.get("gbps"), 0),
                "bound": roof.get("bound") or "?",
                "SM MHz": clk,
                "throttled": _yes_no(thr),
                "record": p.name,
            }
        )
    note = ""
    if any(r["throttled"].endswith("*") for r in rows):
        note = "\n\n\\* from the SM clock read after the run (the record predates the sampler)."
    return _markdown(rows) + note


def ncu_table(ncus: Sequence[Rec]) -> str:
    from .ncu import table_row

    return _markdown([table_row(r, p) for p, r in ncus])


def _mpl():
    try:
        import matplotlib
    except ImportError:
        raise KernelPlanError(
            "the PNG plots need matplotlib (add it: uv add --package kernelplan matplotlib)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_roofline(benches: Sequence[Rec], path: Path, title: str = "") -> Path:
    """Achieved TFLOP/s against arithmetic intensity (FLOP/byte, log-log) on each roof
    (min(peak TFLOP/s, intensity x peak GB/s)) of the records' device and dtypes."""
    plt = _mpl()
    pts = [(p, r, r.get("roofline") or {}) for p, r in benches]
    pts = [(p, r, x) for p, r, x in pts if x.get("intensity") and x.get("tflops")]
    if not pts:
        raise KernelPlanError("no benchmark record with a roofline to plot")
    fig, ax = plt.subplots(figsize=(8, 5.5))
    roofs = sorted(
        {
            (x["peak_tflops"], x["peak_gbps"])
            for _p, _r, x in pts
            if x.get("peak_tflops") and x.get("peak_gbps")
        }
    )
    lo = min(x["intensity"] for _p, _r, x in pts) / 10
    hi = max(x["intensity"] for _p, _r, x in pts) * 10
    for pt, bw in roofs:
        ridge = pt * 1e3 / bw
        lo, hi = min(lo, ridge / 10), max(hi, ridge * 10)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for pt, bw in roofs:
        ax.plot(grid, [min(pt, i * bw / 1e3) for i in grid], "k-", lw=1.5)
        ridge = pt * 1e3 / bw
        ax.axvline(ridge, color="0.6", ls=":", lw=1)
        ax.annotate(
            f"{pt:.0f} TFLOP/s, {bw:.0f} GB/s (ridge {ridge:.0f} FLOP/B)",
            (ridge, pt),
            textcoords="offset points",
            xytext=(5, 5),
            fontsize=8,
        )
    markers = "osD^v<>p*h"
    kernels = sorted({r.get("kernel", "?") for _p, r, _x in pts})
    series = sorted({_series(r) for _p, r, _x in pts})
    for s in series:
        mine = [x for _p, r, x in pts if _series(r) == s]
        k = s.split(" ")[0]
        ax.scatter(
            [x["intensity"] for x in mine],
            [x["tflops"] for x in mine],
            marker=markers[kernels.index(k) % len(markers)] if k in kernels else "o",
            s=36,
            label=s,
            zorder=3,
            alpha=0.85,
        )
    sizes: dict[str, tuple[float, float]] = {}
    for _p, r, x in pts:  # one label per problem size, under its lowest point
        lab = _size_label(r.get("problem") or {})
        i, t = sizes.get(lab, (x["intensity"], x["tflops"]))
        sizes[lab] = (i, min(t, x["tflops"]))
    for lab, (i, t) in sizes.items():
        ax.annotate(
            lab, (i, t), textcoords="offset points", xytext=(0, -14), fontsize=8, ha="center"
        )
    ymin = min(x["tflops"] for _p, _r, x in pts) / 4
    ax.set_ylim(bottom=ymin, top=max(pt for pt, _bw in roofs) * 1.6 if roofs else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / minimum DRAM byte)")
    ax.set_ylabel("achieved TFLOP/s (harness median)")
    ax.set_title(title or "roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sweep(benches: Sequence[Rec], path: Path, what: str = "time", title: str = "") -> Path:
    """``what`` ("time": median us, or "tflops") against problem size, one line per kernel
    and dtype; x is the workload's FLOPs (log)."""
    plt = _mpl()
    series: dict[str, list[tuple[float, float, str]]] = {}
    for _p, r in benches:
        t, roof = r.get("timing") or {}, r.get("roofline") or {}
        y = t.get("median_us") if what == "time" else roof.get("tflops")
        if y is None:
            continue
        series.setdefault(_series(r), []).append(
            (_size(r), float(y), _size_label(r.get("problem") or {}))
        )
    series = {k: sorted(v) for k, v in series.items() if len({x for x, _y, _l in v}) >= 2}
    if not series:
        raise KernelPlanError("no sweep: no kernel has records at two or more problem sizes")
    fig, ax = plt.subplots(figsize=(8, 5))
    for k, v in sorted(series.items()):
        ax.plot([x for x, _y, _l in v], [y for _x, y, _l in v], marker="o", label=k)
    ticks = sorted({(x, lab) for v in series.values() for x, _y, lab in v})
    ax.set_xscale("log")
    if what == "time":
        ax.set_yscale("log")
    ax.set_xticks([x for x, _l in ticks])
    ax.set_xticklabels([lab for _x, lab in ticks], rotation=30, fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("problem size (ordered by FLOPs)")
    ax.set_ylabel("median time per launch (us)" if what == "time" else "achieved TFLOP/s")
    ax.set_title(title or what)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# -- alternated rounds: every implementation of one run, side by side ------------------------
def _round_label(rec: Mapping[str, Any], same_kernel: int) -> str:
    """A column's name in an alternated round: ``kernel``, with its config when the round
    holds the same kernel more than once (``alternate`` takes ``kernel:key=value``)."""
    k = rec.get("kernel", "?")
    return f"{k}[{_config_label(rec.get('config') or {})}]" if same_kernel > 1 else k


def _rounds_by_id(records: Sequence[Rec]) -> list[list[Rec]]:
    """The benchmark records written by ``kernelplan.alternate`` (those with a ``round_id``),
    grouped by round."""
    rounds: dict[str, list[Rec]] = {}
    for p, r in records:
        if r.get("kind") == "benchmark" and r.get("round_id") and (r.get("timing") or {}):
            rounds.setdefault(str(r["round_id"]), []).append((p, r))
    return list(rounds.values())


def _round_key(members: Sequence[Rec]) -> tuple[str, str]:
    r0 = members[0][1]
    return (r0.get("workload") or "?", _canon(r0.get("problem")))


def _round_impls(members: Sequence[Rec]) -> frozenset[str]:
    return frozenset(f"{r.get('package')}/{_round_label(r, 2)}" for _p, r in members)


def _round_when(members: Sequence[Rec]) -> _dt.datetime:
    return max(_created(r) for _p, r in members)


def _by_size(rounds: Sequence[Sequence[Rec]]) -> list[list[Rec]]:
    return sorted(
        (list(m) for m in rounds),
        key=lambda m: (
            m[0][1].get("workload") or "",
            _size(m[0][1]),
            _canon(m[0][1].get("problem")),
            sorted(_round_impls(m)),
        ),
    )


def alternated_rounds(records: Sequence[Rec]) -> list[list[Rec]]:
    """The rounds of ``kernelplan.alternate`` (records with a ``round_id``): per (workload,
    problem) the round with the most implementations, the newest among equals, so that a
    narrower run made later at the same problem (a floor against one peer, a pair) does not
    replace the table's row (:func:`other_alternated_rounds` lists those). Rounds are
    ordered by the workload's size order of their problem (FLOPs)."""
    main: dict[tuple[str, str], list[Rec]] = {}
    for members in _rounds_by_id(records):
        key = _round_key(members)
        old = main.get(key)
        if old is None or (len(members), _round_when(members)) >= (len(old), _round_when(old)):
            main[key] = members
    return _by_size(main.values())


def other_alternated_rounds(records: Sequence[Rec]) -> list[list[Rec]]:
    """The alternated rounds :func:`alternated_rounds` leaves out that still say something:
    per (workload, problem, set of implementations) the newest round of two or more
    implementations that has an implementation the main round at that problem lacks (a
    floor) or is newer than it. Older rounds of a subset of the main round's implementations
    are superseded by it and left out; a round of one implementation compares nothing."""
    main = {_round_key(m): m for m in alternated_rounds(records)}
    newest: dict[tuple[str, str, frozenset[str]], list[Rec]] = {}
    for members in _rounds_by_id(records):
        impls = _round_impls(members)
        key = _round_key(members)
        ref = main[key]
        if len(impls) < 2 or members[0][1].get("round_id") == ref[0][1].get("round_id"):
            continue
        if impls <= _round_impls(ref) and _round_when(members) <= _round_when(ref):
            continue
        old = newest.get((*key, impls))
        if old is None or _round_when(members) >= _round_when(old):
            newest[(*key, impls)] = members
    return _by_size(newest.values())


def _is_focus(rec: Mapping[str, Any], focus: Impl | None) -> bool:
    return focus is not None and (rec.get("package"), rec.get("kernel")) == tuple(focus)


def round_summary(members: Sequence[Rec], focus: Impl | None = None) -> dict[str, Any]:
    """One round: each implementation's median (us), the fastest, and, with ``focus``, the
    ratio of the focus implementation's median to the fastest *other* implementation's (the
    fastest peer); None where the focus is not in the round or has no peer there."""
    counts: dict[str, int] = {}
    for _p, r in members:
        counts[r.get("kernel", "?")] = counts.get(r.get("kernel", "?"), 0) + 1
    times = {
        _round_label(r, counts[r.get("kernel", "?")]): float(r["timing"]["median_us"])
        for _p, r in members
    }
    focus_labels = {
        _round_label(r, counts[r.get("kernel", "?")]) for _p, r in members if _is_focus(r, focus)
    }
    fastest = min(times, key=times.get)
    out: dict[str, Any] = {
        "problem": members[0][1].get("problem") or {},
        "round_id": members[0][1].get("round_id"),
        "cuda_graph": bool((members[0][1].get("timing") or {}).get("cuda_graph")),
        "times": times,
        "fastest": fastest,
        "focus": None,
        "fastest_peer": None,
        "focus_ratio": None,
    }
    peers = {k: v for k, v in times.items() if k not in focus_labels}
    if focus_labels and peers:
        mine = min(focus_labels, key=times.get)
        peer = min(peers, key=peers.get)
        out.update(focus=mine, fastest_peer=peer, focus_ratio=times[mine] / peers[peer])
    return out


def alternated_table(rounds: Sequence[Sequence[Rec]], focus: Impl | None = None) -> str:
    """One row per setting (the newest alternated round at that problem): every
    implementation's median in us with its ratio to the row's fastest, the fastest, and with
    ``focus`` the ratio of the focus implementation to the fastest peer (> 1: slower)."""
    sums = [round_summary(m, focus) for m in rounds]
    cols: list[str] = []
    for s in sums:  # the focus first, then the others in their order of appearance
        for k in sorted(s["times"], key=lambda k: (k != s["focus"], k)):
            if k not in cols:
                cols.append(k)
    if focus is not None:
        cols.sort(key=lambda k: k.split("[")[0] != focus[1])
    rows = []
    for s in sums:
        best = s["times"][s["fastest"]]
        row: dict[str, Any] = {"setting": _size_label(s["problem"])}
        for c in cols:
            t = s["times"].get(c)
            row[c] = f"{t:.1f} ({t / best:.2f}x)" if t is not None else "-"
        row["fastest"] = s["fastest"]
        if focus is not None:
            ratio = s["focus_ratio"]
            row["fastest peer"] = s["fastest_peer"] or "-"
            row[f"{focus[1]} / fastest peer"] = f"{ratio:.2f}" if ratio is not None else "-"
        row["round"] = s["round_id"]
        rows.append(row)
    graphs = {s["cuda_graph"] for s in sums}
    how = (
        "CUDA-graph replays"
        if graphs == {True}
        else "plain launches"
        if graphs == {False}
        else "mixed launch modes"
    )
    head = (
        "Each row is one run of `python -m kernelplan.alternate`: every implementation checked "
        "first, then timed in rounds, alternated (" + how + ", cold L2); cells: median us "
        "(ratio to the row's fastest). "
        + (
            f"`{focus[1]} / fastest peer`: {focus[1]}'s median over the fastest other "
            "implementation's (above 1: slower). "
            if focus is not None
            else ""
        )
        + "An implementation missing from a row did not take that setting or failed its "
        "check (the run's log says which). `round`: the records' `round_id`.\n\n"
    )
    return head + _markdown(rows)


def _varying_label(problems: Sequence[Mapping[str, Any]]) -> list[str]:
    """Short tick labels: of each problem's label fields (:func:`_labelled_fields`, else all
    fields), only those whose value differs between the problems."""
    if not problems:
        return []
    keys = _labelled_fields(problems[0]) or tuple(problems[0])
    vary = [k for k in keys if len({str(p.get(k)) for p in problems}) > 1]
    return [" ".join(f"{k}={p.get(k)}" for k in vary) or _size_label(p) for p in problems]


def plot_alternated(
    rounds: Sequence[Sequence[Rec]], path: Path, focus: Impl | None = None, title: str = ""
) -> Path:
    """Grouped bars: per setting (newest alternated round), each implementation's median over
    the row's fastest (1 = fastest); the focus implementation's bars outlined."""
    plt = _mpl()
    sums = [round_summary(m, focus) for m in rounds]
    if not sums:
        raise KernelPlanError("no alternated round (records with a round_id) to plot")
    cols: list[str] = []
    for s in sums:
        for k in s["times"]:
            if k not in cols:
                cols.append(k)
    cols.sort(key=lambda k: (focus is None or k.split("[")[0] != focus[1], k))
    width = 0.8 / max(1, len(cols))
    fig, ax = plt.subplots(figsize=(max(8.0, 0.9 * len(sums) + 3), 5.5))
    for j, c in enumerate(cols):
        xs, ys = [], []
        for i, s in enumerate(sums):
            t = s["times"].get(c)
            if t is not None:
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(t / s["times"][s["fastest"]])
        is_focus = focus is not None and c.split("[")[0] == focus[1]
        ax.bar(
            xs, ys, width, label=c, edgecolor="black" if is_focus else None,
            linewidth=1.5 if is_focus else 0, zorder=3,
        )  # fmt: skip
    ax.axhline(1.0, color="0.3", lw=1, ls="--", zorder=2)
    ax.set_xticks(range(len(sums)))
    ax.set_xticklabels(
        _varying_label([s["problem"] for s in sums]), rotation=30, ha="right", fontsize=8
    )
    ax.set_ylabel("median time / fastest in the round (1 = fastest)")
    ax.set_title(title or "alternated runs")
    ax.grid(True, axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def render_report(
    package: str,
    root: Path | None = None,
    out_dir: Path | None = None,
    log=print,
    focus: str | None = None,
) -> list[Path]:
    """``report.md`` + PNG plots for a package or a workload (``package`` may name either;
    a name that is both is the workload) under ``out_dir`` (default
    ``<results>/<package>/report``, or ``<results>/workloads/<workload>/report``). The
    markdown has one section per workload; a workload's section covers its implementations
    in every package. Records of ``kernelplan.alternate`` runs (with a ``round_id``) get a
    table of their own, one row per setting with every implementation, and a plot
    (``alternated.png``); narrower runs at the same settings (a floor, a pair) a second
    table (:func:`other_alternated_rounds`), no plot; ``focus`` (an implementation:
    ``package/kernel`` or a name unique
    in the scope) adds the ratio of it to the fastest other implementation per row.
    Returns the files written.

    Raises:
        KernelPlanError: no records, an unknown ``focus``, or an output folder that cannot
            be written.
    """
    from .records import _slug, results_root

    root = Path(root) if root is not None else results_root()
    if _is_workload(package):
        records = [(p, r) for p, r in _load(root) if r.get("workload") == package]
        default_out = root / "workloads" / _slug(package) / "report"
        title = f"workload {package}"
    else:
        records = _load(root, package)
        default_out = root / _slug(package) / "report"
        title = package
    if not records:
        raise KernelPlanError(f"no records of package {package!r} under {root}")
    focus_impl = resolve_implementation(focus, package) if focus else None
    out_dir = Path(out_dir) if out_dir is not None else default_out
    _ensure_writable(out_dir)  # before any plot is drawn: one line, nothing written
    benches = _newest_per_key(records, "benchmark")
    ncus = _newest_per_key(records, "ncu")
    statics = _newest_per_key(records, "static")
    rounds = alternated_rounds(records)
    other_rounds = other_alternated_rounds(records)
    devices = sorted({(r.get("device") or {}).get("name") or "?" for _p, r in benches + ncus})
    written: list[Path] = []
    md = [
        f"# {title}: report",
        "",
        f"Generated {_now()} from {len(records)} records under "
        f"`{_display_path(root)}`; device(s): {', '.join(devices) or 'none (static only)'}.",
        "",
    ]
    plots = []
    for name, fn in (
        ("roofline.png", lambda p: plot_roofline(benches, p, f"{title} on {', '.join(devices)}")),
        ("sweep-time.png", lambda p: plot_sweep(benches, p, "time", f"{title}: time vs size")),
        ("sweep-tflops.png", lambda p: plot_sweep(benches, p, "tflops", f"{title}: TFLOP/s")),
        (
            "alternated.png",
            lambda p: plot_alternated(
                rounds, p, focus_impl, f"{title}: alternated runs on {', '.join(devices)}"
            ),
        ),
    ):
        if name == "alternated.png" and not rounds:
            continue
        try:
            written.append(fn(out_dir / name))
            plots.append(name)
        except KernelPlanError as e:
            log(f"report: {name} skipped: {e}")
    if plots:
        md += [f"![{p}]({p})" for p in plots] + [""]
    groups = sorted({r.get("workload") or "?" for _p, r in records})
    for wl in groups:
        mine = [(p, r) for p, r in records if (r.get("workload") or "?") == wl]
        wb = [(p, r) for p, r in benches if (r.get("workload") or "?") == wl]
        wn = [(p, r) for p, r in ncus if (r.get("workload") or "?") == wl]
        ws = [(p, r) for p, r in statics if (r.get("workload") or "?") == wl]
        impls = sorted({f"{r.get('package')}/{r.get('kernel')}" for _p, r in mine})
        md += [f"## Workload {wl}", "", f"Implementations with records: {', '.join(impls)}.", ""]
        wr = [m for m in rounds if (m[0][1].get("workload") or "?") == wl]
        if wr:
            md += [
                "### Alternated runs (per setting: the newest run of the most implementations)",
                "",
            ]
            md += [alternated_table(wr, focus_impl), ""]
        wo = [m for m in other_rounds if (m[0][1].get("workload") or "?") == wl]
        if wo:
            md += [
                "### Other alternated runs (narrower runs: a floor, a pair)",
                "",
                "Runs of fewer implementations at the same settings, newest per setting and "
                "set of implementations, where they time one the table above lacks or came "
                "after it; ratios are within each run only.",
                "",
            ]
            md += [alternated_table(wo, focus_impl), ""]
        if wb:
            md += ["### Harness timings (newest per kernel and problem)", ""]
            md += [benchmark_table(wb), ""]
        if wn:
            md += ["### Nsight Compute (newest per kernel and problem)", "", ncu_table(wn), ""]
            rows = fidelity_rows(mine)
            if rows:
                md += ["### Timing fidelity", "", fidelity_table(rows), ""]
            md += _peer_comparisons(mine, wn)
        if ws:
            md += ["### Static footprint (newest per kernel and problem)", ""]
            md += [static_table(ws), ""]
    path = out_dir / "report.md"
    path.write_text("\n".join(md) + "\n")
    written.insert(0, path)
    for p in written:
        log(f"report: {p}")
    return written


def static_table(statics: Sequence[Rec]) -> str:
    """One row per static record: the implementation, its SM, problem and config, and its
    footprint (registers, spills, SMEM, instruction mix)."""
    rows = []
    for p, r in statics:
        s = r.get("static") or {}
        cats = s.get("categories") or {}
        rows.append(
            {
                "implementation": f"{r.get('package')}/{r.get('kernel')}",
                "SM": s.get("arch") or "?",
                "problem": short_problem(r.get("problem") or {}),
                "config": _config_label(r.get("config") or {}),
                "regs": _f(s.get("registers"), 0),
                "spill B": _pair(s, "spill_store_bytes", "spill_load_bytes"),
                "SMEM KB": _f(_smem_kb(s)),
                "instr": _f(s.get("instructions"), 0),
                "MMA": _f(cats.get("mma"), 0),
                "MMA kind": ", ".join(sorted(s.get("mma_mnemonics") or {})) or "-",
                "TMA": _f(cats.get("tma"), 0),
                "record": p.name,
            }
        )
    return _markdown(rows)


def _ensure_writable(folder: Path) -> None:
    """Create ``folder`` if needed and prove a file can be made in it.

    Raises:
        KernelPlanError: it cannot (the folder, the OS error, and ``--out``).
    """
    import secrets

    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe-{secrets.token_hex(4)}"
        with open(probe, "x", encoding="utf-8"):
            pass
        probe.unlink()
    except OSError as e:
        raise KernelPlanError(
            f"cannot write the report under {folder}: {e.strerror or e}; pass --out with a "
            "folder you can write"
        ) from None


def _peer_comparisons(records: Sequence[Rec], ncus: Sequence[Rec]) -> list[str]:
    """Each CuTe kernel against each peer (a kernel with no target SM) at the same problem."""
    out: list[str] = []
    for pp, peer in ncus:
        if peer.get("target_sm"):
            continue
        for cp, cute in ncus:
            if not cute.get("target_sm") or _canon(cute.get("problem")) != _canon(
                peer.get("problem")
            ):
                continue
            ia = (cute.get("package", ""), cute.get("kernel", ""))
            ib = (peer.get("package", ""), peer.get("kernel", ""))
            a = side_from_record(cp, cute, records, impl_label(ia, ib))
            b = side_from_record(pp, peer, records, impl_label(ib, ia))
            if not out:
                out += ["### Comparisons with the peers", ""]
            out += [compare_table(a, b), ""]
    return out


def _rel(path: str | Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# -- command line ---------------------------------------------------------------------------
def _parse_problem(items: Sequence[str] | None) -> dict[str, Any] | None:
    """``--problem m=8192 dtype=float16`` as a filter (values compared as strings).

    Raises:
        KernelPlanError: an item without ``=``.
    """
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        for part in item.split():
            if "=" not in part:
                raise KernelPlanError(f"--problem expects key=value, got {part!r}")
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def rounds_by_label(records: Sequence[Rec]) -> dict[str, dict[str, Rec]]:
    """The records of each alternated run (:func:`_rounds_by_id`) by entry label, ``{round_id:
    {label: (path, record)}}``. A record names the other entries of its run
    (``alternated_with``), so its own label is the one name of the run that it does not list;
    a run where that leaves fewer than two labels is left out."""
    out: dict[str, dict[str, Rec]] = {}
    for members in _rounds_by_id(records):
        names = set().union(*(set(r.get("alternated_with") or ()) for _, r in members))
        by_label = {}
        for path, rec in members:
            own = names - set(rec.get("alternated_with") or ())
            if len(own) == 1:
                by_label[own.pop()] = (path, rec)
        if len(by_label) >= 2:
            out[str(members[0][1]["round_id"])] = by_label
    return out


def problem_label(rec: Mapping[str, Any]) -> str:
    """The record's problem as the alternate table names it (``Problem.label``: the fields
    that differ from their defaults, and the workload's always-shown ones), rebuilt through
    its implementation's plan; every field (:func:`short_problem`) where that fails."""
    cls = implementation_class(rec.get("package"), rec.get("kernel"))
    try:
        return cls().problem(rec.get("problem") or {}).label()
    except Exception:  # a retired kernel or an old record: every field as written
        return short_problem(rec.get("problem") or {})


def _label_in(label: str, run: Mapping[str, Rec]) -> str | None:
    """``label`` as a run names it: exactly, or without its ``package/`` prefix."""
    if label in run:
        return label
    hits = [n for n in run if n.split("/", 1)[-1] == label]
    return hits[0] if len(hits) == 1 else None


def _iso_time(text: str, option: str) -> _dt.datetime:
    """The value ``text`` of ``option`` (``--since``, ``--until``) as an aware time (UTC where
    no zone is given). Raises KernelPlanError for text that is not an ISO date or time."""
    try:
        t = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise KernelPlanError(
            f"{option} {text!r} is not an ISO date or time (e.g. 2026-12-06 or 2026-12-06T10:00)"
        ) from None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def round_ratios(
    records: Sequence[Rec],
    a: str,
    b: str,
    round_prefix: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> list[dict[str, Any]]:
    """For every alternated run holding both entries ``a`` and ``b`` (labels as the
    ``kernelplan.alternate`` table prints them, e.g. ``mla/mla_decode_sm90[step=33]``; the
    ``package/`` prefix may be left out), oldest first: the run's ``round_id``, its time, the
    device, the problem, both medians (us), the median of the per-round ratios a / b
    (``per_round_ratio``: each round's two times come from one round, so a clock change
    between rounds cancels), the busy SM clock range (MHz) and both record paths.
    ``round_prefix`` keeps the runs whose id starts with it, ``since`` those created at or
    after it and ``until`` those created before it (ISO dates or times, UTC unless they name a
    zone), so that one run can be pinned. Raises KernelPlanError when ``a`` and ``b`` name
    the same entry, when ``since`` or ``until`` does not parse, and when no run is
    left: naming the labels of the runs that hold one of them, or how many runs the filters
    left out."""
    from .alternate import busy_clock_span, per_round_ratio

    after = _iso_time(since, "--since") if since else None
    before = _iso_time(until, "--until") if until else None
    rows = []
    near: set[str] = set()
    both = 0
    for rid, run in rounds_by_label(records).items():
        la, lb = _label_in(a, run), _label_in(b, run)
        if la is None or lb is None:
            if la is not None or lb is not None:
                near.update(run)
            continue
        if la == lb:
            raise KernelPlanError(f"{a!r} and {b!r} name the same entry ({la}): give two entries")
        both += 1
        (pa, ra), (pb, rb) = run[la], run[lb]
        if round_prefix and not rid.startswith(round_prefix):
            continue
        if after and _created(ra) < after:
            continue
        if before and _created(ra) >= before:
            continue
        ta, tb = ra.get("timing") or {}, rb.get("timing") or {}
        rows.append(
            {
                "round_id": rid,
                "created_utc": str(ra.get("created_utc") or ""),
                "device": (ra.get("device") or {}).get("name") or "?",
                "problem": problem_label(ra),
                "a_us": ta.get("median_us"),
                "b_us": tb.get("median_us"),
                "ratio": per_round_ratio(ta.get("samples_us"), tb.get("samples_us")),
                "sm_mhz": busy_clock_span(ta.get("clocks_during"), tb.get("clocks_during")),
                "a_record": pa,
                "b_record": pb,
            }
        )
    if not rows and both:
        filters = " and ".join(
            f for f in (
                f"created at or after {since}" if since else "",
                f"created before {until}" if until else "",
                f"with a round id starting {round_prefix!r}" if round_prefix else "",
            ) if f
        )  # fmt: skip
        raise KernelPlanError(
            f"{both} alternated run(s) hold both {a!r} and {b!r}, none {filters}: widen "
            "--since, --until or --round"
        )
    if not rows:
        # the labels most like the two asked for first, so a near miss (a config written
        # "name step=58" for "name[step=58]") shows its right spelling before the cut
        from difflib import SequenceMatcher

        missing = [x for x in (a, b) if x not in near] or [a, b]

        def likeness(label: str) -> float:
            return max(SequenceMatcher(None, label, x).ratio() for x in missing)

        labels = sorted(sorted(near), key=lambda label: -likeness(label))
        seen = ", ".join(labels[:12]) or "none"
        if len(labels) > 12:
            seen += f", and {len(labels) - 12} more"
        raise KernelPlanError(
            f"no alternated run holds both {a!r} and {b!r} (labels as the alternate table "
            f"prints them; labels of the runs holding one of them: {seen})"
        )
    rows.sort(key=lambda r: (_created({"created_utc": r["created_utc"]}), r["round_id"]))
    return rows


def ratios_table(rows: Sequence[Mapping[str, Any]], a: str, b: str) -> str:
    """The markdown table of :func:`round_ratios`, headed by what A and B are."""
    lines = [
        f"A = {a}, B = {b}; A / B is the median of the per-round ratios of one run",
        "",
        "| problem | A us | B us | A / B per round | SM MHz | device | round | records (A, B) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mhz = "-" if r["sm_mhz"] is None else f"{r['sm_mhz'][0]:.0f}-{r['sm_mhz'][1]:.0f}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(
            f"| {r['problem']} | {_f(r['a_us'])} | {_f(r['b_us'])} | {ratio} | {mhz} | "
            f"{r['device']} | {r['round_id']} ({r['created_utc'][:19]}) | "
            f"{Path(r['a_record']).name} {Path(r['b_record']).name} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from .cli import die

    p = argparse.ArgumentParser(prog="python -m kernelplan.report")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--results-dir", default=None, help="records root (default: results/)")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser(
        "compare", parents=[common], help="the comparison table of two kernels or two records"
    )
    c.add_argument(
        "items",
        nargs="+",
        help="<workload|package> <A> <B> (A, B: kernel or package/kernel), "
        "<package>/<A> <package>/<B>, or <record A.json> <record B.json>",
    )
    c.add_argument("--problem", nargs="*", default=None, metavar="KEY=VALUE")
    c.add_argument("--out", default=None, help="also write the markdown here")
    f = sub.add_parser(
        "fidelity", parents=[common], help="harness median / ncu duration per kernel and size"
    )
    f.add_argument("package")
    f.add_argument("--record", action="store_true", help="write a fidelity record per row")
    f.add_argument("--out", default=None, help="also write the markdown here")
    r = sub.add_parser(
        "report",
        parents=[common],
        help="markdown tables + PNG plots of a package's or a workload's records",
    )
    r.add_argument("package", metavar="workload|package")
    r.add_argument("--out", default=None, help="folder (default: results/<package>/report)")
    r.add_argument(
        "--focus",
        default=None,
        metavar="IMPL",
        help="an implementation (package/kernel or a unique kernel name): the alternated "
        "table adds its ratio to the fastest other implementation per setting",
    )
    q = sub.add_parser(
        "ratios",
        parents=[common],
        help="per-round ratios of two entries of the same alternated runs, from their records",
        description="Per-round ratios A / B of two entries of the same alternated runs "
        "(python -m kernelplan.alternate), from their benchmark records: one row per run and "
        "problem, the median of the per-round ratios, the SM clock span and both records. "
        "Labels as the alternate table prints them: package/kernel, with a non-default "
        "config in brackets, e.g. mla/mla_decode_sm90[step=58].",
    )
    q.add_argument("a", help="an entry's label as the alternate table prints it (A in A / B)")
    q.add_argument("b", help="the other entry's label (B)")
    q.add_argument("--round", default=None, help="only the runs whose round_id starts so")
    q.add_argument("--since", default=None, help="only runs created at or after (ISO time)")
    q.add_argument("--until", default=None, help="only runs created before (ISO time)")
    b = sub.add_parser(
        "best-config", parents=[common], help="the fastest autotuned config, as --config items"
    )
    b.add_argument("package")
    b.add_argument("kernel")
    b.add_argument("--problem", nargs="*", default=None, metavar="KEY=VALUE")
    a = p.parse_args(argv)
    root = Path(a.results_dir) if a.results_dir else None
    try:
        if a.cmd == "compare":
            return _cmd_compare(a, root)
        if a.cmd == "fidelity":
            return _cmd_fidelity(a, root)
        if a.cmd == "report":
            render_report(a.package, root, Path(a.out) if a.out else None, focus=a.focus)
            return 0
        if a.cmd == "ratios":
            if root is not None and not root.is_dir():
                return die(f"--results-dir {root}: not a folder of records")
            rows = round_ratios(_load(root), a.a, a.b, a.round, a.since, a.until)
            print(ratios_table(rows, a.a, a.b))
            return 0
        records = _load(root, a.package)
        found = best_config(records, a.kernel, _parse_problem(a.problem))
        if found is None:
            return die(f"no benchmark record of {a.package}/{a.kernel} matches")
        cfg, us, path = found
        print(" ".join(config_overrides(cfg)))
        print(f"best: {us:.1f} us, from {path}", file=sys.stderr)
        return 0
    except KernelPlanError as e:
        return die(str(e))


def _cmd_compare(a: argparse.Namespace, root: Path | None) -> int:
    items = list(a.items)
    if len(items) == 2 and all(i.endswith(".json") for i in items):
        (pa, ra), (pb, rb) = _read(items[0]), _read(items[1])
        ra, rb = normalized(ra), normalized(rb)
        records = [(p, r) for p, r in _load(root) if r.get("kind") in ("ncu", "benchmark")]
        if not any(pp == pa for pp, _ in records):
            records = [*records, (pa, ra), (pb, rb)]
        ia = (ra.get("package", ""), ra.get("kernel", ""))
        ib = (rb.get("package", ""), rb.get("kernel", ""))
        if ra.get("kind") == rb.get("kind") == "static":
            text = static_compare_table((pa, ra), (pb, rb), impl_label(ia, ib), impl_label(ib, ia))
        else:
            sa = side_from_record(pa, ra, records, impl_label(ia, ib))
            sb = side_from_record(pb, rb, records, impl_label(ib, ia))
            text = compare_table(sa, sb)
    else:
        if len(items) == 3:
            scope, ref_a, ref_b = items
        elif len(items) == 2 and all("/" in i for i in items):
            scope, (ref_a, ref_b) = None, items
        else:
            raise KernelPlanError(
                "usage: compare <workload|package> <A> <B> [--problem k=v ...] | "
                "compare <package>/<A> <package>/<B> | compare <record A.json> <record B.json>"
            )
        ia = resolve_implementation(ref_a, scope)
        ib = resolve_implementation(ref_b, scope)
        text = compare_implementations(_load(root), ia, ib, _parse_problem(a.problem))
    print(text)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text)
    return 0


def compare_implementations(
    records: Sequence[Rec], ia: Impl, ib: Impl, problem: Mapping[str, Any] | None
) -> str:
    """The ncu comparison table where both implementations have ncu records (at one
    problem), else their static footprints side by side.

    Raises:
        KernelPlanError: the two are of different workloads, or neither kind of record is
            there for both (the message says what to run).
    """
    ca, cb = implementation_class(*ia), implementation_class(*ib)
    wa = getattr(getattr(ca, "workload", None), "name", None)
    wb = getattr(getattr(cb, "workload", None), "name", None)
    if wa and wb and wa != wb:
        raise KernelPlanError(
            f"{ia[0]}/{ia[1]} implements {wa} and {ib[0]}/{ib[1]} implements {wb}: a "
            "comparison is between implementations of one workload"
        )
    mine = [(p, r) for p, r in records if _is(r, ia) or _is(r, ib)]
    has_ncu = [newest(mine, kind="ncu", kernel=i, problem=problem) for i in (ia, ib)]
    if all(has_ncu):
        return compare_table(*compare_kernels(mine, ia, ib, problem))
    try:
        sa, sb = compare_static(mine, ia, ib, problem)
    except KernelPlanError as e:
        if any(has_ncu):  # the ncu side's message says which side lacks what
            compare_kernels(mine, ia, ib, problem)
        raise e from None
    return static_compare_table(sa, sb, impl_label(ia, ib), impl_label(ib, ia))


def _cmd_fidelity(a: argparse.Namespace, root: Path | None) -> int:
    records = _load(root, a.package)
    rows = fidelity_rows(records)
    if not rows:
        raise KernelPlanError(
            f"no ncu record of {a.package} with a matching harness record: run "
            "`<package> <kernel> --prof_type ncu --ncu-pair` first"
        )
    text = fidelity_table(rows)
    print(text)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text + "\n")
    if a.record:
        from .records import results_root, write_record

        base = root if root is not None else results_root()
        for row in rows:
            ncu_rec = json.loads(Path(row["ncu_record"]).read_text())
            row = {**row, **{k: _rel(row[k], base) for k in ("ncu_record", "harness_record")}}
            rec = {
                "kind": "fidelity",
                "package": ncu_rec.get("package"),
                "kernel": ncu_rec.get("kernel"),
                "problem": ncu_rec.get("problem"),
                "config": ncu_rec.get("config"),
                "device": ncu_rec.get("device"),
                "fidelity": {
                    **row,
                    "min_us": FIDELITY_MIN_US,
                    "tolerance_pct": FIDELITY_TOL_PCT,
                    "spread_tolerance_pct": SPREAD_TOL_PCT,
                },
            }
            print(f"record: {write_record(rec, root)}")
    return 1 if any(r["verdict"] == "FAIL" for r in rows) else 0


def _display_path(p: Path) -> str:
    """``p`` relative to the checkout when it lies inside it (reports are committed: no
    machine-specific absolute paths), else as given."""
    from .cutlass_src import repo_root

    try:
        return str(Path(p).resolve().relative_to(repo_root()))
    except ValueError:
        return str(p)


if __name__ == "__main__":
    sys.exit(main())
