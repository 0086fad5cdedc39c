"""A paged cache read by TMA, the page index from the page table used as a TMA coordinate.

One TMA descriptor covers the whole pool of pages, seen as (num_pages * PAGE, D) rows; its
box is one PAGE-token x 64-column chunk, landing as one 128-byte-swizzled 8 KB chunk of the
SMEM page (the K-major WGMMA atom tiled rows first). A page is D / 64 boxes. Which page is
fetched is decided at run time: warp 0 reads the page index from the page table and passes it
as the box's page coordinate (`tKgK[None, page, c]`); no descriptor is built per page.

The kernel here is a gather (one CTA per (sequence, logical page): TMA the physical page into
SMEM, then store it densely), so the check can compare with torch indexing. In an attention
kernel the SMEM page feeds the MMAs instead (mla_decode_sm90 with loads=tma).

Shown in knowledge/languages/cute-dsl/optimizations/paged-kv-through-tma-coordinates.md.
"""

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync, warpgroup

SM = "sm_90a"
EXPECT = "pass"
TIMEOUT_S = 120

PAGE = 64  # tokens per page (= TMA box rows)
D = 576  # columns per token (MLA: 512 latent + 64 rope)
CHUNK = 64  # TMA box columns: 64 x 2 B = one 128-byte swizzle row
N_CHUNKS = D // CHUNK
THREADS = 128

# snippet:begin
PAGE_BYTES = PAGE * D * 2  # 16-bit elements


@cute.jit
def gather_pages(cache: cute.Tensor, page_table: cute.Tensor, out: cute.Tensor, stream):
    """out[b, n * PAGE + t, :] = cache[page_table[b, n], t, :] for every logical page n."""
    dt = cache.element_type
    # the pool as rows: one descriptor for every page, the page is a coordinate
    rows = cute.make_tensor(
        cache.iterator, cute.make_layout((cache.shape[0] * PAGE, D), stride=(D, 1))
    )
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dt)
    page_layout = cute.tile_to_shape(atom, (PAGE, D), (0, 1))  # rows first: chunk = 8 KB
    chunk_layout = cute.tile_to_shape(atom, (PAGE, CHUNK), (0, 1))
    tma_atom, mRows = cpasync.make_tiled_tma_atom(
        cpasync.CopyBulkTensorTileG2SOp(), rows, chunk_layout, (PAGE, CHUNK)
    )

    @cute.struct
    class Storage:
        sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(page_layout)], 1024]
        bar: cute.struct.MemRange[cutlass.Int64, 1]

    gather_kernel(tma_atom, mRows, page_table, out, page_layout, Storage).launch(
        grid=[page_table.shape[0], page_table.shape[1], 1], block=[THREADS, 1, 1], stream=stream
    )


@cute.kernel
def gather_kernel(
    tma_atom: cute.CopyAtom,
    mRows: cute.Tensor,  # the TMA view of the pool, (num_pages * PAGE, D)
    mPT: cute.Tensor,  # (b, pages) int32
    mOut: cute.Tensor,  # (b, pages * PAGE, D)
    page_layout: cute.ComposedLayout,
    Storage: cutlass.Constexpr,
):
    tidx, _, _ = cute.arch.thread_idx()
    b, n, _ = cute.arch.block_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    storage = cutlass.memory.SmemAllocator().allocate(Storage)
    sK = storage.sK.get_tensor(page_layout.outer, swizzle=page_layout.inner)
    bar = storage.bar.data_ptr()
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)  # one arrival: the producer's, with the page's bytes
    cute.arch.mbarrier_init_fence()
    cute.arch.barrier()

    # (PAGE, CHUNK, page, chunk) boxes of the pool; the SMEM page as (PAGE, CHUNK, chunk)
    gBoxes = cute.local_tile(mRows, (PAGE, CHUNK), (None, None))
    sChunks = cute.flat_divide(sK, (PAGE, CHUNK))[None, None, 0, None]
    tKsK, tKgK = cpasync.tma_partition(
        tma_atom, 0, cute.make_layout(1),
        cute.group_modes(sChunks, 0, 2), cute.group_modes(gBoxes, 0, 2),
    )  # fmt: skip  # tKsK: (TMA, chunk); tKgK: (TMA, page, chunk)
    if warp == 0:
        cpasync.prefetch_descriptor(tma_atom)
        page = mPT[b, n]  # the physical page: a run-time TMA coordinate
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bar, PAGE_BYTES)
        for c in cutlass.range_constexpr(N_CHUNKS):
            cute.copy(tma_atom, tKgK[None, page, c], tKsK[None, c], tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)  # all D / 64 boxes have landed

    # consumer: here a dense store (an attention kernel would run its MMAs on sK)
    for i in cutlass.range(tidx, PAGE * D, THREADS, unroll=1):
        t = i // D
        mOut[b, n * PAGE + t, i - t * D] = sK[t, i - t * D]


# snippet:end


def _fake_args():
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    pages, b, n, tokens = cute.sym_int(), cute.sym_int(), cute.sym_int(), cute.sym_int()
    cache = make_fake_compact_tensor(
        cutlass.BFloat16, (pages, PAGE, D), stride_order=(2, 1, 0), assumed_align=16
    )
    table = make_fake_compact_tensor(cutlass.Int32, (b, n), stride_order=(1, 0))
    out = make_fake_compact_tensor(
        cutlass.BFloat16, (b, tokens, D), stride_order=(2, 1, 0), assumed_align=16
    )
    return cache, table, out, make_fake_stream()


def compile_snippet():
    """CPU: compile for SM with fake tensors (any pool size, batch and table width)."""
    cute.compile(gather_pages, *_fake_args())
    return f"one TMA descriptor, {N_CHUNKS} boxes of {PAGE}x{CHUNK} per page, compiled"


def check():
    """GPU: gather pages in a random order from a pool with spare pages; compare with torch."""
    import torch
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    torch.manual_seed(0)
    b, n, spare = 3, 5, 7
    pool = b * n + spare
    cache = torch.randn(pool, PAGE, D, device="cuda", dtype=torch.bfloat16)
    table = torch.randperm(pool, device="cuda")[: b * n].view(b, n).to(torch.int32)
    out = torch.full((b, n * PAGE, D), float("nan"), device="cuda", dtype=torch.bfloat16)
    stream = current_stream()
    args = [from_dlpack(t, assumed_align=16) for t in (cache, table, out)]
    f = cute.compile(gather_pages, *args, stream)
    f(*args, stream)
    torch.cuda.synchronize()
    ref = cache[table.long()].reshape(b, n * PAGE, D)
    assert torch.equal(out, ref), "gathered pages differ from cache[page_table]"
    return f"{b * n} pages of {PAGE}x{D} gathered from a pool of {pool} by TMA coordinate: equal"
