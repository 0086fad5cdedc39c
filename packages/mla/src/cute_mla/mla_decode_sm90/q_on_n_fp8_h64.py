"""MLA decode for Hopper (sm_90a), steps 49 to 57: the FP8 latent cache at s*h = 64 with the
query rows on WGMMA's N, two warpgroups on each page (``--kv_dtype float8_e4m3fn --config
step=49`` to ``57``; per_token scales). Step 57 is the FP8 default at h = 64, s = 1 from 128
sequences on: on an H100 it took 0.940x the time of step 22 (the FP8 default elsewhere) at
(128, 4096), and 0.932x the 16-bit default's; at 32 and 64 sequences step 22 was faster, these
builds paying more per part (the query's conversion, the fp32 partial O) (the devlog's
sections "Session 19" and "Session 20").

Why (issue 11: at h_q <= 64 an FP8 cache should read half the bytes and run faster): at h = 64
the FP8 default (step 22, a producer warpgroup dequantising each page into 16-bit SMEM for the
seesaw schedule) took 1.30-1.37x the 16-bit time on the H200 (the devlog, sessions 8-10),
while at h = 16 the page dequantised in registers straight into WGMMA's A operand (steps
43-48, :mod:`.q_on_n_fp8`) took 0.65x. That route puts the page on M and the query rows on N
(S^T = K Q^T, O^T += V^T P^T). One warpgroup cannot hold O^T at n = 64: 512 x 64 fp32 is 256
registers per thread. So here two warpgroups share each page, and each GEMM is cut where it
costs no extra tensor work:

    S^T: warpgroup w the query rows 32 w .. 32 w + 31 (M = the page's 64 tokens, N = 32, K = 576)
    O^T: warpgroup w the latent rows 256 w .. 256 w + 255 of O^T (4 m-tiles, N = 64, K = 64)

Per page, each warpgroup dequantises all of K (its S^T needs every latent column; the K bytes
by one F2FP per pair, as step 46) and its half of V (one PRMT per two pairs and one F2FP per
pair, as step 45). The S^T halves meet in SMEM: each warpgroup runs the column softmax of its
32 query rows (its own named barrier for the maxima), writes its half of P^T (fp16, times the
token's scale, 0 past the sequence's end) and the change of max of its columns (``sCorr``);
one CTA barrier later both warpgroups rescale their O^T columns by ``sCorr`` and run O^T over
all 64 query rows. Registers per thread: O^T 128, S^T 16 (plus 16 for the rope part's own
accumulator, as step 46; in 56 and 57, 16 for the other warpgroup's partial instead, the rope
part accumulated onto S^T's own), two A buffers of 16 words.

O^T's rows are permuted so that a thread's 8 rows of its 4 m-tiles are 8 consecutive bytes of a
token (one LDS.64): logical row ``r + 8h + 16wp + 64i + 256w`` (r = lane // 4, h = +8 half,
wp = warp in the warpgroup, i = m-tile, w = warpgroup) is physical latent column
``8r + h + 64wp + 2i + 256w`` (:data:`ROW_PERM_H64`); the epilogue stores through the
inverse view. S^T's reduction columns use step 43's permutation (:data:`.q_on_n_fp8.K_PERM`).

One CTA per SM (256 threads, three page stages: 208896 B of SMEM, 225280 B with 56-57's
16 KB ``sX``), the work list cut for
one part per SM; warp 0 issues the TMAs with step 47's early page index. The rest (Q in fp16
with a power of two per query row, S^T = latent x (token scale / row factor) + rope, the work
list and the PDL combine) is step 47's.

Step 50 addresses each K LDS.64 from the thread's byte offset and swizzle phase
(:meth:`.q_on_n_fp8.MlaDecodeSm90QOnNFp8.k_offsets`): in 49 ptxas kept 32 precomputed SMEM
addresses, which spilled and were reloaded from local memory inside the S^T chain (measured
on an H100: 0.74x step 49's time). Step 51 is 50 with S^T's latent k-blocks in 2
accumulators (no faster). Step 52 is 51 with the page loop turned by half a page
(:meth:`MlaDecodeSm90QOnNFp8H64.st_page`, :meth:`MlaDecodeSm90QOnNFp8H64.ot_page`): page p's
O^T WGMMAs are issued, the stage is released, and page p + 1's K is dequantised and its S^T
issued behind them, one wait retiring both. No WGMMA stays in flight across the loop's edge:
the first build of 52 left O^T in flight into the next iteration, and ptxas serialized every
WGMMA of the kernel (C7514, accumulator registers read inside a pipeline stage). P^T has two
SMEM buffers there, since the other warpgroup's O^T may still read the last one. It ran no
faster than 50: the dependent conversion chain, not the tensor pipe, sets the pace.

Step 53 is 50 with S^T's latent part by FP8 WGMMAs (m64n32k32) straight from the e4m3 page in
SMEM, Q in two e4m3 terms per row (:meth:`MlaDecodeSm90QOnNFp8H64.load_q_e4m3_pair`): no K
conversion, 0.86x the 16-bit time on the H100, but Hopper's FP8 MMA accumulation (a short
mantissa, not fp32) puts a one-token sequence's LSE 3.96e-4 off, against the workload's 1e-4:
an experiment, not for use. Step 54 is 50 with Q read by 16-byte loads in its natural order
and permuted on the way into SMEM (:data:`K_PERM_INV`): 0.996x step 50's time.

Step 55 is 54 with the V bytes addressed from two offsets per thread
(:meth:`.q_on_n_fp8.MlaDecodeSm90QOnNFp8.v_offsets`): no spills, 0.979x 54's time. Step 56
cuts S^T by K's latent columns instead of query rows (:meth:`MlaDecodeSm90QOnNFp8H64.st_columns`):

    S^T: warpgroup w K's latent columns 256 w .. 256 w + 255 (those its O^T converts as V),
         against all 64 query rows (two m64n32 WGMMAs per k-block from the same A registers)

so each K byte is converted once per page, not twice; the partial of the other warpgroup's
rows, scaled, goes through ``sX`` (16 KB) and is added after a CTA barrier, after which each
warpgroup holds S^T of its own 32 rows as in 49-55 (0.989x 55's time: the conversion count
was not the limit). Step 57 is 56 without the CTA barrier at a page's end: an empty mbarrier
per stage hands the stage back to warp 0's TMA (0.988x 56's time).
"""

from __future__ import annotations

from types import SimpleNamespace

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import warpgroup

from .kernel import D_QK, D_ROPE, D_V, LN_2, LOG2_E, PAGE, MlaDecodeSm90Kernel, _mn_view
from .mla_decode_sm90 import Q_ON_N_FP8_H64_STEPS, fp8_q_on_n_stages
from .q_on_n import THREADS_N, WARPS_N
from .q_on_n_fp8 import (
    BARS,
    BOX,
    KB_PER_BOX,
    N_BOXES,
    OT_KBLOCKS,
    MlaDecodeSm90QOnNFp8,
    latent_q_layout,
)
from .seesaw import EVICT_FIRST

