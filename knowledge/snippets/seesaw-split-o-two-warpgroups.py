"""The seesaw schedule: one O split by columns between two warpgroups (sm_90a).

Attention of one 64-row Q tile over N_PAGES pages of 64 keys. O (64 x DV, fp32) is split by
columns: warpgroup 0 holds O_L (columns 0..DV/2), warpgroup 1 O_R. Pages come in pairs; in
each pair warpgroup 0 computes S of page 2i alone and warpgroup 1 S of page 2i+1 alone, and
the running row max is handed 0 -> 1 through SMEM and named barriers. Each warpgroup updates
its O half with its own page's P straight from registers (RS WGMMA) and with the other page's
P from SMEM (SS WGMMA), so one warpgroup's softmax runs while the other's WGMMAs do.

The kernel here is the schedule alone (no paging, no pipeline: Q, K and V^T are copied to SMEM
once), so check() can compare O with torch; mla_decode_sm90's seesaw.py adds the per-chunk
TMA page loads, the NaN-tail zeroing, split-KV and the MLA SMEM plan (P over the rope chunk).

Shown in knowledge/languages/cute-dsl/optimizations/seesaw-split-o-two-warpgroups.md.
"""

import math

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
from cutlass.tensor_utils import LayoutEnum

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_hopper_tile")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 180

TILE_M, PAGE, D, DV = 64, 64, 64, 128  # Q rows, keys per page, QK depth, V columns
N_PAGES = 4  # even: two pairs
HALF = DV // 2
WG = 128
THREADS = 2 * WG
BAR_M0, BAR_M1, BAR_P0, BAR_P1 = 1, 2, 3, 4  # named barriers (0 is the CTA barrier)
NEG_INF = -math.inf


