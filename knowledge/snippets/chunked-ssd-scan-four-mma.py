"""Chunked SSD scan, the register steps between the tensor-core products: an sm_100a kernel
in two modes on one warp-specialised tcgen05 skeleton (_sm100_gemm.WarpSpecializedGemm), where
one CTA owns an output tile and walks the chunks of its sequence in order (the chunk index is
the L mode of the operands; one CTA per (m, n) tile, so nothing crosses CTAs):

- INTRA: the tcgen05 MMA computes G = C @ B^T per chunk (L x L over the state size N, into
  TMEM); the four epilogue warps read G back in 32-column slices and apply segsum_weights()
  (decay exp(s_m - s_n), causal mask, dt_n), writing Q in the I/O type: the operand of INTRA2.
- INTER: the MMA computes Sc = Bs^T @ X per chunk (N x D over L; Bs, the decay-scaled B, is
  given K-major as (N, L, chunks) and X as (D, L, chunks)); the epilogue warps keep the N x D
  state S in fp32 registers across the chunk loop and apply carry_state(), writing each chunk's
  state in the I/O type (the operand of the next chunk's INTER2).

INTRA2 and INTER2 are ordinary tcgen05 GEMMs over these operands and are not repeated here;
the CUTLASS example (mamba2_ssd.py) runs all four in one persistent kernel with 16 warps.
L = N = 128, D = 64. Compiles for sm_100a on the CPU (no check(): the project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/chunked-ssd-scan-four-mma.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

CHUNK = 128  # L: steps per chunk
D_HEAD = 64  # D

# snippet:begin
import math

import cutlass
import cutlass.cute as cute

LOG2_E = math.log2(math.e)
io_dtype = cutlass.Float16

# One persistent work item = one (batch, head): the chunks of its sequence run in order in
# this CTA, so the state never leaves it.  Per chunk c (L steps), with s = cumsum(dt * a):
#   INTRA1  G  = C @ B^T                       (L x L, over the state size N)   tensor core
#   PRE     Q  = G * exp(s_m - s_n) * dt_n, 0 where m < n                       pre-intra warps
#   INTRA2  Yd = Q @ X                         (L x D, over L)                  tensor core
#   PRE     Bs = B * exp(s_last - s_n) * dt_n                                   pre-inter warps
#   INTER1  Sc = Bs^T @ X                      (N x D, over L)                  tensor core
#   PRE     S  = exp(s_last) * S + Sc          (fp32 registers; operand of the next INTER2)
#   INTER2  Yo = C @ S_prev                    (L x D, over N)                  tensor core
#   EPI     Y  = Yo * exp(s_m) + Yd (+ D * X)


@cute.jit
def segsum_weights(G, s_m, s_n, dt_n, coords, out):
    """Pre-intra: decay-weighted, causally masked Q in fp32, stored in the MMA's input type.
    Per element i of this thread's slice of G at (m, n) = coords[i]: s_m[i] = s[m],
    s_n[i] = s[n], dt_n[i] = dt[n]."""
    t = cute.make_rmem_tensor(G.shape, cutlass.Float32)
    for i in cutlass.range(cute.size(G), unroll_full=True, vectorize=True):
        t[i] = s_m[i] - s_n[i]
    for i in cutlass.range(cute.size(G), unroll_full=True):
        m, n = coords[i]
        if m < n:
            t[i] = cutlass.Float32(-float("inf"))  # exp -> 0: the chunk is causal
    for i in cutlass.range(cute.size(G), unroll_full=True, vectorize=True):
        t[i] = cute.math.exp2(t[i] * LOG2_E, fastmath=True) * dt_n[i] * G[i]
    out.store(t.load().to(io_dtype))


@cute.jit
def carry_state(Sc, S, s_last, out):
    """Pre-inter, after INTER1 of this chunk: decay the carried state and add the chunk's."""
    decay = cute.math.exp(s_last, fastmath=True)
    for i in cutlass.range(cute.size(Sc), vectorize=True):
        Sc[i] = decay * S[i] + Sc[i]
    S.store(Sc.load())  # fp32 state stays in registers across chunks
    out.store(Sc.load().to(io_dtype))  # operand of the next chunk's INTER2 (SMEM)
    # first chunk: the INTER2 operand is prefilled with zeros


# snippet:end


