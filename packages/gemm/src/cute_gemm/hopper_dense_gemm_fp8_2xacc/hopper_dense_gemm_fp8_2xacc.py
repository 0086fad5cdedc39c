"""Adapter: the CUTLASS Hopper FP8 GEMM with two accumulators (2xAcc), persistent and
warp-specialised.

Upstream: ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_fp8_2xacc.py``,
class ``HopperFP8WarpSpecialized2xAccGemmKernel(tile_shape_mn, cluster_shape_mn,
swizzle_size, raster_along_m, mma_promotion_interval)`` (L230-L237), called as ``(a, b, d,
scale_a, scale_b, max_active_clusters, stream)`` (L369-L378): ``D = scale_a * scale_b *
(A @ B^T)`` with float8_e4m3fn A and B (K-major), float32 accumulation, the scalar scales
(1-element float32 tensors) applied in the epilogue (L790-L791, L914-L916). WGMMA writes a
temporary accumulator that is added into the main one every ``mma_promotion_interval`` MMAs
(the 2xAcc of CUTLASS example 54, module docstring L43-L60).

How the GEMM workload maps onto it: A, B and C (the example's D) are the workload's (L, M,
K), (L, N, K), (L, M, N) storage seen as (M, K, L), (N, K, L), (M, N, L) with dynamic layouts,
as upstream's ``run`` builds them (``cute_tensor_like(..., is_dynamic_layout=True,
assumed_align=16)``, L1240-L1248). The scales are this implementation's own inputs (the
workload has none): ``scale_a = 2`` and ``scale_b = 0.5``, powers of two whose product is
exactly 1, so D is the workload's A @ B^T unchanged, while a kernel that dropped either scale
would be off by a factor of two and fail the check. ``max_active_clusters`` is a compile-time
constant, from the GPU or the target's SM count as for the persistent dense GEMM
(:func:`kernelplan.device.max_active_clusters`).

What it takes: A and B float8_e4m3fn only (upstream: "FP8 E4M3FN only, k-major", L85-L95);
C float16 or float32 (upstream's list), bfloat16 (beyond that list; it stands or falls by
``--check``) or float8_e4m3fn; K a multiple of 16 (16 bytes of fp8, the TMA rule, L1228-L1233)
and C rows a multiple of 16 bytes. Config: CTA tile M 64/128, N 64/128/256 (L297-L301),
cluster powers of two with at most 4 CTAs, ``mma_promotion_interval`` a positive multiple of
the 4 k-blocks of a k-tile (L319-L327).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, Const, CuteKernel, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.workloads.gemm import GemmProblem

from ..common import GemmPlan
from ..hopper_config import HopperPersistentGemmConfig

#: k-blocks per k-tile (upstream ``mma_inst_tile_k``, L313): the promotion interval's unit
K_BLOCKS = 4
C_DTYPES = ("float16", "bfloat16", "float32", "float8_e4m3fn")
#: the scales (see the module docstring): product exactly 1
SCALE_A, SCALE_B = 2.0, 0.5


@dataclass(frozen=True)
class HopperFp8GemmConfig(HopperPersistentGemmConfig):
    """The persistent Hopper GEMM's tile, cluster and raster, with upstream's defaults
    (``--tile_shape_mn 128,128 --cluster_shape_mn 1,2``, L118-L131), and the 2xAcc
    promotion interval (``--mma_promotion_interval 4``, L150-L155)."""

    tile_mn: tuple[int, int] = (128, 128)
    cluster_mn: tuple[int, int] = (1, 2)
    mma_promotion_interval: int = 4

    def validate(self) -> None:
        super().validate()
        v = self.mma_promotion_interval
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0 or v % K_BLOCKS:
            raise ShapeError(
                f"mma_promotion_interval {v!r}: a positive multiple of {K_BLOCKS} (the k-blocks "
                "of one k-tile; dense_gemm_fp8_2xacc.py L319-L327)"
            )


class HopperDenseGemmFp82xAcc(GemmPlan):
    """CUTLASS Hopper FP8 (e4m3) GEMM with 2xAcc (see the module docstring)."""

    name: ClassVar[str] = "hopper_dense_gemm_fp8_2xacc"
    source: ClassVar[str] = "cute/hopper/kernel/dense_gemm/dense_gemm_fp8_2xacc.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    dtypes: ClassVar[tuple[str, ...]] = ("float8_e4m3fn",)
    config_type = HopperFp8GemmConfig
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Hopper FP8 e4m3 GEMM, 2xAcc promotion, persistent (TMA + WGMMA), sm_90a"
    )

    def default_problem(self) -> GemmProblem:
        """Upstream's defaults: ``--mnkl 4096,4096,4096,1 --c_dtype Float16`` (L112-L117,
        L145-L150), fp8 e4m3 A and B."""
        return GemmProblem(4096, 4096, 4096, dtype="float8_e4m3fn", c_dtype="float16")

    def supports(self, problem: GemmProblem) -> None:
        super().supports(problem)
        if problem.c_dtype not in C_DTYPES:
            raise ShapeError(
                f"{self.name} writes C as {', '.join(C_DTYPES)} (got --c_dtype {problem.c_dtype})"
            )

    def autotune_configs(self, problem: GemmProblem) -> list[HopperFp8GemmConfig]:
        """Upstream's argparse choices of tile and cluster (L118-L131)."""
        tiles = [(128, 128), (128, 256), (128, 64), (64, 64)]
        clusters = [(1, 1), (2, 1), (1, 2), (2, 2)]
        return [HopperFp8GemmConfig(tile_mn=t, cluster_mn=c) for t in tiles for c in clusters]

    def tensor_specs(self, problem: GemmProblem) -> dict[str, TensorSpec]:
        """The workload's A, B, C and the two 1-element float32 scales (dynamic layout,
        16-byte aligned, as upstream's ``cute_tensor_like`` makes them, L1251-L1258); filled
        by :meth:`prepare_inputs`."""
        specs = dict(self.workload.tensor_specs(problem))
        scale = TensorSpec((1,), "float32", init="zeros", leading_dim=0)
        specs["scale_a"] = scale
        specs["scale_b"] = scale
        return specs

    def prepare_inputs(self, problem: GemmProblem, seed: int, device: str = "cuda") -> dict:
        t = super().prepare_inputs(problem, seed, device)
        t["scale_a"].fill_(SCALE_A)
        t["scale_b"].fill_(SCALE_B)
        return t

    def plan(self, problem: GemmProblem, config: HopperFp8GemmConfig, target: Target) -> CuteKernel:
        tile, cluster = config.tile_mn, config.cluster_mn
        mod = load_example(self.source)
        gemm = mod.HopperFP8WarpSpecialized2xAccGemmKernel(
            tile,
            cluster,
            config.swizzle_size,
            config.raster_along_m,
            config.mma_promotion_interval,
        )
        n_clusters, why = max_active_clusters(cluster[0] * cluster[1], target)

        def args(t: Any) -> tuple:
            return (t["a"], t["b"], t["c"], t["scale_a"], t["scale_b"], Const(n_clusters), STREAM)

        meta = {
            "max_active_clusters": n_clusters,
            "max_active_clusters_from": why,
            "scale_a": SCALE_A,
            "scale_b": SCALE_B,
        }
        return CuteKernel(self.name, gemm, args, self.tensor_specs(problem), meta=meta)
