"""Adapter: the CUTLASS Hopper WGMMA dense GEMM (TMA loads, WGMMA, TMA-store epilogue).

Upstream: ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm.py``, class
``HopperWgmmaGemmKernel(acc_dtype, tile_shape_mn, cluster_shape_mn)``, called as
``(a, b, c, stream)`` through ``cute.compile``. Non-persistent: one CTA per output tile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import STREAM, CuteKernel
from kernelplan.cutlass_src import load_example

from ..common import GemmPlan
from ..hopper_config import hopper_autotune_space, validate_hopper_config


class HopperDenseGemm(GemmPlan):
    """Hopper WGMMA GEMM, fp32 accumulate. Shapes as in :class:`GemmPlan`; dtypes fp16 and
    bf16 (upstream's ``is_valid_dtypes`` lists fp16 but not bf16; the kernel is called
    directly, and bf16 stands or falls by ``--check``)."""

    name: ClassVar[str] = "hopper_dense_gemm"
    source: ClassVar[str] = "cute/hopper/kernel/dense_gemm/dense_gemm.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    description: ClassVar[str] = "CUTLASS CuTe DSL Hopper dense GEMM (TMA + WGMMA), sm_90a"

    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        return {"tile_mn": [128, 256], "cluster_mn": [1, 1]}

    def _autotune_configs(self, problem: Mapping[str, Any]) -> list[dict[str, Any]]:
        return hopper_autotune_space()

    def validate_config(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> None:
        validate_hopper_config(self.name, config)

    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:
        import cutlass

        tile, cluster = validate_hopper_config(self.name, config)
        mod = load_example(self.source)
        gemm = mod.HopperWgmmaGemmKernel(cutlass.Float32, tile, cluster)
        specs = self.tensor_specs(problem)
        key = (self.name, tile, cluster, problem["dtype"], problem["c_dtype"])
        return CuteKernel(
            self.name, gemm, lambda t: (t["a"], t["b"], t["c"], STREAM), specs, key=key
        )
