"""A loop of two WGMMA GEMMs per iteration, turned by half an iteration so that no WGMMA is in
flight across the loop's back edge (sm_90a, one warpgroup).

Per iteration i of ITERS: S_i = Q K_i^T (both operands from SMEM), P_i = bf16(S_i) from the
accumulator's registers, O = 0.5 O + P_i V_i (P from registers, V MN-major in SMEM). The
`O *= 0.5` is a non-WGMMA read of O's accumulator, as an online softmax's rescale is. The loop
issues O's GEMM of page i and then S's GEMM of page i + 1 behind it, and one wait_group(0)
inside the iteration retires both, so the next iteration's rescale reads retired registers.
The version that left O's GEMM in flight into the next iteration made ptxas serialize every
WGMMA of the kernel (C7514). check() compares O with torch's sum over pages of
0.5^(ITERS-1-i) bf16(Q K_i^T) V_i.

Shown in knowledge/languages/cute-dsl/anti-patterns/wgmma-in-flight-across-loop-edge.md.
"""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warpgroup

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_hopper_tile")
chain = sibling(__file__, "wgmma-register-a-operand-from-accumulator")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

M, D, N1, DV = 64, 64, 64, 64  # query rows, QK depth, keys per page, V columns
ITERS = 4  # pages, all resident in SMEM (a real kernel streams them through stages)
THREADS = 128  # one warpgroup


# snippet:begin
@cute.jit
def issue_s(mma1: cute.TiledMma, acc_s, tSrQ, tSrK, page):
    """S = Q K_page^T issued and committed, not waited for. Returns the tiled MMA, whose
    accumulate flag it set (the caller keeps the value: a loop carries it)."""
    mma1.set(warpgroup.Field.ACCUMULATE, False)
    warpgroup.fence()
    for k in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
        cute.gemm(mma1, acc_s, tSrQ[None, None, k], tSrK[None, None, k, page], acc_s)
        mma1.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()
    return mma1


