"""Configs of the upstream Hopper WGMMA GEMMs and the constraints they state.

The constraints are the ones the upstream kernels document and enforce
(``cute/hopper/kernel/dense_gemm/dense_gemm.py`` class docstring, "Constraints": CTA tile M in
{64, 128}, N in {64, 128, 256}, K fixed at 64 by the kernel; cluster M and N powers of two with
at most 4 CTAs); checking them here turns a trace-time ValueError into one clear line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelplan import ShapeError

TILE_M = (64, 128)
TILE_N = (64, 128, 256)


def validate_hopper_config(name: str, config: Mapping[str, Any]) -> tuple[tuple, tuple]:
    """Returns (tile_mn, cluster_mn) as tuples.

    Raises:
        ShapeError: a tile or cluster shape the upstream kernel rejects.
    """
    tile = tuple(config["tile_mn"])
    cluster = tuple(config["cluster_mn"])
    if len(tile) != 2 or tile[0] not in TILE_M or tile[1] not in TILE_N:
        raise ShapeError(f"{name}: tile_mn {tile} unsupported; M in {TILE_M}, N in {TILE_N}")
    if (
        len(cluster) != 2
        or any(c <= 0 or c & (c - 1) for c in cluster)
        or cluster[0] * cluster[1] > 4
    ):
        raise ShapeError(f"{name}: cluster_mn {cluster} unsupported; powers of two, <= 4 CTAs")
    return tile, cluster


def hopper_autotune_space() -> list[dict[str, Any]]:
    """Tile and cluster shapes worth timing on an H100/H200 (all accepted upstream)."""
    tiles = [(128, 256), (128, 128)]
    clusters = [(1, 1), (2, 1), (1, 2)]
    space = [{"tile_mn": list(t), "cluster_mn": list(c)} for t in tiles for c in clusters]
    return space + [{"tile_mn": [64, 256], "cluster_mn": [1, 1]}]
