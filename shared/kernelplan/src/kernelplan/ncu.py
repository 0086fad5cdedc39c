"""Nsight Compute mode (``--prof_type=ncu``): the kernel under ``ncu``, read with ``ncu_report``.

How a run goes:

1. ``find_ncu`` locates the ``ncu`` binary ($KERNELPLAN_NCU, then PATH, then
   ``/usr/local/cuda*/bin``, ``/opt/nvidia/nsight-compute*``); missing -> one line naming what
   to install.
2. The same kernel is re-launched under ``ncu`` by the same single-kernel command
   (``python -m kernelplan.cli <package> <kernel> <problem flags> --config ... --ncu-child``,
   :func:`kernelplan.cli.child_argv`). The child runs the harness's own
   ``KernelPlan.run_benchmark`` with few launches (1 warm-up, ``--ncu-launches`` timed, eager:
   no CUDA graph), so the profiled kernels are the ones the harness times.
3. Which kernels ncu profiles (``--ncu-range``): ``nvtx`` (default) keeps those inside the
   timed NVTX range that ``timing.benchmark`` pushes (domain ``kernelplan`` when the ``nvtx``
   package is importable, torch's default domain otherwise; the range is named
   ``"<package>/<kernel> <config label>"``, matched as a regular expression in which every
   character special to ncu or to regular expressions stands for "any character");
   ``profiler`` wraps the timed region in cudaProfilerStart/Stop in the child and runs ncu with
   ``--profile-from-start off``; ``none`` profiles every launch after the warm-up.
   ``--ncu-kernel REGEX`` adds ncu's ``-k regex:REGEX``. ``-c`` caps the profiled kernels at
   ``16 x launches``.
4. Clocks: ``--clock-control none`` by default (the GPU as found, as the harness sees it;
   never lock the clocks of a shared machine); ``--ncu-clock-control base`` is for machines
   one owns. Cache: ``--cache-control all`` (ncu flushes caches before each replay pass: cold
   L2, as the harness's rotating workspaces); ``--ncu-cache-control none`` leaves the caches
   as the previous replay pass or kernel left them (warm L2: a split-KV combine that reads
   what its split kernel just wrote). Both are recorded.
5. Sections: ``--ncu-set kernelplan`` (default) collects SpeedOfLight, LaunchStats, Occupancy,
   ComputeWorkloadAnalysis, MemoryWorkloadAnalysis and WarpStateStats; any other name is
   passed to ncu's ``--set`` (basic, detailed, full, ...). The metrics of :data:`METRICS` are
   also requested explicitly (``--metrics``); should ncu reject one of those names, the run is
   repeated once with the sections alone, and the record says so.
6. The ``.ncu-rep`` goes to ``results/<package>/<kernel>/ncu-reports/`` (never overwritten) with
   ncu's log beside it; it is read with Nsight Compute's Python module ``ncu_report`` (from
   ``<ncu install>/extras/python``; where it does not import, ``ncu --import ... --csv
   --page raw`` is parsed instead, and the record names the reader).
7. A record of kind ``ncu``: the table metrics of the kernel that takes most of the time
   (median over its profiled launches), the duration per workload launch, the top warp-stall
   reasons, each metric's ncu name, the command, ncu version, clock and cache policy.

Errors write no record: ncu missing, ncu failing, a filter that matches no kernel, a report
that cannot be read. A readable report that lacks some table metrics (a smaller section set)
gives a record with ``"complete": false`` and the reason; the tables show it as incomplete.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as _dt
import glob
import importlib
import importlib.util
import io
import json
import os
import re
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import KernelPlanError

NCU_ENV = "KERNELPLAN_NCU"
NCU_ROOTS_ENV = "KERNELPLAN_NCU_ROOTS"
#: Where ncu is looked for after $KERNELPLAN_NCU and PATH (globs; newest version first).
DEFAULT_ROOTS = (
    "/usr/local/cuda/bin",
    "/usr/local/cuda-*/bin",
    "/opt/nvidia/nsight-compute/*",
    "/opt/nvidia/nsight-compute*",
    "/usr/local/cuda*/nsight-compute*",
)
INSTALL_HINT = (
    "install NVIDIA Nsight Compute (the CUDA Toolkit ships it as `ncu`; standalone: "
    "https://developer.nvidia.com/nsight-compute, or the `nsight-compute-<version>` apt "
    "package) or set KERNELPLAN_NCU to the ncu binary"
)
NVTX_DOMAIN = "kernelplan"
#: ``-c`` is this many kernels per workload launch profiled (a cap; the range filter limits).
KERNELS_PER_LAUNCH_CAP = 16

#: The default section set ("kernelplan"): what the table metrics need, and no more.
KERNELPLAN_SECTIONS = (
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis",
    "WarpStateStats",
)

#: The table: field -> the Nsight Compute metric names (Nsight Compute 2025.3, sm_90; first
#: one present wins, or the largest with ``"combine": "max"``), the unit the record uses, the
#: section that collects it, and what it means.
METRICS: dict[str, dict[str, Any]] = {
    "duration_us": {
        "ncu": ["gpu__time_duration.sum"],
        "unit": "us",
        "section": "SpeedOfLight",
        "doc": "GPU time of the kernel, launch to completion (Duration in GPU Speed Of Light)",
    },
    "sm_throughput_pct": {
        "ncu": ["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
        "unit": "%",
        "section": "SpeedOfLight",
        "doc": "Compute (SM) Throughput: the busiest SM sub-unit, % of its peak over the "
        "kernel's elapsed cycles",
    },
    "memory_throughput_pct": {
        "ncu": ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"],
        "unit": "%",
        "section": "SpeedOfLight",
        "doc": "Memory Throughput: the busiest of DRAM, L2, L1 and shared memory, % of peak",
    },
    "dram_throughput_pct": {
        "ncu": [
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        ],
        "unit": "%",
        "section": "SpeedOfLight",
        "doc": "DRAM Throughput (DRAM%): HBM traffic, % of the peak bandwidth",
    },
    "tensor_pipe_pct": {
        "ncu": [
            "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        ],
        "combine": "max",
        "unit": "%",
        "section": "ComputeWorkloadAnalysis",
        "doc": "Tensor-pipe utilisation (TC%): cycles the tensor pipe is busy, % of the SMs' "
        "active cycles; GMMA is Hopper's warpgroup MMA (WGMMA), HMMA the warp-level mma.sync; "
        "the largest of those present",
    },
    "achieved_occupancy_pct": {
        "ncu": ["sm__warps_active.avg.pct_of_peak_sustained_active"],
        "unit": "%",
        "section": "Occupancy",
        "doc": "Achieved Occupancy: active warps per SM, % of the SM's maximum",
    },
    "theoretical_occupancy_pct": {
        "ncu": ["sm__maximum_warps_per_active_cycle_pct"],
        "unit": "%",
        "section": "Occupancy",
        "doc": "Theoretical Occupancy from registers, shared memory and block size",
    },
    "registers_per_thread": {
        "ncu": ["launch__registers_per_thread"],
        "unit": "registers",
        "section": "LaunchStats",
        "doc": "Registers allocated per thread",
    },
    "smem_static_bytes": {
        "ncu": ["launch__shared_mem_per_block_static"],
        "unit": "bytes",
        "section": "LaunchStats",
        "doc": "Static shared memory per block (SMEM/block = static + dynamic)",
    },
    "smem_dynamic_bytes": {
        "ncu": ["launch__shared_mem_per_block_dynamic"],
        "unit": "bytes",
        "section": "LaunchStats",
        "doc": "Dynamic shared memory per block (CuTe DSL kernels allocate theirs here)",
    },
    "l2_hit_rate_pct": {
        "ncu": ["lts__t_sector_hit_rate.pct"],
        "unit": "%",
        "section": "MemoryWorkloadAnalysis",
        "doc": "L2 Hit Rate: sectors found in L2, % of L2 sector lookups",
    },
    "sm_clock_mhz": {
        "ncu": ["sm__cycles_elapsed.avg.per_second"],
        "unit": "MHz",
        "section": "SpeedOfLight",
        "optional": True,
        "doc": "SM Frequency while profiling (with --clock-control none: the clock as found)",
    },
    "dram_clock_mhz": {
        "ncu": ["dram__cycles_elapsed.avg.per_second"],
        "unit": "MHz",
        "section": "SpeedOfLight",
        "optional": True,
        "doc": "DRAM Frequency while profiling",
    },
    "grid_size": {
        "ncu": ["launch__grid_size"],
        "unit": "blocks",
        "section": "LaunchStats",
        "optional": True,
        "doc": "Blocks in the grid",
    },
    "block_size": {
        "ncu": ["launch__block_size"],
        "unit": "threads",
        "section": "LaunchStats",
        "optional": True,
        "doc": "Threads per block",
    },
}
#: Warp-stall reasons (WarpStateStats): average warp cycles per issued instruction spent
#: stalled for each reason; the record keeps the largest few.
STALL_RE = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
TOP_STALLS = 5
#: Warp states in the same metric family that are not stalls ("selected": the warp issued).
NOT_STALLS = {"selected"}
#: Every stall-reason metric is wanted when reading a report, and so are any tensor-pipe ones.
_TENSOR_RE = re.compile(r"^sm__pipe_tensor\w*_cycles_active\.avg\.pct_of_peak_sustained_active$")


class NcuError(KernelPlanError):
    """Nsight Compute missing, failing, profiling nothing, or a report that cannot be read."""


# -- finding ncu and ncu_report -------------------------------------------------------------
def _executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def find_ncu(
    env: Mapping[str, str] | None = None,
    path: str | None = None,
    roots: Sequence[str] | None = None,
) -> Path:
    """The ``ncu`` binary.

    Order: ``$KERNELPLAN_NCU`` (must exist when set), ``ncu`` on ``path`` (default $PATH),
    then ``roots`` (default ``$KERNELPLAN_NCU_ROOTS`` split on ":", else
    :data:`DEFAULT_ROOTS`), newest version first.

    Raises:
        NcuError: not found; the message names what to install.
    """
    env = os.environ if env is None else env
    explicit = env.get(NCU_ENV)
    if explicit:
        p = Path(explicit)
        if _executable(p):
            return p
        raise NcuError(f"{NCU_ENV}={explicit} is not an executable ncu binary: {INSTALL_HINT}")
    found = shutil.which("ncu", path=path if path is not None else env.get("PATH", ""))
    if found:
        return Path(found)
    if roots is None:
        roots = [r for r in env.get(NCU_ROOTS_ENV, "").split(":") if r] or DEFAULT_ROOTS
    for pattern in roots:
        for d in sorted(glob.glob(pattern), reverse=True):
            cand = Path(d) / "ncu"
            if _executable(cand):
                return cand
    where = ", ".join(roots)
    raise NcuError(f"Nsight Compute's `ncu` was not found on PATH nor in {where}: {INSTALL_HINT}")


def ncu_python_dirs(ncu: Path) -> list[Path]:
    """Folders holding ``ncu_report.py`` for this ncu: ``extras/python`` of its install
    (beside the binary, one level up, or under a ``nsight-compute*`` folder next to a CUDA
    ``bin/ncu`` wrapper)."""
    seen: list[Path] = []
    for exe in (ncu, ncu.resolve()):
        for base in (exe.parent, exe.parent.parent):
            cands = [base / "extras" / "python"]
            cands += sorted(base.glob("nsight-compute*/extras/python"), reverse=True)
            for c in cands:
                if (c / "ncu_report.py").is_file() and c not in seen:
                    seen.append(c)
    return seen


def load_ncu_report(ncu: Path | None):
    """Import Nsight Compute's ``ncu_report`` (already importable, or from ``ncu``'s
    install); None where it cannot be imported."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    for d in ncu_python_dirs(ncu) if ncu else []:
        sys.path.insert(0, str(d))
        try:
            return importlib.import_module("ncu_report")
        except ImportError:
            sys.path.remove(str(d))
    return None


