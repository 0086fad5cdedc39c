"""Small pieces shared by the sm_100a tcgen05 GEMM snippets (not a snippet itself: its name
starts with _). C (M, N[, L]) = A (M, K[, L]) @ B (N, K[, L])^T, fp16 in, fp32 accumulate in
TMEM, A and B K-major, M and N multiples of the tile. Host side: the tiled MMA, the staged A/B
SMEM rings and their TMA atoms, the TMA-store atom for C. Device side: the TMA-warp load loop,
the MMA-warp K loop, the global tiles partitioned for TMA (one tile or the whole tile space)
and a plain epilogue (TMEM -> registers -> global), so that each snippet writes only the part
its entry is about. The fake tensors let everything compile on a CPU for sm_100a."""

from types import SimpleNamespace

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.tensor_utils import LayoutEnum

IO = cutlass.Float16
ACC = cutlass.Float32
# Epilogue warps first: warp w may only touch TMEM lanes 32 * (w % 4) .. + 31.
EPI_WARPS, MMA_WARP, TMA_WARP = (0, 1, 2, 3), 4, 5
EPI_THREADS = 32 * len(EPI_WARPS)
THREADS = EPI_THREADS + 2 * 32
BK = 64


def make_tiled_mma(pair: int, tile_n: int, dtype=IO, a_source=tcgen05.OperandSource.SMEM):
    """One tcgen05 f16/bf16 MMA atom, M = 128 per CTA (x2 for a CTA pair), K-major, A from
    SMEM (or TMEM: a_source), B from SMEM."""
    return cute.make_tiled_mma(
        tcgen05.MmaF16BF16Op(
            dtype,
            ACC,
            (128 * pair, tile_n, 16),
            tcgen05.CtaGroup.TWO if pair == 2 else tcgen05.CtaGroup.ONE,
            a_source,
            cute.nvgpu.OperandMajorMode.K,
            cute.nvgpu.OperandMajorMode.K,
        )
    )


def make_ab_loads(tiled_mma, mma_tiler, a, b, stages: int, cluster_vmnk, load_op):
    """Staged A/B SMEM layouts, their TMA atoms and the bytes one stage brings to one CTA
    (cluster_vmnk None: no cluster)."""
    cluster = {} if cluster_vmnk is None else {"cluster_shape_vmnk": cluster_vmnk.shape}
    a_ring = sm100_utils.make_smem_layout_a(tiled_mma, mma_tiler, a.element_type, stages)
    b_ring = sm100_utils.make_smem_layout_b(tiled_mma, mma_tiler, b.element_type, stages)
    a_slot = cute.slice_(a_ring, (None, None, None, 0))
    b_slot = cute.slice_(b_ring, (None, None, None, 0))
    tma_a, gA = cute.nvgpu.make_tiled_tma_atom_A(
        load_op, a, a_slot, mma_tiler, tiled_mma, **cluster
    )
    tma_b, gB = cute.nvgpu.make_tiled_tma_atom_B(
        load_op, b, b_slot, mma_tiler, tiled_mma, **cluster
    )
    slot_bytes = cute.size_in_bytes(a.element_type, a_slot) + cute.size_in_bytes(
        b.element_type, b_slot
    )
    return a_ring, b_ring, tma_a, gA, tma_b, gB, slot_bytes


def make_operands(a: cute.Tensor, b: cute.Tensor, tile_n: int, stages: int, tma_op=None):
    """Inside @cute.jit, one CTA per 128xN tile, no cluster: (tiled_mma, mma tiler, A ring,
    B ring, (tma_a, mA), (tma_b, mB), bytes of one A+B slot)."""
    tiled_mma = make_tiled_mma(1, tile_n)
    tiler = (128, tile_n, BK)
    if tma_op is None:
        tma_op = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    a_ring, b_ring, tma_a, mA, tma_b, mB, slot_bytes = make_ab_loads(
        tiled_mma, tiler, a, b, stages, None, tma_op
    )
    return tiled_mma, tiler, a_ring, b_ring, (tma_a, mA), (tma_b, mB), slot_bytes


def single_cta_operands(a: cute.Tensor, b: cute.Tensor, tile_n: int, stages: int):
    """make_operands with the trivial cluster layout spelled out, for kernels whose pipelines
    take one: (tiled_mma, mma tiler, cluster_vmnk, A ring, B ring, tma_a, mA, tma_b, mB, bytes
    of one A+B slot)."""
    tiled_mma = make_tiled_mma(1, tile_n)
    tiler = (128, tile_n, BK)
    cluster_vmnk = cute.tiled_divide(cute.make_layout((1, 1, 1)), (tiled_mma.thr_id,))
    a_ring, b_ring, tma_a, mA, tma_b, mB, slot_bytes = make_ab_loads(
        tiled_mma,
        tiler,
        a,
        b,
        stages,
        cluster_vmnk,
        cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE),
    )
    return tiled_mma, tiler, cluster_vmnk, a_ring, b_ring, tma_a, mA, tma_b, mB, slot_bytes


