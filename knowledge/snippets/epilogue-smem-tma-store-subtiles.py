"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/epilogue-smem-tma-store-subtiles.md,
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
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync

EPI_STAGES = 2

# Host (@cute.jit)
epi_layout = sm100_utils.make_smem_layout_epi(c.element_type, c_layout_kind, epi_tile, EPI_STAGES)
tma_c, gC_tma = cpasync.make_tiled_tma_atom(
    cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(epi_layout, (None, None, 0)), epi_tile
)

# Device (@cute.kernel), epilogue threads only
store_pipe = pipeline.PipelineTmaStore.create(
    num_stages=EPI_STAGES,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, n_epi_threads),
)
epi_bar = pipeline.NamedBarrier(barrier_id=EPI_BAR_ID, num_threads=n_epi_threads)
s_part, g_part = cpasync.tma_partition(
    tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), cute.group_modes(gC_sub, 0, 2)
)
g_tile = cute.group_modes(g_part[(None, None, None, *tile_mn)], 1, cute.rank(g_part) - 2)
for i in cutlass.range(n_subtiles):
    acc_regs = load_subtile(i)  # TMEM or register accumulators
    out_regs.store(epilogue_op(acc_regs.load().to(c.element_type)))
    buf = i % EPI_STAGES
    cute.copy(r2s_copy, out_regs, r2s_dst[(None, None, None, buf)])
    cute.arch.fence_proxy("async.shared", space="cta")  # SMEM writes -> async proxy
    epi_bar.arrive_and_wait()  # everyone has written
    if warp == STORE_WARP:
        cute.copy(tma_c, s_part[(None, buf)], g_tile[(None, i)])
        store_pipe.producer_commit()
        store_pipe.producer_acquire()  # next buffer's old store is done
    epi_bar.arrive_and_wait()  # nobody rewrites buf too early
store_pipe.producer_tail()  # before SMEM/TMEM are released
# snippet:end
