"""MLA decode for Hopper (sm_90a) in the CuTe DSL: the kernel (step 2).

One CTA per (64-row tile of the s*h packed query rows, sequence b, split); 256 threads = two
math warpgroups; no producer warpgroup. Per 64-token page of the CTA's part of the sequence:

1. the page (64 tokens x 576 bf16 = 72 KB) is copied global -> SMEM with cp.async (16-byte
   vectors, 256 threads), double-buffered: page n+1 is in flight while page n is computed;
   the page index is read from the page table on the device;
2. S = Q K^T, warpgroup w for tokens [32 w, 32 w + 32) only (64 x 32, K = 576, WGMMA 64x32x16
   with Q, loaded once, and K from SMEM);
3. online softmax in fp32 registers: each warpgroup's row max goes through SMEM so both use
   the max over all 64 tokens (the same correction factor rescales both halves of O);
4. P (dtype) of both halves into one 64 x 64 SMEM tile (128-byte swizzle), then O += P V with
   P from SMEM and V the first 512 columns of the same SMEM page seen transposed (an MN-major
   view of the same bytes: no second load); each warpgroup owns 256 of the 512 output columns
   (a 64 x 256 fp32 accumulator, 128 registers per thread); the row sums of both halves meet
   in SMEM at the end.

Split-KV (step 1): ``num_splits`` (runtime) CTAs per (tile, sequence), each on an equal part of
the sequence's own pages; with ``split`` (compile time) the parts' fp32 O and log2 LSE go to a
workspace and :meth:`MlaDecodeSm90Kernel.combine` (one warp per packed row) merges them,
launched with programmatic dependent launch. Without it (one split) O and LSE are written
directly (v0's epilogue).

Still simple (later steps): cp.async instead of TMA (see ``load_page``): rows past the
sequence's end are not read at all (their 16-byte vectors are taken from row 0 of the same
page, a valid token), so the SMEM page holds only finite values; the mask is applied on every
page; O is written from the accumulator registers; three CTA barriers per page.

NaN safety: cache slots past a sequence's end hold NaN (the workload's check). They never reach
SMEM (substitution above); S of those tokens is set to -inf before the max, so P = exp2(-inf) =
0 exactly and 0 * (finite V) = 0.

Step 3 (``loads="tma"``, a compile-time option; the default stays the cp.async path above):
the cache is seen as (tokens, 576) rows and each page arrives as 9 TMA boxes of 64 tokens x 64
columns (8 KB, one chunk of the SMEM page), the page index from the page table giving the box's
row coordinate. Each (stage, chunk) has its own mbarrier (armed with 8 KB by the producer), so
S = Q K^T starts on chunk 0 while chunks 1..8 are in flight. Warp 0 is the producer: at the top
of page n it waits until both warpgroups have released the other stage (a per-stage mbarrier,
one arrival per math warp after its PV WGMMAs of page n-1), then issues page n+1's 9 TMAs; the
page index of n+2 is read one page ahead. No CTA barrier per page for the loads (the row-max and
P exchanges keep theirs); Q is still copied with cp.async, followed by one barrier before the
loop. The TMA brings whole pages, so the NaN slots past a sequence's end reach SMEM: S of those
tokens is still set to -inf (a select, so NaN does not survive), and their V rows (columns
0..511) are zeroed in SMEM after both warpgroups' QK of the last page and before its PV (stores
+ fence.proxy.async + the P barrier), so P = 0 meets V = 0, never 0 * NaN. Two stages only: Q
(72 KB) + 3 pages (216 KB) would exceed the 227 KB a CTA may have.

FP8 latent cache (``kv_fp8``, compile time; the cp.async path only): the cache arrives as the
workload's three tensors (e4m3 latent (pages, 64, 512), fp32 scales (pages, 64, G), the 16-bit
rope part (pages, 64, 64)) and the SMEM stages stay 16-bit with the same swizzled layout, so
nothing after the load changes (same MMAs, same SMEM). Per page, each of the 256 threads takes
one token (tidx // 4) and 8 16-byte vectors of its e4m3 values (columns 64 i + 16 (tidx % 4)),
plus the scales they need (one per token, or one per scale block: G at most, 8 when a block is
narrower than 64 columns), into registers (:meth:`load_latent`); the 64 rope columns come by
cp.async into columns 512..575 of the stage as before (:meth:`load_page`, width 64). Page
n+1's loads are issued right after the loop's barrier of page n (the other stage is free then)
and converted (e4m3 -> fp32, times the scale, -> dtype; exact with the workload's power-of-two
scales) and stored into the other stage with 16-byte stores at their swizzled places
(:meth:`store_latent`) while page n's PV WGMMAs run (they read this stage and P only); the
loop's next fence + barrier publishes the stage to the WGMMAs. So the global loads are in flight
during page n's QK, softmax and PV. Tokens past the sequence's end take token 0 of the page
(values and scale) as in :meth:`load_page`: SMEM only ever holds finite values, and S of those
tokens is masked to -inf as before. Page p0 is loaded and converted before the loop.
"""

from __future__ import annotations

import math
from typing import Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup

from .mla_decode_sm90 import PARTS_CAP

LOG2_E = math.log2(math.e)
LN_2 = math.log(2.0)

#: fixed geometry of this kernel (supports() refuses anything else)
TILE_M = 64  # query rows per CTA (one WGMMA M)
PAGE = 64  # tokens per page = tokens per KV tile
D_QK = 576  # latent 512 + rope 64
D_V = 512  # latent: V is the first 512 columns of the K tile
NUM_WG = 2  # math warpgroups; warpgroup w owns O columns [256 w, 256 w + 256)
THREADS = 128 * NUM_WG
KV_STAGES = 2
COMBINE_ROWS = 4  # packed rows per combine CTA (one warp each)
#: step 3 (loads="tma"): one TMA per 64-column chunk of a page, each with its own mbarrier
CHUNK = 64
N_CHUNKS = D_QK // CHUNK  # 9
CHUNK_BYTES = PAGE * CHUNK * 2  # 8 KB (bf16 or fp16)
#: the consumers that release a page stage: lane 0 of every math warp, after its PV WGMMAs
RELEASE_ARRIVALS = THREADS // 32
#: the named barrier of the two math warpgroups when a producer warpgroup runs beside them
#: (the seesaw schedule's FP8 builds; their other named barriers are 1-7)
BAR_MATH = 9
#: FP8 latent cache (``kv_fp8``): the rope columns, and each thread's share of a page's fp8
#: latent part: one token (row tidx // 4), 8 vectors of 16 e4m3 values (16 bytes) at columns
#: 64 i + 16 (tidx % 4), i < 8: 128 values, 32 registers in flight
D_ROPE = D_QK - D_V  # 64
FP8_VEC = 16
FP8_VECS = D_V // FP8_VEC // (THREADS // PAGE)  # 8 per thread
FP8_ROW_THREADS = THREADS // PAGE  # 4 threads per token


def _mn_view(t: cute.Tensor) -> cute.Tensor:
    """(rows, cols) view of a WGMMA accumulator fragment (or its coordinate partition).

    The per-thread accumulator of an m64nN WGMMA has shape ((2, 2, N/8), MMA_M, MMA_N): two
    adjacent columns, two rows 8 apart, N/8 column blocks. Rows = (mode0[1], MMA_M), cols =
    (mode0[0], mode0[2], MMA_N)."""
    L = t.layout
    C = cute.make_layout(L.shape)  # compact col-major coordinates of the same shape
    mn = cute.make_layout(
        ((C.shape[0][1], C.shape[1]), (C.shape[0][0], C.shape[0][2], C.shape[2])),
        stride=((C.stride[0][1], C.stride[1]), (C.stride[0][0], C.stride[0][2], C.stride[2])),
    )
    return cute.make_tensor(t.iterator, cute.composition(L, mn))


