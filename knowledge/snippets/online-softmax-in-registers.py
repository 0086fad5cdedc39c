"""Online softmax in registers: a one-CTA attention forward (sm_90a, one warpgroup) over
K tiles of 64 keys: S = Q K^T by WGMMA, a per-row key window [lo, hi) masked to -inf, the online
softmax below on the accumulator in place (row max across the quad, log2 domain, rescale of
the running sum and of O), P = bf16(S) from the registers into O += P V, then the final
normalisation and the LSE. Row 0 sees no key at all (O = 0, LSE = -inf); row 1's first K tile
is fully masked and later ones are not (the -inf guard keeps it NaN-free). check() compares O
and LSE with torch.

Shown in knowledge/languages/cute-dsl/optimizations/online-softmax-in-registers.md.
"""

import math

import cutlass
import cutlass.cute as cute

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_hopper_tile")
chain = sibling(__file__, "wgmma-register-a-operand-from-accumulator")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

M, D, DV, BN = 64, 64, 64, 64  # query rows, QK depth, V columns, keys per K tile
T = 192  # keys: three K tiles
THREADS = 128  # one warpgroup
LOG2_E = math.log2(math.e)


# snippet:begin
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


@cute.jit
def attention_fwd(q, k, v, lo, hi, o, lse, scale_log2: cutlass.Float32, stream):
    """q (M, D), k (T, D), v (T, DV) bf16; lo, hi (M,) int32: row i sees keys [lo_i, hi_i);
    o (M, DV) fp32, lse (M,) fp32 (natural log)."""
    dt = q.element_type
    mma1, mma2 = chain.make_chained_mmas(dt, M, BN, DV)
    q_l, k_l, vt_l, Storage = tile.chain_smem(dt, M, BN, D, DV)

    attn_kernel(q, k, v, lo, hi, o, lse, scale_log2, mma1, mma2, q_l, k_l, vt_l, Storage).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def attn_kernel(
    mQ: cute.Tensor,
    mK: cute.Tensor,
    mV: cute.Tensor,
    mLo: cute.Tensor,
    mHi: cute.Tensor,
    mO: cute.Tensor,
    mLse: cute.Tensor,
    c: cutlass.Float32,
    mma1: cute.TiledMma,
    mma2: cute.TiledMma,
    q_l: cute.ComposedLayout,
    k_l: cute.ComposedLayout,
    vt_l: cute.ComposedLayout,
    storage_t: cutlass.Constexpr,
):
    from cutlass.cute.nvgpu import warpgroup

    tidx, _, _ = cute.arch.thread_idx()
    dt = mQ.element_type
    sQ, sK, sVt = tile.chain_smem_tensors(storage_t, q_l, k_l, vt_l)
    sK, sVt = sK[None, None, 0], sVt[None, None, 0]  # one key tile at a time
    tile.copy_tile_g2s(mQ, sQ, tidx, THREADS)

    thr1 = mma1.get_slice(tidx)
    thr2 = mma2.get_slice(tidx)
    tSrQ = thr1.make_fragment_A(thr1.partition_A(sQ))
    tSrK = thr1.make_fragment_B(thr1.partition_B(sK))
    tOrV = thr2.make_fragment_B(thr2.partition_B(sVt))
    acc_s = thr1.make_fragment_C(thr1.partition_shape_C((M, BN)))
    acc_o = thr2.make_fragment_C(thr2.partition_shape_C((M, DV)))
    acc_o.fill(0.0)
    s_mn = tile.mn_view(acc_s)
    o_mn = tile.mn_view(acc_o)
    tScS = tile.mn_view(thr1.partition_C(cute.make_identity_tensor((M, BN))))
    tOcO = tile.mn_view(thr2.partition_C(cute.make_identity_tensor((M, DV))))

    n_rows = cute.size(s_mn, mode=[0])  # 2 rows per thread
    row_max = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
    row_sum = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
    lse = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
    for i in cutlass.range_constexpr(n_rows):
        row_max[i] = -cutlass.Float32.inf
        row_sum[i] = 0.0

    n_tiles = cute.size(mK, mode=[0]) // BN
    for t in cutlass.range(n_tiles, unroll=1):
        cute.arch.sync_threads()  # every warp is done with the previous tile's SMEM
        gK = cute.local_tile(mK, (BN, D), (t, 0))
        gV = cute.local_tile(mV, (BN, DV), (t, 0))
        gVt = cute.make_tensor(gV.iterator, cute.make_layout((DV, BN), stride=(1, DV)))
        tile.copy_tile_g2s(gK, sK, tidx, THREADS)
        tile.copy_tile_g2s(gVt, sVt, tidx, THREADS)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_threads()

        mma1.set(warpgroup.Field.ACCUMULATE, False)
        warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
            cute.gemm(mma1, acc_s, tSrQ[None, None, kb], tSrK[None, None, kb], acc_s)
            mma1.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.commit_group()
        warpgroup.wait_group(0)

        for i in cutlass.range_constexpr(n_rows):  # mask: keys outside [lo, hi) -> -inf
            row = tScS[i, 0][0]
            lo_r = mLo[row]
            hi_r = mHi[row]
            for j in cutlass.range_constexpr(cute.size(s_mn, mode=[1])):
                key = t * BN + tScS[i, j][1]
                if key < lo_r or key >= hi_r:
                    s_mn[i, j] = -cutlass.Float32.inf

        online_softmax_tile(s_mn, o_mn, row_max, row_sum, c)

        tOrP = chain.acc_to_a_operand(acc_s, BN, dt)
        warpgroup.fence()
        mma2.set(warpgroup.Field.ACCUMULATE, True)  # O accumulates over the K tiles
        for kb in cutlass.range_constexpr(cute.size(tOrP, mode=[2])):
            cute.gemm(mma2, acc_o, tOrP[None, None, kb], tOrV[None, None, kb], acc_o)
        warpgroup.commit_group()
        warpgroup.wait_group(0)

    finish_row(o_mn, row_max, row_sum, c, lse)
    for i in cutlass.range_constexpr(n_rows):
        row = tOcO[i, 0][0]
        for j in cutlass.range_constexpr(cute.size(o_mn, mode=[1])):
            mO[row, tOcO[i, j][1]] = o_mn[i, j]
        if tOcO[i, 0][1] == 0:  # one thread of the quad writes the row's LSE
            mLse[row] = lse[i]


