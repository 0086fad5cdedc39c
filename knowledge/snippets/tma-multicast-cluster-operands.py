"""TMA multicast of one operand across a 2-CTA cluster (sm_90a).

The small WGMMA GEMM of tma-multistage-mbarrier-pipeline.py (C = A @ B^T, one warpgroup per
CTA, warp 0 also the TMA loader, a 2-slot ring) launched with clusters of (1, 2, 1): the two
CTAs of a cluster compute neighbouring N tiles of the same rows, so they need the same A
tiles. A's TMA atom uses the multicast op; each CTA issues half of every A box with a mask
naming both CTAs, so both SMEMs receive the whole box while each CTA reads half of it from L2.
B is loaded per CTA as before. The empty barrier of a slot counts the consumer warps of both
CTAs (the slot's A was written by both), and consumer_release arrives on both CTAs' barriers.
check() compares C with torch.

Shown in knowledge/languages/cute-dsl/optimizations/tma-multicast-cluster-operands.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync, warpgroup

from kernelplan.kb.snippets import sibling

hop = sibling(__file__, "_hopper_tile")
issue_async_mmas = hop.issue_async_mmas  # fence, WGMMAs over one slot, commit_group

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

CLUSTER_M, CLUSTER_N = 1, 2  # A is shared along N

BM, BN, BK = 64, 64, 64
STAGES = 2  # fewer slots than K tiles in the check: the ring must wrap
THREADS = 128  # one warpgroup


class MulticastGemm(hop.TmaGemm):
    """C (M, N) fp32 = A (M, K) fp16 @ B (N, K)^T; M, K multiples of 64, N of 128 (cluster)."""

    BM, BN, BK, THREADS = BM, BN, BK, THREADS
    CLUSTER = (CLUSTER_M, CLUSTER_N)

    def __init__(self, stages: int = STAGES):
        assert stages >= 2, "one slot in flight under WGMMA plus one being refilled"
        self.stages = stages

    def make_loads(self, a, b, a_slot, b_slot, tile):
        # snippet:begin
        # Host: the shared operand gets the multicast op (sm_90 form)
        def load_atom(tensor, stage_layout, box, n_sharing):
            op = (
                cpasync.CopyBulkTensorTileG2SMulticastOp()
                if n_sharing > 1
                else cpasync.CopyBulkTensorTileG2SOp()
            )
            return cpasync.make_tiled_tma_atom(
                op, tensor, stage_layout, box, num_multicast=n_sharing
            )

        tma_a, gA_tma = load_atom(a, a_slot, (BM, BK), CLUSTER_N)  # A is shared along N
        tma_b, gB_tma = load_atom(b, b_slot, (BN, BK), CLUSTER_M)  # B is shared along M
        # snippet:end
        return tma_a, gA_tma, tma_b, gB_tma

    @cute.jit
    def body(self, g):
        S, slot_bytes, tiled_mma = self.stages, g.slot_bytes, g.tiled_mma
        tma_a, tma_b, sA, sB, gA, gB = g.tma_a, g.tma_b, g.sA, g.sB, g.gA, g.gB
        is_loader = g.warp == 0
        # snippet:begin
        # Device: this CTA's coordinate in the cluster, the masks, its slice of each box
        cta_layout = cute.make_layout((CLUSTER_M, CLUSTER_N, 1))
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cm, cn, _ = cta_layout.get_flat_coord(rank)
        mask_a = (
            cute.make_layout_image_mask(cta_layout, (cm, cn, 0), mode=1) if CLUSTER_N > 1 else 0
        )
        mask_b = (
            cute.make_layout_image_mask(cta_layout, (cm, cn, 0), mode=0) if CLUSTER_M > 1 else 0
        )
        # each CTA issues its 1/CLUSTER_N of every A box and 1/CLUSTER_M of every B box
        tAsA, tAgA = cpasync.tma_partition(
            tma_a,
            cn,
            cute.make_layout(CLUSTER_N),
            cute.group_modes(sA, 0, 2),
            cute.group_modes(gA, 0, 2),
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_b,
            cm,
            cute.make_layout(CLUSTER_M),
            cute.group_modes(sB, 0, 2),
            cute.group_modes(gB, 0, 2),
        )
        # a slot may be refilled only after every CTA that wrote into it has released it
        empty_arrivals = (CLUSTER_N + CLUSTER_M - 1) * (THREADS // 32)
        # snippet:end
        tCrA, tCrB, tCgC, acc = hop.mma_operands(tiled_mma, g.tidx, sA, sB, g.gC)
        k_tiles = cute.size(gA, mode=[2])

        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=g.storage.bars.data_ptr(),
            num_stages=S,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, empty_arrivals),
            tx_count=slot_bytes,  # a whole A box and a whole B box land in every CTA
            cta_layout_vmnk=cute.make_layout((1, CLUSTER_M, CLUSTER_N, 1)),
        )  # inits, then a cluster-wide barrier: no peer multicasts before my barriers exist
        put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, S)
        get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, S)
        free = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, S)

        if is_loader:  # prologue: fill the ring (nothing to wait for yet)
            for _ in cutlass.range(cutlass.min(S, k_tiles), unroll=1):
                pipe.producer_acquire(put)  # wait for an empty slot, arm its full barrier
                bar = pipe.producer_get_barrier(put)
                self.load_slot(tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, put, bar, mask_a, mask_b)
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
                self.load_slot(tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, put, bar, mask_a, mask_b)
                put.advance()
        warpgroup.wait_group(0)  # drain before the accumulators are read

        tCgC.store(acc.load())
        # no CTA exits while its peer may still arrive on its empty barriers
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

    @cute.jit
    def load_slot(self, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, put, bar, mask_a, mask_b):
        # snippet:begin
        k, slot = put.count, put.index
        cute.copy(tma_a, tAgA[(None, k)], tAsA[(None, slot)], tma_bar_ptr=bar, mcast_mask=mask_a)
        cute.copy(tma_b, tBgB[(None, k)], tBsB[(None, slot)], tma_bar_ptr=bar, mcast_mask=mask_b)
        # snippet:end


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    return cute.compile(MulticastGemm(), *hop.fake_gemm_args())


def check(m=128, n=256, k=1024):
    """H200: 16 K tiles through a 2-slot ring, A multicast to both CTAs of each cluster."""
    err = hop.check_gemm(MulticastGemm(), m, n, k)
    return f"{k // BK} K tiles, A multicast across {CLUSTER_N} CTAs, max abs error {err:.3g}"