# snippet:begin
@cute.jit
def seesaw_pair(
    it, wg, lane, scale_log2, thr_qk,
    qk_mma, pv_rs, pv_ss, tSrQ, tSrK, tOrV, tOrVs, tOrPs, tPsP, tScS,
    acc_o_mn, acc_o, row_max, row_sum, sM0, sM1,
):  # fmt: skip
    """One pair of pages: WG0 owns page 2*it (S0, P0), WG1 page 2*it + 1 (S1, P1).
    row_max: the running max (log2 domain); row_sum: the sum of this WG's own P's."""
    own = 2 * it + wg
    n_rows = cute.size(tScS, mode=[0])
    n_cols = cute.size(tScS, mode=[1])
    acc_s = thr_qk.make_fragment_C(thr_qk.partition_shape_C((TILE_M, PAGE)))
    s_mn = tile.mn_view(acc_s)
    warpgroup.fence()
    for k in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):  # S_own = Q K_own^T
        qk_mma.set(warpgroup.Field.ACCUMULATE, k != 0)
        cute.gemm(qk_mma, acc_s, tSrQ[None, None, k], tSrK[None, None, k, own], acc_s)
    warpgroup.commit_group()
    warpgroup.wait_group(0)

    mloc = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
    for i in cutlass.range_constexpr(n_rows):
        mx = cutlass.Float32(NEG_INF)
        for j in cutlass.range_constexpr(n_cols):
            mx = cute.arch.fmax(mx, s_mn[i, j])
        mloc[i] = cute.arch.warp_reduction_max(mx, threads_in_group=4) * scale_log2
    sc_a = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
    if wg == 0:  # m0 = max(m, rowmax S0), published at once: WG0 leads the pair
        for i in cutlass.range_constexpr(n_rows):
            m_new = cute.arch.fmax(row_max[i], mloc[i])
            sc_a[i] = cute.math.exp2(row_max[i] - m_new, fastmath=True)
            row_max[i] = m_new
            if lane % 4 == 0:
                sM0[tScS[i, 0][0]] = m_new
        cute.arch.barrier_arrive(barrier_id=BAR_M0, number_of_threads=THREADS)
    else:  # wait for m0; m1 = max(m0, rowmax S1), published
        cute.arch.barrier(barrier_id=BAR_M0, number_of_threads=THREADS)
        for i in cutlass.range_constexpr(n_rows):
            m_new = cute.arch.fmax(sM0[tScS[i, 0][0]], mloc[i])
            sc_a[i] = cute.math.exp2(row_max[i] - m_new, fastmath=True)  # = sc0 * sc1
            row_max[i] = m_new
            if lane % 4 == 0:
                sM1[tScS[i, 0][0]] = m_new
        cute.arch.barrier_arrive(barrier_id=BAR_M1, number_of_threads=THREADS)

    # P_own = exp2(S_own - m); this WG's O half and row sum rescaled to m
    for i in cutlass.range_constexpr(n_rows):
        part = cutlass.Float32(0.0)
        for j in cutlass.range_constexpr(n_cols):
            p = cute.math.exp2(s_mn[i, j] * scale_log2 - row_max[i], fastmath=True)
            s_mn[i, j] = p
            part += p
        row_sum[i] = row_sum[i] * sc_a[i] + part
        for j in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[1])):
            acc_o_mn[i, j] = acc_o_mn[i, j] * sc_a[i]
    rP = acc_to_a(acc_s)  # the accumulator's registers are P's A fragments

    # O_half += P_own V_own,half: P from registers
    warpgroup.fence()
    for k in cutlass.range_constexpr(PAGE // 16):
        pv_rs.set(warpgroup.Field.ACCUMULATE, True)
        cute.gemm(pv_rs, acc_o, rP[None, None, k], tOrV[None, None, k, own], acc_o)
    warpgroup.commit_group()

    if wg == 0:
        # WG1 may have raised the max: P0 *= exp2(m0 - m1) before it goes to SMEM
        cute.arch.barrier(barrier_id=BAR_M1, number_of_threads=THREADS)
        sc_b = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        for i in cutlass.range_constexpr(n_rows):
            m1 = sM1[tScS[i, 0][0]]
            sc_b[i] = cute.math.exp2(row_max[i] - m1, fastmath=True)
            row_max[i] = m1
            for j in cutlass.range_constexpr(n_cols):
                s_mn[i, j] = s_mn[i, j] * sc_b[i]
        store_p(acc_s, tPsP[0])
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.barrier_arrive(barrier_id=BAR_P0, number_of_threads=THREADS)
        warpgroup.wait_group(0)  # PV of page 0 done: O_L may now be rescaled to m1
        for i in cutlass.range_constexpr(n_rows):
            row_sum[i] = row_sum[i] * sc_b[i]
            for j in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[1])):
                acc_o_mn[i, j] = acc_o_mn[i, j] * sc_b[i]
        # O_L += P1 V1,L: P1 from SMEM
        cute.arch.barrier(barrier_id=BAR_P1, number_of_threads=THREADS)
        warpgroup.fence()
        for k in cutlass.range_constexpr(PAGE // 16):
            pv_ss.set(warpgroup.Field.ACCUMULATE, True)
            cute.gemm(pv_ss, acc_o, tOrPs[1][None, None, k], tOrVs[None, None, k, 2 * it + 1],
                      acc_o)  # fmt: skip
        warpgroup.commit_group()
    else:
        store_p(acc_s, tPsP[1])  # already relative to m1
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.barrier_arrive(barrier_id=BAR_P1, number_of_threads=THREADS)
        # O_R += P0 V0,R: P0 from SMEM
        cute.arch.barrier(barrier_id=BAR_P0, number_of_threads=THREADS)
        warpgroup.fence()
        for k in cutlass.range_constexpr(PAGE // 16):
            pv_ss.set(warpgroup.Field.ACCUMULATE, True)
            cute.gemm(pv_ss, acc_o, tOrPs[0][None, None, k], tOrVs[None, None, k, 2 * it],
                      acc_o)  # fmt: skip
        warpgroup.commit_group()
    warpgroup.wait_group(0)


# snippet:end


@cute.jit
def acc_to_a(acc_s: cute.Tensor) -> cute.Tensor:
    """bf16 P as the RS WGMMA's A operand: the m64n64 accumulator's registers, in order, are
    the A fragments of four m64k16 k-blocks ((2, 2, 2), 1, 4)."""
    p = cute.make_rmem_tensor(cute.make_layout(((2, 2, 2), 1, PAGE // 16)), cutlass.BFloat16)
    p_as_acc = cute.make_tensor(p.iterator, cute.make_layout(acc_s.shape))
    p_as_acc.store(acc_s.load().to(cutlass.BFloat16))
    return p


@cute.jit
def store_p(acc_s: cute.Tensor, tPsP: cute.Tensor):
    """P (bf16) from the S accumulator's registers into its SMEM tile (S's thread layout)."""
    rP = cute.make_rmem_tensor(acc_s.layout, cutlass.BFloat16)
    rP.store(acc_s.load().to(cutlass.BFloat16))
    for e in cutlass.range_constexpr(cute.size(rP)):
        tPsP[e] = rP[e]


@cute.jit
def seesaw_attention(q: cute.Tensor, k: cute.Tensor, vt: cute.Tensor, o: cute.Tensor, stream):
    """q (64, D), k (N_PAGES*64, D), vt (DV, N_PAGES*64) bf16; o (64, DV) fp32 =
    softmax(q k^T / sqrt(D)) v."""
    dt = q.element_type
    K = OperandMajorMode.K
    qk_mma = sm90_utils.make_trivial_tiled_mma(dt, dt, K, K, cutlass.Float32, (1, 1, 1),
                                               (TILE_M, PAGE))  # fmt: skip
    rmem = warpgroup.OperandSource.RMEM  # the A operand (P) from registers
    pv_rs = sm90_utils.make_trivial_tiled_mma(dt, dt, K, K, cutlass.Float32, (1, 1, 1),
                                              (TILE_M, HALF), rmem)  # fmt: skip
    pv_ss = sm90_utils.make_trivial_tiled_mma(dt, dt, K, K, cutlass.Float32, (1, 1, 1),
                                              (TILE_M, HALF))  # fmt: skip
    rm = LayoutEnum.ROW_MAJOR
    q_l = sm90_utils.make_smem_layout_a(rm, (TILE_M, PAGE, D), dt, 1)
    k_l = sm90_utils.make_smem_layout_b(rm, (TILE_M, PAGE, D), dt, N_PAGES)
    vt_l = sm90_utils.make_smem_layout_b(rm, (TILE_M, DV, PAGE), dt, N_PAGES)
    p_l = sm90_utils.make_smem_layout_a(rm, (TILE_M, HALF, PAGE), dt, 2)

    @cute.struct
    class Storage:
        sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(q_l)], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(k_l)], 1024]
        sVt: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(vt_l)], 1024]
        sP: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(p_l)], 1024]
        sM0: cute.struct.MemRange[cutlass.Float32, TILE_M]
        sM1: cute.struct.MemRange[cutlass.Float32, TILE_M]
        sSum: cute.struct.MemRange[cutlass.Float32, TILE_M * 2]

    scale_log2 = cutlass.Float32(math.log2(math.e) / math.sqrt(D))
    seesaw_kernel(q, k, vt, o, qk_mma, pv_rs, pv_ss, q_l, k_l, vt_l, p_l, Storage,
                  scale_log2).launch(grid=[1, 1, 1], block=[THREADS, 1, 1],
                                     stream=stream)  # fmt: skip