class ChunkScan(tile.WarpSpecializedGemm):
    """One CTA per (m, n) tile of the per-chunk product, walking the chunks l in order; the
    epilogue (self.epilogue) sees each chunk's fp32 accumulator once."""

    def grid(self, c, tiler):
        tiles_m, tiles_n, _ = tile.tile_counts(c, tiler)
        return (tiles_m, tiles_n, 1)

    @cute.jit
    def roles(self, g):
        warp_idx, tmem, tiled_mma, tCgC = g.warp_idx, g.tmem, g.tiled_mma, g.tCgC
        ab_producer, ab_consumer = g.ab_producer, g.ab_consumer
        acc_producer, acc_consumer = g.acc_producer, g.acc_consumer
        tm, tn, _ = g.block
        chunks = cute.size(tCgC, mode=[5])

        if warp_idx == tile.TMA_WARP:
            for l in cutlass.range(chunks, unroll=1):  # noqa: E741
                ab_producer = self.load_tile(
                    ab_producer, g, g.tAgA[(None, tm, None, l)], g.tBgB[(None, tn, None, l)]
                )
            ab_producer.tail()

        if warp_idx == tile.MMA_WARP:
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), g.acc_layout)
            for _l in cutlass.range(chunks, unroll=1):
                acc_producer, ab_consumer, tiled_mma = tile.mma_one_tile(
                    acc_producer, ab_consumer, tiled_mma, acc_tmem, g.tCrA, g.tCrB, g.k_tiles
                )
            acc_producer.tail()

        if warp_idx < tile.MMA_WARP:
            tmem.allocate(self.ACC_STAGES * self.BN)
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), g.acc_layout)
            # (m, n) of this tile's elements, partitioned like C: within the chunk, because an
            # INTRA tile is the chunk's whole L x L (the INTER epilogue does not use them)
            coords = cute.make_identity_tensor((g.tiler[0], g.tiler[1]))
            tCcC = tiled_mma.get_slice(0).partition_C(coords)
            carried = self.epilogue_start(g, acc_tmem, tCgC)
            for l in cutlass.range(chunks, unroll=1):  # noqa: E741
                full = acc_consumer.wait_and_advance()
                acc = acc_tmem[(None, None, None, full.index)]
                self.epilogue(g, acc, tCgC[(None, None, None, tm, tn, l)], tCcC, l, carried)
                cute.arch.fence_view_async_tmem_load()
                full.release()
            tile.free_tmem(tmem, acc_tmem)

    @cute.jit
    def load_tile(self, producer, g, a_tiles, b_tiles):
        producer.reset()
        tile.load_k_tiles(producer, g.tma_a, a_tiles, g.tAsA, g.tma_b, b_tiles, g.tBsB, g.k_tiles)
        return producer

    def epilogue_start(self, g, acc_tmem, tCgC):
        return None


class Intra(ChunkScan):
    """G (L, L, chunks) = C (L, N, chunks) @ B (L, N, chunks)^T -> Q; extra = (s, dt), each
    (L, chunks) fp32: s the within-chunk cumsum of dt * a. M = N = L = the tile, so one CTA walks
    the whole sequence (one sequence per launch here; the example's scheduler hands out
    (batch, head) work items to persistent CTAs)."""

    BN = CHUNK
    SLICES = 4  # 32 columns of G at a time

    @cute.jit
    def epilogue(self, g, acc, q_tile, tCcC, l, carried):
        mS, mDt = g.extra
        t2r, src, dst, crd = tile.acc_subtiles(acc, g.tidx, self.SLICES, q_tile, tCcC)
        G = cute.make_rmem_tensor(dst[None, None, 0].shape, tile.ACC)
        s_m = cute.make_rmem_tensor(G.shape, cutlass.Float32)
        s_n = cute.make_rmem_tensor(G.shape, cutlass.Float32)
        dt_n = cute.make_rmem_tensor(G.shape, cutlass.Float32)
        q = cute.make_rmem_tensor(G.shape, io_dtype)
        for j in cutlass.range_constexpr(self.SLICES):
            cute.copy(t2r, src[None, None, j], G)
            here = crd[None, None, j]
            for i in cutlass.range_constexpr(cute.size(G)):
                m, n = here[i]
                s_m[i], s_n[i], dt_n[i] = mS[m, l], mS[n, l], mDt[n, l]
            segsum_weights(G, s_m, s_n, dt_n, here, q)
            cute.autovec_copy(q, dst[None, None, j])


class Inter(ChunkScan):
    """Sc (N, D, chunks) = Bs^T (N, L, chunks) @ X^T (D, L, chunks)^T -> the carried state,
    written per chunk; extra = (s_last,): (chunks,) fp32, s at each chunk's last step."""

    BN = D_HEAD

    def epilogue_start(self, g, acc_tmem, tCgC):
        acc, c_tile = acc_tmem[(None, None, None, 0)], tCgC[(None, None, None, 0, 0, 0)]
        *_, dst = tile.acc_subtiles(acc, g.tidx, 1, c_tile)
        S = cute.make_rmem_tensor(dst[None, None, 0].shape, cutlass.Float32)
        S.fill(0.0)  # no state before the first chunk
        return S

    @cute.jit
    def epilogue(self, g, acc, s_tile, tCcC, l, S):
        (mSlast,) = g.extra
        t2r, src, dst = tile.acc_subtiles(acc, g.tidx, 1, s_tile)
        Sc = cute.make_rmem_tensor(S.shape, tile.ACC)
        cute.copy(t2r, src[None, None, 0], Sc)
        out = cute.make_rmem_tensor(S.shape, io_dtype)
        carry_state(Sc, S, mSlast[l], out)
        cute.autovec_copy(out, dst[None, None, 0])


def compile_snippet():
    """CPU: compile both modes for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic
    extents."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    def vec(*extents):
        return make_fake_compact_tensor(cutlass.Float32, extents, assumed_align=16)

    a, b, c, stream = tile.fake_args(batched=True)  # (m, k, l), (n, k, l), (m, n, l) fp16
    chunks, length = cute.sym_int(), cute.sym_int()
    intra = cute.compile(Intra(), a, b, c, stream, (vec(length, chunks), vec(length, chunks)))
    inter = cute.compile(Inter(), a, b, c, stream, (vec(chunks),))
    return intra, inter
