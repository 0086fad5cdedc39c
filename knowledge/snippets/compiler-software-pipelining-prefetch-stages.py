"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/compiler-software-pipelining-prefetch-stages.md,
kept as it stands in the entry until it is
made real code (a kernel that compiles for sm_100a with fake tensors).
It is not imported or compiled: names such as the pipelines, tensors and roles come from a
surrounding kernel that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_100a"
PENDING = "a fragment: its surrounding tcgen05 kernel is not written yet"

# snippet:begin
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05

# Written in dependency order; the compiler hoists the loads P iterations ahead.
if warp == 0:
    for _ in cutlass.range(k_tiles, prefetch_stages=AB_STAGES - 2):
        put = ab_producer.acquire_and_advance()  # wait for a free slot
        cute.copy(
            tma_a,
            tAgA[(None, put.count)],
            tAsA[(None, put.index)],
            tma_bar_ptr=put.barrier,
            mcast_mask=mask_a,
        )
        cute.copy(
            tma_b,
            tBgB[(None, put.count)],
            tBsB[(None, put.index)],
            tma_bar_ptr=put.barrier,
            mcast_mask=mask_b,
        )
        if is_leader_cta:
            got = ab_consumer.wait_and_advance()  # slot k is full
            for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                cute.gemm(
                    tiled_mma,
                    acc,
                    tCrA[(None, None, kb, got.index)],
                    tCrB[(None, None, kb, got.index)],
                    acc,
                )
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            got.release()  # tcgen05.commit: frees the slot when these MMAs finish
    if is_leader_cta:
        acc_pipe.producer_commit(acc_state)
# snippet:end