class MlaDecodeSm90Kernel:
    """Compile-time parameters: ``s`` and ``h`` (the packed rows per sequence, s*h), ``causal``,
    and the element type (bf16 or fp16). Everything else (batch, lengths, page table, cache
    size, softmax scale) is a runtime value."""

    def __init__(
        self,
        s: int,
        h: int,
        causal: bool,
        dtype=cutlass.BFloat16,
        loads: str = "cpasync",
        kv_fp8: bool = False,
        scale_block: int = D_V,
    ):
        if loads not in ("cpasync", "tma"):
            raise ValueError(f"loads must be 'cpasync' or 'tma' (got {loads!r})")
        if kv_fp8 and loads != "cpasync":
            raise ValueError("the FP8 latent cache takes loads='cpasync' only")
        self.s, self.h, self.causal, self.dtype = s, h, causal, dtype
        self.loads = loads
        self.tma = loads == "tma"
        self.set_kv_format(kv_fp8, scale_block)
        self.rows = s * h
        self.m_tiles = (self.rows + TILE_M - 1) // TILE_M
        #: the combine reads the partial O of this many splits per round (1: one split at a
        #: time, as measured in steps 1-7; the seesaw schedule's step 8 batches 4)
        self.combine_batch = 1
        #: the combine's batched split loads land in registers laid out split-major with each
        #: lane's 4 columns contiguous, so each is one 16-byte load (seesaw step 36); without
        #: it the (splits, k, 4) register tensor is column-major, its 4 columns 4 * splits
        #: apart, and ptxas issues four 4-byte loads per 16 bytes (a CPU compile of step 33's
        #: combine: 64 LDG.E where step 36 has 16 LDG.E.128)
        self.combine_vec16 = False
        #: the combine issues the first ``combine_batch`` pieces' partial-O loads before it
        #: reads the pieces' LSEs, so a row costs one round trip to memory instead of two (the
        #: weights, which need the LSEs, gate only the FMAs; seesaw step 38, with
        #: ``combine_vec16``): steps 34 and 36 found the combine bound by neither its bytes nor
        #: its load instructions
        self.combine_one_trip = False
        #: packed rows per combine CTA, one warp each (:data:`COMBINE_ROWS`; seesaw step 58
        #: takes 2, so that a combine CTA fits beside a split CTA and PDL can make it resident
        #: before the split kernel has finished)
        self.combine_rows = COMBINE_ROWS
        #: the L2 cache hint of the page TMA loads (None: none; the seesaw schedule's step 7
        #: sets evict-first)
        self.kv_cache_policy = None
        #: split-KV without a combine kernel (the seesaw schedule's step 10): the last CTA of a
        #: (sequence, m-tile) to finish merges every split's partial O (:meth:`merge_splits`)
        self.fused_combine = False
        #: split-KV without a combine kernel (the seesaw schedule's step 59): the CTA of a cut
        #: sequence's first piece keeps its partial O in registers, waits for the other pieces'
        #: partials and merges them there (:meth:`merge_splits`; step 60:
        #: :meth:`merge_pieces_online`)
        self.owner_merge = False
        #: seesaw steps 81-84: the split kernel triggers its dependents' launch at its start
        self.pdl_trigger = False
        #: the seesaw schedule's step 11: each CTA walks a list of (sequence, page range)
        #: segments from the ``work`` tensor, and the combine merges each sequence's own number
        #: of pieces (rows of sequences in one piece are skipped: their CTA stored O)
        self.work_list = False
        #: the seesaw schedule's step 62: the parts run as clusters of 2 CTAs, and a sequence
        #: whose two pieces are a cluster's two parts is merged by those CTAs through
        #: distributed shared memory (the work list's second column of its piece-count row);
        #: the combine skips its rows
        self.pair_merge = False
        #: a third warpgroup (threads 256..383) that dequantises the FP8 latent cache into the
        #: stages (the seesaw schedule's FP8 build); the two math warpgroups then meet at a
        #: named barrier of their 256 threads (:meth:`sync_math`), not at the CTA barrier
        self.producer_wg = False

    def set_kv_format(self, kv_fp8: bool, scale_block: int) -> None:
        """The cache format (trace time; both schedules). FP8 (e4m3) latent cache: kv_cache
        (pages, 64, 512) e4m3, kv_scales (pages, 64, G) fp32 with G = 512 / scale_block (1 per
        token), kv_rope (pages, 64, 64) in the dtype. Raises ValueError for a scale block that
        is not a multiple of 16 dividing 512."""
        if kv_fp8 and (scale_block % FP8_VEC or D_V % scale_block):
            raise ValueError(f"scale_block must divide {D_V} in multiples of {FP8_VEC}")
        self.kv_fp8 = kv_fp8
        self.scale_block = scale_block
        self.groups = D_V // scale_block
        # scales a thread holds per page: one per scale group its 8 vectors touch (their
        # group index is compile-time when a group spans >= 64 columns), else one per vector
        self.n_scales = self.groups if scale_block >= CHUNK else FP8_VECS

    def fp8_views(self, kv_cache, kv_scales, kv_rope):
        """The FP8 cache's three tensors as (page, token, column) views with static inner
        strides: the e4m3 latent part (pages, 64, 512), the fp32 scales (pages, 64, G) and the
        16-bit rope part (pages, 64, 64). Trace time, both schedules."""
        pages = kv_cache.shape[0]
        g = self.groups
        mKV8 = cute.make_tensor(
            kv_cache.iterator, cute.make_layout((pages, PAGE, D_V), stride=(PAGE * D_V, D_V, 1))
        )
        mSc = cute.make_tensor(
            kv_scales.iterator, cute.make_layout((pages, PAGE, g), stride=(PAGE * g, g, 1))
        )
        mRope = cute.make_tensor(
            kv_rope.iterator,
            cute.make_layout((pages, PAGE, D_ROPE), stride=(PAGE * D_ROPE, D_ROPE, 1)),
        )
        return mKV8, mSc, mRope

    @cute.jit
    def sync_math(self):
        """A barrier of the two math warpgroups: the CTA barrier, or with a producer
        warpgroup (:attr:`producer_wg`) named barrier :data:`BAR_MATH` of their 256 threads."""
        if cutlass.const_expr(self.producer_wg):
            cute.arch.barrier(barrier_id=BAR_MATH, number_of_threads=THREADS)
        else:
            cute.arch.barrier()

    def problem_views(self, q, o, lse, o_acc, lse_acc):
        """Views with static inner strides of the problem's tensors (they arrive with dynamic
        layouts): Q (b, m-tile, 64, 576) over the packed query rows r*h + j, O (b, m-tile, 64,
        512), LSE (b, m-tile, 64), and the split workspace: split sp's partial O of packed row
        r of sequence b at [sp, b, r, :] (the split stride b*rows*512 is a multiple of 512) and
        its log2 LSE. Shared by every schedule (trace time)."""
        rows, mt = self.rows, self.m_tiles
        b = q.shape[0]
        mQ = cute.make_tensor(
            q.iterator,
            cute.make_layout((b, mt, TILE_M, D_QK), stride=(rows * D_QK, TILE_M * D_QK, D_QK, 1)),
        )
        mO = cute.make_tensor(
            o.iterator,
            cute.make_layout((b, mt, TILE_M, D_V), stride=(rows * D_V, TILE_M * D_V, D_V, 1)),
        )
        mL = cute.make_tensor(
            lse.iterator, cute.make_layout((b, mt, TILE_M), stride=(rows, TILE_M, 1))
        )
        # the split workspace (used only when ``split``): split sp's partial O of packed row
        # r of sequence b at [sp, b, r, :]; the split stride b*rows*512 is a multiple of 512
        cap = o_acc.shape[0]
        sp_o = cute.assume(b * (rows * D_V), divby=rows * D_V)
        sp_l = cute.assume(b * rows, divby=rows)
        mOa = cute.make_tensor(
            o_acc.iterator,
            cute.make_layout(
                (cap, b, mt, TILE_M, D_V), stride=(sp_o, rows * D_V, TILE_M * D_V, D_V, 1)
            ),
        )
        mLa = cute.make_tensor(
            lse_acc.iterator,
            cute.make_layout((cap, b, mt, TILE_M), stride=(sp_l, rows, TILE_M, 1)),
        )
        return mQ, mO, mL, mOa, mLa

    @cute.jit
    def page_range(
        self,
        seqlen: cutlass.Int32,
        sp: cutlass.Int32,
        num_splits: cutlass.Int32,
        pages_per_split: cutlass.Int32,
        split: cutlass.Constexpr,
    ):
        """This CTA's pages [p0, p1) of a sequence of ``seqlen`` tokens: all of them without
        ``split``; else split ``sp`` of them (:meth:`split_range`). An empty range leaves
        O = 0 and LSE = -inf, which the combine weighs 0."""
        n_pages = (seqlen + PAGE - 1) // PAGE
        p0 = cutlass.Int32(0)
        p1 = n_pages
        if cutlass.const_expr(split):
            p0, p1 = self.split_range(n_pages, sp, num_splits, pages_per_split)
        return p0, p1

    @cute.jit
    def split_range(
        self,
        n_pages: cutlass.Int32,
        sp: cutlass.Int32,
        num_splits: cutlass.Int32,
        pages_per_split: cutlass.Int32,
    ):
        """Pages [p0, p1) of split ``sp`` of a sequence of ``n_pages`` pages. With
        ``pages_per_split`` > 0 (the balanced rule) every split covers that many pages of every
        sequence, so a long sequence gets more non-empty splits than a short one and no CTA
        does more than that many pages; a sequence's splits past its end are empty (O = 0, LSE
        = -inf: the combine weighs them 0). With 0: ``num_splits`` equal parts of the
        sequence's own pages (steps 1-4)."""
        per = (n_pages + num_splits - 1) // num_splits
        if pages_per_split > 0:
            per = pages_per_split
        p0 = cutlass.min(sp * per, n_pages)
        p1 = cutlass.min(p0 + per, n_pages)
        return p0, p1

    def smem_layouts(self):
        """SMEM: Q (64 x 576) and two pages (64 x 576 each), K-major with the 128-byte swizzle.
        The atom is 8 rows x 64 columns; tiling rows first puts each 64-column chunk of a page
        in 8 KB of its own, which is also the canonical MN-major (column-contiguous) layout of
        the transposed page: V^T (512 x 64 x stage) is a view of the same bytes (``sVt_outer``,
        (column, token, stage) -> sK's (token, column, stage)). Returns (atom, sQ, sK,
        sVt_outer); trace time, both schedules."""
        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, self.dtype)
        sQ_layout = cute.tile_to_shape(atom, (TILE_M, D_QK), (0, 1))
        sK_layout = cute.tile_to_shape(atom, (PAGE, D_QK, KV_STAGES), (0, 1, 2))
        vt = cute.make_layout((D_V, PAGE, KV_STAGES), stride=(PAGE, 1, PAGE * D_QK))
        return atom, sQ_layout, sK_layout, cute.composition(sK_layout.outer, vt)

    def row_copy(self):
        """The 256 threads' cp.async of 16-byte vectors: 8 threads x 8 elements = one 64-column
        chunk of a row, 32 rows per pass (Q tiles, and the lockstep schedule's pages)."""
        copy_atom = cute.make_copy_atom(
            cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL),
            self.dtype,
            num_bits_per_copy=128,
        )
        return cute.make_tiled_copy_tv(
            copy_atom,
            cute.make_layout((THREADS // 8, 8), stride=(8, 1)),
            cute.make_layout((1, 8)),
        )

    def page_tma(self, kv_cache, atom, width: int = D_QK, multicast: bool = False):
        """The cache seen as (tokens, ``width``) rows (576; the FP8 cache's rope part: 64);
        one TMA box is one 64-token x 64-column chunk of a page, landing as one 8 KB chunk of
        the SMEM page (the 128-byte-swizzle atom tiled rows first, the layout of every chunk
        of sK). The page index from the page table is the box's row coordinate (in units of
        64 tokens). ``multicast`` (seesaw step 63): the multicast op, the whole box to every
        CTA of the copy's ``mcast_mask``. Returns (atom, TMA tensor)."""
        mKV_rows = cute.make_tensor(
            kv_cache.iterator,
            cute.make_layout((kv_cache.shape[0] * PAGE, width), stride=(width, 1)),
        )
        chunk_layout = cute.tile_to_shape(atom, (PAGE, CHUNK), (0, 1))
        op = (
            cpasync.CopyBulkTensorTileG2SMulticastOp()
            if multicast
            else cpasync.CopyBulkTensorTileG2SOp()
        )
        return cpasync.make_tiled_tma_atom(op, mKV_rows, chunk_layout, (PAGE, CHUNK))

    def combine_views(self, o, lse, o_acc, lse_acc, b, work=None):
        """The merge's views (trace time): ``vO`` (cap, b*rows, 4, 32, 4) partial O, ``vL``
        (cap, b*rows) partial LSE (log2), ``vOut`` (b*rows, 4, 32, 4) O, ``vLse`` (b*rows,),
        ``vPieces`` (b,) each sequence's piece count (row PARTS_CAP + b of the work list; with
        no work list ``vLse`` stands in, unused), and the packed row count b*rows."""
        rows = self.rows
        cap = o_acc.shape[0]
        total = b * rows
        vO = cute.make_tensor(
            o_acc.iterator,
            cute.make_layout(
                (cap, total, D_V // 128, 32, 4),
                stride=(cute.assume(total * D_V, divby=rows * D_V), D_V, 128, 4, 1),
            ),
        )
        vL = cute.make_tensor(
            lse_acc.iterator,
            cute.make_layout((cap, total), stride=(cute.assume(total, divby=rows), 1)),
        )
        vOut = cute.make_tensor(
            o.iterator, cute.make_layout((total, D_V // 128, 32, 4), stride=(D_V, 128, 4, 1))
        )
        vLse = cute.make_tensor(lse.iterator, cute.make_layout((total,), stride=(1,)))
        vPieces = vLse  # unused without the work list
        if cutlass.const_expr(self.work_list):
            # (b, 2): the piece count, and step 62's "merged by its cluster pair"
            vPieces = cute.make_tensor(
                work.iterator + PARTS_CAP * 4, cute.make_layout((b, 2), stride=(4, 1))
            )
        return vO, vL, vOut, vLse, vPieces, total

    def launch_combine(self, o, lse, o_acc, lse_acc, num_splits, b, stream, work=None):
        """Launch :meth:`combine` over every packed row (trace time, after the split kernel);
        with ``self.work_list``, each sequence's piece count is row PARTS_CAP + b of ``work``.
        One warp per packed row of every sequence (b*s*h rows, a multiple of 16), ``combine_rows``
        warps per CTA, launched as a programmatic dependent of the split kernel."""
        vO, vL, vOut, vLse, vPieces, total = self.combine_views(o, lse, o_acc, lse_acc, b, work)
        self.combine(vO, vL, vOut, vLse, num_splits, total, vPieces).launch(
            grid=[(total + self.combine_rows - 1) // self.combine_rows, 1, 1],
            block=[32 * self.combine_rows, 1, 1],
            stream=stream,
            use_pdl=True,
        )

    @cute.jit
    def __call__(
        self,
        q: cute.Tensor,  # (b, s, h, 576)
        kv_cache: cute.Tensor,  # (num_pages, 64, 576)
        page_table: cute.Tensor,  # (b, table_pages) int32
        seqlens: cute.Tensor,  # (b,) int32
        o: cute.Tensor,  # (b, s, h, 512)
        lse: cute.Tensor,  # (b, s, h) float32
        o_acc: cute.Tensor,  # (cap, b, s, h, 512) float32 workspace: partial O per split
        lse_acc: cute.Tensor,  # (cap, b, s, h) float32 workspace: partial LSE (log2) per split
        kv_scales: cute.Tensor,  # kv_fp8: (num_pages, 64, G) float32; else unused (kv_cache)
        kv_rope: cute.Tensor,  # kv_fp8: (num_pages, 64, 64) dtype; else unused (kv_cache)
        split_count: cute.Tensor,  # (b, m_tiles) int32, zero: fused_combine only; else unused
        work: cute.Tensor,  # (rows, 4) int32 work list: the seesaw step 11 only; else unused
        softmax_scale: cutlass.Float32,
        num_splits: cutlass.Int32,
        pages_per_split: cutlass.Int32,  # 0: equal parts per sequence; > 0: fixed (balanced)
        split: cutlass.Constexpr,
        stream: cuda.CUstream,
    ):
        dt = self.dtype
        mt = self.m_tiles
        b = q.shape[0]
        # views with static inner strides (the tensors arrive with dynamic layouts): the packed
        # query rows r*h + j, the m-tile as a mode, and the cache as (page, token, column)
        mQ, mO, mL, mOa, mLa = self.problem_views(q, o, lse, o_acc, lse_acc)
        mKV = cute.make_tensor(
            kv_cache.iterator,
            cute.make_layout((kv_cache.shape[0], PAGE, D_QK), stride=(PAGE * D_QK, D_QK, 1)),
        )
        mSc, mRope = None, None
        if cutlass.const_expr(self.kv_fp8):
            # the FP8 latent cache: kv_cache is the (page, token, 512) e4m3 latent part; the
            # scales and the 16-bit rope part are page-major tensors of their own
            mKV, mSc, mRope = self.fp8_views(kv_cache, kv_scales, kv_rope)

        K = cute.nvgpu.OperandMajorMode.K
        MN = cute.nvgpu.OperandMajorMode.MN
        # step 2: warpgroup w computes S for tokens [32 w, 32 w + 32) of the page only (no
        # S computed twice); P of both halves meets in SMEM as the PV MMA's A operand
        qk_mma = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, K, cutlass.Float32, (1, 1, 1), (TILE_M, PAGE // NUM_WG)
        )
        pv_mma = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, MN, cutlass.Float32, (1, 1, 1), (TILE_M, D_V // NUM_WG)
        )

        # SMEM: Q (64 x 576) and KV_STAGES pages (64 x 576), K-major with the 128-byte swizzle.
        # The atom is 8 rows x 64 columns; tiling rows first puts each 64-column chunk of a
        # page in 8 KB of its own, which is also the canonical MN-major (column-contiguous)
        # layout of the transposed page: V^T (512 x 64) is a view of the same bytes.
        atom, sQ_layout, sK_layout, sVt_outer = self.smem_layouts()
        sP_layout = cute.tile_to_shape(atom, (TILE_M, PAGE), (0, 1))  # P (64 x 64), 8 KB
        tiled_copy = self.row_copy()

        # step 3 (loads="tma"): the cache seen as (tokens, 576) rows; one TMA box is one
        # 64-token x 64-column chunk of a page, landing as one 8 KB chunk of the SMEM page (the
        # 128-byte-swizzle atom tiled rows first, the layout of every chunk of sK). The page
        # index from the page table is the box's row coordinate (in units of 64 tokens).
        tma_atom, mKVt = None, None
        if cutlass.const_expr(self.tma):
            tma_atom, mKVt = self.page_tma(kv_cache, atom)

        if cutlass.const_expr(self.tma):

            @cute.struct
            class SharedStorage:
                sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
                sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sK_layout)], 1024]
                sP: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sP_layout)], 1024]
                sMax: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M * NUM_WG], 16]
                sSum: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M * NUM_WG], 16]
                # mbarriers: "chunk landed" per (stage, chunk), then "stage released" per stage
                mbar: cute.struct.Align[
                    cute.struct.MemRange[cutlass.Int64, KV_STAGES * N_CHUNKS + KV_STAGES], 8
                ]

        else:

            @cute.struct
            class SharedStorage:
                sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
                sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sK_layout)], 1024]
                sP: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sP_layout)], 1024]
                # per row and warpgroup: the page's row max, and at the end the row sum
                sMax: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M * NUM_WG], 16]
                sSum: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M * NUM_WG], 16]

        self.shared_storage = SharedStorage

        scale_log2 = softmax_scale * LOG2_E
        self.kernel(
            mQ, mKV, page_table, seqlens, mO, mL, mOa, mLa, mSc, mRope, scale_log2, num_splits,
            pages_per_split,
            qk_mma, pv_mma, tiled_copy, tma_atom, mKVt, sQ_layout, sK_layout, sVt_outer,
            sP_layout, split,
        ).launch(grid=[mt, b, num_splits], block=[THREADS, 1, 1], stream=stream)  # fmt: skip
        if cutlass.const_expr(split):
            self.launch_combine(o, lse, o_acc, lse_acc, num_splits, b, stream)

    @cute.kernel
    def kernel(
        self,
        mQ: cute.Tensor,
        mKV: cute.Tensor,
        mPT: cute.Tensor,
        mLens: cute.Tensor,
        mO: cute.Tensor,
        mL: cute.Tensor,
        mOa: cute.Tensor,
        mLa: cute.Tensor,
        mSc: Optional[cute.Tensor],  # noqa: UP045 (kv_fp8: (page, token, G) fp32 scales)
        mRope: Optional[cute.Tensor],  # noqa: UP045 (kv_fp8: (page, token, 64) rope part)
        scale_log2: cutlass.Float32,
        num_splits: cutlass.Int32,
        pages_per_split: cutlass.Int32,
        qk_mma: cute.TiledMma,
        pv_mma: cute.TiledMma,
        tiled_copy: cute.TiledCopy,
        tma_atom: Optional[cute.CopyAtom],  # noqa: UP045 (the DSL reads Optional)
        mKVt: Optional[cute.Tensor],  # noqa: UP045
        sQ_layout: cute.ComposedLayout,
        sK_layout: cute.ComposedLayout,
        sVt_outer: cute.Layout,
        sP_layout: cute.ComposedLayout,
        split: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        m_blk, bidx, sp = cute.arch.block_idx()
        wg = tidx // 128
        wg_tidx = tidx % 128
        lane = tidx % 32

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)
        sVt = storage.sK.get_tensor(sVt_outer, swizzle=sK_layout.inner)  # (512, 64, stages)
        sP = storage.sP.get_tensor(sP_layout.outer, swizzle=sP_layout.inner)  # (64, 64)
        sMax = storage.sMax.get_tensor(cute.make_layout((TILE_M, NUM_WG)))
        sSum = storage.sSum.get_tensor(cute.make_layout((TILE_M, NUM_WG)))

        seqlen = mLens[bidx]
        p0, p1 = self.page_range(seqlen, sp, num_splits, pages_per_split, split)
        valid_rows = self.rows - m_blk * TILE_M  # query rows of this tile that exist (may be > 64)

        # ---- step 3 (loads="tma"): mbarriers, TMA partitions, the first page ---------------
        # warp 0 is the producer: its elected lane arms the 9 chunk barriers of a stage and
        # issues the page's 9 TMAs; the math warps only wait on the chunk barriers and release
        # the stage (lane 0 of each warp) once their PV WGMMAs have read it.
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        pg_next = cutlass.Int32(0)  # warp 0: the page index of the next page to load
        mbar = None
        tKgK = None
        tKsKt = None
        if cutlass.const_expr(self.tma):
            mbar = storage.mbar.data_ptr()
            if tidx == 0:
                for i in cutlass.range_constexpr(KV_STAGES * N_CHUNKS):
                    cute.arch.mbarrier_init(mbar + i, 1)  # the producer's arrive + 8 KB
                for st in cutlass.range_constexpr(KV_STAGES):
                    cute.arch.mbarrier_init(mbar + KV_STAGES * N_CHUNKS + st, RELEASE_ARRIVALS)
            cute.arch.mbarrier_init_fence()
            tKsKt, tKgK = self.page_tma_partitions(tma_atom, mKVt, sK)
            if warp == 0:
                cute.arch.sync_warp()  # lane 0's inits before any lane arms a barrier
                cpasync.prefetch_descriptor(tma_atom)
                if p1 > p0:
                    self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, mPT[bidx, p0], 0)
                    if p0 + 1 < p1:
                        pg_next = mPT[bidx, p0 + 1]

        # ---- global -> SMEM copies (cp.async) ----------------------------------------------
        rK8, rSc, tRsR, tXcR = None, None, None, None  # kv_fp8 only (set below)
        thr_copy = tiled_copy.get_slice(tidx)
        cT = cute.make_identity_tensor((TILE_M, D_QK))  # same shape for a Q tile and a page
        tXcT = thr_copy.partition_S(cT)  # (CPY, 2, 9): row of each 16-byte vector
        tKsK = thr_copy.partition_D(sK)  # (CPY, 2, 9, stages)
        self.load_q(tiled_copy, mQ, sQ, bidx, m_blk, valid_rows, tidx)

        if cutlass.const_expr(self.tma):
            # Q by cp.async as before; one CTA barrier before the loop (Q in SMEM, seen by the
            # async proxy, and the mbarrier inits seen by every thread): none per page
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier()
        elif cutlass.const_expr(self.kv_fp8):
            # FP8 latent cache: page p0's rope columns by cp.async (with Q), its latent part
            # through registers (dequantised into stage 0 here, before the loop's barrier)
            sRope = cute.local_tile(sK, (PAGE, D_ROPE, KV_STAGES), (0, D_V // D_ROPE, 0))
            tRsR = thr_copy.partition_D(sRope)  # (CPY, 2, 1, stages)
            tXcR = thr_copy.partition_S(cute.make_identity_tensor((PAGE, D_ROPE)))
            rK8 = cute.make_rmem_tensor(cute.make_layout((FP8_VEC, FP8_VECS)), cutlass.Float8E4M3FN)
            rSc = cute.make_rmem_tensor(cute.make_layout(self.n_scales), cutlass.Float32)
            if p1 > p0:
                self.load_page(
                    mRope, mPT, bidx, seqlen, p0, 0, thr_copy, tiled_copy, tXcR, tRsR, D_ROPE
                )
                self.load_latent(mKV, mSc, mPT, bidx, seqlen, p0, tidx, rK8, rSc)
            cute.arch.cp_async_commit_group()  # group: Q (+ page 0's rope)
            if p1 > p0:
                self.store_latent(sK, 0, tidx, rK8, rSc)
        else:
            if p1 > p0:
                self.load_page(mKV, mPT, bidx, seqlen, p0, 0, thr_copy, tiled_copy, tXcT, tKsK)
            cute.arch.cp_async_commit_group()  # group: Q (+ page 0)

        # ---- MMA partitions ----------------------------------------------------------------
        thr_qk = qk_mma.get_slice(wg_tidx)
        tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ))  # (MMA, 1, 36)
        HALF = PAGE // NUM_WG
        sK_wg = cute.local_tile(sK, (HALF, D_QK, KV_STAGES), (wg, 0, 0))  # this WG's tokens
        tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK_wg))  # (MMA, 1, 36, stages)
        acc_s_shape = thr_qk.partition_shape_C((TILE_M, HALF))
        tScS = _mn_view(thr_qk.partition_C(cute.make_identity_tensor((TILE_M, HALF))))
        # this warpgroup's 32 columns of P in SMEM, in its S accumulator's thread layout
        tPsP = thr_qk.partition_C(cute.local_tile(sP, (TILE_M, HALF), (0, wg)))

        thr_pv = pv_mma.get_slice(wg_tidx)
        sVt_wg = cute.local_tile(sVt, (D_V // NUM_WG, PAGE, KV_STAGES), (wg, 0, 0))
        tOrV = thr_pv.make_fragment_B(thr_pv.partition_B(sVt_wg))  # (MMA, 1, 4, stages)
        tOrP = thr_pv.make_fragment_A(thr_pv.partition_A(sP))  # (MMA, 1, 4)
        acc_o = thr_pv.make_fragment_C(thr_pv.partition_shape_C((TILE_M, D_V // NUM_WG)))
        acc_o.fill(0.0)
        acc_o_mn = _mn_view(acc_o)

        n_rows = cute.size(tScS, mode=[0])  # rows per thread (2)
        n_cols = cute.size(tScS, mode=[1])  # S columns per thread and row (8)
        row_max = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        row_sum = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        limit = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Int32)
        for i in cutlass.range_constexpr(n_rows):
            row_max[i] = -cutlass.Float32.inf
            row_sum[i] = 0.0
            lim = seqlen
            if cutlass.const_expr(self.causal and self.s > 1):
                # query r (packed row r*h + j) sees keys 0 .. len - s + r
                r = (m_blk * TILE_M + tScS[i, 0][0]) // self.h
                lim = cutlass.min(seqlen - self.s + r + 1, seqlen)
            limit[i] = lim

        # ---- main loop over the pages ------------------------------------------------------
        for it in cutlass.range(p1 - p0, unroll=1):
            n = p0 + it
            stage = it % KV_STAGES
            phase = (it // KV_STAGES) % 2  # of this stage's chunk barriers (tma)
            if cutlass.const_expr(self.tma):
                # the producer warp puts page n+1 in flight into the other stage once both
                # warpgroups have released it (their PV of page n-1 done); no CTA barrier
                if warp == 0 and n + 1 < p1:
                    nxt = (it + 1) % KV_STAGES
                    if it >= 1:
                        cute.arch.mbarrier_wait(
                            mbar + KV_STAGES * N_CHUNKS + nxt, ((it - 1) // KV_STAGES) % 2
                        )
                    self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, pg_next, nxt)
                    if n + 2 < p1:
                        pg_next = mPT[bidx, n + 2]  # one page ahead: off the issue path
            else:
                cute.arch.cp_async_wait_group(0)
                # cp.async wrote through the generic proxy; WGMMA reads through the async proxy
                cute.arch.fence_proxy("async.shared", space="cta")
                cute.arch.barrier()  # page n visible to both warpgroups; page n-1 fully consumed
                if cutlass.const_expr(self.kv_fp8):
                    # page n+1: the rope columns by cp.async into the other stage, the fp8
                    # latent part and its scales into registers; they are in flight during
                    # page n's QK, softmax and PV, and dequantised into the other stage after
                    # page n's PV (below)
                    if n + 1 < p1:
                        self.load_page(
                            mRope, mPT, bidx, seqlen, n + 1, (it + 1) % KV_STAGES, thr_copy,
                            tiled_copy, tXcR, tRsR, D_ROPE,
                        )  # fmt: skip
                        self.load_latent(mKV, mSc, mPT, bidx, seqlen, n + 1, tidx, rK8, rSc)
                else:  # noqa: PLR5501 (compile-time, then run-time)
                    if n + 1 < p1:
                        self.load_page(
                            mKV, mPT, bidx, seqlen, n + 1, (it + 1) % KV_STAGES, thr_copy,
                            tiled_copy, tXcT, tKsK,
                        )  # fmt: skip
                cute.arch.cp_async_commit_group()

            # S = Q K^T (tma: chunk c's 4 k-blocks start as soon as chunk c has landed)
            acc_s = thr_qk.make_fragment_C(acc_s_shape)
            warpgroup.fence()
            for k in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
                if cutlass.const_expr(self.tma and k % (CHUNK // 16) == 0):
                    cute.arch.mbarrier_wait(mbar + stage * N_CHUNKS + k // (CHUNK // 16), phase)
                qk_mma.set(warpgroup.Field.ACCUMULATE, k != 0)
                cute.gemm(qk_mma, acc_s, tSrQ[None, None, k], tSrK[None, None, k, stage], acc_s)
            warpgroup.commit_group()
            warpgroup.wait_group(0)

            # online softmax (fp32, log2 domain); the row max spans both warpgroups' halves
            s_mn = _mn_view(acc_s)
            mloc = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
            for i in cutlass.range_constexpr(n_rows):
                mx = row_max[i]
                for j in cutlass.range_constexpr(n_cols):
                    if n * PAGE + wg * HALF + tScS[i, j][1] >= limit[i]:
                        s_mn[i, j] = -cutlass.Float32.inf
                    mx = cute.arch.fmax(mx, s_mn[i, j])
                mloc[i] = cute.arch.warp_reduction_max(mx, threads_in_group=4)
                if lane % 4 == 0:
                    sMax[tScS[i, 0][0], wg] = mloc[i]
            cute.arch.barrier()  # both halves' maxima in SMEM
            for i in cutlass.range_constexpr(n_rows):
                mx = cute.arch.fmax(mloc[i], sMax[tScS[i, 0][0], 1 - wg])
                base = mx * scale_log2
                if mx == -cutlass.Float32.inf:
                    base = cutlass.Float32(0.0)  # nothing seen yet: exp2(-inf - 0) = 0, never NaN
                corr = cute.math.exp2(row_max[i] * scale_log2 - base, fastmath=True)
                row_max[i] = mx
                part = 0.0
                for j in cutlass.range_constexpr(n_cols):
                    p = cute.math.exp2(s_mn[i, j] * scale_log2 - base, fastmath=True)
                    s_mn[i, j] = p
                    part += p
                row_sum[i] = row_sum[i] * corr + part  # this thread's columns only
                for j in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[1])):
                    acc_o_mn[i, j] = acc_o_mn[i, j] * corr

            if cutlass.const_expr(self.tma):
                # the TMA brought the whole page, NaN slots past the sequence's end included:
                # zero their V rows (columns 0..511) before any PV reads them, so that P = 0
                # meets V = 0, never NaN. Both warpgroups' QK of this page is done (the max
                # exchange above), so nothing reads these rows now; the fence and the barrier
                # below order these stores before the PV WGMMAs of both warpgroups.
                tail = seqlen - n * PAGE
                if tail < PAGE:
                    self.zero_v_rows(sK, stage, tail, tidx)

            # P (dtype) of this warpgroup's 32 columns into SMEM; the async proxy (WGMMA)
            # reads what the generic proxy wrote after the fence and the barrier
            rP = cute.make_rmem_tensor(acc_s.layout, self.dtype)
            rP.store(acc_s.load().to(self.dtype))
            for e in cutlass.range_constexpr(cute.size(rP)):
                tPsP[e] = rP[e]
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier()  # the whole P (64 x 64) in SMEM

            # O += P V (this warpgroup's 256 columns, all 64 tokens)
            warpgroup.fence()
            pv_mma.set(warpgroup.Field.ACCUMULATE, True)
            for k in cutlass.range_constexpr(PAGE // 16):
                cute.gemm(pv_mma, acc_o, tOrP[None, None, k], tOrV[None, None, k, stage], acc_o)
            warpgroup.commit_group()
            if cutlass.const_expr(self.kv_fp8):  # noqa: SIM102 (compile-time, then run-time)
                # page n+1's latent part, loaded at the top of this iteration: dequantised into
                # the other stage while this page's PV WGMMAs run (they read this stage and P
                # only; the other stage is free since the loop's barrier, and the next one,
                # after the proxy fence, publishes it to both warpgroups' WGMMAs)
                if n + 1 < p1:
                    self.store_latent(sK, (it + 1) % KV_STAGES, tidx, rK8, rSc)
            warpgroup.wait_group(0)
            if cutlass.const_expr(self.tma):  # noqa: SIM102 (compile-time, then run-time)
                if lane == 0:  # this warp has read the stage for the last time: release it
                    cute.arch.mbarrier_arrive(mbar + KV_STAGES * N_CHUNKS + stage)

        cute.arch.cp_async_wait_group(0)  # nothing in flight at exit (zero-length sequences)

        # ---- epilogue: O / sum -> dtype, LSE (natural log) -------------------------------
        m_log2 = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        for i in cutlass.range_constexpr(n_rows):
            m_log2[i] = row_max[i] * scale_log2
        self.epilogue(
            acc_o, row_sum, m_log2, tScS, sSum, thr_pv, mO, mL, mOa, mLa, bidx, m_blk, sp, wg,
            lane, valid_rows, split,
        )  # fmt: skip

    @cute.jit
    def epilogue(
        self,
        acc_o: cute.Tensor,
        row_sum: cute.Tensor,
        m_log2: cute.Tensor,
        tScS: cute.Tensor,
        sSum: cute.Tensor,
        thr_pv,
        mO: cute.Tensor,
        mL: cute.Tensor,
        mOa: cute.Tensor,
        mLa: cute.Tensor,
        bidx: cutlass.Int32,
        m_blk: cutlass.Int32,
        sp: cutlass.Int32,
        wg: cutlass.Int32,
        lane: cutlass.Int32,
        valid_rows: cutlass.Int32,
        split: cutlass.Constexpr,
        mCnt: Optional[cute.Tensor] = None,  # noqa: UP045 (fused_combine: (b, m_tiles) int32)
        sFlag: Optional[cute.Tensor] = None,  # noqa: UP045 (fused_combine: 1 int32 of SMEM)
        num_splits: Optional[cutlass.Int32] = None,  # noqa: UP045 (fused_combine)
        tidx: Optional[cutlass.Int32] = None,  # noqa: UP045 (fused_combine)
        keep_o: Optional[cutlass.Boolean] = None,  # noqa: UP045 (owner_merge: the first piece)
        o_stage: Optional[tuple] = None,  # noqa: UP045 (seesaw step 70: see store_o)
    ):
        """Both schedules' epilogue: each warpgroup's row sums (its threads' columns; ``row_sum``
        per thread and row) meet in SMEM (``sSum``, one CTA barrier), O_half / sum, then either
        the split's fp32 partial O and log2-domain LSE into the workspace (``split``: the
        combine may start its prologue first) or O in the dtype and the natural-log LSE.
        With ``self.fused_combine`` (and ``split``) there is no combine kernel: after its
        partials, the CTA takes a ticket (:meth:`split_ticket`) and the last of the
        (sequence, m-tile)'s ``num_splits`` CTAs merges them (:meth:`merge_splits`) and stores
        O and LSE as an unsplit CTA does.
        With ``keep_o`` true (``self.owner_merge``, the first piece of a cut sequence) only the
        LSE goes to the workspace: the partial O stays in ``acc_o`` for the merge.
        ``m_log2``: each row's running max in the log2 domain, already times the softmax scale;
        ``thr_pv``: the PV MMA's thread slice (O's 64 x 256 partition); ``o_stage``: O's way
        through SMEM where not ``split`` (:meth:`store_o`)."""
        n_rows = cute.size(tScS, mode=[0])
        self.divide_by_row_sums(acc_o, row_sum, tScS, sSum, wg, lane)

        tOcO = thr_pv.partition_C(cute.make_identity_tensor((TILE_M, D_V // NUM_WG)))
        if cutlass.const_expr(split):
            if cutlass.const_expr(
                not self.fused_combine and not self.owner_merge and not self.pdl_trigger
            ):
                cute.arch.griddepcontrol_launch_dependents()
            if cutlass.const_expr(keep_o is None):
                self.store_partial_o(acc_o, tOcO, thr_pv, mOa, bidx, m_blk, sp, wg, valid_rows)
            else:  # noqa: PLR5501 (compile time, then run time)
                if not keep_o:
                    self.store_partial_o(
                        acc_o, tOcO, thr_pv, mOa, bidx, m_blk, sp, wg, valid_rows
                    )  # fmt: skip
            if wg == 0 and lane % 4 == 0:
                gLa = mLa[sp, bidx, m_blk, None]
                for i in cutlass.range_constexpr(n_rows):
                    row = tScS[i, 0][0]
                    if row < valid_rows:
                        val = -cutlass.Float32.inf
                        if row_sum[i] > 0.0:
                            val = m_log2[i] + cute.math.log2(row_sum[i])
                        gLa[row] = val
            if cutlass.const_expr(self.fused_combine):  # noqa: SIM102 (compile time, then run time)
                if self.split_ticket(mCnt, sFlag, bidx, m_blk, num_splits, tidx):
                    self.merge_splits(
                        acc_o, row_sum, m_log2, tScS, thr_pv, mOa, mLa, bidx, m_blk, sp, wg,
                        num_splits, valid_rows,
                    )  # fmt: skip
                    self.store_o(
                        acc_o, row_sum, m_log2, tScS, tOcO, thr_pv, mO, mL, bidx, m_blk, wg,
                        lane, valid_rows,
                    )  # fmt: skip
        else:
            self.store_o(
                acc_o, row_sum, m_log2, tScS, tOcO, thr_pv, mO, mL, bidx, m_blk, wg, lane,
                valid_rows, o_stage=o_stage,
            )  # fmt: skip

    @cute.jit
    def divide_by_row_sums(
        self,
        acc_o: cute.Tensor,
        row_sum: cute.Tensor,
        tScS: cute.Tensor,
        sSum: cute.Tensor,
        wg: cutlass.Int32,
        lane: cutlass.Int32,
    ):
        """The epilogue's first half: each warpgroup's row sums (its threads' columns) meet in
        SMEM (``sSum``, (64, 2) fp32; one barrier of the math warpgroups), ``row_sum`` becomes
        each row's total and O_half is divided by it (rows without keys stay 0)."""
        n_rows = cute.size(tScS, mode=[0])
        acc_o_mn = _mn_view(acc_o)
        for i in cutlass.range_constexpr(n_rows):
            mine = cute.arch.warp_reduction_sum(row_sum[i], threads_in_group=4)
            if lane % 4 == 0:
                sSum[tScS[i, 0][0], wg] = mine
        self.sync_math()
        for i in cutlass.range_constexpr(n_rows):
            total = sSum[tScS[i, 0][0], 0] + sSum[tScS[i, 0][0], 1]
            row_sum[i] = total
            inv = cutlass.Float32(0.0)
            if total > 0.0:
                inv = 1.0 / total
            for j in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[1])):
                acc_o_mn[i, j] = acc_o_mn[i, j] * inv

    @cute.jit
    def store_partial_o(
        self,
        acc_o: cute.Tensor,
        tOcO: cute.Tensor,
        thr_pv,
        mOa: cute.Tensor,
        bidx: cutlass.Int32,
        m_blk: cutlass.Int32,
        sp: cutlass.Int32,
        wg: cutlass.Int32,
        valid_rows: cutlass.Int32,
    ):
        """The split's partial O (already divided by its row sums) into workspace slot ``sp``,
        this thread's elements of O's 64 x 256 half ``wg``, the valid rows only: fp32, or the
        workspace's 16-bit type (seesaw step 34: half the bytes to write here and to read in
        the combine; the adapter allocates it so)."""
        gOa = cute.local_tile(mOa[sp, bidx, m_blk, None, None], (TILE_M, D_V // NUM_WG), (0, wg))
        tOgOa = thr_pv.partition_C(gOa)
        if cutlass.const_expr(mOa.element_type == cutlass.Float32):
            for e in cutlass.range_constexpr(cute.size(acc_o)):
                if tOcO[e][0] < valid_rows:
                    tOgOa[e] = acc_o[e]
        else:
            rOa = cute.make_rmem_tensor(acc_o.layout, mOa.element_type)
            rOa.store(acc_o.load().to(mOa.element_type))
            for e in cutlass.range_constexpr(cute.size(rOa)):
                if tOcO[e][0] < valid_rows:
                    tOgOa[e] = rOa[e]

    @cute.jit
    def store_o(
        self,
        acc_o: cute.Tensor,
        row_sum: cute.Tensor,
        m_log2: cute.Tensor,
        tScS: cute.Tensor,
        tOcO: cute.Tensor,
        thr_pv,
        mO: cute.Tensor,
        mL: cute.Tensor,
        bidx: cutlass.Int32,
        m_blk: cutlass.Int32,
        wg: cutlass.Int32,
        lane: cutlass.Int32,
        valid_rows: cutlass.Int32,
        lse_wg: Optional[cutlass.Int32] = None,  # noqa: UP045 (step 62: the warpgroup that writes the LSE)
        o_stage: Optional[tuple] = None,  # noqa: UP045 (seesaw step 70)
    ):
        """O (already divided by the row sums) in the dtype and the natural-log LSE,
        (m_log2 + log2 row_sum) ln 2 (-inf for a row without keys), for the valid rows; the
        LSE by warpgroup 0, or by ``lse_wg`` (seesaw step 62, where each CTA of a pair stores
        one half). O goes from each thread's fragment straight to global memory (two
        elements, 4 bytes, per store), or with ``o_stage`` = (sO, pv_mma, wg_tidx, bar_id)
        through SMEM (:meth:`store_o_through_smem`, seesaw step 70)."""
        n_rows = cute.size(tScS, mode=[0])
        rO = cute.make_rmem_tensor(acc_o.layout, self.dtype)
        rO.store(acc_o.load().to(self.dtype))
        gO = cute.local_tile(mO[bidx, m_blk, None, None], (TILE_M, D_V // NUM_WG), (0, wg))
        if cutlass.const_expr(o_stage is None):
            tOgO = thr_pv.partition_C(gO)
            for e in cutlass.range_constexpr(cute.size(rO)):
                if tOcO[e][0] < valid_rows:
                    tOgO[e] = rO[e]
        else:
            self.store_o_through_smem(rO, gO, valid_rows, *o_stage)
        writer = cutlass.Int32(0) if lse_wg is None else lse_wg
        if wg == writer and lane % 4 == 0:
            gL = mL[bidx, m_blk, None]
            for i in cutlass.range_constexpr(n_rows):
                row = tScS[i, 0][0]
                if row < valid_rows:
                    val = -cutlass.Float32.inf
                    if row_sum[i] > 0.0:
                        val = (m_log2[i] + cute.math.log2(row_sum[i])) * LN_2
                    gL[row] = val

    @cute.jit
    def store_o_through_smem(
        self,
        rO: cute.Tensor,
        gO: cute.Tensor,
        valid_rows: cutlass.Int32,
        sO: cute.Tensor,
        pv_mma: cute.TiledMma,
        wg_tidx: cutlass.Int32,
        bar_id: int,
    ):
        """One warpgroup's 64 x 256 half of O (``rO``: this thread's fragment of the PV MMA's
        accumulator, in the dtype) to its global tile ``gO`` through SMEM ``sO`` (64 x 256 in
        the dtype, any layout stmatrix writes without conflicts: the seesaw's 128-byte-swizzled
        page chunks): stmatrix (four 8 x 8 matrices per instruction), a barrier of the
        warpgroup's 128 threads (``bar_id``), then each thread reads 16-byte vectors and stores
        them, 32 threads per 512-byte row, rows below ``valid_rows`` only. The caller owns
        ``sO``: no WGMMA or TMA may touch it from the stmatrix until the next barrier after this
        returns (the reads are fenced against the async proxy, for the TMA that reloads it).
        The staging of CUTLASS's Hopper GEMM example (examples/python/CuTeDSL/cute/hopper/
        kernel/dense_gemm/dense_gemm.py: stmatrix of the accumulator into SMEM, then a TMA
        store) and of FlashMLA's sm90 decode; here the last step is 16-byte STG, as
        flash-attention 2's epilogue does, so that rows past ``valid_rows`` (h < 64) stay
        unwritten without a TMA descriptor per row count."""
        assert self.dtype.width == 16, "stmatrix stores 16-bit elements"
        st_copy = cute.make_tiled_copy_C(
            cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), self.dtype), pv_mma
        )
        thr_st = st_copy.get_slice(wg_tidx)
        cute.copy(st_copy, st_copy.retile(rO), thr_st.partition_D(sO))
        cute.arch.barrier(barrier_id=bar_id, number_of_threads=THREADS // NUM_WG)
        cols = cute.size(sO, mode=[1]) // 8  # 16-byte vectors (8 elements) per row: 32
        vec_copy = cute.make_tiled_copy_tv(
            cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), self.dtype, num_bits_per_copy=128),
            cute.make_layout((THREADS // NUM_WG // cols, cols), stride=(cols, 1)),
            cute.make_layout((1, 8)),
        )
        thr_v = vec_copy.get_slice(wg_tidx)
        tXs = thr_v.partition_S(sO)
        tXg = thr_v.partition_D(gO)
        tXc = thr_v.partition_S(cute.make_identity_tensor(sO.shape))
        rX = cute.make_rmem_tensor_like(tXs)
        cute.copy(vec_copy, tXs, rX)
        # (ptxas may sink the fence below the stores; it only has to precede the caller's next
        # barrier, after which a TMA may reload these bytes)
        cute.arch.fence_proxy("async.shared", space="cta")
        for m in cutlass.range_constexpr(cute.size(tXg, mode=[1])):
            if tXc[0, m, 0][0] < valid_rows:
                cute.copy(vec_copy, rX[None, m, None], tXg[None, m, None])

    @cute.jit
    def split_ticket(
        self,
        mCnt: cute.Tensor,
        sFlag: cute.Tensor,
        bidx: cutlass.Int32,
        m_blk: cutlass.Int32,
        num_splits: cutlass.Int32,
        tidx: cutlass.Int32,
    ) -> cutlass.Boolean:
        """Count this CTA's partials for (sequence ``bidx``, m-tile ``m_blk``) and say whether
        it is the last of the ``num_splits`` CTAs to finish (CTA-uniform). The pattern of
        the CUDA C++ Programming Guide's last-block reduction (memory fence functions): every
        thread fences its stores at GPU scope, one CTA barrier, thread 0 adds 1 to the
        counter; the last CTA resets it to 0 for the next launch (as the per-tile arrival
        count of examples/python/CuTeDSL/cute/blackwell/kernel/distributed/
        distributed_gemm_reduce_scatter_blackwell.py:L1330-L1346 does) and fences again
        before reading the other splits' partials. ``mCnt``: (b, m_tiles) int32, zero before
        the first launch; ``sFlag``: one int32 of SMEM."""
        cute.arch.fence_acq_rel_gpu()  # this thread's partial O / LSE, before the count
        cute.arch.barrier()
        if tidx == 0:
            ptr = (mCnt.iterator + (bidx * self.m_tiles + m_blk)).llvm_ptr
            old = cute.arch.atomic_add(ptr, cutlass.Int32(1), sem="acq_rel", scope="gpu")
            last = cutlass.Int32(0)
            if old == num_splits - 1:
                last = cutlass.Int32(1)
                cute.arch.store(ptr, cutlass.Int32(0), sem="relaxed", scope="gpu")
            sFlag[0] = last
        cute.arch.barrier()
        is_last = sFlag[0] != 0
        if is_last:
            cute.arch.fence_acq_rel_gpu()  # every split's partials, before this CTA reads them
        return is_last

    @cute.jit
    def merge_splits(
        self,
        acc_o: cute.Tensor,
        row_sum: cute.Tensor,
        m_log2: cute.Tensor,
        tScS: cute.Tensor,
        thr_pv,
        mOa: cute.Tensor,
        mLa: cute.Tensor,
        bidx: cutlass.Int32,
        m_blk: cutlass.Int32,
        sp: cutlass.Int32,
        wg: cutlass.Int32,
        num_splits: cutlass.Int32,
        valid_rows: cutlass.Int32,
    ):
        """The combine in one CTA of the (sequence, m-tile), in O's register layout (the CTA
        that finished last, step 10; the first piece's, step 59): per row, the
        max m of the splits' log2 LSEs, w_i = 2^(lse_i - m) / sum_i 2^(lse_i - m), O =
        w_sp O_sp (this CTA's own, still in ``acc_o``) + sum over the other splits of w_i O_i
        (read from the workspace, this thread's elements only); then ``m_log2`` = m and
        ``row_sum`` = sum_i 2^(lse_i - m), so :meth:`store_o` writes LSE = (m + log2 sum) ln 2
        as :meth:`combine` does. A row past ``valid_rows`` reads a valid row's LSE and no O
        (never stored). Empty splits (lse -inf) weigh 0 and are not read."""
        n_rows = cute.size(tScS, mode=[0])
        acc_mn = _mn_view(acc_o)
        n_cols = cute.size(acc_mn, mode=[1])
        base = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        winv = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        for i in cutlass.range_constexpr(n_rows):
            row = tScS[i, 0][0]
            r = cutlass.min(row, valid_rows - 1)
            mx = -cutlass.Float32.inf
            for j in cutlass.range(num_splits, unroll=1):
                mx = cute.arch.fmax(mx, mLa[j, bidx, m_blk, r])
            b0 = mx
            if mx == -cutlass.Float32.inf:
                b0 = cutlass.Float32(0.0)  # no split saw a key: every weight is 0
            ws = cutlass.Float32(0.0)
            for j in cutlass.range(num_splits, unroll=1):
                ws += cute.math.exp2(mLa[j, bidx, m_blk, r] - b0, fastmath=True)
            inv = cutlass.Float32(0.0)
            if ws > 0.0 and row < valid_rows:
                inv = 1.0 / ws
            w_own = cute.math.exp2(mLa[sp, bidx, m_blk, r] - b0, fastmath=True) * inv
            for c in cutlass.range_constexpr(n_cols):
                acc_mn[i, c] = acc_mn[i, c] * w_own
            base[i] = b0
            winv[i] = inv
            m_log2[i] = mx
            row_sum[i] = ws
        for j in cutlass.range(num_splits, unroll=1):
            if j != sp:
                gOa = cute.local_tile(
                    mOa[j, bidx, m_blk, None, None], (TILE_M, D_V // NUM_WG), (0, wg)
                )
                g_mn = _mn_view(thr_pv.partition_C(gOa))
                for i in cutlass.range_constexpr(n_rows):
                    r = cutlass.min(tScS[i, 0][0], valid_rows - 1)
                    w = cute.math.exp2(mLa[j, bidx, m_blk, r] - base[i], fastmath=True) * winv[i]
                    if w > 0.0:
                        for c in cutlass.range_constexpr(n_cols):
                            acc_mn[i, c] = acc_mn[i, c] + w * g_mn[i, c]

    @cute.jit
    def merge_pieces_online(
        self,
        state: tuple,  # (acc_o, row_sum, m_log2, tScS, thr_pv): the epilogue's O and statistics
        workspace: tuple,  # (mOa, mLa): the partial O and LSE slots
        bidx: cutlass.Int32,
        m_blk: cutlass.Int32,
        wg: cutlass.Int32,
        pieces: cutlass.Int32,
        valid_rows: cutlass.Int32,
    ):
        """The merge of seesaw step 60, in the CTA of piece 0 whose O (divided by its row sums)
        is still in ``acc_o`` (``state``, as :meth:`merge_splits` takes them one by one): one
        pass over pieces 1 .. ``pieces`` - 1 in O's register layout, the online form of
        :meth:`merge_splits`. Per row, from the own LSE (m_log2 + log2 row_sum, -inf for a row
        without keys) as the running max M and S = 1 (0 without keys):
        for each piece j with LSE l_j, M' = max(M, l_j), a = 2^(M - M'), b = 2^(l_j - M'),
        S = a S + b, O = a O + b O_j; at the end O / S, and ``m_log2`` = M, ``row_sum`` = S, so
        :meth:`store_o` writes LSE = (M + log2 S) ln 2, the combine's result. A piece's LSE
        and its partial O are independent loads (the O of a row past ``valid_rows`` is never
        stored and not read), so both go out together: one round trip per piece and row, where
        :meth:`merge_splits` reads the LSEs in two passes before the O. Unlike
        :meth:`merge_splits`, it reads the O of a piece whose weight is 0 (a row without keys
        in that piece) and multiplies it by 0: it relies on :meth:`epilogue` storing such a
        row's O as 0 (its inverse row sum is 0), never NaN."""
        acc_o, row_sum, m_log2, tScS, thr_pv = state
        mOa, mLa = workspace
        n_rows = cute.size(tScS, mode=[0])
        acc_mn = _mn_view(acc_o)
        n_cols = cute.size(acc_mn, mode=[1])
        mx = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        for i in cutlass.range_constexpr(n_rows):
            mx[i] = -cutlass.Float32.inf
            if row_sum[i] > 0.0:
                mx[i] = m_log2[i] + cute.math.log2(row_sum[i])
                row_sum[i] = cutlass.Float32(1.0)
        for j in cutlass.range(1, pieces, unroll=1):
            gOa = cute.local_tile(mOa[j, bidx, m_blk, None, None], (TILE_M, D_V // NUM_WG), (0, wg))
            g_mn = _mn_view(thr_pv.partition_C(gOa))
            for i in cutlass.range_constexpr(n_rows):
                row = tScS[i, 0][0]
                lse = mLa[j, bidx, m_blk, cutlass.min(row, valid_rows - 1)]
                m_new = cute.arch.fmax(mx[i], lse)
                base = m_new
                if m_new == -cutlass.Float32.inf:
                    base = cutlass.Float32(0.0)  # no piece saw a key yet: every weight is 0
                a = cute.math.exp2(mx[i] - base, fastmath=True)
                b = cute.math.exp2(lse - base, fastmath=True)
                row_sum[i] = row_sum[i] * a + b
                mx[i] = m_new
                if row < valid_rows:
                    for c in cutlass.range_constexpr(n_cols):
                        acc_mn[i, c] = acc_mn[i, c] * a + b * g_mn[i, c]
        for i in cutlass.range_constexpr(n_rows):
            inv = cutlass.Float32(0.0)
            if row_sum[i] > 0.0:
                inv = 1.0 / row_sum[i]
            for c in cutlass.range_constexpr(n_cols):
                acc_mn[i, c] = acc_mn[i, c] * inv
            m_log2[i] = mx[i]

    @cute.jit
    def load_q(self, q_copy, mQ, sQ, bidx, m_blk, valid_rows, tidx):
        """Q's 64 x 576 tile of (sequence bidx, m-tile m_blk) into SMEM by cp.async (all 256
        threads, 16-byte vectors; the caller commits and waits); a query row past s*h takes
        row 0 of the tile instead (finite; never stored)."""
        thr_q = q_copy.get_slice(tidx)
        tXcT = thr_q.partition_S(cute.make_identity_tensor((TILE_M, D_QK)))
        self.copy_rows(
            q_copy, thr_q, mQ[bidx, m_blk, None, None], thr_q.partition_D(sQ), tXcT, valid_rows,
            D_QK,
        )  # fmt: skip

    @cute.jit
    def copy_rows(
        self,
        tiled_copy: cute.TiledCopy,
        thr_copy,
        g: cute.Tensor,
        tXs: cute.Tensor,
        tXc: cute.Tensor,
        limit: cutlass.Int32,
        width: cutlass.Constexpr,
    ):
        """Rows of the (64, width) global tile ``g`` into their SMEM places ``tXs`` (this
        thread's partition; ``tXc`` the row of each vector) by cp.async: a row < ``limit``
        from ``g``, any other from row 0 of ``g``, a valid, finite stand-in (a query row past
        s*h, or a token slot past the sequence's end: NaN in the check), never used."""
        g0 = cute.make_tensor(g.iterator, cute.make_layout((TILE_M, width), stride=(0, 1)))
        tXg = thr_copy.partition_S(g)
        tXg0 = thr_copy.partition_S(g0)
        for m in cutlass.range_constexpr(cute.size(tXg, mode=[1])):
            if tXc[0, m, 0][0] < limit:
                cute.copy(tiled_copy, tXg[None, m, None], tXs[None, m, None])
            else:
                cute.copy(tiled_copy, tXg0[None, m, None], tXs[None, m, None])

    @cute.kernel
    def combine(
        self,
        vO: cute.Tensor,  # (cap, rows_total, 4, 32, 4) partial O: fp32 (16-bit at step 34)
        vL: cute.Tensor,  # (cap, rows_total) fp32 partial LSE, log2 domain
        vOut: cute.Tensor,  # (rows_total, 4, 32, 4) O in the dtype
        vLse: cute.Tensor,  # (rows_total,) fp32 natural-log LSE
        num_splits: cutlass.Int32,
        total: cutlass.Int32,
        vPieces: cute.Tensor,  # work_list: (b,) int32 pieces per sequence; else unused
    ):
        """Merge the splits of one packed row per warp: m = max_i lse_i, w_i = 2^(lse_i - m),
        O = sum_i w_i O_i / sum_i w_i, LSE = (m + log2 sum_i w_i) ln 2. Lane l owns columns
        128 k + 4 l .. +3 (k < 4), a warp reads 512 contiguous bytes per (split, k): 16-byte
        loads where ``combine_vec16`` is set (step 36), four 4-byte ones otherwise; with
        ``combine_one_trip`` (step 38) the first round's loads go out before the LSEs are read.
        With the work list, a row merges its sequence's pieces, and a sequence in one piece
        (stored by its CTA) is skipped."""
        tidx, _, _ = cute.arch.thread_idx()
        blk, _, _ = cute.arch.block_idx()
        lane = tidx % 32
        row = blk * self.combine_rows + tidx // 32
        busy = row < total
        if cutlass.const_expr(self.work_list):  # noqa: SIM102 (compile-time, then run-time)
            # read before the wait: the work list is written by the host at setup and by no
            # kernel (were the split kernel ever to write it, this would race with it)
            if busy:
                num_splits = vPieces[row // self.rows, 0]
                if cutlass.const_expr(self.pair_merge):  # noqa: SIM102 (compile time, then run time)
                    if vPieces[row // self.rows, 1] != 0:
                        # step 62: its cluster pair merged this sequence and stored its O
                        num_splits = cutlass.Int32(1)
                busy = num_splits > 1
        cute.arch.griddepcontrol_wait()  # the split kernel's workspace is complete
        if busy:
            self.merge_row(vO, vL, vOut, vLse, row, lane, num_splits)

    @cute.jit
    def merge_row(
        self,
        vO: cute.Tensor,
        vL: cute.Tensor,
        vOut: cute.Tensor,
        vLse: cute.Tensor,
        row: cutlass.Int32,
        lane: cutlass.Int32,
        num_splits: cutlass.Int32,
    ):
        """One warp merges packed row ``row`` from its ``num_splits`` partials (views of
        :meth:`combine_views`): m = max_i lse_i, w_i = 2^(lse_i - m), O = sum_i w_i O_i /
        sum_i w_i, LSE = (m + log2 sum_i w_i) ln 2; lane l owns columns 128 k + 4 l .. +3."""
        early = None
        if cutlass.const_expr(self.combine_one_trip):
            # step 38: the first round's partial O (pieces 0..nb-1 that exist) loaded before
            # the LSEs are read, so both loads are in flight together
            early = cute.make_rmem_tensor(self.parts_layout(), vO.element_type)
            for u in cutlass.range_constexpr(self.combine_batch):
                if u < num_splits:
                    for k in cutlass.range_constexpr(D_V // 128):
                        cute.autovec_copy(vO[u, row, k, lane, None], early[u, k, None])
        # the max and the weight sum over the splits (lane i holds splits i, i + 32, ...)
        mx = -cutlass.Float32.inf
        for i in cutlass.range(lane, num_splits, 32, unroll=1):
            mx = cute.arch.fmax(mx, vL[i, row])
        mx = cute.arch.warp_reduction_max(mx)
        base = mx
        if mx == -cutlass.Float32.inf:
            base = cutlass.Float32(0.0)  # no split saw a key: every weight is 0
        wsum = cutlass.Float32(0.0)
        for i in cutlass.range(lane, num_splits, 32, unroll=1):
            wsum += cute.math.exp2(vL[i, row] - base, fastmath=True)
        wsum = cute.arch.warp_reduction_sum(wsum)
        inv = cutlass.Float32(0.0)
        if wsum > 0.0:
            inv = 1.0 / wsum
        acc = cute.make_rmem_tensor(cute.make_layout((D_V // 128, 4)), cutlass.Float32)
        acc.fill(0.0)
        nb = self.combine_batch
        # the partials' type: fp32, or the 16-bit dtype (seesaw step 34), widened on load
        pdt = vO.element_type
        if cutlass.const_expr(nb == 1):
            part = cute.make_rmem_tensor(cute.make_layout((4,)), pdt)
            for i in cutlass.range(num_splits, unroll=1):
                w = cute.math.exp2(vL[i, row] - base, fastmath=True) * inv
                if w > 0.0:  # an empty split (weight 0) is not read
                    for k in cutlass.range_constexpr(D_V // 128):
                        cute.autovec_copy(vO[i, row, k, lane, None], part)
                        pf = self.widened(part)
                        for v in cutlass.range_constexpr(4):
                            acc[k, v] = acc[k, v] + w * pf[v]
        else:
            # nb splits per round: all their weights, then all their loads (independent,
            # in flight together), then the FMAs; empty splits (weight 0) are not read
            wts = cute.make_rmem_tensor(cute.make_layout((nb,)), cutlass.Float32)
            first = 0
            if cutlass.const_expr(self.combine_one_trip):
                # step 38: the first round's loads were issued before the LSEs (early); its
                # weights gate the FMAs alone, so an empty piece's loaded values are unused
                self.batch_weights(vL, row, 0, num_splits, base, inv, wts)
                self.batch_fma(acc, wts, self.widened(early))
                first = nb
            parts = cute.make_rmem_tensor(self.parts_layout(), pdt)
            for i0 in cutlass.range(first, num_splits, nb, unroll=1):
                self.batch_weights(vL, row, i0, num_splits, base, inv, wts)
                for u in cutlass.range_constexpr(nb):
                    if wts[u] > 0.0:
                        for k in cutlass.range_constexpr(D_V // 128):
                            cute.autovec_copy(vO[i0 + u, row, k, lane, None], parts[u, k, None])
                self.batch_fma(acc, wts, self.widened(parts))
        out = cute.make_rmem_tensor(cute.make_layout((4,)), self.dtype)
        for k in cutlass.range_constexpr(D_V // 128):
            out.store(acc[k, None].load().to(self.dtype))
            cute.autovec_copy(out, vOut[row, k, lane, None])
        if lane == 0:
            val = -cutlass.Float32.inf
            if wsum > 0.0:
                val = (mx + cute.math.log2(wsum)) * LN_2
            vLse[row] = val

    def parts_layout(self) -> cute.Layout:
        """The register layout of one round's partial O, (combine_batch, 4, 4): split-major
        with each lane's 4 columns contiguous (one 16-byte load each) where ``combine_vec16``
        is set (steps 36, 38 and 61), else the default column-major layout (four 4-byte loads per
        16 bytes; steps 8-35)."""
        nb = self.combine_batch
        if self.combine_vec16:
            return cute.make_layout((nb, D_V // 128, 4), stride=(D_V // 32, 4, 1))
        return cute.make_layout((nb, D_V // 128, 4))

    @cute.jit
    def batch_weights(
        self,
        vL: cute.Tensor,
        row: cutlass.Int32,
        i0: cutlass.Int32,
        num_splits: cutlass.Int32,
        base: cutlass.Float32,
        inv: cutlass.Float32,
        wts: cute.Tensor,
    ):
        """The weights of splits ``i0 .. i0 + combine_batch - 1`` of packed row ``row``,
        2^(lse_i - base) / sum, into ``wts``; 0 for a split past ``num_splits``."""
        for u in cutlass.range_constexpr(self.combine_batch):
            wts[u] = cutlass.Float32(0.0)
            if i0 + u < num_splits:
                wts[u] = cute.math.exp2(vL[i0 + u, row] - base, fastmath=True) * inv

    @cute.jit
    def batch_fma(self, acc: cute.Tensor, wts: cute.Tensor, pf: cute.Tensor):
        """acc += w_u * O_u over one round's splits (fp32 ``pf``, (combine_batch, 4, 4));
        a split of weight 0 (empty, or past the row's pieces) is skipped, whatever was loaded
        for it."""
        for u in cutlass.range_constexpr(self.combine_batch):
            if wts[u] > 0.0:
                for k in cutlass.range_constexpr(D_V // 128):
                    for v in cutlass.range_constexpr(4):
                        acc[k, v] = acc[k, v] + wts[u] * pf[u, k, v]

    @cute.jit
    def widened(self, part: cute.Tensor) -> cute.Tensor:
        """``part`` itself when it holds fp32, else a register copy of it widened to fp32 (the
        16-bit partials of seesaw step 34)."""
        if cutlass.const_expr(part.element_type == cutlass.Float32):
            return part
        wide = cute.make_rmem_tensor(part.layout, cutlass.Float32)
        wide.store(part.load().to(cutlass.Float32))
        return wide

    @cute.jit
    def issue_chunks(
        self,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        mbar: cute.Pointer,
        page: cutlass.Int32,
        stage: cutlass.Int32,
        c_lo: cutlass.Constexpr = 0,
        c_hi: cutlass.Constexpr = N_CHUNKS,
        src_c0: cutlass.Constexpr = 0,
    ):
        """Executed by a whole warp: chunks c_lo..c_hi-1 (64 columns each; all 9 by default) of
        cache page ``page`` (an index from the page table) into SMEM stage ``stage``, one TMA
        per chunk, each completing its own mbarrier (8 KB expected). The elected lane arms the
        barrier; the TMA copy elects its issuing lane itself. With ``self.kv_cache_policy``
        set, the loads carry that L2 cache hint. ``src_c0``: the source chunk of SMEM chunk c
        is c - src_c0 (the FP8 cache's rope part, one chunk wide, lands in chunk 8)."""
        for c in cutlass.range_constexpr(c_lo, c_hi):
            bar = mbar + stage * N_CHUNKS + c
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(bar, CHUNK_BYTES)
            src = tKgK[None, page, c - src_c0]
            if cutlass.const_expr(self.kv_cache_policy is not None):
                cute.copy(
                    tma_atom, src, tKsKt[None, c, stage], tma_bar_ptr=bar,
                    cache_policy=cutlass.Int64(self.kv_cache_policy),
                )  # fmt: skip
            else:
                cute.copy(tma_atom, src, tKsKt[None, c, stage], tma_bar_ptr=bar)

    def page_tma_partitions(self, tma_atom: cute.CopyAtom, mKVt: cute.Tensor, sK: cute.Tensor):
        """The TMA views of the page loads: (64 tokens, 64 columns, page, chunk) boxes of the
        (tokens, 576) cache view and the SMEM stages as (64, 64, chunk, stage) boxes. Returns
        (tKsKt: (TMA, chunk, stage), tKgK: (TMA, page, chunk)); both schedules."""
        gKV = cute.local_tile(mKVt, (PAGE, CHUNK), (None, None))
        sKc = cute.flat_divide(sK, (PAGE, CHUNK))[None, None, 0, None, None]
        return cpasync.tma_partition(
            tma_atom, 0, cute.make_layout(1), cute.group_modes(sKc, 0, 2),
            cute.group_modes(gKV, 0, 2),
        )  # fmt: skip

    @cute.jit
    def zero_v_rows(
        self,
        sK: cute.Tensor,
        stage: cutlass.Int32,
        tail: cutlass.Int32,
        tidx,
        col0: cutlass.Int32 = 0,
        n_cols: cutlass.Constexpr = D_V,
        n_threads: cutlass.Constexpr = THREADS,
    ):
        """Zero V columns [col0, col0 + n_cols) of tokens ``tail`` .. 63 of SMEM stage
        ``stage`` (the slots past the sequence's end, NaN in the workload's check), by
        ``n_threads`` threads (``tidx`` in 0 .. n_threads-1): thread t takes the 8 columns of
        vector t % (n_cols / 8) in rows tail + t // (n_cols / 8), then every n_threads /
        (n_cols / 8) rows (16-byte units stay contiguous under the 128-byte swizzle). Step 3
        zeroes all 512 columns with the CTA; the seesaw schedule each warpgroup its half."""
        zero = cute.make_rmem_tensor(cute.make_layout((1, 8)), self.dtype)
        zero.fill(0.0)
        vecs = n_cols // 8
        vec = col0 // 8 + tidx % vecs
        for r in cutlass.range(tail + tidx // vecs, PAGE, n_threads // vecs, unroll=1):
            dst = cute.local_tile(sK[None, None, stage], (1, 8), (r, vec))
            cute.autovec_copy(zero, dst)

    @cute.jit
    def load_page(
        self,
        mKV: cute.Tensor,
        mPT: cute.Tensor,
        bidx: cutlass.Int32,
        seqlen: cutlass.Int32,
        n: cutlass.Int32,
        stage: cutlass.Int32,
        thr_copy: cute.TiledCopy,
        tiled_copy: cute.TiledCopy,
        tXcT: cute.Tensor,
        tKsK: cute.Tensor,
        width: cutlass.Constexpr = D_QK,
    ):
        """Page ``n`` of sequence ``bidx`` into SMEM stage ``stage`` with cp.async (one group
        is committed by the caller): all 576 columns of a 16-bit cache page, or (``width`` 64,
        ``mKV`` the FP8 cache's ``kv_rope``, ``tKsK`` its SMEM columns 512..575) the rope
        part. The page index is read from the page table here; tokens past the sequence's end
        are copied from token 0 of the same page (a valid, finite token) instead of their NaN
        slots, so the SMEM page only ever holds finite values."""
        page = mPT[bidx, n]
        self.copy_rows(
            tiled_copy, thr_copy, mKV[page, None, None], tKsK[None, None, None, stage], tXcT,
            seqlen - n * PAGE, width,
        )  # fmt: skip

    @cute.jit
    def load_latent(
        self,
        mKV8: cute.Tensor,
        mSc: cute.Tensor,
        mPT: cute.Tensor,
        bidx: cutlass.Int32,
        seqlen: cutlass.Int32,
        n: cutlass.Int32,
        tidx: cutlass.Int32,
        rK8: cute.Tensor,
        rSc: cute.Tensor,
    ):
        """FP8 latent cache: this thread's share of page ``n``'s e4m3 latent part into
        registers ``rK8`` (16, 8): token ``tidx // 4``, 16-byte vectors at columns 64 i +
        16 (tidx % 4), and the scales they need into ``rSc``. A token past the sequence's end
        (NaN values and scale) is replaced by token 0 of the page, as :meth:`load_page` does,
        so the stage only ever holds finite values (S of those tokens is masked to -inf)."""
        page = mPT[bidx, n]
        row = tidx // FP8_ROW_THREADS
        q = tidx % FP8_ROW_THREADS
        src = cutlass.Int32(0)
        if row < seqlen - n * PAGE:
            src = row
        gRow = mKV8[page, src, None]  # (512,) e4m3
        for i in cutlass.range_constexpr(FP8_VECS):
            v = cute.local_tile(gRow, (FP8_VEC,), (i * FP8_ROW_THREADS + q,))
            cute.autovec_copy(v, rK8[None, i])
        if cutlass.const_expr(self.scale_block >= CHUNK):
            for g in cutlass.range_constexpr(self.n_scales):
                rSc[g] = mSc[page, src, g]
        else:  # a scale group narrower than 64 columns: one scale per vector
            for i in cutlass.range_constexpr(FP8_VECS):
                col = i * CHUNK + q * FP8_VEC
                rSc[i] = mSc[page, src, col // self.scale_block]

    @cute.jit
    def store_latent(
        self,
        sK: cute.Tensor,
        stage: cutlass.Int32,
        tidx: cutlass.Int32,
        rK8: cute.Tensor,
        rSc: cute.Tensor,
    ):
        """FP8 latent cache: dequantise the registers of :meth:`load_latent` (e4m3 -> fp32,
        times the scale: exact with power-of-two scales, -> dtype) into SMEM stage ``stage``
        at their (token, column) places of the 128-byte-swizzled page layout the WGMMAs read:
        two 16-byte stores per vector (8-element units stay contiguous under the swizzle)."""
        row = tidx // FP8_ROW_THREADS
        q = tidx % FP8_ROW_THREADS
        sPage = sK[None, None, stage]
        out = cute.make_rmem_tensor(cute.make_layout((FP8_VEC,)), self.dtype)
        for i in cutlass.range_constexpr(FP8_VECS):
            if cutlass.const_expr(self.scale_block >= CHUNK):
                sc = rSc[i * CHUNK // self.scale_block]
            else:
                sc = rSc[i]
            vals = rK8[None, i].load().to(cutlass.Float32) * sc
            out.store(vals.to(self.dtype))
            for half in cutlass.range_constexpr(FP8_VEC // 8):
                unit = (i * FP8_ROW_THREADS + q) * (FP8_VEC // 8) + half  # 8-column unit
                dst = cute.local_tile(sPage, (1, 8), (row, unit))
                src = cute.local_tile(out, (8,), (half,))
                cute.autovec_copy(src, dst)
