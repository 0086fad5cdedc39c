"""Amax of the accumulator in a tcgen05 GEMM epilogue (sm_100a).

A small GEMM, D (M, N) fp16 = A (M, K) fp16 @ B (N, K)^T, one 128 x 128 tile per CTA of 128
threads (4 warps). Warp 0 issues the TMA loads of a 2-slot ring and the tcgen05 MMAs into a
TMEM accumulator; then all 4 warps are the epilogue: each reads its 32 accumulator rows from
TMEM in 4 sub-tiles of 32 columns, stores them as fp16, and keeps a running max of |acc| on
the way. After the last sub-tile: one warp reduction per warp, one fp32 slot per warp in SMEM,
the epilogue barrier, and a single atomic max per tile on the global amax (shape (1,)), which
the host resets to 0 before each launch. Compiles for sm_100a on the CPU (no check(): the
project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/epilogue-amax-reduction.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass._mlir.dialects import math as mlir_math
from cutlass.cute.nvgpu import cpasync, tcgen05

from kernelplan.kb.snippets import sibling

g = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BM, BN, BK = 128, 128, 64
MMA_INST = (BM, BN, 16)
STAGES = 2
THREADS = 128  # 4 warps: warp 0 loads and issues the MMAs, all 4 run the epilogue
N_EPI_WARPS = THREADS // 32
N_SUBTILES = 4  # epilogue sub-tiles of BN / 4 columns


class AmaxGemm:
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, d: cute.Tensor, amax: cute.Tensor):
        tiled_mma, _, a_ring, b_ring, (tma_a, gA_tma), (tma_b, gB_tma), slot_bytes = (
            g.make_operands(a, b, BN, STAGES)
        )
        amax_field = cute.struct.MemRange[cutlass.Float32, N_EPI_WARPS]  # 16 bytes for 4 warps
        self.storage = g.storage_struct(a_ring, b_ring, STAGES, 1, tmem="tmem_ptr", amax=amax_field)
        grid = g.tile_grid(d, BM, BN)
        self.kernel(
            tiled_mma, tma_a, gA_tma, tma_b, gB_tma, d, amax, a_ring, b_ring, slot_bytes
        ).launch(grid=grid, block=[THREADS, 1, 1])

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mD: cute.Tensor,
        gAmax: cute.Tensor,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        slot_bytes: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        coord = (bm, bn, None)

        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA, sB = g.smem_ab(storage, a_ring, b_ring)
        sAmax = storage.amax.get_tensor(cute.make_layout(N_EPI_WARPS))

        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_ptr.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=THREADS),
        )
        tmem.allocate(BN)  # fp32 accumulator: one column per output column
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)

        ab_prod, ab_cons = pipeline.PipelineTmaUmma.create(
            num_stages=STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=slot_bytes,
            barrier_storage=storage.ab_bars.data_ptr(),
        ).make_participants()
        acc_prod, acc_cons = pipeline.PipelineUmmaAsync.create(
            num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
            barrier_storage=storage.acc_bars.data_ptr(),
        ).make_participants()

        gA = cute.local_tile(mA, (BM, BN, BK), coord, proj=(1, None, 1))  # (BM, BK, k)
        gB = cute.local_tile(mB, (BM, BN, BK), coord, proj=(None, 1, 1))  # (BN, BK, k)
        gD = cute.local_tile(mD, (BM, BN, BK), coord, proj=(1, 1, None))  # (BM, BN)
        thr_mma = tiled_mma.get_slice(0)
        tCgA = thr_mma.partition_A(gA)
        tCgB = thr_mma.partition_B(gB)
        tCgD = thr_mma.partition_C(gD)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((BM, BN))).layout
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3)
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3)
        )
        tmem.wait_for_alloc()
        acc_ptr = tmem.retrieve_ptr(cutlass.Float32)
        tAcc_mma = cute.make_tensor(acc_ptr, acc_layout)

        # Epilogue views: each thread owns one accumulator row (TMEM lane), N_SUBTILES pieces.
        epi_tile = (
            (cute.size(tAcc_mma, mode=[0, 0]), cute.size(tAcc_mma, mode=[0, 1]) // N_SUBTILES),
        )
        acc_epi = cute.zipped_divide(tAcc_mma, epi_tile)  # (EpiTile, N_SUBTILES)
        gD_epi = cute.zipped_divide(tCgD, epi_tile)
        t2r = tcgen05.make_tmem_copy(
            cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32),
            acc_epi[None, 0],
        )
        thr_t2r = t2r.get_slice(tidx)
        tAcc = thr_t2r.partition_S(acc_epi)  # (T2R, T2R_M, N_SUBTILES)
        tDgD = thr_t2r.partition_D(gD_epi)
        rAcc = cute.make_rmem_tensor(tDgD[None, None, 0].shape, cutlass.Float32)
        rD = cute.make_rmem_tensor(tDgD[None, None, 0].shape, mD.element_type)

        if warp == 0:  # TMA + MMA
            acc_empty = acc_prod.acquire_and_advance()
            for _k in cutlass.range(cute.size(gA, mode=[2]), unroll=1):
                put = ab_prod.acquire_and_advance()
                cute.copy(
                    tma_a, tAgA[(None, put.count)], tAsA[(None, put.index)], tma_bar_ptr=put.barrier
                )
                cute.copy(
                    tma_b, tBgB[(None, put.count)], tBsB[(None, put.index)], tma_bar_ptr=put.barrier
                )
                got = ab_cons.wait_and_advance()
                for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                    blk = (None, None, kb, got.index)
                    cute.gemm(tiled_mma, tAcc_mma, tCrA[blk], tCrB[blk], tAcc_mma)
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                got.release()
            acc_empty.commit()
        tmem.relinquish_alloc_permit()
        acc_full = acc_cons.wait_and_advance()
        epi_warp = warp
        n_subtiles = N_SUBTILES
        n_epi_warps = N_EPI_WARPS
        epilogue_barrier = pipeline.NamedBarrier(barrier_id=2, num_threads=THREADS)

        # snippet:begin
        # (imports: cutlass, cutlass.cute as cute, cutlass._mlir.dialects.math as mlir_math)
        # Shared storage holds one fp32 slot per epilogue warp (16 bytes for 4 warps), taken
        # from the SMEM budget before the A/B stages are counted: sAmax below.
        thread_amax = cutlass.Float32(0.0)
        for sub in cutlass.range(n_subtiles):
            cute.copy(t2r, tAcc[(None, None, sub)], rAcc)  # TMEM -> registers, as for the store
            v = rAcc.load()
            a = type(v)(mlir_math.absf(v.ir_value()), v.shape, v.dtype)
            thread_amax = cute.arch.fmax(
                thread_amax, a.reduce(cute.ReductionOp.MAX, cutlass.Float32(0.0), 0)
            )
            rD.store(v.to(rD.element_type))  # convert and store: unchanged by the amax
            cute.autovec_copy(rD, tDgD[None, None, sub])
        warp_amax = cute.arch.warp_redux_sync(
            value=thread_amax, kind="fmax", mask_and_clamp=0xFFFFFFFF, nan=True
        )
        if cute.arch.lane_idx() == 0:
            sAmax[epi_warp] = warp_amax
        epilogue_barrier.arrive_and_wait()
        if epi_warp == 0 and cute.arch.lane_idx() == 0:
            tile_amax = cutlass.Float32(0.0)
            for w in cutlass.range(n_epi_warps):
                tile_amax = cute.arch.fmax(tile_amax, sAmax[w])
            cute.arch.atomic_fmax(gAmax.iterator, tile_amax, sign_bit=False)  # one per tile
        # The host must reset the amax before every launch (every tile only raises it): the
        # example writes -inf; for absolute values 0 serves as well.
        # snippet:end

        acc_full.release()
        pipeline.sync(barrier_id=1)
        tmem.free(acc_ptr)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors of dynamic M, N, K."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    m, n, k = cute.sym_int(), cute.sym_int(), cute.sym_int()
    a = make_fake_compact_tensor(cutlass.Float16, (m, k), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.Float16, (n, k), stride_order=(1, 0), assumed_align=16)
    d = make_fake_compact_tensor(cutlass.Float16, (m, n), stride_order=(1, 0), assumed_align=16)
    amax = make_fake_compact_tensor(cutlass.Float32, (1,), assumed_align=4)
    return cute.compile(AmaxGemm(), a, b, d, amax)
