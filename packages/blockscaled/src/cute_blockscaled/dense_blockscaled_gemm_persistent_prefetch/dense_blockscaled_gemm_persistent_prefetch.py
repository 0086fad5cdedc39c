"""Adapter: class ``Sm100BlockScaledPersistentDenseGemmKernel`` of the CUTLASS CuTe DSL example
``cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_prefetch.py``: the
persistent block-scaled GEMM (NVFP4 / MXF4 / MXF8) with TMA prefetch hints issued
``prefetch_dist`` K tiles ahead of the loads (None: the A/B stage count; 0: none; module
docstring L64-L74, constructor L200-L238).

An implementation of the GEMM workload on :class:`~cute_blockscaled.formats.
BlockScaledGemmProblem` (formats, scale-factor layout and reference in
:mod:`cute_blockscaled.formats`; this entry's tensors in :mod:`cute_blockscaled.tensors`).

Unlike ``dense_blockscaled_gemm_persistent`` (pointers and ``Int32`` extents), ``__call__``
(L443-L452) takes CuTe tensors a, b, sfa, sfb, c with dynamic layouts: one compile still
serves every M, N, K, L whose contiguous extents honour the divisibility marks (K and N
multiples of 32 for FP4, 16 for FP8), which are part of the compile key.

Upstream: ``run()`` L2211-L2558 builds the kernel (L2432, ``prefetch_dist`` its fourth
argument) and compiles at L2449 with ``--opt-level 2``. Not carried: M-major A / N-major B
for MXF8, M-major C (the workload's TN).

Target SM: sm_100a (tcgen05 block-scaled MMA, TMEM, ``tcgen05.cp`` of the scale factors).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from cute_gemm.blackwell_common import Format, Sm100FormatGemmPlan

from kernelplan import CuteKernel, ShapeError, Target
from kernelplan.cutlass_src import load_example

from .. import formats as fm
from .. import tensors as tt
from ..dense_blockscaled_gemm_persistent.dense_blockscaled_gemm_persistent import (
    BlockScaledConfig,
)
from ..formats import BlockScaledGemmProblem

#: upstream's CLI defaults (L2574-L2626): --mnkl 512,256,256,1, Float4E2M1FN A/B with
#: Float8E8M0FNU scales and sf_vec_size 16, Float16 C
UPSTREAM_DEFAULT = BlockScaledGemmProblem(
    512, 256, 256, 1, sf_dtype="float8_e8m0fnu", sf_vec_size=16
)


@dataclass(frozen=True)
class PrefetchConfig(BlockScaledConfig):
    """MMA tile and cluster as ``dense_blockscaled_gemm_persistent``'s (upstream's defaults
    128x128, 1x1), and ``prefetch_dist`` (``--prefetch_dist`` default None, L2620-L2626)."""

    prefetch_dist: int | None = None

    def validate(self) -> None:
        super().validate()
        if self.prefetch_dist is not None and self.prefetch_dist < 0:
            raise ShapeError(
                f"prefetch_dist {self.prefetch_dist}: None (the stage count), 0 (off) or > 0"
            )


class TensorEntryBlockScaledGemm(Sm100FormatGemmPlan):
    """What the tensor-entry block-scaled siblings share: the problem, tensors, inputs,
    reference, upstream's ``can_implement`` and the compile (subclasses name the source and
    build the kernel). Dynamic layouts: M, N, K, L are not compiled in (their divisibility
    classes are, in the tensor signatures)."""

    problem_type = BlockScaledGemmProblem
    package: ClassVar[str] = "blockscaled"
    fmt = Format(tt.tensor_specs, tt.prepare_inputs, tt.reference, fm.flops_bytes)

    def supports(self, problem: BlockScaledGemmProblem) -> None:
        tt.check_tensor_entry(self.name, problem)

    def supports_config(self, problem: BlockScaledGemmProblem, config: BlockScaledConfig) -> None:
        """Upstream's ``can_implement`` on the pair, one line."""
        import cutlass

        p = problem
        kernel_cls = load_example(self.source).Sm100BlockScaledPersistentDenseGemmKernel
        ok = kernel_cls.can_implement(
            *(cutlass.dtype(fm.CUTE[d]) for d in (p.dtype, p.sf_dtype)),
            p.sf_vec_size,
            cutlass.dtype(fm.CUTE[p.c_dtype]),
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

    def default_problem(self) -> BlockScaledGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[BlockScaledGemmProblem]:
        """Upstream's default (NVFP4, E8M0 scales); NVFP4 with E4M3 scales; MXF4 and MXF8
        with M off the tile and SFK not a multiple of the 4-block atom, batched."""
        odd = dict(m=200, n=160, k=320, l=2)
        return [
            UPSTREAM_DEFAULT,
            UPSTREAM_DEFAULT.replace(sf_dtype="float8_e4m3fn"),
            UPSTREAM_DEFAULT.replace(sf_vec_size=32, **odd),
            UPSTREAM_DEFAULT.replace(
                dtype="float8_e4m3fn", sf_vec_size=32, c_dtype="bfloat16", **odd
            ),
        ]

    def profile_problems(self) -> list[BlockScaledGemmProblem]:
        """Upstream's usage line: 8192x8192x1024 NVFP4 with E8M0 scales."""
        return [UPSTREAM_DEFAULT.replace(m=8192, n=8192, k=1024)]

    def autotune_configs(self, problem: BlockScaledGemmProblem) -> list[BlockScaledConfig]:
        return self.config_type().autotune()

    def build(self, mod, problem: BlockScaledGemmProblem, config: BlockScaledConfig) -> Any:
        raise NotImplementedError

    def entry_tensors(self, t: Mapping[str, Any]) -> tuple:
        """The tensors ``__call__`` takes before ``max_active_clusters``."""
        return (t["a"], t["b"], t["sfa"], t["sfb"], t["c"])

    def plan(
        self, problem: BlockScaledGemmProblem, config: BlockScaledConfig, target: Target
    ) -> CuteKernel:
        gemm = self.build(load_example(self.source), problem, config)
        return self.persistent(
            problem,
            gemm,
            self.entry_tensors,
            config.cluster_shape_mn,
            target,
            options="--opt-level 2",
        )


class DenseBlockscaledGemmPersistentPrefetch(TensorEntryBlockScaledGemm):
    """Blackwell persistent block-scaled GEMM with TMA prefetch (sm_100a), imported from
    ``cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_prefetch.py``."""

    name: ClassVar[str] = "dense_blockscaled_gemm_persistent_prefetch"
    source: ClassVar[str] = (
        "cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_prefetch.py"
    )
    # tcgen05 (L37), blackwell_helpers (L42), tcgen05.CtaGroup.TWO (L244)
    config_type = PrefetchConfig
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell block-scaled GEMM with TMA prefetch (NVFP4/MXF4/MXF8), sm_100a"
    )

    def build(self, mod, problem: BlockScaledGemmProblem, config: PrefetchConfig) -> Any:
        return mod.Sm100BlockScaledPersistentDenseGemmKernel(
            problem.sf_vec_size,
            tuple(config.mma_tiler_mn),
            tuple(config.cluster_shape_mn),
            config.prefetch_dist,
        )