@cute.kernel
def seesaw_kernel(
    mQ: cute.Tensor, mK: cute.Tensor, mVt: cute.Tensor, mO: cute.Tensor,
    qk_mma: cute.TiledMma, pv_rs: cute.TiledMma, pv_ss: cute.TiledMma,
    q_l: cute.ComposedLayout, k_l: cute.ComposedLayout, vt_l: cute.ComposedLayout,
    p_l: cute.ComposedLayout, storage_t: cutlass.Constexpr, scale_log2: cutlass.Float32,
):  # fmt: skip
    tidx, _, _ = cute.arch.thread_idx()
    wg = tidx // WG
    wg_tidx = tidx % WG
    lane = tidx % 32
    storage = cutlass.memory.SmemAllocator().allocate(storage_t)
    sQ = storage.sQ.get_tensor(q_l.outer, swizzle=q_l.inner)[None, None, 0]
    sK = storage.sK.get_tensor(k_l.outer, swizzle=k_l.inner)  # (PAGE, D, N_PAGES)
    sVt = storage.sVt.get_tensor(vt_l.outer, swizzle=vt_l.inner)  # (DV, PAGE, N_PAGES)
    sP = storage.sP.get_tensor(p_l.outer, swizzle=p_l.inner)  # (TILE_M, PAGE, 2)
    sM0 = storage.sM0.get_tensor(cute.make_layout(TILE_M))
    sM1 = storage.sM1.get_tensor(cute.make_layout(TILE_M))
    sSum = storage.sSum.get_tensor(cute.make_layout((TILE_M, 2)))

    tile.copy_tile_g2s(mQ, sQ, tidx, THREADS)
    for pg in cutlass.range_constexpr(N_PAGES):
        gK = cute.local_tile(mK, (PAGE, D), (pg, 0))
        gVt = cute.local_tile(mVt, (DV, PAGE), (0, pg))
        tile.copy_tile_g2s(gK, sK[None, None, pg], tidx, THREADS)
        tile.copy_tile_g2s(gVt, sVt[None, None, pg], tidx, THREADS)
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()

    thr_qk = qk_mma.get_slice(wg_tidx)
    tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ))
    tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK))
    tScS = tile.mn_view(thr_qk.partition_C(cute.make_identity_tensor((TILE_M, PAGE))))
    tPsP = [thr_qk.partition_C(sP[None, None, st]) for st in range(2)]
    thr_rs = pv_rs.get_slice(wg_tidx)
    thr_ss = pv_ss.get_slice(wg_tidx)
    sVt_wg = cute.local_tile(sVt, (HALF, PAGE, N_PAGES), (wg, 0, 0))  # this WG's V columns
    tOrV = thr_rs.make_fragment_B(thr_rs.partition_B(sVt_wg))
    tOrVs = thr_ss.make_fragment_B(thr_ss.partition_B(sVt_wg))
    tOrPs = [thr_ss.make_fragment_A(thr_ss.partition_A(sP[None, None, st])) for st in range(2)]
    acc_o = thr_rs.make_fragment_C(thr_rs.partition_shape_C((TILE_M, HALF)))
    acc_o.fill(0.0)
    acc_o_mn = tile.mn_view(acc_o)

    n_rows = cute.size(tScS, mode=[0])
    row_max = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
    row_sum = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
    row_max.fill(-1.0e30)  # finite start: no masking here, every page has keys
    row_sum.fill(0.0)
    for it in cutlass.range_constexpr(N_PAGES // 2):
        seesaw_pair(it, wg, lane, scale_log2, thr_qk, qk_mma, pv_rs, pv_ss, tSrQ, tSrK, tOrV, tOrVs,
                    tOrPs, tPsP, tScS, acc_o_mn, acc_o, row_max, row_sum, sM0, sM1)  # fmt: skip

    # both halves of O are relative to m1 of the last pair; add the two row sums
    for i in cutlass.range_constexpr(n_rows):
        mine = cute.arch.warp_reduction_sum(row_sum[i], threads_in_group=4)
        if lane % 4 == 0:
            sSum[tScS[i, 0][0], wg] = mine
    cute.arch.sync_threads()
    tOcO = tile.mn_view(thr_rs.partition_C(cute.make_identity_tensor((TILE_M, HALF))))
    for i in cutlass.range_constexpr(n_rows):
        row = tScS[i, 0][0]
        inv = 1.0 / (sSum[row, 0] + sSum[row, 1])
        for j in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[1])):
            mO[tOcO[i, j][0], wg * HALF + tOcO[i, j][1]] = acc_o_mn[i, j] * inv


