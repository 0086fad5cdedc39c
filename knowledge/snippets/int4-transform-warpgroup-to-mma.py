"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/int4-transform-warpgroup-to-mma.md.
It is not imported or compiled: the pipelines, the partitioned SMEM/TMEM tensors and the roles
come from a surrounding mixed-input tcgen05 kernel that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018

SM = "sm_100a"
PENDING = "a fragment: its surrounding mixed-input tcgen05 kernel (sm_100a) is not written here yet"

# snippet:begin
import cutlass
import cutlass.cute as cute

# Roles: TMA -> [narrow A ring] -> TRANSFORM warpgroup -> [wide A ring] -> MMA warp.
# K-major A: the wide tile goes to TMEM (the MMA reads A from TMEM); MN-major A: to SMEM.
if warp_idx in TRANSFORM_WARPS:
    cute.arch.setmaxregister_increase(208)  # the converting warps get the registers
    for k_tile in cutlass.range(k_tiles, unroll=1):
        load_pipe.consumer_wait(ld)
        if k_tile % k_tiles_per_scale == 0:  # one scale slot serves several K tiles
            scale_pipe.consumer_wait(sc)
            cute.autovec_copy(sScale[(None, None, None, None, sc.index)], rScale)
        mma_pipe.producer_acquire(tr)
        for i in cutlass.range_constexpr(n_subtiles):  # <= 64 narrow elements at a time
            cute.autovec_copy(sA_narrow[(None, i, ld.index)], rA_narrow[(None, i)])
            v = rA_narrow[(None, i)].load()
            # int4 -> bf16: a shuffling intrinsic (needs the host's per-8 permutation of K,
            # 0 2 1 3 4 6 5 7) or the generic conversion.
            w = (
                cute.TensorSSA(
                    cute.arch.cvt_i4_bf16_intrinsic(v, cute.size(v.shape), with_shuffle=True),
                    v.shape,
                    cutlass.BFloat16,
                )
                if SHUFFLED
                else v.to(cutlass.BFloat16)
            )
            w = w * cute.TensorSSA(rScale[(None, i)].load(), w.shape, cutlass.BFloat16)
            rA_wide[(None, i)].store(w)
        cute.copy(store_atom, rA_wide, tA_wide[(None, None, None, None, tr.index)])  # STTM or STS
        transform_barrier.arrive_and_wait()  # all 128 threads stored
        cute.arch.fence_view_async_tmem_store()  # (SMEM case: fence_proxy("async.shared"))
        if (k_tile + 1) % k_tiles_per_scale == 0:
            scale_pipe.consumer_release(sc)
            sc.advance()
        load_pipe.consumer_release(ld)
        ld.advance()
        mma_pipe.producer_commit(tr)  # PipelineAsyncUmma: 128 producer threads, MMA consumes
        tr.advance()
    mma_pipe.producer_tail(tr)
# snippet:end
