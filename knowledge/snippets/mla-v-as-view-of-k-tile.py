"""MLA's V as a view of the K tile (sm_90a): one page of the latent cache sits in SMEM once,
K-major for S = Q K^T; V^T (the page's first D_V columns, transposed) is a composed view of the
same bytes with the same swizzle, used as the MN-major B operand of the PV WGMMA.

The kernel (two warpgroups, one CTA) loads Q and one page into stage 1 of a two-stage page
ring (so that the stage stride of the view is exercised), computes S = Q K^T in each
warpgroup, P = bf16(S) in registers, and O = P V with each warpgroup taking its half of the
V columns through `local_tile` on the view. Small sizes (D_QK = 128, D_V = 128) stand in for
MLA's 576 and 512; the layout code is the same. check() compares O with
bf16(Q K^T) @ K[:, :D_V] in torch.

Shown in knowledge/languages/cute-dsl/optimizations/mla-v-as-view-of-k-tile.md.
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

TILE_M, NUM_WG = 64, 2
SMALL = dict(page=64, d_qk=128, d_v=128, stages=2)  # what the check runs


# snippet:begin
def k_and_vt_layouts(dtype, page=64, d_qk=576, d_v=512, stages=2):  # MLA: 64, 576, 512, 2
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dtype)
    sK = cute.tile_to_shape(atom, (page, d_qk, stages), (0, 1, 2))  # K-major page ring
    # (column, token, stage) -> (token, column, stage) of sK's coordinate domain
    transpose = cute.make_layout((d_v, page, stages), stride=(page, 1, page * d_qk))
    sVt_outer = cute.composition(sK.outer, transpose)  # V^T: N = d_v columns, K = page tokens
    return sK, sVt_outer


# PV MMA: A = P (registers, K-major), B = V^T (SMEM, MN-major)
#   pv = sm90_utils.make_trivial_tiled_mma(dt, dt, K, MN, Float32, (1, 1, 1), (64, D_V // 2),
#                                          warpgroup.OperandSource.RMEM)
# in the kernel, over the same bytes:
#   sK  = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)
#   sVt = storage.sK.get_tensor(sVt_outer, swizzle=sK_layout.inner)
#   sVt_wg = cute.local_tile(sVt, (D_V // 2, PAGE, STAGES), (wg, 0, 0))
#   tOrV = thr_pv.make_fragment_B(thr_pv.partition_B(sVt_wg))
# snippet:end


@cute.jit
def qk_pv_one_page(q: cute.Tensor, kv: cute.Tensor, o: cute.Tensor, stream):
    """q (64, D_QK), kv (PAGE, D_QK) bf16 row-major; o (64, D_V) fp32 = bf16(q kv^T) kv[:, :D_V]."""
    dt = q.element_type
    page, d_qk, d_v, stages = SMALL["page"], SMALL["d_qk"], SMALL["d_v"], SMALL["stages"]
    qk_mma, pv_mma = chain.make_chained_mmas(dt, TILE_M, page, d_v // NUM_WG)
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dt)
    sQ_layout = cute.tile_to_shape(atom, (TILE_M, d_qk), (0, 1))
    sK_layout, sVt_outer = k_and_vt_layouts(dt, page, d_qk, d_v, stages)

    @cute.struct
    class Storage:
        sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sK_layout)], 1024]

    page_kernel(q, kv, o, qk_mma, pv_mma, sQ_layout, sK_layout, sVt_outer, Storage).launch(
        grid=[1, 1, 1], block=[128 * NUM_WG, 1, 1], stream=stream
    )


@cute.kernel
def page_kernel(
    mQ: cute.Tensor,
    mKV: cute.Tensor,
    mO: cute.Tensor,
    qk_mma: cute.TiledMma,
    pv_mma: cute.TiledMma,
    sQ_layout: cute.ComposedLayout,
    sK_layout: cute.ComposedLayout,
    sVt_outer: cute.Layout,
    storage_t: cutlass.Constexpr,
):
    page, d_v, stages = SMALL["page"], SMALL["d_v"], SMALL["stages"]
    tidx, _, _ = cute.arch.thread_idx()
    wg = cute.arch.make_warp_uniform(tidx // 128)
    wg_tidx = tidx % 128
    storage = cutlass.memory.SmemAllocator().allocate(storage_t)
    sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
    sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)  # (page, d_qk, st)
    sVt = storage.sK.get_tensor(sVt_outer, swizzle=sK_layout.inner)  # (d_v, page, st)
    stage = stages - 1  # the page lands in the last stage
    tile.copy_tile_g2s(mQ, sQ, tidx, 128 * NUM_WG)
    tile.copy_tile_g2s(mKV, sK[None, None, stage], tidx, 128 * NUM_WG)
    cute.arch.fence_proxy("async.shared", space="cta")
    cute.arch.sync_threads()

    thr_qk = qk_mma.get_slice(wg_tidx)
    thr_pv = pv_mma.get_slice(wg_tidx)
    tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ))
    tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK[None, None, stage]))
    sVt_wg = cute.local_tile(sVt, (d_v // NUM_WG, page, stages), (wg, 0, 0))
    tOrV = thr_pv.make_fragment_B(thr_pv.partition_B(sVt_wg))  # (MMA, 1, k, stages)
    acc_s = thr_qk.make_fragment_C(thr_qk.partition_shape_C((TILE_M, page)))
    acc_o = thr_pv.make_fragment_C(thr_pv.partition_shape_C((TILE_M, d_v // NUM_WG)))
    chain.chained_mmas(
        qk_mma,
        pv_mma,
        tSrQ,
        tSrK,
        tOrV[None, None, None, stage],
        acc_s,
        acc_o,
        page,
        mQ.element_type,
    )
    gO = cute.local_tile(mO, (TILE_M, d_v // NUM_WG), (0, wg))
    thr_pv.partition_C(gO).store(acc_o.load())


def _compile(q, kv, o, stream):
    return cute.compile(qk_pv_one_page, q, kv, o, stream)


def compile_snippet():
    """CPU: compile for SM (CUTE_DSL_ARCH) with fake tensors."""
    from cutlass.cute.runtime import make_fake_stream

    bf = cutlass.BFloat16
    q = tile.fake_matrix(bf, TILE_M, SMALL["d_qk"])
    kv = tile.fake_matrix(bf, SMALL["page"], SMALL["d_qk"])
    o = tile.fake_matrix(cutlass.Float32, TILE_M, SMALL["d_v"])
    _compile(q, kv, o, make_fake_stream())
    return "V^T as an MN-major view of the K-major page, in stage 1 of 2, two warpgroups"


def check():
    """H200: O = bf16(Q K^T) @ K[:, :D_V] with V read through the view."""
    import torch
    from cutlass.torch import current_stream

    d_qk, d_v, page = SMALL["d_qk"], SMALL["d_v"], SMALL["page"]
    torch.manual_seed(0)
    q = (torch.randn(TILE_M, d_qk, device="cuda") / d_qk**0.25).bfloat16()
    kv = (torch.randn(page, d_qk, device="cuda") / d_qk**0.25).bfloat16()
    o = torch.full((TILE_M, d_v), float("nan"), device="cuda")
    args = [tile.cute_view(t) for t in (q, kv, o)]
    stream = current_stream()
    _compile(*args, stream)(*args, stream)
    torch.cuda.synchronize()
    p = (q.float() @ kv.float().t()).bfloat16().float()
    ref = p @ kv[:, :d_v].float()
    err = (o - ref).abs().max().item()
    assert torch.isfinite(o).all() and err < 2e-2 * ref.abs().max().item(), f"max abs err {err}"
    return f"PV with V as a view of the K page, max abs error {err:.3g}"
