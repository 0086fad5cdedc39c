"""Adapter: the CUTLASS Blackwell persistent, warp-specialised dense GEMM (TMA warp, MMA warp,
epilogue warps; a static persistent tile scheduler; TMEM accumulator double-buffered).

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/kernel/dense_gemm/dense_gemm_persistent.py``,
class ``PersistentDenseGemmKernel(acc_dtype, use_2cta_instrs, mma_tiler_mn, cluster_shape_mn,
use_tma_store)``. Upstream compiles it through its module-level ``bmm`` wrapper, which only
permutes (L, M, K)-style views to (M, K, L) and calls the object; this adapter calls the object
directly with the (M, K, L) views: ``(a, b, c, max_active_clusters, stream)``, where
``max_active_clusters`` is a compile-time constant (see
:func:`kernelplan.device.max_active_clusters`; the record says which value was used).
"""

from __future__ import annotations

from typing import ClassVar

from ..blackwell_common import BlackwellDenseGemmPlan


class BlackwellDenseGemmPersistent(BlackwellDenseGemmPlan):
    """See the module docstring; config and its constraints in
    :class:`~..blackwell_common.BlackwellGemmConfig`."""

    name: ClassVar[str] = "dense_gemm_persistent"
    source: ClassVar[str] = "cute/blackwell/kernel/dense_gemm/dense_gemm_persistent.py"
    upstream_class: ClassVar[str] = "PersistentDenseGemmKernel"
    static_persistent: ClassVar[bool] = True
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell persistent warp-specialised GEMM (static scheduler), sm_100a"
    )
