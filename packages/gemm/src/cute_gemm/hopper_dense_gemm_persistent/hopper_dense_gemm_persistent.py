"""Adapter: the CUTLASS Hopper persistent, warp-specialised WGMMA GEMM.

Upstream: ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py``,
class ``HopperWgmmaGemmPersistentKernel(acc_dtype, tile_shape_mn, cluster_shape_mn,
swizzle_size, raster_along_m)``, called as ``(a, b, c, max_active_clusters, stream)``: one
producer (TMA) warpgroup and one or two consumer (WGMMA) warpgroups per CTA, a static
persistent tile scheduler over ``max_active_clusters`` clusters.

``max_active_clusters`` is a compile-time constant. On a GPU it comes from
``cutlass.utils.HardwareInfo().get_max_active_clusters(cluster size)`` as upstream does; with
no GPU (static analysis) it is ``config["sm_count"]`` (default 132, the SM count of H100 SXM
and H200) divided by the cluster size, and the record says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import STREAM, CuteKernel
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.kernel import Const

from ..common import GemmPlan
from ..hopper_config import hopper_autotune_space, validate_hopper_config


class HopperDenseGemmPersistent(GemmPlan):
    """Persistent warp-specialised Hopper GEMM, fp32 accumulate; fp16 and bf16 (see
    :class:`cute_gemm.hopper_dense_gemm.HopperDenseGemm` on bf16)."""

    name: ClassVar[str] = "hopper_dense_gemm_persistent"
    source: ClassVar[str] = "cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Hopper persistent warp-specialised GEMM (TMA + WGMMA), sm_90a"
    )

    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "tile_mn": [128, 256],
            "cluster_mn": [1, 1],
            "swizzle_size": 1,
            "raster_along_m": True,
        }

    def _autotune_configs(self, problem: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [{**c, "swizzle_size": 1, "raster_along_m": True} for c in hopper_autotune_space()]

    def validate_config(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> None:
        validate_hopper_config(self.name, config)

    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:
        import cutlass

        tile, cluster = validate_hopper_config(self.name, config)
        swizzle = int(config.get("swizzle_size", 1))
        raster_m = bool(config.get("raster_along_m", True))
        mod = load_example(self.source)
        gemm = mod.HopperWgmmaGemmPersistentKernel(
            cutlass.Float32, tile, cluster, swizzle, raster_m
        )
        n_clusters, _sms, why = max_active_clusters(
            cluster[0] * cluster[1], config, target_sm=self.target_sm[0]
        )
        specs = self.tensor_specs(problem)
        key = (
            self.name,
            tile,
            cluster,
            swizzle,
            raster_m,
            n_clusters,
            problem["dtype"],
            problem["c_dtype"],
        )
        return CuteKernel(
            self.name,
            gemm,
            lambda t: (t["a"], t["b"], t["c"], Const(n_clusters), STREAM),
            specs,
            key=key,
            meta={"max_active_clusters": n_clusters, "max_active_clusters_from": why},
        )
