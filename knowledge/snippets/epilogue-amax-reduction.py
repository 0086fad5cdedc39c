"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/epilogue-amax-reduction.md.
It is not imported or compiled: the TMEM-to-register copy, the epilogue sub-tile loop and the
shared storage come from a surrounding tcgen05 GEMM epilogue that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018

SM = "sm_100a"
PENDING = "a fragment: the surrounding tcgen05 GEMM epilogue (sm_100a) is not written here yet"

# snippet:begin
import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import math as mlir_math

# Shared storage: one fp32 slot per epilogue warp (16 bytes for 4 warps), taken from the
# SMEM budget before the A/B stages are counted.
thread_amax = cutlass.Float32(0.0)
for sub in cutlass.range(n_subtiles):
    cute.copy(t2r, tAcc[(None, None, None, sub)], rAcc)  # TMEM -> registers, as for the store
    v = rAcc.load()
    a = type(v)(mlir_math.absf(v.ir_value()), v.shape, v.dtype)
    thread_amax = cute.arch.fmax(
        thread_amax, a.reduce(cute.ReductionOp.MAX, cutlass.Float32(0.0), 0)
    )
    store_subtile(v)  # convert, SMEM, TMA store: unchanged
warp_amax = cute.arch.warp_redux_sync(
    value=thread_amax, kind="fmax", mask_and_clamp=0xFFFFFFFF, nan=True
)
if cute.arch.lane_idx() == 0:
    sAmax[epi_warp] = warp_amax
epilogue_barrier.arrive_and_wait()
if epi_warp == 0 and cute.arch.lane_idx() == 0:
    tile_amax = cutlass.Float32(0.0)
    for w in cutlass.range(n_epi_warps):
        tile_amax = cute.arch.fmax(tile_amax, sAmax[w])
    cute.arch.atomic_fmax(gAmax.iterator, tile_amax, sign_bit=False)  # one atomic per tile
# The host must reset the amax before every launch (every tile only raises it): the example
# writes -inf; for absolute values 0 serves as well.
# snippet:end
