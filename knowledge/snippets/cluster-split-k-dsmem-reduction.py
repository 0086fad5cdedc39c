"""Cluster split-K with a DSMEM reduction: a small sm_100a tcgen05 GEMM launched with clusters
of (1, 1, SPLIT_K) CTAs; the CTAs of one cluster compute the same 128x128 output tile over
disjoint K ranges, then reduce their TMEM accumulators through distributed shared memory
(no workspace in global memory, no second kernel).

Per 32-column epilogue sub-tile, each of the 128 epilogue threads holds one row of 32 fp32
values, cut into SPLIT_K shards; rank r owns shard r. Every rank arms its mailbox FULL
barrier, scatters shard p to rank p's mailbox with st.async (CopyDsmemStoreOp, counted on
rank p's FULL barrier), waits for its own FULL barrier, adds the received shards into its
own, acknowledges on every peer's EMPTY barrier, and stores only its shard of C.

Warp 0 runs the TMA + MMA loop over this rank's K range; all four warps run the epilogue.
C (M, N, L) fp32 = A (M, K, L) fp16 @ B (N, K, L)^T, K at least SPLIT_K tiles of 64.
Compiles for sm_100a on the CPU (no check(): the project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/cluster-split-k-dsmem-reduction.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import tcgen05

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BN = 128
AB_STAGES = 4
SPLIT_K = 2
THREADS = 128
SUB_N = 32  # columns per epilogue sub-tile: one tcgen05.ld 32x32b.x32 per thread
SHARD = SUB_N // SPLIT_K  # values per thread that each rank owns in a sub-tile
BOX_BYTES = (SPLIT_K - 1) * THREADS * SHARD * 4  # what the peers write into one mailbox

# snippet:begin
import cutlass
import cutlass.cute as cute
from cutlass.cute.arch.smem import map_dsmem_ptr
from cutlass.cute.nvgpu.cpasync import CopyDsmemStoreOp

# Host: cluster=(1, 1, SPLIT_K); grid z = L * SPLIT_K; SMEM budget minus the mailbox.
# Device, once: one elected thread of ONE warp initialises the two mailbox barriers:
#   mbarrier_init(full, 1); mbarrier_init(empty, SPLIT_K - 1); fence; cluster arrive/wait.


@cute.jit
def reduce_shards(
    acc,
    rank,
    tidx,
    mailbox,
    box,
    full,
    empty,
    full_phase,
    empty_phase,
    first_round: cutlass.Constexpr,
    epi_bar,
):
    """acc: this thread's 32 values of the sub-tile. On return, shard `rank` holds the sum
    over all ranks (the other shards are stale); returns the next barrier phases."""
    if cutlass.const_expr(not first_round):
        cute.arch.mbarrier_wait(empty, empty_phase)  # peers consumed the previous round
        empty_phase ^= 1
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(full, BOX_BYTES)
    epi_bar.arrive_and_wait()
    store_atom = cute.make_copy_atom(CopyDsmemStoreOp(), cutlass.Float32)
    one = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)
    for p in cutlass.range_constexpr(SPLIT_K):  # cluster (1, 1, S): peer p has rank p
        if p != rank:
            slot = rank - (1 if rank > p else 0)  # sender slot, self compressed out
            for i in cutlass.range_constexpr(SHARD):
                one[0] = acc[p * SHARD + i]
                dst = map_dsmem_ptr(mailbox + box((tidx, i, slot)), p)
                cute.copy(
                    store_atom,
                    one,
                    cute.make_tensor(dst, cute.make_layout(1)),
                    mbar_ptr=map_dsmem_ptr(full, p),
                )
    cute.arch.fence_acq_rel_cta()  # our remote stores before our own FULL wait
    cute.arch.mbarrier_wait(full, full_phase)
    full_phase ^= 1
    for p in cutlass.range_constexpr(SPLIT_K):
        if p == rank:  # static index into the registers, dynamic choice
            for s in cutlass.range_constexpr(SPLIT_K - 1):
                for i in cutlass.range_constexpr(SHARD):
                    acc[p * SHARD + i] += (mailbox + box((tidx, i, s))).load()
    epi_bar.arrive_and_wait()  # every thread has read the mailbox ...
    if tidx == 0:  # ... so the peers may write into it again
        for p in cutlass.range_constexpr(SPLIT_K):
            if p != rank:
                cute.arch.mbarrier_arrive(empty, peer_cta_rank_in_cluster=p)
    return full_phase, empty_phase


# snippet:end


class SplitKGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma, tiler, a_ring, b_ring, (tma_a, mA), (tma_b, mB), slot_bytes = tile.make_operands(
            a, b, BN, AB_STAGES
        )
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(tiler[:2])).layout
        tiles_m, tiles_n, l = tile.tile_counts(c, tiler)

        @cute.struct
        class Storage:
            ab_bars: cute.struct.MemRange[cutlass.Int64, 2 * AB_STAGES]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2]
            box_full: cutlass.Int64
            box_empty: cutlass.Int64
            tmem_base: cutlass.Int32
            mailbox: cute.struct.Align[
                cute.struct.MemRange[cutlass.Float32, (SPLIT_K - 1) * THREADS * SHARD], 16
            ]
            sA: cute.struct.Align[cute.struct.MemRange[tile.IO, cute.cosize(a_ring)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[tile.IO, cute.cosize(b_ring)], 1024]

        self.storage = Storage
        self.kernel(
            tiled_mma, tiler, tma_a, mA, tma_b, mB, c, a_ring, b_ring, acc_layout, slot_bytes
        ).launch(
            grid=(tiles_m, tiles_n, l * SPLIT_K),
            block=[THREADS, 1, 1],
            cluster=[1, 1, SPLIT_K],
            stream=stream,
        )

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
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, bz = cute.arch.block_idx()
        tl, rank = bz // SPLIT_K, bz % SPLIT_K  # cluster (1, 1, S): rank in cluster = bz % S
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cute.nvgpu.cpasync.prefetch_descriptor(tma_a)
            cute.nvgpu.cpasync.prefetch_descriptor(tma_b)

        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
        sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
        full = storage.box_full.ptr
        empty = storage.box_empty.ptr
        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(full, 1)  # our own arm; the bytes come from peers
                cute.arch.mbarrier_init(empty, SPLIT_K - 1)  # one ack per peer
        cute.arch.mbarrier_init_fence()
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_bars.data_ptr(),
            num_stages=AB_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=slot_bytes,
            defer_sync=True,
        ).make_participants()
        acc_pipe = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(),
            num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
            defer_sync=True,
        )
        cute.arch.cluster_arrive_relaxed()  # every peer's barriers exist before any DSMEM
        cute.arch.cluster_wait()

        tAsA, tAgA, tBsB, tBgB, tCgC = tile.partition_all_tiles(
            tiled_mma, tiler, tma_a, mA, tma_b, mB, mC, sA, sB
        )
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        k_tiles = cute.size(tAgA, mode=[2])
        per_rank = (k_tiles + SPLIT_K - 1) // SPLIT_K
        k0 = rank * per_rank
        my_k_tiles = cutlass.min(per_rank, k_tiles - k0)  # K >= SPLIT_K tiles: at least 1

        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_base.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=THREADS),
        )
        tmem.allocate(BN)
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(tile.ACC), acc_layout)
        acc_put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        acc_get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)

        if warp == 0:  # this rank's K range: [k0, k0 + my_k_tiles)
            a_tiles = tAgA[(None, bm, None, tl)]
            b_tiles = tBgB[(None, bn, None, tl)]
            acc_pipe.producer_acquire(acc_put)
            tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
            for _ in cutlass.range(my_k_tiles, prefetch_stages=AB_STAGES - 2):
                put = ab_producer.acquire_and_advance()
                k, slot, bar = k0 + put.count, put.index, put.barrier
                cute.copy(tma_a, a_tiles[(None, k)], tAsA[(None, slot)], tma_bar_ptr=bar)
                cute.copy(tma_b, b_tiles[(None, k)], tBsB[(None, slot)], tma_bar_ptr=bar)
                got = ab_consumer.wait_and_advance()
                for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                    kc = (None, None, kb, got.index)
                    cute.gemm(tiled_mma, acc, tCrA[kc], tCrB[kc], acc)
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                got.release()
            acc_pipe.producer_commit(acc_put)

        # Epilogue, all four warps: per 32-column sub-tile, TMEM -> registers, reduce, store.
        tmem.relinquish_alloc_permit()
        acc_pipe.consumer_wait(acc_get)
        sub = ((cute.size(acc, mode=[0, 0]), SUB_N),)
        acc_sub = cute.zipped_divide(acc, sub)
        gC_sub = cute.zipped_divide(tCgC[(None, None, None, bm, bn, tl)], sub)
        ld = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), tile.ACC)
        t2r = tcgen05.make_tmem_copy(ld, acc_sub[None, 0]).get_slice(tidx)
        tTtA = t2r.partition_S(acc_sub)
        tTgC = t2r.partition_D(gC_sub)
        frag = cute.make_rmem_tensor(tTgC[None, None, 0].shape, tile.ACC)
        mailbox = storage.mailbox.data_ptr()
        box = cute.make_layout((THREADS, SHARD, SPLIT_K - 1), stride=(1, THREADS, THREADS * SHARD))
        epi_bar = pipeline.NamedBarrier(barrier_id=2, num_threads=THREADS)
        full_phase, empty_phase = cutlass.Int32(0), cutlass.Int32(0)
        for j in cutlass.range_constexpr(cute.size(tTtA, mode=[2])):  # 4 sub-tiles
            cute.copy(t2r, tTtA[None, None, j], frag)
            full_phase, empty_phase = reduce_shards(
                frag,
                rank,
                tidx,
                mailbox,
                box,
                full,
                empty,
                full_phase,
                empty_phase,
                j == 0,
                epi_bar,
            )
            c_j = tTgC[None, None, j]
            for p in cutlass.range_constexpr(SPLIT_K):
                if p == rank:  # this rank stores only its own shard of C
                    for i in cutlass.range_constexpr(SHARD):
                        c_j[p * SHARD + i] = frag[p * SHARD + i]
        cute.arch.fence_view_async_tmem_load()
        acc_pipe.consumer_release(acc_get)
        # Stay alive until every peer has finished writing into our mailbox and barriers.
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()
        pipeline.sync(barrier_id=1)
        tmem.free(acc.iterator)


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic extents."""
    return cute.compile(SplitKGemm(), *tile.fake_mkl_args())
