"""Mixed-input GEMM with a transform warpgroup: an sm_100a tcgen05 kernel in which int4 A
(K-major, with one bf16 scale per row and SCALE_K elements of K) goes TMA -> SMEM ring ->
transform warps 8-11 (widen to bf16, multiply by the scale) -> TMEM, and the MMA warp reads A
from TMEM (tcgen05 A operand source TMEM) and B (bf16, K-major) from its own SMEM ring.

Warps as in the example the entry reads (mixed_input_gemm.py:L203-L246 at the pinned commit):
epilogue 0-3, MMA 4, A/B TMA 5, scale TMA 6, idle 7, transform 8-11. Pipelines: A -> transform
(PipelineTmaAsync, the four transform warps consume), scales -> transform (PipelineTmaAsync,
one slot per SCALE_K / BK K-tiles), transform -> MMA (PipelineAsyncUmma, 128 producer
threads), B -> MMA (PipelineTmaUmma), accumulator -> epilogue (PipelineUmmaAsync). The layout
helpers are the DSL's own cutlass.utils.mixed_input_helpers. One CTA per 128x128 tile of
C (M, N, L) fp32 = (scale * A) (M, K, L) @ B (N, K, L)^T; not persistent.

Both conversions are compiled: the generic one (A as it is in memory) and the shuffling
intrinsic (MixedInputGemm(shuffled=True): A permuted per 8 along K on the host, a CUDA 13.1
toolchain). Compiles for sm_100a on the CPU (no check(): the project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/int4-transform-warpgroup-to-mma.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.mixed_input_helpers as mixed
from cutlass.cute.nvgpu import cpasync, tcgen05

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

BN, BK = 128, 64
SCALE_K = 128  # elements of K per scale: SCALE_K // BK K-tiles share one scale slot
LOAD_STAGES, SCALE_STAGES, WIDE_STAGES = 4, 2, 2
EPI_WARPS, MMA_WARP, TMA_WARP, SCALE_WARP, IDLE_WARP = (0, 1, 2, 3), 4, 5, 6, 7
TRANSFORM_WARPS = (8, 9, 10, 11)  # one aligned warpgroup: setmaxregister acts per warpgroup
THREADS = 32 * 12


def subtiles(t, n: int):
    """(n elements, rest) view of a transform thread's tile: the unit converted at a time."""
    t = cute.flat_divide(t, cute.make_layout(n))
    return cute.group_modes(t, 1, cute.rank(t))


