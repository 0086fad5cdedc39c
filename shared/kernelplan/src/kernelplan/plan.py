"""``KernelPlan``: everything specific to one kernel, and the runs every kernel gets for free.

A subclass states its workload (problem arguments, tensors, reference, FLOPs and bytes), its
target SM, its upstream example, its tunable configs, and how to reach the upstream entry
point (``plan``). Checking, timing, autotuning, static analysis, records and the command line
live here once.
"""

from __future__ import annotations

import abc
import argparse
import dataclasses
import json
import secrets
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from . import device as devmod
from .check import CheckResult, compare, poison
from .errors import KernelPlanError
from .kernel import CuteKernel, TensorSpec, TorchKernel
from .roofline import roofline
from .timing import TimingStats, benchmark, workspaces_for_cold_l2

PROF_TYPES = ("disabled", "annotation", "static", "ncu")


class ShapeError(KernelPlanError):
    """A problem the kernel cannot take (zero sizes, misalignment, unsupported dtype)."""


class KernelPlan(abc.ABC):
    """One imported kernel (or a peer) of a package.

    Class attributes a subclass sets:
        name: CLI name (``uv run <package> <name>``), also the sub-package name.
        package: the package's CLI name ("gemm").
        source: path of the upstream example under ``examples/python/CuTeDSL`` (None for peers).
        target_sm: SMs the kernel is built for (``("sm_90a",)``); empty for peers that run on
            any CUDA GPU.
        description: one line.
    """

    name: ClassVar[str]
    package: ClassVar[str]
    source: ClassVar[str | None] = None
    target_sm: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    # -- the workload ----------------------------------------------------------------------
    @abc.abstractmethod
    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the workload's CLI arguments (``--m --n --k --l --dtype`` for a GEMM)."""

    @abc.abstractmethod
    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        """The problem as a JSON-ready dict, validated (raise ShapeError)."""

    def validate(self, problem: Mapping[str, Any]) -> None:  # noqa: B027 - optional hook
        """Raise :class:`ShapeError` for a problem this kernel cannot take."""

    def validate_config(  # noqa: B027 - optional hook
        self, problem: Mapping[str, Any], config: Mapping[str, Any]
    ) -> None:
        """Raise :class:`ShapeError` for a config the kernel rejects, before anything is
        loaded or compiled (so a bad ``--config`` is one line even without the sources)."""

    @abc.abstractmethod
    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:
        """Every tensor argument, by name (inputs and outputs)."""

    def prepare_inputs(
        self, problem: Mapping[str, Any], seed: int, device: str = "cuda"
    ) -> dict[str, Any]:
        """Fresh tensors for one run, drawn from ``seed``."""
        import torch

        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        return {n: s.allocate(gen, device) for n, s in self.tensor_specs(problem).items()}

    def output_names(self, problem: Mapping[str, Any]) -> list[str]:
        return [n for n, s in self.tensor_specs(problem).items() if s.role == "output"]

    @abc.abstractmethod
    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The expected outputs (by name, float32 or wider), computed with PyTorch."""

    @abc.abstractmethod
    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:
        """(FLOPs, minimum DRAM bytes) of the workload, independent of the implementation."""

    def compute_dtype(self, problem: Mapping[str, Any]) -> str:
        """The dtype that picks the device's compute peak (torch spelling)."""
        return str(problem.get("dtype", "float16"))

    # -- configs ---------------------------------------------------------------------------
    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def known_config_keys(self, problem: Mapping[str, Any]) -> set[str]:
        """Config keys ``--config`` may set: those of the default and autotune configs, plus
        ``sm_count`` (the SM count a compile-time cluster count is derived from when no GPU
        is present)."""
        keys = set(self.default_config(problem)) | {"sm_count"}
        for cfg in self._autotune_configs(problem):
            keys |= set(cfg)
        return keys

    def _autotune_configs(self, problem: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Candidate configs (tile shape, cluster shape, ...) for ``--autotune``."""
        return [self.default_config(problem)]

    @abc.abstractmethod
    def plan(
        self, problem: Mapping[str, Any], config: Mapping[str, Any]
    ) -> CuteKernel | TorchKernel:
        """The kernel for one (problem, config): reaches the upstream entry point."""

    # -- sweeps used by the package sessions ---------------------------------------------------
    def check_problems(self) -> list[dict[str, Any]]:
        """Problems ``check-<package>`` runs (override; default: none)."""
        return []

    def profile_problems(self) -> list[dict[str, Any]]:
        """Problems ``profile`` runs (override; default: the check problems)."""
        return self.check_problems()

    # -- what the harness does with it -------------------------------------------------------
    def run_check(
        self,
        problem: Mapping[str, Any],
        config: Mapping[str, Any],
        *,
        seed: int | None = None,
        fault: str = "none",
    ) -> tuple[bool, list[CheckResult], dict[str, Any]]:
        """One checked run: fresh random inputs, outputs poisoned, one launch, compare.

        ``fault`` plants a defect to show the check can fail: "skip-launch" (the kernel never
        runs; the poison must be caught) or "perturb" (one output element moved by 1% of
        max|ref| after the run).

        Returns:
            (passed, per-output results, info with the seed used).
        """
        import torch

        seed = secrets.randbelow(2**31) if seed is None else seed
        inputs = self.prepare_inputs(problem, seed)
        outs = self.output_names(problem)
        for n in outs:
            poison(inputs[n])
        kernel = self.plan(problem, config)
        launch = kernel.bind(inputs)
        if fault != "skip-launch":
            launch()
        torch.cuda.synchronize()
        ref = self.reference_fn(problem, inputs)
        if fault == "perturb":
            t = inputs[outs[0]]
            flat = t.view(-1)
            bump = 0.01 * float(ref[outs[0]].abs().max())
            flat[flat.numel() // 2] += bump
        results = [compare(n, inputs[n], ref[n]) for n in outs]
        info = {"seed": seed, "fault": fault, "compile_seconds": kernel.compile_seconds}
        return all(r.passed for r in results), results, info

    def run_benchmark(
        self,
        problem: Mapping[str, Any],
        config: Mapping[str, Any],
        *,
        warmup: int = 10,
        reps: int = 100,
        cold_l2: bool = True,
        cuda_graph: bool = False,
        annotate: bool = False,
        seed: int = 0,
    ) -> TimingStats:
        """Time the kernel; with ``cold_l2`` it rotates through enough input copies that no
        launch finds its operands in L2."""
        import torch

        specs = self.tensor_specs(problem)
        kernel = self.plan(problem, config)
        n_ws = 1
        if cold_l2:
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            per_ws = sum(s.nbytes() for s in specs.values())
            l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
            n_ws = workspaces_for_cold_l2(per_ws, l2)
            free, _ = torch.cuda.mem_get_info()
            n_ws = max(1, min(n_ws, int(0.6 * free // max(per_ws, 1))))
        launchers = [kernel.bind(self.prepare_inputs(problem, seed + i)) for i in range(n_ws)]
        name = f"{self.package}/{self.name} {config_label(config)}" if annotate else None
        return benchmark(
            launchers, warmup=warmup, reps=reps, cuda_graph=cuda_graph, range_name=name
        )

    def run_static(
        self,
        problem: Mapping[str, Any],
        config: Mapping[str, Any],
        arch: str | None = None,
        *,
        use_cache: bool = True,
    ) -> dict[str, Any]:
        """Compile for ``arch`` (default: the first target SM) with fake tensors and analyse
        the cubin; works on any machine.

        Returns the main kernel's :class:`kernelplan.static.StaticReport` as a dict (the main
        kernel is picked by :func:`kernelplan.static.main_report`, not by launch order), plus
        ``label``, ``meta`` (what the plan recorded, e.g. where a ``max_active_clusters``
        came from), ``max_active_clusters`` and ``sm_count`` (the values compiled in; None
        when the kernel takes none), ``functions`` (the module's other kernels),
        ``res_usage_check`` (the main kernel's registers re-read by a separate
        ``cuobjdump -res-usage`` run on the same cubin) and ``cache`` (hit or miss, key,
        entry folder).

        With ``use_cache`` (and ``KERNELPLAN_CACHE`` not ``off``) the result comes from the
        persistent cache (:mod:`kernelplan.cache`) when no input it depends on changed; a
        hit imports neither the DSL nor torch.

        Raises:
            KernelPlanError: not a CuTe DSL kernel, an SM the DSL does not know, a missing
                tool, or a failed compile (one line: the DSL's diagnostic with the example
                path and line; the full diagnostic goes to stderr first).
        """
        from . import cache as cachemod

        arch = (arch or (self.target_sm[0] if self.target_sm else "")).strip()
        if not arch:
            raise KernelPlanError(f"{self.name} is not a CuTe DSL kernel: nothing to analyse")
        arch_num, _ = devmod.parse_sm(arch)
        # an SM nobody ships (sm_42) is left to the DSL's own, more precise refusal below
        known_sm = arch_num in devmod.SM_FAMILY
        if known_sm and self.target_sm and not any(devmod.runs_on(t, arch) for t in self.target_sm):
            raise KernelPlanError(
                f"{self.name} targets {' or '.join(self.target_sm)}; --arch {arch} is not one "
                "of its targets (its code uses that SM's instructions)"
            )
        self.validate_config(problem, config)
        label = f"{self.package}/{self.name}"
        store = cachemod.StaticCache() if use_cache else None
        key = comps = None
        if store is not None and store.enabled:
            key, comps = cachemod.static_key(self, problem, config, arch)
            hit = store.get(key, comps)
            if hit is not None:
                entry = str(store.entry_dir(key))
                return {**hit, "label": label, "cache": {"hit": True, "key": key, "entry": entry}}

        from . import static

        # Fail before planning and compiling: an SM the DSL does not know, a missing tool.
        arch = static._normalize_arch(arch)
        static.find_tool("cuobjdump")
        kernel = self.plan(problem, config)
        if not isinstance(kernel, CuteKernel):
            raise KernelPlanError(f"{self.name} is not a CuTe DSL kernel: nothing to analyse")
        from .cutlass_src import repo_root

        dump_root = repo_root() / ".cache" / "static"
        try:
            reports = static.compile_and_analyze(
                kernel.fn,
                kernel.fake_args(),
                arch=arch,
                options=kernel.options,
                dump_dir=dump_root,
            )
        except KernelPlanError:
            raise
        except Exception as e:  # the DSL's own errors: one clear line, details on stderr
            raise _compile_failure(label, self.source, arch, e) from e
        main = static.main_report(reports)
        others = [r.to_dict() for r in reports if r is not main]

        def independent_registers() -> dict[str, Any]:
            """The main kernel's registers from a separate ``cuobjdump -res-usage`` run."""
            import re
            import subprocess

            tool = str(static.find_tool("cuobjdump"))
            out = subprocess.run(
                [tool, "-res-usage", str(main.cubin_path)],
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            ).stdout
            m = re.search(r"Function " + re.escape(main.kernel) + r":\s*\n\s*REG:(\d+)", out)
            regs = int(m.group(1)) if m else None
            return {
                "tool": "cuobjdump -res-usage",
                "registers": regs,
                "match": regs == main.registers,
            }

        meta = dict(kernel.meta)
        result = {
            **main.to_dict(),
            "label": label,
            "meta": meta,
            "max_active_clusters": meta.get("max_active_clusters"),
            "sm_count": meta.get("sm_count"),
            "functions": others,
            "res_usage_check": independent_registers(),
        }
        json.dumps(result)  # JSON-ready before it is cached or recorded
        if store is not None and store.enabled and key is not None:
            cubin = Path(main.cubin_path) if main.cubin_path else None
            ptx = cubin.with_suffix(".ptx") if cubin else None
            stored = store.put(key, comps, result, {"main.cubin": cubin, "main.ptx": ptx})
            if stored is not None:
                if cubin is not None and cubin.parent.parent == dump_root:
                    shutil.rmtree(cubin.parent, ignore_errors=True)  # its copy is cached
                result = stored
            entry = str(store.entry_dir(key))
            result = {**result, "cache": {"hit": False, "key": key, "entry": entry}}
        return result

    def autotune(
        self,
        problem: Mapping[str, Any],
        *,
        warmup: int = 5,
        reps: int = 30,
        cold_l2: bool = True,
        log=print,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Time every candidate config; the best median wins. Configs that fail to compile or
        launch are listed with the error, not fatal (unless none works)."""
        rows: list[dict[str, Any]] = []
        for cfg in self._autotune_configs(problem):
            try:
                st = self.run_benchmark(problem, cfg, warmup=warmup, reps=reps, cold_l2=cold_l2)
                rows.append({"config": cfg, "median_us": st.median_us, "spread_pct": st.spread_pct})
                log(f"  autotune {config_label(cfg)}: {st.median_us:.1f} us")
            except Exception as e:  # a config the upstream rejects is data, not a crash
                msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
                rows.append({"config": cfg, "error": msg})
                log(f"  autotune {config_label(cfg)}: rejected ({msg})")
        ok = [r for r in rows if "median_us" in r]
        if not ok:
            raise KernelPlanError(
                f"{self.name}: no autotune config ran; first error: "
                f"{rows[0].get('error') if rows else 'no configs'}"
            )
        best = min(ok, key=lambda r: r["median_us"])
        return dict(best["config"]), rows

    def benchmark_record(
        self,
        problem: Mapping[str, Any],
        config: Mapping[str, Any],
        *,
        warmup: int = 10,
        reps: int = 100,
        cold_l2: bool = True,
        cuda_graph: bool = False,
        log=print,
    ) -> tuple[dict[str, Any], TimingStats, Any]:
        """One timed run (:meth:`run_benchmark`, NVTX-annotated) as a ``benchmark`` record,
        not yet written: the timings, the roofline against the device's peaks, the clocks
        NVML reported before and after, and the throttle flag (a warning line is logged when
        the clock fell). Returns ``(record, stats, roofline)``."""
        from .clocks import record_throttle

        dev = devmod.current_device()
        before = devmod.clocks_now()
        st = self.run_benchmark(
            problem,
            config,
            warmup=warmup,
            reps=reps,
            cold_l2=cold_l2,
            cuda_graph=cuda_graph,
            annotate=True,
        )
        after = devmod.clocks_now()
        roof = self.roofline_for(problem, st.median_us, dev.name if dev else None)
        rec = self.record_base("benchmark", problem, config)
        rec.update(
            timing=st.to_dict(), roofline=roof.to_dict(), clocks={"before": before, "after": after}
        )
        record_throttle(rec, dev, before, after, st, log)
        return rec, st, roof

    def roofline_for(self, problem: Mapping[str, Any], time_us: float, device_name: str | None):
        flops, nbytes = self._algorithmic_flops_bytes(problem)
        return roofline(flops, nbytes, time_us, device_name, self.compute_dtype(problem))

    def record_base(
        self, kind: str, problem: Mapping[str, Any], config: Mapping[str, Any]
    ) -> dict[str, Any]:
        from .records import environment

        dev = devmod.current_device() if kind != "static" else None
        return {
            "kind": kind,
            "package": self.package,
            "kernel": self.name,
            "source": self.source,
            "target_sm": list(self.target_sm),
            "problem": dict(problem),
            "config": dict(config),
            "device": dev.to_dict() if dev else None,
            "env": environment(),
        }

    # -- command line ----------------------------------------------------------------------
    def benchmark_kernel_argparse(self, argv: Sequence[str] | None = None) -> int:
        """The per-kernel CLI (``python -m <pkg>.<kernel>`` and ``uv run <pkg> <kernel>``).

        Returns the process exit code: 0 ok, 1 a check failed, 2 bad input or a kernel that
        cannot run here (one ``error:`` line on stderr).
        """
        from .cli import run_kernel_cli

        return run_kernel_cli(self, argv)


def config_label(config: Mapping[str, Any]) -> str:
    if not config:
        return "default"
    return " ".join(f"{k}={_fmt(v)}" for k, v in config.items())


def _fmt(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "x".join(str(x) for x in v)
    return str(v)


def parse_config_overrides(items: Sequence[str], option: str = "--config") -> dict[str, Any]:
    """``["tile_mn=128x256", "cluster_mn=1x2"]`` -> ``{"tile_mn": [128, 256], ...}``.

    Raises:
        KernelPlanError: an item is not ``key=value`` (the message names ``option``).
    """
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise KernelPlanError(f"{option} expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        if "x" in v and all(p.isdigit() for p in v.split("x")):
            out[k] = [int(p) for p in v.split("x")]
        else:
            try:
                out[k] = json.loads(v)
            except json.JSONDecodeError:
                out[k] = v
    return out


def die(msg: str, code: int = 2) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return code


def static_table(static_dicts: Sequence[Mapping[str, Any]]) -> str:
    """Markdown table of static-analysis results (the dicts ``run_static`` returns), then a
    note per kernel with a launch constant compiled in (``max_active_clusters``: the value
    and where it came from) or whose registers a separate ``cuobjdump -res-usage`` run did
    not confirm."""
    from . import static

    fields = {f.name for f in dataclasses.fields(static.StaticReport)}
    reports, notes = [], []
    for d in static_dicts:
        r = static.StaticReport(**{k: v for k, v in d.items() if k in fields})
        r.kernel = d.get("label", r.kernel)
        reports.append(r)
        meta = d.get("meta") or {}
        consts = {k: v for k, v in meta.items() if k.endswith("max_active_clusters")}
        if d.get("max_active_clusters") is not None:
            consts.setdefault("max_active_clusters", d["max_active_clusters"])
        for name, value in consts.items():
            why = meta.get(f"{name}_from")
            notes.append(
                f"- `{r.kernel}`: {name} = {value} compiled in" + (f" ({why})" if why else "")
            )
        check = d.get("res_usage_check") or {}
        if check and not check.get("match"):
            notes.append(
                f"- `{r.kernel}`: registers {r.registers} NOT confirmed by "
                f"{check.get('tool')} ({check.get('registers')})"
            )
    text = static.format_table(reports)
    return text + ("\n" + "\n".join(notes) + "\n" if notes else "")


def _compile_failure(label: str, source: str | None, arch: str, exc: BaseException):
    """A one-line KernelPlanError for a compile the DSL rejected: its own diagnostic (the
    ``error:`` line) and the place it points at, as a path under ``examples/python/CuTeDSL``
    with its line. The full diagnostic is written to stderr first."""
    import re
    import traceback

    from .cutlass_src import examples_dir

    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    if text:
        print(f"{label}: DSL diagnostic ({type(exc).__name__}):", file=sys.stderr)
        for line in text.splitlines():
            print(f"  {line}", file=sys.stderr)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    msg = next(
        (ln[len("error:") :].strip() for ln in lines if ln.startswith("error:")),
        lines[0] if lines else "",
    )
    try:
        root = examples_dir().resolve()
    except KernelPlanError:
        root = None
    where = None
    m = re.search(r"-->\s*(\S+?):(\d+)", text)
    if m:
        where = (Path(m.group(1)), int(m.group(2)))
    elif root is not None:
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if Path(f.filename).resolve().is_relative_to(root)
        ]
        if frames:
            where = (Path(frames[-1].filename), frames[-1].lineno or 0)
    at = ""
    if where is not None:
        path = where[0]
        if root is not None and path.resolve().is_relative_to(root):
            path = path.resolve().relative_to(root)
        at = f" at {path.as_posix()}:L{where[1]}"
    src = f" (example {source})" if source and source not in at else ""
    detail = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return KernelPlanError(f"{label}: compile for {arch} failed{at}: {detail}{src}")