def tile_grid(c: cute.Tensor, bm: int, bn: int):
    """One CTA per (bm, bn) tile of C (M, N): the launch grid."""
    return (cute.ceil_div(cute.size(c, mode=[0]), bm), cute.ceil_div(cute.size(c, mode=[1]), bn), 1)


def smem_ab(storage, a_ring, b_ring):
    """Inside the kernel: the A and B rings of the allocated storage as swizzled tensors."""
    sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
    sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
    return sA, sB


def ab_acc_pipelines(storage, slot_bytes, ab_stages, acc_stages, acc_consumers, cluster_vmnk):
    """Inside the kernel: the TMA -> MMA A/B pipeline (one thread each side, slot_bytes per
    stage) and the MMA -> epilogue accumulator pipeline (acc_consumers arrivals), as
    participants: (ab_producer, ab_consumer, acc_producer, acc_consumer)."""
    one = pipeline.CooperativeGroup(pipeline.Agent.Thread)
    ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
        barrier_storage=storage.ab_bars.data_ptr(),
        num_stages=ab_stages,
        producer_group=one,
        consumer_group=one,
        tx_count=slot_bytes,
        cta_layout_vmnk=cluster_vmnk,
    ).make_participants()
    acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
        barrier_storage=storage.acc_bars.data_ptr(),
        num_stages=acc_stages,
        producer_group=one,
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, acc_consumers),
        cta_layout_vmnk=cluster_vmnk,
    ).make_participants()
    return ab_producer, ab_consumer, acc_producer, acc_consumer


def tile_counts(c: cute.Tensor, tiler):
    """(tiles along M, tiles along N, L) of C (M, N, L) for the tiler's (M, N)."""
    return cute.zipped_divide(c, tiler=(tiler[0], tiler[1]))[(0, (None, None, None))].shape


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


def partition_one_tile(tiled_mma, tiler, tma_a, mA, tma_b, mB, mC, sA, sB, coord):
    """This CTA's tile at coord (m, n, None): TMA views of its A and B over K and of the rings,
    the MMA fragments of the rings, its C tile partitioned for the MMA, the accumulator layout
    (one stage) and the K-tile count: (tAsA, tAgA, tBsB, tBgB, tCrA, tCrB, tCgC, acc_layout,
    k_tiles)."""
    gA = cute.local_tile(mA, tiler, coord, proj=(1, None, 1))  # (BM, BK, k_tiles)
    gB = cute.local_tile(mB, tiler, coord, proj=(None, 1, 1))  # (BN, BK, k_tiles)
    gC = cute.local_tile(mC, tiler, coord, proj=(1, 1, None))  # (BM, BN)
    thr_mma = tiled_mma.get_slice(0)
    tAsA, tAgA, tBsB, tBgB = partition_ab(tma_a, tma_b, gA, gB, sA, sB, thr_mma)
    acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(tiler[:2])).layout
    return (
        tAsA,
        tAgA,
        tBsB,
        tBgB,
        tiled_mma.make_fragment_A(sA),
        tiled_mma.make_fragment_B(sB),
        thr_mma.partition_C(gC),
        acc_layout,
        cute.size(gA, mode=[2]),
    )


@cute.jit
def partition_all_tiles(tiled_mma, tiler, tma_a, mA, tma_b, mB, mC, sA, sB):
    """Every tile of A, B and C (M, N, L), partitioned for TMA / the MMA: tAgA[(None, m, k, l)],
    tBgB[(None, n, k, l)], tCgC[(None, None, None, m, n, l)], plus the SMEM sides."""
    every = (None, None, None)
    gA = cute.local_tile(mA, (tiler[0], tiler[2]), every)  # (BM, BK, m, k, l)
    gB = cute.local_tile(mB, (tiler[1], tiler[2]), every)  # (BN, BK, n, k, l)
    gC = cute.local_tile(mC, (tiler[0], tiler[1]), every)  # (BM, BN, m, n, l)
    thr_mma = tiled_mma.get_slice(0)
    tAsA, tAgA, tBsB, tBgB = partition_ab(tma_a, tma_b, gA, gB, sA, sB, thr_mma)
    return tAsA, tAgA, tBsB, tBgB, thr_mma.partition_C(gC)


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


