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
import cutlass.pipeline as pipeline

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BN = 128
AB_STAGES = 4
ACC_STAGES = 2  # two TMEM accumulators: MMA on tile t+1 while the epilogue drains tile t
# What utils.HardwareInfo().get_max_active_clusters(1) returns on the target GPU (one CTA per
# SM at this SMEM size); a constant here because the CPU compile has no GPU to ask.
MAX_ACTIVE_CTAS = 128
THREADS = 32 * (len(tile.EPI_WARPS) + 2)

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


class PersistentGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma, tiler, a_ring, b_ring, (tma_a, mA), (tma_b, mB), slot_bytes = tile.make_operands(
            a, b, BN, AB_STAGES
        )
        grid = persistent_grid(c, tiler[:2], MAX_ACTIVE_CTAS)
        acc_shape = tiled_mma.partition_shape_C(tiler[:2])
        acc_layout = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES)).layout

        @cute.struct
        class Storage:
            ab_bars: cute.struct.MemRange[cutlass.Int64, 2 * AB_STAGES]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2 * ACC_STAGES]
            tmem_base: cutlass.Int32
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
        ).launch(grid=grid, block=[THREADS, 1, 1], stream=stream)

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
            pipeline.NamedBarrier(barrier_id=2, num_threads=tile.EPI_THREADS).arrive_and_wait()
            tmem.relinquish_alloc_permit()
            tmem.free(acc_tmem.iterator)


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic extents."""
    return cute.compile(PersistentGemm(), *tile.fake_mkl_args())
