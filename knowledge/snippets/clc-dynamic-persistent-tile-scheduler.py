"""CLC dynamic persistent tile scheduler: a warp-specialised sm_100a tcgen05 GEMM launched with
one CTA per output tile, whose CTAs then steal the tiles of CTAs that have not started yet
(cluster launch control: `clusterlaunchcontrol.try_cancel`). Warp 6 (the scheduler) issues one
query per tile through a one-stage PipelineClcFetchAsync; the hardware writes the 16-byte
answer into SMEM and completes the full mbarrier by byte count; every warp of the CTA (TMA
warp 5, MMA warp 4, epilogue warps 0-3 and the scheduler itself) waits for it, decodes the
next tile (or "none left") with `cute.arch.clc_response`, and releases the slot.

The query and the decode are written out with cute.arch.issue_clc_query / clc_response because
nvidia-cutlass-dsl 4.8.1 deprecates utils.ClcDynamicPersistentTileScheduler(Params), and a
deprecated DSL API fails the snippet compile. The mainloop, the two TMEM accumulators and the
epilogue are those of persistent-static-tile-scheduler-loop.py. C (M, N, L) fp32 =
A (M, K, L) fp16 @ B (N, K, L)^T, 128x128 tiles, clusters of one CTA. Compiles for sm_100a on
the CPU (no check(): the project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/clc-dynamic-persistent-tile-scheduler.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BN = 128
AB_STAGES = 4
ACC_STAGES = 2
SCHED_WARP = 6
THREADS = 32 * (len(tile.EPI_WARPS) + 3)  # epilogue x4, MMA, TMA, scheduler


def read_next_tile(resp):
    """Decode the 16-byte CLC answer: the first CTA id (x, y, z) of the cancelled CTA, which
    with one CTA per tile is its (m, n, l) tile, and whether anything was cancelled."""
    tm, tn, tl, valid = cute.arch.clc_response(resp)
    # The next query writes this buffer through the async proxy: order our generic read first.
    cute.arch.fence_proxy("async.shared", space="cta")
    return tm, tn, tl, valid


class ClcGemm(tile.WarpSpecializedGemm):
    BN, AB_STAGES, ACC_STAGES = BN, AB_STAGES, ACC_STAGES
    EXTRA_WARPS = 1  # the scheduler
    CLUSTER = (1, 1, 1)

    def grid(self, c, tiler):
        # snippet:begin
        # Host (inside the @cute.jit entry): one CTA per tile, as if not persistent; no SM count.
        grid = tile.tile_counts(c, tiler)  # (tiles along M, tiles along N, L)
        # snippet:end
        return grid

    def extra_storage(self):
        return {
            "clc_bars": cute.struct.MemRange[cutlass.Int64, 2],  # full + empty, one stage
            "clc_resp": cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 4], 16],  # 16 B
        }

    @cute.jit
    def roles(self, g):
        LOAD_WARP, MMA_WARP = tile.TMA_WARP, tile.MMA_WARP
        warp_idx, storage, tiled_mma, tmem = g.warp_idx, g.storage, g.tiled_mma, g.tmem
        tma_a, tma_b, tAsA, tAgA, tBsB, tBgB = g.tma_a, g.tma_b, g.tAsA, g.tAgA, g.tBsB, g.tBgB
        ab_producer, ab_consumer, k_tiles = g.ab_producer, g.ab_consumer, g.k_tiles
        acc_producer, acc_consumer = g.acc_producer, g.acc_consumer
        bidx, bidy, bidz = g.block

        # snippet:begin
        # Device: every warp of the CTA reads each answer (TMA, MMA, 4 epilogue, scheduler).
        clc = pipeline.PipelineClcFetchAsync.create(
            barrier_storage=storage.clc_bars.data_ptr(),
            num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
            tx_count=16,  # the answer's bytes complete the full barrier
            cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        )
        resp = storage.clc_resp.data_ptr()
        get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        tm, tn, tl = bidx, bidy, bidz  # the first tile is this CTA's own
        valid = cutlass.Int32(1)

        if warp_idx == SCHED_WARP:
            put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
            while valid > 0:
                clc.producer_acquire(put)  # everyone has read the previous answer
                with cute.arch.elect_one():  # steal the tile of a CTA not launched yet
                    cute.arch.issue_clc_query(clc.producer_get_barrier(put), resp)
                put.advance()
                clc.consumer_wait(get)  # the scheduler reads the answer too
                tm, tn, tl, valid = read_next_tile(resp)
                clc.consumer_release(get)
                get.advance()
            clc.producer_tail(put)

        if warp_idx == LOAD_WARP:
            while valid > 0:
                a_tiles = tAgA[(None, tm, None, tl)]  # the K-tiles of this output tile
                b_tiles = tBgB[(None, tn, None, tl)]
                ab_producer.reset()
                for _ in cutlass.range(k_tiles, unroll=1):
                    h = ab_producer.acquire_and_advance()
                    k, slot, bar = h.count, h.index, h.barrier
                    cute.copy(tma_a, a_tiles[(None, k)], tAsA[(None, slot)], tma_bar_ptr=bar)
                    cute.copy(tma_b, b_tiles[(None, k)], tBsB[(None, slot)], tma_bar_ptr=bar)
                clc.consumer_wait(get)  # what next?
                tm, tn, tl, valid = read_next_tile(resp)
                clc.consumer_release(get)
                get.advance()
            ab_producer.tail()
        # snippet:end

        if warp_idx == MMA_WARP:
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), g.acc_layout)
            while valid > 0:
                acc_producer, ab_consumer, tiled_mma = tile.mma_one_tile(
                    acc_producer, ab_consumer, tiled_mma, acc_tmem, g.tCrA, g.tCrB, k_tiles
                )
                clc.consumer_wait(get)
                tm, tn, tl, valid = read_next_tile(resp)
                clc.consumer_release(get)
                get.advance()
            acc_producer.tail()

        if warp_idx < MMA_WARP:
            tmem.allocate(2 * BN)
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), g.acc_layout)
            while valid > 0:
                c_tile = g.tCgC[(None, None, None, tm, tn, tl)]
                acc_consumer = tile.store_one_tile(acc_consumer, acc_tmem, c_tile, g.tidx)
                clc.consumer_wait(get)
                tm, tn, tl, valid = read_next_tile(resp)
                clc.consumer_release(get)
                get.advance()
            tile.free_tmem(tmem, acc_tmem)


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic extents."""
    return cute.compile(ClcGemm(), *tile.fake_mkl_args())
