"""Register rebalancing between a producer warpgroup and two consumer warpgroups (sm_90a).

A small warp-specialized GEMM, C (M, N) fp32 = A (M, K) fp16 @ B (N, K)^T: 384 threads per
CTA. Warpgroup 0 is the producer (one elected thread issues the TMA loads of a 3-slot ring);
warpgroups 1 and 2 are the consumers, each computing 64 rows of the CTA's 128 x 64 tile with
WGMMA. Right after the pipeline's barriers are initialised, the producer warpgroup lowers its
register limit with `setmaxregister_decrease` and the consumers raise theirs with
`setmaxregister_increase`; the budget closes exactly (128 x 40 + 256 x 232 = 384 x 168).
check() compares C with torch.

Shown in knowledge/languages/cute-dsl/optimizations/setmaxnreg-producer-consumer-rebalance.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import warpgroup

from kernelplan.kb.snippets import sibling

hop = sibling(__file__, "_hopper_tile")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

BM, BN, BK = 128, 64, 64  # two consumer warpgroups x 64 rows
STAGES = 3

# snippet:begin
WG = 128  # threads per warpgroup
N_LOAD_WG, N_MMA_WG = 1, 2  # one TMA warpgroup, two wgmma warpgroups
LOAD_REGS, MMA_REGS = 40, 232
THREADS = WG * (N_LOAD_WG + N_MMA_WG)  # 384
# launch allocation per thread: 65536 // THREADS rounded down to 8 = 168; setmaxnreg only
# moves registers inside the CTA's launch pool (THREADS x 168 = 64512), not the SM's 65536
LAUNCH_REGS = 65536 // THREADS // 8 * 8
assert N_LOAD_WG * LOAD_REGS + N_MMA_WG * MMA_REGS <= (N_LOAD_WG + N_MMA_WG) * LAUNCH_REGS

# snippet:end


class WarpSpecializedGemm(hop.TmaGemm):
    BM, BN, BK, THREADS, N_MMA_WG = BM, BN, BK, THREADS, N_MMA_WG
    stages = STAGES

    @cute.jit
    def body(self, g):
        tidx, storage, slot_bytes, tiled_mma = g.tidx, g.storage, g.slot_bytes, g.tiled_mma
        tma_a, tma_b, sA, sB, gA, gB, gC = g.tma_a, g.tma_b, g.sA, g.sB, g.gA, g.gB, g.gC
        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bars.data_ptr(),
            num_stages=STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, N_MMA_WG * WG // 32),
            tx_count=slot_bytes,
            cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
        )  # initialises the barriers and syncs the CTA

        # snippet:begin
        # inside the @cute.kernel, after the pipeline's barriers are initialised (and synced)
        wg = cute.arch.make_warp_uniform(tidx // WG)
        if wg < N_LOAD_WG:
            cute.arch.setmaxregister_decrease(LOAD_REGS)
            if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == 0:
                self.producer_tile_loop(pipe, tma_a, tma_b, sA, sB, gA, gB)  # TMA only
        else:
            cute.arch.setmaxregister_increase(MMA_REGS)
            self.consumer_tile_loop(pipe, tiled_mma, tidx - N_LOAD_WG * WG, sA, sB, gA, gC)
        # snippet:end

    @cute.jit
    def producer_tile_loop(self, pipe, tma_a, tma_b, sA, sB, gA, gB):
        tAsA, tAgA, tBsB, tBgB = hop.tma_partition_ab(tma_a, tma_b, sA, sB, gA, gB)
        put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
        for _k in cutlass.range(cute.size(gA, mode=[2]), unroll=1):
            pipe.producer_acquire(put)
            bar = pipe.producer_get_barrier(put)
            cute.copy(tma_a, tAgA[(None, put.count)], tAsA[(None, put.index)], tma_bar_ptr=bar)
            cute.copy(tma_b, tBgB[(None, put.count)], tBsB[(None, put.index)], tma_bar_ptr=bar)
            put.advance()
        pipe.producer_tail(put)  # do not exit while loads this CTA issued are in flight

    @cute.jit
    def consumer_tile_loop(self, pipe, tiled_mma, mma_tidx, sA, sB, gA, gC):
        tCrA, tCrB, tCgC, acc = hop.mma_operands(tiled_mma, mma_tidx, sA, sB, gC)
        get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
        for _k in cutlass.range(cute.size(gA, mode=[2]), unroll=1):
            pipe.consumer_wait(get)
            warpgroup.fence()
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(
                    tiled_mma,
                    acc,
                    tCrA[(None, None, kb, get.index)],
                    tCrB[(None, None, kb, get.index)],
                    acc,
                )
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
            warpgroup.wait_group(0)
            pipe.consumer_release(get)
            get.advance()
        tCgC.store(acc.load())


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    cute.compile(WarpSpecializedGemm(), *hop.fake_gemm_args())
    return f"{THREADS} threads: producer {LOAD_REGS} regs, 2 consumers {MMA_REGS} regs"


def check(m=256, n=256, k=1024):
    """H200: 16 K tiles through a 3-slot ring, producer and consumers rebalanced."""
    err = hop.check_gemm(WarpSpecializedGemm(), m, n, k)
    return f"{k // BK} K tiles, {THREADS} threads rebalanced 40/232, max abs error {err:.3g}"
