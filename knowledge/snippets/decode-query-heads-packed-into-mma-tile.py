"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/decode-query-heads-packed-into-mma-tile.md,
kept as it stands in the entry until it is
made real code (compiled for sm_90a with fake tensors, and a check on the H200).
It is not imported or compiled: names it uses come from a surrounding kernel or harness
that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_90a"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import cutlass
import cutlass.cute as cute

TILE_M = 64  # WGMMA M of one warpgroup


def packed_q_view(q: cute.Tensor, b, s: int, h: int, d: int) -> cute.Tensor:
    """q is (b, s, h, d) row-major: view it as (b, m_tile, 64, d) over packed rows r*h + j."""
    rows = s * h
    m_tiles = (rows + TILE_M - 1) // TILE_M
    return cute.make_tensor(
        q.iterator,
        cute.make_layout((b, m_tiles, TILE_M, d), stride=(rows * d, TILE_M * d, d, 1)),
    )


@cute.jit
def row_key_limit(
    m_blk, local_row, seqlen, s: cutlass.Constexpr, h: cutlass.Constexpr, causal: cutlass.Constexpr
):
    """Keys visible to a packed row: token r = row // h sees keys < seqlen - s + r + 1."""
    lim = seqlen
    if cutlass.const_expr(causal and s > 1):
        r = (m_blk * TILE_M + local_row) // h
        lim = cutlass.min(seqlen - s + r + 1, seqlen)
    return lim


# rows of the last tile past s*h: load a valid row instead, never store them
#   valid_rows = s * h - m_blk * TILE_M
#   if row < valid_rows: store(row)
# snippet:end
