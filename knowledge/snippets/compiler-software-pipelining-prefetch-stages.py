"""Compiler software pipelining with prefetch_stages: a small sm_100a tcgen05 GEMM whose whole
mainloop is ONE warp running one loop, written in dependency order (acquire a free slot, TMA
K-tile k into it, wait for slot k, issue the MMAs, release it). `cutlass.range(...,
prefetch_stages=P)` lets the compiler issue the loads P iterations ahead of the MMAs that
read them: the prologue, steady state and drain are generated, not written.

One CTA of 128 threads computes a 128x128 fp32 tile of C = A @ B^T (A, B K-major fp16) in
TMEM; warp 0 loads and issues MMAs; all four warps then read the accumulator back from TMEM
(tcgen05.ld 32x32b) and store it to C. Compiles for sm_100a on the CPU (no check(): the
project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/compiler-software-pipelining-prefetch-stages.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync, tcgen05

from kernelplan.kb.snippets import sibling

g = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

TILE = (128, 128, 64)  # (BM, BN, BK): one tcgen05 MMA is 128x128x16, four per K-tile
AB_STAGES = 4  # P = AB_STAGES - 2 = 2 K-tiles in flight ahead of the MMAs
THREADS = 128
TMEM_COLS = 128  # one 128x128 fp32 accumulator


class PrefetchGemm:
    """C (M, N) fp32 = A (M, K) fp16 @ B (N, K)^T; M, N multiples of 128, K of 64."""

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma, _, a_ring, b_ring, (tma_a, mA), (tma_b, mB), slot_bytes = g.make_operands(
            a, b, TILE[1], AB_STAGES
        )
        self.storage = g.storage_struct(a_ring, b_ring, AB_STAGES, 1)
        grid = g.tile_grid(c, TILE[0], TILE[1])
        self.kernel(tiled_mma, tma_a, mA, tma_b, mB, c, a_ring, b_ring, slot_bytes).launch(
            grid=grid, block=[THREADS, 1, 1], stream=stream
        )

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mC: cute.Tensor,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        slot_bytes: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)

        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA, sB = g.smem_ab(storage, a_ring, b_ring)
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_bars.data_ptr(),
            num_stages=AB_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=slot_bytes,
        ).make_participants()
        acc_pipe = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(),
            num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
        )
        acc_put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        acc_get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)

        # Global tiles of this CTA, partitioned for the MMA and then for TMA.
        coord = (bm, bn, None)
        gA = cute.local_tile(mA, TILE, coord, proj=(1, None, 1))  # (BM, BK, k_tiles)
        gB = cute.local_tile(mB, TILE, coord, proj=(None, 1, 1))  # (BN, BK, k_tiles)
        gC = cute.local_tile(mC, TILE, coord, proj=(1, 1, None))  # (BM, BN)
        thr_mma = tiled_mma.get_slice(0)
        tCgA = thr_mma.partition_A(gA)
        tCgB = thr_mma.partition_B(gB)
        tCgC = thr_mma.partition_C(gC)
        tCrA = tiled_mma.make_fragment_A(sA)  # SMEM descriptors, (MMA, MMA_M, MMA_K, STAGE)
        tCrB = tiled_mma.make_fragment_B(sB)
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3)
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3)
        )

        # TMEM: warp 0 allocates, everyone reads the base address after the barrier.
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_base.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=THREADS),
        )
        tmem.allocate(TMEM_COLS)
        tmem.wait_for_alloc()
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(TILE[:2])).layout
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc_layout)
        k_tiles = cute.size(gA, mode=[2])

        # snippet:begin
        # Written in dependency order; the compiler hoists the loads P iterations ahead.
        if warp == 0:
            acc_pipe.producer_acquire(acc_put)  # the TMEM accumulator is free
            tiled_mma.set(tcgen05.Field.ACCUMULATE, False)  # the first K-tile overwrites
            for _ in cutlass.range(k_tiles, prefetch_stages=AB_STAGES - 2):
                put = ab_producer.acquire_and_advance()  # wait for a free slot
                k, slot = put.count, put.index
                cute.copy(tma_a, tAgA[(None, k)], tAsA[(None, slot)], tma_bar_ptr=put.barrier)
                cute.copy(tma_b, tBgB[(None, k)], tBsB[(None, slot)], tma_bar_ptr=put.barrier)
                got = ab_consumer.wait_and_advance()  # slot k is full
                for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                    kc = (None, None, kb, got.index)
                    cute.gemm(tiled_mma, acc, tCrA[kc], tCrB[kc], acc)
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                got.release()  # tcgen05.commit: frees the slot when these MMAs finish
            acc_pipe.producer_commit(acc_put)  # tcgen05.commit on the accumulator barrier
        # snippet:end

        # Epilogue, all four warps: TMEM -> registers (32 lanes per warp) -> C.
        tmem.relinquish_alloc_permit()
        acc_pipe.consumer_wait(acc_get)
        ld = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32)
        sub = ((cute.size(acc, mode=[0, 0]), cute.size(acc, mode=[0, 1]) // 4),)
        acc_sub = cute.zipped_divide(acc, sub)  # (32-column sub-tile, 4 sub-tiles)
        gC_sub = cute.zipped_divide(tCgC, sub)
        t2r = tcgen05.make_tmem_copy(ld, acc_sub[None, 0]).get_slice(tidx)
        tTtA = t2r.partition_S(acc_sub)
        tTgC = t2r.partition_D(gC_sub)
        frag = cute.make_rmem_tensor(tTgC[None, None, 0].shape, cutlass.Float32)
        for i in cutlass.range(cute.size(tTtA, mode=[2]), unroll_full=True):
            cute.copy(t2r, tTtA[None, None, i], frag)
            cute.autovec_copy(frag, tTgC[None, None, i])
        acc_pipe.consumer_release(acc_get)
        pipeline.sync(barrier_id=1)  # every warp has read TMEM before it is freed
        tmem.free(acc.iterator)


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors."""
    return cute.compile(PrefetchGemm(), *g.fake_args(c_dtype=g.ACC))
