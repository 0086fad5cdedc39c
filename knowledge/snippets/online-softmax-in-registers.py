"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/online-softmax-in-registers.md,
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


@cute.jit
def online_softmax_tile(
    s_mn: cute.Tensor,
    o_mn: cute.Tensor,
    row_max: cute.Tensor,
    row_sum: cute.Tensor,
    c: cutlass.Float32,
):
    """s_mn: this thread's (rows, cols) view of the S accumulator, masked entries already
    -inf; o_mn: the same rows of the O accumulator; c = softmax_scale * log2(e)."""
    for i in cutlass.range_constexpr(cute.size(s_mn, mode=[0])):
        mx = row_max[i]
        for j in cutlass.range_constexpr(cute.size(s_mn, mode=[1])):
            mx = cute.arch.fmax(mx, s_mn[i, j])
        mx = cute.arch.warp_reduction_max(mx, threads_in_group=4)  # the quad holding the row
        off = mx * c
        if mx == -cutlass.Float32.inf:
            off = cutlass.Float32(0.0)  # row has seen no key yet: p = exp2(-inf) = 0, not NaN
        corr = cute.math.exp2(row_max[i] * c - off, fastmath=True)
        row_max[i] = mx
        part = cutlass.Float32(0.0)
        for j in cutlass.range_constexpr(cute.size(s_mn, mode=[1])):
            p = cute.math.exp2(s_mn[i, j] * c - off, fastmath=True)
            s_mn[i, j] = p
            part += p
        row_sum[i] = row_sum[i] * corr + part  # this thread's columns only
        for j in cutlass.range_constexpr(cute.size(o_mn, mode=[1])):
            o_mn[i, j] = o_mn[i, j] * corr


@cute.jit
def finish_row(
    o_mn: cute.Tensor,
    row_max: cute.Tensor,
    row_sum: cute.Tensor,
    c: cutlass.Float32,
    lse: cute.Tensor,
):
    for i in cutlass.range_constexpr(cute.size(o_mn, mode=[0])):
        total = cute.arch.warp_reduction_sum(row_sum[i], threads_in_group=4)
        inv = cutlass.Float32(0.0)
        val = -cutlass.Float32.inf  # defined LSE of a row with no key
        if total > 0.0:
            inv = 1.0 / total
            val = (row_max[i] * c + cute.math.log2(total)) * 0.6931471805599453
        for j in cutlass.range_constexpr(cute.size(o_mn, mode=[1])):
            o_mn[i, j] = o_mn[i, j] * inv
        lse[i] = val


# snippet:end
