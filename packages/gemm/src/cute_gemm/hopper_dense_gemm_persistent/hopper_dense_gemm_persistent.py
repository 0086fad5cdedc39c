"""Adapter: the CUTLASS Hopper persistent, warp-specialised WGMMA GEMM.

Upstream: ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py``,
class ``HopperWgmmaGemmPersistentKernel(acc_dtype, tile_shape_mn, cluster_shape_mn,
swizzle_size, raster_along_m)``, called as ``(a, b, c, max_active_clusters, stream)``: one
producer (TMA) warpgroup and one or two consumer (WGMMA) warpgroups per CTA, a static
persistent tile scheduler over ``max_active_clusters`` clusters.

``max_active_clusters`` is a compile-time constant. On a GPU it comes from
``cutlass.utils.HardwareInfo().get_max_active_clusters(cluster size)`` as upstream does; with
no GPU of its SM (static analysis) it is the target's SM count (``--sm_count``, default 132,
the SM count of H100 SXM and H200) divided by the cluster size, and the record says so.
"""

from __future__ import annotations

from typing import ClassVar

from kernelplan import STREAM, Const, CuteKernel, Target
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.workloads.gemm import GemmProblem

from ..common import GemmPlan
from ..hopper_config import HopperPersistentGemmConfig, hopper_autotune_space


class HopperDenseGemmPersistent(GemmPlan):
    """Persistent warp-specialised Hopper GEMM, fp32 accumulate; fp16 and bf16 (see
    :class:`cute_gemm.hopper_dense_gemm.HopperDenseGemm` on bf16)."""

    name: ClassVar[str] = "hopper_dense_gemm_persistent"
    source: ClassVar[str] = "cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Hopper persistent warp-specialised GEMM (TMA + WGMMA), sm_90a"
    )

    config_type = HopperPersistentGemmConfig

    def autotune_configs(self, problem: GemmProblem) -> list[HopperPersistentGemmConfig]:
        return hopper_autotune_space(HopperPersistentGemmConfig)

    def plan(
        self, problem: GemmProblem, config: HopperPersistentGemmConfig, target: Target
    ) -> CuteKernel:
        import cutlass

        tile, cluster = config.tile_mn, config.cluster_mn
        mod = load_example(self.source)
        gemm = mod.HopperWgmmaGemmPersistentKernel(
            cutlass.Float32, tile, cluster, config.swizzle_size, config.raster_along_m
        )
        n_clusters, why = max_active_clusters(cluster[0] * cluster[1], target)
        return CuteKernel(
            self.name,
            gemm,
            lambda t: (t["a"], t["b"], t["c"], Const(n_clusters), STREAM),
            self.tensor_specs(problem),
            meta={"max_active_clusters": n_clusters, "max_active_clusters_from": why},
        )
