"""Adapter: the CUTLASS Hopper CTA-level norm example in its RMSNorm mode.

Upstream: ``examples/python/CuTeDSL/cute/hopper/kernel/cta_norm/cta_norm.py``, class
``CtaNorm(N, norm_type, threads_per_cta)`` (L77-L87), called as ``(mY, mX, mWeight, mBias,
eps)`` (L98-L105). The example is both a LayerNorm (``norm_type="layer"``, with a bias) and an
RMSNorm (``"rms"``, ``apply_rmsnorm`` L254-L276); the RMS mode is this implementation of the
``rmsnorm`` workload (the LayerNorm mode would need a LayerNorm workload with a bias and a
mean; none exists yet). One CTA per row (grid ``[M, 1, 1]``, L123-L126); each thread loads
128-bit vectors of 8 elements of x and w straight into registers (no SMEM staging), sums the
squares in float32, reduces with butterfly shuffles and then across warps through a
``warps + 1`` float array in SMEM (``cta_reduce`` L196-L208), and stores 128-bit vectors.

How it is called, as upstream's ``run_layernorm`` does (L319-L336): ``from_dlpack`` tensors
without dynamic marks (static (M, N) layouts: one compile per problem; eps is a runtime
argument), compiled with ``--enable-tvm-ffi`` and launched with the torch tensors themselves
(``CuteKernel(tvm_ffi=True)``), bias None. The host function takes no stream: the kernel goes
to the default stream, the one the harness times on. The example prints its layouts while it
traces (``[DSL INFO]`` lines); they are left as they are.

Config: ``threads_per_cta`` (upstream ``--threads``); None takes the example's heuristic
(``heuristic_threads`` L89-L96: about a quarter of a warp per 256 elements, an even number of
warps). What it takes (``run_layernorm`` L294-L298): N a multiple of 8, a block of a multiple
of 32 threads, at most 1024; the heuristic's block exceeds 1024 threads above N = 32768, so
larger N needs an explicit ``threads_per_cta``.

Target sm_90a (its folder); the code uses no Hopper instruction (vector loads and stores,
shuffles, ``bar.sync``), so it would run on sm_80 as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kernelplan import Config, CuteKernel, KernelPlan, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.workloads.rmsnorm import RMSNORM, RMSNormProblem

ELEMS_PER_THREAD = 8  # upstream L84: one 128-bit vector of a 16-bit dtype
MAX_THREADS = 1024


@dataclass(frozen=True)
class CtaNormConfig(Config):
    """``threads_per_cta``: threads per CTA (one row each); None: the example's heuristic."""

    threads_per_cta: int | None = None

    def validate(self) -> None:
        t = self.threads_per_cta
        if t is None:
            return
        if isinstance(t, bool) or not isinstance(t, int) or t <= 0 or t % 32 or t > MAX_THREADS:
            raise ShapeError(
                f"threads_per_cta {t!r}: the kernel takes a multiple of 32 threads, at most "
                f"{MAX_THREADS} (cta_norm.py L297)"
            )


def heuristic_threads(n: int) -> int:
    """The block size the example picks for N (its ``heuristic_threads``, L89-L96): the
    number of 256-element warp tiles over four, at least one warp, rounded up to an even
    number of warps."""
    tiles = -(-n // (ELEMS_PER_THREAD * 32))
    warps = max(tiles // 4, 1)
    warps += warps % 2
    return warps * 32


class HopperCtaNorm(KernelPlan):
    """CUTLASS Hopper ``cta_norm`` in RMS mode (see the module docstring)."""

    name: ClassVar[str] = "hopper_cta_norm"
    package: ClassVar[str] = "norm"
    workload = RMSNORM
    source: ClassVar[str] = "cute/hopper/kernel/cta_norm/cta_norm.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    config_type = CtaNormConfig
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("eps",)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Hopper cta_norm, RMS mode (one CTA per row, registers only), sm_90a"
    )

    def supports(self, problem: RMSNormProblem) -> None:
        n = problem.n
        if n % ELEMS_PER_THREAD:
            raise ShapeError(
                f"{self.name} needs --n to be a multiple of {ELEMS_PER_THREAD} (cta_norm.py "
                f"L294); got {n}"
            )

    def check_problems(self) -> list[RMSNormProblem]:
        """The workload's check problems this implementation takes with its default config
        (the heuristic's block must fit)."""
        return [p for p in super().check_problems() if self._default_fits(p)]

    def profile_problems(self) -> list[RMSNormProblem]:
        return [p for p in super().profile_problems() if self._default_fits(p)]

    def _default_fits(self, problem: RMSNormProblem) -> bool:
        try:
            self.supports_config(problem, self.default_config(problem))
        except ShapeError:
            return False
        return True

    def supports_config(self, problem: RMSNormProblem, config: CtaNormConfig) -> None:
        if config.threads_per_cta is None and heuristic_threads(problem.n) > MAX_THREADS:
            raise ShapeError(
                f"{self.name}: the example's heuristic gives {heuristic_threads(problem.n)} "
                f"threads per CTA for N={problem.n}, more than {MAX_THREADS}; give "
                "--config threads_per_cta=<multiple of 32, at most 1024>"
            )

    def tensor_specs(self, problem: RMSNormProblem) -> dict[str, TensorSpec]:
        """The workload's tensors with static layouts (upstream's ``from_dlpack`` without
        ``mark_layout_dynamic``, L319-L325): the compiled code knows M, N and the strides."""
        return {
            n: TensorSpec(s.shape, s.dtype, role=s.role, init=s.init)
            for n, s in self.workload.tensor_specs(problem).items()
        }

    def plan(self, problem: RMSNormProblem, config: CtaNormConfig, target: Target) -> CuteKernel:
        mod = load_example(self.source)
        norm = mod.CtaNorm(problem.n, "rms", config.threads_per_cta)
        eps = problem.eps
        meta = {
            "threads_per_cta": norm.threads_per_cta,
            "threads_from": "config" if config.threads_per_cta else "example heuristic",
            "entry": "static (M, N) layouts, TVM-FFI call, default stream; eps at runtime",
        }

        def args(t):
            return (t["y"], t["x"], t["w"], None, eps)

        return CuteKernel(
            self.name,
            norm,
            args,
            self.tensor_specs(problem),
            options="--generate-line-info",
            meta=meta,
            tvm_ffi=True,
        )
