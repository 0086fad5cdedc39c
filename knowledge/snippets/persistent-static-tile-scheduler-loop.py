"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/persistent-static-tile-scheduler-loop.md,
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
import cutlass.utils as utils
from cutlass.cute.nvgpu import tcgen05


def persistent_grid(c, cta_tile_mn, cluster_mn, max_active_clusters):
    """Host side, inside @cute.jit: the grid covers the machine, the params cover C."""
    tiles_mnl = cute.zipped_divide(c, tiler=cta_tile_mn)[(0, (None, None, None))].shape
    params = utils.PersistentTileSchedulerParams(tiles_mnl, (*cluster_mn, 1))
    grid = utils.StaticPersistentTileScheduler.get_grid_shape(params, max_active_clusters)
    return params, grid


# Device side (inside the @cute.kernel), after pipelines, SMEM and TMEM are set up.
sched = utils.StaticPersistentTileScheduler.create(
    params, cute.arch.block_idx(), cute.arch.grid_dim()
)
work = sched.initial_work_tile_info()

if warp_idx == LOAD_WARP:
    while work.is_valid_tile:
        tm, tn, tl = work.tile_idx
        a_tiles = tAgA[(None, tm // pair_size, None, tl)]  # the K-tiles of this output tile
        b_tiles = tBgB[(None, tn, None, tl)]
        ab_producer.reset()  # count restarts at 0; slot index and phase carry over
        for _ in cutlass.range(k_tiles, unroll=1):
            h = ab_producer.acquire_and_advance()
            cute.copy(tma_a, a_tiles[(None, h.count)], tAsA[(None, h.index)], tma_bar_ptr=h.barrier)
            cute.copy(tma_b, b_tiles[(None, h.count)], tBsB[(None, h.index)], tma_bar_ptr=h.barrier)
        sched.advance_to_next_work()
        work = sched.get_current_work()
    ab_producer.tail()  # do not exit while peers may still signal our barriers

elif warp_idx == MMA_WARP:
    while work.is_valid_tile:
        acc = acc_producer.acquire_and_advance()  # a free TMEM accumulator buffer
        tiled_mma.set(tcgen05.Field.ACCUMULATE, False)  # a new tile starts from zero
        ab_consumer.reset()
        for _ in cutlass.range(k_tiles, unroll=1):
            h = ab_consumer.wait_and_advance()
            mma_k_tile(acc_tmem[(None, None, None, acc.index)], slot=h.index)
            h.release()
        acc.commit()
        sched.advance_to_next_work()
        work = sched.get_current_work()
    acc_producer.tail()
# snippet:end
