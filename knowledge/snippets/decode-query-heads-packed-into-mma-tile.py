"""Decode: query heads (and query tokens) packed into the M of the WGMMA tile (sm_90a).

Q is (b, s, h, d) row-major: the s x h query vectors of a sequence are the rows of one matrix,
packed row r*h + j = token r, head j. One CTA per (64-row tile, sequence) computes
S = Q_packed K^T against one K tile of 64 keys with one warpgroup, masks each packed row with
the causal limit of its token (r = row // h), and stores only the rows that exist (the last
tile is partial: its rows past s*h load row 0 of the tile instead and are never stored).
check() compares the stored S (masked entries -inf) with torch for s = 5, h = 16 (80 rows:
one full tile and one with 16 rows) and per-sequence lengths.

Shown in knowledge/languages/cute-dsl/optimizations/decode-query-heads-packed-into-mma-tile.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
from cutlass.tensor_utils import LayoutEnum

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_hopper_tile")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

B, S_Q, H, D, T = 2, 5, 16, 64, 64  # sequences, query tokens, heads per KV head, depth, keys

# snippet:begin
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


@cute.jit
def load_q_tile(gQ: cute.Tensor, sQ: cute.Tensor, valid_rows, tidx, nthreads: cutlass.Constexpr):
    """Rows of the last tile past s*h: load a valid row (row 0 of the tile) instead."""
    d = cute.size(gQ, mode=[1])
    for idx in cutlass.range(tidx, TILE_M * d, nthreads, unroll=1):
        row, col = idx // d, idx % d
        src = row
        if row >= valid_rows:
            src = 0
        sQ[row, col] = gQ[src, col]


# ... and never store them:
#   valid_rows = s * h - m_blk * TILE_M
#   if row < valid_rows: store(row)
# snippet:end


@cute.jit
def packed_scores(q: cute.Tensor, k: cute.Tensor, lens: cute.Tensor, out: cute.Tensor, stream):
    """q (B, S_Q, H, D), k (B, T, D) bf16; lens (B,) int32; out (B, S_Q*H, T) fp32 = masked S."""
    dt = q.element_type
    mma = sm90_utils.make_trivial_tiled_mma(
        dt, dt, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32, (1, 1, 1), (TILE_M, T)
    )
    q_l = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (TILE_M, T, D), dt, 1)
    k_l = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (TILE_M, T, D), dt, 1)
    qv = packed_q_view(q, B, S_Q, H, D)

    @cute.struct
    class Storage:
        sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(q_l)], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(k_l)], 1024]

    m_tiles = cute.size(qv, mode=[1])
    packed_kernel(qv, k, lens, out, mma, q_l, k_l, Storage).launch(
        grid=[m_tiles, B, 1], block=[128, 1, 1], stream=stream
    )


@cute.kernel
def packed_kernel(
    mQ: cute.Tensor,
    mK: cute.Tensor,
    mLens: cute.Tensor,
    mS: cute.Tensor,
    mma: cute.TiledMma,
    q_l: cute.ComposedLayout,
    k_l: cute.ComposedLayout,
    storage_t: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    m_blk, bidx, _ = cute.arch.block_idx()
    storage = cutlass.memory.SmemAllocator().allocate(storage_t)
    sQ = storage.sQ.get_tensor(q_l.outer, swizzle=q_l.inner)[None, None, 0]
    sK = storage.sK.get_tensor(k_l.outer, swizzle=k_l.inner)[None, None, 0]
    valid_rows = S_Q * H - m_blk * TILE_M  # may exceed 64 (full tile)
    load_q_tile(mQ[bidx, m_blk, None, None], sQ, valid_rows, tidx, 128)
    tile.copy_tile_g2s(mK[bidx, None, None], sK, tidx, 128)
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()

    thr = mma.get_slice(tidx)
    tSrQ = thr.make_fragment_A(thr.partition_A(sQ))
    tSrK = thr.make_fragment_B(thr.partition_B(sK))
    acc = thr.make_fragment_C(thr.partition_shape_C((TILE_M, T)))
    mma.set(warpgroup.Field.ACCUMULATE, False)
    warpgroup.fence()
    for kb in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
        cute.gemm(mma, acc, tSrQ[None, None, kb], tSrK[None, None, kb], acc)
        mma.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()
    warpgroup.wait_group(0)

    s_mn = tile.mn_view(acc)
    tScS = tile.mn_view(thr.partition_C(cute.make_identity_tensor((TILE_M, T))))
    seqlen = mLens[bidx]
    for i in cutlass.range_constexpr(cute.size(s_mn, mode=[0])):
        row = tScS[i, 0][0]
        lim = row_key_limit(m_blk, row, seqlen, S_Q, H, True)
        if row < valid_rows:  # rows past s*h are never stored
            for j in cutlass.range_constexpr(cute.size(s_mn, mode=[1])):
                key = tScS[i, j][1]
                val = s_mn[i, j]
                if key >= lim:
                    val = -cutlass.Float32.inf
                mS[bidx, m_blk * TILE_M + row, key] = val


def _compile(q, k, lens, out, stream):
    return cute.compile(packed_scores, q, k, lens, out, stream)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    bf = cutlass.BFloat16
    q = make_fake_compact_tensor(bf, (B, S_Q, H, D), stride_order=(3, 2, 1, 0), assumed_align=16)
    k = make_fake_compact_tensor(bf, (B, T, D), stride_order=(2, 1, 0), assumed_align=16)
    lens = make_fake_compact_tensor(cutlass.Int32, (B,), assumed_align=16)
    out = make_fake_compact_tensor(
        cutlass.Float32, (B, S_Q * H, T), stride_order=(2, 1, 0), assumed_align=16
    )
    _compile(q, k, lens, out, make_fake_stream())
    return f"s*h = {S_Q * H} packed rows in {(S_Q * H + TILE_M - 1) // TILE_M} tiles of 64"


def check():
    """H200: masked S of the packed rows against torch, the partial last tile included."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    q = torch.randn(B, S_Q, H, D, device="cuda").bfloat16()
    k = torch.randn(B, T, D, device="cuda").bfloat16()
    lens = torch.tensor([T, 37], device="cuda", dtype=torch.int32)[:B]
    out = torch.full((B, S_Q * H, T), float("nan"), device="cuda")
    args = [tile.cute_view(t) for t in (q, k, lens, out)]
    stream = current_stream()
    _compile(*args, stream)(*args, stream)
    torch.cuda.synchronize()

    ref = torch.einsum("bshd,btd->bsht", q.float(), k.float())  # (B, S_Q, H, T)
    tok = torch.arange(S_Q, device="cuda")[None, :, None, None]
    key = torch.arange(T, device="cuda")[None, None, None, :]
    lim = lens[:, None, None, None] - S_Q + tok + 1
    ref = ref.masked_fill(key >= lim, float("-inf")).reshape(B, S_Q * H, T)
    assert not out.isnan().any(), "a packed row was not stored"
    same_inf = torch.equal(out.isinf(), ref.isinf())
    err = (out - ref)[~ref.isinf()].abs().max().item()
    assert same_inf and err < 1e-2 * D**0.5, f"mask ok: {same_inf}, max abs error {err}"
    return f"{S_Q * H} packed rows (2 tiles, the last partial), max abs error {err:.3g}"
