"""MLA decode for Hopper (sm_90a), steps 40 and 42: the query rows on WGMMA's N dimension
(``--config step=40`` or ``42``; s*h = 16 or 32, 16-bit cache; step 42 is the default at s*h =
16).

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

One warpgroup (128 threads) does everything; warp 0 also issues the TMAs. Per page of the CTA's
work (two stages of whole pages, 9 chunk TMAs each with its own mbarrier, as in step 3):

1. S^T: the 36 k-blocks, each chunk's 4 issued once its mbarrier has flipped;
2. the softmax runs down the columns (one per query row): a thread holds 2 tokens of n/4
   columns, the column max goes through 3 shuffles (lanes xor 4, 8, 16) and then SMEM across
   the 4 warps (one CTA barrier); the rescale factor of a column applies to the same columns of
   O^T, which the m64nN accumulator gives the same thread (both have N = n);
3. the tail's V rows (slots past the sequence's end, NaN in the check) are zeroed in SMEM, P^T
   (dtype) is stored through a transposed view of the P tile, fence.proxy.async, CTA barrier;
4. O^T += V^T P^T (32 WGMMAs), wait, CTA barrier: the stage is free, and warp 0 loads the
   CTA's next page but one into it (the load cursor runs across segments, so the next
   sequence's first pages are in flight during this one's last).

Measured (H200, the devlog's "Session 15"): at h = 16, (128, 4096) as fast as FlashInfer while
the SM clock holds 1980 MHz; at 1875 and 1710 MHz 6% and 13% slower than at 1980 (FlashInfer 1%
and 3%): the per-page chain above sets the pace, not the DRAM. Only that row is timed. A ring
of 25 chunk slots in place of the two stages (2 7/9 pages in flight) was no faster than the
same ring code with 18, and that code, slots computed per chunk at run time, was about
1.12-1.15x slower than this one: not kept.

Step 42 (``--config step=42``) is 40 with S^T's 36 k-blocks spread over 4 accumulators at n = 16
(k-block k into k % 4; 2 at n = 32, where 4 spill) and added up before the softmax. Why: the
ring's first build showed that WGMMAs chained on one m64n16 accumulator wait on each other (four
in a row made it 1.3x slower), and step 40's S^T is one chain of 36 (at h = 16 (128, 4096) 238
registers against 220, at h = 32 (4, 1000) 254 against 246, 0 spills). Measured on the H200
(the devlog's "Session 16"): at h = 16 (128, 4096) 143.3 us against step 40's 150.8, step 11's
153.6 and FlashInfer's 146.3, and steady while the SM clock moved 1845-1980 MHz (not at 1785
MHz in a later run; ncu: DRAM 87.4%, gmma stall 0.41 cycles per issue against step 40's
0.74), so it is the default at s*h = 16 (:data:`.mla_decode_sm90.Q_ON_N_STEP`); at s*h = 32
it ran 163.3 us against step 11's 158.5, so there step 11 stays.

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
    D_QK,
    D_V,
    LN_2,
    LOG2_E,
    N_CHUNKS,
    PAGE,
    MlaDecodeSm90Kernel,
    _mn_view,
)
from .mla_decode_sm90 import PARTS_CAP, Q_ON_N_ROWS, Q_ON_N_STEPS, st_accumulators
from .seesaw import EVICT_FIRST

#: one warpgroup: the math, and warp 0 issues the page TMAs
THREADS_N = 128
WARPS_N = THREADS_N // 32
STAGES_N = 2


class MlaDecodeSm90QOnN(MlaDecodeSm90Kernel):
    """Steps 40 and 42 (see the module docstring): s*h in :data:`.mla_decode_sm90.Q_ON_N_ROWS`,
    a 16-bit cache, the work list; ``step`` 42 is 40 with S^T in several accumulators
    (:func:`.mla_decode_sm90.st_accumulators`). Same ``__call__`` arguments as the seesaw
    schedule's (:class:`.seesaw.MlaDecodeSm90Seesaw`); the FP8 tensors and ``split_count`` are
    unused. Raises ValueError for another s*h or step."""

    def __init__(self, s: int, h: int, causal: bool, dtype=cutlass.BFloat16, step: int = 40):
        if s * h not in Q_ON_N_ROWS:
            raise ValueError(f"step {step} takes s*h in {Q_ON_N_ROWS} (got s={s}, h={h})")
        if step not in Q_ON_N_STEPS:
            raise ValueError(f"MlaDecodeSm90QOnN builds steps {Q_ON_N_STEPS} (got {step})")
        super().__init__(s, h, causal, dtype, loads="tma")
        self.n = s * h
        self.step = step
        #: S^T's accumulators (:func:`.mla_decode_sm90.st_accumulators`): 1 for step 40
        self.s_accs = st_accumulators(step, self.n)
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
        mOt, mL, mOat, mLa, mWork = self.out_views(o, lse, o_acc, lse_acc, work, b)

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

        atom, _, sK_layout, sVt_outer = self.smem_layouts()
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
            # "chunk landed" per (stage, chunk)
            mbar: cute.struct.Align[cute.struct.MemRange[cutlass.Int64, STAGES_N * N_CHUNKS], 8]

        self.shared_storage = SharedStorage

        self.kernel_q_on_n(
            mQ, page_table, seqlens, mOt, mL, mOat, mLa, mWork, softmax_scale * LOG2_E,
            st_mma, ot_mma, q_copy, tma_atom, mKVt, sQ_layout, sK_layout, sVt_outer, sP_layout,
            sPt_outer, split,
        ).launch(grid=[1, 1, num_splits], block=[THREADS_N, 1, 1], stream=stream)  # fmt: skip
        if cutlass.const_expr(split):
            self.launch_combine(o, lse, o_acc, lse_acc, num_splits, b, stream, work)

    def segment(self, mWork: cute.Tensor, mLens: cute.Tensor, seg):
        """The work list's segment ``seg`` (``WorkList.rows``), read inside the kernel: (its
        sequence, first page, end page, workspace slot, the number of pieces the sequence is cut
        into, the sequence's length in tokens), all Int32. Steps 40-57."""
        seq = mWork[seg, 0]
        return (
            seq, mWork[seg, 1], mWork[seg, 2], mWork[seg, 3], mWork[PARTS_CAP + seq, 0],
            mLens[seq],
        )  # fmt: skip

    def out_views(self, o, lse, o_acc, lse_acc, work, b, rows=(D_V, 1)):
        """(Trace time.) O, the LSE, the split workspace and the work list as the query-rows-on-N
        kernels index them: O and the partial O transposed, (.., latent row, query row), to
        match the O^T accumulator, with the 512 latent rows in the order of ``rows`` (shape,
        stride: natural by default, or a permutation such as :data:`.q_on_n_fp8.ROW_PERM`);
        the LSE and the partial LSE (.., query row); the work list (rows, 4). Static inner
        strides. Returns (mOt, mL, mOat, mLa, mWork)."""
        n = self.n
        rows_shape, rows_stride = rows
        mOt = cute.make_tensor(
            o.iterator,
            cute.make_layout((b, rows_shape, n), stride=(n * D_V, rows_stride, D_V)),
        )
        mL = cute.make_tensor(lse.iterator, cute.make_layout((b, n), stride=(n, 1)))
        cap = o_acc.shape[0]
        mOat = cute.make_tensor(
            o_acc.iterator,
            cute.make_layout(
                (cap, b, rows_shape, n),
                stride=(cute.assume(b * (n * D_V), divby=n * D_V), n * D_V, rows_stride, D_V),
            ),
        )
        mLa = cute.make_tensor(
            lse_acc.iterator,
            cute.make_layout((cap, b, n), stride=(cute.assume(b * n, divby=n), n, 1)),
        )
        mWork = cute.make_tensor(work.iterator, cute.make_layout((work.shape[0], 4), stride=(4, 1)))
        return mOt, mL, mOat, mLa, mWork

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

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)  # (64, 576, 2)
        sVt = storage.sK.get_tensor(sVt_outer, swizzle=sK_layout.inner)  # (512, 64, 2)
        sP = storage.sP.get_tensor(sP_layout.outer, swizzle=sP_layout.inner)  # (n, 64)
        sPt = storage.sP.get_tensor(sPt_outer, swizzle=sP_layout.inner)  # (64, n)
        sMax = storage.sMax.get_tensor(cute.make_layout((n, WARPS_N)))
        sSum = storage.sSum.get_tensor(cute.make_layout((n, WARPS_N)))
        mbar = storage.mbar.data_ptr()

        # ---- mbarriers, TMA partitions and the first two pages ---------------------------
        if tidx == 0:
            for i in cutlass.range_constexpr(STAGES_N * N_CHUNKS):
                cute.arch.mbarrier_init(mbar + i, 1)  # the issuer's arrive + 8 KB
        cute.arch.mbarrier_init_fence()
        tKsKt, tKgK = self.page_tma_partitions(tma_atom, mKVt, sK)
        seg_lo = mWork[part, 0]
        seg_hi = mWork[part, 1]
        # warp 0's load cursor: (segment, page) of the next page to load, over the CTA's
        # segments end to end (segments of empty sequences have none)
        ls, lp = self.skip_empty(mWork, seg_lo, seg_hi)
        if warp == 0:
            cute.arch.sync_warp()  # lane 0's inits before any lane arms a barrier
            cpasync.prefetch_descriptor(tma_atom)
            for st in cutlass.range_constexpr(STAGES_N):
                if ls < seg_hi:
                    self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, mPT[mWork[ls, 0], lp], st)
                    ls, lp = self.next_page(mWork, ls, lp, seg_hi)

        # ---- MMA partitions ----------------------------------------------------------------
        thr_st = st_mma.get_slice(tidx)
        tSrK = thr_st.make_fragment_A(thr_st.partition_A(sK))  # (MMA, 1, 36, 2)
        tSrQ = thr_st.make_fragment_B(thr_st.partition_B(sQ))  # (MMA, 1, 36)
        acc_s_shape = thr_st.partition_shape_C((PAGE, n))
        tScS = _mn_view(thr_st.partition_C(cute.make_identity_tensor((PAGE, n))))
        tPsPt = thr_st.partition_C(sPt)  # P^T in S^T's accumulator layout

        thr_ot = ot_mma.get_slice(tidx)
        tOrV = thr_ot.make_fragment_A(thr_ot.partition_A(sVt))  # (MMA, 8, 4, 2)
        tOrP = thr_ot.make_fragment_B(thr_ot.partition_B(sP))  # (MMA, 1, 4)
        acc_o = thr_ot.make_fragment_C(thr_ot.partition_shape_C((D_V, n)))  # (MMA, 8, 1)
        acc_o_mn = _mn_view(acc_o)  # (16 latent columns, n/4 query rows) per thread

        n_q = cute.size(tScS, mode=[1])  # query rows per thread (n / 4)
        col_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)  # running max
        col_sum = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)  # own tokens'
        limit = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Int32)
        pg_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)

        g = cutlass.Int32(0)  # pages consumed so far by this CTA: stage g % 2
        for seg in cutlass.range(seg_lo, seg_hi, unroll=1):
            seq, p0, p1, slot, pieces, seqlen = self.segment(mWork, mLens, seg)

            # Q by cp.async, then one CTA barrier (Q seen by the async proxy; on the first
            # segment also the mbarrier inits seen by every thread)
            thr_q = q_copy.get_slice(tidx)
            cute.copy(q_copy, thr_q.partition_S(mQ[seq, None, None]), thr_q.partition_D(sQ))
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier()

            acc_o.fill(0.0)
            self.init_columns(tScS, col_max, col_sum, limit, seqlen)

            for it in cutlass.range(p1 - p0, unroll=1):
                pg = p0 + it
                stage = g % STAGES_N
                phase = (g // STAGES_N) % 2

                # S^T = K Q^T, chunk c's 4 k-blocks as soon as chunk c has landed; step 42
                # spreads the 36 k-blocks over s_accs accumulators (k-block k into k % s_accs),
                # so that no two consecutive WGMMAs wait on one accumulator, and adds them up
                acc_s = thr_st.make_fragment_C(acc_s_shape)
                accs = [acc_s]
                for _ in cutlass.range_constexpr(self.s_accs - 1):
                    accs.append(thr_st.make_fragment_C(acc_s_shape))
                warpgroup.fence()
                for k in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
                    if cutlass.const_expr(k % (CHUNK // 16) == 0):
                        cute.arch.mbarrier_wait(mbar + stage * N_CHUNKS + k // (CHUNK // 16), phase)
                    acc = accs[k % self.s_accs]
                    st_mma.set(warpgroup.Field.ACCUMULATE, k >= self.s_accs)
                    cute.gemm(st_mma, acc, tSrK[None, None, k, stage], tSrQ[None, None, k], acc)
                warpgroup.commit_group()
                warpgroup.wait_group(0)
                for a in cutlass.range_constexpr(1, self.s_accs):
                    for e in cutlass.range_constexpr(cute.size(acc_s)):
                        acc_s[e] = acc_s[e] + accs[a][e]

                self.column_softmax(
                    acc_s, acc_o_mn, tScS, col_max, col_sum, limit, pg_max, sMax, pg,
                    scale_log2, warp, lane,
                )  # fmt: skip

                # the TMA brought the whole page: zero the V rows past the sequence's end (NaN
                # in the check) so that P = 0 meets V = 0; every warp's S^T is done (above)
                tail = seqlen - pg * PAGE
                if tail < PAGE:
                    self.zero_v_rows(sK, stage, tail, tidx, 0, D_V, THREADS_N)
                rP = cute.make_rmem_tensor(acc_s.layout, self.dtype)
                rP.store(acc_s.load().to(self.dtype))
                for e in cutlass.range_constexpr(cute.size(rP)):
                    tPsPt[e] = rP[e]
                cute.arch.fence_proxy("async.shared", space="cta")
                cute.arch.barrier()  # P^T and the zeroed rows, seen by the WGMMAs

                # O^T += V^T P^T (8 latent tiles x 4 token blocks)
                warpgroup.fence()
                ot_mma.set(warpgroup.Field.ACCUMULATE, True)
                for k in cutlass.range_constexpr(PAGE // 16):
                    cute.gemm(ot_mma, acc_o, tOrV[None, None, k, stage], tOrP[None, None, k], acc_o)
                warpgroup.commit_group()
                warpgroup.wait_group(0)
                cute.arch.barrier()  # every warp's O^T WGMMAs have read the stage and P^T
                if warp == 0:  # noqa: SIM102 (run time)
                    if ls < seg_hi:
                        self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, mPT[mWork[ls, 0], lp], stage)
                        ls, lp = self.next_page(mWork, ls, lp, seg_hi)
                g = g + 1

            self.epilogue_t(
                acc_o, col_max, col_sum, tScS, sSum, thr_ot, mOt, mL, mOat, mLa, seq, slot,
                pieces, scale_log2, warp, lane, split,
            )  # fmt: skip

    @cute.jit
    def init_columns(
        self,
        tScS: cute.Tensor,
        col_max: cute.Tensor,
        col_sum: cute.Tensor,
        limit: cute.Tensor,
        seqlen: cutlass.Int32,
    ):
        """A segment's start: each of the thread's query columns with no key seen (max -inf, sum
        0) and its key limit (the sequence's length; with causal s > 1, query r of packed row
        r*h + j sees keys 0 .. len - s + r)."""
        for j in cutlass.range_constexpr(cute.size(tScS, mode=[1])):
            col_max[j] = -cutlass.Float32.inf
            col_sum[j] = 0.0
            lim = seqlen
            if cutlass.const_expr(self.causal and self.s > 1):
                r = tScS[0, j][1] // self.h
                lim = cutlass.min(seqlen - self.s + r + 1, seqlen)
            limit[j] = lim

    @cute.jit
    def column_softmax(
        self,
        acc_s: cute.Tensor,
        acc_o_mn: cute.Tensor,
        tScS: cute.Tensor,
        col_max: cute.Tensor,
        col_sum: cute.Tensor,
        limit: cute.Tensor,
        pg_max: cute.Tensor,
        sMax: cute.Tensor,
        pg: cutlass.Int32,
        scale_log2: cutlass.Float32,
        warp: cutlass.Int32,
        lane: cutlass.Int32,
        corr_out: cute.Tensor | None = None,
        bar_id: cutlass.Int32 | None = None,
    ):
        """The online softmax down S^T's columns (one per query row) for page ``pg``: keys past
        a column's limit masked to -inf; the page's column max over the thread's 2 tokens, the
        warp's 8 lanes of a column (3 shuffles) and the 4 warps through ``sMax`` (one CTA
        barrier, after which every warp's S^T is done); then P = exp2((S - max) * scale_log2)
        in place in ``acc_s``, the column sums and the O^T columns rescaled by the change of
        max (no NaN while a column has seen no key). Step 49 (two warpgroups, each a part of
        the columns): ``warp`` is the warp within the warpgroup, the barrier is the
        warpgroup's named barrier ``bar_id`` (128 threads), and the change of max goes into
        ``corr_out`` (one per column of the thread) instead of ``acc_o_mn``, which is None."""
        NEG_INF = -cutlass.Float32.inf
        s_mn = _mn_view(acc_s)
        n_tok = cute.size(tScS, mode=[0])
        n_q = cute.size(tScS, mode=[1])
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
        if cutlass.const_expr(bar_id is None):
            cute.arch.barrier()  # every warp's maxima; every warp's S^T done
        else:
            cute.arch.barrier(barrier_id=bar_id, number_of_threads=THREADS_N)
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
            if cutlass.const_expr(corr_out is None):
                for i in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[0])):
                    acc_o_mn[i, j] = acc_o_mn[i, j] * corr
            else:
                corr_out[j] = corr

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
