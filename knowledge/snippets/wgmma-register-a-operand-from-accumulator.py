"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/wgmma-register-a-operand-from-accumulator.md,
kept as it stands in the entry until it is
made real code (compiled for sm_90a with fake tensors, and a check on the H200).
It is not imported or compiled: names it uses come from a surrounding kernel or harness
that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_90a"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import warpgroup


def make_chained_mmas(dtype, m, n1, n2):
    """First MMA: S = A1 x B1 (both SMEM). Second: O = P x B2 with P from registers."""
    K = warpgroup.OperandMajorMode.K
    MN = warpgroup.OperandMajorMode.MN
    mma1 = sm90_utils.make_trivial_tiled_mma(
        dtype, dtype, K, K, cutlass.Float32, (1, 1, 1), (m, n1)
    )
    mma2 = sm90_utils.make_trivial_tiled_mma(
        dtype, dtype, K, MN, cutlass.Float32, (1, 1, 1), (m, n2), warpgroup.OperandSource.RMEM
    )
    return mma1, mma2


@cute.jit
def acc_to_a_operand(acc_s: cute.Tensor, n1: cutlass.Constexpr, dtype: cutlass.Constexpr):
    """16-bit case: the m64n{n1} accumulator's registers, in order, are the A fragments
    of the n1/16 k-blocks of an m64k16 MMA. Returns (MMA=(2,2,2), MMA_M=1, MMA_K=n1/16)."""
    p = cute.make_rmem_tensor(cute.make_layout(((2, 2, 2), 1, n1 // 16)), dtype)
    p_as_acc = cute.make_tensor(p.iterator, cute.make_layout(acc_s.shape))  # same registers
    p_as_acc.store(acc_s.load().to(dtype))  # convert per register, no shuffles
    return p


# in the consumer warpgroup, after softmax on acc_s:
#   tOrP = acc_to_a_operand(acc_s, 64, cutlass.BFloat16)
#   warpgroup.fence()
#   mma2.set(warpgroup.Field.ACCUMULATE, True)
#   for k in cutlass.range_constexpr(cute.size(tOrP, mode=[2])):
#       cute.gemm(mma2, acc_o, tOrP[None, None, k], tOrV[None, None, k, stage], acc_o)
#   warpgroup.commit_group(); warpgroup.wait_group(0)
# snippet:end
