"""Mask attention scores only on the key tiles that reach past the lowest key limit of the
rows a CTA holds, behind one branch per tile that is the same in every thread.

A small decode-shaped kernel (generic SM, no MMA): one CTA per sequence, one thread per query
row (s * h rows, row = query position * h + head), reading precomputed scores S (b, s * h,
t_pad) one tile of PAGE keys at a time and folding each tile into the row's log-sum-exp (the
part of an attention softmax that the mask feeds). Each row's key limit is the sequence's end,
or with causal s > 1 its end less (s - 1 - query position); the lowest of them, row 0's, is
computed once per sequence. TAIL_ONLY = False builds the form it replaces, the compare and
select on every element of every tile. check() runs both against torch (scores past each
row's limit are set to a large value, so a missing mask shows) and asserts that the two
builds give bit-identical results, empty sequences and sequences shorter than s included.
This body is small enough that ptxas (sm_90a) if-converts the branch into predicated selects
(`@P FSEL`): the SASS shows the same BRA and FSEL counts for both builds. It shows the DSL form
and its correctness; whether the branch survives is a property of the real kernel's SASS.

Shown in knowledge/languages/cute-dsl/optimizations/mask-attention-scores-only-on-tail-tiles.md.
"""

import cutlass
import cutlass.cute as cute

SM = "generic"
EXPECT = "pass"
TIMEOUT_S = 240

PAGE = 16  # keys per tile (the MLA decode's page is 64; 16 keeps this register tile small)
NEG_INF = float("-inf")