def _fake_args():
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    bf = cutlass.BFloat16
    return (
        make_fake_compact_tensor(bf, (TILE_M, D), stride_order=(1, 0), assumed_align=16),
        make_fake_compact_tensor(bf, (N_PAGES * PAGE, D), stride_order=(1, 0), assumed_align=16),
        make_fake_compact_tensor(bf, (DV, N_PAGES * PAGE), stride_order=(1, 0), assumed_align=16),
        make_fake_compact_tensor(
            cutlass.Float32, (TILE_M, DV), stride_order=(1, 0), assumed_align=16
        ),  # fmt: skip
        make_fake_stream(),
    )


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    cute.compile(seesaw_attention, *_fake_args())
    return f"{N_PAGES // 2} pairs of {PAGE}-key pages, O {TILE_M}x{DV} split {HALF}/{HALF}"


def check():
    """GPU: O against torch softmax(q k^T / sqrt(D)) v."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    q = torch.randn(TILE_M, D, device="cuda").bfloat16()
    k = torch.randn(N_PAGES * PAGE, D, device="cuda").bfloat16()
    v = torch.randn(N_PAGES * PAGE, DV, device="cuda").bfloat16()
    vt = v.t().contiguous()
    o = torch.full((TILE_M, DV), float("nan"), device="cuda")
    args = [tile.cute_view(t) for t in (q, k, vt, o)]
    stream = current_stream()
    cute.compile(seesaw_attention, *args, stream)(*args, stream)
    torch.cuda.synchronize()
    ref = torch.softmax(q.float() @ k.float().t() / math.sqrt(D), dim=-1) @ v.float()
    err = (o - ref).abs().max().item()
    assert err < 2e-2, f"max abs error {err}"
    return f"O {TILE_M}x{DV} over {N_PAGES} pages, max abs error {err:.3g}"
