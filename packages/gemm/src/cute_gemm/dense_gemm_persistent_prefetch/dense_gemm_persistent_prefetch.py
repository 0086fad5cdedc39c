"""Adapter: the CUTLASS Blackwell persistent GEMM with TMA prefetch into L2 (``prefetch_dist``
k-tiles ahead of the TMA loads; None = as many as there are A/B stages, 0 = off).

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/kernel/dense_gemm/dense_gemm_persistent_prefetch.py``,
class ``PersistentDenseGemmKernel(..., use_tma_store, prefetch_dist=None)``, called as
``(a, b, c, max_active_clusters, stream)`` (compile-time ``max_active_clusters``, as in
``dense_gemm_persistent``). Shared parts: :mod:`..blackwell_common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..blackwell_common import BlackwellDenseGemmPlan, BlackwellPrefetchGemmConfig


class BlackwellDenseGemmPersistentPrefetch(BlackwellDenseGemmPlan):
    """See the module docstring; config and its constraints in
    :class:`~..blackwell_common.BlackwellPrefetchGemmConfig`."""

    name: ClassVar[str] = "dense_gemm_persistent_prefetch"
    source: ClassVar[str] = "cute/blackwell/kernel/dense_gemm/dense_gemm_persistent_prefetch.py"
    upstream_class: ClassVar[str] = "PersistentDenseGemmKernel"
    static_persistent: ClassVar[bool] = True
    config_type = BlackwellPrefetchGemmConfig
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell persistent GEMM with TMA L2 prefetch, sm_100a"
    )