# snippet:begin
@cute.kernel
def tile_lse_kernel(
    mS: cute.Tensor,  # (b, s * h, t_pad) fp32 scores, t_pad a multiple of PAGE
    mLens: cute.Tensor,  # (b,) int32 sequence lengths
    mLse: cute.Tensor,  # (b, s * h) fp32 out: log-sum-exp over each row's allowed keys
    s: cutlass.Constexpr,
    h: cutlass.Constexpr,
    causal: cutlass.Constexpr,
    tail_only: cutlass.Constexpr,  # the build flag: False = mask every tile
):
    row, _, _ = cute.arch.thread_idx()
    seq, _, _ = cute.arch.block_idx()
    seqlen = mLens[seq]
    # each row's own limit, and ONCE per sequence the lowest limit of all rows (row 0's):
    # a tile that ends at or below it holds no key that any row masks
    limit = seqlen
    lim_lo = seqlen
    if cutlass.const_expr(causal and s > 1):
        limit = cutlass.min(seqlen - s + row // h + 1, seqlen)
        lim_lo = seqlen - s + 1
    m = cutlass.Float32(NEG_INF)
    lsum = cutlass.Float32(0.0)
    x = cute.make_rmem_tensor(cute.make_layout(PAGE), cutlass.Float32)
    for pg in cutlass.range((seqlen + PAGE - 1) // PAGE, unroll=1):
        for j in cutlass.range_constexpr(PAGE):
            x[j] = mS[seq, row, pg * PAGE + j]
        needs_mask = True  # trace time: the mask-everywhere build keeps no branch at all
        if cutlass.const_expr(tail_only):
            needs_mask = (pg + 1) * PAGE > lim_lo  # one compare per tile, same in every thread
        if needs_mask:  # run time, warp-uniform: no divergence, skipped on full tiles
            for j in cutlass.range_constexpr(PAGE):
                if pg * PAGE + j >= limit:
                    x[j] = NEG_INF
        # the tile's row max and exponentials, folded into the running (max, sum)
        mx = x[0]
        for j in cutlass.range_constexpr(1, PAGE):
            mx = cute.arch.fmax(mx, x[j])
        m_new = cute.arch.fmax(m, mx)
        base = m_new
        if base == NEG_INF:
            base = cutlass.Float32(0.0)  # no key seen yet: exp(-inf) = 0, never NaN
        part = cutlass.Float32(0.0)
        for j in cutlass.range_constexpr(PAGE):
            part += cute.math.exp(x[j] - base)
        lsum = lsum * cute.math.exp(m - base) + part
        m = m_new
    mLse[seq, row] = cute.math.log(lsum) + m  # -inf for a row with no allowed key


# snippet:end


@cute.jit
def tile_lse(
    S: cute.Tensor,
    lens: cute.Tensor,
    lse: cute.Tensor,
    s: cutlass.Constexpr,
    h: cutlass.Constexpr,
    causal: cutlass.Constexpr,
    tail_only: cutlass.Constexpr,
    stream,
):
    tile_lse_kernel(S, lens, lse, s, h, causal, tail_only).launch(
        grid=[cute.size(lens), 1, 1], block=[s * h, 1, 1], stream=stream
    )


def _fake_args():
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    b, rows, t = cute.sym_int(), cute.sym_int(), cute.sym_int()
    S = make_fake_tensor(cutlass.Float32, (b, rows, t), (cute.sym_int(), t, 1), assumed_align=16)
    lens = make_fake_tensor(cutlass.Int32, (b,), (1,), assumed_align=4)
    lse = make_fake_tensor(cutlass.Float32, (b, rows), (rows, 1), assumed_align=4)
    return S, lens, lse, make_fake_stream()


def compile_snippet():
    """CPU: both builds, causal s = 2 and plain s = 1, from fake tensors."""
    S, lens, lse, stream = _fake_args()
    for s, h, causal in ((2, 16, True), (1, 32, False)):
        for tail_only in (True, False):
            cute.compile(tile_lse, S, lens, lse, s, h, causal, tail_only, stream)
    return "tail-only and mask-everywhere builds, causal s=2 and s=1"


def _reference(S, lens, s, h, causal):
    import torch

    b, rows, t_pad = S.shape
    key = torch.arange(t_pad, device=S.device)
    q = torch.arange(rows, device=S.device) // h
    n = lens.to(torch.int64)[:, None]  # (b, 1)
    limit = (n - s + q[None, :] + 1).clamp(max=n) if causal and s > 1 else n.expand(b, rows)
    allowed = key[None, None, :] < limit[:, :, None]
    return torch.where(allowed, S, torch.full_like(S, NEG_INF)).logsumexp(dim=-1)


def check():
    """GPU: both builds against torch; the two builds bit-identical to each other."""
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    lens_list = [0, 1, 2, 15, 16, 17, 64, 100, 129]  # empty, shorter than s, on and off tiles
    t_pad = (max(lens_list) + PAGE - 1) // PAGE * PAGE
    out = []
    for s, h, causal in ((1, 32, False), (2, 16, True), (3, 8, True), (2, 16, False)):
        rows = s * h
        S = torch.randn(len(lens_list), rows, t_pad, device="cuda")
        lens = torch.tensor(lens_list, dtype=torch.int32, device="cuda")
        key = torch.arange(t_pad, device="cuda")
        S = S.masked_fill(key[None, None, :] >= lens[:, None, None], 1.0e4)  # past the end
        ref = _reference(S, lens, s, h, causal)
        got = {}
        for tail_only in (True, False):
            lse = torch.full((len(lens_list), rows), float("nan"), device="cuda")
            args = [from_dlpack(S), from_dlpack(lens), from_dlpack(lse)]
            compiled = cute.compile(tile_lse, *args, s, h, causal, tail_only, current_stream())
            compiled(*args, current_stream())
            torch.cuda.synchronize()
            torch.testing.assert_close(lse, ref, rtol=1e-5, atol=1e-5, equal_nan=False)
            got[tail_only] = lse
        assert torch.equal(got[True], got[False]), (s, h, causal)
        out.append(f"s={s} h={h} causal={causal}")
    return "tail-only == mask-everywhere == torch at " + "; ".join(out)
