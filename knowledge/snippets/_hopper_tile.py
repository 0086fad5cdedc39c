"""Small helpers shared by the sm_90a WGMMA snippets (not a snippet itself: its name starts
with _): an element-by-element global -> shared tile copy, the (rows, cols) view of a WGMMA
accumulator fragment, and fake / real 2-D tensors for compile and check."""

import cutlass
import cutlass.cute as cute


@cute.jit
def copy_tile_g2s(g: cute.Tensor, s: cute.Tensor, tidx, nthreads: cutlass.Constexpr):
    """s[r, c] = g[r, c] for a static (R, C) tile, nthreads threads striding over it; any
    layouts (a swizzled SMEM view, a transposed global view). Slow and simple: the snippets
    that use it are about what comes after the tile is in SMEM. The caller then fences the
    generic-proxy writes for WGMMA (fence_proxy async.shared) and syncs the threads."""
    rows = cute.size(g, mode=[0])
    cols = cute.size(g, mode=[1])
    for idx in cutlass.range(tidx, rows * cols, nthreads, unroll=1):
        r = idx // cols
        c = idx % cols
        s[r, c] = g[r, c]


def mn_view(t: cute.Tensor) -> cute.Tensor:
    """(rows, cols) view of an m64nN WGMMA accumulator fragment ((2, 2, N/8), MMA_M, MMA_N)
    (or of its coordinate partition): rows = (mode0[1], MMA_M), cols = (mode0[0], mode0[2],
    MMA_N)."""
    L = t.layout
    C = cute.make_layout(L.shape)
    mn = cute.make_layout(
        ((C.shape[0][1], C.shape[1]), (C.shape[0][0], C.shape[0][2], C.shape[2])),
        stride=((C.stride[0][1], C.stride[1]), (C.stride[0][0], C.stride[0][2], C.stride[2])),
    )
    return cute.make_tensor(t.iterator, cute.composition(L, mn))


def fake_matrix(dtype, rows, cols):
    """A fake row-major (rows, cols) tensor of static shape: compile anywhere."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    return make_fake_compact_tensor(dtype, (rows, cols), stride_order=(1, 0), assumed_align=16)


def cute_view(t):
    """A torch tensor as a CuTe tensor (static shape, as compiled from fake_matrix)."""
    from cutlass.cute.runtime import from_dlpack

    return from_dlpack(t, assumed_align=16)
