"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/warp-specialized-tma-mma-epilogue-roles.md,
kept as it stands in the entry until it is
made real code (a kernel that compiles for sm_100a with fake tensors).
It is not imported or compiled: names such as the pipelines, tensors and roles come from a
surrounding kernel that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_100a"
PENDING = "a fragment: its surrounding tcgen05 kernel is not written yet"

# snippet:begin
import cutlass.cute as cute
import cutlass.pipeline as pipeline

EPI_WARPS, MMA_WARP, TMA_WARP = (0, 1, 2, 3), 4, 5  # epilogue warps first: TMEM lane quarters
THREADS = 32 * (len(EPI_WARPS) + 2)


# inside the @cute.kernel
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
T = pipeline.CooperativeGroup(pipeline.Agent.Thread)

ab_prod, ab_cons = pipeline.PipelineTmaUmma.create(
    barrier_storage=storage.ab_bars.data_ptr(),
    num_stages=AB_STAGES,
    producer_group=T,
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, mcast_a + mcast_b - 1),
    tx_count=ab_bytes_per_stage * pair_size,
    cta_layout_vmnk=cluster_vmnk,
    defer_sync=True,
).make_participants()
acc_prod, acc_cons = pipeline.PipelineUmmaAsync.create(
    barrier_storage=storage.acc_bars.data_ptr(),
    num_stages=ACC_STAGES,
    producer_group=T,
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, len(EPI_WARPS) * pair_size),
    cta_layout_vmnk=cluster_vmnk,
    defer_sync=True,
).make_participants()
# the TMEM address is shared only by the roles that read TMEM
tmem_bar = pipeline.NamedBarrier(barrier_id=2, num_threads=32 * (1 + len(EPI_WARPS)))

if warp == TMA_WARP:
    run_tile_loop(load_role, ab_prod)  # acquire, copy A and B, per K-tile
    ab_prod.tail()
elif warp == MMA_WARP:
    run_tile_loop(mma_role, ab_cons, acc_prod)  # wait, gemm, release; commit per tile
    acc_prod.tail()
elif warp < MMA_WARP:
    run_tile_loop(epilogue_role, acc_cons)  # tcgen05.ld, convert, SMEM, TMA store
    store_pipe.producer_tail()
# snippet:end
