"""Small pieces shared by the sm_100a tcgen05 GEMM snippets (not a snippet itself: its name
starts with _). C (M, N) = A (M, K) @ B (N, K)^T, fp16 in, fp32 accumulate in TMEM, A and B
K-major, M and N multiples of the tile. Host side: the tiled MMA, the staged A/B SMEM rings
and their TMA atoms, the TMA-store atom for C. Device side: the TMA-warp load loop, the MMA-warp
K loop and a plain epilogue (TMEM -> registers -> global), so that each snippet writes only the
part its entry is about. The fake tensors let everything compile on a CPU for sm_100a."""

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.tensor_utils import LayoutEnum

IO = cutlass.Float16
ACC = cutlass.Float32
EPI_WARPS, MMA_WARP, TMA_WARP = (0, 1, 2, 3), 4, 5  # epilogue warps first: TMEM lane quarters
THREADS = 32 * (len(EPI_WARPS) + 2)
BK = 64


def make_tiled_mma(pair: int, tile_n: int):
    """One tcgen05 f16 MMA atom, M = 128 per CTA (x2 for a CTA pair), SMEM operands, K-major."""
    return cute.make_tiled_mma(
        tcgen05.MmaF16BF16Op(
            IO,
            ACC,
            (128 * pair, tile_n, 16),
            tcgen05.CtaGroup.TWO if pair == 2 else tcgen05.CtaGroup.ONE,
            tcgen05.OperandSource.SMEM,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
        )
    )


def make_ab_loads(tiled_mma, mma_tiler, a, b, stages: int, cluster_vmnk, load_op):
    """Staged A/B SMEM layouts, their TMA atoms and the bytes one stage brings to one CTA."""
    a_ring = sm100_utils.make_smem_layout_a(tiled_mma, mma_tiler, a.element_type, stages)
    b_ring = sm100_utils.make_smem_layout_b(tiled_mma, mma_tiler, b.element_type, stages)
    a_slot = cute.slice_(a_ring, (None, None, None, 0))
    b_slot = cute.slice_(b_ring, (None, None, None, 0))
    tma_a, gA = cute.nvgpu.make_tiled_tma_atom_A(
        load_op, a, a_slot, mma_tiler, tiled_mma, cluster_vmnk.shape
    )
    tma_b, gB = cute.nvgpu.make_tiled_tma_atom_B(
        load_op, b, b_slot, mma_tiler, tiled_mma, cluster_vmnk.shape
    )
    slot_bytes = cute.size_in_bytes(a.element_type, a_slot) + cute.size_in_bytes(
        b.element_type, b_slot
    )
    return a_ring, b_ring, tma_a, gA, tma_b, gB, slot_bytes


def make_c_store(c, cta_tile_mnk, pair: int, epi_stages: int):
    """Epilogue sub-tile, its staged SMEM layout and the TMA-store atom for C."""
    c_kind = LayoutEnum.from_tensor(c)
    epi_tile = sm100_utils.compute_epilogue_tile_shape(cta_tile_mnk, pair == 2, c_kind, IO)
    epi_ring = sm100_utils.make_smem_layout_epi(IO, c_kind, epi_tile, epi_stages)
    tma_c, gC = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(epi_ring, (None, None, 0)), epi_tile
    )
    return c_kind, epi_tile, epi_ring, tma_c, gC


@cute.jit
def partition_ab(tma_a, tma_b, gA, gB, sA, sB, thr_mma):
    """TMA views of one tile's A and B ((atom, rest), k_tiles) and of the SMEM rings."""
    tAsA, tAgA = cpasync.tma_partition(
        tma_a,
        0,
        cute.make_layout(1),
        cute.group_modes(sA, 0, 3),
        cute.group_modes(thr_mma.partition_A(gA), 0, 3),
    )
    tBsB, tBgB = cpasync.tma_partition(
        tma_b,
        0,
        cute.make_layout(1),
        cute.group_modes(sB, 0, 3),
        cute.group_modes(thr_mma.partition_B(gB), 0, 3),
    )
    return tAsA, tAgA, tBsB, tBgB


@cute.jit
def load_k_tiles(ab_prod, tma_a, tAgA, tAsA, tma_b, tBgB, tBsB, k_tiles):
    """TMA warp, one output tile: acquire a slot, copy A and B into it, per K-tile."""
    for k in cutlass.range(k_tiles, unroll=1):
        h = ab_prod.acquire_and_advance()
        cute.copy(tma_a, tAgA[(None, k)], tAsA[(None, h.index)], tma_bar_ptr=h.barrier)
        cute.copy(tma_b, tBgB[(None, k)], tBsB[(None, h.index)], tma_bar_ptr=h.barrier)


@cute.jit
def mma_k_tiles(ab_cons, tiled_mma, acc, tCrA, tCrB, k_tiles):
    """MMA warp, one output tile: wait for a slot, tcgen05 MMAs over its k-blocks, release it
    (a tcgen05.commit onto the slot's empty barrier). Returns tiled_mma, whose ACCUMULATE
    field it sets: a caller inside a dynamic loop rebinds it, so the tracer carries it."""
    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
    for _k in cutlass.range(k_tiles, unroll=1):
        h = ab_cons.wait_and_advance()
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            cute.gemm(
                tiled_mma,
                acc,
                tCrA[(None, None, kb, h.index)],
                tCrB[(None, None, kb, h.index)],
                acc,
            )
            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
        h.release()
    return tiled_mma  # its ACCUMULATE field changed: rebind it in a caller's loop


@cute.jit
def store_acc_direct(acc, tCgC, tidx, n_subtiles: cutlass.Constexpr):
    """Epilogue warps: TMEM -> registers (tcgen05.ld, 32 lanes per warp) -> fp16 -> global,
    in n_subtiles column slices of the accumulator."""
    epi = ((cute.size(acc, mode=[0, 0]), cute.size(acc, mode=[0, 1]) // n_subtiles),)
    acc_epi = cute.zipped_divide(acc, epi)  # (EpiTile, n_subtiles)
    gC_epi = cute.zipped_divide(tCgC, epi)
    t2r = tcgen05.make_tmem_copy(
        cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), ACC), acc_epi[None, 0]
    )
    thr = t2r.get_slice(tidx)
    src = thr.partition_S(acc_epi)
    dst = thr.partition_D(gC_epi)
    regs = cute.make_rmem_tensor(dst[None, None, 0].shape, ACC)
    out = cute.make_rmem_tensor(dst[None, None, 0].shape, IO)
    for i in cutlass.range(cute.size(src, mode=[2])):
        cute.copy(t2r, src[None, None, i], regs)
        out.store(regs.load().to(IO))
        cute.autovec_copy(out, dst[None, None, i])


def fake_args():
    """Fake fp16 A (M, K), B (N, K) and C (M, N), row-major, with symbolic extents."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n, k = cute.sym_int(), cute.sym_int(), cute.sym_int()
    a = make_fake_compact_tensor(IO, (m, k), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(IO, (n, k), stride_order=(1, 0), assumed_align=16)
    c = make_fake_compact_tensor(IO, (m, n), stride_order=(1, 0), assumed_align=16)
    return a, b, c, make_fake_stream()
