"""Adapter: the CUTLASS Blackwell persistent GEMM with the cluster-launch-control (CLC) dynamic
tile scheduler (tiles handed out by the hardware at run time: no cluster count compiled in),
tile swizzle, raster order, and an optional cluster split-K.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/kernel/dense_gemm/dense_gemm_persistent_dynamic.py``,
class ``PersistentDenseGemmKernel(..., use_tma_store, swizzle_size=1, raster_along="m",
split_k=1)``, called as ``(a, b, c, stream)``. Shared parts: :mod:`..blackwell_common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..blackwell_common import BlackwellDenseGemmPlan, BlackwellDynamicGemmConfig


class BlackwellDenseGemmPersistentDynamic(BlackwellDenseGemmPlan):
    """See the module docstring; config and its constraints in
    :class:`~..blackwell_common.BlackwellDynamicGemmConfig`."""

    name: ClassVar[str] = "dense_gemm_persistent_dynamic"
    source: ClassVar[str] = "cute/blackwell/kernel/dense_gemm/dense_gemm_persistent_dynamic.py"
    upstream_class: ClassVar[str] = "PersistentDenseGemmKernel"
    config_type = BlackwellDynamicGemmConfig
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell persistent GEMM with the CLC dynamic tile scheduler, sm_100a"
    )
