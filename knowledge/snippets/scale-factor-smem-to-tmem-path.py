"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/scale-factor-smem-to-tmem-path.md.
It is not imported or compiled: the tiled MMA, the pipelines, the staged SMEM tensors and the
TMEM allocation come from a surrounding block-scaled tcgen05 kernel that the fragment leaves
out.
"""

# ruff: noqa: F821, E402, F841, B018

SM = "sm_100a"
PENDING = (
    "a fragment: its surrounding block-scaled tcgen05 kernel (sm_100a) is not written here yet"
)

# snippet:begin
import cutlass
import cutlass.cute as cute
import cutlass.utils.blockscaled_layout as bsl
from cutlass.cute.nvgpu import tcgen05

# Host: the scale factors are a pointer; their layout follows from the operand's shape.
#   ((32, 4), (sf_vec, 4)) atoms tiled over (M, K, L): 128 rows x 4 scales in 512 bytes,
#   stride 0 across the sf_vec elements one scale covers.
sfa = cute.make_tensor(sfa_ptr, bsl.tile_atom_to_shape_SF(a.shape, sf_vec))
sfa_smem = bsl.make_smem_layout_sfa(tiled_mma, mma_tiler, sf_vec, ab_stages)
tma_sfa, tma_sfa_tensor = cute.nvgpu.make_tiled_tma_atom_A(
    tma_op_a,
    sfa,
    cute.slice_(sfa_smem, (None, None, None, 0)),
    mma_tiler,
    tiled_mma,
    cluster_vmnk_shape,
    internal_type=cutlass.Int16,  # scale bytes moved as 16-bit elements
)
# stage bytes (the TMA barrier's tx count) = A + B + SFA + SFB of one stage


# Device, MMA warp: TMEM = [accumulator | SFA columns | SFB columns].
def sf_tmem(acc_ptr, col_offset, layout):
    return cute.make_tensor(cute.recast_ptr(acc_ptr + col_offset, dtype=sf_dtype), layout)


tSFA = sf_tmem(acc_ptr, acc_cols, bsl.make_tmem_layout_sfa(tiled_mma, mma_tiler, sf_vec, sfa_1))
tSFB = sf_tmem(
    acc_ptr, acc_cols + sfa_cols, bsl.make_tmem_layout_sfb(tiled_mma, mma_tiler, sf_vec, sfb_1)
)


def s2t(sSF, tSF):
    """SMEM -> TMEM copy of one stage of scale factors (32 lanes x 128 bits, four times)."""
    src, dst = cute.filter_zeros(sSF), cute.filter_zeros(tSF)  # drop the broadcast modes
    copy = tcgen05.make_s2t_copy(
        cute.make_copy_atom(tcgen05.Cp4x32x128bOp(cta_group), sf_dtype), dst
    )
    thr = copy.get_slice(0)
    return copy, tcgen05.get_s2t_smem_desc_tensor(copy, thr.partition_S(src)), thr.partition_D(dst)


copy_a, src_a, dst_a = s2t(sSFA, tSFA)
copy_b, src_b, dst_b = s2t(sSFB, tSFB)
for k_tile in range(k_tiles):
    ab_pipe.consumer_wait(state)
    cute.copy(copy_a, src_a[(None, None, None, None, state.index)], dst_a)
    cute.copy(copy_b, src_b[(None, None, None, None, state.index)], dst_b)
    tiled_mma.set(tcgen05.Field.ACCUMULATE, k_tile != 0)
    cute.gemm(
        tiled_mma,
        acc,
        [tA[None, None, None, state.index], tSFA],
        [tB[None, None, None, state.index], tSFB],
        acc,
    )
    ab_pipe.consumer_release(state)  # the MMA commit also covers the S2T copies
    state.advance()
# snippet:end
