"""A 16-bit tile made from a WGMMA accumulator, stored to SMEM with stmatrix (sm_90a).

The serial TMA GEMM of _serial_tma_gemm.py (C = A @ B^T, one warpgroup) with its epilogue
replaced: the fp32 accumulator is converted to fp16 in registers and written into a 64 x 64
swizzled SMEM tile (the A slot, free once the K loop is done; in an attention kernel the same
store writes P for a second MMA) by a tiled copy of StMatrix8x8x16bOp in the accumulator's
thread layout; then the tile is read back to C. STMATRIX = False builds the form it replaces,
one 16-bit store per value through the MMA's C partition (kept to compare the SASS; both are
correct). check() runs both against torch.

Shown in knowledge/languages/cute-dsl/optimizations/stmatrix-accumulator-tile-to-smem.md.
"""

import cutlass
import cutlass.cute as cute

from kernelplan.kb.snippets import sibling

hop = sibling(__file__, "_hopper_tile")
serial = sibling(__file__, "_serial_tma_gemm")

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 180


# snippet:begin
def make_acc_store(tiled_mma, tidx, sD: cute.Tensor, stmatrix: bool):
    """Once, before the main loop: how this thread stores its part of an (M, N) accumulator
    tile into sD (16-bit, N contiguous, any swizzle). Returns (tiled copy or None, sD part)."""
    if stmatrix:
        # 8x8 16-bit matrices, 4 per instruction, laid over the accumulator's thread layout;
        # False = not transposed: the matrices' rows run along N, as sD's do
        atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), sD.element_type)
        st = cute.make_tiled_copy_C(atom, tiled_mma)
        return st, st.get_slice(tidx).partition_D(sD)
    return None, tiled_mma.get_slice(tidx).partition_C(sD)  # the MMA's own C partition


@cute.jit
def store_acc_tile(st, tDsD: cute.Tensor, acc: cute.Tensor):
    """acc: this thread's fp32 WGMMA accumulator; every thread of the warpgroup calls it."""
    rD = cute.make_rmem_tensor(acc.layout, tDsD.element_type)  # same registers, 16-bit
    rD.store(acc.load().to(tDsD.element_type))
    if cutlass.const_expr(st is not None):
        cute.copy(st, st.retile(rD), tDsD)  # retile: rD's registers in the copy's order
    else:
        # the slow form: one st.shared.b16 per value (32 per thread for 64 x 64)
        for e in cutlass.range_constexpr(cute.size(rD)):
            tDsD[e] = rD[e]
    # before WGMMA or TMA reads sD: fence_proxy("async.shared", space="cta") + a barrier


# snippet:end


class StmatrixEpilogueGemm(serial.SerialTmaGemm):
    """C = fp16(A @ B^T) as fp32, through a 64 x 64 fp16 SMEM tile."""

    def __init__(self, stmatrix: bool = True):
        self.stmatrix = stmatrix

    def epilogue_setup(self, g):
        sD = g.sA[None, None, 0]  # (64, 64) fp16, K-major 128-byte swizzle: free after the loop
        return make_acc_store(g.tiled_mma, g.tidx, sD, self.stmatrix)

    @cute.jit
    def epilogue(self, g, acc, tCgC, epi):
        store_acc_tile(epi[0], epi[1], acc)
        cute.arch.sync_threads()
        hop.copy_tile_g2s(g.sA[None, None, 0], g.gC, g.tidx, self.THREADS)  # SMEM -> C, fp32


def compile_snippet():
    """CPU: compile both forms for SM (CUTE_DSL_ARCH) with fake tensors."""
    for stmatrix in (True, False):
        cute.compile(StmatrixEpilogueGemm(stmatrix), *hop.fake_gemm_args())
    return "fp16 accumulator tile to SMEM by stmatrix and by per-value stores"


def check(m=128, n=128, k=1024):
    """H200: both forms against torch (C rounded to fp16 in the kernel: within tolerance)."""
    errs = [hop.check_gemm(StmatrixEpilogueGemm(s), m, n, k) for s in (True, False)]
    return f"stmatrix / per-value stores, max abs error {errs[0]:.3g} / {errs[1]:.3g}"
