"""Block-scaled tcgen05 GEMM: scale factors by TMA to SMEM, then SMEM to TMEM beside the
accumulator (sm_100a).

A small NVFP4 GEMM, D (M, N) fp16 = (A * SFA) @ (B * SFB)^T: A (M, K) and B (N, K) are
Float4E2M1FN, one Float8E4M3FN scale per 16 elements along K. One 128 x 128 output tile per CTA
of 128 threads; K tiles of 256 through a 2-slot ring. Warp 0 issues, per K tile, the four TMA
copies (A, B, SFA, SFB: one barrier, one transaction count), then the SMEM -> TMEM copies of
that stage's scales (tcgen05.Cp4x32x128bOp) and the block-scaled MMAs, which read A and B from
SMEM and the scales from TMEM columns after the accumulator's. All 4 warps then read the
accumulator and store D. The host passes pointers and M, N, K (multiples of 128, 128, 256);
the scales' layouts follow from the operands' shapes. Compiles for sm_100a on the CPU (no
check(): the project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/scale-factor-smem-to-tmem-path.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as bsl
from cutlass.cute.nvgpu import cpasync, tcgen05

SM = "sm_100a"

BM, BN, BK = 128, 128, 256  # BK = 4 MMA instructions of K = 64
ab_dtype = cutlass.Float4E2M1FN
sf_dtype = cutlass.Float8E4M3FN
sf_vec = 16  # one scale per 16 elements along K
ab_stages = 2
THREADS = 128
cta_group = tcgen05.CtaGroup.ONE


class BlockScaledGemm:
    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        sfa_ptr: cute.Pointer,
        sfb_ptr: cute.Pointer,
        d_ptr: cute.Pointer,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
    ):
        kk = cute.assume(k, 32)
        a = cute.make_tensor(a_ptr, cute.make_layout((m, kk, 1), stride=(kk, 1, m * kk)))
        b = cute.make_tensor(b_ptr, cute.make_layout((n, kk, 1), stride=(kk, 1, n * kk)))
        d = cute.make_tensor(
            d_ptr, cute.make_layout((m, cute.assume(n, 16)), stride=(cute.assume(n, 16), 1))
        )
        mma_tiler = (BM, BN, BK)
        tiled_mma = cute.make_tiled_mma(
            tcgen05.MmaMXF4NVF4Op(sf_dtype, (BM, BN, 64), cta_group, tcgen05.OperandSource.SMEM)
        )
        cluster_vmnk_shape = cute.tiled_divide(
            cute.make_layout((1, 1, 1)), (tiled_mma.thr_id.shape,)
        ).shape
        a_ring = sm100_utils.make_smem_layout_a(tiled_mma, mma_tiler, ab_dtype, ab_stages)
        b_ring = sm100_utils.make_smem_layout_b(tiled_mma, mma_tiler, ab_dtype, ab_stages)
        g2s = cpasync.CopyBulkTensorTileG2SOp(cta_group)
        tma_op_a = tma_op_b = g2s
        a_slot = cute.slice_(a_ring, (None, None, None, 0))
        b_slot = cute.slice_(b_ring, (None, None, None, 0))
        tma_a, tma_a_tensor = cute.nvgpu.make_tiled_tma_atom_A(
            g2s, a, a_slot, mma_tiler, tiled_mma, cluster_vmnk_shape
        )
        tma_b, tma_b_tensor = cute.nvgpu.make_tiled_tma_atom_B(
            g2s, b, b_slot, mma_tiler, tiled_mma, cluster_vmnk_shape
        )

        # snippet:begin
        # Host: the scale factors are a pointer; their layout follows from the operand's shape.
        #   ((32, 4), (sf_vec, 4)) atoms tiled over (M, K, L): 128 rows x 4 scales in 512 bytes,
        #   stride 0 across the sf_vec elements one scale covers.
        sfa = cute.make_tensor(sfa_ptr, bsl.tile_atom_to_shape_SF(a.shape, sf_vec))
        sfb = cute.make_tensor(sfb_ptr, bsl.tile_atom_to_shape_SF(b.shape, sf_vec))
        sfa_smem = bsl.make_smem_layout_sfa(tiled_mma, mma_tiler, sf_vec, ab_stages)
        sfb_smem = bsl.make_smem_layout_sfb(tiled_mma, mma_tiler, sf_vec, ab_stages)
        tma_sfa, tma_sfa_tensor = cute.nvgpu.make_tiled_tma_atom_A(
            tma_op_a,
            sfa,
            cute.slice_(sfa_smem, (None, None, None, 0)),
            mma_tiler,
            tiled_mma,
            cluster_vmnk_shape,
            internal_type=cutlass.Int16,  # scale bytes moved as 16-bit elements
        )
        tma_sfb, tma_sfb_tensor = cute.nvgpu.make_tiled_tma_atom_B(
            tma_op_b,
            sfb,
            cute.slice_(sfb_smem, (None, None, None, 0)),
            mma_tiler,
            tiled_mma,
            cluster_vmnk_shape,
            internal_type=cutlass.Int16,
        )
        # stage bytes (the TMA barrier's tx count) = A + B + SFA + SFB of one stage
        stage_bytes = (
            cute.size_in_bytes(ab_dtype, a_slot)
            + cute.size_in_bytes(ab_dtype, b_slot)
            + cute.size_in_bytes(sf_dtype, cute.slice_(sfa_smem, (None, None, None, 0)))
            + cute.size_in_bytes(sf_dtype, cute.slice_(sfb_smem, (None, None, None, 0)))
        )
        # snippet:end

        @cute.struct
        class Storage:
            ab_bars: cute.struct.MemRange[cutlass.Int64, 2 * ab_stages]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2]
            tmem_ptr: cutlass.Int32
            sA: cute.struct.Align[cute.struct.MemRange[ab_dtype, cute.cosize(a_ring)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[ab_dtype, cute.cosize(b_ring)], 1024]
            sSFA: cute.struct.Align[cute.struct.MemRange[sf_dtype, cute.cosize(sfa_smem)], 128]
            sSFB: cute.struct.Align[cute.struct.MemRange[sf_dtype, cute.cosize(sfb_smem)], 128]

        self.storage = Storage
        grid = (cute.ceil_div(m, BM), cute.ceil_div(n, BN), 1)
        self.kernel(
            tiled_mma,
            (tma_a, tma_b, tma_sfa, tma_sfb),
            tma_a_tensor,
            tma_b_tensor,
            tma_sfa_tensor,
            tma_sfb_tensor,
            d,
            a_ring,
            b_ring,
            sfa_smem,
            sfb_smem,
            stage_bytes,
        ).launch(grid=grid, block=[THREADS, 1, 1])

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        atoms: tuple,
        mA: cute.Tensor,
        mB: cute.Tensor,
        mSFA: cute.Tensor,
        mSFB: cute.Tensor,
        mD: cute.Tensor,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        sfa_smem: cute.Layout,
        sfb_smem: cute.Layout,
        stage_bytes: cutlass.Constexpr,
    ):
        tma_a, tma_b, tma_sfa, tma_sfb = atoms
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        mma_tiler = (BM, BN, BK)

        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
        sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
        sSFA = storage.sSFA.get_tensor(sfa_smem)
        sSFB = storage.sSFB.get_tensor(sfb_smem)
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_ptr.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=THREADS),
        )
        tmem.allocate(256)  # 128 accumulator columns, then the SFA and SFB columns
        if warp == 0:
            for atom in (tma_a, tma_b, tma_sfa, tma_sfb):
                cpasync.prefetch_descriptor(atom)

        ab_pipe = pipeline.PipelineTmaUmma.create(
            num_stages=ab_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            tx_count=stage_bytes,  # all four copies of a stage on one barrier
            barrier_storage=storage.ab_bars.data_ptr(),
        )
        acc_prod, acc_cons = pipeline.PipelineUmmaAsync.create(
            num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
            barrier_storage=storage.acc_bars.data_ptr(),
        ).make_participants()

        # Global tiles of this CTA: (bM|bN, bK, k_tiles)
        coord = (bm, bn, None)
        gA = cute.local_tile(mA, (BM, BK), (bm, None, 0))
        gB = cute.local_tile(mB, (BN, BK), (bn, None, 0))
        gSFA = cute.local_tile(mSFA, (BM, BK), (bm, None, 0))
        gSFB = cute.local_tile(mSFB, (BN, BK), (bn, None, 0))
        gD = cute.local_tile(mD, mma_tiler, coord, proj=(1, 1, None))
        thr_mma = tiled_mma.get_slice(0)

        def tma_views(atom, s, g):
            return cpasync.tma_partition(
                atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 3), cute.group_modes(g, 0, 3)
            )

        tAsA, tAgA = tma_views(tma_a, sA, thr_mma.partition_A(gA))
        tBsB, tBgB = tma_views(tma_b, sB, thr_mma.partition_B(gB))
        tAsSFA, tAgSFA = tma_views(tma_sfa, sSFA, thr_mma.partition_A(gSFA))
        tBsSFB, tBgSFB = tma_views(tma_sfb, sSFB, thr_mma.partition_B(gSFB))
        tAsSFA, tAgSFA = cute.filter_zeros(tAsSFA), cute.filter_zeros(tAgSFA)
        tBsSFB, tBgSFB = cute.filter_zeros(tBsSFB), cute.filter_zeros(tBgSFB)
        tA = tiled_mma.make_fragment_A(sA)
        tB = tiled_mma.make_fragment_B(sB)
        tCgD = thr_mma.partition_C(gD)
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((BM, BN))).layout

        tmem.wait_for_alloc()
        acc_ptr = tmem.retrieve_ptr(cutlass.Float32)
        acc = cute.make_tensor(acc_ptr, acc_layout)
        acc_cols = tcgen05.find_tmem_tensor_col_offset(acc)
        sfa_1 = cute.slice_(sfa_smem, (None, None, None, 0))
        sfb_1 = cute.slice_(sfb_smem, (None, None, None, 0))
        sfa_cols = tcgen05.find_tmem_tensor_col_offset(  # 32-bit columns the SFA block spans
            cute.make_tensor(
                cute.recast_ptr(acc_ptr, dtype=sf_dtype),
                bsl.make_tmem_layout_sfa(tiled_mma, mma_tiler, sf_vec, sfa_1),
            )
        )
        k_tiles = cute.size(gA, mode=[2])

        if warp == 0:
            acc_empty = acc_prod.acquire_and_advance()

            # snippet:begin
            # Device, MMA warp: TMEM = [accumulator | SFA columns | SFB columns].
            def sf_tmem(acc_ptr, col_offset, layout):
                return cute.make_tensor(
                    cute.recast_ptr(acc_ptr + col_offset, dtype=sf_dtype), layout
                )

            tSFA = sf_tmem(
                acc_ptr, acc_cols, bsl.make_tmem_layout_sfa(tiled_mma, mma_tiler, sf_vec, sfa_1)
            )
            tSFB = sf_tmem(
                acc_ptr,
                acc_cols + sfa_cols,
                bsl.make_tmem_layout_sfb(tiled_mma, mma_tiler, sf_vec, sfb_1),
            )

            def s2t(sSF, tSF):
                """SMEM -> TMEM copy of the scale factors (32 lanes x 128 bits, four times)."""
                src, dst = cute.filter_zeros(sSF), cute.filter_zeros(tSF)  # drop broadcast modes
                copy = tcgen05.make_s2t_copy(
                    cute.make_copy_atom(tcgen05.Cp4x32x128bOp(cta_group), sf_dtype), dst
                )
                thr = copy.get_slice(0)
                src_desc = tcgen05.get_s2t_smem_desc_tensor(copy, thr.partition_S(src))
                return copy, src_desc, thr.partition_D(dst)

            copy_a, src_a, dst_a = s2t(sSFA, tSFA)
            copy_b, src_b, dst_b = s2t(sSFB, tSFB)
            put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, ab_stages)
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ab_stages)
            for k_tile in cutlass.range(k_tiles, unroll=1):
                ab_pipe.producer_acquire(put)  # the same warp loads: A, B, SFA, SFB, one barrier
                bar = ab_pipe.producer_get_barrier(put)
                for atom, g, s in (
                    (tma_a, tAgA, tAsA),
                    (tma_b, tBgB, tBsB),
                    (tma_sfa, tAgSFA, tAsSFA),
                    (tma_sfb, tBgSFB, tBsSFB),
                ):
                    cute.copy(atom, g[(None, put.count)], s[(None, put.index)], tma_bar_ptr=bar)
                put.advance()
                ab_pipe.consumer_wait(state)
                cute.copy(copy_a, src_a[(None, None, None, None, state.index)], dst_a)
                cute.copy(copy_b, src_b[(None, None, None, None, state.index)], dst_b)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, k_tile != 0)
                cute.gemm(
                    tiled_mma,
                    acc,
                    [tA[None, None, None, state.index], tSFA],
                    [tB[None, None, None, state.index], tSFB],
                    acc,
                )
                ab_pipe.consumer_release(state)  # the MMA commit also covers the S2T copies
                state.advance()
            # snippet:end
            acc_empty.commit()
        tmem.relinquish_alloc_permit()

        # Epilogue: every thread reads its accumulator row and stores it as fp16.
        acc_full = acc_cons.wait_and_advance()
        t2r = tcgen05.make_tmem_copy(
            cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32), acc
        )
        thr_t2r = t2r.get_slice(tidx)
        tAcc = thr_t2r.partition_S(acc)
        tDgD = thr_t2r.partition_D(tCgD)
        rAcc = cute.make_rmem_tensor(tDgD.shape, cutlass.Float32)
        cute.copy(t2r, tAcc, rAcc)
        rD = cute.make_rmem_tensor(tDgD.shape, mD.element_type)
        rD.store(rAcc.load().to(mD.element_type))
        cute.autovec_copy(rD, tDgD)
        acc_full.release()
        pipeline.sync(barrier_id=1)
        tmem.free(acc_ptr)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake pointers and dynamic M, N, K."""
    from cutlass.cute.runtime import make_ptr

    gmem = cute.AddressSpace.gmem
    args = (
        make_ptr(ab_dtype, 0, gmem, assumed_align=32),
        make_ptr(ab_dtype, 0, gmem, assumed_align=32),
        make_ptr(sf_dtype, 0, gmem, assumed_align=16),
        make_ptr(sf_dtype, 0, gmem, assumed_align=16),
        make_ptr(cutlass.Float16, 0, gmem, assumed_align=16),
        cutlass.Int32(512),
        cutlass.Int32(256),
        cutlass.Int32(1024),
    )
    return cute.compile(BlockScaledGemm(), *args)
