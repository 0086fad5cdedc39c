"""A helper shared by the sm_90a snippets about one load or one store (not a snippet itself:
its name starts with _): the TmaGemm of _hopper_tile with the simplest K loop, one SMEM slot,
no ring. Per k-tile: warp 0 arms the slot's mbarrier and issues the TMA copies (the hook
``load_k``), every thread waits for the bytes, the warpgroup runs the slot's WGMMAs and drains
them, and a CTA barrier frees the slot for the next k-tile. After the loop the hook
``epilogue`` writes the accumulator (default: straight to C), with what the hook
``epilogue_setup`` built before the loop (partitions, tiled copies). A snippet overrides a hook
and shows only that; the ring that overlaps loads with MMAs is in
tma-multistage-mbarrier-pipeline.py."""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warpgroup

from kernelplan.kb.snippets import sibling

hop = sibling(__file__, "_hopper_tile")


class SerialTmaGemm(hop.TmaGemm):
    """C (M, N) fp32 = A (M, K) fp16 @ B (N, K)^T, one warpgroup, one slot; M, N, K
    multiples of 64. Hooks: load_k(g, k, tAgA, tAsA, tBgB, tBsB, bar), epilogue_setup(g) and
    epilogue(g, acc, tCgC, epi)."""

    stages = 1

    @cute.jit
    def body(self, g):
        tAsA, tAgA, tBsB, tBgB = hop.tma_partition_ab(g.tma_a, g.tma_b, g.sA, g.sB, g.gA, g.gB)
        tCrA, tCrB, tCgC, acc = hop.mma_operands(g.tiled_mma, g.tidx, g.sA, g.sB, g.gC)
        full = g.storage.bars.data_ptr()  # the slot's "bytes landed" barrier
        if g.warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(full, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        epi = self.epilogue_setup(g)
        tiled_mma = g.tiled_mma
        for k in cutlass.range(cute.size(g.gA, mode=[2]), unroll=1):
            if g.warp == 0:
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full, g.slot_bytes)
                self.load_k(g, k, tAgA, tAsA, tBgB, tBsB, full)
            cute.arch.mbarrier_wait(full, k % 2)
            # Zero the accumulator on the first k-tile only, and say so HERE, in the loop body:
            # the MMA atom's ACCUMULATE flag is an SSA value, and this dynamic loop carries it
            # from one iteration to the next only when the loop body itself calls tiled_mma.set
            # (the DSL's region analysis sees names, not the set() inside issue_async_mmas).
            # Set once to False before the loop, every k-tile's first WGMMA zeroed C (PTX:
            # scale-d a constant 0 in the loop), so C = the last k-tile's product alone.
            tiled_mma.set(warpgroup.Field.ACCUMULATE, k != 0)
            hop.issue_async_mmas(tiled_mma, acc, tCrA, tCrB, 0)
            warpgroup.wait_group(0)
            cute.arch.sync_threads()  # no warp still reads the slot when it is refilled
        self.epilogue(g, acc, tCgC, epi)

    @cute.jit
    def load_k(self, g, k, tAgA, tAsA, tBgB, tBsB, bar):
        cute.copy(g.tma_a, tAgA[(None, k)], tAsA[(None, 0)], tma_bar_ptr=bar)
        cute.copy(g.tma_b, tBgB[(None, k)], tBsB[(None, 0)], tma_bar_ptr=bar)

    def epilogue_setup(self, g):
        return None

    @cute.jit
    def epilogue(self, g, acc, tCgC, epi):
        tCgC.store(acc.load())
