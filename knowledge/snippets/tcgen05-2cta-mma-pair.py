"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/tcgen05-2cta-mma-pair.md,
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
from cutlass.cute.nvgpu import cpasync, tcgen05

# Host (@cute.jit)
PAIR = tcgen05.CtaGroup.TWO
mma_op = tcgen05.MmaF16BF16Op(
    cutlass.Float16,
    cutlass.Float32,
    (256, n_tile, 16),
    PAIR,
    tcgen05.OperandSource.SMEM,
    tcgen05.OperandMajorMode.K,
    tcgen05.OperandMajorMode.K,
)
tiled_mma = cute.make_tiled_mma(mma_op)
cluster_vmnk = cute.tiled_divide(cute.make_layout((cluster_m, cluster_n, 1)), (tiled_mma.thr_id,))
load_op = cpasync.CopyBulkTensorTileG2SMulticastOp(PAIR)
tma_a, gA = cute.nvgpu.make_tiled_tma_atom_A(
    load_op, a, a_stage_layout, mma_tiler, tiled_mma, cluster_vmnk.shape
)
tma_b, gB = cute.nvgpu.make_tiled_tma_atom_B(
    load_op, b, b_stage_layout, mma_tiler, tiled_mma, cluster_vmnk.shape
)
pair_size = cute.size(tiled_mma.thr_id)  # 2
bytes_per_stage = (a_slot_bytes + b_slot_bytes) * pair_size  # what the leader's barrier counts
cta_tile_m = mma_tiler[0] // pair_size  # what one CTA holds and stores

# Device (@cute.kernel)
v = cute.arch.block_idx()[0] % pair_size
is_leader = v == 0
thr_mma = tiled_mma.get_slice(v)
if warp == MMA_WARP:
    while work.is_valid_tile:
        if is_leader:  # one instruction stream for the whole pair
            acc = acc_producer.acquire_and_advance()
            ...  # wait full, cute.gemm per k-block, release (tcgen05.commit to both CTAs)
            acc.commit()
        # both CTAs step the scheduler (and, with raw states, the accumulator state)
        sched.advance_to_next_work()
        work = sched.get_current_work()
# snippet:end
