"""Adapter: the CUTLASS Blackwell persistent block-scaled GEMM (NVFP4 / MXF4 / MXF8),
class ``Sm100BlockScaledPersistentDenseGemmKernel`` of
``cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent.py``.

An implementation of the GEMM workload on :class:`~cute_blockscaled.formats.
BlockScaledGemmProblem` (the formats, the scale-factor layout and the dequantising reference
are in :mod:`cute_blockscaled.formats`, with where each is defined).

Shape-generic by construction: unlike its siblings (``_prefetch``, ``_amax``: CuTe tensors),
this kernel's ``__call__`` (L400-L413) takes five ``cute.Pointer`` s, the majors as a
``Constexpr`` and ``problem_mnkl`` as four run-time ``Int32``; it builds the A/B/C layouts
(``make_ordered_layout`` over ``cute.assume(x, 32)``, L459-L474) and the scale-factor layouts
(``tile_atom_to_shape_SF``, L476-L489) from those scalars inside the kernel. Upstream's
``scaled_mm`` (L2316-L2356) compiles once with null pointers and ``(Int32(0),)*4`` and the
compiled function serves every M, N, K, L. Here the same: :meth:`plan` passes pointers built
from the tensors' addresses (null for the fake tensors of a static compile) and
``problem_mnkl`` as ``Int32`` run-time values, and M, N, K, L are ``runtime_problem_fields``,
so they are not in the compile key. The static record says so in ``meta.shape_generic``
(and ``tests/test_dense_blockscaled_gemm_persistent.py`` asserts that two shapes share one
compile key).

What upstream takes that is not carried: A and B of different element types (mixed
f8f6f4) and FP6; M-major A / N-major B for FP8; M-major C (this is the workload's TN).

Target SM: sm_100a (tcgen05 block-scaled MMA, TMEM, ``tcgen05.cp`` of the scale factors).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from cute_gemm.blackwell_common import Format, Sm100FormatGemmPlan, check_16_byte_extents

from kernelplan import Config, CuteKernel, ShapeError, Target
from kernelplan.cutlass_src import load_example
from kernelplan.kernel import Const

from .. import formats as fm
from ..formats import BlockScaledGemmProblem

#: upstream's CLI defaults (``prepare_parser``, L3281-L3345): --mnkl 512,256,256,1, NVF4
#: (Float4E2M1FN, Float8E4M3FN scales, sf_vec_size 16), Float16 C
UPSTREAM_DEFAULT = BlockScaledGemmProblem(512, 256, 256, 1)


@dataclass(frozen=True)
class BlockScaledConfig(Config):
    """MMA tile (M, N) (M 256 means the 2-CTA MMA, upstream L186) and cluster (M, N);
    upstream's defaults 128x128, 1x1."""

    mma_tiler_mn: tuple[int, int] = (128, 128)
    cluster_shape_mn: tuple[int, int] = (1, 1)

    def validate(self) -> None:
        """Upstream's ``is_valid_mma_tiler_and_cluster_shape`` (L2008-L2047), one line."""
        (tm, tn), (cm, cn) = self.mma_tiler_mn, self.cluster_shape_mn
        if tm not in (128, 256) or tn not in (64, 128, 192, 256):
            raise ShapeError(f"mma_tiler_mn {tm}x{tn}: M 128 or 256, N 64/128/192/256")
        pow2 = all(x > 0 and x & (x - 1) == 0 for x in (cm, cn))
        if not pow2 or cm > 4 or cn > 4 or (tm == 256 and cm % 2):
            raise ShapeError(
                f"cluster_shape_mn {cm}x{cn}: powers of 2 up to 4 each (scale-factor "
                "multicast), M even with the 256-row (2-CTA) tile"
            )

    def autotune(self) -> list[BlockScaledConfig]:
        """This config (the default), a 128x256 tile, and a 256x128 2-CTA tile on a 2x1
        cluster."""
        return [
            self,
            self.replace(mma_tiler_mn=(128, 256)),
            self.replace(mma_tiler_mn=(256, 128), cluster_shape_mn=(2, 1)),
        ]


def check_block_format(name: str, p: BlockScaledGemmProblem) -> None:
    """Upstream's dtype / ``sf_vec_size`` rules (L1902-L1969) and alignment
    (``is_valid_tensor_alignment``, L2049-L2158) for the TN layout, one line each."""
    if p.sf_vec_size == 16 and p.dtype != "float4_e2m1fn":
        raise ShapeError(
            f"{name} takes --sf_vec_size 16 only with float4_e2m1fn A/B (NVFP4/MXF4); "
            f"{p.dtype} takes 32"
        )
    if p.sf_vec_size == 32 and p.sf_dtype != "float8_e8m0fnu":
        raise ShapeError(f"{name}: --sf_vec_size 32 (MX) takes --sf_dtype float8_e8m0fnu")
    check_16_byte_extents(name, (("k", p.k, p.dtype), ("n", p.n, p.c_dtype)), fm.bits)


