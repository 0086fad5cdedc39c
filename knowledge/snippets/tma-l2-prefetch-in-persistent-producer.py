"""TMA L2 prefetch stream in a persistent producer: a warp-specialised sm_100a tcgen05 GEMM
whose CTAs walk the output tiles statically (block_idx, then every grid-size-th tile; the
skeleton is _sm100_gemm.StaticPersistentGemm) and whose TMA warp loads each tile's K-tiles
through load_tile_with_prefetch(): the A/B ring of AB_STAGES slots plus a stream of
`cute.prefetch` (TMA tensor prefetch into L2) running PF_DIST K-tiles ahead of the loads,
primed at the start of every output tile. PF_DIST = AB_STAGES, the default of the example the
entry reads (dense_gemm_persistent_prefetch.py:L446-L454 at the pinned commit); 0 compiles the
same kernel without the stream.

C (M, N, L) fp32 = A (M, K, L) fp16 @ B (N, K, L)^T, 128x128 tiles, no cluster (the multicast
masks stay None). Compiles for sm_100a on the CPU (no check(): the project's GPU is an H200).

Shown in knowledge/languages/cute-dsl/optimizations/tma-l2-prefetch-in-persistent-producer.md.
"""

# ruff: noqa: E402, SIM102  (the shown region starts with its own imports; its nested if is
# a trace-time test around a runtime one)

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_sm100_gemm")

SM = "sm_100a"

AB_STAGES = 4
PF_DIST = AB_STAGES  # the example's default distance: the A/B stage count

# snippet:begin
import cutlass
import cutlass.cute as cute


# Producer (TMA) warp of a persistent kernel. `pf_dist` is a Python int fixed at trace time;
# tAgA/tBgB are the TMA-partitioned global tensors ((atom, rest), k_tiles) of this output tile.
@cute.jit
def load_tile_with_prefetch(
    producer, tma_a, tma_b, tAgA, tBgB, tAsA, tBsB, k_tiles, pf_dist, mcast_a=None, mcast_b=None
):
    if pf_dist > 0:  # resolved at trace time: no code when disabled
        # prime: the first k-tiles of this output tile go to L2 right away
        for k in cutlass.range(0, cutlass.min(pf_dist, k_tiles), unroll=1):
            cute.prefetch(tma_a, tAgA[(None, k)])
            cute.prefetch(tma_b, tBgB[(None, k)])

    producer.reset()  # k count restarts for the new output tile
    peek = producer.try_acquire()  # non-blocking look at the first empty slot
    for k in cutlass.range(0, k_tiles, 1, unroll=1):
        h = producer.acquire_and_advance(peek)
        cute.copy(
            tma_a,
            tAgA[(None, h.count)],
            tAsA[(None, h.index)],
            tma_bar_ptr=h.barrier,
            mcast_mask=mcast_a,
        )
        cute.copy(
            tma_b,
            tBgB[(None, h.count)],
            tBsB[(None, h.index)],
            tma_bar_ptr=h.barrier,
            mcast_mask=mcast_b,
        )
        if pf_dist > 0:
            if k < k_tiles - pf_dist:  # rolling: stay pf_dist k-tiles ahead of the loads
                cute.prefetch(tma_a, tAgA[(None, h.count + pf_dist)])
                cute.prefetch(tma_b, tBgB[(None, h.count + pf_dist)])
        peek = cutlass.Boolean(1)
        if h.count + 1 < k_tiles:
            peek = producer.try_acquire()
    return producer  # rebind it in the caller's tile loop, so that its state is carried


# snippet:end


class PrefetchGemm(tile.StaticPersistentGemm):
    AB_STAGES = AB_STAGES

    def __init__(self, pf_dist: int = PF_DIST):
        self.pf_dist = pf_dist

    @cute.jit
    def load_tile(self, producer, g, a_tiles, b_tiles):
        return load_tile_with_prefetch(
            producer, g.tma_a, g.tma_b, a_tiles, b_tiles, g.tAsA, g.tBsB, g.k_tiles, self.pf_dist
        )


def compile_snippet():
    """CPU: compile for sm_100a (CUTE_DSL_ARCH) with fake tensors of symbolic extents, with the
    prefetch stream (PF_DIST) and without it (0)."""
    with_stream = cute.compile(PrefetchGemm(PF_DIST), *tile.fake_mkl_args())
    cute.compile(PrefetchGemm(0), *tile.fake_mkl_args())
    return with_stream
