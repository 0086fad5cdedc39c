"""Configs of the upstream Hopper WGMMA GEMMs and the constraints they state.

The constraints are the ones the upstream kernels document and enforce
(``cute/hopper/kernel/dense_gemm/dense_gemm.py`` class docstring, "Constraints": CTA tile M in
{64, 128}, N in {64, 128, 256}, K fixed at 64 by the kernel; cluster M and N powers of two with
at most 4 CTAs); checking them here turns a trace-time ValueError into one clear line.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelplan import Config, ShapeError

TILE_M = (64, 128)
TILE_N = (64, 128, 256)


@dataclass(frozen=True)
class HopperGemmConfig(Config):
    """CTA tile (M, N) and cluster shape (M, N) of the Hopper dense GEMM.

    Raises:
        ShapeError: a tile or cluster shape the upstream kernel rejects.
    """

    tile_mn: tuple[int, int] = (128, 256)
    cluster_mn: tuple[int, int] = (1, 1)

    def validate(self) -> None:
        t, c = self.tile_mn, self.cluster_mn
        if len(t) != 2 or t[0] not in TILE_M or t[1] not in TILE_N:
            raise ShapeError(f"tile_mn {_x(t)} unsupported: M in {TILE_M}, N in {TILE_N}")
        if len(c) != 2 or any(v <= 0 or v & (v - 1) for v in c) or c[0] * c[1] > 4:
            raise ShapeError(f"cluster_mn {_x(c)} unsupported: powers of two, at most 4 CTAs")


@dataclass(frozen=True)
class HopperPersistentGemmConfig(HopperGemmConfig):
    """:class:`HopperGemmConfig` plus the persistent tile scheduler's raster swizzle and
    order."""

    swizzle_size: int = 1
    raster_along_m: bool = True

    def validate(self) -> None:
        super().validate()
        if self.swizzle_size <= 0:
            raise ShapeError(f"swizzle_size must be a positive integer (got {self.swizzle_size})")


def _x(v) -> str:
    return "x".join(str(i) for i in v)


def hopper_autotune_space(config_type: type[HopperGemmConfig] = HopperGemmConfig) -> list:
    """Tile and cluster shapes worth timing on an H100/H200 (all accepted upstream)."""
    tiles = [(128, 256), (128, 128)]
    clusters = [(1, 1), (2, 1), (1, 2)]
    space = [config_type(tile_mn=t, cluster_mn=c) for t in tiles for c in clusters]
    return space + [config_type(tile_mn=(64, 256), cluster_mn=(1, 1))]
