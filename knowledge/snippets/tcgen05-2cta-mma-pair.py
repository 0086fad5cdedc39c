"""tcgen05 2-CTA MMA pair on sm_100a: a small warp-specialised GEMM in which a cluster of two
CTAs computes one 256x128 output tile with cta_group::2 MMAs. Each CTA loads its own 128 rows of
A and half of B's columns into its SMEM; only the leader CTA (rank 0 of the pair) issues the
MMAs, which read both CTAs' SMEM and write 128 accumulator rows into each CTA's TMEM; both CTAs
run their own epilogue. The shown regions are the host-side pair setup (2-CTA MMA atom, the
cluster's (V, M, N, K) layout, the 2-SM TMA atoms, the bytes the leader's barrier counts) and
the device side (pair-aware pipelines and TMEM allocator, the leader-only MMA issue).

Shown in knowledge/languages/cute-dsl/optimizations/tcgen05-2cta-mma-pair.md.
Compiles for sm_100a on a CPU (no check: tcgen05 does not run on the project's H200).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync, tcgen05

from kernelplan.kb.snippets import sibling

g = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

n_tile = 128
AB_STAGES = 4
ACC_STAGES = 1
cluster_m, cluster_n = 2, 1  # one CTA pair


class PairGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        mma_tiler = (256, n_tile, g.BK)
        # snippet:begin
        # Host (@cute.jit): one MMA atom spans the pair: M = 256, 128 rows per CTA
        PAIR = tcgen05.CtaGroup.TWO
        mma_op = tcgen05.MmaF16BF16Op(
            cutlass.Float16,
            cutlass.Float32,
            (256, n_tile, 16),
            PAIR,
            tcgen05.OperandSource.SMEM,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
        )
        tiled_mma = cute.make_tiled_mma(mma_op)  # thr_id has size 2: the V mode
        cluster_vmnk = cute.tiled_divide(
            cute.make_layout((cluster_m, cluster_n, 1)), (tiled_mma.thr_id,)
        )
        # 2-SM TMA: each CTA loads its half; the bytes are counted on the leader's barrier
        load_op = cpasync.CopyBulkTensorTileG2SOp(PAIR)  # ...MulticastOp(PAIR) when cluster_n > 1
        a_ring, b_ring, tma_a, gA, tma_b, gB, slot_bytes = g.make_ab_loads(
            tiled_mma, mma_tiler, a, b, AB_STAGES, cluster_vmnk, load_op
        )
        pair_size = cute.size(tiled_mma.thr_id)  # 2
        bytes_per_stage = slot_bytes * pair_size  # what the leader's full barrier waits for
        cta_tile_m = mma_tiler[0] // pair_size  # what one CTA holds in TMEM and stores
        # snippet:end

        @cute.struct
        class Storage:
            ab_bars: cute.struct.MemRange[cutlass.Int64, 2 * AB_STAGES]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2 * ACC_STAGES]
            tmem_addr: cutlass.Int32
            sA: cute.struct.Align[cute.struct.MemRange[g.IO, cute.cosize(a_ring)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[g.IO, cute.cosize(b_ring)], 1024]
            tmem_dealloc_bar: cutlass.Int64

        self.storage = Storage
        grid = (
            cute.ceil_div(cute.size(c, mode=[0]), cta_tile_m),  # one CTA per 128 rows
            cute.ceil_div(cute.size(c, mode=[1]), n_tile),
            1,
        )
        self.kernel(
            tiled_mma, tma_a, gA, tma_b, gB, c, a_ring, b_ring, bytes_per_stage, cluster_vmnk
        ).launch(
            grid=grid, block=[g.THREADS, 1, 1], cluster=(cluster_m, cluster_n, 1), stream=stream
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
        ab_bytes: cutlass.Constexpr,
        cluster_vmnk: cute.Layout,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bx, by, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        EPI_WARPS, MMA_WARP, TMA_WARP = g.EPI_WARPS, g.MMA_WARP, g.TMA_WARP
        if warp == TMA_WARP:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
        sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
        mma_tiler = (256, n_tile, g.BK)
        pair_size = cute.size(tiled_mma.thr_id)
        one = pipeline.CooperativeGroup(pipeline.Agent.Thread)

        # snippet:begin
        # Device (@cute.kernel): the pair's rank picks this CTA's slice of the 256-row MMA
        v = bx % pair_size
        is_leader = v == 0
        thr_mma = tiled_mma.get_slice(v)
        coord = (bx // pair_size, by, None)  # the pair computes one 256 x n_tile tile
        gA = cute.local_tile(mA, mma_tiler, coord, proj=(1, None, 1))
        gB = cute.local_tile(mB, mma_tiler, coord, proj=(None, 1, 1))
        gC = cute.local_tile(mC, mma_tiler, coord, proj=(1, 1, None))
        tAsA, tAgA, tBsB, tBgB = g.partition_ab(tma_a, tma_b, gA, gB, sA, sB, thr_mma)
        tCgC = thr_mma.partition_C(gC)  # this CTA's 128 rows

        ab_prod, ab_cons = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_bars.data_ptr(),
            num_stages=AB_STAGES,
            producer_group=one,
            consumer_group=one,
            tx_count=ab_bytes,  # both CTAs' bytes land on the leader's full barrier
            cta_layout_vmnk=cluster_vmnk,  # the empty barrier's commit reaches both CTAs
        ).make_participants()
        acc_prod, acc_cons = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(),
            num_stages=ACC_STAGES,
            producer_group=one,
            # the leader's MMA warp waits for the epilogue warps of both CTAs
            consumer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread, len(EPI_WARPS) * pair_size
            ),
            cta_layout_vmnk=cluster_vmnk,
        ).make_participants()
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_addr.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(
                barrier_id=2, num_threads=32 * (1 + len(EPI_WARPS))
            ),
            allocator_warp_id=EPI_WARPS[0],
            is_two_cta=True,  # both CTAs allocate and free in step
            two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc_bar.ptr,
        )
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(mma_tiler[:2])).layout

        if warp == TMA_WARP:  # both CTAs load their halves
            g.load_k_tiles(ab_prod, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, cute.size(gA, mode=[2]))
            ab_prod.tail()
        elif warp == MMA_WARP:
            tmem.wait_for_alloc()
            acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc_layout)
            if is_leader:  # one instruction stream for the whole pair
                empty = acc_prod.acquire_and_advance()
                g.mma_k_tiles(ab_cons, tiled_mma, acc, tCrA, tCrB, cute.size(gA, mode=[2]))
                empty.commit()  # tcgen05.commit, multicast to both CTAs' full barriers
                acc_prod.tail()
        elif warp < MMA_WARP:  # both CTAs: read their own TMEM rows, store their own rows
            tmem.allocate(n_tile)
            tmem.wait_for_alloc()
            acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc_layout)
            full = acc_cons.wait_and_advance()
            g.store_acc_direct(acc, tCgC, tidx, 4)
            with cute.arch.elect_one():
                full.release()  # arrives on the leader's empty barrier
            tmem.relinquish_alloc_permit()
            pipeline.NamedBarrier(barrier_id=1, num_threads=32 * len(EPI_WARPS)).arrive_and_wait()
            tmem.free(acc.iterator)  # waits for the peer CTA's free first
        # snippet:end


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    return cute.compile(PairGemm(), *g.fake_args())