def _fake_args():
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    bf, f32 = cutlass.BFloat16, cutlass.Float32

    def vec(dt):
        return make_fake_compact_tensor(dt, (M,), assumed_align=16)

    mats = (tile.fake_matrix(bf, M, D), tile.fake_matrix(bf, T, D), tile.fake_matrix(bf, T, DV))
    return (
        *mats,
        vec(cutlass.Int32),
        vec(cutlass.Int32),
        tile.fake_matrix(f32, M, DV),
        vec(f32),
        1.0,
        make_fake_stream(),
    )


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    cute.compile(attention_fwd, *_fake_args())
    return f"one-CTA attention, {T // BN} K tiles, online softmax with -inf guards"


def check():
    """H200: O and LSE against torch, with an empty row and a row whose first tile is masked."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    q = torch.randn(M, D, device="cuda").bfloat16()
    k = torch.randn(T, D, device="cuda").bfloat16()
    v = torch.randn(T, DV, device="cuda").bfloat16()
    lo = torch.randint(0, T // 2, (M,), device="cuda", dtype=torch.int32)
    hi = torch.randint(T // 2 + 1, T + 1, (M,), device="cuda", dtype=torch.int32)
    lo[0], hi[0] = 0, 0  # no key at all
    lo[1], hi[1] = 70, 150  # first K tile fully masked, the next two not
    o = torch.full((M, DV), float("nan"), device="cuda")
    lse = torch.full((M,), float("nan"), device="cuda")
    scale = D**-0.5
    args = [tile.cute_view(x) for x in (q, k, v, lo, hi, o, lse)]
    stream = current_stream()
    f = cute.compile(attention_fwd, *args, scale * LOG2_E, stream)
    f(*args, scale * LOG2_E, stream)
    torch.cuda.synchronize()

    keys = torch.arange(T, device="cuda")
    visible = (keys[None, :] >= lo[:, None]) & (keys[None, :] < hi[:, None])
    s = (q.float() @ k.float().t()) * scale
    s = s.masked_fill(~visible, float("-inf"))
    ref_lse = torch.logsumexp(s, dim=1)  # -inf for the empty row
    p = torch.exp(s - ref_lse[:, None]).nan_to_num(0.0)
    ref_o = p @ v.float()
    assert torch.isfinite(o).all(), "NaN or inf in O"
    err_o = (o - ref_o).abs().max().item()
    assert err_o < 3e-2, f"O max abs error {err_o}"
    assert o[0].abs().max().item() == 0.0 and lse[0].item() == float("-inf"), "empty row"
    err_l = (lse[1:] - ref_lse[1:]).abs().max().item()
    assert err_l < 1e-2, f"LSE max abs error {err_l}"
    return f"{T // BN} K tiles, O max abs error {err_o:.3g}, LSE {err_l:.3g}; empty row 0, -inf"
