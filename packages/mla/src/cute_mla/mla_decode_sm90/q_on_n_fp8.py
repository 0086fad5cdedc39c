"""MLA decode for Hopper (sm_90a), steps 43 to 48: the FP8 latent cache with the query rows
on WGMMA's N, dequantised straight into WGMMA's register A operand (``--kv_dtype float8_e4m3fn
--config step=43`` to ``48``; s*h = 16).

Why (issue 11: at h_q <= 64 decode is memory-bound and an FP8 cache should read half the bytes
and run faster; the devlog's FP8 sections): the seesaw schedule's FP8 builds (steps 14-30)
dequantise every page into 16-bit SMEM stages through a third, producer warpgroup, because there
the page is WGMMA's B operand, which only SMEM can hold. They measured 1.37x the 16-bit time at
h = 64: the producer's global loads into registers, its SMEM stores and the hand-over barriers
are on the critical path. Step 42 (:mod:`.q_on_n`) turned the product around, S^T = K Q^T and
O^T += V^T P^T, so the page is the **A** operand of both GEMMs, and Hopper's WGMMA takes A from
registers. So here the page arrives by TMA as e4m3 bytes (32 KB of latent per page instead of
64 KB, plus the 16-bit rope part and the scales), each thread loads the bytes of its own
A fragments from SMEM and turns them into 16-bit pairs in registers, and the WGMMAs read them
there: no 16-bit copy of the page exists anywhere, no producer warpgroup, no extra barrier.
(FlashAttention-3's FP8 forward reads V through registers for a similar reason: its
transpose.)

Two permutations make every thread's bytes contiguous, so that one LDS.64 (K) or LDS.128 (V)
feeds several fragments without byte shuffles across threads:

* S^T's reduction index (the 512 latent columns) is permuted inside each block of 32: logical
  column ``L = e + 2q + 8a + 16b`` (e, a, b in 0..1, q in 0..3: the m64k16 A fragment's column
  pair, quad lane, +8 half and k-block of the two in the block) is physical column
  ``e + 2a + 4b + 8q``. A quad lane's 8 values of the 32 columns are then 8 consecutive bytes.
  Q's latent part is loaded into SMEM through the same permutation (:func:`latent_q_layout`),
  so the sum S^T = sum_L K[t, perm(L)] Q[n, perm(L)] is unchanged.
* O^T's rows (the latent columns of O) are permuted: logical row ``D = r + 8h + 16w + 64i``
  (r = lane // 4, h = +8 half, w = warp, i = m-tile) is physical column ``16 (8w + r) + 2i + h``.
  A thread's 16 rows of all 8 m-tiles are then 16 consecutive bytes of a token: one LDS.128
  per token; a ``prmt`` pairs tokens t and t+1 of one column into a 16-bit pair (the fragment
  holds two tokens per register). The epilogue stores O and the split workspace through the
  inverse view (:data:`ROW_PERM`), so O comes out in its natural order.

The dequantisation is the bit placement of
``knowledge/languages/cute-dsl/optimizations/fp8-bit-placement-dequant.md`` (prmt, shift, mask:
the e4m3 value times 2^-120 as bf16) with both of its multiplies folded into one: the scale
pair is built as (s * 2^120) in the 16-bit type, so each 16-bit pair costs PRMT, two LOP3, one
SHF and one HMUL2. The scale granularity is ``per_token`` or ``per_block`` with a block of at
least 128 latent columns (G <= 4 scales per token: FlashMLA's and FlashInfer's 128); a token's
scales reach SMEM by TMA with the page. The folded factor must stay finite: scales below 2^8
(bf16: s x 2^120 < 2^128; fp16: s x 2^8 < 65504); the workload's power-of-two scales
(2^ceil(log2(amax / 448))) stay there while the cache's values stay below 448 x 2^7. V's
scale of a token past the sequence's end is taken as 0, so its dequantised V is exactly 0
whatever its bytes (an e4m3 NaN lands as a finite value), which replaces step 42's zeroing of
the tail's V rows.

RS WGMMAs read their A registers asynchronously, so a register may not be rewritten before the
WGMMA group that reads it has retired: each GEMM is issued in groups of 8 WGMMAs (S^T: one
128-column TMA box, 8 k-blocks; O^T: one k-block of 16 tokens over the 8 m-tiles) from two
register buffers of 32 words in turn, ``wait_group(1)`` before a buffer is refilled, so a
group's dequantisation overlaps the previous group's WGMMAs.

Step 43 keeps two page stages per CTA (about 104 KB of SMEM, 2 CTAs per SM, the work list cut
into two parts per SM); step 44 one CTA per SM with four stages. The rest (the work list, the
column softmax, P^T through SMEM, S^T in 4 accumulators, the epilogue and the PDL combine) is
step 42's (:class:`.q_on_n.MlaDecodeSm90QOnN`).

Step 45 is step 43 with O^T in fp16: V's pairs by one ``cvt.rn.f16x2.e4m3x2`` (F2FP, exact)
each and one PRMT per two pairs instead of the bit placement, the per-token scale moved into
P (fp16, 0 past the sequence's end) and the tail's e4m3 rows zeroed in SMEM (an e4m3 NaN converts to
NaN there); per_token scales only. Its P x s is an fp16 value, so small scales lose precision:
a CPU emulation (T = 4096, random scores) gave a max relative O error of 2.4e-4 at s = 2^-8,
8e-3 at 2^-14 and 9e-2 at 2^-18, where 91% of P x s flush to 0. Measured on an H100 at h=16
(128, 4096): 139.7 us against step 43's 151.0 (the devlog, "Session 18").

Step 46 is step 45 with S^T's latent part in fp16 as well, so no pair of the page goes through
the bit placement: K's pairs by one F2FP each (a quad lane's column pairs are adjacent bytes of
one token, so no PRMT), Q's latent part converted to fp16 once per segment with a power of two
per query row (:meth:`MlaDecodeSm90QOnNFp8.load_q_f16`: the row's largest magnitude lands in
[2^14, 2^15), where fp16 holds every bf16 value exactly), the rope part's 4 WGMMAs (16-bit in
the cache) in their own accumulator, and S^T = latent x (token scale / row factor) + rope, 8
FFMAs per page per thread. Per_token only; CPU compile: 2614 SASS instructions against step
45's 2829, no HMUL2 and 100 PRMT (45: 128 and 196), 254 registers, 0 spills; on the H100
138.0 us, where the 16-bit default took 211.3.

Step 48 is step 47 releasing the page's stage before the page's last O^T WGMMAs retire: they
read the dequantised V from registers and P^T from its own SMEM, so once every thread has
loaded its V bytes (the CTA barrier) the next TMA may overwrite the stage, and the
``wait_group(0)`` that guards the register buffers moves behind the TMA issue.

Step 47 is step 46 with the next page's cache index fetched a page early: warp 0 reads the
page table entry of the load cursor by a 4-byte cp.async into SMEM right behind each TMA
issue, and the next page's end reads it from there. Steps 43-46 read it at the page's end,
after the work list's entry (two dependent global loads before the TMA, and a third to
advance the cursor), and a plain load a page early does not help: ptxas moves the value into
a uniform register for the TMA at once, so the warp waits for it there.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import dsl_user_op

from .kernel import D_QK, D_ROPE, D_V, LOG2_E, PAGE, MlaDecodeSm90Kernel, _mn_view
from .mla_decode_sm90 import (
    PER_TOKEN_ONLY_STEPS,
    Q_ON_N_FP8_STEPS,
    fp8_q_on_n_stages,
)
from .q_on_n import THREADS_N, WARPS_N, MlaDecodeSm90QOnN
from .seesaw import EVICT_FIRST, asm_u32, e4m3_placement_ptx

#: latent columns per TMA box of the e4m3 page (one 128-byte swizzle row) and boxes per page
BOX = 128
N_BOXES = D_V // BOX  # 4
BOX_BYTES = PAGE * BOX  # 8 KB
ROPE_BYTES = PAGE * D_ROPE * 2  # 8 KB (16-bit)
#: mbarriers per stage: one per latent box (box 0's also counts the scales), one for the rope
BARS = N_BOXES + 1
#: S^T's k-blocks (16 columns) per latent box, and 16-token k-blocks of O^T per page
KB_PER_BOX = BOX // 16  # 8
OT_KBLOCKS = PAGE // 16  # 4
#: words (16-bit pairs) of one register A buffer: 8 WGMMAs x 4 registers
BUF_WORDS = 32
#: step 46's query row factor 2^(F - 127) from the biased exponent E of the row's largest
#: magnitude: F = Q_FACTOR_BIAS - E (the max lands in [2^14, 2^15)), clamped to
#: Q_FACTOR_CLAMP (2^-100 .. 2^100, so the factor and its inverse stay normal fp32)
Q_FACTOR_BIAS = 127 + 127 + 14
Q_FACTOR_CLAMP = (27, 227)


#: S^T's column permutation as one layout mode: logical latent column ``e + 2q + 8a + 16b + 32k``
#: (colexicographic in this shape) -> physical ``e + 2a + 4b + 8q + 32k`` (these strides)
K_PERM = (((2, 4, 2, 2), D_V // 32), ((1, 8, 2, 4), 32))
#: O^T's row permutation: logical row ``r + 8h + 16w + 64i`` -> physical latent column
#: ``16 r + h + 128 w + 2 i`` (r < 8, h < 2, w < 4, i < 8)
ROW_PERM = ((8, 2, 4, 8), (16, 1, 128, 2))


def k_byte_offset(base_phase, j: int, hh: int, kb: int):
    """Step 50: the byte offset in the stage of a thread's 8 K bytes of box ``j``, row half
    ``hh``, column block ``kb``, from its (base, swizzle phase) of
    :meth:`MlaDecodeSm90QOnNFp8.k_offsets`: one XOR, the rest an immediate (plain arithmetic:
    ints or DSL integers)."""
    base, phase = base_phase
    return base + ((32 * kb) ^ phase) + (j * PAGE * BOX + hh * 8 * BOX)


def v_byte_offset(offs, t8: int, e: int):
    """Step 55: the byte offset in the stage of a thread's 8 V bytes of token 2 qd + ``e`` +
    ``t8`` (``t8`` a multiple of 8) from its two offsets of
    :meth:`MlaDecodeSm90QOnNFp8.v_offsets`: an immediate."""
    return offs[e] + t8 * BOX


def latent_q_layout(b, n: int) -> cute.Layout:
    """Q's latent part (b, n, 512) seen in S^T's permuted column order (:data:`K_PERM`) in
    rows of 576 (trace time)."""
    return cute.make_layout((b, n, K_PERM[0]), stride=(n * D_QK, D_QK, K_PERM[1]))


@dsl_user_op
def e4m3_place(x, y, sel: int, sc2, half16: bool, *, loc=None, ip=None) -> cutlass.Uint32:
    """One 16-bit pair from two e4m3 bytes: ``prmt`` with selector ``sel`` moves the low
    element's byte (from ``x``) to bits 8-15 and the high element's (from ``y``) to bits 24-31;
    the bit placement (sign kept, 7 exponent-and-mantissa bits shifted into the 16-bit
    fields) gives the e4m3 values times 2^-120 (bf16; fp16: 2^-8); one multiply by ``sc2``
    (:func:`scale_pair`: the scales times 2^120, or 2^8) gives value x scale in one rounding,
    as the seesaw's two multiplies do (the first is exact)."""
    kind = "f16x2" if half16 else "bf16x2"
    asm = (
        "{\n\t.reg .b32 v, s, t;\n\t"
        f"prmt.b32 v, $1, $2, {sel:#x};\n\t"
        + e4m3_placement_ptx("v", "s", "t", half16)
        + f"mul.rn.{kind} $0, v, $3;\n\t}}"
    )
    args = [
        cutlass.Uint32(x).ir_value(loc=loc, ip=ip),
        cutlass.Uint32(y).ir_value(loc=loc, ip=ip),
        cutlass.Uint32(sc2).ir_value(loc=loc, ip=ip),
    ]
    return asm_u32(asm, "=r,r,r,r", args)


