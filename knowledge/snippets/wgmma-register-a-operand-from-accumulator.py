"""WGMMA with its A operand from registers: a tiny two-GEMM chain on one warpgroup (sm_90a).

S = Q K^T (64 x 64, both operands from SMEM, fp32 accumulator), then P = bf16(S) is made
from the accumulator's registers with no data movement, and O = P V is a second WGMMA whose
A operand is that register fragment (`warpgroup.OperandSource.RMEM`) and whose B operand is
V in SMEM, MN-major. check() compares O with torch's bf16(Q K^T) V.

Shown in knowledge/languages/cute-dsl/optimizations/wgmma-register-a-operand-from-accumulator.md.
"""

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup

from kernelplan.kb.snippets import sibling

tile = sibling(__file__, "_hopper_tile")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

M, D, N1, DV = 64, 64, 64, 64  # rows, QK depth, keys (= K of the second MMA), V columns
THREADS = 128  # one warpgroup


# snippet:begin
def make_chained_mmas(dtype, m, n1, n2):
    """First MMA: S = A1 x B1 (both SMEM). Second: O = P x B2 with P from registers."""
    K, MN = OperandMajorMode.K, OperandMajorMode.MN
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


@cute.jit
def chained_mmas(mma1, mma2, tSrQ, tSrK, tOrV, acc_s, acc_o, n1: cutlass.Constexpr, dtype):
    """Inside the warpgroup: S = Q K^T, P = dtype(S) in registers, O = P V."""
    mma1.set(warpgroup.Field.ACCUMULATE, False)
    warpgroup.fence()
    for k in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
        cute.gemm(mma1, acc_s, tSrQ[None, None, k], tSrK[None, None, k], acc_s)
        mma1.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()
    warpgroup.wait_group(0)  # S is in registers
    # (softmax on acc_s in place would go here)
    tOrP = acc_to_a_operand(acc_s, n1, dtype)
    warpgroup.fence()  # the WGMMAs below read registers written just above
    mma2.set(warpgroup.Field.ACCUMULATE, False)
    for k in cutlass.range_constexpr(cute.size(tOrP, mode=[2])):
        cute.gemm(mma2, acc_o, tOrP[None, None, k], tOrV[None, None, k], acc_o)
        mma2.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()
    warpgroup.wait_group(0)


# snippet:end


@cute.jit
def two_gemm_chain(q: cute.Tensor, k: cute.Tensor, v: cute.Tensor, o: cute.Tensor, stream):
    """q (M, D), k (N1, D), v (N1, DV) row-major bf16; o (M, DV) fp32 = bf16(q k^T) v."""
    dt = q.element_type
    mma1, mma2 = make_chained_mmas(dt, M, N1, DV)
    q_l, k_l, vt_l, Storage = tile.chain_smem(dt, M, N1, D, DV)  # V^T MN-major

    chain_kernel(q, k, v, o, mma1, mma2, q_l, k_l, vt_l, Storage).launch(
        grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def chain_kernel(
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
    sQ, sK, sVt = tile.chain_smem_tensors(storage_t, q_l, k_l, vt_l)
    sK, sVt = sK[None, None, 0], sVt[None, None, 0]  # (N1, D), (DV, N1): one page
    gVt = cute.make_tensor(mV.iterator, cute.make_layout((DV, N1), stride=(1, DV)))  # V^T
    tile.copy_tile_g2s(mQ, sQ, tidx, THREADS)
    tile.copy_tile_g2s(mK, sK, tidx, THREADS)
    tile.copy_tile_g2s(gVt, sVt, tidx, THREADS)
    cute.arch.fence_proxy("async.shared", space="cta")  # generic stores -> WGMMA reads
    cute.arch.sync_threads()

    thr1 = mma1.get_slice(tidx)
    thr2 = mma2.get_slice(tidx)
    tSrQ = thr1.make_fragment_A(thr1.partition_A(sQ))
    tSrK = thr1.make_fragment_B(thr1.partition_B(sK))
    tOrV = thr2.make_fragment_B(thr2.partition_B(sVt))
    acc_s = thr1.make_fragment_C(thr1.partition_shape_C((M, N1)))
    acc_o = thr2.make_fragment_C(thr2.partition_shape_C((M, DV)))
    chained_mmas(mma1, mma2, tSrQ, tSrK, tOrV, acc_s, acc_o, N1, mQ.element_type)
    thr2.partition_C(mO).store(acc_o.load())


def _compile(q, k, v, o, stream):
    return cute.compile(two_gemm_chain, q, k, v, o, stream)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_stream

    bf = cutlass.BFloat16
    args = (tile.fake_matrix(bf, M, D), tile.fake_matrix(bf, N1, D), tile.fake_matrix(bf, N1, DV))
    _compile(*args, tile.fake_matrix(cutlass.Float32, M, DV), make_fake_stream())
    return "S = QK^T, P = bf16(S) from the accumulator registers, O = PV"


def check():
    """H200: O = bf16(Q K^T) V against torch (P rounded to bf16 in both)."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    q = (torch.randn(M, D, device="cuda") / D**0.25).bfloat16()
    k = (torch.randn(N1, D, device="cuda") / D**0.25).bfloat16()
    v = torch.randn(N1, DV, device="cuda").bfloat16()
    o = torch.full((M, DV), float("nan"), device="cuda")
    args = [tile.cute_view(t) for t in (q, k, v, o)]
    stream = current_stream()
    _compile(*args, stream)(*args, stream)
    torch.cuda.synchronize()
    p = (q.float() @ k.float().t()).bfloat16().float()
    ref = p @ v.float()
    err = (o - ref).abs().max().item()
    assert torch.isfinite(o).all() and err < 2e-2 * ref.abs().max().item(), f"max abs err {err}"
    # a permuted P (the pitfall: storing through the A layout) would be far off
    return f"two-GEMM chain 64x64x64, P from registers, max abs error {err:.3g}"
