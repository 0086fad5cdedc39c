"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/cluster-row-reduction-dsmem.md.
It is not compiled yet: the `st_async_remote` helper (mapa + st.async with complete_tx, written
as inline PTX) and the kernel around the function are left out.
"""

# ruff: noqa: F821, E402, F841, B018

SM = "sm_90a"
PENDING = (
    "a fragment: the remote-store helper and a kernel with a cluster launch and a torch check "
    "are not written here yet"
)

# snippet:begin
import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float32

# Host: grid (rows / rows_per_cta, cluster_n), cluster (1, cluster_n, 1): the CTAs of a cluster
# share the same rows and split the columns.
# SMEM: buf (rows_per_cta, (warps_per_row, cluster_n)) fp32 + one mbarrier.
# Once, before any peer can store: thread 0 mbarrier_init(mbar, 1); mbarrier_init_fence();
# cluster_arrive_relaxed(); cluster_wait().


@cute.jit
def cluster_row_sum(partial: Float32, buf, mbar, cluster_n: cutlass.Constexpr):
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()
    warps_per_row = buf.shape[1][0]
    row, col = warp // warps_per_row, warp % warps_per_row
    me = cute.arch.block_idx_in_cluster()
    v = cute.arch.warp_reduction(partial, operator.add)  # every lane holds the warp's sum
    if warp == 0:
        with cute.arch.elect_one():  # arm: every warp of every CTA sends me 4 bytes
            n_warps = buf.shape[0] * warps_per_row
            cute.arch.mbarrier_arrive_and_expect_tx(mbar, n_warps * cluster_n * 4)
    if lane < cluster_n:  # lane p delivers the warp's value to CTA p, slot (row, (col, me))
        st_async_remote(v, slot_ptr(buf, (row, (col, me))), mbar, peer=lane)
    cute.arch.mbarrier_wait(mbar, phase=0)  # single use: one reduction per launch
    total = Float32(0.0)
    n = warps_per_row * cluster_n
    for i in cutlass.range_constexpr(cute.ceil_div(n, 32)):
        if lane + 32 * i < n:
            total = total + buf[row, lane + 32 * i]
    return cute.arch.warp_reduction(total, operator.add)  # same value in every CTA


# After the last use of buf: cluster_arrive_relaxed(); cluster_wait() so that no CTA exits
# while a peer may still store into its SMEM.
# snippet:end