def ncu_version(ncu: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(ncu), "--version"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([\w.]+)", out)
    return m.group(1) if m else (out.strip().splitlines() or [None])[-1]


# -- options --------------------------------------------------------------------------------
@dataclass
class NcuOptions:
    """What ``--ncu-*`` sets (see :func:`add_arguments`)."""

    set: str = "kernelplan"
    clock_control: str = "none"
    cache_control: str = "all"
    range: str = "nvtx"
    kernel_regex: str | None = None
    launches: int = 3
    extra_metrics: list[str] = field(default_factory=list)
    table_metrics: bool = True
    pair: bool = False
    timeout_s: float = 1800.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> NcuOptions:
        extra = [m for m in (getattr(args, "ncu_metrics", "") or "").split(",") if m]
        return cls(
            set=getattr(args, "ncu_set", cls.set),
            clock_control=getattr(args, "ncu_clock_control", cls.clock_control),
            cache_control=getattr(args, "ncu_cache_control", cls.cache_control),
            range=getattr(args, "ncu_range", cls.range),
            kernel_regex=getattr(args, "ncu_kernel", None),
            launches=max(1, int(getattr(args, "ncu_launches", cls.launches))),
            extra_metrics=extra,
            pair=bool(getattr(args, "ncu_pair", False)),
            timeout_s=float(getattr(args, "ncu_timeout", cls.timeout_s)),
        )

    def sections(self) -> list[str]:
        return list(KERNELPLAN_SECTIONS) if self.set == "kernelplan" else []

    def metrics(self) -> list[str]:
        names = [n for m in METRICS.values() for n in m["ncu"]] if self.table_metrics else []
        return list(dict.fromkeys(names + self.extra_metrics))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--ncu-*`` options (per-kernel CLI and ``profile --ncu``)."""
    g = parser.add_argument_group("Nsight Compute (--prof_type=ncu, profile --ncu)")
    g.add_argument(
        "--ncu-set",
        default="kernelplan",
        help="sections: kernelplan (default: SpeedOfLight, LaunchStats, Occupancy, "
        "ComputeWorkloadAnalysis, MemoryWorkloadAnalysis, WarpStateStats) or an ncu set "
        "(basic, detailed, full, ...)",
    )
    g.add_argument(
        "--ncu-clock-control",
        choices=("none", "base"),
        default="none",
        help="none (default): the clocks as found, as the harness sees them; base: ncu locks "
        "the base clock while profiling (only on a GPU you own). Recorded",
    )
    g.add_argument(
        "--ncu-cache-control",
        choices=("all", "none"),
        default="all",
        help="all (default): ncu flushes the caches before each replay pass (cold L2); none: "
        "it leaves them, so a kernel finds in L2 what ran before it (the previous replay pass "
        "or kernel), closer to a CUDA graph for a split-KV combine that reads the partials "
        "its split kernel just wrote. Recorded",
    )
    g.add_argument(
        "--ncu-range",
        choices=("nvtx", "profiler", "none"),
        default="nvtx",
        help="which launches to profile: nvtx (default) the harness's timed NVTX range; "
        "profiler: cudaProfilerStart/Stop around it; none: every launch after the warm-up",
    )
    g.add_argument("--ncu-kernel", default=None, metavar="REGEX", help="also: -k regex:REGEX")
    g.add_argument(
        "--ncu-launches", type=int, default=3, help="timed launches profiled (default 3)"
    )
    g.add_argument("--ncu-metrics", default="", help="extra metrics, comma-separated")
    g.add_argument(
        "--ncu-pair",
        action="store_true",
        help="after ncu, time the kernel with the harness in this process too and record both "
        "with one pair_id (the timing-fidelity pair)",
    )
    g.add_argument("--ncu-timeout", type=float, default=1800.0, help="seconds (default 1800)")


# -- the ncu command ------------------------------------------------------------------------
_SPECIAL = set("\\^$.|?*+()[]{}/@:")


def nvtx_pattern(range_name: str) -> str:
    """``range_name`` as a regular expression with no character ncu or a regex engine treats
    specially: each such character (``/`` separates nested ranges and ``@`` the domain in
    ncu's syntax) becomes ``.``, which matches it."""
    return "".join("." if c in _SPECIAL else c for c in range_name)


def nvtx_filter(range_name: str, domain: str | None) -> str:
    """The ``--nvtx-include`` expression for the push/pop range ``range_name`` in
    ``domain`` (None: the default domain)."""
    prefix = f"{domain}@" if domain else ""
    return f"regex:{prefix}{nvtx_pattern(range_name)}/"


def build_command(
    ncu: Path | str,
    report_base: Path | str,
    child: Sequence[str],
    opts: NcuOptions,
    *,
    range_name: str,
    nvtx_domain: str | None,
    child_warmup: int = 1,
    with_metrics: bool | Sequence[str] = True,
) -> list[str]:
    """The full ncu command line (``report_base`` without the ``.ncu-rep`` suffix)."""
    cmd = [
        str(ncu),
        "--clock-control",
        opts.clock_control,
        "--cache-control",
        opts.cache_control,
        "--target-processes",
        "all",
        "-o",
        str(report_base),
    ]
    if opts.set == "kernelplan":
        for s in opts.sections():
            cmd += ["--section", s]
    else:
        cmd += ["--set", opts.set]
    if isinstance(with_metrics, bool):
        metrics = opts.metrics() if with_metrics else []
    else:  # an explicit list: what is left after ncu rejected some names
        metrics = list(with_metrics)
    if metrics:
        cmd += ["--metrics", ",".join(metrics)]
    if opts.range == "nvtx":
        cmd += ["--nvtx", "--nvtx-include", nvtx_filter(range_name, nvtx_domain)]
    elif opts.range == "profiler":
        cmd += ["--profile-from-start", "off"]
    elif opts.range == "none":
        cmd += ["--launch-skip", str(child_warmup)]
    else:
        raise NcuError(f"unknown --ncu-range {opts.range!r} (nvtx, profiler, none)")
    if opts.kernel_regex:
        cmd += ["-k", f"regex:{opts.kernel_regex}"]
    cmd += ["-c", str(opts.launches * KERNELS_PER_LAUNCH_CAP)]
    return cmd + list(child)


def filter_description(opts: NcuOptions, range_name: str, domain: str | None) -> str:
    parts = []
    if opts.range == "nvtx":
        parts.append(f"--nvtx-include {nvtx_filter(range_name, domain)!r}")
    elif opts.range == "profiler":
        parts.append("cudaProfilerStart/Stop around the timed region")
    if opts.kernel_regex:
        parts.append(f"-k regex:{opts.kernel_regex}")
    return " and ".join(parts) or "every launch after the warm-up"


# -- the child: the single-kernel command itself (kernelplan.cli.child_argv) ----------------
@contextlib.contextmanager
def profiler_range(orig, name, *args, **kwargs):
    import torch

    if not name:
        with orig(name, *args, **kwargs):
            yield
        return
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    try:
        with orig(name, *args, **kwargs):
            yield
    finally:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


# -- reading a report -----------------------------------------------------------------------
@dataclass
class NcuKernel:
    """One profiled kernel launch: its name and the wanted metrics, ncu name -> (value,
    unit)."""

    name: str
    metrics: dict[str, tuple[Any, str]]


_WANTED = {n for m in METRICS.values() for n in m["ncu"]}


def wanted_metric(name: str) -> bool:
    return name in _WANTED or bool(STALL_RE.match(name)) or bool(_TENSOR_RE.match(name))


def _metric_value(m: Any) -> tuple[Any, str]:
    unit = ""
    with contextlib.suppress(Exception):
        unit = str(m.unit()) if hasattr(m, "unit") else ""
    for getter in ("as_double", "as_uint64", "as_string"):
        fn = getattr(m, getter, None)
        if fn is None:
            continue
        try:
            return fn(), unit
        except Exception:
            continue
    return None, unit


def read_with_module(module: Any, path: Path | str) -> list[NcuKernel]:
    """Every profiled kernel in the report, through an ``ncu_report``-like module (its
    ``load_report`` -> context with ``num_ranges``/``range_by_idx``, ranges with
    ``num_actions``/``action_by_idx``, actions with ``name``/``metric_names``/
    ``metric_by_name``).

    Raises:
        NcuError: the report cannot be loaded.
    """
    try:
        ctx = module.load_report(str(path))
    except Exception as e:
        raise NcuError(f"cannot read the Nsight Compute report {path}: {e}") from None
    if ctx is None:
        raise NcuError(f"cannot read the Nsight Compute report {path}: ncu_report returned None")
    out: list[NcuKernel] = []
    try:
        for ri in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(ri)
            for ai in range(rng.num_actions()):
                act = rng.action_by_idx(ai)
                metrics = {}
                for n in act.metric_names():
                    if wanted_metric(n):
                        m = act.metric_by_name(n)
                        if m is not None:
                            metrics[n] = _metric_value(m)
                out.append(NcuKernel(name=str(act.name()), metrics=metrics))
    except NcuError:
        raise
    except Exception as e:
        raise NcuError(f"cannot read the Nsight Compute report {path}: {e}") from None
    return out


def _num(text: str) -> Any:
    t = text.strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return text


def parse_raw_csv(text: str) -> list[NcuKernel]:
    """``ncu --import <rep> --csv --page raw --print-units base``: a header row of metric
    names, a row of units, then one row per kernel."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith("==")]
    if len(rows) < 2:
        return []
    header, units, data = rows[0], rows[1], rows[2:]
    name_col = header.index("Kernel Name") if "Kernel Name" in header else None
    out = []
    for r in data:
        metrics = {}
        for i, h in enumerate(header):
            if i < len(r) and wanted_metric(h):
                metrics[h] = (_num(r[i]), units[i] if i < len(units) else "")
        name = r[name_col] if name_col is not None and name_col < len(r) else "?"
        out.append(NcuKernel(name=name, metrics=metrics))
    return out


def read_with_csv(ncu: Path, path: Path) -> list[NcuKernel]:
    cmd = [str(ncu), "--import", str(path), "--csv", "--page", "raw", "--print-units", "base"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        raise NcuError(f"cannot read the Nsight Compute report {path}: {e}") from None
    if p.returncode:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise NcuError(
            f"cannot read the Nsight Compute report {path}: {msg[-1] if msg else p.returncode}"
        )
    return parse_raw_csv(p.stdout)


def read_report(
    path: Path | str, *, ncu: Path | None = None, module: Any = None
) -> tuple[list[NcuKernel], str]:
    """The report's kernels and the reader used ("ncu_report" or "ncu --import --csv").

    Raises:
        NcuError: no such file, or it cannot be read.
    """
    path = Path(path)
    if not path.is_file() and Path(str(path) + ".xz").is_file():
        path = Path(str(path) + ".xz")  # a record written before its report was compressed
    if not path.is_file():
        raise NcuError(f"no Nsight Compute report at {path}")
    if path.suffix == ".xz":  # reports are kept xz-compressed (~40x smaller); read a copy
        import lzma
        import tempfile

        with tempfile.TemporaryDirectory(prefix="kernelplan-ncu-") as tmp:
            plain = Path(tmp) / path.name.removesuffix(".xz")
            plain.write_bytes(lzma.decompress(path.read_bytes()))
            return read_report(plain, ncu=ncu, module=module)
    if module is None:
        module = load_ncu_report(ncu)
    if module is not None:
        return read_with_module(module, path), "ncu_report"
    if ncu is None:
        raise NcuError(
            f"cannot read {path}: Nsight Compute's Python module ncu_report does not import "
            "and no ncu binary was given (add <ncu install>/extras/python to PYTHONPATH)"
        )
    return read_with_csv(ncu, path), "ncu --import --csv"


# -- units and the summary ------------------------------------------------------------------
_PREFIX = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}


def _scale(unit: str, base: str) -> float | None:
    """Factor from ``<prefix><base>`` to ``base`` ("nsecond", "second" -> 1e-9)."""
    unit = unit.strip()
    if unit.endswith(base):
        p = unit[: -len(base)]
        return _PREFIX.get(p)
    return None


def to_unit(value: Any, unit: str, target: str) -> float | None:
    """Convert an ncu value to the record's unit: "us", "MHz", "bytes", "%" or a count."""
    if value is None or isinstance(value, str):
        return None
    v = float(value)
    unit = (unit or "").strip()
    if target == "us":
        f = _scale(unit, "second") if unit else 1e-9  # ncu's base unit is the nanosecond
        return v * (f if f is not None else 1e-9) * 1e6
    if target == "MHz":
        num, _, den = unit.partition("/")
        if den:  # "cycle/second", "cycle/nsecond", ...
            f = _scale(den, "second")
            return v / f / 1e6 if f else None
        if unit.lower().endswith("hz"):  # "hz", "Mhz", "GHz", ...
            f = _PREFIX.get(unit[:-2]) or _PREFIX.get(unit[:-2].upper())
            return v * f / 1e6 if f else None
        if unit:
            return None
        # no unit given: cycles per second (ncu's base unit), or per nanosecond as ncu shows it
        return v / 1e6 if v > 1e6 else v * 1e3
    if target == "bytes":
        base = unit.partition("/")[0]
        f = _scale(base, "byte") if base else 1.0
        return v * (f if f is not None else 1.0)
    return v


def _duration_us(k: NcuKernel) -> float | None:
    for n in METRICS["duration_us"]["ncu"]:
        if n in k.metrics:
            return to_unit(*k.metrics[n], "us")
    return None


def _median(vals: Sequence[float]) -> float | None:
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def summarize_kernels(kernels: Sequence[NcuKernel], launches: int) -> dict[str, Any]:
    """The table metrics of the kernel with the largest total duration (median over its
    profiled instances), the workload's duration per launch, and the top stall reasons.

    ``launches``: workload launches profiled; when the kernel count divides by it, the kernels
    are grouped per launch and ``duration_us`` is the median per-launch sum (several kernels
    per launch, e.g. a GEMM plus a reduction); else the primary kernel's median.
    """
    if not kernels:
        raise NcuError("the report holds no profiled kernel")
    totals: dict[str, float] = {}
    for k in kernels:
        totals[k.name] = totals.get(k.name, 0.0) + (_duration_us(k) or 0.0)
    primary = max(totals, key=lambda n: totals[n])
    insts = [k for k in kernels if k.name == primary]
    values: dict[str, float | None] = {}
    names: dict[str, str | None] = {}
    for fld, spec in METRICS.items():
        found = []
        for n in spec["ncu"] + (
            sorted({m for k in insts for m in k.metrics if _TENSOR_RE.match(m)})
            if spec.get("combine") == "max"
            else []
        ):
            vals = [to_unit(*k.metrics[n], spec["unit"]) for k in insts if n in k.metrics]
            med = _median(vals)
            if med is not None and n not in [f[0] for f in found]:
                found.append((n, med))
        if not found:
            values[fld], names[fld] = None, None
        elif spec.get("combine") == "max":
            n, v = max(found, key=lambda f: f[1])
            values[fld], names[fld] = v, n
        else:
            values[fld], names[fld] = found[0][1], found[0][0]
    stall_vals: dict[str, list[float]] = {}
    for k in insts:
        for n, (v, _u) in k.metrics.items():
            m = STALL_RE.match(n)
            if m and m.group(1) not in NOT_STALLS and not isinstance(v, str) and v is not None:
                stall_vals.setdefault(m.group(1), []).append(float(v))
    stalls = sorted(
        ({"reason": r, "cycles_per_issue": statistics.median(v)} for r, v in stall_vals.items()),
        key=lambda s: -s["cycles_per_issue"],
    )
    n = len(kernels)
    per_launch = n // launches if launches and n % launches == 0 else None
    if per_launch:
        sums = [
            sum(_duration_us(k) or 0.0 for k in kernels[i * per_launch : (i + 1) * per_launch])
            for i in range(launches)
        ]
        duration = statistics.median(sums)
    else:
        duration = values["duration_us"]
    smem = None
    if values["smem_static_bytes"] is not None or values["smem_dynamic_bytes"] is not None:
        smem = (values["smem_static_bytes"] or 0.0) + (values["smem_dynamic_bytes"] or 0.0)
    return {
        "kernels_profiled": n,
        "launches": launches,
        "kernels_per_launch": per_launch,
        "kernel_names": list(dict.fromkeys(k.name for k in kernels)),
        "primary_kernel": primary,
        "primary_share": totals[primary] / sum(totals.values()) if sum(totals.values()) else None,
        "duration_us": duration,
        "primary_duration_us": values["duration_us"],
        "metrics": {**values, "smem_per_block_bytes": smem},
        "metric_names": names,
        "stalls": stalls[:TOP_STALLS],
        "per_kernel_us": [_duration_us(k) for k in kernels],
    }


def completeness(summary: Mapping[str, Any], collected: str) -> tuple[bool, str | None]:
    """(complete, reason): every non-optional table metric and the stall reasons present."""
    missing = [
        f"{fld} ({METRICS[fld]['section']})"
        for fld, spec in METRICS.items()
        if not spec.get("optional") and summary["metrics"].get(fld) is None
    ]
    if not summary.get("stalls"):
        missing.append("warp-stall reasons (WarpStateStats)")
    if summary.get("kernels_profiled", 0) >= summary.get("launches", 1) * KERNELS_PER_LAUNCH_CAP:
        missing.append("some kernels (the -c cap was reached)")
    if not missing:
        return True, None
    return False, f"not in the report ({collected}): " + ", ".join(missing)


# -- running it -----------------------------------------------------------------------------
def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()[:40] or "x"


def _have_nvtx_package() -> bool:
    return importlib.util.find_spec("nvtx") is not None


def _free_gpu_memory() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


_METRIC_ERR = re.compile(
    r"metric.*(not found|invalid|unknown|failed to find|does not exist|not (available|"
    r"supported))|(failed to find|unknown|invalid) metric",
    re.IGNORECASE,
)


def _last_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "==ERROR==" in ln or ln.startswith("error:")]
    return (errs or lines or ["(no output)"])[-1][:300]


def _run_ncu(cmd: Sequence[str], opts: NcuOptions, runner: Callable[..., Any]) -> tuple[int, str]:
    try:
        p = runner(
            list(cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=opts.timeout_s,
        )
    except subprocess.TimeoutExpired as e:
        raise NcuError(f"ncu did not finish within {opts.timeout_s:.0f} s (--ncu-timeout)") from e
    except OSError as e:
        raise NcuError(f"cannot run {cmd[0]}: {e}: {INSTALL_HINT}") from None
    return p.returncode, p.stdout or ""


def profile(
    plan: Any,
    problem: Any,
    config: Any,
    target: Any,
    opts: NcuOptions | None = None,
    *,
    results_dir: Path | str | None = None,
    record: bool = True,
    cold_l2: bool = True,
    warmup: int = 10,
    reps: int = 100,
    cuda_graph: bool = False,
    log: Callable[[str], Any] = print,
    runner: Callable[..., Any] = subprocess.run,
    report_module: Any = None,
    ncu: Path | None = None,
) -> tuple[dict[str, Any], Path | None]:
    """Profile one (problem, config) under ncu; returns the ``ncu`` record and its path (None
    with ``record=False``). ``warmup``/``reps``/``cuda_graph`` apply to the ``opts.pair``
    harness timing only. ``runner`` and ``report_module`` are injectable for tests.

    Raises:
        NcuError: ncu missing or failing, nothing profiled, or an unreadable report; no
            record is written then.
    """
    from . import device as devmod
    from .cli import child_argv
    from .records import results_root, write_record

    opts = opts or NcuOptions()
    ncu = ncu or find_ncu()
    dev = devmod.current_device()
    range_name = f"{plan.package}/{plan.name} {config.label()}"
    domain = NVTX_DOMAIN if _have_nvtx_package() else None
    root = Path(results_dir) if results_dir is not None else results_root()
    if record:
        folder = root / _slug(plan.package) / _slug(plan.name) / "ncu-reports"
        folder.mkdir(parents=True, exist_ok=True)
    else:  # --no-record: the report and log go to a temporary folder, named in the log
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="kernelplan-ncu-"))
    now = _dt.datetime.now(_dt.timezone.utc)
    dev_slug = _slug(dev.name) if dev else "cpu"
    base = folder / f"{now:%Y-%m-%dT%H-%M-%SZ}-{dev_slug}-{secrets.token_hex(3)}"
    rep = base.with_name(base.name + ".ncu-rep")
    logpath = base.with_name(base.name + ".log")
    child = child_argv(
        plan, problem, config, target, reps=opts.launches, cold_l2=cold_l2, range_mode=opts.range
    )
    desc = filter_description(opts, range_name, domain)

    _free_gpu_memory()
    clocks_before = devmod.clocks_now()
    cmd = build_command(ncu, base, child, opts, range_name=range_name, nvtx_domain=domain)
    log(f"ncu: {shlex.join(cmd)}")
    rc, out = _run_ncu(cmd, opts, runner)
    dropped = None
    if rc and opts.metrics() and _METRIC_ERR.search(out) and not rep.exists():
        # keep the names ncu did not complain about; with none named, keep the sections alone
        named = [m for m in opts.metrics() if m in out]
        keep = [m for m in opts.metrics() if m not in named] if named else []
        dropped = {"error": _last_error(out), "metrics": named or opts.metrics()}
        log(f"ncu rejected metric names ({dropped['error']}); again without {len(named) or 'any'}")
        cmd = build_command(
            ncu, base, child, opts, range_name=range_name, nvtx_domain=domain, with_metrics=keep
        )
        rc, out2 = _run_ncu(cmd, opts, runner)
        out = out + "\n==== retry with fewer --metrics ====\n" + out2
    clocks_after = devmod.clocks_now()
    logpath.write_text(out)
    if "ERR_NVGPUCTRPERM" in out:
        raise NcuError(
            "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root "
            "or allow profiling for all users, see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
        )
    if rc:
        raise NcuError(f"ncu exited with {rc}: {_last_error(out)} (log: {logpath})")
    if not rep.exists():
        raise NcuError(
            f"ncu profiled no kernel: the filter ({desc}) matched nothing, so no report was "
            f"written (log: {logpath}); try --ncu-range profiler, or check --ncu-kernel"
        )
    kernels, reader = read_report(rep, ncu=ncu, module=report_module)
    if not kernels:
        raise NcuError(f"the filter ({desc}) matched no kernel: {rep} holds 0 results")
    summary = summarize_kernels(kernels, opts.launches)
    collected = (
        "sections " + ", ".join(opts.sections()) if opts.set == "kernelplan" else f"set {opts.set}"
    )
    complete, why = completeness(summary, collected)
    if not complete:
        log(f"warning: incomplete ncu record: {why}")
    pair_id = secrets.token_hex(4) if opts.pair else None
    rec = plan.record_base("ncu", problem, config, target)
    rec["ncu"] = {
        **summary,
        "complete": complete,
        "incomplete_reason": why,
        "report": _rel(_compress(rep), root),
        "log": _rel(logpath, root),
        "reader": reader,
        "ncu_version": ncu_version(ncu),
        "ncu_path": str(ncu),
        "command": cmd,
        "clock_control": opts.clock_control,
        "cache_control": opts.cache_control,
        "set": opts.set,
        "sections": opts.sections(),
        "extra_metrics_dropped": dropped,
        "filter": {
            "range": opts.range,
            "nvtx_range": range_name,
            "nvtx_domain": domain,
            "kernel_regex": opts.kernel_regex,
            "description": desc,
        },
        "child": {
            "warmup": 1,
            "launches": opts.launches,
            "cold_l2": cold_l2,
            # what the child really timed: graph replays where the implementation's config
            # asks for them (KernelPlan.run_benchmark reads the kernel's meta)
            "cuda_graph": bool(
                getattr(plan.kernel(problem, config, target), "meta", {}).get("cuda_graph")
            ),
        },
        "metric_docs": {k: v["doc"] for k, v in METRICS.items()},
    }
    rec["clocks"] = {"before": clocks_before, "after": clocks_after}
    if pair_id:
        rec["pair_id"] = pair_id
    path = write_record(rec, root) if record else None
    if path:
        log(f"record: {path}")
    if pair_id:
        _harness_pair(
            plan,
            problem,
            config,
            target,
            pair_id,
            root,
            record,
            warmup,
            reps,
            cold_l2,
            cuda_graph,
            log,
        )
    return rec, path


