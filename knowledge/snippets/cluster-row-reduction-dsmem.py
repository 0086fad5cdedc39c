"""Row reduction across a cluster through distributed shared memory (sm_90a): a small kernel.

out[r, p] = sum(x[r, :]) as computed by CTA p of the cluster. The CTAs of one cluster take the
same ROWS rows and split the columns (CTA p reads columns [p N / cluster_n, (p + 1) N /
cluster_n)); every warp reduces its strided share of one row, then `cluster_row_sum` sends the
warp's value to every CTA of the cluster with `st.async ... mbarrier::complete_tx::bytes`
(`cute.arch.store_async_dsmem`: mapa + st.async), each CTA waits on its own mbarrier and reduces
all `warps_per_row x cluster_n` slots. Every CTA writes its own copy of the row sum, so check()
sees that all CTAs agree (all-to-all, no broadcast back) and compares with torch.

Shown in knowledge/languages/cute-dsl/optimizations/cluster-row-reduction-dsmem.md.
"""

import operator

import cutlass
import cutlass.cute as cute
from cutlass import Float32

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

ROWS = 2  # rows per CTA (and per cluster)
WARPS_PER_ROW = 4
THREADS = ROWS * WARPS_PER_ROW * 32  # 256
CLUSTER_N = 4  # CTAs per cluster along the columns

# snippet:begin
# Host: grid (rows / ROWS, cluster_n), cluster (1, cluster_n, 1): the CTAs of a cluster share
# the same rows and split the columns. SMEM: buf (ROWS, (warps_per_row, cluster_n)) fp32 + one
# mbarrier (8 bytes).


@cute.jit
def init_cluster_barrier(mbar):
    """Once, before any peer can store into this CTA: one arrival (the local arm)."""
    if cute.arch.thread_idx()[0] == 0:
        cute.arch.mbarrier_init(mbar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()  # no peer stores into an uninitialised barrier
    cute.arch.cluster_wait()


@cute.jit
def cluster_row_sum(partial: Float32, buf: cute.Tensor, mbar, cluster_n: cutlass.Constexpr):
    """Sum of `partial` over the warps of this row in every CTA of the cluster; single use
    (phase 0). Every CTA of the cluster returns the same value."""
    lane = cute.arch.lane_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    warps_per_row = cute.size(buf, mode=[1, 0])
    row, col = warp // warps_per_row, warp % warps_per_row
    me = cute.arch.block_idx_in_cluster()
    v = cute.arch.warp_reduction(partial, operator.add)  # every lane holds the warp's sum
    if warp == 0:
        with cute.arch.elect_one():  # arm: every warp of every CTA sends me 4 bytes
            n_bytes = cute.size(buf) * 4  # rows x warps_per_row x cluster_n floats
            cute.arch.mbarrier_arrive_and_expect_tx(mbar, n_bytes)
    if lane < cluster_n:  # lane p delivers the warp's value to CTA p, slot (row, (col, me))
        slot = buf.iterator + cute.crd2idx((row, (col, me)), buf.layout)  # my address of it
        cute.arch.store_async_dsmem(slot, v.bitcast(cutlass.Int32), mbar, lane)  # mapa: CTA p's
    cute.arch.mbarrier_wait(mbar, phase=0)  # all peers' stores have landed here
    total = Float32(0.0)
    n = warps_per_row * cluster_n
    for i in cutlass.range_constexpr(cute.ceil_div(n, 32)):
        if lane + 32 * i < n:
            total = total + buf[row, lane + 32 * i]
    return cute.arch.warp_reduction(total, operator.add)  # same value in every CTA


# After the last use of buf: cluster_arrive(); cluster_wait() so that no CTA exits while a peer
# may still store into its SMEM.
# snippet:end


class ClusterRowSum:
    """x (M, N) fp32 -> out (M, cluster_n) fp32; M % ROWS == 0, N % cluster_n == 0."""

    def __init__(self, cluster_n: int = CLUSTER_N):
        assert 1 <= cluster_n <= 8, "a portable cluster has at most 8 CTAs"
        self.cluster_n = cluster_n

    @cute.jit
    def __call__(self, x: cute.Tensor, out: cute.Tensor, stream):
        buf_layout = cute.make_ordered_layout((ROWS, (WARPS_PER_ROW, self.cluster_n)), (1, 0))

        @cute.struct
        class Storage:
            mbar: cute.struct.MemRange[cutlass.Int64, 1]
            buf: cute.struct.Align[cute.struct.MemRange[Float32, cute.cosize(buf_layout)], 16]

        self.storage = Storage
        grid = (cute.ceil_div(cute.size(x, mode=[0]), ROWS), self.cluster_n, 1)
        self.kernel(x, out, buf_layout).launch(
            grid=grid, block=[THREADS, 1, 1], cluster=[1, self.cluster_n, 1], stream=stream
        )

    @cute.kernel
    def kernel(self, x: cute.Tensor, out: cute.Tensor, buf_layout: cute.Layout):
        cluster_n = self.cluster_n
        lane = cute.arch.lane_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        bm, _, _ = cute.arch.block_idx()
        me = cute.arch.block_idx_in_cluster()
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        buf = storage.buf.get_tensor(buf_layout)
        mbar = storage.mbar.data_ptr()
        init_cluster_barrier(mbar)

        row = bm * ROWS + warp // WARPS_PER_ROW
        cols = cute.size(x, mode=[1]) // cluster_n
        first = me * cols + (warp % WARPS_PER_ROW) * 32 + lane
        partial = Float32(0.0)
        for c in cutlass.range(first, (me + 1) * cols, WARPS_PER_ROW * 32, unroll=1):
            partial = partial + x[row, c]

        total = cluster_row_sum(partial, buf, mbar, cluster_n)
        if warp % WARPS_PER_ROW == 0 and lane == 0:
            out[row, me] = total
        cute.arch.cluster_arrive()  # keep this CTA's SMEM alive until every peer is done
        cute.arch.cluster_wait()


def _fake_args():
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n = cute.sym_int(), cute.sym_int()
    x = make_fake_compact_tensor(Float32, (m, n), stride_order=(1, 0), assumed_align=16)
    out = make_fake_compact_tensor(Float32, (m, CLUSTER_N), stride_order=(1, 0), assumed_align=16)
    return x, out, make_fake_stream()


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    cute.compile(ClusterRowSum(), *_fake_args())
    return f"cluster (1, {CLUSTER_N}, 1), {THREADS} threads, {ROWS} rows x {WARPS_PER_ROW} warps"


def check(m=64, n=32768):
    """H200: 64 rows of 32768 fp32 split over 4 CTAs; every CTA's copy against torch."""
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    x = torch.randn(m, n, device="cuda", dtype=torch.float32)
    out = torch.full((m, CLUSTER_N), float("nan"), device="cuda", dtype=torch.float32)
    args = [from_dlpack(t, assumed_align=16) for t in (x, out)]
    stream = current_stream()
    cute.compile(ClusterRowSum(), *args, stream)(*args, stream)
    torch.cuda.synchronize()
    ref = x.double().sum(dim=1, keepdim=True).float().expand(m, CLUSTER_N)
    err = (out - ref).abs().max().item()
    spread = (out - out[:, :1]).abs().max().item()  # the CTAs of a cluster must agree
    assert err < 1e-3 * n**0.5, f"max abs error {err}"
    assert spread < 1e-3, f"CTAs of one cluster disagree by {spread}"
    return f"{m} x {n} over {CLUSTER_N} CTAs: max abs error {err:.3g}, CTA spread {spread:.3g}"
