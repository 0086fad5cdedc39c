"""Check shapes that make a persistent GEMM's tile loop iterate (host code, runs anywhere).

Shown in knowledge/anti-patterns/single-wave-check-misses-persistent-loop.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

SM = "generic"

# snippet:begin
import math


def tiles_per_cta(m, n, l, tile_m, tile_n, persistent_ctas):
    """How many iterations the persistent loop makes on the busiest CTA."""
    tiles = math.ceil(m / tile_m) * math.ceil(n / tile_n) * l
    return math.ceil(tiles / min(tiles, persistent_ctas))


# Wrong: every checked shape fits in one wave of 132 CTAs (tile 128x256)
CHECK_SHAPES = [(1024, 512, 768), (2048, 2048, 2048), (1000, 1112, 1024)]  # 16, 128, 40 tiles
assert max(tiles_per_cta(m, n, 1, 128, 256, 132) for m, n, _ in CHECK_SHAPES) == 1

# Right: keep the edge-tile shapes, add shapes with several tiles per CTA and a ragged
# last wave, and assert that the check really iterates.
CHECK_SHAPES += [(4096, 4096, 512), (4000, 4104, 256)]  # 512 and 544 tiles: 4 and 5 per CTA
assert max(tiles_per_cta(m, n, 1, 128, 256, 132) for m, n, _ in CHECK_SHAPES) >= 2

# Cheaper still, when the number of persistent clusters is a compile-time constant:
# check once more with a deliberately tiny grid, so that even small shapes iterate.
checked_configs = [dict(tile_mn=(128, 256), cluster_mn=(1, 1), max_active_clusters=2)]
# snippet:end


def compile_snippet():
    """The arithmetic of the comments, asserted (the module-level asserts ran on import)."""
    assert [tiles_per_cta(m, n, 1, 128, 256, 10**6) for m, n, _ in CHECK_SHAPES] == [1] * 5
    tiles = [math.ceil(m / 128) * math.ceil(n / 256) for m, n, _ in CHECK_SHAPES]
    assert tiles == [16, 128, 40, 512, 544], tiles
    assert [tiles_per_cta(m, n, 1, 128, 256, 132) for m, n, _ in CHECK_SHAPES[3:]] == [4, 5]
    assert tiles_per_cta(1024, 512, 1, 128, 256, 2) == 8  # the tiny grid iterates
    return "tile counts 16, 128, 40, 512, 544; 4 and 5 tiles per CTA on 132 CTAs"


def check():
    return compile_snippet()