@dsl_user_op
def scale_pair(lo, hi, half16: bool, *, loc=None, ip=None) -> cutlass.Uint32:
    """Two fp32 scales as a 16-bit pair (``lo`` in bits 0-15) times 2^120 (bf16) or 2^8
    (fp16): the factor that undoes :func:`e4m3_place`'s placement and applies the scale."""
    k = 2.0**8 if half16 else 2.0**120
    kind = "f16x2" if half16 else "bf16x2"
    a = (cutlass.Float32(hi) * k).ir_value(loc=loc, ip=ip)
    b = (cutlass.Float32(lo) * k).ir_value(loc=loc, ip=ip)
    return asm_u32(f"cvt.rn.{kind}.f32 $0, $1, $2;", "=r,f,f", [a, b])


@dsl_user_op
def prmt(x, y, sel: int, *, loc=None, ip=None) -> cutlass.Uint32:
    """``prmt.b32`` of ``x`` (bytes 0-3) and ``y`` (bytes 4-7) with selector ``sel``."""
    args = [cutlass.Uint32(x).ir_value(loc=loc, ip=ip), cutlass.Uint32(y).ir_value(loc=loc, ip=ip)]
    return asm_u32(f"prmt.b32 $0, $1, $2, {sel:#x};", "=r,r,r", args)


@dsl_user_op
def e4m3_half_to_f16x2(x, half: int, *, loc=None, ip=None) -> cutlass.Uint32:
    """Bytes (0, 1) (``half`` 0) or (2, 3) (``half`` 1) of ``x`` as an fp16 pair (low half =
    the lower byte) by one ``cvt.rn.f16x2.e4m3x2`` (F2FP, exact: fp16 holds every e4m3 value;
    ptxas reads the high half in place, ``.H1``). Unscaled: steps 45/46 apply the scale to P
    (V) and to S^T's rows (K, step 46)."""
    asm = (
        "{\n\t.reg .b16 lo, hi;\n\t"
        "mov.b32 {lo, hi}, $1;\n\t"
        f"cvt.rn.f16x2.e4m3x2 $0, {'hi' if half else 'lo'};\n\t}}"
    )
    return asm_u32(asm, "=r,r", [cutlass.Uint32(x).ir_value(loc=loc, ip=ip)])


#: prmt selectors: bytes (0, 1) or (2, 3) of one word (S^T: one token, two columns); byte b
#: of x and of y (O^T: one column, tokens t and t+1)
SEL_SAME = (0x1100, 0x3322)
SEL_XY = tuple(((4 + b) << 12) | ((4 + b) << 8) | (b << 4) | b for b in range(4))
#: steps 45/46: bytes b of x and y, then b + 1 of x and y (b = 0, 2): two fp16 pairs of tokens
#: t, t + 1 from one PRMT (the halves of one word, each converted by one F2FP)
SEL_PAIRS = tuple(((5 + b) << 12) | ((b + 1) << 8) | ((4 + b) << 4) | b for b in (0, 2))


