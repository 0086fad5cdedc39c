"""What the eight tutorial steps share: they implement the GEMM workload
(:data:`kernelplan.workloads.gemm.GEMM`) on the subset the tutorials take, with the operands
as the tutorials build them, the compile-only entry, and the launch constants.

What a tutorial takes, which is less than the workload states (each step's "Constraints"
docstring and ``run_dense_gemm``):

- L = 1 and 2-D operands: A row-major (m, k), B row-major (n, k) (both K-major), C row-major
  (m, n) (N-major). :meth:`TutorialGemmPlan.tensor_specs` states these 2-D views; the
  workload's reference takes 2-D operands as they are (``A @ B^T`` over the last two modes).
- fp16 A, B and C (fp32 accumulation): ``dtype`` and ``c_dtype`` float16 only.
- M and N multiples of the step's MMA tile (no bounds checks in M/N); K a multiple of 8
  (TMA rows of 16 bytes).
- Divisibility marks: fp16_gemm_0/1 mark the contiguous extent of every operand (K of A and
  B, N of C) with divisibility equal to its size (``mark_compact_shape_dynamic(mode=1,
  divisibility=...)``): the cubin is specialised to those extents, which the compile key
  carries through :meth:`kernelplan.TensorSpec.signature`.
- Inputs: the tutorials draw integers (``init="randint"``, [-2, 2]); the check and profile
  problems here do too, as the committed records assume.

Compile-only entry. Upstream's ``run_dense_gemm`` of fp16_gemm_0..5 calls the module-level
``@cute.jit host_function(a, b, c[, max_active_clusters...])`` directly, which JIT-compiles AND
launches in one call. The adapters never call it: :class:`kernelplan.CuteKernel` hands
``host_function`` to ``cute.compile`` (with fake tensors for static analysis, so nothing can
launch; with real tensors on an sm_100 GPU, and launches the compiled function itself, once
per timed or checked run). fp16_gemm_6 already compiles with ``cute.compile`` upstream.

Tutorial knobs (tile shape, cluster shape, stages, 2-CTA) are module constants upstream, not
arguments: an adapter has no config (:class:`kernelplan.NoConfig`); the SM count that
``max_active_clusters`` assumes where no sm_100 GPU is present is the target's
(``--sm_count``). The constants in force are recorded in each kernel's ``meta``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import CuteKernel, KernelPlan, KernelPlanError, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.kernel import Const
from kernelplan.workload import Config, NoConfig
from kernelplan.workloads.gemm import GEMM, GemmProblem

TUTORIAL_DIR = "cute/blackwell/tutorial/tutorial_gemm"
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


class TutorialGemmPlan(KernelPlan):
    """Base of the tutorial steps: implementations of the GEMM workload on the subset the
    tutorials take (see the module docstring). A subclass sets ``name``, ``source``,
    ``description`` and what differs from the defaults below (the tile its M/N must divide
    by, the operands' assumed alignment, the divisibility marks, and which module constants
    give the cluster sizes of the ``max_active_clusters`` constants its ``host_function``
    takes)."""

    package: ClassVar[str] = "gemm-tutorial"
    workload = GEMM
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    config_type: ClassVar[type[Config]] = NoConfig
    #: dynamic-layout operands: one compile serves every M, N, K (the divisibility marks of
    #: fp16_gemm_0/1 are in the tensor signatures, hence in the compile key).
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k", "init")
    #: M and N must be multiples of it (each tutorial's "Constraints" docstring).
    tile_mn: ClassVar[tuple[int, int]] = (256, 256)
    #: ``assumed_align`` of A, B and C (None upstream, i.e. the element size, from step 2 on).
    operand_align: ClassVar[int] = 2
    #: fp16_gemm_0/1 mark K (A, B) and N (C) with divisibility equal to their size.
    divisibility_marks: ClassVar[bool] = False
    #: Module constants (cluster shapes) giving one compile-time max_active_clusters each,
    #: in the order ``host_function`` takes them.
    cluster_constants: ClassVar[tuple[str, ...]] = ()
    #: The tutorial's own problem size (the static records are taken there).
    default_mnk: ClassVar[tuple[int, int, int]] = (8192, 8192, 8192)

    # -- the problems it takes ---------------------------------------------------------------
    def supports(self, problem: GemmProblem) -> None:
        """Raises ShapeError: L other than 1 (2-D operands), A/B or C not float16, M or N not
        a multiple of the tile (the tutorials have no M/N bounds checks), or K not a
        multiple of 8 (TMA rows are 16-byte multiples)."""
        if problem.l != 1:
            raise ShapeError(f"{self.name} takes L = 1 only (2-D operands); got --l {problem.l}")
        for key in ("dtype", "c_dtype"):
            if getattr(problem, key) != "float16":
                raise ShapeError(
                    f"{self.name} takes --{key} float16 only (got {getattr(problem, key)})"
                )
        tm, tn = self.tile_mn
        if problem.m % tm or problem.n % tn:
            raise ShapeError(
                f"{self.name} needs M and N to be multiples of its tile {tm}x{tn} (got "
                f"{problem.m}x{problem.n}): the tutorial has no M/N bounds checks"
            )
        if problem.k % 8:
            raise ShapeError(f"{self.name} needs K to be a multiple of 8 (TMA rows of 16 bytes)")

    def default_problem(self) -> GemmProblem:
        """The tutorial's own size, with its integer inputs."""
        return GemmProblem(*self.default_mnk, init="randint")

    def check_problems(self) -> list[GemmProblem]:
        """The tutorial's own default size first (the static record is taken there), then a
        smaller non-square one; integer inputs, as the tutorials draw them."""
        tm, tn = self.tile_mn
        return [self.default_problem(), GemmProblem(4 * tm, 8 * tn, 512, init="randint")]

    def profile_problems(self) -> list[GemmProblem]:
        return [self.default_problem()]

    def config(self, problem: GemmProblem, overrides: Mapping[str, str] | None = None) -> Config:
        """Raises ShapeError for any ``--config`` item: the tutorial's tile, cluster and
        stages are module constants, not arguments (the SM count is ``--sm_count``)."""
        if overrides:
            raise ShapeError(
                f"{self.name} has no config {', '.join(sorted(overrides))}: the tutorial's "
                f"tile, cluster and stages are module constants in {self.source} (the SM "
                "count max_active_clusters assumes is --sm_count)"
            )
        return self.default_config(problem)

    # -- the tensors as the tutorials build them ------------------------------------------------
    def _operand(self, rows: int, cols: int, dtype: str = "float16", **kw: Any) -> TensorSpec:
        """A 2-D row-major operand as the tutorials mark it: ``from_dlpack(t,
        assumed_align=align).mark_layout_dynamic(leading_dim=1)`` and, with a divisibility,
        ``.mark_compact_shape_dynamic(mode=1, divisibility=...)``."""
        if "divisibility" not in kw and self.divisibility_marks:
            kw["divisibility"] = cols
        kw.setdefault("align", self.operand_align)
        return TensorSpec((rows, cols), dtype, leading_dim=1, **kw)

    def tensor_specs(self, problem: GemmProblem) -> dict[str, TensorSpec]:
        """2-D views (L = 1), not the workload's (M, K, L) ones: the tutorials take A (m, k),
        B (n, k) and C (m, n), row-major, with their alignment and divisibility marks."""
        p = problem
        scale = 2.0 if p.init == "randint" else 1.0
        return {
            "a": self._operand(p.m, p.k, init=p.init, scale=scale),
            "b": self._operand(p.n, p.k, init=p.init, scale=scale),
            "c": self._operand(p.m, p.n, role="output", init="empty"),
        }

    # -- the kernel ------------------------------------------------------------------------
    def upstream_args(
        self, t: Mapping[str, Any], consts: tuple[Const, ...], problem: GemmProblem
    ) -> tuple:
        """``host_function``'s positional arguments (tensors by spec name, then the
        compile-time ``max_active_clusters`` constants)."""
        return (t["a"], t["b"], t["c"], *consts)

    def extra_meta(self, problem: GemmProblem) -> dict[str, Any]:
        """Facts a step adds to its kernel's ``meta``."""
        return {}

    def plan(self, problem: GemmProblem, config: Config, target: Target) -> CuteKernel:
        mod = load_example(self.source)
        if tuple(mod.mma_tiler_mnk[:2]) != tuple(self.tile_mn):
            raise KernelPlanError(
                f"{self.name}: {self.source} now tiles {tuple(mod.mma_tiler_mnk[:2])}, the "
                f"adapter assumes {self.tile_mn}: update tile_mn"
            )
        consts, meta = [], {}
        for i, cname in enumerate(self.cluster_constants):
            shape = getattr(mod, cname)
            n, why = max_active_clusters(shape[0] * shape[1] * shape[2], target)
            consts.append(Const(n))
            prefix = "" if i == 0 else cname.split("_cluster")[0] + "_"
            meta[f"{prefix}max_active_clusters"] = n
            meta[f"{prefix}max_active_clusters_from"] = f"{why} ({cname} {tuple(shape)})"
            meta.setdefault("sm_count", target.sm_count)
        meta["module_constants"] = {
            c: list(v) if isinstance(v, tuple) else v
            for c in MODULE_CONSTANTS
            if isinstance(v := getattr(mod, c, None), (int, bool, tuple))
        }
        meta.update(self.extra_meta(problem))
        consts_t = tuple(consts)
        return CuteKernel(
            self.name,
            mod.host_function,
            lambda t: self.upstream_args(t, consts_t, problem),
            self.tensor_specs(problem),
            meta=meta,
        )
