"""Epilogue through SMEM with TMA stores, by sub-tiles, on sm_100a: a small warp-specialised
tcgen05 GEMM (one 128x128 fp16 output tile per CTA; TMA warp, MMA warp, four epilogue warps,
from _sm100_gemm) whose epilogue reads the TMEM accumulator one 128x32 sub-tile at a time,
converts it, writes it into one of two swizzled SMEM buffers and lets one warp TMA-store it,
with a PipelineTmaStore bounding the stores in flight. The shown region is the host-side store
atom and the epilogue's sub-tile loop.

Shown in knowledge/languages/cute-dsl/optimizations/epilogue-smem-tma-store-subtiles.md.
Compiles for sm_100a on a CPU (no check: tcgen05 does not run on the project's H200).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.tensor_utils import LayoutEnum

from kernelplan.kb.snippets import sibling

g = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BM, BN = 128, 128
AB_STAGES = 4
EPI_STAGES = 2
EPI_BAR_ID, TMEM_BAR_ID = 1, 2


class TmaStoreGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tiled_mma, mma_tiler, cluster_vmnk, a_ring, b_ring, tma_a, gA, tma_b, gB, slot_bytes = (
            g.single_cta_operands(a, b, BN, AB_STAGES)
        )
        # snippet:begin
        # Host (@cute.jit): the sub-tile (128 x 32 here), its staged swizzled SMEM layout, and
        # a TMA-store atom whose box is one sub-tile
        c_layout_kind = LayoutEnum.from_tensor(c)
        epi_tile = sm100_utils.compute_epilogue_tile_shape(
            (BM, BN, g.BK), False, c_layout_kind, c.element_type
        )
        epi_layout = sm100_utils.make_smem_layout_epi(
            c.element_type, c_layout_kind, epi_tile, EPI_STAGES
        )
        tma_c, gC_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(epi_layout, (None, None, 0)), epi_tile
        )
        # snippet:end

        sC_field = cute.struct.MemRange[c.element_type, cute.cosize(epi_layout)]
        self.storage = g.storage_struct(
            a_ring, b_ring, AB_STAGES, 1, tmem="tmem_addr", sC=cute.struct.Align[sC_field, 1024]
        )
        grid = g.tile_grid(c, BM, BN)
        self.kernel(
            tiled_mma,
            tma_a,
            gA,
            tma_b,
            gB,
            tma_c,
            gC_tma,
            a_ring,
            b_ring,
            epi_layout,
            epi_tile,
            c_layout_kind,
            slot_bytes,
            cluster_vmnk,
        ).launch(grid=grid, block=[g.THREADS, 1, 1], stream=stream)

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_c: cute.CopyAtom,
        mC: cute.Tensor,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        epi_layout: cute.ComposedLayout,
        epi_tile: cute.Tile,
        c_layout_kind: cutlass.Constexpr,
        ab_bytes: cutlass.Constexpr,
        cluster_vmnk: cute.Layout,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        EPI_WARPS, MMA_WARP, TMA_WARP = g.EPI_WARPS, g.MMA_WARP, g.TMA_WARP
        STORE_WARP = EPI_WARPS[0]
        n_epi_threads = 32 * len(EPI_WARPS)
        if warp == TMA_WARP:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA, sB = g.smem_ab(storage, a_ring, b_ring)
        sC = storage.sC.get_tensor(epi_layout.outer, swizzle=epi_layout.inner)
        mma_tiler = (BM, BN, g.BK)
        tAsA, tAgA, tBsB, tBgB, tCrA, tCrB, tCgC, acc_layout, k_tiles = g.partition_one_tile(
            tiled_mma, mma_tiler, tma_a, mA, tma_b, mB, mC, sA, sB, (bm, bn, None)
        )
        ab_prod, ab_cons, acc_prod, acc_cons = g.ab_acc_pipelines(
            storage, ab_bytes, AB_STAGES, 1, len(EPI_WARPS), cluster_vmnk
        )
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_addr.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(
                barrier_id=TMEM_BAR_ID, num_threads=32 * (1 + len(EPI_WARPS))
            ),
            allocator_warp_id=EPI_WARPS[0],
        )

        if warp == TMA_WARP:
            g.load_k_tiles(ab_prod, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, k_tiles)
            ab_prod.tail()
        elif warp == MMA_WARP:
            tmem.wait_for_alloc()
            acc = cute.make_tensor(tmem.retrieve_ptr(g.ACC), acc_layout)
            acc_slot = acc_prod.acquire_and_advance()
            g.mma_k_tiles(ab_cons, tiled_mma, acc, tCrA, tCrB, k_tiles)
            acc_slot.commit()
            acc_prod.tail()
        elif warp < MMA_WARP:
            tmem.allocate(BN)
            tmem.wait_for_alloc()
            acc = cute.make_tensor(tmem.retrieve_ptr(g.ACC), acc_layout)
            full = acc_cons.wait_and_advance()
            # TMEM -> registers, per sub-tile: (T2R, T2R_M, T2R_N, n_subtiles)
            acc_sub = cute.flat_divide(acc[((None, None), 0, 0)], epi_tile)
            gC_sub = cute.flat_divide(tCgC[((None, None), 0, 0)], epi_tile)
            t2r = tcgen05.make_tmem_copy(
                cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), g.ACC),
                acc_sub[(None, None, 0, 0)],
            )
            t2r_thr = t2r.get_slice(tidx)
            t2r_src = cute.group_modes(t2r_thr.partition_S(acc_sub), 3, 5)
            acc_regs = cute.make_rmem_tensor(
                t2r_thr.partition_D(gC_sub)[(None, None, None, 0, 0)].shape, g.ACC
            )
            # registers -> SMEM: a store atom matched to C's layout and to the T2R thread map
            r2s_copy = cute.make_tiled_copy_D(
                sm100_utils.get_smem_store_op(c_layout_kind, g.IO, g.ACC, t2r), t2r
            )
            r2s_dst = r2s_copy.get_slice(tidx).partition_D(sC)  # (R2S, R2S_M, R2S_N, EPI_STAGES)
            acc_view = r2s_copy.retile(acc_regs)
            out_regs = cute.make_rmem_tensor(acc_view.shape, g.IO)
            n_subtiles = cute.size(t2r_src, mode=[3])

            # snippet:begin
            # Device (@cute.kernel), the epilogue warps only
            store_pipe = pipeline.PipelineTmaStore.create(
                num_stages=EPI_STAGES,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, n_epi_threads),
            )
            epi_bar = pipeline.NamedBarrier(barrier_id=EPI_BAR_ID, num_threads=n_epi_threads)
            # per buffer, the SMEM source; per sub-tile, the global destination
            s_part, g_part = cpasync.tma_partition(
                tma_c,
                0,
                cute.make_layout(1),
                cute.group_modes(sC, 0, 2),
                cute.group_modes(gC_sub, 0, 2),
            )
            g_tile = cute.group_modes(g_part, 1, cute.rank(g_part))  # (TMA, n_subtiles)
            for i in cutlass.range(n_subtiles):
                cute.copy(t2r, t2r_src[(None, None, None, i)], acc_regs)  # TMEM -> registers
                out_regs.store(acc_view.load().to(g.IO))  # (+ a fused element-wise op)
                buf = i % EPI_STAGES
                cute.copy(r2s_copy, out_regs, r2s_dst[(None, None, None, buf)])
                cute.arch.fence_proxy("async.shared", space="cta")  # SMEM writes -> async proxy
                epi_bar.arrive_and_wait()  # every epilogue thread has written buf
                if warp == STORE_WARP:
                    cute.copy(tma_c, s_part[(None, buf)], g_tile[(None, i)])
                    store_pipe.producer_commit()  # closes this store's bulk group
                    store_pipe.producer_acquire()  # at most EPI_STAGES - 1 stores in flight
                epi_bar.arrive_and_wait()  # nobody rewrites a buffer whose store may be pending
            store_pipe.producer_tail()  # every store done before SMEM and TMEM are released
            # snippet:end

            with cute.arch.elect_one():
                full.release()
            tmem.relinquish_alloc_permit()
            tmem.free(acc.iterator)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    return cute.compile(TmaStoreGemm(), *g.fake_args())
