"""What the eight tutorial GEMM adapters share: the workload, the tensors as the tutorials
build them, the compile-only entry, and the launch constants.

The workload: ``C[m, n] = sum_k A[m, k] * B[n, k]`` in fp16 with fp32 accumulation, A and B
K-major (row-major (m, k) and (n, k)), C row-major (m, n), as every tutorial's
``run_dense_gemm`` builds it (``fp16_gemm_6`` adds an int8 B dequantised by a first kernel).

Compile-only entry. Upstream's ``run_dense_gemm`` of fp16_gemm_0..5 calls the module-level
``@cute.jit host_function(a, b, c[, max_active_clusters...])`` directly, which JIT-compiles AND
launches in one call. The adapters never call it: :class:`kernelplan.CuteKernel` hands
``host_function`` to ``cute.compile`` (with fake tensors for static analysis, so nothing can
launch; with real tensors on an sm_100 GPU, and launches the compiled function itself, once
per timed or checked run). fp16_gemm_6 already compiles with ``cute.compile`` upstream.

Tutorial knobs (tile shape, cluster shape, stages, 2-CTA) are module constants upstream, not
arguments: an adapter has no tunable config beyond ``sm_count`` (what ``max_active_clusters``
assumes where no sm_100 GPU is present); the constants in force are recorded in each
kernel's ``meta`` from the loaded module.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import CuteKernel, KernelPlan, KernelPlanError, ShapeError, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.kernel import Const, cutlass_dtype

TUTORIAL_DIR = "cute/blackwell/tutorial/tutorial_gemm"
DTYPE_BYTES = {"float16": 2, "int8": 1}
#: Module constants of a tutorial recorded with its kernel (the ones it defines).
MODULE_CONSTANTS = (
    "mma_inst_shape_mnk",
    "mma_tiler_mnk",
    "cluster_shape_mnk",
    "preferred_cluster_shape_mnk",
    "fallback_cluster_shape_mnk",
    "use_2cta_instrs",
    "threads_per_cta",
    "threads_in_epilogue",
    "ab_stages",
    "acc_stage",
    "acc_stages",
    "epi_stages",
    "num_clc_stage",
    "use_clc_dynamic_scheduler",
    "dequant_elements_per_thread",
    "threads_in_dequant",
)


@dataclass(frozen=True)
class TutorialTensor(TensorSpec):
    """A 2-D row-major operand as the tutorials mark it: ``from_dlpack(t,
    assumed_align=align).mark_layout_dynamic(leading_dim=1)`` and, where ``divisibility`` > 1,
    ``.mark_compact_shape_dynamic(mode=1, divisibility=divisibility)`` (fp16_gemm_0/1 mark K
    with divisibility K, and C's N with N: the cubin is specialised to those divisibilities).

    The fake tensor has the type those calls give: shapes as i32 symbols, the contiguous
    extent with the divisibility, the row stride an i64 symbol with the same divisibility.
    """

    divisibility: int = 1

    def to_cute(self, storage):
        from cutlass.cute.runtime import from_dlpack

        t = from_dlpack(storage, assumed_align=self.align).mark_layout_dynamic(leading_dim=1)
        if self.divisibility > 1:
            t = t.mark_compact_shape_dynamic(mode=1, divisibility=self.divisibility)
        return t

    def to_fake_cute(self):
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_fake_tensor

        d = self.divisibility
        shape = (cute.sym_int(), cute.sym_int(divisibility=d))
        stride = (cute.sym_int64(divisibility=d), 1)
        return make_fake_tensor(cutlass_dtype(self.dtype), shape, stride, assumed_align=self.align)


class TutorialGemmPlan(KernelPlan):
    """Base of the tutorial adapters. A subclass sets ``name``, ``source``, ``description``
    and what differs from the defaults below (the tile its M/N must divide by, the operands'
    assumed alignment, the divisibility marks, and which module constants give the cluster
    sizes of the ``max_active_clusters`` constants its ``host_function`` takes)."""

    package: ClassVar[str] = "gemm-tutorial"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    #: M and N must be multiples of it (each tutorial's "Constraints" docstring).
    tile_mn: ClassVar[tuple[int, int]] = (256, 256)
    #: ``assumed_align`` of A, B and C (None upstream, i.e. the element size, from step 2 on).
    operand_align: ClassVar[int] = 2
    #: fp16_gemm_0/1 mark K (A, B) and N (C) with divisibility equal to their size.
    divisibility_marks: ClassVar[bool] = False
    #: Module constants (cluster shapes) giving one compile-time max_active_clusters each,
    #: in the order ``host_function`` takes them.
    cluster_constants: ClassVar[tuple[str, ...]] = ()
    default_mnk: ClassVar[tuple[int, int, int]] = (8192, 8192, 8192)
    #: Config keys accepted (the tutorials' knobs are module constants).
    config_keys: ClassVar[tuple[str, ...]] = ("sm_count",)

    # -- the workload ----------------------------------------------------------------------
    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        m, n, k = self.default_mnk
        g = parser.add_argument_group("problem (C[m,n] = A[m,k] B[n,k]^T, fp16, fp32 accumulate)")
        g.add_argument("--m", type=int, default=m)
        g.add_argument("--n", type=int, default=n)
        g.add_argument("--k", type=int, default=k)
        g.add_argument(
            "--init",
            choices=("randn", "randint"),
            default="randint",
            help="A/B values: integers in [-2, 2] as the tutorials use, or standard normal",
        )

    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        prob = self.problem(args.m, args.n, args.k, init=args.init)
        self.validate(prob)
        return prob

    def problem(self, m: int, n: int, k: int, init: str = "randint") -> dict[str, Any]:
        return {"m": m, "n": n, "k": k, "dtype": "float16", "init": init}

    def validate(self, problem: Mapping[str, Any]) -> None:
        """Raises ShapeError: non-positive sizes, M or N not a multiple of the tile (the
        tutorials have no bounds checks in M/N), or K not a multiple of 8 (TMA rows are
        16-byte multiples)."""
        for key in ("m", "n", "k"):
            v = problem[key]
            if not isinstance(v, int) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")
        tm, tn = self.tile_mn
        if problem["m"] % tm or problem["n"] % tn:
            raise ShapeError(
                f"{self.name} needs M and N to be multiples of its tile {tm}x{tn} (got "
                f"{problem['m']}x{problem['n']}): the tutorial has no M/N bounds checks"
            )
        if problem["k"] % 8:
            raise ShapeError(f"{self.name} needs K to be a multiple of 8 (TMA rows of 16 bytes)")

    def _operand(self, rows: int, cols: int, dtype: str = "float16", **kw) -> TutorialTensor:
        if "divisibility" not in kw and self.divisibility_marks:
            kw["divisibility"] = cols
        kw.setdefault("align", self.operand_align)
        return TutorialTensor((rows, cols), dtype, leading_dim=1, **kw)

    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:
        m, n, k = problem["m"], problem["n"], problem["k"]
        init = problem.get("init", "randint")
        scale = 2.0 if init == "randint" else 1.0
        return {
            "a": self._operand(m, k, init=init, scale=scale),
            "b": self._operand(n, k, init=init, scale=scale),
            "c": self._operand(m, n, role="output", init="empty"),
        }

    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]):
        """float32 ``A @ B^T`` (TF32 off) on the inputs' device."""
        return {"c": _matmul_nt(inputs["a"], inputs["b"])}

    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:
        """2*M*N*K FLOPs; A and B read once, C written once (fp16)."""
        m, n, k = problem["m"], problem["n"], problem["k"]
        return 2.0 * m * n * k, float(2 * (m * k + n * k + m * n))

    def compute_dtype(self, problem: Mapping[str, Any]) -> str:
        return "float16"

    def check_problems(self) -> list[dict[str, Any]]:
        """The tutorial's own default size first (the static record is taken there), then a
        smaller non-square one."""
        tm, tn = self.tile_mn
        return [self.problem(*self.default_mnk), self.problem(4 * tm, 8 * tn, 512)]

    def profile_problems(self) -> list[dict[str, Any]]:
        return [self.problem(*self.default_mnk)]

    # -- the kernel ------------------------------------------------------------------------
    def upstream_args(
        self, t: Mapping[str, Any], consts: tuple[Const, ...], problem: Mapping[str, Any]
    ) -> tuple:
        """``host_function``'s positional arguments (tensors by spec name, then the
        compile-time ``max_active_clusters`` constants)."""
        return (t["a"], t["b"], t["c"], *consts)

    def validate_config(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> None:
        """Raises ShapeError for a config key other than ``sm_count``: the tutorial's tile,
        cluster and stages are module constants, not arguments."""
        unknown = sorted(set(config) - set(self.config_keys))
        if unknown:
            raise ShapeError(
                f"{self.name} has no config {', '.join(unknown)}: the tutorial's tile, cluster "
                f"and stages are module constants in {self.source}; accepted: "
                f"{', '.join(self.config_keys)}"
            )

    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:
        self.validate_config(problem, config)
        mod = load_example(self.source)
        if tuple(mod.mma_tiler_mnk[:2]) != tuple(self.tile_mn):
            raise KernelPlanError(
                f"{self.name}: {self.source} now tiles {tuple(mod.mma_tiler_mnk[:2])}, the "
                f"adapter assumes {self.tile_mn}: update tile_mn"
            )
        consts, meta = [], {}
        for i, cname in enumerate(self.cluster_constants):
            shape = getattr(mod, cname)
            n, sms, why = max_active_clusters(
                shape[0] * shape[1] * shape[2], config, target_sm=self.target_sm[0]
            )
            consts.append(Const(n))
            prefix = "" if i == 0 else cname.split("_cluster")[0] + "_"
            meta[f"{prefix}max_active_clusters"] = n
            meta[f"{prefix}max_active_clusters_from"] = f"{why} ({cname} {tuple(shape)})"
            meta.setdefault("sm_count", sms)
        meta["module_constants"] = {
            c: list(v) if isinstance(v, tuple) else v
            for c in MODULE_CONSTANTS
            if isinstance(v := getattr(mod, c, None), (int, bool, tuple))
        }
        specs = self.tensor_specs(problem)
        key = (self.name, tuple(sorted(problem.items())), tuple(c.value for c in consts))
        consts_t = tuple(consts)
        return CuteKernel(
            self.name,
            mod.host_function,
            lambda t: self.upstream_args(t, consts_t, problem),
            specs,
            key=key,
            meta=meta,
        )


def _matmul_nt(a, b):
    import torch

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return a.float() @ b.float().t()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