class DenseBlockscaledGemmPersistent(Sm100FormatGemmPlan):
    """Blackwell persistent block-scaled GEMM (tcgen05 block_scale MMA, scale factors via
    SMEM -> TMEM), sm_100a; pointer + scalar-shape entry, one compile for every shape."""

    name: ClassVar[str] = "dense_blockscaled_gemm_persistent"
    package: ClassVar[str] = "blockscaled"
    problem_type = BlockScaledGemmProblem
    source: ClassVar[str] = (
        "cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent.py"
    )
    # tcgen05 (L38), blackwell_helpers (L43), tcgen05.CtaGroup.TWO (L202); pointers and Int32
    # extents: one compile serves every M, N, K, L
    config_type = BlockScaledConfig
    fmt = Format.of(fm)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell block-scaled GEMM (NVFP4/MXF4/MXF8), shape-generic, sm_100a"
    )

    def supports(self, problem: BlockScaledGemmProblem) -> None:
        check_block_format(self.name, problem)

    def default_problem(self) -> BlockScaledGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[BlockScaledGemmProblem]:
        """NVFP4 at upstream's default; MXF4 and MXF8 with M, N, K off the tile (K not a
        multiple of the 4-block scale-factor atom), batched."""
        odd = dict(m=200, n=136, k=320, l=2)
        return [
            UPSTREAM_DEFAULT,
            UPSTREAM_DEFAULT.replace(sf_dtype="float8_e8m0fnu", sf_vec_size=32, **odd),
            UPSTREAM_DEFAULT.replace(
                dtype="float8_e4m3fn",
                sf_dtype="float8_e8m0fnu",
                sf_vec_size=32,
                c_dtype="bfloat16",
                **odd,
            ),
        ]

    def profile_problems(self) -> list[BlockScaledGemmProblem]:
        """Upstream's usage line: 8192x8192x1024 NVFP4 (E8M0 scales in its line; E4M3 here)."""
        return [UPSTREAM_DEFAULT.replace(m=8192, n=8192, k=1024)]

    def autotune_configs(self, problem: BlockScaledGemmProblem) -> list[BlockScaledConfig]:
        return BlockScaledConfig().autotune()

    # -- the entry --------------------------------------------------------------------------
    def plan(
        self, problem: BlockScaledGemmProblem, config: BlockScaledConfig, target: Target
    ) -> CuteKernel:
        import cutlass
        import cutlass.cute as cute
        import cutlass.utils as utils
        from cutlass.cute.nvgpu import OperandMajorMode
        from cutlass.cute.runtime import _Tensor, make_ptr

        p = problem
        mod = load_example(self.source)
        K = mod.Sm100BlockScaledPersistentDenseGemmKernel
        ab, sf, c = (cutlass.dtype(fm.CUTE[d]) for d in (p.dtype, p.sf_dtype, p.c_dtype))
        if not K.can_implement(
            (p.m, p.n, p.k, p.l),
            ab,
            ab,
            sf,
            c,
            "k",
            "k",
            "n",
            p.sf_vec_size,
            config.mma_tiler_mn,
            config.cluster_shape_mn,
        ):
            raise ShapeError(f"{self.name}: upstream can_implement refuses {p.label()}")
        gemm = K(p.sf_vec_size, config.mma_tiler_mn, config.cluster_shape_mn)
        elem = {"a": (ab, 16), "b": (ab, 16), "sfa": (sf, 32), "sfb": (sf, 32), "c": (c, 16)}

        def ptr(name: str, t: Any):
            dtype, align = elem[name]
            # a real tensor's address; null for the fake tensors of a static compile (as
            # upstream's scaled_mm compiles) and for the placeholders of the compile key
            addr = t.data_ptr if isinstance(t, _Tensor) else 0
            return make_ptr(dtype, addr, cute.AddressSpace.gmem, assumed_align=align)

        # upstream's utils.LayoutEnum, where this DSL now keeps it (the old name warns)
        layout_enum = getattr(getattr(cutlass, "tensor_utils", None), "LayoutEnum", None)
        layout_enum = layout_enum or utils.LayoutEnum
        layouts = (OperandMajorMode.K, OperandMajorMode.K, layout_enum.ROW_MAJOR)
        mnkl = tuple(cutlass.Int32(x) for x in (p.m, p.n, p.k, p.l))

        def tensors(t: Mapping[str, Any]) -> tuple:
            ptrs = tuple(ptr(n, t[n]) for n in ("a", "b", "sfa", "sfb", "c"))
            return (*ptrs, Const(layouts), mnkl)

        shape_generic = (
            "entry takes cute.Pointer a, b, sfa, sfb, c and problem_mnkl as run-time "
            "Int32 (upstream __call__ L400-L413, scaled_mm L2316-L2356): one compile "
            "serves every M, N, K, L; m, n, k, l are not in the compile key"
        )
        return self.persistent(
            p, gemm, tensors, config.cluster_shape_mn, target, meta={"shape_generic": shape_generic}
        )


__all__ = ["BlockScaledConfig", "DenseBlockscaledGemmPersistent", "check_block_format"]
