"""Adapter: class ``BlockwiseContiguousGroupedGemmKernel`` of the CUTLASS CuTe DSL example
``cute/blackwell/kernel/blockwise_gemm/contiguous_grouped_gemm.py`` (fp8 with fp32 1x128 /
128x128 scales, groups of rows of A and C laid one after another, one B per group; a
``gidx_mapping`` tensor gives each row's group and the kernel reads it at the first row of
each tile, L1020 / L1071 / L1188).

An implementation of the GEMM workload on :class:`~cute_blockwise.formats.
GroupedBlockwiseGemmProblem`: the group sizes are a stated part of the problem (a vector, or
a count and a seed that draw it deterministically), where upstream draws them from Python's
unseeded ``random`` around an expected M (``create_mask`` L2630-L2654, so its total M is
random too). A vector that does not sum to M is refused in one line.

Upstream: ``run()`` L2723-L2958 builds the kernel (L2818) and compiles ``(a, b, c, sfa, sfb,
gidx_mapping, max_active_clusters, stream)`` at L2833 with ``--opt-level 2`` where the DSL's
CUDA is 13.1 or later (``use_newer_backend_codegen``, L198), 3 before. Not carried: M-major C
(``--c_major m``; this is the workload's TN), upstream's ``--fixed_m`` (every group 128 rows:
here ``--group_sizes 128,128,...``).

Target SM: sm_100a (tcgen05, TMEM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cute_gemm.blackwell_common import Format, Sm100FormatGemmPlan, check_16_byte_extents

from kernelplan import Config, CuteKernel, ShapeError, Target, dtypes
from kernelplan.cutlass_src import load_example

from .. import formats as fm
from ..blockwise_gemm.blockwise_gemm import BlockwiseGemmConfig
from ..formats import GroupedBlockwiseGemmProblem

#: upstream's CLI defaults (L2985-L3006): --mnkl 256,256,512,1 (an expected 256 rows in one
#: group), Float8E4M3FN A/B, BFloat16 C, Float32 scales
UPSTREAM_DEFAULT = GroupedBlockwiseGemmProblem(m=256, n=256, k=512, groups=1)


@dataclass(frozen=True)
class ContiguousGroupedGemmConfig(BlockwiseGemmConfig):
    """What BlockwiseContiguousGroupedGemmKernel is built with: BlockwiseGemmKernel's
    arguments and the example's same defaults (--acc_dtype L3005, --use_2cta_instrs
    L3007-L3011, --mma_tiler_mn L2991-L2996, --cluster_shape_mn L2997-L3002)."""


class ContiguousGroupedGemm(Sm100FormatGemmPlan):
    """BlockwiseContiguousGroupedGemmKernel (sm_100a), imported from
    ``cute/blackwell/kernel/blockwise_gemm/contiguous_grouped_gemm.py``."""

    name: ClassVar[str] = "contiguous_grouped_gemm"
    package: ClassVar[str] = "blockwise"
    problem_type = GroupedBlockwiseGemmProblem
    source: ClassVar[str] = "cute/blackwell/kernel/blockwise_gemm/contiguous_grouped_gemm.py"
    # sm_100a: tcgen05 (L38), blackwell_helpers (L41), tcgen05.CtaGroup.TWO (L203)
    config_type = ContiguousGroupedGemmConfig
    fmt = Format.of(fm, "grouped_")
    #: dynamic layouts and a run-time gidx tensor: one compile for every M, N, K, group count
    #: and group-size vector
    runtime_problem_fields: ClassVar[tuple[str, ...]] = (
        "m",
        "n",
        "k",
        "l",
        "init",
        "groups",
        "group_sizes",
        "group_seed",
    )
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL blockwise-scaled fp8 contiguous grouped GEMM, sm_100a"
    )

    def supports(self, problem: GroupedBlockwiseGemmProblem) -> None:
        """16-byte contiguous extents (upstream ``is_valid_tensor_alignment``, L2507-L2558),
        one line."""
        p = problem
        check_16_byte_extents(self.name, (("k", p.k, p.dtype), ("n", p.n, p.c_dtype)))

    def supports_config(self, problem: GroupedBlockwiseGemmProblem, config: Config) -> None:
        """Upstream's ``can_implement`` (L2560-L2627) on the pair, one line (its M and L are
        the expected rows per group and the group count)."""
        import cutlass

        p, mod = problem, load_example(self.source)
        ok = mod.BlockwiseContiguousGroupedGemmKernel.can_implement(
            dtypes.cute_type(p.dtype),
            cutlass.dtype(config.acc_dtype),
            dtypes.cute_type(p.c_dtype),
            config.use_2cta_instrs,
            tuple(config.mma_tiler_mn),
            tuple(config.cluster_shape_mn),
            p.m,
            p.n,
            p.k,
            p.groups,
            "k",
            "k",
            "n",
        )
        if not ok:
            raise ShapeError(
                f"{self.name}: upstream can_implement refuses {config.label()} (tile N 128, "
                "cluster tile M 64 or 128: a tile may not straddle groups)"
            )

    def default_problem(self) -> GroupedBlockwiseGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[GroupedBlockwiseGemmProblem]:
        """Upstream's default (one group); four drawn groups with N and K off the 128 blocks;
        a stated vector with an empty group."""
        return [
            UPSTREAM_DEFAULT,
            UPSTREAM_DEFAULT.replace(m=1024, n=136, k=400, groups=4, group_sizes=None),
            UPSTREAM_DEFAULT.replace(m=768, groups=None, group_sizes=(256, 0, 384, 128)),
        ]

    def profile_problems(self) -> list[GroupedBlockwiseGemmProblem]:
        """Upstream's usage line --mnkl 256,4096,4096,16: 16 groups of about 256 rows (M 4096
        here, drawn with seed 0)."""
        return [UPSTREAM_DEFAULT.replace(m=4096, n=4096, k=4096, groups=16, group_sizes=None)]

    def plan(
        self,
        problem: GroupedBlockwiseGemmProblem,
        config: ContiguousGroupedGemmConfig,
        target: Target,
    ) -> CuteKernel:
        mod = load_example(self.source)
        kernel = mod.BlockwiseContiguousGroupedGemmKernel(
            dtypes.cute_type(config.acc_dtype),
            config.use_2cta_instrs,
            tuple(config.mma_tiler_mn),
            tuple(config.cluster_shape_mn),
        )
        # upstream L2843-L2845 (compile options)
        opt = 2 if kernel.use_newer_backend_codegen else 3
        return self.persistent(
            problem,
            kernel,
            lambda t: (t["a"], t["b"], t["c"], t["sfa"], t["sfb"], t["gidx"]),
            config.cluster_shape_mn,
            target,
            options=f"--opt-level {opt}",
            meta={"group_sizes": list(problem.group_sizes)},
        )
