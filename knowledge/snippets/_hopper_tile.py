"""Small helpers shared by the sm_90a WGMMA snippets (not a snippet itself: its name starts
with _): an element-by-element global -> shared tile copy, the (rows, cols) view of a WGMMA
accumulator fragment, fake / real 2-D tensors for compile and check, the SMEM of two chained
attention GEMMs (S = Q K^T, O = P V: chain_smem), and the scaffolding of
the TMA-pipelined GEMMs C (M, N) fp32 = A (M, K) fp16 @ B (N, K)^T (K-major): tiled MMA,
staged A/B SMEM rings and their TMA atoms, the shared storage, TMA partitions, the async
WGMMA batch of one slot, fake arguments and the check against torch; TmaGemm holds the host
entry and the kernel's opening, so that a snippet writes only its own part."""

from types import SimpleNamespace

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warpgroup
from cutlass.tensor_utils import LayoutEnum


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


def chain_smem(dt, m: int, n1: int, d: int, dv: int, pages: int = 1):
    """Inside @cute.jit: the SMEM of an attention tile's two chained WGMMA GEMMs, S = Q K^T
    (Q (m, d) and K (n1, d), both K-major) and O = P V (V^T (dv, n1), MN-major), K and V^T
    with ``pages`` stages. Returns (q_l, k_l, vt_l, Storage): the three swizzled layouts and
    the storage struct holding them, each 1024-byte aligned."""
    q_l = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, (m, n1, d), dt, 1)
    k_l = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, (m, n1, d), dt, pages)
    vt_l = sm90_utils.make_smem_layout_b(LayoutEnum.COL_MAJOR, (m, dv, n1), dt, pages)

    @cute.struct
    class Storage:
        sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(q_l)], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(k_l)], 1024]
        sVt: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(vt_l)], 1024]

    return q_l, k_l, vt_l, Storage


def chain_smem_tensors(storage_t, q_l, k_l, vt_l):
    """Inside the kernel: :func:`chain_smem`'s storage allocated and viewed. Returns sQ
    (m, d), sK (n1, d, pages) and sVt (dv, n1, pages)."""
    storage = cutlass.memory.SmemAllocator().allocate(storage_t)
    return (
        storage.sQ.get_tensor(q_l.outer, swizzle=q_l.inner)[None, None, 0],
        storage.sK.get_tensor(k_l.outer, swizzle=k_l.inner),
        storage.sVt.get_tensor(vt_l.outer, swizzle=vt_l.inner),
    )


def make_gemm_mma(a, b, tile_mnk, n_mma_wg: int = 1):
    """Inside @cute.jit: a K-major fp32-accumulating WGMMA for the (BM, BN) tile, split along
    M over n_mma_wg warpgroups."""
    return sm90_utils.make_trivial_tiled_mma(
        a.element_type,
        b.element_type,
        OperandMajorMode.K,
        OperandMajorMode.K,
        cutlass.Float32,
        (n_mma_wg, 1, 1),
        tiler_mn=(tile_mnk[0] // n_mma_wg, tile_mnk[1]),
    )


def make_ab_rings(a, b, tile_mnk, stages: int):
    """Staged swizzled SMEM layouts for A and B and one slot of each (stage 0)."""
    a_ring = sm90_utils.make_smem_layout_a(LayoutEnum.ROW_MAJOR, tile_mnk, a.element_type, stages)
    b_ring = sm90_utils.make_smem_layout_b(LayoutEnum.ROW_MAJOR, tile_mnk, b.element_type, stages)
    return (
        a_ring,
        b_ring,
        cute.slice_(a_ring, (None, None, 0)),
        cute.slice_(b_ring, (None, None, 0)),
    )


def make_ab_tma(a, b, a_slot, b_slot, tile_mnk):
    """Plain (no multicast) TMA load atoms for A and B: (tma_a, gA_tma, tma_b, gB_tma)."""
    bm, bn, bk = tile_mnk
    op = cpasync.CopyBulkTensorTileG2SOp()
    tma_a, gA_tma = cpasync.make_tiled_tma_atom(op, a, a_slot, (bm, bk))
    tma_b, gB_tma = cpasync.make_tiled_tma_atom(op, b, b_slot, (bn, bk))
    return tma_a, gA_tma, tma_b, gB_tma


def slot_bytes(a, b, a_slot, b_slot):
    """Bytes the TMA copies of one A+B slot deliver to one CTA."""
    return cute.size_in_bytes(a.element_type, a_slot) + cute.size_in_bytes(b.element_type, b_slot)


def make_storage(a, b, a_ring, b_ring, stages: int):
    """Shared storage: full + empty mbarriers per stage, then the 1024-byte-aligned rings."""

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[cutlass.Int64, 2 * stages]
        sA: cute.struct.Align[cute.struct.MemRange[a.element_type, cute.cosize(a_ring)], 1024]
        sB: cute.struct.Align[cute.struct.MemRange[b.element_type, cute.cosize(b_ring)], 1024]

    return Storage


def gemm_grid(c, tile_mnk):
    """One CTA per (BM, BN) tile of C."""
    return (cute.size(c, mode=[0]) // tile_mnk[0], cute.size(c, mode=[1]) // tile_mnk[1], 1)


def smem_rings(storage, a_ring, b_ring):
    """Inside the kernel: the A and B rings of the allocated storage as swizzled tensors."""
    sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
    sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
    return sA, sB


def tma_partition_ab(tma_a, tma_b, sA, sB, gA, gB):
    """TMA views of the (BM|BN, BK, k_tiles) tiles and of the rings: tAsA, tAgA, tBsB, tBgB."""
    tAsA, tAgA = cpasync.tma_partition(
        tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2)
    )
    tBsB, tBgB = cpasync.tma_partition(
        tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2)
    )
    return tAsA, tAgA, tBsB, tBgB