def acc_subtiles(acc, tidx, n_subtiles, *views, rep=None):
    """tcgen05.ld of one TMEM accumulator (MMA, MMA_M, MMA_N) in n_subtiles column slices,
    32 lanes per warp: (the TMEM->register copy, its source (.., j), and each view of the same
    shape (a C tile, its coordinates) partitioned alike (.., j)). rep: columns per tcgen05.ld
    (default: a whole slice)."""
    cols = cute.size(acc, mode=[0, 1]) // n_subtiles
    epi = ((cute.size(acc, mode=[0, 0]), cols),)
    acc_epi = cute.zipped_divide(acc, epi)  # (EpiTile, n_subtiles)
    op = tcgen05.Ld32x32bOp(getattr(tcgen05.Repetition, f"x{rep or cols}"))
    t2r = tcgen05.make_tmem_copy(cute.make_copy_atom(op, ACC), acc_epi[None, 0])
    thr = t2r.get_slice(tidx)
    views = tuple(thr.partition_D(cute.zipped_divide(v, epi)) for v in views)
    return (t2r, thr.partition_S(acc_epi), *views)


@cute.jit
def store_acc_direct(acc, tCgC, tidx, n_subtiles: cutlass.Constexpr):
    """Epilogue warps: TMEM -> registers (tcgen05.ld, 32 lanes per warp) -> C's element type
    -> global, in n_subtiles column slices of the accumulator."""
    t2r, src, dst = acc_subtiles(acc, tidx, n_subtiles, tCgC, rep=32)
    regs = cute.make_rmem_tensor(dst[None, None, 0].shape, ACC)
    out = cute.make_rmem_tensor(dst[None, None, 0].shape, tCgC.element_type)
    for i in cutlass.range(cute.size(src, mode=[2])):
        cute.copy(t2r, src[None, None, i], regs)
        out.store(regs.load().to(tCgC.element_type))
        cute.autovec_copy(out, dst[None, None, i])