def _compress(rep: Path) -> Path:
    """Replace the report by its xz copy (a report is mostly repeated structure: about 40x
    smaller, and committed reports must travel to GPU hosts with the checkout); readers take
    either (:func:`read_report`). Returns the path kept."""
    import lzma

    xz = Path(str(rep) + ".xz")
    try:
        xz.write_bytes(lzma.compress(rep.read_bytes(), preset=6))
        rep.unlink()
    except OSError:
        return rep
    return xz


def _rel(p: Path, root: Path) -> str:
    try:
        return str(p.relative_to(root))
    except ValueError:
        return str(p)


def _harness_pair(
    plan, problem, config, target, pair_id, root, record, warmup, reps, cold_l2, cuda_graph, log
) -> None:
    """The harness timing of the same (problem, config), in this process, after ncu."""
    from .records import write_record

    rec, st, _roof = plan.benchmark_record(
        problem,
        config,
        target=target,
        warmup=warmup,
        reps=reps,
        cold_l2=cold_l2,
        cuda_graph=cuda_graph,
        log=log,
    )
    rec["pair_id"] = pair_id
    log(f"harness (pair {pair_id}): median {st.median_us:.1f} us, spread {st.spread_pct:.2f}%")
    if record:
        log(f"record: {write_record(rec, root)}")


