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
from cutlass.cute.nvgpu import tcgen05

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


class ClcGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma, tiler, a_ring, b_ring, (tma_a, mA), (tma_b, mB), slot_bytes = tile.make_operands(
            a, b, BN, AB_STAGES
        )
        # snippet:begin
        # Host (inside the @cute.jit entry): one CTA per tile, as if not persistent; no SM count.
        grid = tile.tile_counts(c, tiler)  # (tiles along M, tiles along N, L)
        # snippet:end
        acc_shape = tiled_mma.partition_shape_C(tiler[:2])
        acc_layout = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES)).layout

        @cute.struct
        class Storage:
            ab_bars: cute.struct.MemRange[cutlass.Int64, 2 * AB_STAGES]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2 * ACC_STAGES]
            tmem_base: cutlass.Int32
            clc_bars: cute.struct.MemRange[cutlass.Int64, 2]  # full + empty, one stage
            clc_resp: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 4], 16]  # 16 bytes
            sA: cute.struct.Align[cute.struct.MemRange[tile.IO, cute.cosize(a_ring)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[tile.IO, cute.cosize(b_ring)], 1024]

        self.storage = Storage
        self.kernel(
            tiled_mma,
            tiler,
            tma_a,
            mA,
            tma_b,
            mB,
            c,
            a_ring,
            b_ring,
            acc_layout,
            slot_bytes,
        ).launch(grid=grid, block=[THREADS, 1, 1], cluster=[1, 1, 1], stream=stream)

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tiler: cutlass.Constexpr,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mC: cute.Tensor,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        acc_layout: cute.Layout,
        slot_bytes: cutlass.Constexpr,
    ):
        LOAD_WARP, MMA_WARP = tile.TMA_WARP, tile.MMA_WARP
        bidx, bidy, bidz = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == LOAD_WARP:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
        sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_bars.data_ptr(),
            num_stages=AB_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=slot_bytes,
        ).make_participants()
        acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(),
            num_stages=ACC_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, tile.EPI_THREADS),
        ).make_participants()
        # Epilogue warp 0 allocates; the MMA warp and the epilogue warps read the address.
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_base.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(
                barrier_id=1, num_threads=32 * (1 + len(tile.EPI_WARPS))
            ),
            allocator_warp_id=tile.EPI_WARPS[0],
        )

        tAsA, tAgA, tBsB, tBgB, tCgC = tile.partition_all_tiles(
            tiled_mma, tiler, tma_a, mA, tma_b, mB, mC, sA, sB
        )
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        k_tiles = cute.size(tAgA, mode=[2])

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
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), acc_layout)
            while valid > 0:
                acc = acc_producer.acquire_and_advance()
                acc_buf = acc_tmem[(None, None, None, acc.index)]
                tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                ab_consumer.reset()
                for _ in cutlass.range(k_tiles, unroll=1):
                    h = ab_consumer.wait_and_advance()
                    for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                        kc = (None, None, kb, h.index)
                        cute.gemm(tiled_mma, acc_buf, tCrA[kc], tCrB[kc], acc_buf)
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                    h.release()
                acc.commit()
                clc.consumer_wait(get)
                tm, tn, tl, valid = read_next_tile(resp)
                clc.consumer_release(get)
                get.advance()
            acc_producer.tail()

        if warp_idx < MMA_WARP:
            tmem.allocate(2 * BN)
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), acc_layout)
            while valid > 0:
                full = acc_consumer.wait_and_advance()
                c_tile = tCgC[(None, None, None, tm, tn, tl)]
                tile.store_acc(acc_tmem[(None, None, None, full.index)], c_tile, tidx)
                cute.arch.fence_view_async_tmem_load()
                full.release()
                clc.consumer_wait(get)
                tm, tn, tl, valid = read_next_tile(resp)
                clc.consumer_release(get)
                get.advance()
            pipeline.NamedBarrier(barrier_id=2, num_threads=tile.EPI_THREADS).arrive_and_wait()
            tmem.relinquish_alloc_permit()
            tmem.free(acc_tmem.iterator)


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic extents."""
    return cute.compile(ClcGemm(), *tile.fake_mkl_args())