class MlaDecodeSm90QOnNFp8(MlaDecodeSm90QOnN):
    """Steps 43, 44 and 45 (module docstring): s*h = 16, the FP8 latent cache (e4m3,
    ``per_token`` or ``per_block`` scales with a block of at least 128 columns; step 45
    ``per_token`` only, a block of 512), the work list. Same
    ``__call__`` arguments as :class:`.q_on_n.MlaDecodeSm90QOnN`; ``kv_scales`` (pages, 64, G)
    fp32 and ``kv_rope`` (pages, 64, 64) in the dtype are used. Raises ValueError for another
    s*h, step or scale block."""

    def __init__(
        self, s: int, h: int, causal: bool, dtype=cutlass.BFloat16, step: int = 43,
        scale_block: int = D_V,
    ):  # fmt: skip
        if s * h != 16:
            raise ValueError(f"step {step} takes s*h = 16 (got s={s}, h={h})")
        if step not in Q_ON_N_FP8_STEPS:
            raise ValueError(f"MlaDecodeSm90QOnNFp8 builds steps {Q_ON_N_FP8_STEPS} (got {step})")
        if step in PER_TOKEN_ONLY_STEPS and scale_block != D_V:
            raise ValueError(
                f"step {step} takes per_token scales (a block of 512; got {scale_block})"
            )
        if scale_block < BOX or D_V % scale_block:
            raise ValueError(
                f"step {step} takes a scale block of 128, 256 or 512 (got {scale_block})"
            )
        MlaDecodeSm90Kernel.__init__(
            self, s, h, causal, dtype, loads="cpasync", kv_fp8=True, scale_block=scale_block
        )
        self.n = s * h
        self.step = step
        self.s_accs = 4  # step 42's
        self.stages = fp8_q_on_n_stages(step)
        self.work_list = True
        self.combine_batch = 4
        self.kv_cache_policy = EVICT_FIRST
        self.half16 = dtype == cutlass.Float16
        #: step 45: O^T's V^T in fp16 by one F2FP per pair, the per-token scale folded into P
        #: (fp16 too); S^T keeps the bit placement
        self.v_f16 = step in PER_TOKEN_ONLY_STEPS
        #: step 46: S^T's latent part in fp16 too: K by one F2FP per pair, Q in fp16 with a
        #: power-of-two scale per query row, the rope part in its own accumulator, and
        #: S^T = (token scale / row factor) x latent + rope
        self.k_f16 = step in (46, 47, 48)
        #: step 47: 46 with the next page's cache index read a page before its TMA
        self.early_index = step in (47, 48)
        #: step 48: 47 issuing the stage's next TMA once every thread has read its V bytes,
        #: before the page's last O^T WGMMAs retire
        self.early_release = step == 48
        #: the 16-bit types of S^T's latent WGMMAs (Q and K) and of O^T's (V and P)
        self.k_type = cutlass.Float16 if self.k_f16 else dtype
        self.v_type = cutlass.Float16 if self.v_f16 else dtype

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
        kv_scales: cute.Tensor,  # (num_pages, 64, G) float32
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
        mQr = cute.make_tensor(
            q.iterator + D_V, cute.make_layout((b, n, D_ROPE), stride=(n * D_QK, D_QK, 1))
        )
        mOt, mL, mOat, mLa, mWork = self.out_views(o, lse, o_acc, lse_acc, work, b, ROW_PERM)

        K = cute.nvgpu.OperandMajorMode.K
        # A from registers (the dequantised page) for S^T's latent part (step 46: fp16, K by
        # F2FP, Q scaled into fp16) and for O^T
        kt = self.k_type
        rs_mma = sm90_utils.make_trivial_tiled_mma(
            kt, kt, K, K, cutlass.Float32, (1, 1, 1), (PAGE, n), warpgroup.OperandSource.RMEM
        )
        # O^T: V^T from registers and P^T from SMEM, fp16 for step 45 (V by F2FP, P scaled)
        vt = self.v_type
        ot_mma = sm90_utils.make_trivial_tiled_mma(
            vt, vt, K, K, cutlass.Float32, (1, 1, 1), (PAGE, n), warpgroup.OperandSource.RMEM
        )
        # A from SMEM: S^T's rope part (16-bit in the cache)
        ss_mma = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, K, cutlass.Float32, (1, 1, 1), (PAGE, n)
        )

        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dt)
        atom8 = warpgroup.make_smem_layout_atom(
            warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float8E4M3FN
        )
        sQl_layout = cute.tile_to_shape(atom, (n, D_V), (0, 1))
        sQr_layout = cute.tile_to_shape(atom, (n, D_ROPE), (0, 1))
        sK8_layout = cute.tile_to_shape(atom8, (PAGE, D_V, st), (0, 1, 2))
        sR_layout = cute.tile_to_shape(atom, (PAGE, D_ROPE, st), (0, 1, 2))
        atom_p = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, vt)
        sP_layout = cute.tile_to_shape(atom_p, (n, PAGE), (0, 1))
        sPt_outer = cute.composition(sP_layout.outer, cute.make_layout((PAGE, n), stride=(n, 1)))

        tma8, mK8t, tmaR, mRt, tmaS, mSct = self.page_tma_atoms(
            kv_cache, kv_scales, kv_rope, atom, atom8, pages
        )
        lat_copy, rope_copy = self.q_copies(THREADS_N, 2)

        @cute.struct
        class SharedStorage:
            sK8: cute.struct.Align[
                cute.struct.MemRange[cutlass.Float8E4M3FN, cute.cosize(sK8_layout)], 1024
            ]
            sR: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sR_layout)], 1024]
            sQl: cute.struct.Align[cute.struct.MemRange[kt, cute.cosize(sQl_layout)], 1024]
            sQr: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQr_layout)], 1024]
            sP: cute.struct.Align[cute.struct.MemRange[vt, cute.cosize(sP_layout)], 1024]
            sSc: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, PAGE * g * st], 128]
            sMax: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n * WARPS_N], 16]
            sSum: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n * WARPS_N], 16]
            sQf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, n], 16]  # step 46
            sIdx: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 1], 4]  # step 47
            mbar: cute.struct.Align[cute.struct.MemRange[cutlass.Int64, st * BARS], 8]

        self.shared_storage = SharedStorage

        self.kernel_fp8(
            mQl, mQr, page_table, seqlens, mOt, mL, mOat, mLa, mWork, softmax_scale * LOG2_E,
            rs_mma, ot_mma, ss_mma, lat_copy, rope_copy, tma8, mK8t, tmaR, mRt, tmaS, mSct,
            sQl_layout, sQr_layout, sK8_layout, sR_layout, sP_layout, sPt_outer, split,
        ).launch(grid=[1, 1, num_splits], block=[THREADS_N, 1, 1], stream=stream)  # fmt: skip
        if cutlass.const_expr(split):
            self.launch_combine(o, lse, o_acc, lse_acc, num_splits, b, stream, work)

    def q_copies(self, threads: int, lat_vec: int):
        """(Trace time.) The query's tiled copies for ``threads`` threads, 8 per query row:
        the latent part ``lat_vec`` elements per thread and copy (2 through :data:`K_PERM`'s
        view, 8 for step 54's natural order), the rope part 8 (16 bytes). Returns
        (lat_copy, rope_copy); the loaders use their partitions (thread t holds row t // 8)."""
        dt = self.dtype

        def copy(mode, vec: int):
            return cute.make_tiled_copy_tv(
                cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=mode), dt,
                                    num_bits_per_copy=dt.width * vec),
                cute.make_layout((threads // 8, 8), stride=(8, 1)),
                cute.make_layout((1, vec)),
            )  # fmt: skip

        return (
            copy(cpasync.LoadCacheMode.ALWAYS, lat_vec),
            copy(cpasync.LoadCacheMode.GLOBAL, 8),
        )

    @cute.jit
    def page_tma_atoms(self, kv_cache, kv_scales, kv_rope, atom, atom8, pages):
        """The TMA atoms and tensors of the FP8 page (trace time): the e4m3 latent part in
        128-column boxes, the 16-bit rope part, a page's scales."""
        g = self.groups
        mK8_rows = cute.make_tensor(
            kv_cache.iterator, cute.make_layout((pages * PAGE, D_V), stride=(D_V, 1))
        )
        tma8, mK8t = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mK8_rows,
            cute.tile_to_shape(atom8, (PAGE, BOX), (0, 1)), (PAGE, BOX),
        )  # fmt: skip
        tmaR, mRt = self.page_tma(kv_rope, atom, D_ROPE)
        mSc_rows = cute.make_tensor(
            kv_scales.iterator, cute.make_layout((pages, PAGE * g), stride=(PAGE * g, 1))
        )
        tmaS, mSct = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mSc_rows, cute.make_layout((1, PAGE * g)),
            (1, PAGE * g),
        )  # fmt: skip
        return tma8, mK8t, tmaR, mRt, tmaS, mSct

    @cute.kernel
    def kernel_fp8(
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
        n = self.n
        st = self.stages
        g = self.groups

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sQl = storage.sQl.get_tensor(sQl_layout.outer, swizzle=sQl_layout.inner)
        sQr = storage.sQr.get_tensor(sQr_layout.outer, swizzle=sQr_layout.inner)
        sK8 = storage.sK8.get_tensor(sK8_layout.outer, swizzle=sK8_layout.inner)  # (64, 512, st)
        sR = storage.sR.get_tensor(sR_layout.outer, swizzle=sR_layout.inner)  # (64, 64, st)
        sP = storage.sP.get_tensor(sP_layout.outer, swizzle=sP_layout.inner)
        sPt = storage.sP.get_tensor(sPt_outer, swizzle=sP_layout.inner)
        sSc = storage.sSc.get_tensor(
            cute.make_layout((PAGE, g, st), stride=(g, 1, PAGE * g))
        )  # (token, group, stage)
        sSc_tma = storage.sSc.get_tensor(
            cute.make_layout((1, PAGE * g, st), stride=(0, 1, PAGE * g))
        )
        sMax = storage.sMax.get_tensor(cute.make_layout((n, WARPS_N)))
        sSum = storage.sSum.get_tensor(cute.make_layout((n, WARPS_N)))
        sQf = storage.sQf.get_tensor(cute.make_layout(n))
        sIdx = storage.sIdx.get_tensor(cute.make_layout(1))
        mbar = storage.mbar.data_ptr()

        # ---- mbarriers, TMA partitions and the first pages ----------------------------------
        if tidx == 0:
            for i in cutlass.range_constexpr(st * BARS):
                cute.arch.mbarrier_init(mbar + i, 1)
        cute.arch.mbarrier_init_fence()
        tmas = self.page_tmas(tma8, mK8t, sK8, tmaR, mRt, sR, tmaS, mSct, sSc_tma)
        seg_lo = mWork[part, 0]
        seg_hi = mWork[part, 1]
        ls, lp, c_seq, c_end = self.issue_first(
            tmas, mbar, mWork, mPT, sIdx, seg_lo, seg_hi, warp, lane
        )
        # ---- MMA partitions ----------------------------------------------------------------
        thr = rs_mma.get_slice(tidx)
        thr_ss = ss_mma.get_slice(tidx)
        tSrQl = thr.make_fragment_B(thr.partition_B(sQl))  # (MMA, 1, 32)
        tSrQr = thr_ss.make_fragment_B(thr_ss.partition_B(sQr))  # (MMA, 1, 4)
        tSrR = thr_ss.make_fragment_A(thr_ss.partition_A(sR))  # (MMA, 1, 4, st)
        acc_s_shape = thr.partition_shape_C((PAGE, n))
        tScS = _mn_view(thr.partition_C(cute.make_identity_tensor((PAGE, n))))
        tPsPt = thr.partition_C(sPt)
        thr_o = ot_mma.get_slice(tidx)
        tOrP = thr_o.make_fragment_B(thr_o.partition_B(sP))  # (MMA, 1, 4)
        acc_o = thr_o.make_fragment_C(thr_o.partition_shape_C((D_V, n)))  # (MMA, 8, 1)
        vt = self.v_type
        kt = self.k_type
        acc_o_mn = _mn_view(acc_o)

        # the two register A buffers: 32 words each, seen as 8 k-blocks of S^T (MMA, 1, 8) or
        # as one k-block of O^T's 8 m-tiles (MMA, 8, 1)
        bufs = []
        st_views = []
        ot_views = []
        for _ in cutlass.range_constexpr(2):
            w = cute.make_rmem_tensor(cute.make_layout(BUF_WORDS), cutlass.Uint32)
            h16 = cute.recast_tensor(w, kt)
            v16 = cute.recast_tensor(w, vt)
            bufs.append(w)
            st_views.append(cute.make_tensor(h16.iterator, cute.make_layout(((2, 2, 2), 1, 8))))
            ot_views.append(cute.make_tensor(v16.iterator, cute.make_layout(((2, 2, 2), 8, 1))))

        n_tok = cute.size(tScS, mode=[0])
        n_q = cute.size(tScS, mode=[1])
        col_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)
        col_sum = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)
        limit = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Int32)
        pg_max = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)
        # step 46: 1 / (query row factor) of the thread's columns, for S^T's latent part
        q_inv = cute.make_rmem_tensor(cute.make_layout(n_q), cutlass.Float32)

        # a thread's fragment coordinates: S^T rows (tokens) r0, r0 + 8 and quad lane qd; O^T's
        # 16 physical latent columns start at 16 (8 warp + lane // 4)
        qd = lane % 4
        r0 = warp * 16 + lane // 4
        vcol = 8 * warp + lane // 4  # O^T: the 16-byte vector of the thread's columns
        v_grp = (16 * vcol) // self.scale_block  # its scale group

        g_pg = cutlass.Int32(0)  # pages consumed so far: stage g_pg % st
        for seg in cutlass.range(seg_lo, seg_hi, unroll=1):
            seq, p0, p1, slot, pieces, seqlen = self.segment(mWork, mLens, seg)

            thr_r = rope_copy.get_slice(tidx)
            cute.copy(rope_copy, thr_r.partition_S(mQr[seq, None, None]), thr_r.partition_D(sQr))
            if cutlass.const_expr(self.k_f16):
                self.load_q_f16(lat_copy, mQl[seq, None, None], sQl, sQf, tidx)
            else:
                thr_l = lat_copy.get_slice(tidx)
                cute.copy(lat_copy, thr_l.partition_S(mQl[seq, None, None]), thr_l.partition_D(sQl))
            cute.arch.cp_async_commit_group()
            cute.arch.cp_async_wait_group(0)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier()
            if cutlass.const_expr(self.k_f16):
                for j in cutlass.range_constexpr(n_q):
                    q_inv[j] = sQf[tScS[0, j][1]]

            acc_o.fill(0.0)
            self.init_columns(tScS, col_max, col_sum, limit, seqlen)

            for it in cutlass.range(p1 - p0, unroll=1):
                pg = p0 + it
                stage = g_pg % st
                phase = (g_pg // st) % 2

                # S^T = K Q^T: box j's 8 k-blocks from buffer j % 2, refilled once the group
                # that read it (box j - 2) has retired; then the rope's 4 from SMEM
                acc_s = thr.make_fragment_C(acc_s_shape)
                accs = [acc_s]
                for _ in cutlass.range_constexpr(self.s_accs - 1):
                    accs.append(thr.make_fragment_C(acc_s_shape))
                # step 46: the rope part's own accumulator
                acc_r = thr_ss.make_fragment_C(acc_s_shape) if self.k_f16 else None
                for j in cutlass.range_constexpr(N_BOXES):
                    if cutlass.const_expr(j >= 2):
                        warpgroup.wait_group(1)
                    cute.arch.mbarrier_wait(mbar + stage * BARS + j, phase)
                    self.dequant_k(sK8, sSc, stage, j, r0, qd, bufs[j % 2])
                    warpgroup.fence()
                    for kk in cutlass.range_constexpr(KB_PER_BOX):
                        k = j * KB_PER_BOX + kk
                        rs_mma.set(warpgroup.Field.ACCUMULATE, k >= self.s_accs)
                        acc = accs[k % self.s_accs]
                        cute.gemm(
                            rs_mma, acc, st_views[j % 2][None, None, kk], tSrQl[None, None, k], acc
                        )
                    warpgroup.commit_group()
                cute.arch.mbarrier_wait(mbar + stage * BARS + N_BOXES, phase)
                ss_mma.set(warpgroup.Field.ACCUMULATE, True)
                for kk in cutlass.range_constexpr(D_ROPE // 16):
                    acc = accs[(N_BOXES * KB_PER_BOX + kk) % self.s_accs]
                    if cutlass.const_expr(self.k_f16):
                        acc = acc_r
                        ss_mma.set(warpgroup.Field.ACCUMULATE, kk > 0)
                    cute.gemm(ss_mma, acc, tSrR[None, None, kk, stage], tSrQr[None, None, kk], acc)
                warpgroup.commit_group()
                warpgroup.wait_group(0)
                for a in cutlass.range_constexpr(1, self.s_accs):
                    for e in cutlass.range_constexpr(cute.size(acc_s)):
                        acc_s[e] = acc_s[e] + accs[a][e]
                if cutlass.const_expr(self.k_f16):
                    # S^T = latent x (token scale / query row factor) + rope; a token past the
                    # end may give NaN here: the column softmax masks it
                    s_mn = _mn_view(acc_s)
                    r_mn = _mn_view(acc_r)
                    for i in cutlass.range_constexpr(n_tok):
                        sc = sSc[tScS[i, 0][0], 0, stage]
                        for j in cutlass.range_constexpr(n_q):
                            s_mn[i, j] = s_mn[i, j] * (sc * q_inv[j]) + r_mn[i, j]

                # the column softmax (step 42's)
                self.column_softmax(
                    acc_s, acc_o_mn, tScS, col_max, col_sum, limit, pg_max, sMax, pg,
                    scale_log2, warp, lane,
                )  # fmt: skip
                s_mn = _mn_view(acc_s)  # P, for step 45's and 46's scale

                tail = seqlen - pg * PAGE
                if cutlass.const_expr(self.v_f16):
                    # step 45: P times its token's scale (0 past the end, where the scale and
                    # V may be NaN), fp16; the tail's e4m3 V rows zeroed (every warp's S^T
                    # loads are done: the barrier above)
                    self.scale_p_by_token(s_mn, tScS, sSc, stage, tail)
                    if tail < PAGE:
                        self.zero_fp8_rows(sK8, stage, tail, tidx)
                rP = cute.make_rmem_tensor(acc_s.layout, vt)
                rP.store(acc_s.load().to(vt))
                for e in cutlass.range_constexpr(cute.size(rP)):
                    tPsPt[e] = rP[e]
                cute.arch.fence_proxy("async.shared", space="cta")
                cute.arch.barrier()  # P^T seen by the WGMMAs; every warp's maxima read

                # O^T += V^T P^T: k-block kb (16 tokens) of all 8 m-tiles from buffer kb % 2;
                # V of tokens past the sequence's end dequantised with scale 0 (step 45: zeroed)
                ot_mma.set(warpgroup.Field.ACCUMULATE, True)
                for kb in cutlass.range_constexpr(OT_KBLOCKS):
                    if cutlass.const_expr(kb >= 2):
                        warpgroup.wait_group(1)
                    if cutlass.const_expr(self.v_f16):
                        self.dequant_v_f16(sK8, stage, kb, qd, vcol, bufs[kb % 2])
                    else:
                        self.dequant_v(sK8, sSc, stage, kb, qd, vcol, v_grp, tail, bufs[kb % 2])
                    warpgroup.fence()
                    cute.gemm(
                        ot_mma, acc_o, ot_views[kb % 2][None, None, 0], tOrP[None, None, kb], acc_o
                    )
                    warpgroup.commit_group()
                if cutlass.const_expr(not self.early_release):
                    warpgroup.wait_group(0)
                # every thread's loads of the stage done (and, before step 48, its WGMMAs of
                # P^T; step 48 releases the stage before they retire: they read registers and
                # sP, not the stage)
                cute.arch.barrier()
                if cutlass.const_expr(self.early_index):
                    ls, lp, c_seq, c_end = self.issue_fetched(
                        tmas, mbar, mWork, mPT, sIdx, stage, ls, lp, c_seq, c_end, seg_hi, warp,
                        lane,
                    )  # fmt: skip
                else:
                    if warp == 0:  # noqa: SIM102 (run time)
                        if ls < seg_hi:
                            self.issue_page(tmas, mbar, mPT[mWork[ls, 0], lp], stage)
                            ls, lp = self.next_page(mWork, ls, lp, seg_hi)
                if cutlass.const_expr(self.early_release):
                    # the buffers and acc_o are read by the last groups until here
                    warpgroup.wait_group(0)
                g_pg = g_pg + 1

            self.epilogue_t(
                acc_o, col_max, col_sum, tScS, sSum, thr_o, mOt, mL, mOat, mLa, seq, slot,
                pieces, scale_log2, warp, lane, split,
            )  # fmt: skip

    @cute.jit
    def page_tmas(
        self,
        tma8: cute.CopyAtom,
        mK8t: cute.Tensor,
        sK8: cute.Tensor,
        tmaR: cute.CopyAtom,
        mRt: cute.Tensor,
        sR: cute.Tensor,
        tmaS: cute.CopyAtom,
        mSct: cute.Tensor,
        sSc_tma: cute.Tensor,
    ):
        """The TMA partitions of a page (:meth:`issue_page`'s ``tmas``): the e4m3 latent part
        as (TMA, box, stage) in SMEM and (TMA, page, box) in the cache, the rope part and the
        scales as (TMA, stage) and (TMA, page)."""
        g = self.groups
        t8s, t8g = cpasync.tma_partition(
            tma8,
            0,
            cute.make_layout(1),
            cute.group_modes(cute.flat_divide(sK8, (PAGE, BOX))[None, None, 0, None, None], 0, 2),
            cute.group_modes(cute.local_tile(mK8t, (PAGE, BOX), (None, None)), 0, 2),
        )  # fmt: skip  (TMA, box, stage), (TMA, page, box)
        tRs, tRg = cpasync.tma_partition(
            tmaR,
            0,
            cute.make_layout(1),
            cute.group_modes(sR, 0, 2),
            cute.group_modes(cute.local_tile(mRt, (PAGE, D_ROPE), (None, 0)), 0, 2),
        )  # fmt: skip  (TMA, stage), (TMA, page)
        tSs, tSg = cpasync.tma_partition(
            tmaS,
            0,
            cute.make_layout(1),
            cute.group_modes(sSc_tma, 0, 2),
            cute.group_modes(cute.local_tile(mSct, (1, PAGE * g), (None, 0)), 0, 2),
        )  # fmt: skip  (TMA, stage), (TMA, page)
        return (tma8, t8s, t8g, tmaR, tRs, tRg, tmaS, tSs, tSg)

    @cute.jit
    def issue_first(
        self,
        tmas,
        mbar: cute.Pointer,
        mWork: cute.Tensor,
        mPT: cute.Tensor,
        sIdx: cute.Tensor,
        seg_lo: cutlass.Int32,
        seg_hi: cutlass.Int32,
        warp: cutlass.Int32,
        lane: cutlass.Int32,
    ):
        """The part's first pages, one per stage (warp 0), and with ``early_index`` the next
        page's index fetched into ``sIdx``: returns the load cursor ``(ls, lp)`` and its
        sequence and segment end ``(c_seq, c_end)`` (warp 0's; 0 without ``early_index``)."""
        st = self.stages
        tma8, tmaR, tmaS = tmas[0], tmas[3], tmas[6]
        ls, lp = self.skip_empty(mWork, seg_lo, seg_hi)
        if warp == 0:
            cute.arch.sync_warp()
            cpasync.prefetch_descriptor(tma8)
            cpasync.prefetch_descriptor(tmaR)
            cpasync.prefetch_descriptor(tmaS)
            for s0 in cutlass.range_constexpr(st):
                if ls < seg_hi:
                    self.issue_page(tmas, mbar, mPT[mWork[ls, 0], lp], s0)
                    ls, lp = self.next_page(mWork, ls, lp, seg_hi)
        # step 47: the load cursor's sequence and segment end in registers (warp 0), its cache
        # page landing in sIdx by cp.async a whole page before its TMA is issued
        c_seq = cutlass.Int32(0)
        c_end = cutlass.Int32(0)
        if cutlass.const_expr(self.early_index):  # noqa: SIM102 (trace time, then run time)
            if warp == 0 and ls < seg_hi:
                c_seq = mWork[ls, 0]
                c_end = mWork[ls, 2]
                self.fetch_index(mPT, c_seq, lp, sIdx, lane)
        return ls, lp, c_seq, c_end

    @cute.jit
    def fetch_index(
        self,
        mPT: cute.Tensor,
        seq: cutlass.Int32,
        pg: cutlass.Int32,
        sIdx: cute.Tensor,
        lane: cutlass.Int32,
    ):
        """Step 47 (warp 0): lane 0 copies page ``pg`` of sequence ``seq``'s page table entry
        into ``sIdx`` by cp.async (4 bytes) and commits it, so that no register waits for it
        before the TMA that needs it, a page later (a global load's result goes into a uniform
        register for the TMA at once, which makes the warp wait for it there)."""
        if lane == 0:
            atom = cute.make_copy_atom(
                cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.ALWAYS), cutlass.Int32,
                num_bits_per_copy=32,
            )  # fmt: skip
            src = cute.local_tile(mPT[seq, None], (1,), (pg,))
            cute.copy(atom, src, sIdx)
        cute.arch.cp_async_commit_group()

    @cute.jit
    def issue_fetched(
        self,
        tmas,
        mbar: cute.Pointer,
        mWork: cute.Tensor,
        mPT: cute.Tensor,
        sIdx: cute.Tensor,
        stage: cutlass.Int32,
        ls: cutlass.Int32,
        lp: cutlass.Int32,
        c_seq: cutlass.Int32,
        c_end: cutlass.Int32,
        seg_hi: cutlass.Int32,
        warp: cutlass.Int32,
        lane: cutlass.Int32,
    ):
        """Steps 47-54, once a stage is free (a no-op but for warp 0, and once the load cursor
        ``(ls, lp)`` has reached ``seg_hi``): the TMA of the cursor's page into ``stage``, its
        index read from ``sIdx`` where :meth:`fetch_index` put it a page ago (long landed),
        then the cursor advanced (its sequence ``c_seq`` and segment end ``c_end`` kept in
        registers) and the next page's index fetched behind the TMA, waited for at the next
        page's end. Returns the new ``(ls, lp, c_seq, c_end)``."""
        if warp == 0:  # noqa: SIM102 (run time)
            if ls < seg_hi:
                cute.arch.cp_async_wait_group(0)
                cute.arch.sync_warp()
                page = sIdx[0]
                cute.arch.sync_warp()  # every lane's read before the next fetch
                self.issue_page(tmas, mbar, page, stage)
                lp = lp + 1
                if lp >= c_end:
                    ls, lp = self.skip_empty(mWork, ls + 1, seg_hi)
                    if ls < seg_hi:
                        c_seq = mWork[ls, 0]
                        c_end = mWork[ls, 2]
                if ls < seg_hi:  # (none past the part's last page)
                    self.fetch_index(mPT, c_seq, lp, sIdx, lane)
        return ls, lp, c_seq, c_end

    @cute.jit
    def issue_page(self, tmas, mbar: cute.Pointer, page: cutlass.Int32, stage: cutlass.Int32):
        """Executed by warp 0: cache page ``page`` into ``stage``: the e4m3 latent part as 4
        boxes of 64 tokens x 128 columns (box 0's mbarrier also counts the page's scales, which
        the first dequantisation needs), the 16-bit rope part on the fifth mbarrier."""
        tma8, t8s, t8g, tmaR, tRs, tRg, tmaS, tSs, tSg = tmas
        pol = cutlass.Int64(self.kv_cache_policy)
        for c in cutlass.range_constexpr(N_BOXES):
            bar = mbar + stage * BARS + c
            extra = PAGE * self.groups * 4 if c == 0 else 0
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(bar, BOX_BYTES + extra)
            cute.copy(
                tma8, t8g[None, page, c], t8s[None, c, stage], tma_bar_ptr=bar, cache_policy=pol
            )
            if cutlass.const_expr(c == 0):
                cute.copy(tmaS, tSg[None, page], tSs[None, stage], tma_bar_ptr=bar)
        bar = mbar + stage * BARS + N_BOXES
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bar, ROPE_BYTES)
        cute.copy(tmaR, tRg[None, page], tRs[None, stage], tma_bar_ptr=bar, cache_policy=pol)

    @cute.jit
    def dequant_k(
        self,
        sK8: cute.Tensor,
        sSc: cute.Tensor,
        stage: cutlass.Int32,
        j: cutlass.Constexpr,
        r0: cutlass.Int32,
        qd: cutlass.Int32,
        buf: cute.Tensor,
        kb_lo: cutlass.Constexpr = 0,
        kb_n: cutlass.Constexpr = BOX // 32,
        k_addr=None,
    ):
        """S^T's A fragments of latent box ``j`` (8 k-blocks) into ``buf`` (32 words): for each
        32-column block and row r0, r0 + 8, the quad lane's 8 bytes (physical columns 8 qd ..
        8 qd + 7 of the block: one LDS.64) become the 4 pairs of the two k-blocks (word
        h + 2 a + 4 kk for row half h, column half a, k-block kk), times the row's scale
        (step 46: fp16 pairs by one F2FP each, unscaled: the scale multiplies S^T). Step 49
        takes the box in halves: the ``kb_n`` 32-column blocks from ``kb_lo`` on, into
        ``4 kb_n`` words; step 50 reads them at the byte offsets of :meth:`k_offsets`
        (``k_addr``: the stage's raw pointer, the thread's base and swizzle phase)."""
        grp = (BOX * j) // self.scale_block
        for hh in cutlass.range_constexpr(2):
            row = r0 + 8 * hh
            sc2 = cutlass.Uint32(0)
            if cutlass.const_expr(not self.k_f16):
                sc = sSc[row, grp, stage]
                sc2 = scale_pair(sc, sc, self.half16)
            for kb in cutlass.range_constexpr(kb_n):
                if cutlass.const_expr(k_addr is None):
                    src = cute.local_tile(
                        sK8[None, None, stage], (1, 8),
                        (row, (BOX * j) // 8 + 4 * (kb_lo + kb) + qd),
                    )  # fmt: skip
                else:
                    src = self.k_bytes(k_addr, j, hh, kb_lo + kb)
                raw = cute.make_rmem_tensor(cute.make_layout((1, 8)), cutlass.Float8E4M3FN)
                cute.autovec_copy(src, raw)
                wd = cute.recast_tensor(raw, cutlass.Uint32)  # (1, 2)
                for b5 in cutlass.range_constexpr(2):
                    x = wd[0, b5]
                    for a in cutlass.range_constexpr(2):
                        kk = 2 * kb + b5
                        if cutlass.const_expr(self.k_f16):
                            buf[hh + 2 * a + 4 * kk] = e4m3_half_to_f16x2(x, a)
                        else:
                            buf[hh + 2 * a + 4 * kk] = e4m3_place(
                                x, x, SEL_SAME[a], sc2, self.half16
                            )

    def k_offsets(self, k_ptr: cute.Pointer, stage: cutlass.Int32, r0, qd):
        """Step 50: what :meth:`k_bytes` needs to address a thread's K bytes in ``stage`` without
        the swizzled view: the stage's pointer (raw, 1024-byte aligned), the thread's byte
        offset in a box (row r0, quad lane qd's 8 bytes of its 16-byte chunk; the chunk's low
        bit swizzled) and its swizzle phase for the chunk's upper bits. The 128-byte swizzle
        (byte bits 4-6 ^= bits 7-9: the row mod 8) of a box of 64 rows x 128 bytes puts column
        block kb's chunk 2 kb + qd // 2 of row r at 16 ((2 kb + qd // 2) ^ (r % 8)), and
        since 2 kb is even that is 16 ((2 kb) ^ (r % 8 & 6)) + 16 ((qd // 2) ^ (r % 8 & 1))."""
        ph = r0 % 8
        base = r0 * BOX + 16 * ((qd // 2) ^ (ph % 2)) + 8 * (qd % 2)
        return (k_ptr, stage * (PAGE * D_V) + base, 16 * (ph - ph % 2))

    @cute.jit
    def k_bytes(self, k_addr, j: cutlass.Constexpr, hh: cutlass.Constexpr, kb: cutlass.Constexpr):
        """Step 50: the 8 K bytes of box ``j``, row r0 + 8 ``hh``, column block ``kb`` of the
        thread (:meth:`k_offsets`) as a (1, 8) tensor: one LDS.64 at a register plus an
        immediate (the box and the row half), the block's swizzle one XOR."""
        off = k_byte_offset(k_addr[1:], j, hh, kb)
        return cute.make_tensor(k_addr[0] + cute.assume(off, divby=8), cute.make_layout((1, 8)))

    @cute.jit
    def dequant_v(
        self,
        sK8: cute.Tensor,
        sSc: cute.Tensor,
        stage: cutlass.Int32,
        kb: cutlass.Constexpr,
        qd: cutlass.Int32,
        vcol: cutlass.Int32,
        v_grp: cutlass.Int32,
        tail: cutlass.Int32,
        buf: cute.Tensor,
    ):
        """O^T's A fragments of token block ``kb`` (tokens 16 kb .. 16 kb + 15) for the 8
        m-tiles into ``buf``: tokens t = 16 kb + 2 qd + 8 a and t + 1 (a = 0, 1), 16 bytes
        each (the thread's physical columns 16 vcol ..: one LDS.128); byte 2 i + hh of both
        tokens is the pair of m-tile i, row half hh (word hh + 2 a + 4 i), times the tokens'
        scales (0 past the sequence's end)."""
        for a in cutlass.range_constexpr(2):
            t = 16 * kb + 2 * qd + 8 * a
            xs = self.load16(sK8, stage, t, vcol)
            ys = self.load16(sK8, stage, t + 1, vcol)
            s_lo = sSc[t, v_grp, stage]
            s_hi = sSc[t + 1, v_grp, stage]
            if t >= tail:
                s_lo = cutlass.Float32(0.0)
            if t + 1 >= tail:
                s_hi = cutlass.Float32(0.0)
            sc2 = scale_pair(s_lo, s_hi, self.half16)
            for wi in cutlass.range_constexpr(4):
                for bb in cutlass.range_constexpr(4):
                    byte = 4 * wi + bb
                    i = byte // 2
                    hh = byte % 2
                    buf[hh + 2 * a + 4 * i] = e4m3_place(
                        xs[wi], ys[wi], SEL_XY[bb], sc2, self.half16
                    )

    @cute.jit
    def dequant_v_f16(
        self,
        sK8: cute.Tensor,
        stage: cutlass.Int32,
        kb: cutlass.Constexpr,
        qd: cutlass.Int32,
        vcol: cutlass.Int32,
        buf: cute.Tensor,
        words: cutlass.Constexpr = 4,
        v_addr=None,
    ):
        """Steps 45/46: :meth:`dequant_v`'s fragments as fp16 pairs, one PRMT per two pairs
        (:data:`SEL_PAIRS`) and one F2FP per pair, unscaled (the scale is in P; the tail's rows
        are zeroed in SMEM). Step 49 (``words`` 2: 4 m-tiles per warpgroup) loads 8 bytes per
        token (one LDS.64 at physical columns 8 vcol ..) instead of 16; step 55 addresses
        them from :meth:`v_offsets` (``v_addr``)."""
        load = self.load16 if words == 4 else self.load8
        for a in cutlass.range_constexpr(2):
            t = 16 * kb + 2 * qd + 8 * a
            if cutlass.const_expr(v_addr is None):
                xs = load(sK8, stage, t, vcol)
                ys = load(sK8, stage, t + 1, vcol)
            else:
                xs = self.words8(self.v_bytes(v_addr, 16 * kb + 8 * a, 0))
                ys = self.words8(self.v_bytes(v_addr, 16 * kb + 8 * a, 1))
            for wi in cutlass.range_constexpr(words):
                for bp in cutlass.range_constexpr(2):
                    v = prmt(xs[wi], ys[wi], SEL_PAIRS[bp])
                    for e in cutlass.range_constexpr(2):
                        byte = 4 * wi + 2 * bp + e
                        buf[byte % 2 + 2 * a + 4 * (byte // 2)] = e4m3_half_to_f16x2(v, e)

    @cute.jit
    def load_q_f16(
        self,
        lat_copy: cute.TiledCopy,
        gQ: cute.Tensor,
        sQl: cute.Tensor,
        sQf: cute.Tensor,
        tidx: cutlass.Int32,
        threads: cutlass.Constexpr = THREADS_N,
    ):
        """Step 46: Q's latent part (n, 512, in :data:`K_PERM` order) into ``sQl`` as fp16,
        each query row times the power of two that brings its largest magnitude into
        [2^14, 2^15) (:data:`Q_FACTOR_BIAS`; the factor clamped to 2^-100 .. 2^100, so for row
        maxima from 2^-86 to 2^115), so the values near the max convert exactly (fp16 holds
        every bf16 value of that range) and none overflows; 1 / factor into ``sQf``.
        ``lat_copy``'s partition gives thread t row t // 8 and 8 threads (consecutive lanes) per
        row, so the row's max takes 3 shuffles. With more rows than ``threads`` / 8 (step 49:
        64 rows, 256 threads) a thread holds rows t // 8 + m threads / 8, each with its own
        factor."""
        thr_l = lat_copy.get_slice(tidx)
        tg = thr_l.partition_S(gQ)
        ts = thr_l.partition_D(sQl)
        rq = cute.make_rmem_tensor_like(tg)
        cute.autovec_copy(tg, rq)
        rf = cute.make_rmem_tensor_like(tg, cutlass.Float32)
        rf.store(rq.load().to(cutlass.Float32))
        passes = cute.size(rf, mode=[1])
        rh = None
        for m in cutlass.range_constexpr(passes):
            rf_m = rf if passes == 1 else rf[None, m, None]
            bits = self.row_pow2_factor(rf_m, Q_FACTOR_BIAS)
            if cutlass.const_expr(m == 0):
                rh = cute.make_rmem_tensor_like(tg, cutlass.Float16)
            if cutlass.const_expr(passes == 1):
                rh.store((rf.load() * bits[1]).to(cutlass.Float16))
                cute.autovec_copy(rh, ts)
            else:
                rh_m = rh[None, m, None]
                for e in cutlass.range_constexpr(cute.size(rf_m)):
                    rh_m[e] = (rf_m[e] * bits[1]).to(cutlass.Float16)
            if tidx % 8 == 0:
                sQf[tidx // 8 + m * (threads // 8)] = bits[2]
        if cutlass.const_expr(passes > 1):
            cute.autovec_copy(rh, ts)

    @cute.jit
    def row_pow2_factor(self, rf_m: cute.Tensor, bias: cutlass.Constexpr) -> cute.Tensor:
        """A query row's power-of-two factor (steps 46-54): the largest magnitude of the
        thread's values ``rf_m`` and of the 7 other lanes of its row (3 shuffles), whose biased
        exponent E gives the factor 2^(bias - E - 127), clamped to :data:`Q_FACTOR_CLAMP`
        (the max lands in [2^14, 2^15) for :data:`Q_FACTOR_BIAS`, [2^7, 2^8) for step 53's).
        Returns 3 fp32 values: the max, the factor and its exact inverse."""
        amax = cutlass.Float32(0.0)
        for e in cutlass.range_constexpr(cute.size(rf_m)):
            amax = cute.arch.fmax(amax, cute.arch.fmax(rf_m[e], -rf_m[e]))
        for off in cutlass.range_constexpr(3):
            amax = cute.arch.fmax(amax, cute.arch.shuffle_sync_bfly(amax, offset=1 << off))
        # amax < 2^(E - 126) for its biased exponent E: factor biased bias - E
        bits = cute.make_rmem_tensor(cute.make_layout(3), cutlass.Float32)
        bits[0] = amax
        ubits = cute.recast_tensor(bits, cutlass.Int32)
        lo, hi = Q_FACTOR_CLAMP
        fe = cutlass.min(cutlass.max(bias - (ubits[0] >> 23), lo), hi)
        ubits[1] = fe << 23
        ubits[2] = (254 - fe) << 23
        return bits

    @cute.jit
    def scale_p_by_token(
        self,
        s_mn: cute.Tensor,
        tScS: cute.Tensor,
        sSc: cute.Tensor,
        stage: cutlass.Int32,
        tail: cutlass.Int32,
    ):
        """Steps 45-57: P^T (``s_mn``, (tokens, query rows) of the thread, fp32, in place)
        times its token's scale from ``sSc`` (per_token: group 0), 0 for the tokens ``tail``
        and later of the page (past the sequence's end, where the scale and V may be NaN)."""
        for i in cutlass.range_constexpr(cute.size(s_mn, mode=[0])):
            tok = tScS[i, 0][0]
            sc = sSc[tok, 0, stage]
            if tok >= tail:
                sc = cutlass.Float32(0.0)
            for j in cutlass.range_constexpr(cute.size(s_mn, mode=[1])):
                s_mn[i, j] = s_mn[i, j] * sc

    @cute.jit
    def zero_fp8_rows(
        self,
        sK8: cute.Tensor,
        stage: cutlass.Int32,
        tail: cutlass.Int32,
        tidx: cutlass.Int32,
        vec0: cutlass.Int32 = 0,
        vecs: cutlass.Constexpr = 32,
    ):
        """Step 45: zero the e4m3 bytes of tokens ``tail`` .. 63 of ``stage`` (NaN in the
        check past a sequence's end): thread t takes 16-byte vector t % 32 of rows tail +
        t // 32, + 4, ...; then fence.proxy.async (the stage's next TMA writes after it).
        Step 49 (a warpgroup, its own 256 columns): vectors ``vec0`` .. ``vec0 + vecs - 1``
        of each row, thread t taking vector t % vecs of rows tail + t // vecs, ..."""
        zero = cute.make_rmem_tensor(cute.make_layout((1, 4)), cutlass.Uint32)
        zero.fill(0)
        zb = cute.recast_tensor(zero, cutlass.Float8E4M3FN)
        step = THREADS_N // vecs
        for r in cutlass.range(cutlass.max(tail, 0) + tidx // vecs, PAGE, step, unroll=1):
            cute.autovec_copy(
                zb, cute.local_tile(sK8[None, None, stage], (1, 16), (r, vec0 + tidx % vecs))
            )
        cute.arch.fence_proxy("async.shared", space="cta")

    @cute.jit
    def load8(self, sK8: cute.Tensor, stage: cutlass.Int32, t: cutlass.Int32, vec: cutlass.Int32):
        """Token ``t``'s 8 bytes at physical latent columns 8 vec .. 8 vec + 7 of ``stage``
        (one LDS.64), as 2 words (step 49)."""
        return self.words8(cute.local_tile(sK8[None, None, stage], (1, 8), (t, vec)))

    @cute.jit
    def words8(self, src: cute.Tensor):
        """The 8 e4m3 bytes of ``src`` (a (1, 8) SMEM tensor, 8-byte aligned: one LDS.64) as 2
        words."""
        raw = cute.make_rmem_tensor(cute.make_layout((1, 8)), cutlass.Float8E4M3FN)
        cute.autovec_copy(src, raw)
        w = cute.recast_tensor(raw, cutlass.Uint32)
        return [w[0, i] for i in range(2)]

    def v_offsets(self, k_ptr: cute.Pointer, stage: cutlass.Int32, qd, vec):
        """Step 55: what :meth:`v_bytes` needs to address the 8 bytes at physical latent
        columns 8 vec .. 8 vec + 7 of the thread's O^T tokens in ``stage`` without the swizzled
        view (as :meth:`k_offsets` does for K): the stage's raw pointer and one offset for each
        of the tokens 2 qd and 2 qd + 1. Every token the thread reads is one of these two plus
        a multiple of 8 (16 kb + 8 a), which leaves the 128-byte swizzle's phase (the row mod 8)
        alone, so the rest is the LDS's immediate."""
        p = 8 * vec
        c = p % BOX
        offs = []
        for e in range(2):
            row = 2 * qd + e
            chunk = (c // 16) ^ (row % 8)
            offs.append(
                stage * (PAGE * D_V) + (p // BOX) * (PAGE * BOX) + row * BOX + 16 * chunk + c % 16
            )
        return (k_ptr, offs)

    @cute.jit
    def v_bytes(self, v_addr, t8: cutlass.Constexpr, e: cutlass.Constexpr):
        """Step 55: the 8 bytes of token 2 qd + ``e`` + ``t8`` (``t8`` a multiple of 8) at the
        thread's columns (:meth:`v_offsets`) as a (1, 8) SMEM tensor: a register plus an
        immediate."""
        off = v_byte_offset(v_addr[1], t8, e)
        return cute.make_tensor(v_addr[0] + cute.assume(off, divby=8), cute.make_layout((1, 8)))

    @cute.jit
    def load16(self, sK8: cute.Tensor, stage: cutlass.Int32, t: cutlass.Int32, vec: cutlass.Int32):
        """Token ``t``'s 16 bytes at physical latent columns 16 vec .. 16 vec + 15 of ``stage``
        (one LDS.128: 16-byte units stay whole under the 128-byte swizzle), as 4 words."""
        src = cute.local_tile(sK8[None, None, stage], (1, 16), (t, vec))
        raw = cute.make_rmem_tensor(cute.make_layout((1, 16)), cutlass.Float8E4M3FN)
        cute.autovec_copy(src, raw)
        w = cute.recast_tensor(raw, cutlass.Uint32)
        return [w[0, i] for i in range(4)]
