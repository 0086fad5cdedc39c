"""Persistent static tile scheduler loop: a warp-specialised sm_100a tcgen05 GEMM launched with
as many CTAs as fit on the machine, each CTA walking the output tiles it owns: its block index,
then every grid-size-th tile (the walk of utils.StaticPersistentTileScheduler, written out here
because nvidia-cutlass-dsl 4.8.1 deprecates utils.PersistentTileSchedulerParams, and a
deprecated DSL API fails the snippet compile). Warp 5 loads A/B tiles by TMA, warp 4 issues the
MMAs into one of two TMEM accumulators, warps 0-3 drain the other accumulator to C. Each role
runs the same walk; the A/B ring and the accumulator ring are created once and carried across
tiles (only the K-tile count is reset per tile), so the loads and MMAs of tile t+1 overlap the
epilogue of tile t.

C (M, N, L) fp32 = A (M, K, L) fp16 @ B (N, K, L)^T, 128x128 tiles. Compiles for sm_100a on
the CPU (no check(): the project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/persistent-static-tile-scheduler-loop.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

import cutlass
import cutlass.cute as cute

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BN = 128
AB_STAGES = 4
ACC_STAGES = 2  # two TMEM accumulators: MMA on tile t+1 while the epilogue drains tile t
# What utils.HardwareInfo().get_max_active_clusters(1) returns on the target GPU (one CTA per
# SM at this SMEM size); a constant here because the CPU compile has no GPU to ask.
MAX_ACTIVE_CTAS = 128

# snippet:begin
from cutlass.cute.nvgpu import tcgen05


def persistent_grid(c, cta_tile_mn, max_active_ctas):
    """Host side, inside @cute.jit: the grid covers the machine, not C."""
    tiles_mnl = cute.zipped_divide(c, tiler=cta_tile_mn)[(0, (None, None, None))].shape
    return (cutlass.min(cute.size(tiles_mnl), max_active_ctas), 1, 1)


def tile_coord(t, tiles_m, tiles_n):
    """Linear tile index -> (m, n, l), M fastest: the order every role walks."""
    return t % tiles_m, (t // tiles_m) % tiles_n, t // (tiles_m * tiles_n)


# snippet:end


class PersistentGemm(tile.WarpSpecializedGemm):
    BN, AB_STAGES, ACC_STAGES = BN, AB_STAGES, ACC_STAGES

    def grid(self, c, tiler):
        return persistent_grid(c, tiler[:2], MAX_ACTIVE_CTAS)

    @cute.jit
    def roles(self, g):
        LOAD_WARP, MMA_WARP = tile.TMA_WARP, tile.MMA_WARP
        tidx, warp_idx, tiled_mma, tmem = g.tidx, g.warp_idx, g.tiled_mma, g.tmem
        acc_layout = g.acc_layout
        tma_a, tma_b, tAsA, tAgA, tBsB, tBgB = g.tma_a, g.tma_b, g.tAsA, g.tAgA, g.tBsB, g.tBgB
        tCrA, tCrB, tCgC, k_tiles = g.tCrA, g.tCrB, g.tCgC, g.k_tiles
        ab_producer, ab_consumer = g.ab_producer, g.ab_consumer
        acc_producer, acc_consumer = g.acc_producer, g.acc_consumer
        pair_size = cute.size(tiled_mma.thr_id.shape)  # 1 here; 2 with a CTA pair

        # snippet:begin
        # Device side (inside the @cute.kernel), after pipelines, SMEM and TMEM are set up.
        tiles_m, tiles_n = cute.size(tCgC, mode=[3]), cute.size(tCgC, mode=[4])
        num_tiles = tiles_m * tiles_n * cute.size(tCgC, mode=[5])
        first, _, _ = cute.arch.block_idx()  # this CTA's first tile ...
        step, _, _ = cute.arch.grid_dim()  # ... then every grid-size-th tile after it

        if warp_idx == LOAD_WARP:
            for t in cutlass.range(first, num_tiles, step, unroll=1):
                tm, tn, tl = tile_coord(t, tiles_m, tiles_n)
                a_tiles = tAgA[(None, tm // pair_size, None, tl)]  # the K-tiles of this tile
                b_tiles = tBgB[(None, tn, None, tl)]
                ab_producer.reset()  # count restarts at 0; slot index and phase carry over
                for _ in cutlass.range(k_tiles, unroll=1):
                    h = ab_producer.acquire_and_advance()
                    k, slot, bar = h.count, h.index, h.barrier
                    cute.copy(tma_a, a_tiles[(None, k)], tAsA[(None, slot)], tma_bar_ptr=bar)
                    cute.copy(tma_b, b_tiles[(None, k)], tBsB[(None, slot)], tma_bar_ptr=bar)
            ab_producer.tail()  # do not exit while the MMA warp may still release slots

        if warp_idx == MMA_WARP:
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), acc_layout)  # 2 buffers
            for _t in cutlass.range(first, num_tiles, step, unroll=1):  # same walk, no coords
                acc = acc_producer.acquire_and_advance()  # a free TMEM accumulator buffer
                acc_buf = acc_tmem[(None, None, None, acc.index)]
                tiled_mma.set(tcgen05.Field.ACCUMULATE, False)  # a new tile starts from zero
                ab_consumer.reset()
                for _ in cutlass.range(k_tiles, unroll=1):
                    h = ab_consumer.wait_and_advance()
                    for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                        kc = (None, None, kb, h.index)
                        cute.gemm(tiled_mma, acc_buf, tCrA[kc], tCrB[kc], acc_buf)
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                    h.release()
                acc.commit()  # tcgen05.commit: the buffer is full when these MMAs finish
            acc_producer.tail()

        if warp_idx < MMA_WARP:  # the four epilogue warps
            tmem.allocate(2 * BN)  # two 128x128 fp32 accumulators = 256 columns
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), acc_layout)
            for t in cutlass.range(first, num_tiles, step, unroll=1):
                tm, tn, tl = tile_coord(t, tiles_m, tiles_n)
                full = acc_consumer.wait_and_advance()
                c_tile = tCgC[(None, None, None, tm, tn, tl)]
                tile.store_acc(acc_tmem[(None, None, None, full.index)], c_tile, tidx)
                cute.arch.fence_view_async_tmem_load()  # the TMEM reads are done ...
                full.release()  # ... so the MMA warp may reuse this buffer
            # snippet:end
            tile.free_tmem(tmem, acc_tmem)


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic extents."""
    return cute.compile(PersistentGemm(), *tile.fake_mkl_args())