def table_row(rec: Mapping[str, Any], path: Path | None = None) -> dict[str, Any]:
    """One line of the ncu table for a record of kind ``ncu``."""
    n = rec["ncu"]
    m = n["metrics"]

    def f(v, fmt):
        return format(v, fmt) if isinstance(v, (int, float)) else "n/a"

    stall = n["stalls"][0]["reason"] if n.get("stalls") else "n/a"
    smem = m.get("smem_per_block_bytes")
    return {
        "kernel": rec["kernel"],
        "problem": " ".join(f"{k}={v}" for k, v in rec["problem"].items() if v is not None),
        "ncu_us": f(n.get("duration_us"), ".1f"),
        "TC%": f(m.get("tensor_pipe_pct"), ".1f"),
        "DRAM%": f(m.get("dram_throughput_pct"), ".1f"),
        "occupancy%": f(m.get("achieved_occupancy_pct"), ".1f"),
        "regs": f(m.get("registers_per_thread"), ".0f"),
        "SMEM_KB": f(smem / 1024 if smem is not None else None, ".1f"),
        "L2_hit%": f(m.get("l2_hit_rate_pct"), ".1f"),
        "top_stall": stall,
        "SM_MHz": f(m.get("sm_clock_mhz"), ".0f"),
        "complete": "yes" if n.get("complete") else "NO",
        "record": path.name if path else "-",
    }


