"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/tma-l2-prefetch-in-persistent-producer.md,
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


# Producer (TMA) warp of a persistent kernel. `pf_dist` is a Python int fixed at trace time;
# tAgA/tBgB are the TMA-partitioned global tensors ((atom, rest), k_tiles) of this output tile.
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


# snippet:end
