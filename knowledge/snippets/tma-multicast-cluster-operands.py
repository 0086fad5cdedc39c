"""PENDING: the Implementation fragment of
knowledge/languages/cute-dsl/optimizations/tma-multicast-cluster-operands.md,
kept as it stands in the entry until it is
made real code (a kernel that compiles for sm_90a with fake tensors, and a check on the H200).
It is not imported or compiled: names such as the pipelines, tensors and roles come from a
surrounding kernel that the fragment leaves out.
"""

# ruff: noqa: F821, E402, F841, B018, SIM102

SM = "sm_90a"
PENDING = "a fragment: its surrounding kernel is not written yet"

# snippet:begin
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


# Host: the shared operand gets the multicast op (sm_90 form)
def load_atom(tensor, stage_layout, box, n_sharing):
    op = (
        cpasync.CopyBulkTensorTileG2SMulticastOp()
        if n_sharing > 1
        else cpasync.CopyBulkTensorTileG2SOp()
    )
    return cpasync.make_tiled_tma_atom(op, tensor, stage_layout, box, num_multicast=n_sharing)


tma_a, gA = load_atom(a, a_stage, (tile_m, tile_k), cluster_n)  # A is shared along N
tma_b, gB = load_atom(b, b_stage, (tile_n, tile_k), cluster_m)  # B is shared along M

# Device
cta_layout = cute.make_layout((cluster_m, cluster_n, 1))
cm, cn, _ = cta_layout.get_flat_coord(cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster()))
mask_a = cute.make_layout_image_mask(cta_layout, (cm, cn, 0), mode=1) if cluster_n > 1 else 0
mask_b = cute.make_layout_image_mask(cta_layout, (cm, cn, 0), mode=0) if cluster_m > 1 else 0
# each CTA issues its 1/cluster_n of every A box and 1/cluster_m of every B box
tAsA, tAgA = cpasync.tma_partition(
    tma_a,
    cn,
    cute.make_layout(cluster_n),
    cute.group_modes(sA, 0, 2),
    cute.group_modes(gA_tiles, 0, 2),
)
tBsB, tBgB = cpasync.tma_partition(
    tma_b,
    cm,
    cute.make_layout(cluster_m),
    cute.group_modes(sB, 0, 2),
    cute.group_modes(gB_tiles, 0, 2),
)
# a slot may be refilled only after every CTA that wrote into it has released it
empty_arrivals = (cluster_n + cluster_m - 1) * consumer_warps
...
cute.copy(tma_a, tAgA[(None, k)], tAsA[(None, slot)], tma_bar_ptr=full_bar, mcast_mask=mask_a)
cute.copy(tma_b, tBgB[(None, k)], tBsB[(None, slot)], tma_bar_ptr=full_bar, mcast_mask=mask_b)
# snippet:end
