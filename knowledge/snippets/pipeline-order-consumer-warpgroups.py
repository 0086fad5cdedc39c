"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/pipeline-order-consumer-warpgroups.md,
kept as it stands in the entry until it is
made real code (compiled for sm_90a with fake tensors, and a check on the H200).
It is not imported or compiled: names it uses come from a surrounding kernel or harness
that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_90a"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import cutlass.cute as cute
import cutlass.pipeline as pipeline


def make_order(storage_ptr, consumer_wg: int, num_consumer_wgs: int = 2):
    # consumer_wg: 0 for the first consumer warpgroup, 1 for the second, ...
    return pipeline.PipelineOrder.create(
        barrier_storage=storage_ptr,  # num_consumer_wgs Int64 slots in the shared struct
        depth=1,
        length=num_consumer_wgs,
        group_id=consumer_wg,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128),
        defer_sync=True,  # one fence + CTA barrier after all pipelines are created
    )


@cute.jit
def consumer_tile(order, issue_first_mma, mainloop, store_tile, wg_barrier_id: int):
    order.wait()  # my turn to issue
    issue_first_mma()  # fence, gemm k-blocks, commit_group
    order.arrive()  # the other warpgroup may issue its first MMA now
    mainloop()  # no ordering inside the loop
    order.wait()  # my turn for the epilogue
    store_tile(wg_barrier_id)
    order.arrive()


@cute.jit
def store_subtile(
    copy_r2s,
    regs,
    smem,
    tma_atom,
    s_part,
    g_part,
    store_pipe,
    wg_barrier_id: int,
    is_store_warp: bool,
):
    cute.copy(copy_r2s, regs, smem)
    cute.arch.fence_proxy("async.shared", space="cta")  # generic writes -> TMA reads
    pipeline.arrive_and_wait(barrier_id=wg_barrier_id, num_threads=128)  # this warpgroup only
    if is_store_warp:
        cute.copy(tma_atom, s_part, g_part)
        store_pipe.producer_commit()
        store_pipe.producer_acquire()  # buffer free again before anyone rewrites it
    pipeline.arrive_and_wait(barrier_id=wg_barrier_id, num_threads=128)


# snippet:end
