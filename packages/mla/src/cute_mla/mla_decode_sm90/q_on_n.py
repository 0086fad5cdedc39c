"""MLA decode for Hopper (sm_90a), steps 40 and 41: the query rows on WGMMA's N dimension
(``--config step=40`` or ``step=41``; s*h = 16 or 32, 16-bit cache).

Why (issue 11; the devlog's h_q = 16 rows): the seesaw schedule (:mod:`.seesaw`) computes
S = Q K^T with the s*h packed query rows on WGMMA's M, which is 64 per instruction. At s*h = 16
three quarters of every S and PV WGMMA and of the O accumulator are padding rows, so at h_q = 16
the kernel does the tensor work of h_q = 64 (measured: 168.8 us at (128, 4096) against 179.5 us
at h_q = 64, both short of the KV-read bound). Transposed, nothing is padding:

    S^T = K Q^T      M = the page's 64 tokens, N = n = s*h query rows, K = 576
    O^T += V^T P^T   M = the 512 latent columns (8 tiles of 64), N = n, K = the 64 tokens

(WGMMA takes N in multiples of 8, so n = 16 or 32 is one instruction wide.) The A operands are
the page itself, K-major as the TMA lands it for S^T, and V^T for O^T: the same bytes seen
MN-major (:meth:`.kernel.MlaDecodeSm90Kernel.smem_layouts`'s ``sVt``; 16-bit WGMMA reads an
MN-major A from SMEM). The B operands are Q (n x 576) and P^T (n x 64), both K-major in SMEM.
Per page that is 36 + 32 WGMMAs of m64nNk16 instead of the seesaw's 36 m64n64 + 8 m64n256 per
warpgroup.

One warpgroup (128 threads) does everything; warp 0 also issues the TMAs. A page lands as 9
chunks of 64 tokens x 64 columns (8 KB, one TMA and one mbarrier each, as in step 3) in a ring of
chunk slots: chunk j of the CTA's stream (page j // 9 of its work, in order, across segments)
goes to slot j % slots. Step 40 has 18 slots, i.e. two whole-page stages; step 41 as many as
SMEM holds beside Q and P (:func:`ring_slots`: 25 at n = 16, 23 at n = 32), so that after page
g is released chunks up to 9 g + 8 + slots are in flight: 2 7/9 pages instead of 2. (Step 40
measured on the H200: as fast as FlashInfer at h = 16 while the SM clock held 1980 MHz, 6-8%
slower once it dropped to 1710-1875 MHz, where FlashInfer lost 1-3%: the per-page chain, not
the DRAM, set its pace, and more bytes in flight hide more of the chain.) Per page:

1. S^T: the 36 k-blocks, each chunk's 4 issued once its mbarrier has flipped;
2. the softmax runs down the columns (one per query row): a thread holds 2 tokens of n/4
   columns, the column max goes through 3 shuffles (lanes xor 4, 8, 16) and then SMEM across
   the 4 warps (one CTA barrier); the rescale factor of a column applies to the same columns of
   O^T, which the m64nN accumulator gives the same thread (both have N = n);
3. the tail's V rows (slots past the sequence's end, NaN in the check) are zeroed in SMEM, P^T
   (dtype) is stored through a transposed view of the P tile, fence.proxy.async, CTA barrier;
4. O^T += V^T P^T (32 WGMMAs; latent tile i reads chunk i alone), wait, CTA barrier: the
   page's 9 slots are free, and warp 0 issues the chunks that now fit (the load cursor runs
   across segments, so the next sequence's first pages are in flight during this one's last).

The work list, the partial O and LSE of a sequence cut in pieces and the PDL combine are step
11's (:class:`.mla_decode_sm90.WorkList`, :meth:`.kernel.MlaDecodeSm90Kernel.launch_combine`);
the grid is one CTA per part. O^T is stored from the accumulator registers (O is 2 MB at B =
128 against 604 MB of KV read).
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup

from .kernel import (
    CHUNK,
    CHUNK_BYTES,
    D_QK,
    D_V,
    LN_2,
    LOG2_E,
    N_CHUNKS,
    PAGE,
    MlaDecodeSm90Kernel,
    _mn_view,
)
from .mla_decode_sm90 import PARTS_CAP, Q_ON_N_ROWS
from .seesaw import EVICT_FIRST

#: one warpgroup: the math, and warp 0 issues the page TMAs
THREADS_N = 128
WARPS_N = THREADS_N // 32
#: step 40's ring: two whole pages
STAGE_SLOTS = 2 * N_CHUNKS
#: the opt-in dynamic SMEM of one CTA on sm_90 (227 KB)
SMEM_CAP = 227 * 1024
#: what the ring leaves for the column maxima and sums, the mbarriers and the alignment
SMEM_SPARE = 2048


def ring_slots(n: int, ring: bool) -> int:
    """Chunk slots (8 KB each) of the page ring for n = s*h query rows: 18 (two pages, step 40)
    or, with ``ring`` (step 41), as many as fit in :data:`SMEM_CAP` beside Q (n x 576) and P
    (n x 64) in the dtype and :data:`SMEM_SPARE`: 25 at n = 16, 23 at n = 32."""
    if not ring:
        return STAGE_SLOTS
    free = SMEM_CAP - n * D_QK * 2 - n * PAGE * 2 - SMEM_SPARE
    return free // CHUNK_BYTES


class MlaDecodeSm90QOnN(MlaDecodeSm90Kernel):
    """Steps 40 and 41 (see the module docstring): s*h in
    :data:`.mla_decode_sm90.Q_ON_N_ROWS`, a 16-bit cache, the work list; ``ring`` builds step
    41 (:func:`ring_slots` chunk slots instead of 18). Same ``__call__`` arguments as the
    seesaw schedule's (:class:`.seesaw.MlaDecodeSm90Seesaw`); the FP8 tensors and
    ``split_count`` are unused. Raises ValueError for another s*h."""

    def __init__(self, s: int, h: int, causal: bool, dtype=cutlass.BFloat16, ring: bool = False):
        if s * h not in Q_ON_N_ROWS:
            raise ValueError(f"steps 40 and 41 take s*h in {Q_ON_N_ROWS} (got s={s}, h={h})")
        super().__init__(s, h, causal, dtype, loads="tma")
        self.n = s * h
        self.step = 41 if ring else 40
        self.slots = ring_slots(self.n, ring)
        self.work_list = True
        self.combine_batch = 4  # step 8's
        self.kv_cache_policy = EVICT_FIRST  # step 7's

    @cute.jit
    def __call__(
        self,
        q: cute.Tensor,  # (b, s, h, 576)
        kv_cache: cute.Tensor,  # (num_pages, 64, 576)
        page_table: cute.Tensor,  # (b, table_pages) int32
        seqlens: cute.Tensor,  # (b,) int32
        o: cute.Tensor,  # (b, s, h, 512)
        lse: cute.Tensor,  # (b, s, h) float32
        o_acc: cute.Tensor,  # (cap, b, s, h, 512) float32 workspace
        lse_acc: cute.Tensor,  # (cap, b, s, h) float32 workspace (log2)
        kv_scales: cute.Tensor,  # unused (16-bit cache)
        kv_rope: cute.Tensor,  # unused
        split_count: cute.Tensor,  # unused
        work: cute.Tensor,  # (rows, 4) int32: the work list (WorkList.rows)
        softmax_scale: cutlass.Float32,
        num_splits: cutlass.Int32,  # the work list's parts: the grid
        pages_per_split: cutlass.Int32,  # unused (the work list has its own ranges)
        split: cutlass.Constexpr,  # some sequence is in more than one piece: the combine runs
        stream: cuda.CUstream,
    ):
        dt = self.dtype
        n = self.n
        b = q.shape[0]
        # views with static inner strides: Q as (b, query row, 576); O, the partial O and LSE
        # transposed, (.., latent column, query row), to match the O^T accumulator
        mQ = cute.make_tensor(
            q.iterator, cute.make_layout((b, n, D_QK), stride=(n * D_QK, D_QK, 1))
        )
        mOt = cute.make_tensor(o.iterator, cute.make_layout((b, D_V, n), stride=(n * D_V, 1, D_V)))
        mL = cute.make_tensor(lse.iterator, cute.make_layout((b, n), stride=(n, 1)))
        cap = o_acc.shape[0]
        mOat = cute.make_tensor(
            o_acc.iterator,
            cute.make_layout(
                (cap, b, D_V, n),
                stride=(cute.assume(b * (n * D_V), divby=n * D_V), n * D_V, 1, D_V),
            ),
        )
        mLa = cute.make_tensor(
            lse_acc.iterator,
            cute.make_layout((cap, b, n), stride=(cute.assume(b * n, divby=n), n, 1)),
        )
        mWork = cute.make_tensor(work.iterator, cute.make_layout((work.shape[0], 4), stride=(4, 1)))

        K = cute.nvgpu.OperandMajorMode.K
        MN = cute.nvgpu.OperandMajorMode.MN
        # S^T = K Q^T: A = the page (64 tokens x 576, K-major), B = Q (n x 576, K-major)
        st_mma = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, K, cutlass.Float32, (1, 1, 1), (PAGE, n)
        )
        # O^T += V^T P^T: A = V^T (512 x 64 tokens, MN-major: the page's bytes), B = P^T
        ot_mma = sm90_utils.make_trivial_tiled_mma(
            dt, dt, MN, K, cutlass.Float32, (1, 1, 1), (PAGE, n)
        )

        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dt)
        # the ring: slot j holds one 64-token x 64-column chunk, K-major (128-byte swizzle)
        sK_layout = cute.tile_to_shape(atom, (PAGE, CHUNK, self.slots), (0, 1, 2))
        # the same bytes as V^T chunks, (latent column, token, slot): MN-major
        sVt_outer = cute.composition(
            sK_layout.outer,
            cute.make_layout((CHUNK, PAGE, self.slots), stride=(PAGE, 1, PAGE * CHUNK)),
        )
        sQ_layout = cute.tile_to_shape(atom, (n, D_QK), (0, 1))
        sP_layout = cute.tile_to_shape(atom, (n, PAGE), (0, 1))  # P (query row, token)
        # the same P tile seen as (token, query row): S^T's accumulator layout writes it
        sPt_outer = cute.composition(sP_layout.outer, cute.make_layout((PAGE, n), stride=(n, 1)))
        tma_atom, mKVt = self.page_tma(kv_cache, atom)
        # Q by cp.async: 128 threads, 16 rows x 8 vectors of 8 elements per pass
        q_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(
                cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), dt,
                num_bits_per_copy=128,
            ),
            cute.make_layout((THREADS_N // 8, 8), stride=(8, 1)),
            cute.make_layout((1, 8)),
        )  # fmt: skip

        @cute.struct
        class SharedStorage:
            sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sK_layout)], 1024]
            sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
            sP: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sP_layout)], 1024]
            # per query row and warp: the page's column max, and at the end the column sum
            sMax: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n * WARPS_N], 16]
            sSum: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n * WARPS_N], 16]
            # "chunk landed" per slot
            mbar: cute.struct.Align[cute.struct.MemRange[cutlass.Int64, self.slots], 8]

        self.shared_storage = SharedStorage

        self.kernel_q_on_n(
            mQ, page_table, seqlens, mOt, mL, mOat, mLa, mWork, softmax_scale * LOG2_E,
            st_mma, ot_mma, q_copy, tma_atom, mKVt, sQ_layout, sK_layout, sVt_outer, sP_layout,
            sPt_outer, split,
        ).launch(grid=[1, 1, num_splits], block=[THREADS_N, 1, 1], stream=stream)  # fmt: skip
        if cutlass.const_expr(split):
            self.launch_combine(o, lse, o_acc, lse_acc, num_splits, b, stream, work)

    @cute.kernel
    def kernel_q_on_n(
        self,
        mQ: cute.Tensor,
        mPT: cute.Tensor,
        mLens: cute.Tensor,
        mOt: cute.Tensor,
        mL: cute.Tensor,
        mOat: cute.Tensor,
        mLa: cute.Tensor,
        mWork: cute.Tensor,
        scale_log2: cutlass.Float32,
        st_mma: cute.TiledMma,
        ot_mma: cute.TiledMma,
        q_copy: cute.TiledCopy,
        tma_atom: cute.CopyAtom,
        mKVt: cute.Tensor,
        sQ_layout: cute.ComposedLayout,
        sK_layout: cute.ComposedLayout,
        sVt_outer: cute.Layout,
        sP_layout: cute.ComposedLayout,
        sPt_outer: cute.Layout,
        split: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        _, _, part = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = tidx % 32
        n = self.n
        NEG_INF = -cutlass.Float32.inf

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)  # (64, 64, slots)
        sVt = storage.sK.get_tensor(sVt_outer, swizzle=sK_layout.inner)  # (64, 64, slots)
        sP = storage.sP.get_tensor(sP_layout.outer, swizzle=sP_layout.inner)  # (n, 64)
        sPt = storage.sP.get_tensor(sPt_outer, swizzle=sP_layout.inner)  # (64, n)
        sMax = storage.sMax.get_tensor(cute.make_layout((n, WARPS_N)))
        sSum = storage.sSum.get_tensor(cute.make_layout((n, WARPS_N)))
        mbar = storage.mbar.data_ptr()

        # ---- mbarriers, TMA partitions and the first slots' chunks -----------------------
        slots = self.slots
        if tidx == 0:
            for i in cutlass.range_constexpr(slots):
                cute.arch.mbarrier_init(mbar + i, 1)  # the issuer's arrive + 8 KB
        cute.arch.mbarrier_init_fence()
        # TMA views: the cache's (64 tokens, 64 columns) boxes as (TMA, page, chunk), the
        # ring's slots as (TMA, slot)
        gKV = cute.local_tile(mKVt, (PAGE, CHUNK), (None, None))
        tKsKt, tKgK = cpasync.tma_partition(
            tma_atom, 0, cute.make_layout(1), cute.group_modes(sK, 0, 2),
            cute.group_modes(gKV, 0, 2),
        )  # fmt: skip
        seg_lo = mWork[part, 0]
        seg_hi = mWork[part, 1]
        # warp 0's load cursor: (segment, page, chunk) of the next chunk to load and its index
        # lj in the CTA's chunk stream, over the CTA's segments end to end (segments of empty
        # sequences have none)
        ls, lp = self.skip_empty(mWork, seg_lo, seg_hi)
        lc = cutlass.Int32(0)
        lj = cutlass.Int32(0)
        # after the prologue also the page after the cursor's, (ls_n, lp_n), and both pages'
        # page-table entries, read a batch ahead of their use
        ls_n = ls
        lp_n = lp
        ent = cutlass.Int32(0)
        ent_n = cutlass.Int32(0)
        if warp == 0:
            cute.arch.sync_warp()  # lane 0's inits before any lane arms a barrier
            cpasync.prefetch_descriptor(tma_atom)
            ls, lp, lc, lj = self.issue_ring(
                tma_atom, tKgK, tKsKt, mbar, mPT, mWork, ls, lp, lc, lj, slots, seg_hi
            )
            ls_n, lp_n, ent, ent_n = self.look_ahead(mPT, mWork, ls, lp, seg_hi)

        # ---- MMA partitions ----------------------------------------------------------------
        thr_st = st_mma.get_slice(tidx)
        tSrK = thr_st.make_fragment_A(thr_st.partition_A(sK))  # (MMA, 1, 4, slots)
        tSrQ = thr_st.make_fragment_B(thr_st.partition_B(sQ))  # (MMA, 1, 36)
        acc_s_shape = thr_st.partition_shape_C((PAGE, n))
        tScS = _mn_view(thr_st.partition_C(cute.make_identity_tensor((PAGE, n))))
        tPsPt = thr_st.partition_C(sPt)  # P^T in S^T's accumulator layout

        thr_ot = ot_mma.get_slice(tidx)
        tOrV = thr_ot.make_fragment_A(thr_ot.partition_A(sVt))  # (MMA, 1, 4, slots)
        tOrP = thr_ot.make_fragment_B(thr_ot.partition_B(sP))  # (MMA, 1, 4)
        acc_o = thr_ot.make_fragment_C(thr_ot.partition_shape_C((D_V, n)))  # (MMA, 8, 1)
        acc_o_mn = _mn_view(acc_o)  # (16 latent columns, n/4 query rows) per thread

        n_tok = cute.size(tScS, mode=[0])  # tokens per thread (2)
        n_q = cute.size(tScS, mode=[1])  # query rows per thread (n / 4)
        col_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)  # running max
        col_sum = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)  # own tokens'
        limit = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Int32)
        pg_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)

        g = cutlass.Int32(0)  # pages consumed so far by this CTA: chunks 9 g .. 9 g + 8
        for seg in cutlass.range(seg_lo, seg_hi, unroll=1):
            seq = mWork[seg, 0]
            p0 = mWork[seg, 1]
            p1 = mWork[seg, 2]
            slot = mWork[seg, 3]
            pieces = mWork[PARTS_CAP + seq, 0]
            seqlen = mLens[seq]

            # Q by cp.async, then one CTA barrier (Q seen by the async proxy; on the first
            # segment also the mbarrier inits seen by every thread)
            thr_q = q_copy.get_slice(tidx)
            cute.copy(q_copy, thr_q.partition_S(mQ[seq, None, None]), thr_q.partition_D(sQ))
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier()

            acc_o.fill(0.0)
            for j in cutlass.range_constexpr(n_q):
                col_max[j] = NEG_INF
                col_sum[j] = 0.0
                lim = seqlen
                if cutlass.const_expr(self.causal and self.s > 1):
                    # query r (packed row r*h + j) sees keys 0 .. len - s + r
                    r = tScS[0, j][1] // self.h
                    lim = cutlass.min(seqlen - self.s + r + 1, seqlen)
                limit[j] = lim

            for it in cutlass.range(p1 - p0, unroll=1):
                pg = p0 + it
                # the page's chunk c is chunk 9 g + c of the stream: its slot and the parity
                # of that slot's use
                slot_of = []
                for c in cutlass.range_constexpr(N_CHUNKS):
                    slot_of.append((g * N_CHUNKS + c) % slots)

                # S^T = K Q^T, chunk c's 4 k-blocks as soon as chunk c has landed
                acc_s = thr_st.make_fragment_C(acc_s_shape)
                warpgroup.fence()
                for c in cutlass.range_constexpr(N_CHUNKS):
                    phase = ((g * N_CHUNKS + c) // slots) % 2
                    cute.arch.mbarrier_wait(mbar + slot_of[c], phase)
                    for kk in cutlass.range_constexpr(CHUNK // 16):
                        k = c * (CHUNK // 16) + kk
                        st_mma.set(warpgroup.Field.ACCUMULATE, k != 0)
                        cute.gemm(
                            st_mma, acc_s, tSrK[None, None, kk, slot_of[c]], tSrQ[None, None, k],
                            acc_s,
                        )  # fmt: skip
                warpgroup.commit_group()
                warpgroup.wait_group(0)

                # the column max of the page: own 2 tokens, the warp's 8 lanes of a column,
                # then the 4 warps through SMEM
                s_mn = _mn_view(acc_s)
                for j in cutlass.range_constexpr(n_q):
                    mx = NEG_INF
                    for i in cutlass.range_constexpr(n_tok):
                        if pg * PAGE + tScS[i, j][0] >= limit[j]:
                            s_mn[i, j] = NEG_INF
                        mx = cute.arch.fmax(mx, s_mn[i, j])
                    for off in cutlass.range_constexpr(3):
                        mx = cute.arch.fmax(mx, cute.arch.shuffle_sync_bfly(mx, offset=4 << off))
                    pg_max[j] = mx
                if lane < 4:
                    for j in cutlass.range_constexpr(n_q):
                        sMax[tScS[0, j][1], warp] = pg_max[j]
                cute.arch.barrier()  # every warp's maxima; every warp's S^T done
                for j in cutlass.range_constexpr(n_q):
                    qr = tScS[0, j][1]
                    mx = cute.arch.fmax(
                        cute.arch.fmax(sMax[qr, 0], sMax[qr, 1]),
                        cute.arch.fmax(sMax[qr, 2], sMax[qr, 3]),
                    )
                    mx = cute.arch.fmax(mx, col_max[j])
                    base = mx * scale_log2
                    if mx == NEG_INF:
                        base = cutlass.Float32(0.0)  # nothing seen yet: exp2(-inf) = 0, no NaN
                    corr = cute.math.exp2(col_max[j] * scale_log2 - base, fastmath=True)
                    col_max[j] = mx
                    part_sum = cutlass.Float32(0.0)
                    for i in cutlass.range_constexpr(n_tok):
                        p = cute.math.exp2(s_mn[i, j] * scale_log2 - base, fastmath=True)
                        s_mn[i, j] = p
                        part_sum += p
                    col_sum[j] = col_sum[j] * corr + part_sum
                    for i in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[0])):
                        acc_o_mn[i, j] = acc_o_mn[i, j] * corr

                # the TMA brought the whole page: zero the V rows past the sequence's end (NaN
                # in the check) so that P = 0 meets V = 0; every warp's S^T is done (above)
                tail = seqlen - pg * PAGE
                if tail < PAGE:
                    for c in cutlass.range_constexpr(D_V // CHUNK):
                        self.zero_v_rows(sK, slot_of[c], tail, tidx, 0, CHUNK, THREADS_N)
                rP = cute.make_rmem_tensor(acc_s.layout, self.dtype)
                rP.store(acc_s.load().to(self.dtype))
                for e in cutlass.range_constexpr(cute.size(rP)):
                    tPsPt[e] = rP[e]
                cute.arch.fence_proxy("async.shared", space="cta")
                cute.arch.barrier()  # P^T and the zeroed rows, seen by the WGMMAs

                # O^T += V^T P^T: latent tile i (64 columns) from chunk i's slot; the 4 token
                # blocks outside, so that consecutive WGMMAs go to 8 different accumulators
                # (tile-major order chains 4 on one: measured 1.3x slower, the "gmma" stall)
                warpgroup.fence()
                ot_mma.set(warpgroup.Field.ACCUMULATE, True)
                for k in cutlass.range_constexpr(PAGE // 16):
                    for i in cutlass.range_constexpr(D_V // CHUNK):
                        acc_i = cute.append_ones(acc_o[None, i, 0], up_to_rank=3)  # (MMA, 1, 1)
                        cute.gemm(
                            ot_mma, acc_i, tOrV[None, None, k, slot_of[i]], tOrP[None, None, k],
                            acc_i,
                        )  # fmt: skip
                warpgroup.commit_group()
                warpgroup.wait_group(0)
                cute.arch.barrier()  # every warp's O^T WGMMAs have read the page and P^T
                g = g + 1
                if warp == 0:  # the page's 9 slots are free: the stream's next 9 chunks
                    self.issue_batch(
                        tma_atom, tKgK, tKsKt, mbar, ls < seg_hi, ent, ls_n < seg_hi, ent_n, lc, lj
                    )
                    # the cursor moves one page (chunk lc of it); read the next entries now
                    lj = lj + N_CHUNKS
                    ls, lp = ls_n, lp_n
                    ls_n, lp_n, ent, ent_n = self.look_ahead(mPT, mWork, ls, lp, seg_hi)

            self.epilogue_t(
                acc_o, col_max, col_sum, tScS, sSum, thr_ot, mOt, mL, mOat, mLa, seq, slot,
                pieces, scale_log2, warp, lane, split,
            )  # fmt: skip

    @cute.jit
    def issue_ring(
        self,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        mbar: cute.Pointer,
        mPT: cute.Tensor,
        mWork: cute.Tensor,
        ls: cutlass.Int32,
        lp: cutlass.Int32,
        lc: cutlass.Int32,
        lj: cutlass.Int32,
        upto: cutlass.Int32,
        seg_hi: cutlass.Int32,
    ):
        """Executed by warp 0: the chunk stream's chunks lj .. upto - 1 (while the CTA's work
        lasts), chunk lc of page lp of segment ls first, chunk j into slot j % slots, one TMA
        per chunk completing the slot's mbarrier (8 KB expected; the elected lane arms it, the
        TMA copy elects its issuing lane itself; with the L2 hint EVICT_FIRST). Returns the
        cursor (ls, lp, lc, lj) after the last one issued."""
        page = cutlass.Int32(0)
        if lj < upto and ls < seg_hi:
            page = mPT[mWork[ls, 0], lp]  # one page-table read per page, not per chunk
        while lj < upto and ls < seg_hi:
            slot = lj % self.slots
            bar = mbar + slot
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(bar, CHUNK_BYTES)
            cute.copy(
                tma_atom, tKgK[None, page, lc], tKsKt[None, slot], tma_bar_ptr=bar,
                cache_policy=cutlass.Int64(self.kv_cache_policy),
            )  # fmt: skip
            lj = lj + 1
            lc = lc + 1
            if lc == N_CHUNKS:
                lc = cutlass.Int32(0)
                ls, lp = self.next_page(mWork, ls, lp, seg_hi)
                if lj < upto and ls < seg_hi:
                    page = mPT[mWork[ls, 0], lp]
        return ls, lp, lc, lj

    @cute.jit
    def issue_batch(
        self,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        mbar: cute.Pointer,
        ok1,
        page1: cutlass.Int32,
        ok2,
        page2: cutlass.Int32,
        lc: cutlass.Int32,
        lj: cutlass.Int32,
    ):
        """Executed by warp 0 after a page is released: the stream's next 9 chunks, lj .. lj +
        8, unrolled (a loop of one chunk per trip measured slower: warp 0's issue delays the
        warpgroup's next WGMMA), chunk j into slot j % slots. From chunk lc of the cursor's page
        (page-table entry ``page1``) they span that page and the next (``page2``); ``ok1`` and
        ``ok2`` say whether the CTA's work has them."""
        for u in cutlass.range_constexpr(N_CHUNKS):
            ch = lc + u
            page = page1
            ok = ok1
            if ch >= N_CHUNKS:
                ch = ch - N_CHUNKS
                page = page2
                ok = ok2
            if ok:
                slot = (lj + u) % self.slots
                bar = mbar + slot
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(bar, CHUNK_BYTES)
                cute.copy(
                    tma_atom, tKgK[None, page, ch], tKsKt[None, slot], tma_bar_ptr=bar,
                    cache_policy=cutlass.Int64(self.kv_cache_policy),
                )  # fmt: skip

    @cute.jit
    def look_ahead(
        self, mPT: cute.Tensor, mWork: cute.Tensor, ls: cutlass.Int32, lp: cutlass.Int32,
        seg_hi: cutlass.Int32,
    ):  # fmt: skip
        """The page after (ls, lp) in the CTA's work and both pages' page-table entries (0 for
        a page past the work): (ls_n, lp_n, entry of (ls, lp), entry of (ls_n, lp_n))."""
        pg = cutlass.Int32(0)
        pg_n = cutlass.Int32(0)
        ls_n = ls
        lp_n = lp
        if ls < seg_hi:
            pg = mPT[mWork[ls, 0], lp]
            ls_n, lp_n = self.next_page(mWork, ls, lp, seg_hi)
            if ls_n < seg_hi:
                pg_n = mPT[mWork[ls_n, 0], lp_n]
        return ls_n, lp_n, pg, pg_n

    @cute.jit
    def skip_empty(self, mWork: cute.Tensor, ls: cutlass.Int32, seg_hi: cutlass.Int32):
        """The first segment from ``ls`` on (up to ``seg_hi``) that has a page, and its first
        page: (segment, page); the segment is ``seg_hi`` when none is left."""
        last = seg_hi - 1  # (the reads stay inside the work list when ls reaches seg_hi)
        while ls < seg_hi and mWork[cutlass.min(ls, last), 1] >= mWork[cutlass.min(ls, last), 2]:
            ls = ls + 1
        return ls, mWork[cutlass.min(ls, last), 1]

    @cute.jit
    def next_page(
        self, mWork: cute.Tensor, ls: cutlass.Int32, lp: cutlass.Int32, seg_hi: cutlass.Int32
    ):
        """The load cursor's next (segment, page) after page ``lp`` of segment ``ls``."""
        lp = lp + 1
        if lp >= mWork[ls, 2]:
            ls, lp = self.skip_empty(mWork, ls + 1, seg_hi)
        return ls, lp

    @cute.jit
    def epilogue_t(
        self,
        acc_o: cute.Tensor,
        col_max: cute.Tensor,
        col_sum: cute.Tensor,
        tScS: cute.Tensor,
        sSum: cute.Tensor,
        thr_ot,
        mOt: cute.Tensor,
        mL: cute.Tensor,
        mOat: cute.Tensor,
        mLa: cute.Tensor,
        seq: cutlass.Int32,
        slot: cutlass.Int32,
        pieces: cutlass.Int32,
        scale_log2: cutlass.Float32,
        warp: cutlass.Int32,
        lane: cutlass.Int32,
        split: cutlass.Constexpr,
    ):
        """A segment's end: the column sums (each thread's tokens, then the warp's lanes and the
        4 warps through SMEM), O^T / sum, and either (``pieces`` > 1) the piece's fp32 partial
        O^T and log2 LSE into workspace ``slot`` for the combine, or O in the dtype and the
        natural-log LSE (-inf for a query row without keys). Ends with a CTA barrier: the next
        segment's Q and sums may then overwrite SMEM."""
        n_q = cute.size(tScS, mode=[1])
        acc_o_mn = _mn_view(acc_o)
        for j in cutlass.range_constexpr(n_q):
            s = col_sum[j]
            for off in cutlass.range_constexpr(3):
                s = s + cute.arch.shuffle_sync_bfly(s, offset=4 << off)
            col_sum[j] = s
        if lane < 4:
            for j in cutlass.range_constexpr(n_q):
                sSum[tScS[0, j][1], warp] = col_sum[j]
        cute.arch.barrier()
        for j in cutlass.range_constexpr(n_q):
            qr = tScS[0, j][1]
            total = sSum[qr, 0] + sSum[qr, 1] + sSum[qr, 2] + sSum[qr, 3]
            col_sum[j] = total
            inv = cutlass.Float32(0.0)
            if total > 0.0:
                inv = 1.0 / total
            for i in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[0])):
                acc_o_mn[i, j] = acc_o_mn[i, j] * inv
        stored = True
        if cutlass.const_expr(split):
            stored = pieces <= 1
        if stored:
            rO = cute.make_rmem_tensor(acc_o.layout, self.dtype)
            rO.store(acc_o.load().to(self.dtype))
            tOgO = thr_ot.partition_C(mOt[seq, None, None])
            for e in cutlass.range_constexpr(cute.size(rO)):
                tOgO[e] = rO[e]
            if warp == 0 and lane < 4:
                for j in cutlass.range_constexpr(n_q):
                    val = -cutlass.Float32.inf
                    if col_sum[j] > 0.0:
                        val = (col_max[j] * scale_log2 + cute.math.log2(col_sum[j])) * LN_2
                    mL[seq, tScS[0, j][1]] = val
        else:
            cute.arch.griddepcontrol_launch_dependents()
            tOgOa = thr_ot.partition_C(mOat[slot, seq, None, None])
            for e in cutlass.range_constexpr(cute.size(acc_o)):
                tOgOa[e] = acc_o[e]
            if warp == 0 and lane < 4:
                for j in cutlass.range_constexpr(n_q):
                    val = -cutlass.Float32.inf
                    if col_sum[j] > 0.0:
                        val = col_max[j] * scale_log2 + cute.math.log2(col_sum[j])
                    mLa[slot, seq, tScS[0, j][1]] = val
        cute.arch.barrier()
