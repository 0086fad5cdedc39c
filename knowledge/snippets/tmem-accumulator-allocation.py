"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/tmem-accumulator-allocation.md,
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
import cutlass.utils as utils
from cutlass.cute.nvgpu import tcgen05

# Host: columns from the staged accumulator fragment
acc_shape = tiled_mma.partition_shape_C(mma_tiler_mnk[:2])
acc_layout_only = tiled_mma.make_fragment_C(cute.append(acc_shape, ACC_STAGES))
tmem_cols = utils.get_num_tmem_alloc_cols(acc_layout_only)

# Device: shared storage has `tmem_addr: cutlass.Int32` (and `tmem_dealloc_bar: cutlass.Int64`
# for a CTA pair)
readers = pipeline.NamedBarrier(barrier_id=TMEM_BAR_ID, num_threads=32 * n_tmem_warps)
tmem = utils.TmemAllocator(
    storage.tmem_addr.ptr,
    barrier_for_retrieve=readers,
    allocator_warp_id=FIRST_EPILOGUE_WARP,
    is_two_cta=pair_size == 2,
    two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc_bar.ptr,
)
if warp < MMA_WARP:  # the epilogue warps own the allocation
    tmem.allocate(tmem_cols)
if warp <= MMA_WARP:  # every TMEM user, and only those
    tmem.wait_for_alloc()
    acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc_layout_only.layout)

# Epilogue warps, per tile: read sub-tiles of the buffer the MMA warp committed
full = acc_consumer.wait_and_advance()
tile_acc = cute.flat_divide(acc[((None, None), 0, 0, full.index)], epi_tile)
t2r = tcgen05.make_tmem_copy(
    cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), cutlass.Float32),
    tile_acc[(None, None, 0, 0)],
)
src = cute.group_modes(t2r.get_slice(tidx).partition_S(tile_acc), 3, 5)
regs = cute.make_rmem_tensor(src[(None, None, None, 0)].shape, cutlass.Float32)
for i in cutlass.range(cute.size(src, mode=[3])):
    cute.copy(t2r, src[(None, None, None, i)], regs)
    write_out(regs, i)  # convert, then SMEM + TMA store or a direct store
with cute.arch.elect_one():
    full.release()  # one arrival per warp

# End of kernel, epilogue warps, after the last store has drained
tmem.relinquish_alloc_permit()
tmem.free(acc.iterator)
# snippet:end