@cute.jit
def store_acc(acc: cute.Tensor, tCgC: cute.Tensor, tidx):
    """Epilogue warps (EPI_THREADS threads, tidx 0..127): one 128xN TMEM accumulator
    (MMA, MMA_M, MMA_N) -> registers, 32 columns at a time -> C tile."""
    store_acc_direct(acc, tCgC, tidx, cute.size(acc, mode=[0, 1]) // 32)


def fake_args(batched: bool = False, c_dtype=IO):
    """Fake K-major fp16 A (m, k[, l]), B (n, k[, l]) and row-major C (m, n[, l]) of c_dtype,
    symbolic extents (l when batched), and a fake stream."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n, k, l = (cute.sym_int() for _ in range(4))
    tail, order = ((l,), (1, 0, 2)) if batched else ((), (1, 0))

    def fake(dtype, *extents):
        return make_fake_compact_tensor(dtype, extents + tail, stride_order=order, assumed_align=16)

    return fake(IO, m, k), fake(IO, n, k), fake(c_dtype, m, n), make_fake_stream()


def fake_mkl_args():
    """fake_args for C (M, N, L) fp32 = A (M, K, L) fp16 @ B (N, K, L)^T."""
    return fake_args(batched=True, c_dtype=ACC)


# ---- a warp-specialised tcgen05 GEMM kernel with its roles left to the snippet -------------


def storage_struct(a_ring, b_ring, ab_stages: int, acc_stages: int, tmem="tmem_base", **extra):
    """The SMEM struct of a warp-specialised GEMM: A/B and accumulator barriers, the TMEM base
    address (a field named tmem), the snippet's own fields (extra, in order), then the
    1024-aligned A/B rings."""
    fields = {
        "ab_bars": cute.struct.MemRange[cutlass.Int64, 2 * ab_stages],
        "acc_bars": cute.struct.MemRange[cutlass.Int64, 2 * acc_stages],
        tmem: cutlass.Int32,
        **extra,
        "sA": cute.struct.Align[cute.struct.MemRange[IO, cute.cosize(a_ring)], 1024],
        "sB": cute.struct.Align[cute.struct.MemRange[IO, cute.cosize(b_ring)], 1024],
    }
    return cute.struct(type("Storage", (), {"__annotations__": fields}))


class WarpSpecializedGemm:
    """C (M, N, L) fp32 = A (M, K, L) fp16 @ B (N, K, L)^T with TMA warp 5, MMA warp 4 and
    epilogue warps 0-3 (plus EXTRA_WARPS), AB_STAGES A/B slots and ACC_STAGES TMEM
    accumulators. The host entry and the kernel's prologue (SMEM, both pipelines, the TMEM
    allocator, every tile partitioned) are here; a subclass says how many CTAs run (grid),
    adds SMEM fields (extra_storage) and writes what the warps do (roles(g), a @cute.jit
    method; g holds the prologue's objects by name, and g.extra the tuple of further tensors
    the caller passed as extra)."""

    BN = 128
    AB_STAGES = 4
    ACC_STAGES = 2
    EXTRA_WARPS = 0
    CLUSTER = None  # or a launch cluster shape such as (1, 1, 1)

    @property
    def threads(self) -> int:
        return 32 * (len(EPI_WARPS) + 2 + self.EXTRA_WARPS)

    def grid(self, c, tiler):
        return tile_counts(c, tiler)

    def extra_storage(self) -> dict:
        return {}

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream, extra=()):
        tiled_mma, tiler, a_ring, b_ring, (tma_a, mA), (tma_b, mB), slot_bytes = make_operands(
            a, b, self.BN, self.AB_STAGES
        )
        acc_shape = tiled_mma.partition_shape_C(tiler[:2])
        acc_layout = tiled_mma.make_fragment_C(cute.append(acc_shape, self.ACC_STAGES)).layout
        self.storage = storage_struct(
            a_ring, b_ring, self.AB_STAGES, self.ACC_STAGES, **self.extra_storage()
        )
        cluster = {} if self.CLUSTER is None else {"cluster": list(self.CLUSTER)}
        self.kernel(
            tiled_mma, tiler, tma_a, mA, tma_b, mB, c, a_ring, b_ring, acc_layout, slot_bytes, extra
        ).launch(grid=self.grid(c, tiler), block=[self.threads, 1, 1], stream=stream, **cluster)

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tiler: cutlass.Constexpr,
        tma_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_b: cute.CopyAtom,
        mB: cute.Tensor,
        mC: cute.Tensor,
        a_ring: cute.ComposedLayout,
        b_ring: cute.ComposedLayout,
        acc_layout: cute.Layout,
        slot_bytes: cutlass.Constexpr,
        extra: tuple,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == TMA_WARP:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)

        storage = cutlass.memory.SmemAllocator().allocate(self.storage)
        sA = storage.sA.get_tensor(a_ring.outer, swizzle=a_ring.inner)
        sB = storage.sB.get_tensor(b_ring.outer, swizzle=b_ring.inner)
        thread = pipeline.CooperativeGroup(pipeline.Agent.Thread)
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_bars.data_ptr(),
            num_stages=self.AB_STAGES,
            producer_group=thread,
            consumer_group=thread,
            tx_count=slot_bytes,
        ).make_participants()
        acc_producer, acc_consumer = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_bars.data_ptr(),
            num_stages=self.ACC_STAGES,
            producer_group=thread,
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, EPI_THREADS),
        ).make_participants()
        # Epilogue warp 0 allocates; the MMA warp and the epilogue warps read the address.
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_base.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(
                barrier_id=1, num_threads=32 * (1 + len(EPI_WARPS))
            ),
            allocator_warp_id=EPI_WARPS[0],
        )
        tAsA, tAgA, tBsB, tBgB, tCgC = partition_all_tiles(
            tiled_mma, tiler, tma_a, mA, tma_b, mB, mC, sA, sB
        )
        self.roles(
            SimpleNamespace(
                tidx=tidx,
                warp_idx=warp_idx,
                block=cute.arch.block_idx(),
                tiler=tiler,
                mC=mC,
                extra=extra,
                storage=storage,
                tiled_mma=tiled_mma,
                tma_a=tma_a,
                tma_b=tma_b,
                tAsA=tAsA,
                tAgA=tAgA,
                tBsB=tBsB,
                tBgB=tBgB,
                tCgC=tCgC,
                tCrA=tiled_mma.make_fragment_A(sA),
                tCrB=tiled_mma.make_fragment_B(sB),
                k_tiles=cute.size(tAgA, mode=[2]),
                ab_producer=ab_producer,
                ab_consumer=ab_consumer,
                acc_producer=acc_producer,
                acc_consumer=acc_consumer,
                tmem=tmem,
                acc_layout=acc_layout,
            )
        )

    def roles(self, g):
        raise NotImplementedError


@cute.jit
def mma_one_tile(acc_producer, ab_consumer, tiled_mma, acc_tmem, tCrA, tCrB, k_tiles):
    """MMA warp, one output tile of a persistent walk: a free TMEM accumulator, the K loop
    into it from zero, commit. Returns what it advanced (the two participants) and tiled_mma,
    to be rebound in the caller's loop so that the tracer carries them."""
    acc = acc_producer.acquire_and_advance()
    ab_consumer.reset()
    tiled_mma = mma_k_tiles(
        ab_consumer, tiled_mma, acc_tmem[(None, None, None, acc.index)], tCrA, tCrB, k_tiles
    )
    acc.commit()  # tcgen05.commit: the buffer is full when these MMAs finish
    return acc_producer, ab_consumer, tiled_mma


