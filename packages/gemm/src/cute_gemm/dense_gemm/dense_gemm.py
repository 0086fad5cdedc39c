"""Adapter: the CUTLASS Blackwell dense GEMM (tcgen05 UMMA into TMEM, TMA loads, one CTA per
output tile; no warp specialisation: warp 0 issues TMA and MMA, all four warps run the epilogue).

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/kernel/dense_gemm/dense_gemm.py``, class
``DenseGemmKernel(acc_dtype, use_2cta_instrs, mma_tiler_mn, cluster_shape_mn, use_tma_store)``,
compiled as ``cute.compile(gemm, a, b, c, stream)``. Shared parts: :mod:`..blackwell_common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..blackwell_common import BlackwellDenseGemmPlan


class BlackwellDenseGemm(BlackwellDenseGemmPlan):
    """See the module docstring; config and its constraints in
    :class:`~..blackwell_common.BlackwellGemmConfig`."""

    name: ClassVar[str] = "dense_gemm"
    source: ClassVar[str] = "cute/blackwell/kernel/dense_gemm/dense_gemm.py"
    upstream_class: ClassVar[str] = "DenseGemmKernel"
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell dense GEMM (TMA + tcgen05 + TMEM), one CTA per tile, sm_100a"
    )
