"""Small helpers shared by the warp-specialised sm_100a tcgen05 GEMM snippets (not a snippet
itself: its name starts with _). C (M, N, L) fp32 = A (M, K, L) fp16 @ B (N, K, L)^T, A and B
K-major, one CTA per 128xN output tile, the accumulator in TMEM. Host side: the tiled MMA,
the staged A/B SMEM rings and their TMA atoms. Device side: the global tiles partitioned for
TMA over the whole tile space, and a plain epilogue (TMEM -> registers -> global) for four
epilogue warps. Fake tensors let everything compile on a CPU for sm_100a."""

import cutlass
import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05

IO = cutlass.Float16
ACC = cutlass.Float32
BK = 64
# Epilogue warps first: warp w may only touch TMEM lanes 32 * (w % 4) .. + 31.
EPI_WARPS, MMA_WARP, TMA_WARP = (0, 1, 2, 3), 4, 5
EPI_THREADS = 32 * len(EPI_WARPS)


def make_operands(a: cute.Tensor, b: cute.Tensor, tile_n: int, stages: int, tma_op=None):
    """Inside @cute.jit: (tiled_mma, mma tiler, A ring, B ring, (tma_a, mA), (tma_b, mB),
    bytes of one A+B slot)."""
    tiled_mma = cute.make_tiled_mma(
        tcgen05.MmaF16BF16Op(
            IO,
            ACC,
            (128, tile_n, 16),
            tcgen05.CtaGroup.ONE,
            tcgen05.OperandSource.SMEM,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
        )
    )
    tiler = (128, tile_n, BK)
    a_ring = sm100_utils.make_smem_layout_a(tiled_mma, tiler, IO, stages)
    b_ring = sm100_utils.make_smem_layout_b(tiled_mma, tiler, IO, stages)
    a_slot = cute.select(a_ring, mode=[0, 1, 2])
    b_slot = cute.select(b_ring, mode=[0, 1, 2])
    if tma_op is None:
        tma_op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    tma_a = cute.nvgpu.make_tiled_tma_atom_A(tma_op, a, a_slot, tiler, tiled_mma)
    tma_b = cute.nvgpu.make_tiled_tma_atom_B(tma_op, b, b_slot, tiler, tiled_mma)
    slot_bytes = cute.size_in_bytes(IO, a_slot) + cute.size_in_bytes(IO, b_slot)
    return tiled_mma, tiler, a_ring, b_ring, tma_a, tma_b, slot_bytes


def tile_counts(c: cute.Tensor, tiler):
    """(tiles along M, tiles along N, L) of C for the tiler's (M, N)."""
    return cute.zipped_divide(c, tiler=(tiler[0], tiler[1]))[(0, (None, None, None))].shape


@cute.jit
def partition_all_tiles(tiled_mma, tiler, tma_a, mA, tma_b, mB, mC, sA, sB):
    """Every tile of A, B and C, partitioned for TMA / the MMA: tAgA[(None, m, k, l)],
    tBgB[(None, n, k, l)], tCgC[(None, None, None, m, n, l)], plus the SMEM sides."""
    every = (None, None, None)
    gA = cute.local_tile(mA, (tiler[0], tiler[2]), every)  # (BM, BK, m, k, l)
    gB = cute.local_tile(mB, (tiler[1], tiler[2]), every)  # (BN, BK, n, k, l)
    gC = cute.local_tile(mC, (tiler[0], tiler[1]), every)  # (BM, BN, m, n, l)
    thr_mma = tiled_mma.get_slice(0)
    tCgA = thr_mma.partition_A(gA)
    tCgB = thr_mma.partition_B(gB)
    tAsA, tAgA = cpasync.tma_partition(
        tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3)
    )
    tBsB, tBgB = cpasync.tma_partition(
        tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3)
    )
    return tAsA, tAgA, tBsB, tBgB, thr_mma.partition_C(gC)


@cute.jit
def store_acc(acc: cute.Tensor, tCgC: cute.Tensor, tidx):
    """Epilogue warps (EPI_THREADS threads, tidx 0..127): one 128xN TMEM accumulator
    (MMA, MMA_M, MMA_N) -> registers (tcgen05.ld 32x32b, 32 columns at a time) -> C tile."""
    sub = ((cute.size(acc, mode=[0, 0]), 32),)
    acc_sub = cute.zipped_divide(acc, sub)
    gC_sub = cute.zipped_divide(tCgC, sub)
    ld = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), ACC)
    t2r = tcgen05.make_tmem_copy(ld, acc_sub[None, 0]).get_slice(tidx)
    tTtA = t2r.partition_S(acc_sub)
    tTgC = t2r.partition_D(gC_sub)
    frag = cute.make_rmem_tensor(tTgC[None, None, 0].shape, ACC)
    for i in cutlass.range(cute.size(tTtA, mode=[2]), unroll_full=True):
        cute.copy(t2r, tTtA[None, None, i], frag)
        cute.autovec_copy(frag, tTgC[None, None, i])


def fake_mkl_args():
    """Fake K-major A (m, k, l), B (n, k, l) fp16 and row-major C (m, n, l) fp32, symbolic
    extents, and a fake stream."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n, k, l = (cute.sym_int() for _ in range(4))
    a = make_fake_compact_tensor(IO, (m, k, l), stride_order=(1, 0, 2), assumed_align=16)
    b = make_fake_compact_tensor(IO, (n, k, l), stride_order=(1, 0, 2), assumed_align=16)
    c = make_fake_compact_tensor(ACC, (m, n, l), stride_order=(1, 0, 2), assumed_align=16)
    return a, b, c, make_fake_stream()
