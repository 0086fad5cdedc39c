"""Adapter: class ``BlockwiseGemmKernel`` of the CUTLASS CuTe DSL example
``cute/blackwell/kernel/blockwise_gemm/blockwise_gemm.py`` (fp8 A/B with fp32 1x128 / 128x128
scales applied to each K block's partial accumulator in the epilogue warps).

An implementation of the GEMM workload on :class:`~cute_blockwise.formats.BlockwiseGemmProblem`
(format, tensors and reference in :mod:`cute_blockwise.formats`, with their upstream lines).

Upstream: ``run()`` L2615-L2819 builds ``BlockwiseGemmKernel(acc_dtype, use_2cta_instrs,
mma_tiler_mn, cluster_shape_mn)`` (L2695) and compiles ``(a, b, c, sfa, sfb,
max_active_clusters, stream)`` at L2710 with ``--opt-level=2`` only for DSL 4.6 (none here,
4.8.1). Not carried: M-major C (the workload's TN).

Target SM: sm_100a (tcgen05, TMEM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cute_gemm.blackwell_common import Format, Sm100FormatGemmPlan, check_16_byte_extents

from kernelplan import Config, CuteKernel, ShapeError, Target, dtypes
from kernelplan.cutlass_src import load_example

from .. import formats as fm
from ..formats import BlockwiseGemmProblem

#: upstream's CLI defaults (L2836-L2862): --mnkl 256,256,512,1, Float8E4M3FN A/B, BFloat16 C,
#: Float32 scales
UPSTREAM_DEFAULT = BlockwiseGemmProblem()


@dataclass(frozen=True)
class BlockwiseGemmConfig(Config):
    """What BlockwiseGemmKernel is built with; the defaults are the example's."""

    # --acc_dtype default (L2856) (cutlass.Float32)
    acc_dtype: str = "Float32"
    # --use_2cta_instrs default (L2858)
    use_2cta_instrs: bool = False
    # --mma_tiler_mn default (L2842)
    mma_tiler_mn: tuple[int, ...] = (128, 128)
    # --cluster_shape_mn default (L2848)
    cluster_shape_mn: tuple[int, ...] = (1, 1)


class BlockwiseGemm(Sm100FormatGemmPlan):
    """BlockwiseGemmKernel (sm_100a), imported from
    ``cute/blackwell/kernel/blockwise_gemm/blockwise_gemm.py``."""

    name: ClassVar[str] = "blockwise_gemm"
    package: ClassVar[str] = "blockwise"
    problem_type = BlockwiseGemmProblem
    source: ClassVar[str] = "cute/blackwell/kernel/blockwise_gemm/blockwise_gemm.py"
    # sm_100a: Blackwell tcgen05 MMA / TMEM (SM100 only); e.g. `cutlass.cute.nvgpu.tcgen05`
    # (blockwise_gemm.py L37), `cutlass.utils.blackwell_helpers` (blockwise_gemm.py L41),
    # `tcgen05.CtaGroup.TWO` (blockwise_gemm.py L186); dynamic layouts: one compile for every
    # M, N, K, L
    config_type = BlockwiseGemmConfig
    fmt = Format.of(fm)
    description: ClassVar[str] = "CUTLASS CuTe DSL blockwise-scaled fp8 GEMM, sm_100a"

    def supports(self, problem: BlockwiseGemmProblem) -> None:
        """16-byte contiguous extents (upstream ``is_valid_tensor_alignment``, L2447), one
        line."""
        p = problem
        check_16_byte_extents(self.name, (("k", p.k, p.dtype), ("n", p.n, p.c_dtype)))

    def supports_config(self, problem: BlockwiseGemmProblem, config: Config) -> None:
        """Upstream's ``can_implement`` (L2500-L2565) on the pair, one line."""
        import cutlass

        p, mod = problem, load_example(self.source)
        ok = mod.BlockwiseGemmKernel.can_implement(
            dtypes.cute_type(p.dtype),
            cutlass.dtype(config.acc_dtype),
            dtypes.cute_type(p.c_dtype),
            config.use_2cta_instrs,
            tuple(config.mma_tiler_mn),
            tuple(config.cluster_shape_mn),
            p.m,
            p.n,
            p.k,
            p.l,
            "k",
            "k",
            "n",
        )
        if not ok:
            raise ShapeError(f"{self.name}: upstream can_implement refuses {config.label()}")

    def default_problem(self) -> BlockwiseGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[BlockwiseGemmProblem]:
        """Upstream's default; M, N, K off the 128 blocks (partial scale blocks), batched."""
        return [UPSTREAM_DEFAULT, UPSTREAM_DEFAULT.replace(m=200, n=136, k=400, l=2)]

    def profile_problems(self) -> list[BlockwiseGemmProblem]:
        """Upstream's usage line: 4096^3, L=4."""
        return [UPSTREAM_DEFAULT.replace(m=4096, n=4096, k=4096, l=4)]

    def plan(
        self, problem: BlockwiseGemmProblem, config: BlockwiseGemmConfig, target: Target
    ) -> CuteKernel:
        mod = load_example(self.source)
        kernel = mod.BlockwiseGemmKernel(
            acc_dtype=dtypes.cute_type(config.acc_dtype),
            use_2cta_instrs=config.use_2cta_instrs,
            mma_tiler_mn=config.mma_tiler_mn,
            cluster_shape_mn=config.cluster_shape_mn,
        )
        return self.persistent(
            problem,
            kernel,
            lambda t: (t["a"], t["b"], t["c"], t["sfa"], t["sfb"]),
            config.cluster_shape_mn,
            target,
        )
