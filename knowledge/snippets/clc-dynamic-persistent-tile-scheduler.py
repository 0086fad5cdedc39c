"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/clc-dynamic-persistent-tile-scheduler.md,
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
import cutlass.utils as utils

# Host (inside the @cute.jit entry): every tile gets a CTA; no max_active_clusters argument.
params = utils.ClcDynamicPersistentTileSchedulerParams(tiles_mnl, (cm, cn, 1), 1, True)
grid = utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params)

# Device: shared storage needs `clc_bar: MemRange[Int64, 2]` and a 16-byte aligned
# `clc_resp: Align[MemRange[Int32, 4], 16]`.
readers_per_cta = 1 + 1 + n_epilogue_warps  # TMA warp, MMA warp, epilogue warps
clc = pipeline.PipelineClcFetchAsync.create(
    barrier_storage=storage.clc_bar.data_ptr(),
    num_stages=1,
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
    consumer_group=pipeline.CooperativeGroup(
        pipeline.Agent.Thread, 32 * (1 + cluster_size * readers_per_cta)
    ),  # + scheduler warp
    tx_count=16,
    cta_layout_vmnk=cluster_layout_vmnk,
    defer_sync=True,
)
sched = utils.ClcDynamicPersistentTileScheduler.create(
    params, cute.arch.block_idx(), cute.arch.grid_dim(), storage.clc_resp.data_ptr()
)
work = sched.initial_work_tile_info()
get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)

if warp_idx == SCHED_WARP and cta_rank_in_cluster == 0:
    put = pipeline.make_pipeline_state(pipeline.PipelineUserType.ProducerConsumer, 1)
    while work.is_valid_tile:
        clc.producer_acquire(put)
        sched.advance_to_next_work(clc.producer_get_barrier(put))  # elected thread queries
        put.advance()
        clc.consumer_wait(get)  # the scheduler reads the answer too
        work = sched.get_current_work()
        clc.consumer_release(get)
        get.advance()
    clc.producer_tail(put)

if warp_idx == ROLE_WARP:  # TMA, MMA and epilogue warps alike
    while work.is_valid_tile:
        do_role_work(work.tile_idx)
        clc.consumer_wait(get)
        work = sched.get_current_work()
        clc.consumer_release(get)
        get.advance()
# snippet:end
