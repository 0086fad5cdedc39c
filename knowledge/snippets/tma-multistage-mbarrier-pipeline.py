"""TMA multistage mbarrier pipeline: a small sm_90a GEMM whose K loop streams A and B tiles
through an S-slot shared-memory ring guarded by a PipelineTmaAsync (full + empty mbarriers).

One warpgroup (128 threads, 4 warps) computes a 64x64 fp32 tile of C = A @ B^T with WGMMA;
warp 0 is also the TMA loader. The loader is therefore one of the consumers the empty barrier
waits for: it may only refill a slot after its own warp has released one. The first MMA batch
is issued before the loop, so every loop iteration releases one slot (the one read in the
previous iteration, once `wait_group(1)` says its MMAs are done) BEFORE the loader refills.
The known-bad ordering (refill at k = 0, before anything was released) is kept in
knowledge/snippets/bad/tma-multistage-mbarrier-pipeline.py; it deadlocks when the K loop has
more tiles than the ring has slots.

Shown in knowledge/languages/cute-dsl/optimizations/tma-multistage-mbarrier-pipeline.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import warpgroup

from kernelplan.kb.snippets import sibling

hop = sibling(__file__, "_hopper_tile")
issue_async_mmas = hop.issue_async_mmas  # fence, WGMMAs over one slot, commit_group

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

BM, BN, BK = 64, 64, 64
STAGES = 2  # fewer slots than K tiles in the check: the ring must wrap
THREADS = 128  # one warpgroup


class PipelinedGemm(hop.TmaGemm):
    """C (M, N) fp32 = A (M, K) fp16 @ B (N, K)^T, A and B K-major; M, N, K multiples of 64."""

    BM, BN, BK, THREADS = BM, BN, BK, THREADS

    def __init__(self, stages: int = STAGES):
        assert stages >= 2, "one slot in flight under WGMMA plus one being refilled"
        self.stages = stages

    @cute.jit
    def body(self, g):
        S, tidx, storage, slot_bytes = self.stages, g.tidx, g.storage, g.slot_bytes
        tiled_mma, tma_a, tma_b = g.tiled_mma, g.tma_a, g.tma_b
        is_loader = g.warp == 0
        tAsA, tAgA, tBsB, tBgB = hop.tma_partition_ab(tma_a, tma_b, g.sA, g.sB, g.gA, g.gB)
        tCrA, tCrB, tCgC, acc = hop.mma_operands(tiled_mma, tidx, g.sA, g.sB, g.gC)
        k_tiles = cute.size(g.gA, mode=[2])

        # snippet:begin
        # Device side, inside the @cute.kernel: one warpgroup (4 warps) consumes; warp 0 also loads.
        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bars.data_ptr(),
            num_stages=S,  # S >= 2: one slot under WGMMA while the next one is refilled
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            # every warp that reads a slot releases it once (x CTAs of a multicast cluster)
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS // 32),
            tx_count=slot_bytes,  # bytes that the TMA copies of one slot deliver to this CTA
            cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        )
        put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, S)
        get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, S)
        free = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, S)

        if is_loader:  # prologue: fill the ring (nothing to wait for yet)
            for _ in cutlass.range(cutlass.min(S, k_tiles), unroll=1):
                pipe.producer_acquire(put)  # wait for an empty slot, arm its full barrier
                bar = pipe.producer_get_barrier(put)
                cute.copy(tma_a, tAgA[(None, put.count)], tAsA[(None, put.index)], tma_bar_ptr=bar)
                cute.copy(tma_b, tBgB[(None, put.count)], tBsB[(None, put.index)], tma_bar_ptr=bar)
                put.advance()

        # First batch outside the loop: nothing can be released yet, so nothing is refilled.
        tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
        pipe.consumer_wait(get)
        issue_async_mmas(tiled_mma, acc, tCrA, tCrB, get.index)  # fence, WGMMAs, commit
        get.advance()

        for _k in cutlass.range(1, k_tiles, unroll=1):
            pipe.consumer_wait(get)
            issue_async_mmas(tiled_mma, acc, tCrA, tCrB, get.index)
            get.advance()
            warpgroup.wait_group(1)  # the previous slot's MMAs have finished reading it
            pipe.consumer_release(free)  # ... so release it: every warp, the loader's too
            free.advance()
            if is_loader and put.count < k_tiles:  # refill only after this warp released
                pipe.producer_acquire(put)
                bar = pipe.producer_get_barrier(put)
                cute.copy(tma_a, tAgA[(None, put.count)], tAsA[(None, put.index)], tma_bar_ptr=bar)
                cute.copy(tma_b, tBgB[(None, put.count)], tBsB[(None, put.index)], tma_bar_ptr=bar)
                put.advance()
        warpgroup.wait_group(0)  # drain before the accumulators are read
        # snippet:end

        tCgC.store(acc.load())


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    return cute.compile(PipelinedGemm(), *hop.fake_gemm_args())


def check(m=128, n=128, k=1024):
    """H200: 16 K tiles through a 2-slot ring; compare with torch in fp32."""
    err = hop.check_gemm(PipelinedGemm(), m, n, k)
    return f"{k // BK} K tiles through {STAGES} slots, max abs error {err:.3g}"
