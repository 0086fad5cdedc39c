"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/mla-v-as-view-of-k-tile.md,
kept as it stands in the entry until it is
made real code (compiled for sm_90a with fake tensors, and a check on the H200).
It is not imported or compiled: names it uses come from a surrounding kernel or harness
that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_90a"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import cutlass.cute as cute
from cutlass.cute.nvgpu import warpgroup

PAGE, D_QK, D_V, STAGES = 64, 576, 512, 2


def k_and_vt_layouts(dtype):
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dtype)
    sK = cute.tile_to_shape(atom, (PAGE, D_QK, STAGES), (0, 1, 2))  # K-major page ring
    # (column, token, stage) -> (token, column, stage) of sK's coordinate domain
    transpose = cute.make_layout((D_V, PAGE, STAGES), stride=(PAGE, 1, PAGE * D_QK))
    sVt_outer = cute.composition(sK.outer, transpose)  # V^T: N = 512 columns, K = 64 tokens
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
