"""Adapter: the CUTLASS Hopper WGMMA dense GEMM (TMA loads, WGMMA, TMA-store epilogue).

Upstream: ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm.py``, class
``HopperWgmmaGemmKernel(acc_dtype, tile_shape_mn, cluster_shape_mn)``, called as
``(a, b, c, stream)`` through ``cute.compile``. Non-persistent: one CTA per output tile.
"""

from __future__ import annotations

from typing import ClassVar

from kernelplan import STREAM, CuteKernel, Target
from kernelplan.cutlass_src import load_example
from kernelplan.workloads.gemm import GemmProblem

from ..common import GemmPlan
from ..hopper_config import HopperGemmConfig, hopper_autotune_space


class HopperDenseGemm(GemmPlan):
    """Hopper WGMMA GEMM, fp32 accumulate. Shapes as in the GEMM workload; dtypes fp16 and
    bf16 (upstream's ``is_valid_dtypes`` lists fp16 but not bf16; the kernel is called
    directly, and bf16 stands or falls by ``--check``)."""

    name: ClassVar[str] = "hopper_dense_gemm"
    source: ClassVar[str] = "cute/hopper/kernel/dense_gemm/dense_gemm.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    config_type = HopperGemmConfig
    description: ClassVar[str] = "CUTLASS CuTe DSL Hopper dense GEMM (TMA + WGMMA), sm_90a"

    def autotune_configs(self, problem: GemmProblem) -> list[HopperGemmConfig]:
        return hopper_autotune_space()

    def plan(self, problem: GemmProblem, config: HopperGemmConfig, target: Target) -> CuteKernel:
        import cutlass

        mod = load_example(self.source)
        gemm = mod.HopperWgmmaGemmKernel(cutlass.Float32, config.tile_mn, config.cluster_mn)
        return CuteKernel(
            self.name,
            gemm,
            lambda t: (t["a"], t["b"], t["c"], STREAM),
            self.tensor_specs(problem),
        )
