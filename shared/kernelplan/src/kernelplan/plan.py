"""``KernelPlan``: one implementation of a workload, and the runs every implementation gets.

A subclass names its workload (:mod:`kernelplan.workloads`), its target SM, its upstream
example or peer library, its typed config (:class:`kernelplan.workload.Config`), which
problems it takes (:meth:`KernelPlan.supports`) and how to reach the entry point
(:meth:`KernelPlan.plan`). The problem, tensors, reference, FLOPs and bytes are the
workload's, written once. Checking, timing, autotuning, static analysis and records are here
once; the command lines are in :mod:`kernelplan.cli` and :mod:`kernelplan.sessions`.
"""

from __future__ import annotations

import abc
import json
import secrets
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from . import device as devmod
from .check import CheckResult, compare, poison
from .device import Target
from .errors import KernelPlanError, adapter_call
from .kernel import CuteKernel, TensorSpec, TorchKernel
from .roofline import roofline
from .timing import TimingStats, benchmark, workspaces_for_cold_l2
from .workload import Config, NoConfig, Problem, ShapeError, Workload, _fmt

PROF_TYPES = ("disabled", "annotation", "static", "ncu")

__all__ = ["PROF_TYPES", "KernelPlan", "ShapeError", "config_label"]


class KernelPlan(abc.ABC):
    """One implementation of a workload: an imported CUTLASS example, a kernel of this
    project, a peer library or PyTorch.

    Class attributes a subclass sets:
        name: CLI name (``uv run <package> <name>``), also the sub-package name.
        package: the package's CLI name ("gemm").
        workload: the workload instance it implements (``kernelplan.workloads.gemm.GEMM``).
        source: path of the upstream example under ``examples/python/CuTeDSL`` (None for
            peers and for this project's own kernels).
        target_sm: SMs the kernel is built for (``("sm_90a",)``); empty for peers.
        peer_sm: for a peer (``target_sm`` empty), the SMs its library runs on (``("sm_90a",)``
            for FlashMLA's dense decode); empty: any CUDA GPU. Only checked against the device
            (:func:`kernelplan.device.require_plan_runs_on`), never compiled for.
        config_type: its typed config (a frozen :class:`~kernelplan.workload.Config`).
        runtime_problem_fields: problem fields the compiled code does NOT specialise on
            (extents of dynamic-layout tensors): left out of the compile key, so one compile
            serves every value. The default, none, recompiles per problem (always correct).
            What the config builds for the problem (:meth:`build_label`), which may follow
            from them, is part of the key all the same.
        description: one line.
    """

    name: ClassVar[str]
    package: ClassVar[str]
    workload: ClassVar[Workload]
    source: ClassVar[str | None] = None
    target_sm: ClassVar[tuple[str, ...]] = ()
    peer_sm: ClassVar[tuple[str, ...]] = ()
    config_type: ClassVar[type[Config]] = NoConfig
    #: the problem type; the workload's unless the implementation's example really takes more
    #: (a subclass of the workload's problem, e.g. an epilogue's scalars), which it then says
    problem_type: ClassVar[type[Problem] | None] = None
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    @classmethod
    def problem_class(cls) -> type[Problem]:
        return cls.problem_type or cls.workload.problem_type

    # -- the problem (the workload's) -------------------------------------------------------
    def problem(self, value: Problem | Mapping[str, Any] | None = None, **kw: Any) -> Problem:
        """The workload's problem, checked against what this implementation takes.

        Raises:
            ShapeError: the workload or this implementation rejects it (one line).
        """
        cls = self.problem_class()
        if cls is self.workload.problem_type:
            p = self.workload.problem(value, **kw)
        elif isinstance(value, cls) and not kw:
            p = value
        else:
            values = value.to_dict() if isinstance(value, Problem) else dict(value or {})
            p = cls.from_dict({**values, **kw})
        self.supports(p)
        return p

    def default_problem(self) -> Problem:
        """The problem the command line starts from (the problem type's defaults; an
        implementation overrides it with its example's own defaults)."""
        return self.problem_class()()

    def supports(self, problem: Problem) -> None:  # noqa: B027 - optional hook
        """Raise :class:`ShapeError` for a problem this implementation cannot take (a dtype,
        an alignment, a head count), saying what it takes."""

    def check_problems(self) -> list[Problem]:
        """The workload's check problems that this implementation takes."""
        return [p for p in self.workload.check_problems() if self.takes(p)]

    def profile_problems(self) -> list[Problem]:
        return [p for p in self.workload.profile_problems() if self.takes(p)]

    def takes(self, problem: Problem) -> bool:
        try:
            self.supports(problem)
        except ShapeError:
            return False
        return True

    def tensor_specs(self, problem: Problem) -> dict[str, TensorSpec]:
        """Every tensor argument (the workload's; an implementation whose example takes other
        views overrides this and says why)."""
        return self.workload.tensor_specs(problem)

    def prepare_inputs(self, problem: Problem, seed: int, device: str = "cuda") -> dict[str, Any]:
        """Fresh tensors for one run, drawn from ``seed``."""
        return self.workload.prepare_inputs(problem, self.tensor_specs(problem), seed, device)

    def output_names(self, problem: Problem) -> list[str]:
        return [n for n, s in self.tensor_specs(problem).items() if s.role == "output"]

    def reference(self, problem: Problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return self.workload.reference(problem, inputs)

    def reference_lowp(self, problem: Problem, inputs: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.workload.reference_lowp(problem, inputs)

    def flops_bytes(self, problem: Problem) -> tuple[float, float]:
        return self.workload.flops_bytes(problem)

    def plant_input_fault(self, problem: Problem, inputs: dict[str, Any], fault: str) -> None:
        """The workload's input fault, on the tensors this implementation takes (an
        implementation that splits the workload's tensors overrides this)."""
        self.workload.plant_input_fault(problem, inputs, fault)

    def compute_dtype(self, problem: Problem) -> str:
        return self.workload.compute_dtype(problem)

    # -- configs ---------------------------------------------------------------------------
    def default_config(self, problem: Problem) -> Config:
        return self.config_type()

    def autotune_configs(self, problem: Problem) -> list[Config]:
        """Candidate configs (tile shape, cluster shape, ...) for ``--autotune``."""
        return [self.default_config(problem)]

    def config(self, problem: Problem, overrides: Mapping[str, str] | None = None) -> Config:
        """The default config with ``--config`` items applied (parsed by field type), checked
        against the problem (:meth:`supports_config`).

        Raises:
            ShapeError: an unknown key, a value the config rejects, or a config this problem
                rules out.
        """
        base = self.default_config(problem)
        cfg = self.config_type.from_overrides(base, overrides) if overrides else base
        self.supports_config(problem, cfg)
        return cfg

    def build_label(
        self, problem: Problem, config: Config, target: Target | None = None
    ) -> str | None:
        """One line naming what ``config`` builds for ``problem`` (on ``target``, where the
        choice depends on its SM count) when the config's own fields do not say it (a default
        that resolves per problem, such as a schedule or step chosen by the cache format),
        else None. The CLI prints it and every record keeps it as ``build``."""
        return None

    def supports_config(self, problem: Problem, config: Config) -> None:  # noqa: B027
        """Raise :class:`ShapeError` for a config that is valid on its own but not for this
        problem (a tile that must divide M, a split that must divide K). Called by
        :meth:`config` and again by :meth:`kernel`, so no path compiles such a pair."""

    def target(self, arch: str | None = None, sm_count: Any = None) -> Target:
        """The :class:`~kernelplan.device.Target` to compile for: ``arch`` or the first
        target SM, with ``sm_count`` when given.

        Raises:
            KernelPlanError: not a CuTe DSL kernel and no arch given, an unknown SM, an arch
                outside the targets, or a bad ``--sm_count``.
        """
        arch = (arch or (self.target_sm[0] if self.target_sm else "")).strip()
        if not arch:
            dev = devmod.current_device()
            arch = dev.sm if dev else "sm_90a"
        num, _ = devmod.parse_sm(arch)
        # an SM nobody ships (sm_42) is left to the DSL's own, more precise refusal
        if (
            num in devmod.SM_FAMILY
            and self.target_sm
            and not any(devmod.runs_on(t, arch) for t in self.target_sm)
        ):
            raise KernelPlanError(
                f"{self.name} targets {' or '.join(self.target_sm)}; --arch {arch} is not "
                "one of its targets (its code uses that SM's instructions)"
            )
        return Target.resolve(arch, sm_count)

    @abc.abstractmethod
    def plan(self, problem: Problem, config: Config, target: Target) -> CuteKernel | TorchKernel:
        """The kernel for one (problem, config, target): reaches the entry point."""

    def kernel(self, problem: Problem, config: Config, target: Target) -> CuteKernel | TorchKernel:
        """:meth:`plan`, with the compile key derived (see :class:`CuteKernel`)."""
        k = adapter_call(self.name, self.plan, problem, config, target)
        if isinstance(k, CuteKernel):
            fixed = tuple(
                (f, v) for f, v in problem.to_dict().items() if f not in self.runtime_problem_fields
            )
            k.key = (
                f"{type(self).__module__}:{type(self).__qualname__}",
                json.dumps(config.to_dict(), sort_keys=True, default=str),
                json.dumps(fixed, default=str),
                target.sm,
                tuple(sorted((n, s.signature()) for n, s in k.specs.items())),
                repr(k.const_values()),
                k.options,
                # what the config builds, which may follow from runtime fields too (an
                # automatic choice that depends on the batch: mla_decode_sm90's default builds
                # step 62 at h=128 (32, 4096) and 67 at (128, 4096), b and t runtime fields)
                adapter_call(self.name, self.build_label, problem, config, target),
                # the SM count a plan may size its grid or clusters by (a value passed to a
                # kernel's constructor rather than as a Const)
                target.sm_count,
            )
        return k

    # -- what the harness does with it -------------------------------------------------------
    def run_check(
        self,
        problem: Problem,
        config: Config,
        *,
        target: Target | None = None,
        seed: int | None = None,
        fault: str = "none",
        launches: int = 1,
    ) -> tuple[bool, list[CheckResult], dict[str, Any]]:
        """One checked run: fresh random inputs, outputs poisoned, one launch, compare.

        ``launches`` > 1 launches the kernel that many times on the same inputs and poisons
        the outputs again before the last launch, so that state a kernel keeps between
        launches (arrival counters it must reset, semaphores, a workspace) is checked too:
        only what the last launch wrote is compared. The tensors of role ``scratch`` (written
        before read, such as a split-KV workspace) are poisoned with them, so a last launch
        that reads a stale workspace (a counter left unreset lets it skip its wait) fails
        instead of finding the previous launch's equal values. The references are computed
        from the inputs, which are never poisoned.

        ``fault`` plants a defect to show the check can fail: "skip-launch" (the kernel never
        runs; the poison must be caught), "perturb" (one output element moved by four times
        the largest absolute error its tolerance allows, after the run) or one of the
        workload's ``input_faults`` (the kernel sees corrupted inputs, the reference the true
        ones).

        Returns:
            (passed, per-output results, info with the seed used and the launches).

        Raises:
            ValueError: ``launches`` < 1.
        """
        import torch

        if launches < 1:
            raise ValueError(f"launches must be at least 1 (got {launches})")

        target = target or self.target()
        seed = secrets.randbelow(2**31) if seed is None else seed
        inputs = self.prepare_inputs(problem, seed)
        outs = self.output_names(problem)
        for n in outs:
            poison(inputs[n])
        scratch = [n for n, spec in self.tensor_specs(problem).items() if spec.role == "scratch"]
        seen = inputs
        if fault in self.workload.input_faults:  # the kernel sees corrupted inputs
            seen = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in inputs.items()}
            for n in outs:
                seen[n] = inputs[n]
            self.plant_input_fault(problem, seen, fault)
        kernel = self.kernel(problem, config, target)
        launch = kernel.bind(seen)
        if fault != "skip-launch":
            for i in range(launches):
                if i and i == launches - 1:
                    torch.cuda.synchronize()
                    for n in (*outs, *scratch):
                        poison(seen[n])
                launch()
        torch.cuda.synchronize()
        ref = self.reference(problem, inputs)
        lowp = self.reference_lowp(problem, inputs)
        if fault == "perturb":  # one element moved by 4x the largest error the check allows
            from .check import tolerance_for

            name = outs[0]
            t = inputs[name]
            tol = self.workload.tolerance(problem, name) or tolerance_for(t.dtype)
            r = ref[name]
            bump = 4 * tol.max_abs_rel * float(r[r.isfinite()].abs().max())
            # the middle element in index order, in place (an output may be a strided view)
            mid = torch.unravel_index(torch.tensor(t.numel() // 2), t.shape)
            t[tuple(int(i) for i in mid)] += bump
        results = [
            compare(
                n,
                inputs[n],
                ref[n],
                self.workload.tolerance(problem, n),
                baseline=lowp.get(n) if lowp else None,
            )
            for n in outs
        ]
        produced = set(outs)
        not_produced = [
            n
            for n, spec in self.workload.tensor_specs(problem).items()
            if spec.role == "output" and n not in produced
        ]
        info = {
            "not_produced": not_produced,
            "seed": seed,
            "fault": fault,
            "launches": launches,
            "compile_seconds": kernel.compile_seconds,
            "compile_cache": getattr(kernel, "compile_cache", None),
        }
        return all(r.passed for r in results), results, info

    def run_benchmark(
        self,
        problem: Problem,
        config: Config,
        *,
        target: Target | None = None,
        warmup: int = 10,
        reps: int = 100,
        cold_l2: bool = True,
        cuda_graph: bool = False,
        annotate: bool = False,
        seed: int = 0,
        kernel: CuteKernel | TorchKernel | None = None,
    ) -> TimingStats:
        """Time the kernel; with ``cold_l2`` it rotates through enough input copies that no
        launch finds its operands in L2."""

        target = target or self.target()
        specs = self.tensor_specs(problem)
        kernel = kernel or self.kernel(problem, config, target)
        # an implementation whose config times graph replays says so in the kernel's meta
        cuda_graph = bool(cuda_graph or getattr(kernel, "meta", {}).get("cuda_graph", False))
        n_ws = self.cold_l2_workspaces(problem, specs=specs) if cold_l2 else 1
        launchers = [kernel.bind(self.prepare_inputs(problem, seed + i)) for i in range(n_ws)]
        name = f"{self.package}/{self.name} {config.label()}" if annotate else None
        return benchmark(
            launchers, warmup=warmup, reps=reps, cuda_graph=cuda_graph, range_name=name
        )

    def cold_l2_workspaces(
        self, problem: Problem, *, memory_share: float = 0.6, specs: Mapping | None = None
    ) -> int:
        """How many input copies to rotate through so no launch finds its operands in L2
        (:func:`kernelplan.timing.workspaces_for_cold_l2` of the device's L2), at most what
        fits in ``memory_share`` of the free GPU memory, at least 1."""
        import torch

        specs = specs if specs is not None else self.tensor_specs(problem)
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        per_ws = sum(s.nbytes() for s in specs.values())
        l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
        free, _ = torch.cuda.mem_get_info()
        fits = int(memory_share * free // max(per_ws, 1))
        return max(1, min(workspaces_for_cold_l2(per_ws, l2), fits))

    def run_static(
        self,
        problem: Problem,
        config: Config,
        target: Target | None = None,
        *,
        use_cache: bool = True,
    ) -> dict[str, Any]:
        """Compile for ``target`` (default: the first target SM) with fake tensors and analyse
        the cubin; works on any machine.

        Returns the main kernel's :class:`kernelplan.static.StaticReport` as a dict (the main
        kernel is picked by :func:`kernelplan.static.main_report`, not by launch order), plus
        ``label``, ``meta`` (what the plan recorded, e.g. where a ``max_active_clusters``
        came from), ``max_active_clusters`` and ``sm_count`` (the values compiled in; None
        when the kernel takes none), ``functions`` (the module's other kernels),
        ``res_usage_check`` (the main kernel's registers re-read by a separate
        ``cuobjdump -res-usage`` run on the same cubin), ``tools`` (the DSL, ptxas and
        cuobjdump versions that produced it) and ``cache`` (hit or miss, key, entry folder).

        With ``use_cache`` (and ``KERNELPLAN_CACHE`` not ``off``) the result comes from the
        persistent cache (:mod:`kernelplan.cache`) when no input it depends on changed; a
        hit imports neither the DSL nor torch.

        Raises:
            KernelPlanError: not a CuTe DSL kernel, an SM the DSL does not know, a missing
                tool, or a failed compile (one line: the DSL's diagnostic with the example
                path and line; the full diagnostic goes to stderr first).
        """
        from . import cache as cachemod

        if not self.target_sm:
            raise KernelPlanError(f"{self.name} is not a CuTe DSL kernel: nothing to analyse")
        target = target or self.target()
        arch = target.sm
        label = f"{self.package}/{self.name}"
        store = cachemod.StaticCache() if use_cache else None
        key = comps = None
        if store is not None and store.enabled:
            key, comps = cachemod.static_key(self, problem, config, target)
            hit = store.get(key, comps)
            if hit is not None:
                entry = str(store.entry_dir(key))
                return {**hit, "label": label, "cache": {"hit": True, "key": key, "entry": entry}}

        from . import static

        # Fail before planning and compiling: an SM the DSL does not know, a missing tool.
        arch = static._normalize_arch(arch)
        static.find_tool("cuobjdump")
        # planned under the arch it is compiled for: an upstream constructor may read the
        # DSL's arch, which is otherwise the GPU's (an sm_100a kernel on an sm_90 host)
        with static.target_arch(arch):
            kernel = self.kernel(problem, config, target)
            if not isinstance(kernel, CuteKernel):
                raise KernelPlanError(f"{self.name} is not a CuTe DSL kernel: nothing to analyse")
            fake_args = kernel.fake_args()
        from .cutlass_src import repo_root

        dump_root = repo_root() / ".cache" / "static"
        try:
            reports = static.compile_and_analyze(
                kernel.fn,
                fake_args,
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
            "sm_count": meta.get(
                "sm_count", target.sm_count if "max_active_clusters" in meta else None
            ),
            "functions": others,
            "res_usage_check": independent_registers(),
            "tools": static.tool_versions(),
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
        problem: Problem,
        *,
        target: Target | None = None,
        warmup: int = 5,
        reps: int = 30,
        cold_l2: bool = True,
        log=print,
    ) -> tuple[Config, list[dict[str, Any]]]:
        """Time every candidate config; the best median wins. Configs that fail to compile or
        launch are listed with the error, not fatal (unless none works)."""
        rows: list[dict[str, Any]] = []
        target = target or self.target()
        for cfg in self.autotune_configs(problem):
            try:
                st = self.run_benchmark(
                    problem, cfg, target=target, warmup=warmup, reps=reps, cold_l2=cold_l2
                )
                rows.append(
                    {
                        "config": cfg.to_dict(),
                        "median_us": st.median_us,
                        "spread_pct": st.spread_pct,
                    }
                )
                log(f"  autotune {cfg.label()}: {st.median_us:.1f} us")
            except Exception as e:  # a config the upstream rejects is data, not a crash
                msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
                rows.append({"config": cfg.to_dict(), "error": msg})
                log(f"  autotune {cfg.label()}: rejected ({msg})")
        ok = [r for r in rows if "median_us" in r]
        if not ok:
            raise KernelPlanError(
                f"{self.name}: no autotune config ran; first error: "
                f"{rows[0].get('error') if rows else 'no configs'}"
            )
        best = min(ok, key=lambda r: r["median_us"])
        return self.config_type.from_dict(best["config"]), rows

    def benchmark_record(
        self,
        problem: Problem,
        config: Config,
        *,
        target: Target | None = None,
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

        target = target or self.target()
        kernel = self.kernel(problem, config, target)
        dev = devmod.current_device()
        before = devmod.clocks_now()
        st = self.run_benchmark(
            problem,
            config,
            kernel=kernel,
            target=target,
            warmup=warmup,
            reps=reps,
            cold_l2=cold_l2,
            cuda_graph=cuda_graph,
            annotate=True,
        )
        after = devmod.clocks_now()
        roof = self.roofline_for(problem, st.median_us, dev.name if dev else None)
        rec = self.record_base("benchmark", problem, config, target)
        rec.update(
            timing=st.to_dict(),
            roofline=roof.to_dict(),
            clocks={"before": before, "after": after},
            kernel_meta=getattr(kernel, "meta", None) or None,
        )
        record_throttle(rec, dev, before, after, st, log)
        return rec, st, roof

    def roofline_for(self, problem: Problem, time_us: float, device_name: str | None):
        flops, nbytes = self.flops_bytes(problem)
        return roofline(flops, nbytes, time_us, device_name, self.compute_dtype(problem))

    def record_base(
        self, kind: str, problem: Problem, config: Config, target: Target | None = None
    ) -> dict[str, Any]:
        """The fields every record of this implementation carries (the workload, the
        problem and config as dicts, the target, the device and the environment)."""
        from .records import environment

        dev = devmod.current_device() if kind != "static" else None
        build = self.build_label(problem, config, target)
        return {
            "kind": kind,
            "workload": self.workload.name,
            "package": self.package,
            "kernel": self.name,
            "source": self.source,
            "target_sm": list(self.target_sm),
            "target": target.to_dict() if target is not None else None,
            "problem": problem.to_dict(),
            "config": config.to_dict(),
            **({"build": build} if build else {}),
            "device": dev.to_dict() if dev else None,
            "env": environment(),
        }


def config_label(config: Config | Mapping[str, Any]) -> str:
    """``tile_mn=128x256 cluster_mn=1x1`` (``default`` for an empty config)."""
    if isinstance(config, Config):
        return config.label()
    return " ".join(f"{k}={_fmt(v)}" for k, v in config.items()) or "default"


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
