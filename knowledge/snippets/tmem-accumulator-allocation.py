"""Accumulator in TMEM on sm_100a: a small warp-specialised tcgen05 GEMM in which each CTA
computes two neighbouring 128x128 output tiles, so the MMA warp fills one TMEM accumulator
stage while the epilogue warps still read the other. The shown region is the TMEM life cycle:
the column count derived on the host from the staged accumulator fragment, the allocation by
an epilogue warp, the address published to the TMEM users only, the staged fragment re-pointed
at TMEM, the epilogue's sub-tile tcgen05.ld loop, and the teardown.

Shown in knowledge/languages/cute-dsl/optimizations/tmem-accumulator-allocation.md.
Compiles for sm_100a on a CPU (no check: tcgen05 does not run on the project's H200).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import tcgen05

from kernelplan.kb.snippets import sibling

g = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BM, BN = 128, 128
AB_STAGES = 4
ACC_STAGES = 2  # two TMEM buffers: MMA of tile t + 1 overlaps the epilogue of tile t
TILES_PER_CTA = 2  # along N
EPI_N = 32  # columns per epilogue sub-tile
TMEM_BAR_ID, EPI_BAR_ID = 2, 1


class TmemGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma, mma_tiler_mnk, cluster_vmnk, a_ring, b_ring, tma_a, gA, tma_b, gB, slot_bytes = (
            g.single_cta_operands(a, b, BN, AB_STAGES)
        )
        # snippet:begin
        # Host (@cute.jit): the column count comes from the staged accumulator fragment
        acc_shape = tiled_mma.partition_shape_C(mma_tiler_mnk[:2])
        acc_layout_only = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES))
        tmem_cols = cutlass.memory.get_num_tmem_alloc_cols(acc_layout_only)  # 2 x 128 = 256
        # snippet:end

        self.storage = g.storage_struct(a_ring, b_ring, AB_STAGES, ACC_STAGES, tmem="tmem_addr")
        grid = g.tile_grid(c, BM, BN * TILES_PER_CTA)
        self.kernel(
            tiled_mma,
            tma_a,
            gA,
            tma_b,
            gB,
            c,
            a_ring,
            b_ring,
            slot_bytes,
            cluster_vmnk,
            acc_layout_only.layout,
            tmem_cols,
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
        ab_bytes: cutlass.Constexpr,
        cluster_vmnk: cute.Layout,
        acc_staged: cute.Layout,
        tmem_cols: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        EPI_WARPS, MMA_WARP, TMA_WARP = g.EPI_WARPS, g.MMA_WARP, g.TMA_WARP
        FIRST_EPILOGUE_WARP = EPI_WARPS[0]
        n_tmem_warps = 1 + len(EPI_WARPS)  # MMA warp + epilogue warps
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA, sB = g.smem_ab(storage, a_ring, b_ring)
        mma_tiler = (BM, BN, g.BK)
        thr_mma = tiled_mma.get_slice(0)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        k_tiles = cute.ceil_div(cute.size(mA, mode=[1]), g.BK)
        ab_prod, ab_cons, acc_prod, acc_consumer = g.ab_acc_pipelines(
            storage, ab_bytes, AB_STAGES, ACC_STAGES, len(EPI_WARPS), cluster_vmnk
        )
        epi_bar = pipeline.NamedBarrier(barrier_id=EPI_BAR_ID, num_threads=32 * len(EPI_WARPS))

        if warp == TMA_WARP:
            for t in cutlass.range(TILES_PER_CTA, unroll=1):
                coord = (bm, bn * TILES_PER_CTA + t, None)
                gA = cute.local_tile(mA, mma_tiler, coord, proj=(1, None, 1))
                gB = cute.local_tile(mB, mma_tiler, coord, proj=(None, 1, 1))
                tAsA, tAgA, tBsB, tBgB = g.partition_ab(tma_a, tma_b, gA, gB, sA, sB, thr_mma)
                g.load_k_tiles(ab_prod, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, k_tiles)
            ab_prod.tail()

        # snippet:begin
        # Device (@cute.kernel): the TMEM address goes through `tmem_addr: cutlass.Int32` of
        # the shared storage, to the MMA warp and the epilogue warps only
        readers = pipeline.NamedBarrier(barrier_id=TMEM_BAR_ID, num_threads=32 * n_tmem_warps)
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_addr.ptr,
            barrier_for_retrieve=readers,
            allocator_warp_id=FIRST_EPILOGUE_WARP,  # a CTA pair: is_two_cta + a dealloc mbarrier
        )
        if warp == MMA_WARP:
            tmem.wait_for_alloc()  # every TMEM user waits, and only those
            # (MMA, MMA_M, MMA_N, ACC_STAGES), now addressing TMEM
            acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc_staged)
            for _t in cutlass.range(TILES_PER_CTA, unroll=1):
                empty = acc_prod.acquire_and_advance()  # the epilogue has drained this buffer
                tiled_mma = g.mma_k_tiles(
                    ab_cons, tiled_mma, acc[(None, None, None, empty.index)], tCrA, tCrB, k_tiles
                )
                empty.commit()  # tcgen05.commit: full when these MMAs are done
            acc_prod.tail()

        if warp < MMA_WARP:  # epilogue warps: they own the allocation
            tmem.allocate(tmem_cols)
            tmem.wait_for_alloc()
            acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc_staged)
            t2r_atom = cute.make_copy_atom(
                tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32
            )
            for t in cutlass.range(TILES_PER_CTA, unroll=1):  # per tile: sub-tiles of the buffer
                gC = cute.local_tile(
                    mC, mma_tiler, (bm, bn * TILES_PER_CTA + t, None), proj=(1, 1, None)
                )
                full = acc_consumer.wait_and_advance()
                # (BM, EPI_N, 1, BN / EPI_N)
                tile_acc = cute.flat_divide(acc[((None, None), 0, 0, full.index)], (BM, EPI_N))
                tile_gC = cute.flat_divide(
                    thr_mma.partition_C(gC)[((None, None), 0, 0)], (BM, EPI_N)
                )
                t2r = tcgen05.make_tmem_copy(t2r_atom, tile_acc[(None, None, 0, 0)])
                thr = t2r.get_slice(tidx)  # warp w reads TMEM lanes 32w .. 32w + 31
                src = cute.group_modes(thr.partition_S(tile_acc), 3, 5)
                dst = cute.group_modes(thr.partition_D(tile_gC), 3, 5)
                regs = cute.make_rmem_tensor(dst[(None, None, None, 0)].shape, cutlass.Float32)
                out = cute.make_rmem_tensor(regs.shape, mC.element_type)
                for i in cutlass.range(cute.size(src, mode=[3])):
                    cute.copy(t2r, src[(None, None, None, i)], regs)  # tcgen05.ld, 32 columns
                    out.store(regs.load().to(mC.element_type))
                    cute.autovec_copy(out, dst[(None, None, None, i)])
                cute.arch.fence_view_async_tmem_load()  # the loads are done before the release
                with cute.arch.elect_one():
                    full.release()  # one arrival per warp: the MMA warp may refill the buffer

            # end of kernel: nobody allocates any more, every reader is done, then free
            tmem.relinquish_alloc_permit()
            epi_bar.arrive_and_wait()
            tmem.free(acc.iterator)
        # snippet:end


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    return cute.compile(TmemGemm(), *g.fake_args())
