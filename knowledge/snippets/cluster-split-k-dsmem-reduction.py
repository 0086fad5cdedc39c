"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/cluster-split-k-dsmem-reduction.md,
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
from cutlass.cute.arch.smem import map_dsmem_ptr
from cutlass.cute.nvgpu.cpasync import CopyDsmemStoreOp

# Host: cluster=(cm, cn, split_k); grid z = L * split_k; SMEM budget minus the mailbox.
# Device, once: one elected thread of ONE warp initialises the two mailbox barriers:
#   mbarrier_init(full, 1); mbarrier_init(empty, split_k - 1); fence; cluster arrive/wait.

store_atom = cute.make_copy_atom(CopyDsmemStoreOp(), cutlass.Float32)
one = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)


def reduce_shards(
    acc,
    rank,
    peers_xy_rank,
    split_k,
    shard,
    tidx,
    mailbox,
    box_layout,
    full,
    empty,
    phases,
    first_round,
    epi_barrier,
):
    if not first_round:
        cute.arch.mbarrier_wait(empty, phases.empty)  # peers consumed the previous round
        phases.empty ^= 1
    if tidx == 0:
        cute.arch.mbarrier_arrive_and_expect_tx(full, (split_k - 1) * 128 * shard * 4)
    epi_barrier.arrive_and_wait()  # armed before any peer can land bytes
    for p in range(split_k):  # unrolled at trace time
        if p != rank:
            slot = rank - (1 if rank > p else 0)  # sender slot, self compressed out
            dst_rank = peers_xy_rank + p * cluster_mn_size
            for i in range(shard):
                one[0] = acc[p * shard + i]
                dst = map_dsmem_ptr(mailbox + box_layout((tidx, i, slot)), dst_rank)
                cute.copy(
                    store_atom,
                    one,
                    cute.make_tensor(dst, cute.make_layout(1)),
                    mbar_ptr=map_dsmem_ptr(full, dst_rank),
                )
    cute.arch.fence_acq_rel_cta()
    cute.arch.mbarrier_wait(full, phases.full)
    phases.full ^= 1
    for s in range(split_k - 1):
        for i in range(shard):
            acc[rank * shard + i] += (mailbox + box_layout((tidx, i, s))).load()
    epi_barrier.arrive_and_wait()  # all threads done reading
    if tidx == 0:
        for p in range(split_k):
            if p != rank:
                cute.arch.mbarrier_arrive(
                    empty, peer_cta_rank_in_cluster=peers_xy_rank + p * cluster_mn_size
                )
    # then: predicated store of acc[rank * shard : (rank + 1) * shard] to C


# snippet:end
