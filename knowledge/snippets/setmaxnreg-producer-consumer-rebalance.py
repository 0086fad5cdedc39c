"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/setmaxnreg-producer-consumer-rebalance.md,
kept as it stands in the entry until it is
made real code (a kernel that compiles for sm_90a with fake tensors, and a check on the H200).
It is not imported or compiled: names such as the pipelines, tensors and roles come from a
surrounding kernel that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_90a"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import cutlass.cute as cute

WG = 128  # threads per warpgroup
N_LOAD_WG, N_MMA_WG = 1, 2  # one TMA warpgroup, two wgmma warpgroups
LOAD_REGS, MMA_REGS = 40, 232
# launch allocation per thread: 65536 // (WG * (N_LOAD_WG + N_MMA_WG)) // 8 * 8 = 168
assert WG * (N_LOAD_WG * LOAD_REGS + N_MMA_WG * MMA_REGS) <= 65536

# inside the @cute.kernel, after pipeline_init_wait(...)
wg = cute.arch.make_warp_uniform(cute.arch.thread_idx()[0] // WG)
if wg < N_LOAD_WG:
    cute.arch.setmaxregister_decrease(LOAD_REGS)
    if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == 0:
        producer_tile_loop()  # TMA only: a handful of registers
else:
    cute.arch.setmaxregister_increase(MMA_REGS)
    consumer_tile_loop()  # wgmma accumulators, epilogue
# snippet:end
