"""Split-KV with a combine kernel launched as a programmatic dependent, in miniature.

The attention-decode shape reduced to one value column: for every row r,
    out[r] = sum_j softmax(x[r, :])_j * v[r, j],   lse[r] = logsumexp(x[r, :]).
The n columns of a row ("keys") are cut into `num_splits` equal parts; one CTA (one warp) per
(row, split) writes its partial result, normalised by its own sum, and its log-sum-exp (base 2)
to an fp32 workspace. A second kernel, launched with `use_pdl=True`, waits on
`griddepcontrol_wait`, then merges the parts of each row with weights 2^(lse_i - max lse).
The split kernel executes `griddepcontrol_launch_dependents` before its epilogue, so the
combine's CTAs can be scheduled while the last split CTAs still write.

`num_splits` is a runtime Int32: one compile serves every split count up to the workspace's
first mode. Empty splits (more splits than columns) and fully masked rows (all -inf) give
lse_i = -inf and weight 0, never NaN. `choose_splits` is the host-side cost model (waves x
work per CTA, plus the combine) that picks the count.

Shown in knowledge/languages/cute-dsl/optimizations/split-kv-combine-with-dependent-launch.md.
"""

import math

import cutlass
import cutlass.cute as cute

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

LOG2_E = math.log2(math.e)
LN_2 = math.log(2.0)
COMBINE_ROWS = 4  # rows per combine CTA, one warp each

# snippet:begin
NEG_INF = -cutlass.Float32.inf