#: warpgroups per CTA, each one S^T half (query rows) and one O^T half (latent rows)
WGS = 2
THREADS_H64 = WGS * THREADS_N
#: query rows (S^T's N) per warpgroup, and O^T's latent rows per warpgroup (4 m-tiles)
N_WG = 64 // WGS
OT_ROWS = D_V // WGS
OT_TILES = OT_ROWS // 64
#: words of one register A buffer: 4 S^T k-blocks (m64k16: 4 words each), or one O^T k-block
#: of the 4 m-tiles
BUF_WORDS_H64 = 16
KB_PER_GROUP = BUF_WORDS_H64 // 4
#: step 53's query row factor 2^(F - 127) for the row max's biased exponent E: F = Q8_FACTOR_BIAS
#: - E puts the max in [2^7, 2^8) (e4m3 reaches 448)
Q8_FACTOR_BIAS = 127 + 127 + 7
#: O^T's row permutation: logical row ``r + 8h + 16wp + 64i + 256w`` -> physical latent column
#: ``8r + h + 64wp + 2i + 256w`` (r < 8, h < 2, wp < 4, i < 4, w < 2)
ROW_PERM_H64 = ((8, 2, 4, 4, 2), (8, 1, 64, 2, 256))


#: K_PERM's inverse as one layout mode: physical column ``p = e + 2a + 4b + 8q + 32k``
#: (colexicographic in this shape) -> S^T's logical column ``L = e + 8a + 16b + 2q + 32k``
K_PERM_INV = (((2, 2, 2, 4), D_V // 32), ((1, 8, 16, 2), 32))
#: step 56: fp32 words of a thread's S^T partial for the other warpgroup's query rows (an
#: m64n32 fragment), and their SMEM layout (word, thread, warpgroup) in 16-byte vectors, each
#: vector of the 128 threads side by side (no bank conflict)
X_WORDS = 16
X_LAYOUT = (((4, X_WORDS // 4), THREADS_N, WGS), ((1, 4 * THREADS_N), 4, X_WORDS * THREADS_N))


def k_perm_inverse(n: int) -> cute.Layout:
    """(query row, physical latent column p) -> the index of (row, logical column L) in an
    (n, 512) column-major tile, where p = K_PERM(L) (:data:`K_PERM_INV`; trace time)."""
    (shape, stride) = K_PERM_INV
    inner = tuple(n * x for x in stride[0])
    return cute.make_layout((n, shape), stride=(1, (inner, n * stride[1])))


class MlaDecodeSm90QOnNFp8H64(MlaDecodeSm90QOnNFp8):
    """Steps 49-57 (module docstring): s*h = 64, the FP8 latent cache (e4m3, per_token scales),
    two warpgroups per page, the work list. Same ``__call__`` arguments as
    :class:`.q_on_n_fp8.MlaDecodeSm90QOnNFp8`. Raises ValueError for another s*h, step or
    scale block."""

    def __init__(
        self, s: int, h: int, causal: bool, dtype=cutlass.BFloat16, step: int = 49,
        scale_block: int = D_V,
    ):  # fmt: skip
        if s * h != 64:
            raise ValueError(f"step {step} takes s*h = 64 (got s={s}, h={h})")
        if step not in Q_ON_N_FP8_H64_STEPS:
            raise ValueError(
                f"MlaDecodeSm90QOnNFp8H64 builds steps {Q_ON_N_FP8_H64_STEPS} (got {step})"
            )
        if scale_block != D_V:
            raise ValueError(
                f"step {step} takes per_token scales (a block of 512; got {scale_block})"
            )
        MlaDecodeSm90Kernel.__init__(
            self, s, h, causal, dtype, loads="cpasync", kv_fp8=True, scale_block=scale_block
        )
        self.n = s * h
        self.step = step
        #: S^T's accumulators per warpgroup (k-block k into k % s_accs, added up before the
        #: softmax): one chain of 32 m64n32 WGMMAs, two chains in 51 and 52
        self.s_accs = 2 if step in (51, 52) else 1
        #: step 52: a page's O^T WGMMAs left in flight while the next page's S^T starts (its K
        #: dequantised meanwhile); P^T in two SMEM buffers by page parity, since the other
        #: warpgroup's O^T may still read the last one
        self.overlap = step == 52
        self.p_bufs = 2 if self.overlap else 1
        #: step 53: 50 with S^T's latent part by FP8 WGMMAs straight from the e4m3 page in SMEM
        #: (no K dequantisation), Q split into two e4m3 terms per row (hi + lo, one power of
        #: two per row), each term's chain in its own accumulator
        self.q_fp8 = step == 53
        #: step 54: 50 with Q's latent part read by 16-byte loads in its natural column order
        #: and written to SMEM through the inverse of K_PERM (49-52 read it through K_PERM,
        #: 4-byte loads: at h=64 (32, 4096) the query load was 10% of step 50's stall samples)
        self.q_wide = step >= 54
        #: step 55: 54 with O^T's V bytes addressed from two per-thread offsets (the tokens'
        #: rows mod 8 set the swizzle; the rest is the LDS's immediate): in 54 ptxas kept the
        #: 16 swizzled V addresses of a page, some of them spilled and reloaded per k-block
        self.v_direct = step >= 55
        #: step 56: 55 with S^T cut by K's latent columns, not by query rows: warpgroup w
        #: converts only its own 256 columns (those its O^T converts as V) and runs them
        #: against all 64 query rows, its own and the other's (two m64n32 WGMMAs per k-block
        #: from the same A registers); the other's partial, scaled, goes through SMEM (sX)
        #: and is added after a CTA barrier; the rope part on the warpgroup's own rows
        self.k_split = step >= 56
        #: step 57: 56 without the CTA barrier at each page's end. A stage is handed back to
        #: the TMA by an "empty" mbarrier per stage (all 256 threads arrive once their last
        #: load of the page is done; only warp 0, which issues the refill, waits on it). P^T,
        #: sCorr and sX need no barrier of their own there: each warpgroup retires its O^T
        #: WGMMAs (the readers of P^T) before the next page's exchange barrier, behind which
        #: alone P^T and sCorr are written again, and sX is written after the previous page's
        #: P^T barrier, which both warpgroups pass only after reading it
        self.empty_bars = step >= 57
        self.stages = fp8_q_on_n_stages(step)
        self.work_list = True
        self.combine_batch = 4
        self.kv_cache_policy = EVICT_FIRST
        #: what the shared helpers read: K by F2FP (dequant_k), the early page index
        #: (issue_first); both GEMMs are fp16 here, V by dequant_v_f16
        self.k_f16 = True
        self.early_index = True
        #: step 50: the K bytes addressed from the thread's offset and swizzle phase (one XOR
        #: per load) instead of 32 precomputed addresses, which spilled in step 49 (53 loads
        #: no K bytes)
        self.k_direct = step >= 50 and step != 53

    @cute.jit
    def __call__(
        self,
        q: cute.Tensor,  # (b, s, h, 576)
        kv_cache: cute.Tensor,  # (num_pages, 64, 512) e4m3
        page_table: cute.Tensor,  # (b, table_pages) int32
        seqlens: cute.Tensor,  # (b,) int32
        o: cute.Tensor,  # (b, s, h, 512)
        lse: cute.Tensor,  # (b, s, h) float32
        o_acc: cute.Tensor,  # (cap, b, s, h, 512) float32 workspace
        lse_acc: cute.Tensor,  # (cap, b, s, h) float32 workspace (log2)
        kv_scales: cute.Tensor,  # (num_pages, 64, 1) float32
        kv_rope: cute.Tensor,  # (num_pages, 64, 64) dtype
        split_count: cute.Tensor,  # unused
        work: cute.Tensor,  # (rows, 4) int32: the work list (WorkList.rows)
        softmax_scale: cutlass.Float32,
        num_splits: cutlass.Int32,  # the work list's parts: the grid
        pages_per_split: cutlass.Int32,  # unused
        split: cutlass.Constexpr,
        stream: cuda.CUstream,
    ):
        dt = self.dtype
        n = self.n
        st = self.stages
        g = self.groups
        b = q.shape[0]
        pages = kv_cache.shape[0]
        mQl = cute.make_tensor(q.iterator, latent_q_layout(b, n))
        if cutlass.const_expr(self.q_fp8 or self.q_wide):  # (natural order in global memory)
            mQl = cute.make_tensor(
                q.iterator, cute.make_layout((b, n, D_V), stride=(n * D_QK, D_QK, 1))
            )
        mQr = cute.make_tensor(
            q.iterator + D_V, cute.make_layout((b, n, D_ROPE), stride=(n * D_QK, D_QK, 1))
        )
        mOt, mL, mOat, mLa, mWork = self.out_views(o, lse, o_acc, lse_acc, work, b, ROW_PERM_H64)

        K = cute.nvgpu.OperandMajorMode.K
        f16 = cutlass.Float16
        # S^T's latent part: K (fp16 by F2FP) from registers, Q (fp16, scaled per row) from SMEM
        rs_mma = sm90_utils.make_trivial_tiled_mma(
            f16, f16, K, K, cutlass.Float32, (1, 1, 1), (PAGE, N_WG), warpgroup.OperandSource.RMEM
        )
        e4 = cutlass.Float8E4M3FN
        if cutlass.const_expr(self.q_fp8):
            # 53: K (e4m3) and the Q terms (e4m3) both from SMEM, m64n32k32
            rs_mma = sm90_utils.make_trivial_tiled_mma(
                e4, e4, K, K, cutlass.Float32, (1, 1, 1), (PAGE, N_WG)
            )
        # O^T: V^T (fp16 by F2FP) from registers, P^T (fp16, scaled) from SMEM, all 64 rows
        ot_mma = sm90_utils.make_trivial_tiled_mma(
            f16, f16, K, K, cutlass.Float32, (1, 1, 1), (PAGE, n), warpgroup.OperandSource.RMEM
        )
        # S^T's rope part (16-bit in the cache) from SMEM
        ss_mma = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, K, cutlass.Float32, (1, 1, 1), (PAGE, N_WG)
        )

        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dt)
        atom16 = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, f16)
        atom8 = warpgroup.make_smem_layout_atom(
            warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float8E4M3FN
        )
        sQl_layout = cute.tile_to_shape(atom16, (n, D_V), (0, 1))
        q_type = f16
        if cutlass.const_expr(self.q_fp8):  # (53: the hi and lo terms, 64 KB as before)
            sQl_layout = cute.tile_to_shape(atom8, (n, D_V, 2), (0, 1, 2))
            q_type = e4
        sQr_layout = cute.tile_to_shape(atom, (n, D_ROPE), (0, 1))
        sK8_layout = cute.tile_to_shape(atom8, (PAGE, D_V, st), (0, 1, 2))
        sR_layout = cute.tile_to_shape(atom, (PAGE, D_ROPE, st), (0, 1, 2))
        pb = self.p_bufs
        sP_layout = cute.tile_to_shape(atom16, (n, PAGE, pb), (0, 1, 2))
        sPt_outer = cute.composition(
            sP_layout.outer, cute.make_layout((PAGE, n, pb), stride=(n, 1, n * PAGE))
        )

        tma8, mK8t, tmaR, mRt, tmaS, mSct = self.page_tma_atoms(
            kv_cache, kv_scales, kv_rope, atom, atom8, pages
        )
        # (54: 16-byte loads of the latent part)
        lat_copy, rope_copy = self.q_copies(THREADS_H64, 8 if self.q_wide else 2)

        x_words = X_WORDS * THREADS_H64 if self.k_split else 4

        @cute.struct
        class SharedStorage:
            sK8: cute.struct.Align[
                cute.struct.MemRange[cutlass.Float8E4M3FN, cute.cosize(sK8_layout)], 1024
            ]
            sR: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sR_layout)], 1024]
            sQl: cute.struct.Align[cute.struct.MemRange[q_type, cute.cosize(sQl_layout)], 1024]
            sQr: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQr_layout)], 1024]
            sP: cute.struct.Align[cute.struct.MemRange[f16, cute.cosize(sP_layout)], 1024]
            sSc: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, PAGE * g * st], 128]
            # per query row and warp of its warpgroup: the page's column max, the end's sums
            sMax: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n * WARPS_N], 16]
            sSum: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n * WARPS_N], 16]
            # per query row: the change of max of the page, the segment's total sum
            sCorr: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n], 16]
            sTot: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n], 16]
            sQf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n], 16]
            sIdx: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 1], 4]
            # (56) each warpgroup's S^T partial of the other's query rows
            sX: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, x_words], 16]
            # (57: after the st * BARS full barriers, one empty barrier per stage)
            mbar: cute.struct.Align[cute.struct.MemRange[cutlass.Int64, st * (BARS + 1)], 8]

        self.shared_storage = SharedStorage

        self.kernel_h64(
            mQl, mQr, page_table, seqlens, mOt, mL, mOat, mLa, mWork, softmax_scale * LOG2_E,
            rs_mma, ot_mma, ss_mma, lat_copy, rope_copy, tma8, mK8t, tmaR, mRt, tmaS, mSct,
            sQl_layout, sQr_layout, sK8_layout, sR_layout, sP_layout, sPt_outer, split,
        ).launch(grid=[1, 1, num_splits], block=[THREADS_H64, 1, 1], stream=stream)  # fmt: skip
        if cutlass.const_expr(split):
            self.launch_combine(o, lse, o_acc, lse_acc, num_splits, b, stream, work)

    @cute.kernel
    def kernel_h64(
        self,
        mQl: cute.Tensor,
        mQr: cute.Tensor,
        mPT: cute.Tensor,
        mLens: cute.Tensor,
        mOt: cute.Tensor,
        mL: cute.Tensor,
        mOat: cute.Tensor,
        mLa: cute.Tensor,
        mWork: cute.Tensor,
        scale_log2: cutlass.Float32,
        rs_mma: cute.TiledMma,
        ot_mma: cute.TiledMma,
        ss_mma: cute.TiledMma,
        lat_copy: cute.TiledCopy,
        rope_copy: cute.TiledCopy,
        tma8: cute.CopyAtom,
        mK8t: cute.Tensor,
        tmaR: cute.CopyAtom,
        mRt: cute.Tensor,
        tmaS: cute.CopyAtom,
        mSct: cute.Tensor,
        sQl_layout: cute.ComposedLayout,
        sQr_layout: cute.ComposedLayout,
        sK8_layout: cute.ComposedLayout,
        sR_layout: cute.ComposedLayout,
        sP_layout: cute.ComposedLayout,
        sPt_outer: cute.Layout,
        split: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        _, _, part = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = tidx % 32
        wg = warp // WARPS_N  # the warpgroup: S^T's query rows, O^T's latent rows
        wt = tidx % THREADS_N  # the thread within it
        wwarp = warp % WARPS_N  # the warp within it
        bar_wg = wg + 1  # its named barrier (0 is the CTA's)
        n = self.n
        st = self.stages
        g = self.groups

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sQl = storage.sQl.get_tensor(sQl_layout.outer, swizzle=sQl_layout.inner)
        sQr = storage.sQr.get_tensor(sQr_layout.outer, swizzle=sQr_layout.inner)
        sK8 = storage.sK8.get_tensor(sK8_layout.outer, swizzle=sK8_layout.inner)  # (64, 512, st)
        sR = storage.sR.get_tensor(sR_layout.outer, swizzle=sR_layout.inner)  # (64, 64, st)
        sP = storage.sP.get_tensor(sP_layout.outer, swizzle=sP_layout.inner)  # (64 rows, 64, pb)
        sPt = storage.sP.get_tensor(sPt_outer, swizzle=sP_layout.inner)  # (64 tokens, 64, pb)
        sSc = storage.sSc.get_tensor(cute.make_layout((PAGE, g, st), stride=(g, 1, PAGE * g)))
        sSc_tma = storage.sSc.get_tensor(
            cute.make_layout((1, PAGE * g, st), stride=(0, 1, PAGE * g))
        )
        sMax = storage.sMax.get_tensor(cute.make_layout((n, WARPS_N)))
        sSum = storage.sSum.get_tensor(cute.make_layout((n, WARPS_N)))
        sCorr = storage.sCorr.get_tensor(cute.make_layout(n))
        sTot = storage.sTot.get_tensor(cute.make_layout(n))
        sQf = storage.sQf.get_tensor(cute.make_layout(n))
        sIdx = storage.sIdx.get_tensor(cute.make_layout(1))
        sX = None
        if cutlass.const_expr(self.k_split):
            sX = storage.sX.get_tensor(cute.make_layout(X_LAYOUT[0], stride=X_LAYOUT[1]))
        mbar = storage.mbar.data_ptr()
        k_ptr = storage.sK8.data_ptr()

        # ---- mbarriers, TMA partitions and the first pages ----------------------------------
        if tidx == 0:
            for i in cutlass.range_constexpr(st * BARS):
                cute.arch.mbarrier_init(mbar + i, 1)
            if cutlass.const_expr(self.empty_bars):
                for i in cutlass.range_constexpr(st):
                    cute.arch.mbarrier_init(mbar + st * BARS + i, THREADS_H64)
        cute.arch.mbarrier_init_fence()
        tmas = self.page_tmas(tma8, mK8t, sK8, tmaR, mRt, sR, tmaS, mSct, sSc_tma)
        seg_lo = mWork[part, 0]
        seg_hi = mWork[part, 1]
        ls, lp, c_seq, c_end = self.issue_first(
            tmas, mbar, mWork, mPT, sIdx, seg_lo, seg_hi, warp, lane
        )

        # ---- MMA partitions: S^T of the warpgroup's 32 query rows, O^T of its 256 rows ------
        thr = rs_mma.get_slice(wt)
        thr_ss = ss_mma.get_slice(wt)
        tSrK8 = None
        if cutlass.const_expr(self.q_fp8):
            # 53: B = the warpgroup's rows of both Q terms (MMA, 1, 16, 2), A = the page
            # (MMA, 1, 16, st)
            tSrQl = thr.make_fragment_B(
                thr.partition_B(cute.local_tile(sQl, (N_WG, D_V, 2), (wg, 0, 0)))
            )
            tSrK8 = thr.make_fragment_A(thr.partition_A(sK8))
        else:
            tSrQl = thr.make_fragment_B(thr.partition_B(cute.local_tile(sQl, (N_WG, D_V), (wg, 0))))
        tSrQx = None
        if cutlass.const_expr(self.k_split):
            # 56: B = the warpgroup's 256 latent columns (S^T's logical k-blocks 16 w ..
            # 16 w + 15: K_PERM permutes within 32 columns) of its own query rows, and of the
            # other warpgroup's
            tSrQl = thr.make_fragment_B(
                thr.partition_B(cute.local_tile(sQl, (N_WG, D_V // WGS), (wg, wg)))
            )
            tSrQx = thr.make_fragment_B(
                thr.partition_B(cute.local_tile(sQl, (N_WG, D_V // WGS), (1 - wg, wg)))
            )
        tSrQr = thr_ss.make_fragment_B(
            thr_ss.partition_B(cute.local_tile(sQr, (N_WG, D_ROPE), (wg, 0)))
        )
        tSrR = thr_ss.make_fragment_A(thr_ss.partition_A(sR))  # (MMA, 1, 4, st)
        acc_s_shape = thr.partition_shape_C((PAGE, N_WG))
        # S^T's coordinates (token, query row), the query row counted over all 64
        tScS = _mn_view(
            thr.partition_C(
                cute.local_tile(cute.make_identity_tensor((PAGE, n)), (PAGE, N_WG), (0, wg))
            )
        )
        # P^T in S^T's accumulator layout (steps 49-51: the one buffer)
        tPsPt = thr.partition_C(cute.local_tile(sPt[None, None, 0], (PAGE, N_WG), (0, wg)))
        thr_o = ot_mma.get_slice(wt)
        tOrP = thr_o.make_fragment_B(thr_o.partition_B(sP))  # (MMA, 1, 4, pb)
        acc_o = thr_o.make_fragment_C(thr_o.partition_shape_C((OT_ROWS, n)))  # (MMA, 4, 1)
        acc_o_mn = _mn_view(acc_o)  # (8 latent rows, 16 query rows) per thread
        tOcO = _mn_view(thr_o.partition_C(cute.make_identity_tensor((OT_ROWS, n))))

        # the two register A buffers: 16 words, 4 k-blocks of S^T (MMA, 1, 4) or one k-block
        # of O^T's 4 m-tiles (MMA, 4, 1)
        bufs = []
        st_views = []
        ot_views = []
        for _ in cutlass.range_constexpr(2):
            w = cute.make_rmem_tensor(cute.make_layout(BUF_WORDS_H64), cutlass.Uint32)
            h16 = cute.recast_tensor(w, cutlass.Float16)
            bufs.append(w)
            st_views.append(
                cute.make_tensor(h16.iterator, cute.make_layout(((2, 2, 2), 1, KB_PER_GROUP)))
            )
            ot_views.append(
                cute.make_tensor(h16.iterator, cute.make_layout(((2, 2, 2), OT_TILES, 1)))
            )

        n_tok = cute.size(tScS, mode=[0])
        n_q = cute.size(tScS, mode=[1])
        n_o = cute.size(tOcO, mode=[1])
        col_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)
        col_sum = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)
        limit = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Int32)
        pg_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)
        corr = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)
        q_inv = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)

        qd = lane % 4
        r0 = wwarp * 16 + lane // 4  # S^T rows (tokens) r0, r0 + 8
        vec8 = 32 * wg + 8 * wwarp + lane // 4  # O^T: the thread's 8 bytes of a token

        # what both page halves read (st_page, ot_page)
        c = SimpleNamespace(
            thr=thr,
            thr_ss=thr_ss,
            acc_s_shape=acc_s_shape,
            k_ptr=k_ptr,
            r0=r0,
            qd=qd,
            mbar=mbar,
            sK8=sK8,
            sSc=sSc,
            bufs=bufs,
            st_views=st_views,
            tSrQl=tSrQl,
            tSrQx=tSrQx,
            sX=sX,
            tSrK8=tSrK8,
            tSrR=tSrR,
            tSrQr=tSrQr,
            n_q=n_q,
            n_tok=n_tok,
            q_inv=q_inv,
            sQf=sQf,
            tScS=tScS,
            col_max=col_max,
            col_sum=col_sum,
            limit=limit,
            pg_max=pg_max,
            sMax=sMax,
            scale_log2=scale_log2,
            wwarp=wwarp,
            lane=lane,
            corr=corr,
            bar_wg=bar_wg,
            wt=wt,
            wg=wg,
            tPsPt=tPsPt,
            sPt=sPt,
            sCorr=sCorr,
            n_o=n_o,
            tOcO=tOcO,
            acc_o_mn=acc_o_mn,
            vec8=vec8,
            ot_views=ot_views,
            tOrP=tOrP,
            acc_o=acc_o,
            st=st,
        )
        g_pg = cutlass.Int32(0)  # pages consumed so far: stage g_pg % st
        for seg in cutlass.range(seg_lo, seg_hi, unroll=1):
            seq, p0, p1, slot, pieces, seqlen = self.segment(mWork, mLens, seg)

            thr_r = rope_copy.get_slice(tidx)
            cute.copy(rope_copy, thr_r.partition_S(mQr[seq, None, None]), thr_r.partition_D(sQr))
            if cutlass.const_expr(self.q_fp8):
                self.load_q_e4m3_pair(lat_copy, mQl[seq, None, None], sQl, sQf, tidx)
            else:
                q_dst = sQl
                if cutlass.const_expr(self.q_wide):
                    # physical column p of the natural Q lands at S^T's logical column
                    # K_PERM^-1(p): the views index by p
                    q_dst = storage.sQl.get_tensor(
                        cute.composition(sQl_layout.outer, k_perm_inverse(n)),
                        swizzle=sQl_layout.inner,
                    )
                self.load_q_f16(lat_copy, mQl[seq, None, None], q_dst, sQf, tidx, THREADS_H64)
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier()
            for j in cutlass.range_constexpr(n_q):
                q_inv[j] = sQf[tScS[0, j][1]]

            acc_o.fill(0.0)
            self.init_columns(tScS, col_max, col_sum, limit, seqlen)

            n_pg = p1 - p0
            if cutlass.const_expr(not self.overlap):
                # steps 49-51: each page's halves in turn, the O^T WGMMAs waited for
                for it in cutlass.range(n_pg, unroll=1):
                    stage = g_pg % st
                    rs_mma, ss_mma = self.st_page(
                        c, rs_mma, ss_mma, p0 + it, stage, (g_pg // st) % 2, g_pg, seqlen
                    )
                    cute.arch.barrier()  # both halves of P^T and sCorr; the zeroed rows
                    ot_mma = self.ot_page(c, ot_mma, stage, 0)
                    warpgroup.wait_group(0)
                    if cutlass.const_expr(self.empty_bars):
                        # 57: the thread's loads of the stage are done; warp 0 refills it
                        # once all 256 have said so
                        cute.arch.mbarrier_arrive(mbar + st * BARS + stage)
                        if warp == 0:
                            cute.arch.mbarrier_wait(mbar + st * BARS + stage, (g_pg // st) % 2)
                    else:
                        # both warpgroups' loads of the stage and their WGMMAs of P^T done: the
                        # stage, sP and sCorr are free
                        cute.arch.barrier()
                    ls, lp, c_seq, c_end = self.issue_fetched(
                        tmas, mbar, mWork, mPT, sIdx, stage, ls, lp, c_seq, c_end, seg_hi, warp,
                        lane,
                    )  # fmt: skip
                    g_pg = g_pg + 1
            else:
                # step 52: the loop turned by half a page, so that page p's O^T WGMMAs run
                # while page p + 1's K is dequantised and its S^T issued behind them; the
                # S^T's wait retires both, so no WGMMA is in flight across the loop's edge
                # (ptxas serializes every WGMMA otherwise)
                if n_pg > 0:
                    rs_mma, ss_mma = self.st_page(
                        c, rs_mma, ss_mma, p0, g_pg % st, (g_pg // st) % 2, g_pg, seqlen
                    )
                    for it in cutlass.range(n_pg, unroll=1):
                        stage = g_pg % st
                        cute.arch.barrier()  # both halves of P^T and sCorr; the zeroed rows
                        ot_mma = self.ot_page(c, ot_mma, stage, g_pg % self.p_bufs)
                        # both warpgroups' loads of the stage done (their O^T WGMMAs read
                        # registers and their own P^T buffer, never the stage): it is free
                        cute.arch.barrier()
                        ls, lp, c_seq, c_end = self.issue_fetched(
                            tmas, mbar, mWork, mPT, sIdx, stage, ls, lp, c_seq, c_end, seg_hi,
                            warp, lane,
                        )  # fmt: skip
                        g_pg = g_pg + 1
                        if it + 1 < n_pg:
                            rs_mma, ss_mma = self.st_page(
                                c,
                                rs_mma,
                                ss_mma,
                                p0 + it + 1,
                                g_pg % st,
                                (g_pg // st) % 2,
                                g_pg,
                                seqlen,
                            )
                        else:
                            warpgroup.wait_group(0)  # the last page's O^T

            self.epilogue_h64(
                acc_o, col_max, col_sum, tScS, tOcO, sSum, sTot, thr_o, mOt, mL, mOat, mLa, seq,
                slot, pieces, scale_log2, wg, wwarp, lane, bar_wg, split,
            )  # fmt: skip

    @cute.jit
    def st_page(
        self,
        c,
        rs_mma: cute.TiledMma,
        ss_mma: cute.TiledMma,
        pg: cutlass.Int32,
        stage: cutlass.Int32,
        phase: cutlass.Int32,
        g_pg: cutlass.Int32,
        seqlen: cutlass.Int32,
    ):
        """Page ``pg`` (in ``stage``, the CTA's page ``g_pg``) up to its P^T: S^T of the
        warpgroup's 32 query rows, scaled by the token scales and the row factors, plus the
        rope part; the column softmax (the warpgroup's barrier), P times the token scale into
        its P^T buffer, the change of max into ``sCorr``, the tail's own e4m3 rows zeroed; ends
        with the proxy fence that the caller's CTA barrier publishes. ``c``: the kernel's
        per-thread context (:meth:`kernel_h64`). Returns the two tiled MMAs, whose accumulate
        flag it sets (the caller keeps them: a loop carries them)."""
        thr = c.thr
        sK8 = c.sK8
        sSc = c.sSc
        n_q = c.n_q
        tScS = c.tScS
        col_max = c.col_max
        col_sum = c.col_sum
        limit = c.limit
        pg_max = c.pg_max
        sMax = c.sMax
        scale_log2 = c.scale_log2
        wwarp = c.wwarp
        lane = c.lane
        corr = c.corr
        bar_wg = c.bar_wg
        wt = c.wt
        wg = c.wg
        tPsPt = c.tPsPt
        sPt = c.sPt
        sCorr = c.sCorr
        if cutlass.const_expr(self.k_split):
            acc_s, rs_mma, ss_mma = self.st_columns(c, rs_mma, ss_mma, stage, phase)
            sv = acc_s
        else:
            acc_s, sv, rs_mma, ss_mma = self.st_rows(c, rs_mma, ss_mma, stage, phase)
        s_mn = _mn_view(sv)

        # the column softmax of the warpgroup's 32 rows (its own barrier); the change
        # of max goes to sCorr for both warpgroups' O^T
        self.column_softmax(
            sv, None, tScS, col_max, col_sum, limit, pg_max, sMax, pg, scale_log2,
            wwarp, lane, corr_out=corr, bar_id=bar_wg,
        )  # fmt: skip
        # P times its token's scale (0 past the end, where the scale and V may be
        # NaN), fp16; the tail's e4m3 rows of the warpgroup's own latent columns zeroed
        # (its S^T loads are done: the barrier above; in 49-55 the other warpgroup's S^T
        # may still read these rows, whose scores the softmax masks)
        tail = seqlen - pg * PAGE
        self.scale_p_by_token(s_mn, tScS, sSc, stage, tail)
        if tail < PAGE:
            self.zero_fp8_rows(sK8, stage, tail, wt, OT_ROWS // 16 * wg, OT_ROWS // 16)
        rP = cute.make_rmem_tensor(acc_s.layout, cutlass.Float16)
        rP.store(sv.load().to(cutlass.Float16))
        pbuf = g_pg % self.p_bufs
        if cutlass.const_expr(self.p_bufs == 1):
            tPsPt_b = tPsPt
        else:
            tPsPt_b = thr.partition_C(cute.local_tile(sPt[None, None, pbuf], (PAGE, N_WG), (0, wg)))
        for e in cutlass.range_constexpr(cute.size(rP)):
            tPsPt_b[e] = rP[e]
        if wwarp == 0 and lane < 4:
            for j in cutlass.range_constexpr(n_q):
                sCorr[tScS[0, j][1]] = corr[j]
        cute.arch.fence_proxy("async.shared", space="cta")
        return rs_mma, ss_mma

    @cute.jit
    def st_rows(
        self,
        c,
        rs_mma: cute.TiledMma,
        ss_mma: cute.TiledMma,
        stage: cutlass.Int32,
        phase: cutlass.Int32,
    ):
        """Steps 49-55: the warpgroup's 32 query rows of S^T over all 576 columns (every K
        column converted), latent x (token scale / row factor) + rope. Returns the accumulator,
        S^T (the accumulator itself, or step 52's registers apart from it) and the two tiled
        MMAs."""
        thr = c.thr
        thr_ss = c.thr_ss
        acc_s_shape = c.acc_s_shape
        k_ptr = c.k_ptr
        r0 = c.r0
        qd = c.qd
        mbar = c.mbar
        sK8 = c.sK8
        sSc = c.sSc
        bufs = c.bufs
        st_views = c.st_views
        tSrQl = c.tSrQl
        tSrK8 = c.tSrK8
        tSrR = c.tSrR
        tSrQr = c.tSrQr
        n_q = c.n_q
        n_tok = c.n_tok
        q_inv = c.q_inv
        sQf = c.sQf
        tScS = c.tScS
        # S^T = K Q^T of the warpgroup's 32 rows: half box gi's 4 k-blocks from buffer
        # gi % 2, refilled once the group that read it (gi - 2) has retired; then the
        # rope's 4 from SMEM into their own accumulator
        acc_s = thr.make_fragment_C(acc_s_shape)
        accs = [acc_s]
        for _ in cutlass.range_constexpr(self.s_accs - 1):
            accs.append(thr.make_fragment_C(acc_s_shape))
        acc_r = thr_ss.make_fragment_C(acc_s_shape)
        k_addr = self.k_offsets(k_ptr, stage, r0, qd) if self.k_direct else None
        if cutlass.const_expr(self.q_fp8):
            # 53: box j's 4 k-blocks of 32 against both Q terms, each term's chain in its own
            # accumulator, all issued back to back (no register operand to refill)
            accs.append(thr.make_fragment_C(acc_s_shape))
            warpgroup.fence()
            for j in cutlass.range_constexpr(N_BOXES):
                cute.arch.mbarrier_wait(mbar + stage * BARS + j, phase)
                for kk in cutlass.range_constexpr(BOX // 32):
                    k = j * (BOX // 32) + kk
                    rs_mma.set(warpgroup.Field.ACCUMULATE, k > 0)
                    for t in cutlass.range_constexpr(2):
                        cute.gemm(
                            rs_mma, accs[t], tSrK8[None, None, k, stage], tSrQl[None, None, k, t],
                            accs[t],
                        )  # fmt: skip
        for gi in cutlass.range_constexpr(0 if self.q_fp8 else 2 * N_BOXES):
            j = gi // 2
            half = gi % 2
            if cutlass.const_expr(gi >= 2 or self.overlap):
                # (52: the previous page's last O^T groups used the buffers)
                warpgroup.wait_group(1)
            if cutlass.const_expr(half == 0):
                cute.arch.mbarrier_wait(mbar + stage * BARS + j, phase)
            self.dequant_k(
                sK8, sSc, stage, j, r0, qd, bufs[gi % 2], kb_lo=2 * half, kb_n=2,
                k_addr=k_addr,
            )  # fmt: skip
            warpgroup.fence()
            for kk in cutlass.range_constexpr(KB_PER_GROUP):
                k = j * KB_PER_BOX + KB_PER_GROUP * half + kk
                rs_mma.set(warpgroup.Field.ACCUMULATE, k >= self.s_accs)
                acc = accs[k % self.s_accs]
                cute.gemm(rs_mma, acc, st_views[gi % 2][None, None, kk], tSrQl[None, None, k], acc)
            warpgroup.commit_group()
        cute.arch.mbarrier_wait(mbar + stage * BARS + N_BOXES, phase)
        warpgroup.fence()
        for kk in cutlass.range_constexpr(D_ROPE // 16):
            ss_mma.set(warpgroup.Field.ACCUMULATE, kk > 0)
            cute.gemm(ss_mma, acc_r, tSrR[None, None, kk, stage], tSrQr[None, None, kk], acc_r)
        warpgroup.commit_group()
        warpgroup.wait_group(0)
        for a in cutlass.range_constexpr(1, len(accs)):
            for e in cutlass.range_constexpr(cute.size(acc_s)):
                acc_s[e] = acc_s[e] + accs[a][e]
        # S^T = latent x (token scale / query row factor) + rope (NaN past the end:
        # the column softmax masks it)
        # (52: S and P in registers of their own, apart from the accumulators)
        sv = acc_s
        if cutlass.const_expr(self.overlap):
            sv = cute.make_rmem_tensor(acc_s.layout, cutlass.Float32)
        s_src = _mn_view(acc_s)
        s_mn = _mn_view(sv)
        r_mn = _mn_view(acc_r)
        if cutlass.const_expr(self.s_accs > 1):
            # (51: 1 / row factor read from SMEM, its 8 registers go to the accumulator)
            for j in cutlass.range_constexpr(n_q):
                q_inv[j] = sQf[tScS[0, j][1]]
        for i in cutlass.range_constexpr(n_tok):
            sc = sSc[tScS[i, 0][0], 0, stage]
            for j in cutlass.range_constexpr(n_q):
                s_mn[i, j] = s_src[i, j] * (sc * q_inv[j]) + r_mn[i, j]
        return acc_s, sv, rs_mma, ss_mma

    @cute.jit
    def st_columns(
        self,
        c,
        rs_mma: cute.TiledMma,
        ss_mma: cute.TiledMma,
        stage: cutlass.Int32,
        phase: cutlass.Int32,
    ):
        """Steps 56-57: the warpgroup's 32 query rows of S^T with K cut by latent columns. The
        warpgroup converts its own 256 columns only (boxes 2 w and 2 w + 1) and runs each
        k-block against its own rows and the other warpgroup's (two m64n32 WGMMAs from the same
        A registers); both partials are scaled (token scale / row factor); the other's goes to
        ``sX``, the rope part's 4 k-blocks are issued onto its own, and after one CTA barrier
        the other warpgroup's partial of its rows is added. ``c``: the kernel's per-thread
        context (:meth:`kernel_h64`: the tiled MMAs' slices, the fragments of Q's two row
        halves ``tSrQl``/``tSrQx`` and of the rope part, the register A buffers, the SMEM views,
        the thread's coordinates). Shapes: S^T is (64 tokens, 32 query rows) per warpgroup in
        fp32, K is (64, 256) e4m3 per warpgroup converted to fp16 in registers, Q^T (256, 64)
        fp16 in SMEM. Returns S^T of its rows (the m64n32 accumulator layout of steps 49-55)
        and the two tiled MMAs."""
        thr = c.thr
        mbar = c.mbar
        tScS = c.tScS
        sSc = c.sSc
        sQf = c.sQf
        q_inv = c.q_inv
        sX = c.sX
        wg = c.wg
        wt = c.wt
        acc_s = thr.make_fragment_C(c.acc_s_shape)
        acc_x = thr.make_fragment_C(c.acc_s_shape)
        ptr, base, swz = self.k_offsets(c.k_ptr, stage, c.r0, c.qd)
        boxes = N_BOXES // WGS
        k_addr = (ptr, base + wg * (boxes * PAGE * BOX), swz)
        for gi in cutlass.range_constexpr(2 * boxes):
            j = gi // 2
            half = gi % 2
            if cutlass.const_expr(gi >= 2):
                warpgroup.wait_group(1)
            if cutlass.const_expr(half == 0):
                cute.arch.mbarrier_wait(mbar + stage * BARS + boxes * wg + j, phase)
            self.dequant_k(
                c.sK8, sSc, stage, j, c.r0, c.qd, c.bufs[gi % 2], kb_lo=2 * half, kb_n=2,
                k_addr=k_addr,
            )  # fmt: skip
            warpgroup.fence()
            for kk in cutlass.range_constexpr(KB_PER_GROUP):
                k = j * KB_PER_BOX + KB_PER_GROUP * half + kk
                rs_mma.set(warpgroup.Field.ACCUMULATE, k > 0)
                a = c.st_views[gi % 2][None, None, kk]
                cute.gemm(rs_mma, acc_s, a, c.tSrQl[None, None, k], acc_s)
                cute.gemm(rs_mma, acc_x, a, c.tSrQx[None, None, k], acc_x)
            warpgroup.commit_group()
        warpgroup.wait_group(0)
        # box 0's mbarrier also counts the scales (warpgroup 1 has not waited for it)
        cute.arch.mbarrier_wait(mbar + stage * BARS, phase)
        s_mn = _mn_view(acc_s)
        x_mn = _mn_view(acc_x)
        for i in cutlass.range_constexpr(c.n_tok):
            sc = sSc[tScS[i, 0][0], 0, stage]
            for j in cutlass.range_constexpr(c.n_q):
                s_mn[i, j] = s_mn[i, j] * (sc * q_inv[j])
                x_mn[i, j] = x_mn[i, j] * (sc * sQf[(tScS[0, j][1] + N_WG) % self.n])
        for e in cutlass.range_constexpr(X_WORDS):
            sX[e, wt, wg] = acc_x[e]
        # the rope part of its own rows onto the scaled latent part
        cute.arch.mbarrier_wait(mbar + stage * BARS + N_BOXES, phase)
        warpgroup.fence()
        ss_mma.set(warpgroup.Field.ACCUMULATE, True)
        for kk in cutlass.range_constexpr(D_ROPE // 16):
            cute.gemm(ss_mma, acc_s, c.tSrR[None, None, kk, stage], c.tSrQr[None, None, kk], acc_s)
        warpgroup.commit_group()
        cute.arch.barrier()  # both partials in sX
        warpgroup.wait_group(0)
        for e in cutlass.range_constexpr(X_WORDS):
            acc_s[e] = acc_s[e] + sX[e, wt, 1 - wg]
        return acc_s, rs_mma, ss_mma

    @cute.jit
    def ot_page(self, c, ot_mma: cute.TiledMma, stage: cutlass.Int32, pbuf: cutlass.Int32):
        """Page ``stage``'s O^T half, after the CTA barrier that published both P^T halves and
        ``sCorr``: O^T's columns rescaled by their change of max, then its 4 groups (V
        dequantised per 16-token k-block) issued; nothing waited for at the end. Returns the
        tiled MMA (its accumulate flag set)."""
        qd = c.qd
        sK8 = c.sK8
        bufs = c.bufs
        sCorr = c.sCorr
        n_o = c.n_o
        tOcO = c.tOcO
        acc_o_mn = c.acc_o_mn
        vec8 = c.vec8
        ot_views = c.ot_views
        tOrP = c.tOrP
        acc_o = c.acc_o
        v_addr = self.v_offsets(c.k_ptr, stage, qd, vec8) if self.v_direct else None
        # O^T's 64 columns rescaled by their change of max; then O^T += V^T P^T:
        # k-block kb (16 tokens) of the 4 m-tiles from buffer kb % 2
        for col in cutlass.range_constexpr(n_o):
            f = sCorr[tOcO[0, col][1]]
            for i in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[0])):
                acc_o_mn[i, col] = acc_o_mn[i, col] * f
        ot_mma.set(warpgroup.Field.ACCUMULATE, True)
        for kb in cutlass.range_constexpr(OT_KBLOCKS):
            if cutlass.const_expr(kb >= 2):
                warpgroup.wait_group(1)
            self.dequant_v_f16(sK8, stage, kb, qd, vec8, bufs[kb % 2], words=2, v_addr=v_addr)
            warpgroup.fence()
            cute.gemm(
                ot_mma, acc_o, ot_views[kb % 2][None, None, 0],
                tOrP[None, None, kb, pbuf], acc_o,
            )  # fmt: skip
            warpgroup.commit_group()
        return ot_mma

    @cute.jit
    def load_q_e4m3_pair(
        self,
        lat_copy: cute.TiledCopy,
        gQ: cute.Tensor,
        sQ8: cute.Tensor,
        sQf: cute.Tensor,
        tidx: cutlass.Int32,
    ):
        """Step 53: Q's latent part (n, 512, natural order) into ``sQ8`` (n, 512, 2) as two e4m3
        terms, hi = e4m3(q f) and lo = e4m3(q f - hi), with f the power of two that brings the
        row's largest magnitude into [2^7, 2^8) (:data:`Q8_FACTOR_BIAS`, clamped as step 46's),
        and 1 / f into ``sQf``. hi + lo holds each bf16 value to about 8 significant bits,
        bf16's own precision (a CPU emulation, ``test_fp8_q_on_n_h64_q_terms``: S = K Q^T off
        by a relative norm under 1e-6, one term alone by 2.7e-2); values below 2^-9 of the
        scale are lost in lo's subnormals. Thread t holds rows t // 8 + 32 m (as
        :meth:`.q_on_n_fp8.MlaDecodeSm90QOnNFp8.load_q_f16` with 256 threads)."""
        thr_l = lat_copy.get_slice(tidx)
        tg = thr_l.partition_S(gQ)
        rq = cute.make_rmem_tensor_like(tg)
        cute.autovec_copy(tg, rq)
        rf = cute.make_rmem_tensor_like(tg, cutlass.Float32)
        rf.store(rq.load().to(cutlass.Float32))
        rs = cute.make_rmem_tensor_like(tg, cutlass.Float32)
        passes = cute.size(rf, mode=[1])
        for m in cutlass.range_constexpr(passes):
            rf_m = rf[None, m, None]
            rs_m = rs[None, m, None]
            bits = self.row_pow2_factor(rf_m, Q8_FACTOR_BIAS)
            for e in cutlass.range_constexpr(cute.size(rf_m)):
                rs_m[e] = rf_m[e] * bits[1]
            if tidx % 8 == 0:
                sQf[tidx // 8 + m * (THREADS_H64 // 8)] = bits[2]
        hi = rs.load().to(cutlass.Float8E4M3FN)
        lo = (rs.load() - hi.to(cutlass.Float32)).to(cutlass.Float8E4M3FN)
        for t, term in enumerate((hi, lo)):
            r8 = cute.make_rmem_tensor_like(tg, cutlass.Float8E4M3FN)
            r8.store(term)
            cute.autovec_copy(r8, thr_l.partition_D(sQ8[None, None, t]))

    @cute.jit
    def epilogue_h64(
        self,
        acc_o: cute.Tensor,
        col_max: cute.Tensor,
        col_sum: cute.Tensor,
        tScS: cute.Tensor,
        tOcO: cute.Tensor,
        sSum: cute.Tensor,
        sTot: cute.Tensor,
        thr_o,
        mOt: cute.Tensor,
        mL: cute.Tensor,
        mOat: cute.Tensor,
        mLa: cute.Tensor,
        seq: cutlass.Int32,
        slot: cutlass.Int32,
        pieces: cutlass.Int32,
        scale_log2: cutlass.Float32,
        wg: cutlass.Int32,
        wwarp: cutlass.Int32,
        lane: cutlass.Int32,
        bar_wg: cutlass.Int32,
        split: cutlass.Constexpr,
    ):
        """A segment's end: each warpgroup's column sums of its 32 query rows (the thread's
        tokens, the warp's lanes, its 4 warps through ``sSum`` and its named barrier) into
        ``sTot``, and its LSE (natural log, or log2 into workspace ``slot`` when ``pieces`` > 1;
        -inf for a row without keys); one CTA barrier; then both warpgroups' O^T columns / sum,
        stored as O in the dtype or as the fp32 partial, through :data:`ROW_PERM_H64`'s view
        of their 256 rows. Ends with a CTA barrier: the next segment's Q and sums may then
        overwrite SMEM."""
        n_q = cute.size(tScS, mode=[1])
        n_o = cute.size(tOcO, mode=[1])
        acc_o_mn = _mn_view(acc_o)
        for j in cutlass.range_constexpr(n_q):
            s = col_sum[j]
            for off in cutlass.range_constexpr(3):
                s = s + cute.arch.shuffle_sync_bfly(s, offset=4 << off)
            col_sum[j] = s
        if lane < 4:
            for j in cutlass.range_constexpr(n_q):
                sSum[tScS[0, j][1], wwarp] = col_sum[j]
        cute.arch.barrier(barrier_id=bar_wg, number_of_threads=THREADS_N)
        stored = True
        if cutlass.const_expr(split):
            stored = pieces <= 1
        if wwarp == 0 and lane < 4:
            for j in cutlass.range_constexpr(n_q):
                qr = tScS[0, j][1]
                total = sSum[qr, 0] + sSum[qr, 1] + sSum[qr, 2] + sSum[qr, 3]
                sTot[qr] = total
                val = -cutlass.Float32.inf
                if stored:
                    if total > 0.0:
                        val = (col_max[j] * scale_log2 + cute.math.log2(total)) * LN_2
                    mL[seq, qr] = val
                else:
                    if total > 0.0:
                        val = col_max[j] * scale_log2 + cute.math.log2(total)
                    mLa[slot, seq, qr] = val
        cute.arch.barrier()
        for c in cutlass.range_constexpr(n_o):
            total = sTot[tOcO[0, c][1]]
            inv = cutlass.Float32(0.0)
            if total > 0.0:
                inv = 1.0 / total
            for i in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[0])):
                acc_o_mn[i, c] = acc_o_mn[i, c] * inv
        if stored:
            rO = cute.make_rmem_tensor(acc_o.layout, self.dtype)
            rO.store(acc_o.load().to(self.dtype))
            tOgO = thr_o.partition_C(
                cute.local_tile(mOt[seq, None, None], (OT_ROWS, self.n), (wg, 0))
            )
            for e in cutlass.range_constexpr(cute.size(rO)):
                tOgO[e] = rO[e]
        else:
            cute.arch.griddepcontrol_launch_dependents()
            tOgOa = thr_o.partition_C(
                cute.local_tile(mOat[slot, seq, None, None], (OT_ROWS, self.n), (wg, 0))
            )
            for e in cutlass.range_constexpr(cute.size(acc_o)):
                tOgOa[e] = acc_o[e]
        cute.arch.barrier()