@cute.jit
def store_one_tile(acc_consumer, acc_tmem, c_tile, tidx):
    """Epilogue warps, one output tile: wait for a full accumulator, drain it to C, free it.
    Returns acc_consumer, to be rebound in the caller's loop."""
    full = acc_consumer.wait_and_advance()
    store_acc(acc_tmem[(None, None, None, full.index)], c_tile, tidx)
    cute.arch.fence_view_async_tmem_load()  # the TMEM reads are done ...
    full.release()  # ... so the MMA warp may reuse this buffer
    return acc_consumer


def free_tmem(tmem, acc_tmem):
    """Epilogue warps, at the end: all of them are past their last TMEM read, then free."""
    pipeline.NamedBarrier(barrier_id=2, num_threads=EPI_THREADS).arrive_and_wait()
    tmem.relinquish_alloc_permit()
    tmem.free(acc_tmem.iterator)


class StaticPersistentGemm(WarpSpecializedGemm):
    """A persistent WarpSpecializedGemm: grid = min(tiles, MAX_ACTIVE_CTAS) and every role walks
    tiles block_idx, block_idx + grid_dim, ... (M fastest). The TMA warp's loads of one tile
    are load_tile(), which a subclass may replace; it returns the producer it advanced."""

    # What utils.HardwareInfo().get_max_active_clusters(1) returns on the target GPU (one CTA
    # per SM at this SMEM size); a constant because the CPU compile has no GPU to ask.
    MAX_ACTIVE_CTAS = 128

    def grid(self, c, tiler):
        return (cutlass.min(cute.size(tile_counts(c, tiler)), self.MAX_ACTIVE_CTAS), 1, 1)

    @cute.jit
    def load_tile(self, producer, g, a_tiles, b_tiles):
        producer.reset()
        load_k_tiles(producer, g.tma_a, a_tiles, g.tAsA, g.tma_b, b_tiles, g.tBsB, g.k_tiles)
        return producer

    @cute.jit
    def roles(self, g):
        warp_idx, tmem, tiled_mma, tCgC = g.warp_idx, g.tmem, g.tiled_mma, g.tCgC
        ab_producer, ab_consumer = g.ab_producer, g.ab_consumer
        acc_producer, acc_consumer = g.acc_producer, g.acc_consumer
        tiles_m, tiles_n = cute.size(tCgC, mode=[3]), cute.size(tCgC, mode=[4])
        num_tiles = tiles_m * tiles_n * cute.size(tCgC, mode=[5])
        first = g.block[0]
        step = cute.arch.grid_dim()[0]

        if warp_idx == TMA_WARP:
            for t in cutlass.range(first, num_tiles, step, unroll=1):
                tm, tl = t % tiles_m, t // (tiles_m * tiles_n)
                tn = (t // tiles_m) % tiles_n
                a_tiles = g.tAgA[(None, tm, None, tl)]
                b_tiles = g.tBgB[(None, tn, None, tl)]
                ab_producer = self.load_tile(ab_producer, g, a_tiles, b_tiles)
            ab_producer.tail()

        if warp_idx == MMA_WARP:
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(ACC), g.acc_layout)
            for _t in cutlass.range(first, num_tiles, step, unroll=1):
                acc_producer, ab_consumer, tiled_mma = mma_one_tile(
                    acc_producer, ab_consumer, tiled_mma, acc_tmem, g.tCrA, g.tCrB, g.k_tiles
                )
            acc_producer.tail()

        if warp_idx < MMA_WARP:
            tmem.allocate(self.ACC_STAGES * self.BN)
            tmem.wait_for_alloc()
            acc_tmem = cute.make_tensor(tmem.retrieve_ptr(ACC), g.acc_layout)
            for t in cutlass.range(first, num_tiles, step, unroll=1):
                tm, tl = t % tiles_m, t // (tiles_m * tiles_n)
                tn = (t // tiles_m) % tiles_n
                c_tile = tCgC[(None, None, None, tm, tn, tl)]
                acc_consumer = store_one_tile(acc_consumer, acc_tmem, c_tile, g.tidx)
            free_tmem(tmem, acc_tmem)