def issue_async_mmas(tiled_mma, acc, tCrA, tCrB, slot):
    """WGMMA over the k-blocks of one slot, asynchronously: fence, gemms, commit_group.

    The first gemm uses tiled_mma's ACCUMULATE flag as the caller left it; the others set it
    to True. That set() is invisible to a dynamic loop (cutlass.range) calling this: the loop
    carries the flag from one iteration to the next only if its own body assigns the name or
    calls a method on it (the DSL's region analysis reads the body's names). So a K loop
    either sets the flag in its body (tiled_mma.set(ACCUMULATE, k != 0)) or issues the first
    batch before the loop; a False set once before the loop zeroes C on every k-tile
    (tests/test_kb_snippets.py reads the PTX of the TmaGemm snippets for that)."""
    warpgroup.fence()
    for kb in range(cute.size(tCrA, mode=[2])):  # unrolled at trace time
        cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, slot)], tCrB[(None, None, kb, slot)], acc)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()


def mma_operands(tiled_mma, tidx, sA, sB, gC):
    """One thread's WGMMA view: A and B fragments of the rings, its part of the C tile and an
    fp32 accumulator of that shape: (tCrA, tCrB, tCgC, acc)."""
    thr_mma = tiled_mma.get_slice(tidx)
    tCgC = thr_mma.partition_C(gC)
    return (
        tiled_mma.make_fragment_A(thr_mma.partition_A(sA)),
        tiled_mma.make_fragment_B(thr_mma.partition_B(sB)),
        tCgC,
        cute.make_rmem_tensor(tCgC.shape, cutlass.Float32),
    )


class TmaGemm:
    """The opening of a TMA-fed sm_90a WGMMA GEMM, C (M, N) fp32 = A (M, K) fp16 @ B (N, K)^T:
    the host entry (tiled MMA over N_MMA_WG warpgroups, A/B rings of self.stages slots, TMA
    atoms from make_loads(), SMEM struct, launch of THREADS threads per (BM, BN) tile, in
    clusters of CLUSTER when set) and the kernel's first lines (descriptor prefetch by warp 0,
    SMEM rings, this CTA's A, B and C tiles). A subclass writes the rest as body(g), a
    @cute.jit method (g holds those objects by name)."""

    BM, BN, BK = 64, 64, 64
    THREADS = 128
    N_MMA_WG = 1
    CLUSTER = None  # or (cluster_m, cluster_n)
    stages = 2

    def make_loads(self, a, b, a_slot, b_slot, tile_mnk):
        """(tma_a, gA_tma, tma_b, gB_tma): plain TMA loads unless a subclass says otherwise."""
        return make_ab_tma(a, b, a_slot, b_slot, tile_mnk)

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        tile = (self.BM, self.BN, self.BK)
        tiled_mma = make_gemm_mma(a, b, tile, n_mma_wg=self.N_MMA_WG)
        a_ring, b_ring, a_slot, b_slot = make_ab_rings(a, b, tile, self.stages)
        tma_a, gA_tma, tma_b, gB_tma = self.make_loads(a, b, a_slot, b_slot, tile)
        self.storage = make_storage(a, b, a_ring, b_ring, self.stages)
        nbytes = slot_bytes(a, b, a_slot, b_slot)
        cluster = {} if self.CLUSTER is None else {"cluster": [*self.CLUSTER, 1]}
        self.kernel(tma_a, gA_tma, tma_b, gB_tma, c, tiled_mma, a_ring, b_ring, nbytes).launch(
            grid=gemm_grid(c, tile), block=[self.THREADS, 1, 1], stream=stream, **cluster
        )

    @cute.kernel
    def kernel(
        self,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mC: cute.Tensor,
        tiled_mma: cute.TiledMma,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        slot_bytes: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bm, bn, _ = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA, sB = smem_rings(storage, a_ring, b_ring)
        self.body(
            SimpleNamespace(
                tidx=tidx,
                warp=warp,
                storage=storage,
                tiled_mma=tiled_mma,
                tma_a=tma_a,
                tma_b=tma_b,
                sA=sA,
                sB=sB,
                gA=cute.local_tile(mA, (self.BM, self.BK), (bm, None)),  # (BM, BK, k_tiles)
                gB=cute.local_tile(mB, (self.BN, self.BK), (bn, None)),  # (BN, BK, k_tiles)
                gC=cute.local_tile(mC, (self.BM, self.BN), (bm, bn)),
                slot_bytes=slot_bytes,
            )
        )

    def body(self, g):
        raise NotImplementedError


def fake_gemm_args():
    """Fake K-major fp16 A (m, k), B (n, k), row-major fp32 C (m, n), symbolic extents, and a
    fake stream."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n, k = cute.sym_int(), cute.sym_int(), cute.sym_int()
    a = make_fake_compact_tensor(cutlass.Float16, (m, k), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(cutlass.Float16, (n, k), stride_order=(1, 0), assumed_align=16)
    c = make_fake_compact_tensor(cutlass.Float32, (m, n), stride_order=(1, 0), assumed_align=16)
    return a, b, c, make_fake_stream()


def check_gemm(gemm, m: int, n: int, k: int) -> float:
    """GPU: compile and run gemm (a __call__(a, b, c, stream) object) on random fp16 A, B into
    a NaN-filled fp32 C; assert C matches torch in fp32; return the max abs error."""
    import torch
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    args = [cute_view(t) for t in (a, b, c)]
    stream = current_stream()
    cute.compile(gemm, *args, stream)(*args, stream)
    torch.cuda.synchronize()
    err = (c - (a.float() @ b.float().t())).abs().max().item()
    assert err < 1e-2 * k**0.5, f"max abs error {err}"
    return err