class MixedInputGemm:
    def __init__(self, shuffled: bool = False):
        self.shuffled = shuffled  # A permuted per 8 along K on the host: the fast conversion

    @cute.jit
    def __call__(self, a, a_scale, b, c, stream):
        tiler = (128, BN, BK)
        tiled_mma = tile.make_tiled_mma(1, BN, cutlass.BFloat16, tcgen05.OperandSource.TMEM)
        a_ring, a_wide_ring, b_ring = mixed.compute_smem_layout(
            tiled_mma, tiler, a.element_type, b.element_type, LOAD_STAGES, WIDE_STAGES
        )
        load = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
        a_slot = cute.slice_(a_ring, (None, None, None, 0))
        b_slot = cute.slice_(b_ring, (None, None, None, 0))
        tma_a, mA = cute.nvgpu.make_tiled_tma_atom_A(load, a, a_slot, tiler, tiled_mma)
        tma_b, mB = cute.nvgpu.make_tiled_tma_atom_B(load, b, b_slot, tiler, tiled_mma)
        # Scales: one per (row, SCALE_K elements of K), K-major, broadcast by stride 0.
        k_major = cute.nvgpu.OperandMajorMode.K
        s_gmem = mixed.get_gmem_layout_scale(a.shape, 1, SCALE_K, k_major)
        s_tile, s_slot, s_ring = mixed.get_smem_layout_scale(
            tiler, False, 1, SCALE_K, k_major, a_scale.element_type, SCALE_STAGES
        )
        s_slot_mma = cute.get(tiled_mma._thrfrg_A(s_slot.outer), mode=[1])
        s_slot_mma = cute.dice(s_slot_mma, (1, (1,) * cute.rank(s_slot.outer)))
        tma_s, mS = cute.nvgpu.make_tiled_tma_atom_A(
            load,
            cute.make_tensor(a_scale.iterator, s_gmem),
            s_slot_mma,
            (s_tile[0], 1, s_tile[1]),
            tiled_mma,
        )
        acc_cols = BN  # 128x128 fp32 accumulator
        wide_cols = WIDE_STAGES * BK * 16 // 32  # 128 lanes x BK bf16 = BK / 2 32-bit columns
        tmem_cols = 1 << (acc_cols + wide_cols - 1).bit_length()  # a power of two

        @cute.struct
        class Storage:
            a_bars: cute.struct.MemRange[cutlass.Int64, 2 * LOAD_STAGES]
            s_bars: cute.struct.MemRange[cutlass.Int64, 2 * SCALE_STAGES]
            wide_bars: cute.struct.MemRange[cutlass.Int64, 2 * WIDE_STAGES]
            b_bars: cute.struct.MemRange[cutlass.Int64, 2 * LOAD_STAGES]
            acc_bars: cute.struct.MemRange[cutlass.Int64, 2]
            tmem_base: cutlass.Int32
            sA: cute.struct.Align[
                cute.struct.MemRange[a.element_type, cute.cosize(a_ring.outer)], 1024
            ]
            sS: cute.struct.Align[
                cute.struct.MemRange[a_scale.element_type, cute.cosize(s_ring.outer)], 1024
            ]
            sB: cute.struct.Align[
                cute.struct.MemRange[b.element_type, cute.cosize(b_ring.outer)], 1024
            ]

        self.storage = Storage
        self.tmem_cols = tmem_cols
        self.tx_bytes = tuple(  # bytes one stage brings, each mbarrier's transaction count
            cute.size_in_bytes(t.element_type, slot)
            for t, slot in ((a, a_slot), (a_scale, s_slot), (b, b_slot))
        )
        self.kernel(
            tiled_mma,
            tiler,
            (tma_a, mA, a_ring),
            (tma_s, mS, s_ring),
            (tma_b, mB, b_ring),
            a_wide_ring,
            c,
        ).launch(grid=tile.tile_counts(c, tiler), block=[THREADS, 1, 1], stream=stream)

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tiler: cutlass.Constexpr,
        a_load: tuple,
        s_load: tuple,
        b_load: tuple,
        a_wide_ring: cute.ComposedLayout,
        mC: cute.Tensor,
    ):
        (tma_a, mA, a_ring), (tma_s, mS, s_ring), (tma_b, mB, b_ring) = a_load, s_load, b_load
        a_bytes, s_bytes, b_bytes = self.tx_bytes
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, bl = cute.arch.block_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        t_tidx = tidx - 32 * TRANSFORM_WARPS[0]  # 0..127 in the transform warps
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
        sS = storage.sS.get_tensor(s_ring.outer, swizzle=s_ring.inner)
        sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
        thread = pipeline.CooperativeGroup(pipeline.Agent.Thread)
        transform_warps = pipeline.CooperativeGroup(pipeline.Agent.Thread, len(TRANSFORM_WARPS))
        load_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.a_bars.data_ptr(),
            num_stages=LOAD_STAGES,
            producer_group=thread,
            consumer_group=transform_warps,
            tx_count=a_bytes,
            tidx=t_tidx,
        )
        scale_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.s_bars.data_ptr(),
            num_stages=SCALE_STAGES,
            producer_group=thread,
            consumer_group=transform_warps,
            tx_count=s_bytes,
            tidx=t_tidx,
        )
        mma_pipe = pipeline.PipelineAsyncUmma.create(
            barrier_storage=storage.wide_bars.data_ptr(),
            num_stages=WIDE_STAGES,
            producer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread, 32 * len(TRANSFORM_WARPS)
            ),
            consumer_group=thread,
        )
        b_pipe = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.b_bars.data_ptr(),
            num_stages=LOAD_STAGES,
            producer_group=thread,
            consumer_group=thread,
            tx_count=b_bytes,
        )
        acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(),
            num_stages=1,
            producer_group=thread,
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * len(EPI_WARPS)),
        ).make_participants()
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_base.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=THREADS),
            allocator_warp_id=EPI_WARPS[0],
        )
        transform_barrier = pipeline.NamedBarrier(barrier_id=3, num_threads=32 * 4)

        # This CTA's tile: A, its scales and B over K, C.
        thr_mma = tiled_mma.get_slice(0)
        tile_mk, tile_nk = (tiler[0], tiler[2]), (tiler[1], tiler[2])
        tCgA = thr_mma.partition_A(cute.local_tile(mA, tile_mk, (bm, None, bl)))
        tCgS = thr_mma.partition_A(cute.local_tile(mS, tile_mk, (bm, None, bl)))
        tCgB = thr_mma.partition_B(cute.local_tile(mB, tile_nk, (bn, None, bl)))
        tCgC = thr_mma.partition_C(cute.local_tile(mC, (tiler[0], tiler[1]), (bm, bn, bl)))
        one = cute.make_layout(1)
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, 0, one, cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3)
        )
        tCsS = thr_mma.partition_A(sS)
        tSsS, tSgS = mixed.scale_tma_partition(tCsS, tCgS, tma_s, (0, 0, 0, 0), one)
        tBsB, tBgB = cpasync.tma_partition(
            tma_b, 0, one, cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3)
        )
        k_tiles = cute.size(tAgA, mode=[1])
        k_tiles_per_scale = SCALE_K // BK

        tmem.allocate(self.tmem_cols)  # by the allocator warp (epilogue warp 0) only
        tmem.wait_for_alloc()
        acc = cute.make_tensor(
            tmem.retrieve_ptr(tile.ACC),
            tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(tiler[:2])).layout,
        )
        # The wide A: TMEM columns after the accumulator, in the MMA's A-operand layout.
        tCtA = cute.make_tensor(
            cute.recast_ptr(acc.iterator + BN, dtype=cutlass.BFloat16),
            tiled_mma.make_fragment_A(a_wide_ring.outer).layout,
        )

        # Register targets of the example (epilogue 192, MMA/TMA 96, idle 24, transform 208 in
        # the shown part): the decreases free what the transform warpgroup asks for.
        if warp_idx == IDLE_WARP:
            cute.arch.setmaxregister_decrease(24)

        if warp_idx == TMA_WARP:
            cute.arch.setmaxregister_decrease(96)
            put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, LOAD_STAGES)
            for k in cutlass.range(k_tiles, unroll=1):
                load_pipe.producer_acquire(put)
                cute.copy(
                    tma_a,
                    tAgA[(None, k)],
                    tAsA[(None, put.index)],
                    tma_bar_ptr=load_pipe.producer_get_barrier(put),
                )
                b_pipe.producer_acquire(put)
                cute.copy(
                    tma_b,
                    tBgB[(None, k)],
                    tBsB[(None, put.index)],
                    tma_bar_ptr=b_pipe.producer_get_barrier(put),
                )
                put.advance()
            load_pipe.producer_tail(put)

        if warp_idx == SCALE_WARP:
            cute.arch.setmaxregister_decrease(96)
            put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, SCALE_STAGES)
            for k in cutlass.range(0, k_tiles, k_tiles_per_scale, unroll=1):
                scale_pipe.producer_acquire(put)
                cute.copy(
                    tma_s,
                    tSgS[(None, k)],
                    tSsS[(None, put.index)],
                    tma_bar_ptr=scale_pipe.producer_get_barrier(put),
                )
                put.advance()
            scale_pipe.producer_tail(put)

        if warp_idx == MMA_WARP:
            cute.arch.setmaxregister_decrease(96)
            tCrB = tiled_mma.make_fragment_B(sB)
            get_a = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, WIDE_STAGES)
            get_b = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, LOAD_STAGES)
            full = acc_producer.acquire_and_advance()
            tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
            for _k in cutlass.range(k_tiles, unroll=1):
                mma_pipe.consumer_wait(get_a)
                b_pipe.consumer_wait(get_b)
                for kb in cutlass.range_constexpr(cute.size(tCrB, mode=[2])):
                    a_kb = tCtA[(None, None, kb, get_a.index)]
                    cute.gemm(tiled_mma, acc, a_kb, tCrB[(None, None, kb, get_b.index)], acc)
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                mma_pipe.consumer_release(get_a)
                b_pipe.consumer_release(get_b)
                get_a.advance()
                get_b.advance()
            full.commit()
            acc_producer.tail()

        if warp_idx < MMA_WARP:
            cute.arch.setmaxregister_increase(192)
            done = acc_consumer.wait_and_advance()
            tile.store_acc(acc, tCgC, tidx)
            cute.arch.fence_view_async_tmem_load()
            done.release()
            pipeline.NamedBarrier(barrier_id=2, num_threads=32 * len(EPI_WARPS)).arrive_and_wait()
            tmem.relinquish_alloc_permit()
            tmem.free(acc.iterator)

        # The transform warps' views: narrow A (SMEM) and wide A (TMEM) partitioned for the
        # register->TMEM store (tcgen05.st), the scales for a register copy alike, and both
        # register tiles cut into sub-tiles of at most 64 elements.
        store_atom = mixed.get_copy_atom_a_transform(
            cutlass.BFloat16,
            False,
            tcgen05.OperandSource.TMEM,
            tiled_mma.partition_shape_A(cute.dice(tiler, (1, None, 1))),
            sA.element_type,
        )
        load_atom = cute.make_copy_atom(
            cute.nvgpu.CopyUniversalOp(), sA.element_type, num_bits_per_copy=32
        )
        src_copy, store_atom, tAsA_narrow, tA_wide = mixed.transform_partition(
            tcgen05.OperandSource.TMEM,
            mixed.TransformMode.ConvertScale,
            load_atom,
            store_atom,
            sA,
            tCtA,
            t_tidx,
        )
        _, sScale, rScale_copy, rScale_full = mixed.scale_partition(
            src_copy, tCsS, t_tidx, cutlass.BFloat16
        )
        narrow_stage = tAsA_narrow[(None, None, None, None, 0)]
        rA_narrow_full = cute.make_rmem_tensor(narrow_stage.shape, sA.element_type)
        rA_wide = cute.make_rmem_tensor(narrow_stage.shape, cutlass.BFloat16)
        sub = min(cute.size(cute.coalesce(narrow_stage.layout), mode=[0]), 64)
        rA_narrow, rA_wide_sub, rScale = (
            subtiles(t, sub) for t in (rA_narrow_full, rA_wide, rScale_full)
        )
        n_subtiles = cute.size(rA_narrow, mode=[1])
        ld = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, LOAD_STAGES)
        sc = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, SCALE_STAGES)
        tr = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, WIDE_STAGES)
        SHUFFLED = self.shuffled  # a trace-time bool: one conversion or the other is emitted

        # snippet:begin
        # Roles: TMA -> [narrow A ring] -> TRANSFORM warpgroup -> [wide A ring] -> MMA warp.
        # K-major A: the wide tile goes to TMEM (the MMA reads A from TMEM); MN-major A: to SMEM.
        if warp_idx in TRANSFORM_WARPS:
            cute.arch.setmaxregister_increase(208)  # the converting warps get the registers
            for k_tile in cutlass.range(k_tiles, unroll=1):
                load_pipe.consumer_wait(ld)
                if k_tile % k_tiles_per_scale == 0:  # one scale slot serves several K tiles
                    scale_pipe.consumer_wait(sc)
                    s = sScale[(None, None, None, None, sc.index)]  # stride 0 along K
                    s = cute.make_tensor(s.iterator, cute.filter_zeros(s.layout))  # distinct ones
                    cute.autovec_copy(s, rScale_copy)  # rScale: the same registers, broadcast
                mma_pipe.producer_acquire(tr)
                sA_narrow = subtiles(tAsA_narrow[(None, None, None, None, ld.index)], sub)
                for i in cutlass.range_constexpr(n_subtiles):  # <= 64 narrow elements at a time
                    cute.autovec_copy(sA_narrow[(None, i)], rA_narrow[(None, i)])
                    v = rA_narrow[(None, i)].load()
                    # int4 -> bf16: a shuffling intrinsic (needs the host's per-8 permutation of
                    # K, 0 2 1 3 4 6 5 7) or the generic conversion.
                    w = (
                        cute.TensorSSA(
                            cute.arch.cvt_i4_bf16_intrinsic(
                                v, cute.size(v.shape), with_shuffle=True
                            ),
                            v.shape,
                            cutlass.BFloat16,
                        )
                        if SHUFFLED
                        else v.to(cutlass.BFloat16)
                    )
                    w = w * cute.TensorSSA(rScale[(None, i)].load(), w.shape, cutlass.BFloat16)
                    rA_wide_sub[(None, i)].store(w)
                # STTM (to TMEM) or STS (to SMEM)
                cute.copy(store_atom, rA_wide, tA_wide[(None, None, None, None, tr.index)])
                transform_barrier.arrive_and_wait()  # all 128 threads stored
                cute.arch.fence_view_async_tmem_store()  # (SMEM case: fence_proxy("async.shared"))
                if (k_tile + 1) % k_tiles_per_scale == 0:
                    scale_pipe.consumer_release(sc)
                    sc.advance()
                load_pipe.consumer_release(ld)
                ld.advance()
                # PipelineAsyncUmma: 128 producer threads, the MMA warp consumes
                mma_pipe.producer_commit(tr)
                tr.advance()
            mma_pipe.producer_tail(tr)
        # snippet:end


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic extents: int4 A
    (m, k, l) K-major, its bf16 scales (m, k / SCALE_K, l), bf16 B (n, k, l), fp32 C."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n, k, l = (cute.sym_int() for _ in range(4))

    def fake(dtype, *extents, order=(1, 0, 2)):
        return make_fake_compact_tensor(dtype, extents, stride_order=order, assumed_align=32)

    a = fake(cutlass.Int4, m, k, l)
    scale = fake(cutlass.BFloat16, m, cute.sym_int(), l)
    b = fake(cutlass.BFloat16, n, k, l)
    c = fake(cutlass.Float32, m, n, l)
    generic = cute.compile(MixedInputGemm(), a, scale, b, c, make_fake_stream())
    cute.compile(MixedInputGemm(shuffled=True), a, scale, b, c, make_fake_stream())
    return generic
