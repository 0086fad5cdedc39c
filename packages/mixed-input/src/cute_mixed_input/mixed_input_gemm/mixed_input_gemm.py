"""Adapter: class ``MixedInputGemmKernel`` of the CUTLASS CuTe DSL example
``cute/blackwell/kernel/mixed_input_gemm/mixed_input_gemm.py`` (int4 A with scales, or int8 /
uint8 A, converted to B's bf16/fp16 on the way to the tcgen05 MMA).

An implementation of the GEMM workload on :class:`~cute_mixed_input.formats.
MixedInputGemmProblem` (A's type and scale granularity are the problem's: they define the
operator's inputs; the formats, storage and reference are in :mod:`cute_mixed_input.formats`).

Upstream: ``run()`` L2026-L2224 builds the kernel (L2100-L2109, with ``shuffle_a`` from
``is_shuffle_a`` and the CUDA version, L2084-L2099) and compiles at L2145 with
``--opt-level 2`` on CUDA 13.1+ (3 before, L2137-L2144). Not carried: upstream's default
M-major A (``--a_major m``, L2266; this is the workload's TN, K-major A), M-major C, and
``scale_granularity_m`` other than 1 (upstream takes only 1 for int4,
``is_valid_scale_granularity``).

Target SM: sm_100a (tcgen05, TMEM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cute_gemm.blackwell_common import Format, Sm100FormatGemmPlan, check_16_byte_extents

from kernelplan import Config, CuteKernel, ShapeError, Target, dtypes
from kernelplan.cutlass_src import load_example

from .. import formats as fm
from ..formats import MixedInputGemmProblem

#: upstream's CLI defaults (L2237-L2300): --mnkl 128,128,128,1, Int4 A, BFloat16 B and C,
#: scale granularity (1, 128)
UPSTREAM_DEFAULT = MixedInputGemmProblem()


@dataclass(frozen=True)
class MixedInputGemmConfig(Config):
    """What MixedInputGemmKernel is built with; the defaults are the example's."""

    # --acc_dtype default (L2265) (cutlass.Float32)
    acc_dtype: str = "Float32"
    # --use_2cta_instrs default (L2247)
    use_2cta_instrs: bool = False
    # --mma_tiler_mnk default (L2241)
    mma_tiler_mnk: tuple[int, ...] = (128, 128, 128)
    # --cluster_shape_mn default (L2244)
    cluster_shape_mn: tuple[int, ...] = (1, 1)
    # --use_tma_store default (L2281)
    use_tma_store: bool = False


class MixedInputGemm(Sm100FormatGemmPlan):
    """MixedInputGemmKernel (sm_100a), imported from
    ``cute/blackwell/kernel/mixed_input_gemm/mixed_input_gemm.py``."""

    name: ClassVar[str] = "mixed_input_gemm"
    package: ClassVar[str] = "mixed-input"
    problem_type = MixedInputGemmProblem
    source: ClassVar[str] = "cute/blackwell/kernel/mixed_input_gemm/mixed_input_gemm.py"
    # sm_100a: Blackwell tcgen05 MMA / TMEM (SM100 only); e.g. `cutlass.utils.blackwell_helpers`
    # (mixed_input_gemm.py L42), `cutlass.cute.nvgpu.tcgen05` (mixed_input_gemm.py L46),
    # `tcgen05.CtaGroup.TWO` (mixed_input_gemm.py L201); dynamic layouts: M, N, K, L are
    # run-time extents (their alignment classes are in the tensor signatures)
    config_type = MixedInputGemmConfig
    fmt = Format.of(fm)
    description: ClassVar[str] = "CUTLASS CuTe DSL mixed-input GEMM (int4/int8 A), sm_100a"

    def supports(self, problem: MixedInputGemmProblem) -> None:
        """Upstream's alignment rule (``is_valid_tensor_alignment``: 16 bytes of each
        contiguous extent, the scales' M included) for the TN layout, one line."""
        p = problem
        extents = [("k", p.k, p.a_dtype), ("k", p.k, p.dtype), ("n", p.n, p.c_dtype)]
        extents += [("m", p.m, p.dtype)] if p.scaled else []
        check_16_byte_extents(
            self.name, extents, lambda d: 4 if d == "int4" else 8 * dtypes.nbytes(d)
        )

    def supports_config(self, problem: MixedInputGemmProblem, config: MixedInputGemmConfig):
        """Upstream's ``can_implement`` (L1973-L2023) on the pair, one line."""
        import cutlass

        p = problem
        mod = load_example(self.source)
        ok = mod.MixedInputGemmKernel.can_implement(
            (p.m, p.n, p.k, p.l),
            *(cutlass.dtype(fm.CUTE[d]) for d in (p.a_dtype, p.dtype, p.c_dtype)),
            "k",
            "k",
            "n",
            1 if p.scaled else 0,
            p.scale_granularity_k,
            tuple(config.mma_tiler_mnk),
            tuple(config.cluster_shape_mn),
            config.use_2cta_instrs,
            config.use_tma_store,
        )
        if not ok:
            raise ShapeError(
                f"{self.name}: upstream can_implement refuses {config.label()} for "
                f"{p.label()} (scale group a multiple of the MMA tile K, tile and cluster)"
            )

    def default_problem(self) -> MixedInputGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[MixedInputGemmProblem]:
        """Upstream's default; int4 with N and M off the tile, two scale groups, batched; int8
        convert-only."""
        return [
            UPSTREAM_DEFAULT,
            UPSTREAM_DEFAULT.replace(m=192, n=136, k=512, l=2, scale_granularity_k=256),
            UPSTREAM_DEFAULT.replace(m=256, n=256, k=256, a_dtype="int8", scale_granularity_k=0),
        ]

    def profile_problems(self) -> list[MixedInputGemmProblem]:
        """Upstream's convert-scale usage line: 1024x8192x6144 L=16, groups of 256."""
        return [UPSTREAM_DEFAULT.replace(m=1024, n=8192, k=6144, l=16, scale_granularity_k=256)]

    def plan(
        self, problem: MixedInputGemmProblem, config: MixedInputGemmConfig, target: Target
    ) -> CuteKernel:
        # upstream computes `shuffle_a` in `run()`: L2084 `shuffle_a =
        # mixed_input_utils.is_shuffle_a(a_major, k, a_...`; L2099 `shuffle_a = shuffle_a and
        # shuffle_supported`
        import cutlass

        shuffle_a = fm.shuffled(problem)
        cuda = getattr(cutlass, "CUDA_VERSION", None)
        opt = 3 if cuda is not None and (cuda.major, cuda.minor) < (13, 1) else 2
        mod = load_example(self.source)
        kernel = mod.MixedInputGemmKernel(
            scale_granularity_m=1 if problem.scaled else 0,
            scale_granularity_k=problem.scale_granularity_k,
            acc_dtype=dtypes.cute_type(config.acc_dtype),
            use_2cta_instrs=config.use_2cta_instrs,
            mma_tiler_mnk=config.mma_tiler_mnk,
            cluster_shape_mn=config.cluster_shape_mn,
            use_tma_store=config.use_tma_store,
            shuffle_a=shuffle_a,
        )
        return self.persistent(
            problem,
            kernel,
            lambda t: (t["a"], t.get("a_scale"), t["b"], t["c"]),
            config.cluster_shape_mn,
            target,
            options=f"--opt-level {opt}",
            meta={"shuffle_a": shuffle_a},
        )
