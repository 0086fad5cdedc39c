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
from cutlass.cute.nvgpu import cpasync

from kernelplan.kb.snippets import sibling

g = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BM, BN = 128, 128
AB_STAGES = 4
ACC_STAGES = 1


class RolesGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma, _, cluster_vmnk, a_ring, b_ring, tma_a, gA, tma_b, gB, slot_bytes = (
            g.single_cta_operands(a, b, BN, AB_STAGES)
        )
        self.storage = g.storage_struct(a_ring, b_ring, AB_STAGES, ACC_STAGES, tmem="tmem_addr")
        self.kernel(
            tiled_mma, tma_a, gA, tma_b, gB, c, a_ring, b_ring, slot_bytes, cluster_vmnk
        ).launch(grid=g.tile_grid(c, BM, BN), block=[g.THREADS, 1, 1], stream=stream)

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
        sA, sB = g.smem_ab(storage, a_ring, b_ring)
        tAsA, tAgA, tBsB, tBgB, tCrA, tCrB, tCgC, acc_layout, k_tiles = g.partition_one_tile(
            tiled_mma, (BM, BN, g.BK), tma_a, mA, tma_b, mB, mC, sA, sB, (bm, bn, None)
        )
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