def choose_splits(ctas: int, work: int, sms: int, cap: int, overhead=2, combine=1) -> int:
    """Host: the split count s in 1..cap minimising waves(ctas * s) x (work / s + overhead),
    plus the combine's cost when s > 1 (work and costs in the same unit, e.g. KV pages)."""

    def cost(s):
        waves = -(-ctas * s // sms)
        return waves * (-(-work // s) + overhead) + (combine if s > 1 else 0)

    return min(range(1, cap + 1), key=lambda s: (cost(s), s))


@cute.kernel
def split_kernel(
    gX: cute.Tensor,  # (rows, n) scores
    gV: cute.Tensor,  # (rows, n) values
    gOacc: cute.Tensor,  # (cap, rows) fp32 partial out, normalised by the split's own sum
    gLacc: cute.Tensor,  # (cap, rows) fp32 partial lse, base 2
    num_splits: cutlass.Int32,
):
    lane, _, _ = cute.arch.thread_idx()
    row, sp, _ = cute.arch.block_idx()
    n = gX.shape[1]
    per = (n + num_splits - 1) // num_splits  # columns per split; the last ones may be empty
    lo = sp * per
    hi = cutlass.min(lo + per, n)
    # this split's max, then its sum and weighted sum (lane l takes columns lo + l, + 32, ...)
    mx = NEG_INF
    for j in cutlass.range(lo + lane, hi, 32, unroll=1):
        mx = cute.arch.fmax(mx, gX[row, j] * LOG2_E)
    mx = cute.arch.warp_reduction_max(mx)
    base = mx
    if mx == NEG_INF:
        base = cutlass.Float32(0.0)  # nothing visible: exp2(-inf - 0) = 0, never -inf - -inf
    s = cutlass.Float32(0.0)
    acc = cutlass.Float32(0.0)
    for j in cutlass.range(lo + lane, hi, 32, unroll=1):
        p = cute.math.exp2(gX[row, j] * LOG2_E - base, fastmath=True)
        s += p
        acc += p * gV[row, j]
    s = cute.arch.warp_reduction_sum(s)
    acc = cute.arch.warp_reduction_sum(acc)
    # the combine may be scheduled now; it reads the workspace only after its wait
    cute.arch.griddepcontrol_launch_dependents()
    if lane == 0:
        o = cutlass.Float32(0.0)
        lse = NEG_INF
        if s > 0.0:
            o = acc / s
            lse = base + cute.math.log2(s)
        gOacc[sp, row] = o
        gLacc[sp, row] = lse


@cute.kernel
def combine_kernel(
    gOacc: cute.Tensor,
    gLacc: cute.Tensor,
    gOut: cute.Tensor,  # (rows,) fp32
    gLse: cute.Tensor,  # (rows,) fp32, natural log
    num_splits: cutlass.Int32,
):
    tidx, _, _ = cute.arch.thread_idx()
    blk, _, _ = cute.arch.block_idx()
    lane = tidx % 32
    row = blk * COMBINE_ROWS + tidx // 32
    # prologue work that does not read the workspace would go here
    cute.arch.griddepcontrol_wait()  # the split grid has completed; its writes are visible
    if row < gOut.shape[0]:
        mx = NEG_INF
        for i in cutlass.range(lane, num_splits, 32, unroll=1):
            mx = cute.arch.fmax(mx, gLacc[i, row])
        mx = cute.arch.warp_reduction_max(mx)
        base = mx
        if mx == NEG_INF:
            base = cutlass.Float32(0.0)  # every split empty: all weights 0
        wsum = cutlass.Float32(0.0)
        acc = cutlass.Float32(0.0)
        for i in cutlass.range(lane, num_splits, 32, unroll=1):
            w = cute.math.exp2(gLacc[i, row] - base, fastmath=True)
            wsum += w
            acc += w * gOacc[i, row]
        wsum = cute.arch.warp_reduction_sum(wsum)
        acc = cute.arch.warp_reduction_sum(acc)
        if lane == 0:
            o = cutlass.Float32(0.0)
            lse = NEG_INF
            if wsum > 0.0:
                o = acc / wsum
                lse = (base + cute.math.log2(wsum)) * LN_2
            gOut[row] = o
            gLse[row] = lse


@cute.jit
def split_and_combine(x, v, o_acc, lse_acc, out, lse, num_splits: cutlass.Int32, stream):
    rows = x.shape[0]
    split_kernel(x, v, o_acc, lse_acc, num_splits).launch(
        grid=[rows, num_splits, 1], block=[32, 1, 1], stream=stream
    )
    combine_kernel(o_acc, lse_acc, out, lse, num_splits).launch(
        grid=[(rows + COMBINE_ROWS - 1) // COMBINE_ROWS, 1, 1],
        block=[32 * COMBINE_ROWS, 1, 1],
        stream=stream,
        use_pdl=True,  # may start before the split grid ends; griddepcontrol_wait orders it
    )


# snippet:end


def _fake_args():
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    rows, n, cap = cute.sym_int(), cute.sym_int(), cute.sym_int()

    def fake(shape):
        order = tuple(reversed(range(len(shape))))
        return make_fake_compact_tensor(cutlass.Float32, shape, stride_order=order)

    return (
        fake((rows, n)),
        fake((rows, n)),
        fake((cap, rows)),
        fake((cap, rows)),
        fake((rows,)),
        fake((rows,)),
        cutlass.Int32(2),
        make_fake_stream(),
    )


def compile_snippet():
    """CPU: the host cost model's choices, and one compile for SM with fake tensors."""
    # mla_decode_sm90's shapes (h = 128, s = 1: two 64-row tiles per sequence; 64-token pages):
    # (B, T) = (32, 4096), (32, 16384), (128, 4096), (4, 1024) -> 2, 2, 1, 16 splits
    assert choose_splits(ctas=64, work=64, sms=132, cap=4) == 2
    assert choose_splits(ctas=64, work=256, sms=132, cap=4) == 2
    assert choose_splits(ctas=256, work=64, sms=132, cap=1) == 1
    assert choose_splits(ctas=8, work=16, sms=132, cap=16) == 16
    cute.compile(split_and_combine, *_fake_args())
    return "split kernel + PDL combine compiled; choose_splits 2, 2, 1, 16"


def check():
    """GPU: against torch, for several split counts, with empty splits and a fully masked row."""
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    rows, n, cap = 37, 1000, 64
    x = torch.randn(rows, n, device="cuda") * 3
    x[5] = float("-inf")  # a row that sees no key
    x[6, 500:] = float("-inf")  # half its keys masked: some splits are empty
    v = torch.randn(rows, n, device="cuda")
    lse_ref = torch.logsumexp(x, dim=1)
    out_ref = torch.nan_to_num((torch.softmax(x, dim=1) * v).sum(dim=1), nan=0.0)
    o_acc = torch.full((cap, rows), float("nan"), device="cuda")
    lse_acc = torch.full((cap, rows), float("nan"), device="cuda")
    out = torch.empty(rows, device="cuda")
    lse = torch.empty(rows, device="cuda")
    stream = current_stream()
    ts = [from_dlpack(t, assumed_align=16) for t in (x, v, o_acc, lse_acc, out, lse)]
    f = cute.compile(split_and_combine, *ts, cutlass.Int32(1), stream)
    worst = 0.0
    for splits in (1, 2, 7, 32, 64):  # 64 splits of 16 columns: row 6's last 32 are empty
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        f(*ts, cutlass.Int32(splits), stream)
        torch.cuda.synchronize()
        assert torch.equal(torch.isinf(lse), torch.isinf(lse_ref)), f"splits={splits}: lse inf"
        fin = torch.isfinite(lse_ref)
        err_l = (lse[fin] - lse_ref[fin]).abs().max().item()
        err_o = (out - out_ref).abs().max().item()
        assert err_l < 1e-4 and err_o < 1e-4, f"splits={splits}: lse {err_l}, out {err_o}"
        assert out[5].item() == 0.0, "the masked row must give out 0"
        worst = max(worst, err_l, err_o)
    return f"splits 1, 2, 7, 32, 64 match torch (max abs error {worst:.2g}); masked row 0/-inf"