def run_under_ncu(plan, problem, config, target, args: argparse.Namespace, *, log=print) -> int:
    """``--prof_type=ncu`` of the per-kernel CLI: profile, print the row, record. Errors are
    raised as :class:`NcuError` (the CLI prints one ``error:`` line and exits 2)."""
    from .tables import show

    opts = NcuOptions.from_args(args)
    rec, path = profile(
        plan,
        problem,
        config,
        target,
        opts,
        results_dir=getattr(args, "results_dir", None),
        record=not getattr(args, "no_record", False),
        cold_l2=not getattr(args, "warm_l2", False),
        warmup=getattr(args, "warmup", 10),
        reps=getattr(args, "reps", 100),
        cuda_graph=getattr(args, "cuda_graph", False),
        log=log,
    )
    show([table_row(rec, path)], f"{plan.package}: ncu ({opts.set})", log=log)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kernelplan.ncu read <report>``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "read":
        try:
            ncu = None
            with contextlib.suppress(NcuError):
                ncu = find_ncu()
            kernels, reader = read_report(argv[1], ncu=ncu)
            if not kernels:
                raise NcuError(f"{argv[1]} holds no profiled kernel (empty or not a report)")
            launches = int(argv[2]) if len(argv) > 2 else 1
            print(json.dumps({"reader": reader, **summarize_kernels(kernels, launches)}, indent=1))
            return 0
        except KernelPlanError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    print("usage: python -m kernelplan.ncu read <report.ncu-rep> [launches]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
