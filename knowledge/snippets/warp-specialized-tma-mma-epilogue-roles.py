"""Warp-specialised roles on sm_100a: a small tcgen05 GEMM (one 128x128 output tile per CTA)
whose six warps split into a TMA warp, an MMA warp and four epilogue warps, joined by a
PipelineTmaUmma (A/B SMEM slots) and a PipelineUmmaAsync (the TMEM accumulator). The role
bodies (load loop, MMA loop, plain epilogue) come from _sm100_gemm; the shown region is the
role split itself: warp ids, pipelines with their arrival counts, the TMEM barrier that leaves
the TMA warp out, the three branches and their tails.

Shown in knowledge/languages/cute-dsl/optimizations/warp-specialized-tma-mma-epilogue-roles.md.
Compiles for sm_100a on a CPU (no check: tcgen05 does not run on the project's H200).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync, tcgen05

from kernelplan.kb.snippets import sibling

g = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BM, BN = 128, 128
AB_STAGES = 4
ACC_STAGES = 1


class RolesGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma = g.make_tiled_mma(1, BN)
        mma_tiler = (BM, BN, g.BK)
        cluster_vmnk = cute.tiled_divide(cute.make_layout((1, 1, 1)), (tiled_mma.thr_id,))
        a_ring, b_ring, tma_a, gA, tma_b, gB, slot_bytes = g.make_ab_loads(
            tiled_mma,
            mma_tiler,
            a,
            b,
            AB_STAGES,
            cluster_vmnk,
            cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE),
        )

        @cute.struct
        class Storage:
            ab_bars: cute.struct.MemRange[cutlass.Int64, 2 * AB_STAGES]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2 * ACC_STAGES]
            tmem_addr: cutlass.Int32
            sA: cute.struct.Align[cute.struct.MemRange[g.IO, cute.cosize(a_ring)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[g.IO, cute.cosize(b_ring)], 1024]

        self.storage = Storage
        grid = (
            cute.ceil_div(cute.size(c, mode=[0]), BM),
            cute.ceil_div(cute.size(c, mode=[1]), BN),
            1,
        )
        self.kernel(
            tiled_mma, tma_a, gA, tma_b, gB, c, a_ring, b_ring, slot_bytes, cluster_vmnk
        ).launch(grid=grid, block=[g.THREADS, 1, 1], stream=stream)

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
        ab_bytes_per_stage: cutlass.Constexpr,
        cluster_vmnk: cute.Layout,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
        sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
        mma_tiler = (BM, BN, g.BK)
        gA = cute.local_tile(mA, mma_tiler, (bm, bn, None), proj=(1, None, 1))
        gB = cute.local_tile(mB, mma_tiler, (bm, bn, None), proj=(None, 1, 1))
        gC = cute.local_tile(mC, mma_tiler, (bm, bn, None), proj=(1, 1, None))
        thr_mma = tiled_mma.get_slice(0)
        tAsA, tAgA, tBsB, tBgB = g.partition_ab(tma_a, tma_b, gA, gB, sA, sB, thr_mma)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        tCgC = thr_mma.partition_C(gC)
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((BM, BN))).layout
        k_tiles = cute.size(gA, mode=[2])
        EPI_WARPS, MMA_WARP, TMA_WARP = g.EPI_WARPS, g.MMA_WARP, g.TMA_WARP
        pair_size = cute.size(cluster_vmnk, mode=[0])  # 1 here; 2 for a CTA pair

        # snippet:begin
        # Inside the @cute.kernel. EPI_WARPS, MMA_WARP, TMA_WARP = (0, 1, 2, 3), 4, 5: the epilogue
        # warps come first, so warp w reads TMEM lanes 32*w .. 32*w+31; 192 threads in all.
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == TMA_WARP:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
        one_thread = pipeline.CooperativeGroup(pipeline.Agent.Thread)

        # TMA warp -> MMA warp: A/B slots (full: TMA bytes; empty: one tcgen05.commit)
        ab_prod, ab_cons = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_bars.data_ptr(),
            num_stages=AB_STAGES,
            producer_group=one_thread,
            consumer_group=one_thread,  # x (multicast peers) in a cluster
            tx_count=ab_bytes_per_stage * pair_size,  # the leader's barrier counts the pair
            cta_layout_vmnk=cluster_vmnk,
        ).make_participants()
        # MMA warp -> epilogue warps: the TMEM accumulator (full: tcgen05.commit; empty: one
        # arrival per epilogue warp, of each CTA of the pair)
        acc_prod, acc_cons = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(),
            num_stages=ACC_STAGES,
            producer_group=one_thread,
            consumer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread, len(EPI_WARPS) * pair_size
            ),
            cta_layout_vmnk=cluster_vmnk,
        ).make_participants()
        # the TMEM address is shared only by the roles that use TMEM: not the TMA warp
        tmem_bar = pipeline.NamedBarrier(barrier_id=2, num_threads=32 * (1 + len(EPI_WARPS)))
        epi_bar = pipeline.NamedBarrier(barrier_id=1, num_threads=32 * len(EPI_WARPS))
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_addr.ptr, barrier_for_retrieve=tmem_bar, allocator_warp_id=EPI_WARPS[0]
        )

        if warp == TMA_WARP:
            g.load_k_tiles(ab_prod, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, k_tiles)
            ab_prod.tail()  # no exit while the MMA warp's releases are in flight
        elif warp == MMA_WARP:
            tmem.wait_for_alloc()
            acc = cute.make_tensor(tmem.retrieve_ptr(g.ACC), acc_layout)
            acc_slot = acc_prod.acquire_and_advance()
            g.mma_k_tiles(ab_cons, tiled_mma, acc, tCrA, tCrB, k_tiles)
            acc_slot.commit()  # tcgen05.commit: full once the MMAs above have finished
            acc_prod.tail()
        elif warp < MMA_WARP:
            tmem.allocate(BN)  # fp32 128 x BN accumulator: BN columns
            tmem.wait_for_alloc()
            acc = cute.make_tensor(tmem.retrieve_ptr(g.ACC), acc_layout)
            full = acc_cons.wait_and_advance()
            g.store_acc_direct(acc, tCgC, tidx, 4)  # tcgen05.ld, convert, store
            with cute.arch.elect_one():
                full.release()  # one arrival per epilogue warp
            tmem.relinquish_alloc_permit()
            epi_bar.arrive_and_wait()  # every epilogue warp is done reading TMEM
            tmem.free(acc.iterator)
        # snippet:end


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    return cute.compile(RolesGemm(), *g.fake_args())