@cute.jit
def turned_loop(mma1, mma2, tSrQ, tSrK, tOrV, acc_s, acc_o, n1: cutlass.Constexpr, dtype):
    """O = sum over pages of 0.5^(ITERS-1-i) bf16(Q K_i^T) V_i. Each iteration: P from S's
    registers, O rescaled (every WGMMA retired: the last wait), O's GEMM issued, the next
    page's S issued behind it, and ONE wait that retires both before the back edge."""
    acc_o.fill(0.0)
    mma1 = issue_s(mma1, acc_s, tSrQ, tSrK, 0)
    warpgroup.wait_group(0)
    mma2.set(warpgroup.Field.ACCUMULATE, True)
    for i in cutlass.range(ITERS, unroll=1):
        p = cute.make_rmem_tensor(cute.make_layout(((2, 2, 2), 1, n1 // 16)), dtype)
        cute.make_tensor(p.iterator, cute.make_layout(acc_s.shape)).store(
            acc_s.load().to(dtype)
        )  # P = bf16(S) in the A fragment's registers
        for e in cutlass.range_constexpr(cute.size(acc_o)):
            acc_o[e] = acc_o[e] * 0.5  # a non-WGMMA read of O: nothing may be in flight on it
        warpgroup.fence()
        for k in cutlass.range_constexpr(cute.size(p, mode=[2])):
            cute.gemm(mma2, acc_o, p[None, None, k], tOrV[None, None, k, i], acc_o)
        warpgroup.commit_group()
        if i + 1 < ITERS:
            mma1 = issue_s(mma1, acc_s, tSrQ, tSrK, i + 1)  # runs behind O's GEMM
        warpgroup.wait_group(0)  # retires both GEMMs inside the iteration


# snippet:end


@cute.jit
def paged_chain(q: cute.Tensor, k: cute.Tensor, v: cute.Tensor, o: cute.Tensor, stream):
    """q (M, D), k (ITERS N1, D), v (ITERS N1, DV) row-major bf16; o (M, DV) fp32."""
    dt = q.element_type
    # S = Q K^T (both SMEM, K-major); O = P V (P from registers, V^T MN-major in SMEM)
    mma1, mma2 = chain.make_chained_mmas(dt, M, N1, DV)
    q_l, k_l, vt_l, Storage = tile.chain_smem(dt, M, N1, D, DV, ITERS)

    paged_kernel(q, k, v, o, mma1, mma2, q_l, k_l, vt_l, Storage).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def paged_kernel(
    mQ: cute.Tensor,
    mK: cute.Tensor,
    mV: cute.Tensor,
    mO: cute.Tensor,
    mma1: cute.TiledMma,
    mma2: cute.TiledMma,
    q_l: cute.ComposedLayout,
    k_l: cute.ComposedLayout,
    vt_l: cute.ComposedLayout,
    storage_t: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    sQ, sK, sVt = tile.chain_smem_tensors(storage_t, q_l, k_l, vt_l)  # sK, sVt: ITERS pages
    tile.copy_tile_g2s(mQ, sQ, tidx, THREADS)
    for i in cutlass.range_constexpr(ITERS):
        gK = cute.local_tile(mK, (N1, D), (i, 0))
        gVt = cute.make_tensor(
            mV.iterator + i * N1 * DV, cute.make_layout((DV, N1), stride=(1, DV))
        )  # V_i^T
        tile.copy_tile_g2s(gK, sK[None, None, i], tidx, THREADS)
        tile.copy_tile_g2s(gVt, sVt[None, None, i], tidx, THREADS)
    cute.arch.fence_proxy("async.shared", space="cta")  # generic stores -> WGMMA reads
    cute.arch.sync_threads()

    thr1 = mma1.get_slice(tidx)
    thr2 = mma2.get_slice(tidx)
    tSrQ = thr1.make_fragment_A(thr1.partition_A(sQ))
    tSrK = thr1.make_fragment_B(thr1.partition_B(sK))  # (MMA, 1, K, ITERS)
    tOrV = thr2.make_fragment_B(thr2.partition_B(sVt))  # (MMA, 1, K, ITERS)
    acc_s = thr1.make_fragment_C(thr1.partition_shape_C((M, N1)))
    acc_o = thr2.make_fragment_C(thr2.partition_shape_C((M, DV)))
    turned_loop(mma1, mma2, tSrQ, tSrK, tOrV, acc_s, acc_o, N1, mQ.element_type)
    thr2.partition_C(mO).store(acc_o.load())


def _compile(q, k, v, o, stream):
    return cute.compile(paged_chain, q, k, v, o, stream)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_stream

    bf = cutlass.BFloat16
    args = (
        tile.fake_matrix(bf, M, D),
        tile.fake_matrix(bf, ITERS * N1, D),
        tile.fake_matrix(bf, ITERS * N1, DV),
        tile.fake_matrix(cutlass.Float32, M, DV),
    )
    _compile(*args, make_fake_stream())
    return f"{ITERS} pages of S = QK^T, O = 0.5 O + bf16(S) V, the loop turned by half a page"


def check():
    """H200: O against torch's sum of 0.5^(ITERS-1-i) bf16(Q K_i^T) V_i (P in bf16 in both)."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    q = (torch.randn(M, D, device="cuda") / D**0.25).bfloat16()
    k = (torch.randn(ITERS * N1, D, device="cuda") / D**0.25).bfloat16()
    v = torch.randn(ITERS * N1, DV, device="cuda").bfloat16()
    o = torch.full((M, DV), float("nan"), device="cuda")
    args = [tile.cute_view(t) for t in (q, k, v, o)]
    stream = current_stream()
    _compile(*args, stream)(*args, stream)
    torch.cuda.synchronize()
    ref = torch.zeros(M, DV, device="cuda")
    for i in range(ITERS):
        rows = slice(i * N1, (i + 1) * N1)
        p = (q.float() @ k[rows].float().t()).bfloat16().float()
        ref = 0.5 * ref + p @ v[rows].float()
    err = (o - ref).abs().max().item()
    assert torch.isfinite(o).all() and err < 2e-2 * ref.abs().max().item(), f"max abs err {err}"
    return f"{ITERS} pages, O's GEMM overlapped with the next S's, max abs error {err:.3g}"
