"""This project's own MLA decode for Hopper (sm_90a), written in the CuTe DSL (issue 10).

The kernel and its design: :mod:`cute_mla.mla_decode_sm90.kernel` and the devlog
``knowledge/kernels/mla-decode-sm90.md``. It takes the ``mla_decode`` workload's tensors as
they are stored (no other views): q (b, s, h, 576), kv_cache (num_pages, 64, 576),
page_table (b, pages) int32, seqlens (b,) int32, o (b, s, h, 512), lse (b, s, h) fp32.
Each is passed with a dynamic layout (``leading_dim`` = the last mode) so that one compile
serves every batch, length, page-table width and cache size; the kernel rebuilds static
row-major views from the base pointers (s*h and the 576/512 widths are compile-time).

v0: cp.async loads, no split-KV (one CTA per 64 packed query rows and sequence), both
warpgroups compute the full S. Step 1 (this one): split-KV. Each sequence's pages are cut into
``num_splits`` equal parts, one CTA each; the parts' fp32 O and log2 LSE go to a workspace
(two more tensors: ``o_acc`` (cap, b, s, h, 512) and ``lse_acc`` (cap, b, s, h)), and a
combine kernel launched right after (programmatic dependent launch) merges them. The number of
splits is chosen per call on the host from B, the longest length, h and the SM count
(:func:`choose_splits`); it is a runtime argument, so one compile serves every choice > 1
(a second compile, without the combine, serves 1). ``--config splits=1`` runs v0's code path.

Step 3, behind ``--config loads=tma`` (the default, ``cpasync``, is steps 0-2's validated
path, unchanged): pages by TMA, one box per 64-column chunk with its own mbarrier, issued by
warp 0; the NaN tail's V rows zeroed in SMEM (see the kernel's docstring). Compile-verified
only; not yet measured on a GPU.

FP8 latent cache (``--kv_dtype float8_e4m3fn``, ``--kv_scale per_token|per_block``; issue 11):
the kernel takes the workload's three cache tensors (kv_cache e4m3 (pages, 64, 512), kv_scales
fp32 (pages, 64, G), kv_rope (pages, 64, 64) in the dtype) and dequantises on chip into the same
16-bit SMEM stages. The seesaw schedule (the ``auto`` default for it: steps 14-24, 26, 27 and 30,
22 by default, measured 1.1x faster than lockstep at every shape of the FP8 table) does so
through a third, producer warpgroup (seesaw.py); the lockstep schedule (``--config
schedule=lockstep``) through every math thread's registers on the cp.async path (kernel.py's
docstring). The kv
format (kv_dtype, kv_scale, kv_block) is part of the problem's compile key (not a runtime
field): one compile per (s, h, causal, dtype, kv format, split or not). Both are checked and
timed on the H200 (knowledge/kernels/mla-decode-sm90.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import ClassVar, Literal

from kernelplan import (
    STREAM,
    Config,
    Const,
    CuteKernel,
    KernelPlan,
    ShapeError,
    Target,
    TensorSpec,
)
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem

#: what this kernel takes (supports() refuses the rest with one line)
HEADS = (16, 32, 64, 128)
DTYPES = ("bfloat16", "float16")
#: the cache view's page offsets are 32-bit: num_pages * 64 * 576 must stay below 2**31
MAX_PAGES = (2**31 - 1) // (64 * 576)
#: split-KV: at most this many splits per sequence, and never more CTAs than two waves of the
#: largest sm_90 part (132 SMs) unless one split per sequence already exceeds it
MAX_SPLITS = 64
CTA_BOUND = 2 * 132
#: FP8 latent cache: the kernel dequantises 16-value vectors, each under one scale
FP8_MIN_BLOCK = 16
#: the cost model's fixed cost of one CTA, in pages (Q load, prologue, fp32 epilogue)
CTA_OVERHEAD_PAGES = 2
#: and of the combine step when there is one, in pages of the slowest CTA
COMBINE_PAGES = 1
#: the balanced split rule (sequences of different lengths): at most this many CTAs in the
#: grid, empty ones included (four waves of the largest sm_90 part), which bounds the workspace
GRID_BOUND = 4 * 132
#: the work list (seesaw step 11): at most this many parts, one CTA each per m-tile (one wave
#: of the largest sm_90 part); the rows of the ``work`` tensor are laid out from it
PARTS_CAP = 2 * 132
#: the seesaw schedule's builds for the FP8 latent cache (seesaw.FP8_STEPS), and the one
#: ``schedule=seesaw`` builds for it unless ``step`` names another
FP8_STEPS = (14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 27, 30)


def steps_text(steps: tuple[int, ...]) -> str:
    """``(4, 5, 6, 7, 25)`` as ``4 to 7 or 25``: the runs of consecutive steps, for messages."""
    runs: list[list[int]] = []
    for n in sorted(steps):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [p for r in runs for p in ([f"{r[0]} to {r[-1]}"] if len(r) > 2 else map(str, r))]
    return ", ".join(parts[:-1]) + (" or " if len(parts) > 1 else "") + parts[-1]


def _grid_fits_at_once(name: str, step: int, ctas: int) -> None:
    """The CTAs of the :data:`MERGE_IN_KERNEL_STEPS` and :data:`OWNER_MERGE_STEPS` wait
    inside the kernel for pieces that
    other CTAs store, so the grid (``ctas``, one CTA per SM: 223 KB of SMEM each) must be
    resident all at once. Where torch sees a GPU, refuse a grid larger than its SM count (an
    ``--sm_count`` above the GPU's would hang); without a GPU the kernel only compiles.
    Raises ShapeError."""
    from kernelplan.device import current_device

    dev = current_device()
    if dev is None:  # no GPU here: compile only
        return
    sms = dev.sm_count
    if ctas > sms:
        raise ShapeError(
            f"{name}: step {step} merges inside the kernel, so its {ctas} CTAs must all be "
            f"resident at once, and this GPU has {sms} SMs (one CTA each): drop --sm_count, or "
            "take another step"
        )


def _first_pieces_last(name: str, step: int, work: WorkList) -> None:
    """The premise of the :data:`OWNER_MERGE_STEPS`: the CTA of a cut sequence's first piece
    waits, after that piece, for the sequence's other pieces, so that piece must be the last
    segment of its part, and no other piece may come after a wait in its own part (each is a
    first or only segment). The planners fill parts in order (:func:`work_list`,
    :func:`costed_work_list`), which gives both; a plan that does not is refused here rather
    than left to hang. Raises ShapeError."""
    for lo, hi in work.part_segs:
        for k in range(lo, hi):
            seq, _, _, slot = work.segments[k]
            if work.pieces[seq] < 2:
                continue
            if (slot == 0 and k != hi - 1) or (slot > 0 and k != lo):
                raise ShapeError(
                    f"{name}: step {step} needs each cut sequence's first piece last in its part "
                    f"and its other pieces first in theirs (sequence {seq}, piece {slot} is "
                    f"segment {k - lo + 1} of {hi - lo}): take another step"
                )


def crossover_built(step: int, kv_fp8: bool, m_tiles: int) -> bool:
    """Whether seesaw ``step`` builds FlashMLA's crossover (step 26, seesaw.py): the FP8 cache
    and m-tiles (64 query rows each) that pair up into clusters of 2; elsewhere step 26 is
    step 22's code. One rule for the kernel's build and the plan's label."""
    return step == 26 and kv_fp8 and m_tiles % 2 == 0


#: step 61 and the 16-bit seesaw builds on it, each as (the step it builds on, the changes it
#: adds): a step carries its own changes and every base's back to 61 (:func:`step_changes`),
#: and each list and flag of these builds (:data:`BF16_STEPS`, :data:`PAIR_MERGE_STEPS`,
#: :data:`MULTICAST_STEPS`, ``seesaw.STEPS_ON_61`` and the flags of
#: :class:`.seesaw.MlaDecodeSm90Seesaw`) is read from here, so a new step is one entry. The
#: changes, as the kernel's flags name them: pair_merge (a sequence cut in two adjacent parts
#: merged through distributed shared memory, the parts' CTAs a cluster of 2), multicast (the
#: CTAs of two m-tiles a cluster of 2, each page chunk loaded once for both by a multicast
#: TMA), early_v0l (warpgroup 0 reloads stage 0's chunks 0-3 as soon as its PV0L retires),
#: qk_behind_pv (warpgroup 0's next S0 queued behind its PV1L, step 31's order), wg_constant
#: (each math warpgroup's code traced with its index a compile-time constant), tail_mask (S
#: masked only on a page that reaches past the tile's lowest key limit), o_via_smem (a whole
#: sequence's O stored through SMEM in 16-byte rows), no_rewait_v0r (warpgroup 1 does not wait
#: again on V0R's chunks before its PV0R), v1l_rewait_none / _one / _two (warpgroup 0 re-waits
#: on none, the first or the first two of V1L's four chunks before its PV1L, not all four),
#: p1_before_pv (warpgroup 1 stores P1 before it issues PV1R), q_first (Q's cp.async issued
#: before the first pages' TMAs), pdl_split (launched as a programmatic dependent of the kernel
#: before it, waiting at griddepcontrol.wait before its first global access), pdl_trigger (the
#: next grid's launch triggered right after that griddepcontrol.wait), q_rope_regs (Q's rope
#: columns in registers, the A operand of S's rope k-blocks), lazy_rescale (the running row
#: max moves only when a page's max passes it by more than 8 in log2 units, and warpgroup 0
#: rescales O_L by sc1 only in a warp where a row's max moved) and lazy_rescale_first (each
#: warpgroup's first O rescale under that vote too). What each
#: measured: the devlog's section named in its comment. No change may repeat one of its base's,
#: and a line carries at most one v1l_rewait change. 69 (67 without both re-waits) spilled on a
#: CPU compile and was not kept
STEP_LINE: dict[int, tuple[int | None, tuple[str, ...]]] = {
    61: (None, ()),  # 39 with a lean combine: 2 pieces a round, 16-byte loads ("Session 24")
    62: (61, ("pair_merge",)),  # "Session 24"; the pair default in sessions 24-29
    63: (61, ("multicast",)),  # slower ("Session 25")
    64: (61, ("early_v0l",)),  # slower ("Session 25")
    65: (61, ("qk_behind_pv",)),  # slower ("Session 27")
    66: (61, ("wg_constant",)),  # 23% fewer instructions, no faster ("Session 29")
    67: (61, ("tail_mask",)),  # the default in session 29
    68: (62, ("tail_mask",)),  # "Session 30"
    70: (67, ("o_via_smem",)),  # "Session 30"
    71: (68, ("o_via_smem",)),  # the pair default in session 30
    72: (70, ("no_rewait_v0r",)),  # the default in sessions 30-32
    73: (70, ("v1l_rewait_none",)),  # slower than 72 ("Session 30")
    74: (70, ("p1_before_pv",)),  # no gain ("Session 30")
    75: (71, ("no_rewait_v0r",)),  # the pair default in sessions 31-32
    76: (72, ("v1l_rewait_two",)),  # no gain ("Session 31")
    77: (75, ("v1l_rewait_one",)),  # no gain ("Session 31")
    78: (72, ("q_first",)),  # the default in session 33
    79: (75, ("q_first",)),  # the pair default in session 33
    80: (72, ("pdl_split",)),  # no gain ("Session 33")
    81: (72, ("pdl_split", "pdl_trigger")),  # 1-3% slower at the uncut h=128 rows ("Session 33")
    82: (75, ("pdl_split", "pdl_trigger")),  # level with 75 at the pair rows ("Session 33")
    83: (81, ("q_first",)),  # "Session 33"
    84: (82, ("q_first",)),  # level with 79 ("Session 33")
    85: (72, ("q_rope_regs",)),  # no gain ("Session 33")
    86: (78, ("lazy_rescale",)),  # the default since session 34
    87: (79, ("lazy_rescale",)),  # the pair default since session 34
    88: (86, ("lazy_rescale_first",)),  # ptxas serializes its WGMMAs; not timed ("Session 34")
}


def step_changes(step: int) -> frozenset[str]:
    """The changes seesaw ``step`` carries on step 61's line (:data:`STEP_LINE`): its own and
    every base's back to 61; empty for 61 and for every step not on that line (4-60, the FP8
    steps)."""
    changes: set[str] = set()
    while step in STEP_LINE:
        step, own = STEP_LINE[step]
        changes.update(own)
    return frozenset(changes)


#: the seesaw builds for a 16-bit cache (steps 4-13, then 25: 11 with an L2 prefetch stream;
#: 28: 11 with the next segment's Q loaded early; 29: 28 with step 12's early pages; 31: 11
#: with WG0's next S issued behind its last PV; 32: 31 with that PV queued after WG1's PV0R;
#: 33: 11 with WG1's S = Q K^T over its page's chunks in the order 4-7, 0-3, 8; 34: 33 with
#: the partial O of the cut sequences stored in the 16-bit dtype; 35: 33 merging the cut
#: sequences' rows in the same kernel, every warp of the grid, no combine kernel; 36: 33 with
#: the combine's split loads as 16-byte vectors; 37: 35 merging 4 rows per warp together;
#: 38: 36 with the combine's first partial-O loads issued before its LSE reads; 39: 33 with
#: WG1 reloading stage 1's chunks 4-7 as soon as its PV1R retires; 58 (the next free number):
#: 39 with 2-warp combine CTAs, which fit beside a split CTA; 59: 39 with no combine kernel,
#: the first piece's CTA merging a cut sequence's other pieces into its registers; 60: 59
#: with that merge in one pass, each piece's LSE and O loaded together; 61 and on:
#: :data:`STEP_LINE`)
BF16_STEPS = (
    4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 25, 28, 29, 31, 32, 33, 34, 35, 36, 37, 38, 39, 58, 59,
    60, *STEP_LINE,
)  # fmt: skip
FP8_STEP = 22
#: ``step=0``, the config's default: the build measured fastest for the problem
#: (:meth:`MlaDecodeSm90.kernel_step`): :data:`BF16_DEFAULT_STEP` for a 16-bit cache,
#: :data:`Q_ON_N_STEP` at s*h = 16, :data:`FP8_STEP` for the FP8 cache, step 9 with ``splits``
AUTO_STEP = 0
#: the 16-bit cache's seesaw build with the work list (the devlog, "Step 11")
WORK_LIST_STEP = 11
#: the 16-bit cache's default at s*h > 16 where its plan is not all cluster pairs: step 86, step 78
#: with FlashAttention-4's conditional rescaling (the running row max kept unless a page's max
#: passes it by more than 8 in log2 units, a factor of 2^8 in P; warpgroup 0's second O rescale
#: skipped by a warp vote where no row's max moved), measured on an H100 in session 34 at
#: 0.983-0.991x 78's time per round back to back and 0.980-0.995x from an idle GPU at h=128 (64,
#: 4096), (128, 4096), (128, 16384), s=2 and varlen, 0.997-0.999x at h=64; its check list, with keys
#: whose maxima jump mid-sequence (``--init spiky``), passed whole (the devlog, "Session 34"). Step
#: 78 (72 issuing Q's cp.async before the first pages' TMAs at a segment's start; 0.988-0.999x 72's
#: time at h=128 in session 33, the devlog, "Session 33") was the default in session 33. Step 72 (67
#: with a whole sequence's O stored through SMEM in 16-byte rows, step 70, and without warpgroup 1's
#: second wait on V0R before PV0R; 0.935-0.972x 67's time at h=128 in session 30, the devlog,
#: "Session 30") was the default in sessions 30-32, 67 (61 with S masked only on the tail pages) in
#: session 29, 61 (39 with the lean combine) in sessions 24-28, 39 in sessions 22-23, 33 in session
#: 21, 11 before it
BF16_DEFAULT_STEP = 86
#: the 16-bit default where the plan makes every cut sequence a cluster pair
#: (:func:`pairs_everywhere`): step 87, step 79 with 86's conditional rescaling, measured on an
#: H100 in session 34 at 0.991x and 0.992x step 79's time per round at h=128 (32, 4096) and
#: 0.982x and 0.989x at (32, 16384), back to back and from an idle GPU (the devlog, "Session
#: 34"). Step 79 (75 issuing Q first, 78's change on the pair build; 0.987x 75's time at
#: (32, 4096) in session 33) was this default in session 33. Step 75 (71 without
#: warpgroup 1's second wait on V0R before PV0R, 72's change on the pair build; 0.983x step
#: 71's time at (32, 4096) and 0.982x at (32, 16384) in session 31, the devlog, "Session 31")
#: was this default in sessions 31-32; step 71 (62 with step 67's tail-only mask and both O
#: stores through SMEM) in session 30, at 0.965x step 68's time at (32, 4096) and 0.985x at
#: (32, 16384); step 62 (the pair merge through distributed shared memory) in sessions 24-29
#: (0.962x step 39's time per round at (32, 4096) in session 24); with the cluster launch where
#: no sequence is a pair it took 1.012-1.042x step 39's time at h=128 (the devlog, "Session 24")
BF16_PAIR_STEP = 87
#: the 16-bit builds that merge the cut sequences inside the split kernel, no combine kernel:
#: 35 (one row per warp) and 37 (4 rows per warp); their grid must be resident at once
MERGE_IN_KERNEL_STEPS = (35, 37)
#: the 16-bit builds whose first piece of a cut sequence merges the others in its CTA's
#: registers, no combine kernel (59, and 60 with a one-pass merge); their grid must be
#: resident at once too
OWNER_MERGE_STEPS = (59, 60)
#: the 16-bit builds whose parts run as clusters of 2 CTAs (parts 2k and 2k + 1 of an m-tile), and
#: where a sequence's two pieces are those two parts, whole, the CTAs merge them through distributed
#: shared memory (62 and the steps built on it in :data:`STEP_LINE`); the work list then has an
#: even number of parts
PAIR_MERGE_STEPS = tuple(step for step in STEP_LINE if "pair_merge" in step_changes(step))
#: the 16-bit builds whose two CTAs of m-tiles 2j and 2j + 1 (the same part, so the same
#: pages) run as a cluster of 2 and share each page: the CTA that frees a chunk group last
#: loads it into both by one multicast TMA (63); they take an even number of m-tiles.
#: Measured slower in session 25 (H100): 1.03-1.09x step 39's time per round at h=128
MULTICAST_STEPS = tuple(step for step in STEP_LINE if "multicast" in step_changes(step))
#: the build at s*h = 16 (16-bit cache): the query rows on WGMMA's N with S^T in 4
#: accumulators, measured at h=16 (128, 4096) on the H200 at 143.3 us against step 11's 153.6
#: and FlashInfer's 146.3, steady while the SM clock moved 1845-1980 MHz (not at 1785 MHz in
#: a later run; the devlog, "Session 16"); at s*h = 32 it was slower than step 11 (163.3
#: against 158.5 us), so there the 16-bit default (11, then 33 from session 21, 39 from
#: session 22) stays
Q_ON_N_STEP = 42
#: the builds of q_on_n.py, the s*h query rows on WGMMA's N dimension, one warpgroup: 40, and
#: 42 (40 with S^T's 36 k-blocks in 4 accumulators, not one chain; 41, a ring of chunk slots
#: for the pages, was measured slower and not kept). They take these s*h only (one N of 16 or
#: 32), a 16-bit cache and the work list
Q_ON_N_STEPS = (40, 42)
Q_ON_N_ROWS = (16, 32)
#: the builds of q_on_n_fp8.py: the FP8 latent cache at s*h = 16 with the query rows on
#: WGMMA's N, the e4m3 page dequantised in registers straight into WGMMA's A operand (no 16-bit
#: copy of the page, no producer warpgroup); 43 with 2 page stages and 2 CTAs per SM, 44 with 4
#: stages and 1 CTA per SM, 45 is 43 with V^T in fp16 by F2FP and the scale in P (per_token
#: only), 46 is 45 with S^T's latent part in fp16 too (K by F2FP, Q scaled into fp16 per row,
#: the token's scale applied to S^T), 47 is 46 with the next page's cache index read a page
#: before its TMA, 48 is 47 issuing a stage's next TMA before the page's last O^T WGMMAs
#: retire. They take a scale block of at least 128 columns (per_token, or per_block with
#: --kv_block 128, 256 or 512; 45-48 per_token only)
Q_ON_N_FP8_STEPS = (43, 44, 45, 46, 47, 48)
#: the FP8 cache's default builds at s*h = 16 with a scale block of at least 128 columns: step
#: 43, measured on the H200 at h=16 at 0.74x step 22's time at (128, 4096) (148.6 against
#: 201.7 us) and 0.86x at (32, 4096) (50.8 against 58.8; the devlog, "Session 17"); with
#: per_token scales step 47, measured on an H100 at h=16 (128, 4096) at 136.6 us against step
#: 46's 137.2, step 43's 152.4 (another run: 151.0 against 46's 138.0) and the 16-bit
#: default's 211.1, the median per-round ratio to 46 0.995 there and 0.992 at (32, 4096) (the
#: devlog, "Session 18")
FP8_Q_ON_N_STEP = 43
FP8_Q_ON_N_PER_TOKEN_STEP = 47
#: the builds of q_on_n_fp8.py that fold the per-token scale outside the dequantisation
PER_TOKEN_ONLY_STEPS = (45, 46, 47, 48)
FP8_Q_ON_N_MIN_BLOCK = 128
#: the build of q_on_n_fp8_h64.py: the FP8 latent cache at s*h = 64 with the query rows on
#: WGMMA's N, two warpgroups on each page (S^T split by query rows, O^T by latent rows), K and
#: V by F2FP as step 47 (per_token only), 3 page stages, 1 CTA per SM; 50 is 49 with the K
#: bytes addressed from a per-thread offset (no spilled addresses), 51 is 50 with S^T's 32
#: latent k-blocks in 2 accumulators, 52 is 51 leaving a page's O^T WGMMAs in flight while the
#: next page's S^T starts (P^T in two buffers), 53 is 50 with S^T's latent part by FP8
#: WGMMAs from the e4m3 page in SMEM (Q as two e4m3 terms per row; no K dequantisation), 54 is
#: 50 with Q read by 16-byte loads and permuted on its way into SMEM, 55 is 54 with O^T's V
#: bytes addressed from two per-thread offsets (no spills), 56 is 55 with S^T cut by K's latent
#: columns (each warpgroup converts its own 256 columns once, the partials added through SMEM),
#: 57 is 56 without the CTA barrier at each page's end (an empty mbarrier per stage)
Q_ON_N_FP8_H64_STEPS = (49, 50, 51, 52, 53, 54, 55, 56, 57)
#: the FP8 default at h = 64, s = 1 with per_token scales and at least
#: :data:`FP8_Q_ON_N_H64_MIN_BATCH` sequences (step 22 below that, and at s > 1, where 57 builds
#: and passes its checks but was not timed). Measured on an H100, one alternated run each (the
#: devlog, "Session 20"): 57 took 0.940x, 0.944x and 0.965x step 22's time at (B, T) =
#: (128, 4096), (128, 8192) and (128, 16384); at B = 32, 64 and 96 step 22 was faster or equal
#: at every T measured (56: 1.03-1.22x; 57: 1.21x at (32, 4096), 1.035x at (96, 4096), 0.996x
#: at (96, 8192)), its fixed cost per part being lower
FP8_Q_ON_N_H64_STEP = 57
FP8_Q_ON_N_H64_MIN_BATCH = 128


def fp8_q_on_n_stages(step: int) -> int:
    """Page stages per CTA of q_on_n_fp8.py's ``step``: 2 for 43, 45-48 (about 104 KB of SMEM,
    so two CTAs share an SM), 4 for 44 (one CTA per SM); 3 for q_on_n_fp8_h64.py's 49 (one CTA
    per SM, 204-220 KB) to 57."""
    return 3 if step in Q_ON_N_FP8_H64_STEPS else 4 if step == 44 else 2


def ctas_per_sm(step: int | None) -> int:
    """CTAs per SM the work list is cut for: 2 for the q_on_n_fp8.py steps of 2 stages (43,
    45-48), else 1."""
    return 2 if step in Q_ON_N_FP8_STEPS and fp8_q_on_n_stages(step) == 2 else 1


def st_accumulators(step: int, n: int) -> int:
    """S^T's accumulators in the q_on_n.py build of ``step`` for n = s*h query rows: 1 for
    step 40 (one chain of 36 WGMMAs), for step 42 4 at n = 16 and 2 at n = 32 (4 of 32-column
    accumulators spill: 255 registers and 112 B of spill stores at h=32, (128, 4096))."""
    if step != 42:
        return 1
    return 4 if n == 16 else 2


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _pages(problem: MlaDecodeProblem) -> list[int]:
    return [_ceil(n, 64) for n in problem.lengths()]


def _unequal(problem: MlaDecodeProblem) -> bool:
    return len(set(problem.lengths())) > 1


def _longest(problem: MlaDecodeProblem) -> int:
    """The longest sequence's pages (at least 1)."""
    return max(_pages(problem) + [1])


def _ctas_per_split(problem: MlaDecodeProblem) -> int:
    """CTAs of one split: one per 64 packed query rows and sequence."""
    return _ceil(problem.s * problem.h, 64) * problem.b


def _modelled_cost(busy_ctas: int, sm_count: int, per: int, splits: int) -> int:
    """The split rules' time model, in pages: ceil(busy CTAs / SMs) waves x (the pages of one
    CTA + its fixed cost), + the combine when there is more than one split."""
    waves = _ceil(busy_ctas, max(1, sm_count))
    return waves * (per + CTA_OVERHEAD_PAGES) + (COMBINE_PAGES if splits > 1 else 0)


def balanced_cap(problem: MlaDecodeProblem) -> int:
    """The most splits the balanced rule may give the longest sequence: the grid (every
    sequence gets as many split slots as the longest) stays within :data:`GRID_BOUND` CTAs."""
    return max(1, min(MAX_SPLITS, _longest(problem), GRID_BOUND // _ctas_per_split(problem)))


def equal_cap(problem: MlaDecodeProblem) -> int:
    """The most splits of the equal rule (:func:`choose_splits`, ``--config splits=N``)."""
    return max(1, min(MAX_SPLITS, _longest(problem), CTA_BOUND // _ctas_per_split(problem)))


def split_cap(problem: MlaDecodeProblem) -> int:
    """The most splits any call of ``problem`` may use: sizes the workspace (independent of the
    target and the config, as the tensor specs must be): the equal rule's cap, the work list's
    (:func:`work_cap`) and, with sequences of different lengths, the balanced rule's."""
    cap = max(equal_cap(problem), work_cap(problem))
    return max(cap, balanced_cap(problem)) if _unequal(problem) else cap


def choose_balanced(problem: MlaDecodeProblem, sm_count: int) -> tuple[int, int]:
    """The balanced split rule for sequences of different lengths (step 5b; the idea of
    FlashMLA's scheduler metadata, deepseek-ai/FlashMLA ``docs/20250422-new-kernel-deep-dive.md``
    "Tile Scheduler": cut the work, not each sequence, evenly): every split covers the same
    number of pages ``per`` of every sequence, so a long sequence gets more CTAs than a short
    one. Returns (num_splits, per): the ``per`` that minimises the modelled time ceil(non-empty
    CTAs / SMs) waves x (per + the CTA's fixed cost) (+ the combine), with num_splits =
    ceil(longest / per) <= :func:`balanced_cap`; ties to the larger ``per``."""
    p = problem
    mt = _ceil(p.s * p.h, 64)
    pages = _pages(p)
    longest = _longest(p)
    cap = balanced_cap(p)
    best, best_cost = (1, longest), None
    for per in range(longest, _ceil(longest, cap) - 1, -1):
        splits = _ceil(longest, per)
        if splits > cap:
            break
        busy = mt * sum(max(1, _ceil(n, per)) for n in pages)
        cost = _modelled_cost(busy, sm_count, per, splits)
        if best_cost is None or cost < best_cost:
            best, best_cost = (splits, per), cost
    return best


@dataclass(frozen=True)
class WorkList:
    """The work list of seesaw step 11 (FlashMLA's tile-scheduler idea,
    deepseek-ai/FlashMLA ``docs/20250422-new-kernel-deep-dive.md`` "Tile Scheduler": cut the
    work, not each sequence, into equal parts): the pages of all sequences, end to end, are cut
    into ``parts`` ranges of ``per`` pages (the last may be shorter); part ``c`` is one CTA per
    m-tile, which walks its range sequence by sequence. Each (sequence, range) overlap is a
    segment; the segments of a sequence cut in several pieces write a partial O and LSE into
    workspace slot ``slot`` (the piece's index), which the combine merges.

    Attributes:
        parts: CTAs per m-tile (the grid's second dimension).
        per: pages per part.
        part_segs: for each part, its segments as [first, end) indices into ``segments``.
        segments: (sequence, first page, end page, slot) of each segment, pages of that
            sequence.
        pieces: segments (= partial slots) per sequence; 1 for a sequence in one piece (its
            CTA stores O: no slot, no combine) and for an empty one.
    """

    parts: int
    per: int
    part_segs: tuple[tuple[int, int], ...]
    segments: tuple[tuple[int, int, int, int], ...]
    pieces: tuple[int, ...]
    #: step 62: per sequence, whether its CTAs merge it as a cluster pair (:func:`pair_sequences`)
    paired: tuple[bool, ...] = ()

    def rows(self) -> list[list[int]]:
        """The ``work`` tensor's rows (int32, 4 columns; :func:`work_rows` of them): rows
        0..PARTS_CAP-1 the parts as [first row, end row) of their segments; rows PARTS_CAP..
        PARTS_CAP+b-1 each sequence's piece count (and 1 in the second column where step 62's
        cluster pair merges it: :attr:`paired`); then the segments, (b, p0, p1, slot)."""
        b = len(self.pieces)
        first = PARTS_CAP + b
        out = [[0, 0, 0, 0] for _ in range(work_rows(b))]
        for c, (lo, hi) in enumerate(self.part_segs):
            out[c][:2] = [first + lo, first + hi]
        for i, n in enumerate(self.pieces):
            out[PARTS_CAP + i][0] = n
        for i, both in enumerate(self.paired):
            out[PARTS_CAP + i][1] = int(both)
        for j, seg in enumerate(self.segments):
            out[first + j] = list(seg)
        return out


def work_rows(b: int) -> int:
    """Rows of the ``work`` tensor for ``b`` sequences: the parts, the piece counts and at most
    PARTS_CAP + b segments (each part adds one segment per sequence boundary it crosses)."""
    return 2 * (PARTS_CAP + b)


def _work_parts(problem: MlaDecodeProblem, sm_count: int, per_sm: int = 1) -> int:
    """Parts of the work list: ``per_sm`` CTAs per SM (:func:`ctas_per_sm`) for every m-tile
    (at most :data:`PARTS_CAP`)."""
    mt = _ceil(problem.s * problem.h, 64)
    return max(1, min(sm_count * per_sm, PARTS_CAP) // mt)


def work_list(pages: list[int] | tuple[int, ...], parts: int, per: int | None = None) -> WorkList:
    """Cut the sequences' pages (``pages[b]``, end to end) into ranges of ``per`` pages (by
    default :func:`choose_per`), at most ``parts`` of them (:class:`WorkList`). An empty
    sequence gets a segment of no pages in the part where it would start (its CTA stores O = 0
    and LSE = -inf). Raises ShapeError for parts < 1 or > :data:`PARTS_CAP`, or a ``per`` that
    needs more than ``parts`` ranges."""
    if not 1 <= parts <= PARTS_CAP:
        raise ShapeError(f"work list: parts must be in 1..{PARTS_CAP} (got {parts})")
    total = sum(pages)
    per = per or choose_per(pages, parts)
    if _ceil(total, per) > parts:
        raise ShapeError(f"work list: {per} pages per part need more than {parts} parts")
    offs = [0]
    for n in pages:
        offs.append(offs[-1] + n)
    segments: list[tuple[int, int, int, int]] = []
    part_segs = []
    for c in range(parts):
        lo, hi = c * per, min((c + 1) * per, total)
        first = len(segments)
        for b, n in enumerate(pages):
            a, e = max(lo, offs[b]), min(hi, offs[b + 1])
            if n and a < e:
                segments.append((b, a - offs[b], e - offs[b], a // per - offs[b] // per))
            elif not n and min(offs[b] // per, parts - 1) == c:
                segments.append((b, 0, 0, 0))
        part_segs.append((first, len(segments)))
    pieces = tuple((offs[b + 1] - 1) // per - offs[b] // per + 1 if n else 1
                   for b, n in enumerate(pages))  # fmt: skip
    return WorkList(parts, per, tuple(part_segs), tuple(segments), pieces)


def _work_cost(offs: list[int], per: int) -> int:
    """The work list's time model, in pages: the busiest part's pages + the fixed cost of each
    of its segments (:data:`CTA_OVERHEAD_PAGES`: Q load, pipeline fill, epilogue), + the
    combine when a cut crosses a sequence."""
    total = offs[-1]
    parts = _ceil(total, per)
    segs = [0] * parts
    crossed = False
    for b in range(len(offs) - 1):
        a, e = offs[b], offs[b + 1]
        if a == e:
            continue
        first, last = a // per, (e - 1) // per
        crossed = crossed or last > first
        for c in range(first, last + 1):
            segs[c] += 1
    busiest = max(
        (min((c + 1) * per, total) - c * per + CTA_OVERHEAD_PAGES * n for c, n in enumerate(segs)),
        default=0,
    )
    return busiest + (COMBINE_PAGES if crossed else 0)


def choose_per(pages: list[int] | tuple[int, ...], parts: int) -> int:
    """Pages per part of the work list: of the smallest ``per`` that fits ``parts`` ranges and
    the next 64, and the smallest multiple of the longest sequence above them (cuts that fall
    between sequences of one length), the one that minimises :func:`_work_cost`; ties to the
    larger (fewer cuts)."""
    offs = [0]
    for n in pages:
        offs.append(offs[-1] + n)
    total = offs[-1]
    if total == 0:
        return 1
    low = _ceil(total, parts)
    longest = max(pages)
    cands = set(range(low, low + 65)) | {_ceil(low, longest) * longest}
    return min(sorted(cands), key=lambda per: (_work_cost(offs, per), -per))


#: step 62's pair plan may be this many modelled pages busier than the costed plan
#: (:func:`pair_plan`): the combine kernel that the pairs avoid cost about 2 pages of a CTA's
#: time where the model charges :data:`COMBINE_PAGES` (1): on an H100 in session 24, 62 took
#: 2.2 us (one page at 2.2 us) less than 61 at h=128 (32, 4096) with the same pages per part,
#: and with the pair plan at (32, 16384), 130 modelled pages against the costed plan's 129,
#: 0.989x step 39's time where 61 took 0.996x (the devlog, "Session 24")
PAIR_SPARE_PAGES = 1
#: ``--config cuts``'s values (:func:`plan_work`)
CUTS = ("auto", "costed", "equal", "even", "pairs")
#: the costed cuts: a sequence's piece is at least this many pages unless its rest is shorter
#: (a shorter piece would cost a segment's fixed cost and a combine slot for less work than
#: twice that fixed cost moves)
MIN_PIECE_PAGES = 2 * CTA_OVERHEAD_PAGES
#: the costed cuts try this many budgets from the smallest that fits
COSTED_BUDGETS = 65


def _costed_fill(pages: list[int] | tuple[int, ...], budget: int) -> list[list[tuple]] | None:
    """Fill parts in order with the sequences' pages, each part up to ``budget`` in the work
    list's model (its pages + :data:`CTA_OVERHEAD_PAGES` per segment; an empty sequence is a
    segment of no pages). Returns each part's segments (sequence, first, end, slot), or None
    when the budget cannot hold even one segment."""
    seg = CTA_OVERHEAD_PAGES
    if budget <= seg:
        return None
    out: list[list[tuple]] = [[]]
    cost = 0
    for b, n in enumerate(pages):
        if n == 0:
            if cost + seg > budget and out[-1]:
                out.append([])
                cost = 0
            out[-1].append((b, 0, 0, 0))
            cost += seg
            continue
        start, piece = 0, 0
        while start < n:
            room, rest = budget - cost - seg, n - start
            # a fresh part takes what its budget holds; a part with segments already takes
            # a piece only if it fits, or is MIN_PIECE_PAGES long
            if out[-1] and (room <= 0 or (room < rest and room < MIN_PIECE_PAGES)):
                out.append([])
                cost = 0
                continue
            take = min(rest, room)
            out[-1].append((b, start, start + take, piece))
            piece, cost, start = piece + 1, cost + seg + take, start + take
    return out


def _as_work_list(parts: int, filled: list[list[tuple]], b: int) -> WorkList:
    """:class:`WorkList` of filled parts (padded with empty ones to ``parts``); ``per`` is the
    largest part's pages."""
    segments = tuple(seg for part in filled for seg in part)
    part_segs, first = [], 0
    for c in range(parts):
        n = len(filled[c]) if c < len(filled) else 0
        part_segs.append((first, first + n))
        first += n
    pieces = [0] * b
    for seq, _, _, _ in segments:
        pieces[seq] += 1
    per = max((sum(e - a for _, a, e, _ in part) for part in filled), default=1)
    return WorkList(parts, max(1, per), tuple(part_segs), segments, tuple(pieces))


def _plan_cost(work: WorkList) -> int:
    """The work list's time model for any plan (:func:`_work_cost`'s for equal ranges): the
    busiest part's pages + :data:`CTA_OVERHEAD_PAGES` per segment (an empty sequence's
    included), + :data:`COMBINE_PAGES` when a sequence is in several pieces."""
    busiest = max(
        (
            sum(CTA_OVERHEAD_PAGES + e - a for _, a, e, _ in work.segments[lo:hi])
            for lo, hi in work.part_segs
        ),  # fmt: skip
        default=0,
    )
    return busiest + (COMBINE_PAGES if max(work.pieces, default=0) > 1 else 0)


def costed_work_list(pages: list[int] | tuple[int, ...], parts: int) -> WorkList:
    """The work list with costed cuts (``--config cuts=costed``): instead of equal page ranges,
    each part is filled in order up to one budget of the model (its pages + the fixed cost of
    each segment, :data:`CTA_OVERHEAD_PAGES`), so a part that crosses sequence boundaries
    holds fewer pages; no piece is shorter than :data:`MIN_PIECE_PAGES` unless its sequence's
    rest is, or it fills a part alone. Of the smallest budget that fits ``parts`` (found by
    bisection) and the next :data:`COSTED_BUDGETS` - 1 up to the equal plan's cost, it keeps
    the plan of lowest :func:`_plan_cost` (ties to the larger budget: fewer cuts), charging
    one more :data:`COMBINE_PAGES` when it cuts more sequences than the equal plan;
    where that is not lower than the equal plan's cost, it returns the equal plan
    (:func:`work_list`). Raises ShapeError as :func:`work_list` does."""
    equal = work_list(pages, parts)
    total = sum(pages)
    if total == 0:
        return equal
    cut_eq = sum(n > 1 for n in equal.pieces)
    equal_cost = _plan_cost(equal)

    def cost(w: WorkList) -> int:
        more_cuts = sum(n > 1 for n in w.pieces) > cut_eq
        return _plan_cost(w) + (COMBINE_PAGES if more_cuts else 0)

    def fits(budget: int) -> bool:
        filled = _costed_fill(pages, budget)
        return filled is not None and len(filled) <= parts

    # the smallest budget that fits (fewer parts with a larger budget: bisect), then it and
    # the next COSTED_BUDGETS - 1, as choose_per tries the next 64 range lengths
    lo, hi = _ceil(total, parts) + CTA_OVERHEAD_PAGES, max(equal_cost, 1)
    if not fits(hi):
        return equal
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
    best, best_cost = equal, equal_cost
    for budget in range(min(lo + COSTED_BUDGETS - 1, equal_cost), lo - 1, -1):
        filled = _costed_fill(pages, budget)
        if filled is None or len(filled) > parts:
            continue
        w = _as_work_list(parts, filled, len(pages))
        c = cost(w)
        if c < best_cost:
            best, best_cost = w, c
    return best


def pair_work_list(pages: list[int] | tuple[int, ...], parts: int) -> WorkList | None:
    """``--config cuts=pairs`` (for the pair-merge steps, :data:`PAIR_MERGE_STEPS`: 62 and the steps
    built on it): sequence i's pages halved onto parts 2i and 2i + 1 (the first half ceil(n / 2)
    pages), so under those steps each sequence is one cluster's pair and none goes to the combine
    (other steps merge the halves there); the parts past 2b stay empty. None where that plan does
    not exist: more than ``parts`` // 2 sequences, or a sequence of fewer than 2 pages."""
    if len(pages) > parts // 2 or min(pages, default=0) < 2:
        return None
    filled = []
    for b, n in enumerate(pages):
        half = _ceil(n, 2)
        filled += [[(b, 0, half, 0)], [(b, half, n, 1)]]
    return _as_work_list(parts, filled, len(pages))


def pair_plan(pages: list[int] | tuple[int, ...], parts: int, cuts: str) -> WorkList:
    """Step 62's work list: with ``cuts=auto`` the pair plan (:func:`pair_work_list`) where it
    exists and the model charges it at most :data:`PAIR_SPARE_PAGES` more than the costed plan
    charges its own (the pairs run no combine, so the pair plan's cost is taken without
    :data:`COMBINE_PAGES`), else the costed plan; any other ``cuts`` as :func:`plan_work`
    plans it. ``parts`` must be even (:func:`pair_parts`). The pairs are marked
    (:func:`pair_sequences`)."""
    work = None
    if cuts == "auto":
        paired = pair_work_list(pages, parts)
        costed = costed_work_list(pages, parts)
        work = costed
        spare = _plan_cost(costed) + PAIR_SPARE_PAGES
        if paired is not None and _plan_cost(paired) - COMBINE_PAGES <= spare:
            work = paired
    else:
        work = plan_work(pages, parts, cuts)
    return replace(work, paired=pair_sequences(work))


def pairs_everywhere(work: WorkList) -> bool:
    """Whether the pair build (:data:`BF16_PAIR_STEP`) pays on ``work`` (its plan): at least
    one sequence is a cluster pair and every cut sequence is one, so no combine runs. Where none
    is a pair the cluster launch alone took 1.2-4.2% at h=128 on an H100 (session 24), so the
    default builds step 86 (78 with conditional rescaling; 78 in session 33, 72 in sessions
    30-32, 67 in session 29, 61 before) there."""
    cut = [n > 1 for n in work.pieces]
    return any(work.paired) and all(both or not c for both, c in zip(work.paired, cut, strict=True))


def check_cuts(cuts: str) -> None:
    """``--config cuts``: one of auto, costed, equal, even and pairs (:func:`plan_work`).
    Raises ShapeError."""
    if cuts not in CUTS:
        raise ShapeError(f"cuts must be auto, costed, equal, even or pairs (got {cuts!r})")


def plan_work(pages: list[int] | tuple[int, ...], parts: int, cuts: str) -> WorkList:
    """The work list of ``--config cuts=...``: :func:`work_list` for ``equal`` (its cost model
    picks the range length) and ``even`` (the shortest ranges that fit, ceil(pages / parts),
    so that the busiest part is as short as it can be), :func:`pair_work_list` for ``pairs``
    where that plan exists, :func:`costed_work_list` otherwise. Raises ShapeError as they do,
    and for a ``cuts`` that is none of auto, costed, equal, even and pairs."""
    check_cuts(cuts)
    if cuts == "pairs":
        paired = pair_work_list(pages, parts)
        if paired is not None:
            return paired
    if cuts == "even" and parts >= 1:
        return work_list(pages, parts, per=max(1, _ceil(sum(pages), parts)))
    return work_list(pages, parts) if cuts == "equal" else costed_work_list(pages, parts)


def pair_sequences(work: WorkList) -> tuple[bool, ...]:
    """Step 62: for each sequence, whether the two CTAs of one cluster (parts 2k and 2k + 1,
    the same m-tile) merge it between them: its pieces are exactly two, piece 0 the only
    segment of an even part and piece 1 the only segment of the next. Both CTAs of such a
    cluster then end with that merge, each keeping one column half of O; every other cut
    sequence goes through the combine kernel as before."""
    where: dict[int, list[tuple[int, int, int]]] = {}
    for c, (lo, hi) in enumerate(work.part_segs):
        for k in range(lo, hi):
            seq, _, _, slot = work.segments[k]
            where.setdefault(seq, []).append((c, slot, hi - lo))
    paired = []
    for seq, n in enumerate(work.pieces):
        got = sorted(where.get(seq, []), key=lambda e: e[1])
        paired.append(
            n == 2
            and len(got) == 2
            and got[0][0] % 2 == 0
            and got[1][0] == got[0][0] + 1
            and got[0][2] == got[1][2] == 1
        )
    return tuple(paired)


def pair_parts(parts: int) -> int:
    """Step 62: the work list's part count for clusters of 2 along the parts, ``parts``
    rounded down to an even count (at least 2; an empty part's CTA exits at once)."""
    return max(2, parts - parts % 2)


@lru_cache(maxsize=64)
def step_work(problem: MlaDecodeProblem, step: int, cuts: str, sm_count: int) -> WorkList:
    """The work list that seesaw ``step`` (11 or later, 16-bit cache) runs for ``problem`` on
    ``sm_count`` SMs with ``--config cuts``: :func:`plan_work` over :func:`_work_parts`'s parts,
    or for the :data:`PAIR_MERGE_STEPS` :func:`pair_plan` over an even count
    (:func:`pair_parts`). One place for :meth:`MlaDecodeSm90.kernel_step` (which asks it
    whether the default is its pair build), :meth:`MlaDecodeSm90.build_label` and
    :meth:`MlaDecodeSm90.plan`; cached, as all three ask it for the same call (the problem
    and the work list are immutable). Raises ShapeError as the planners do."""
    parts = _work_parts(problem, sm_count, ctas_per_sm(step))
    if step in PAIR_MERGE_STEPS:
        return pair_plan(_pages(problem), pair_parts(parts), cuts)
    return plan_work(_pages(problem), parts, cuts)


def work_cap(problem: MlaDecodeProblem) -> int:
    """The most pieces a sequence can have in any work list of ``problem``: with the most
    parts (PARTS_CAP // m-tiles, the shortest ranges), ceil(longest / per) + 1."""
    pages = _pages(problem)
    per = max(1, _ceil(sum(pages), _work_parts(problem, PARTS_CAP)))
    return _ceil(_longest(problem), per) + 1


def _fill_work(work: WorkList):
    """The kernel's setup: the work list into the ``work`` tensor (at bind, outside timing)."""

    def setup(inputs) -> None:
        import torch

        t = inputs["work"]
        t.copy_(torch.tensor(work.rows(), dtype=torch.int32, device=t.device))

    return setup


def choose_splits(problem: MlaDecodeProblem, sm_count: int) -> int:
    """The number of splits for one call: the s in 1..cap that minimises the modelled time
    ceil(CTAs * s / SMs) waves x (ceil(pages / s) + the CTA's fixed cost) (+ the combine when
    s > 1), ties to the smaller s. One CTA per SM (221 KB of SMEM); pages = the longest
    sequence's (each sequence is cut into s parts of its own pages)."""
    p = problem
    ctas, pages = _ctas_per_split(p), _longest(p)
    best, best_cost = 1, None
    for s in range(1, equal_cap(p) + 1):
        cost = _modelled_cost(ctas * s, sm_count, _ceil(pages, s), s)
        if best_cost is None or cost < best_cost:
            best, best_cost = s, cost
    return best


@dataclass(frozen=True)
class MlaSm90Config(Config):
    """``splits``: KV splits per sequence; 0 chooses per call (:func:`choose_splits`), 1 is v0's
    path (no workspace, no combine kernel). ``loads``: how pages reach SMEM: ``auto`` (the default:
    ``tma`` for the seesaw schedule, ``cpasync`` for lockstep), ``cpasync`` (lockstep steps 0-2: all
    256 math threads issue cp.async and meet at a CTA barrier per page; the only loads of the FP8
    cache's lockstep and producer-warpgroup builds) or ``tma`` (step 3 with lockstep, and always
    with seesaw: one TMA per 64-column chunk by the page's coordinate, one mbarrier per chunk; steps
    43-48: 128-column e4m3 boxes, 5 mbarriers per stage). ``split_rule`` (with ``splits=0`` and
    sequences of different lengths): ``equal`` (steps 1-4: every sequence cut into the same number
    of equal parts, sized for the longest) or ``balanced`` (step 5b, :func:`choose_balanced`: the
    same number of pages per split for every sequence). ``step``: the devlog step of the seesaw
    schedule to build (4 to 39, 58 to 60 and those of :data:`STEP_LINE`, see
    :data:`.seesaw.STEPS`, 40 or 42, one
    warpgroup with the query rows on WGMMA's N, 43 to 48, the same for the FP8 cache, or 49 to
    57, the FP8 cache at s*h = 64 with two warpgroups on each page; for before/after runs), or 0,
    the default: the build
    measured fastest for the problem (:meth:`MlaDecodeSm90.kernel_step`): 42 at s*h = 16, 22 for the
    FP8 cache (at s*h = 16: 47 with per_token scales, 43 with per_block scales of at least 128
    columns; at h = 64, s = 1: 57 with per_token scales and b >= 128), 9 with an explicit
    ``splits``, else 87 where its plan makes every cut sequence a cluster pair
    (:func:`pairs_everywhere`; h=128 (32, 4096) and (32, 16384) on 132 SMs; 79 in session 33, 75
    in sessions 31-32, 71 in session 30, 62 in sessions 24-29)
    and 86 elsewhere (78 in session 33, 72 in sessions 30-32, 67 in session 29, 61 in sessions
    24-28, 39 in sessions 22-23, 33 in session 21, 11 before). 11 is a work list of the
    pages of all sequences end to end, one part per SM and m-tile, measured fastest over the
    workload's table (the devlog, "Step 11"); with an explicit ``splits`` it builds step 9, the
    per-sequence splits. 14 is step 11 for the FP8 cache (a third warpgroup dequantises the e4m3
    pages into the 16-bit stages); 15 is 14 dequantising by bit placement instead of conversions; 16
    is 15 filling a pair's groups in the order they are released; 17 is 15 with one group in flight,
    not two; 18 is 17 with setmaxnreg 216 / 72; 19 and 21 publish each chunk as written (timed in
    session 7, whose records were lost: to be re-timed); 20 is 18 prefetching each page's e4m3 part
    and scales into L2 two pages ahead; 22 is 20 reading each prefetch's page index a page early,
    the FP8 default (the devlog, "FP8 in the seesaw schedule"); 23 is 22 prefetching 4 pages ahead;
    24 is 22 reloading the next group vector by vector as the current one converts (no faster); 25
    is 11 for a 16-bit cache with an L2 prefetch stream of the pair after next (4-9% slower); 26 is
    22 with FlashMLA's crossover where the m-tiles pair up (h=128): clusters of 2 CTAs, each
    producer dequantising half of every page into both (1.19x slower at h=128); 27 is 22 with
    whole-sector producer loads (no faster; all measured in session 9); 30 is 22 with the producer's
    next page index read two pages ahead; 28 is 11 for a 16-bit cache loading the next segment's Q
    during the last pair of the current one, 29 is 28 with step 12's early pages; 31 is 11 with
    warpgroup 0's next S issued right behind its last PV (FlashMLA's order), 32 is 31 with that PV
    queued after warpgroup 1's PV0R (both measured 1-3.5% slower than 11 in session 11), 33 is 11
    with warpgroup 1's S = Q K^T over its page's chunks in the order they are released, 4-7, 0-3, 8
    (0.982-0.987x step 11's time per round at the five h=128 s=1 rows on an H100 in session 21), 34
    is 33 with the cut sequences' partial O stored in the dtype instead of fp32 (half the workspace
    bytes written and combined; 1.008-1.046x step 33's time at h=128 in session 21), 35 is 33 with
    no combine kernel: every warp of the grid merges cut rows once their pieces are counted stored
    (1.05-1.10x step 33's time at h=128 s=1 in session 21: one row per warp at a time is
    latency-bound), 36 is 33 with the combine's split loads as 16-byte vectors (tied with 33 on an
    H100 in session 22: 0.993-1.013x per round), 37 is 35 with each warp merging 4 rows together,
    their loads in flight at once (1.04-1.09x step 33 at h=128 s=1 in session 22), 38 is 36 with the
    combine's first round of partial-O loads issued before it reads the LSEs, one round trip per row
    instead of two (tied with 33 on an H100 in session 22: 0.996-1.008x per round), 39 is 33 with
    warpgroup 1 reloading stage 1's chunks 4-7, which its next S reads first, as soon as its PV1R
    retires instead of after its PV0R (0.955-0.978x step 33's time per round at every h=128 row on
    an H100 in session 22: the default until session 24). 58 (the next free number after the
    query-rows-on-N builds) is 39 with combine CTAs of 2 warps instead of 4, which at 128 registers
    a thread fit beside a split CTA, so that PDL can make the combine resident before the split
    kernel ends (tied with 39 on an H100 in session 23). 59 is 39 with no combine kernel: the CTA of
    a cut sequence's first piece, always its part's last segment, keeps that piece's O in registers,
    waits for the other pieces' partials and merges them (1.030x step 39 per round at (32, 4096) on
    an H100 in session 23: both pieces of a cut sequence end together there, and the merge is a
    serial tail on half the SMs); 60 is 59 with that merge in one pass over the other pieces, each
    piece's LSE and partial O loaded together (1.019x). 61 is 39 with a lean combine: 2 pieces per
    round (72 registers a thread, one wave of warps at (32, 4096)), 16-byte loads and one round trip
    (steps 13, 36 and 38 together; 0.981-0.997x step 39 per round where the combine runs, on an H100
    in session 24: the default until session 29, when 67, 61 masking only the pages that reach past
    the tile's lowest key limit, replaced it). 62 is 61 with the parts launched as clusters of 2
    CTAs, and each sequence whose two whole pieces are one cluster's parts merged by those two CTAs
    through distributed shared memory, with no combine for it (0.962x step 39 and 0.979x FlashInfer
    at h=128 (32, 4096) on an H100 in session 24; where no sequence pairs the cluster launch alone
    costs 1.2-4.2% at h=128, so the default takes its pair build only where every cut sequence
    pairs). 63 is 61
    with the CTAs of m-tiles 2j and 2j + 1 (s*h a multiple of 128) launched as a cluster of 2: they
    walk the same pages, and the CTA that frees a group of a stage's chunks last loads the next
    page's chunks into both by one multicast TMA, so each page crosses L2 to the SMs once per
    cluster instead of once per m-tile (1.03-1.09x step 39's time per round at h=128 on an H100 in
    session 25: a page's next load waits for the later CTA). 64 is 61 with warpgroup 0 reloading
    stage 0's chunks 0-3, the first its next S reads, as soon as its PV0L retires, before it waits
    for warpgroup 1's row max (1.015-1.045x step 39's time per round at h=128 on an H200 in session
    25: P0 reaches warpgroup 1 later). 65 is 61 with 31's order (slower, session 27), 66 traces
    each math warpgroup's code with its index a constant (slower, session 29), 67 masks S only on
    the pages that reach past the tile's lowest key limit (the default in session 29), 68 is 62
    with that mask, 70 is 67 storing a whole sequence's O through SMEM in 16-byte rows, 71 is 68
    storing both of its O so (the pair default in session 30), 72 and 73 are 70 without
    warpgroup 1's second wait on V0R before PV0R (72, the default in sessions 30-32) or warpgroup
    0's on V1L before PV1L (73), 74 is 70 storing P1 before PV1R (no gain), 75 is 71 without
    warpgroup 1's V0R re-wait (72's change; the pair default in sessions 31-32), 76 and 77 are 72
    and 75 re-waiting on two and one of V1L's four chunks, not four (no gain; the devlog, "Session
    31"), 78 and 79 are 72 and 75 issuing Q's cp.async before the first two pages' TMAs at a
    segment's start (the defaults in session 33: 0.988-0.999x 72's and 0.987-1.000x 75's time per
    round at h=128 and h=64 on an H100), 80 is 72 launched as a programmatic dependent of the kernel
    before it (griddepcontrol.wait after its prologue; 78-80 built in session 31), 81 and 82 are 72
    and 75 so launched that also trigger the next grid's launch right after that wait, 83 and 84 are
    81 and 82 issuing Q first, 85 is 72 with Q's 64 rope columns held in registers, the A operand of
    S's four rope k-blocks (81-85 built in session 32; in session 33 80 and 85 were neutral, and the
    early trigger cost 1-3% at the h=128 rows where nothing is cut, (64, 4096), (128, 4096) and s=2,
    and nothing elsewhere; the devlog, "Session 33"), 86 and 87 are 78 and 79 with
    FlashAttention-4's conditional rescaling: the running row max is kept unless a page's max
    passes it by more than 8 in log2 units (a factor of 2^8 in P), and warpgroup 0's second O
    rescale is skipped by a warp vote where no row's max moved (the defaults since session 34:
    0.980-0.995x 78's and 0.982-0.992x 79's time per round at h=128 on an H100, 0.997-0.999x at
    h=64; the devlog, "Session 34"), and 88 is 86 with each warpgroup's first O rescale under
    the vote too (ptxas then serializes every WGMMA; built to show it, not timed). 40
    (:mod:`.q_on_n`, s*h = 16 or 32, 16-bit cache) is 11's work list with the query rows on WGMMA's
    N: S^T = K Q^T and O^T += V^T P^T by one warpgroup, no padded MMA rows (measured on the H200 at
    h=16, (128, 4096): 145.2 and 146.0 us against FlashInfer's 146.0 and 148.9 while the SM clock
    held 1980 MHz,
    154-165 us once it fell to 1710-1875 MHz; the devlog, "Session 15"). 42 is 40 with S^T's 36
    k-blocks spread over 4 accumulators (2 at s*h = 32) and added up, so that consecutive WGMMAs do
    not chain on one: the
    default at s*h = 16 (:data:`Q_ON_N_STEP`; the devlog, "Session 16"). 43-48 (:mod:`.q_on_n_fp8`,
    the FP8 cache at s*h = 16, scale blocks of at least 128 columns) are 42 with the e4m3 page by
    TMA, dequantised in registers straight into WGMMA's A operand: 43 with 2 CTAs per SM (measured
    on the H200 at h=16 (128, 4096): 148.6 us against the 16-bit default's 147.0 and step 22's
    201.7; the devlog, "Session 17"), 44 with 4 stages in one CTA per SM (183.0 us), 45 is 43 with
    V^T in fp16 by one F2FP per pair and the per-token scale in P (per_token only), 46 is 45 with
    S^T's latent part in fp16 as well: K by one F2FP per pair, Q in fp16 times a power of two per
    query row, the rope part in its own accumulator, S^T = latent x token scale / row factor + rope
    (per_token only), 47 is 46 with the next page's cache index read a page before its TMA is
    issued, 48 is 47 issuing a stage's next TMA before the page's last O^T WGMMAs retire (they read
    registers and P^T, not the stage). 49-57 (:mod:`.q_on_n_fp8_h64`, s*h = 64, per_token only): S^T
    split by query rows and O^T by latent rows between two warpgroups; 50 computes each K address at
    its use, 51 adds a second S^T accumulator, 52 overlaps a page's O^T with the next page's S^T, 53
    runs S^T's latent part as FP8 WGMMAs (faster, but outside the LSE tolerance on one-token
    sequences), 54 reads Q by 16-byte loads (the devlog, "Session 19"), 55 addresses V's bytes from
    two offsets per thread, 56 cuts S^T by K's latent columns instead (each warpgroup converts only
    its own 256 columns, as its O^T does, and the partials of the other's query rows meet in SMEM),
    57 drops 56's CTA barrier at each page's end (the devlog, "Session 20"). ``schedule``: ``auto``
    (the default: ``seesaw`` for a 16-bit cache, measured faster at every setting of the workload's
    table, and for the FP8 cache), ``lockstep`` (steps 0-3: both warpgroups run QK, softmax and PV
    of the same page together) or ``seesaw`` (the steps of :data:`.seesaw.STEPS`, and 40 and 42 in
    :mod:`.q_on_n`, 43-48 in :mod:`.q_on_n_fp8`, 49-57 in :mod:`.q_on_n_fp8_h64`; :mod:`.seesaw`:
    each warpgroup owns every other page and the running max is handed between them, FlashMLA's
    schedule; 16-bit pages always come by TMA, the FP8 cache's latent part through the producer
    warpgroup: steps 14-24, 26, 27 and 30; with the FP8 cache the default ``step`` builds 22, at s*h
    = 16 47 or 43, at h = 64 s = 1 from 128 sequences on 57). ``step`` applies to the seesaw
    schedule only. ``cuts`` (the work list of seesaw steps 11 and later, without ``splits``):
    ``auto`` (the default: ``costed`` wherever there is a work list; for the
    :data:`PAIR_MERGE_STEPS` ``pairs`` where the
    model charges it at most :data:`PAIR_SPARE_PAGES` more than ``costed``, :func:`pair_plan`),
    ``costed`` (:func:`costed_work_list`, parts filled up to one modelled cost, so a part that
    crosses sequence boundaries holds fewer pages; measured 8.5% faster at varlen B=32 and the same
    plan or faster elsewhere, the devlog "Session 10"), ``equal`` (step 11's :func:`work_list`,
    ranges of one page count, chosen by the cost model) or ``even`` (:func:`work_list` with the
    shortest ranges that fit, ceil(pages / parts): the busiest part as short as it can be, whatever
    the model says a cut costs; at h=128 (64, 4096) and (128, 4096), s=2 and h=64 (128, 4096) the
    model cuts nothing and 4 of 132 SMs idle, where FlashInfer deals its pages over all of them: the
    devlog, "Session 23"; 1.014-1.190x step 39's time on an H100 in session 24) or ``pairs``
    (:func:`pair_work_list`: sequence i halved onto parts 2i and 2i + 1, one cluster's two parts
    under the pair-merge steps (:data:`PAIR_MERGE_STEPS`), which then merge every sequence in
    its pair; it needs b <= parts / 2 and every sequence at least 2 pages long, else the plan is
    ``costed``, and the record's ``work_list.cuts`` says which ran; other steps merge the halves in
    the combine kernel); an explicit ``costed``, ``equal``, ``even`` or ``pairs`` without a work
    list is refused."""

    splits: int = 0
    loads: Literal["auto", "cpasync", "tma"] = "auto"
    schedule: Literal["auto", "lockstep", "seesaw"] = "auto"
    split_rule: Literal["equal", "balanced"] = "balanced"
    step: int = AUTO_STEP
    cuts: Literal["auto", "costed", "equal", "even", "pairs"] = "auto"

    def validate(self) -> None:
        check_cuts(self.cuts)
        if self.split_rule not in ("equal", "balanced"):
            raise ShapeError(f"split_rule must be equal or balanced (got {self.split_rule!r})")
        if self.step not in (
            AUTO_STEP, *BF16_STEPS, *FP8_STEPS, *Q_ON_N_STEPS, *Q_ON_N_FP8_STEPS,
            *Q_ON_N_FP8_H64_STEPS,
        ):  # fmt: skip
            raise ShapeError(
                f"step must be {AUTO_STEP} (the default: the fastest build measured for the "
                f"problem) or a seesaw step: {steps_text(BF16_STEPS)} for a 16-bit cache, "
                f"{steps_text(FP8_STEPS)} for the FP8 one, {steps_text(Q_ON_N_STEPS)} (the "
                f"query rows on WGMMA's N, s*h = 16 or 32) or {steps_text(Q_ON_N_FP8_STEPS)} "
                f"(the same with the FP8 cache, s*h = 16) or {steps_text(Q_ON_N_FP8_H64_STEPS)} "
                f"(the FP8 cache at s*h = 64, two warpgroups); got {self.step}. The lockstep "
                "schedule takes no step (--config schedule=lockstep)"
            )
        if self.schedule not in ("auto", "lockstep", "seesaw"):
            raise ShapeError(f"schedule must be auto, lockstep or seesaw (got {self.schedule!r})")
        if not 0 <= self.splits <= MAX_SPLITS:
            raise ShapeError(f"splits must be in 0..{MAX_SPLITS} (got {self.splits})")
        if self.loads not in ("auto", "cpasync", "tma"):
            raise ShapeError(f"loads must be auto, cpasync or tma (got {self.loads!r})")


class MlaDecodeSm90(KernelPlan):
    """MLA decode on Hopper: WGMMA, two math warpgroups, V as a transposed view of the K
    page in SMEM, online softmax in registers (see the module docstring)."""

    name: ClassVar[str] = "mla_decode_sm90"
    package: ClassVar[str] = "mla"
    workload = MLA_DECODE
    source: ClassVar[str | None] = None  # own code (kernel.py here), no upstream example
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    config_type = MlaSm90Config
    runtime_problem_fields: ClassVar[tuple[str, ...]] = (
        "b", "t", "varlen", "varlen_seed", "seqlens", "num_pages", "softmax_scale", "init",
    )  # fmt: skip
    description: ClassVar[str] = (
        "own CuTe DSL MLA decode for sm_90a: WGMMA, 2 math warpgroups, V = transposed K page "
        "in SMEM, split-KV with a PDL combine; default: the seesaw schedule (seesaw.py) with "
        f"TMA pages for 16-bit caches, step {BF16_DEFAULT_STEP} ({BF16_PAIR_STEP} where every "
        "cut sequence is a cluster pair), at s*h = 16 step 42 (q_on_n.py: the query rows on "
        "WGMMA's N, one warpgroup) and, for the FP8 cache, step 22 (a producer warpgroup "
        "dequantises the FP8 pages; at s*h = 16 step 47 with per_token scales, 43 with "
        "per_block ones: q_on_n_fp8.py, the e4m3 page converted in registers into WGMMA's A "
        "operand; at h=64 s=1 with per_token scales and b >= 128 step 57: q_on_n_fp8_h64.py, "
        "two warpgroups per page; its steps 49-56 are builds for comparison); "
        "schedule=lockstep: kernel.py"
    )

    def supports(self, problem: MlaDecodeProblem) -> None:
        p = problem
        if p.kv_fp8 and p.scale_block() < FP8_MIN_BLOCK:
            raise ShapeError(
                f"{self.name} takes --kv_block >= {FP8_MIN_BLOCK} with the FP8 cache (one scale "
                f"per 16-value vector; got --kv_block {p.scale_block()})"
            )
        if p.page != 64:
            raise ShapeError(f"{self.name} takes page size 64 only (got --page {p.page})")
        if p.d_latent != 512 or p.d_rope != 64:
            raise ShapeError(
                f"{self.name} takes d_latent 512 and d_rope 64 only "
                f"(got --d_latent {p.d_latent} --d_rope {p.d_rope})"
            )
        if p.h not in HEADS:
            raise ShapeError(
                f"{self.name} takes h in {{{', '.join(map(str, HEADS))}}} (got --h {p.h})"
            )
        if not 1 <= p.s <= 4:
            raise ShapeError(f"{self.name} takes s in 1..4 (got --s {p.s})")
        if p.dtype not in DTYPES:
            raise ShapeError(
                f"{self.name} takes dtype {' or '.join(DTYPES)} (got --dtype {p.dtype})"
            )
        if p.b * p.s * p.h * p.d_qk >= 2**31:
            raise ShapeError(f"{self.name} takes b*s*h*576 < 2**31 (32-bit offsets; got --b {p.b})")
        if p.pages_total() > MAX_PAGES:
            raise ShapeError(
                f"{self.name} takes at most {MAX_PAGES} cache pages (32-bit offsets; got "
                f"--num_pages {p.pages_total()})"
            )

    def supports_config(self, problem: MlaDecodeProblem, config: MlaSm90Config) -> None:
        schedule = self.schedule_for(problem, config)
        if problem.kv_fp8 and schedule == "lockstep" and config.loads == "tma":
            raise ShapeError(
                f"{self.name}: the FP8 latent cache's lockstep schedule takes --config "
                f"loads=cpasync or auto (got loads={config.loads}: a TMA of e4m3 bytes cannot "
                "land as 16-bit SMEM; --config schedule=seesaw dequantises in a producer "
                "warpgroup)"
            )
        m_tiles = _ceil(problem.s * problem.h, 64)
        if config.step in MULTICAST_STEPS and m_tiles % 2:
            raise ShapeError(
                f"{self.name}: step {config.step} loads each page once for the CTAs of two "
                f"64-row m-tiles and takes an even number of them, s*h a multiple of 128 (got "
                f"s={problem.s}, h={problem.h}: {m_tiles} m-tile{'s' if m_tiles > 1 else ''}; "
                "drop --config step for the default build)"
            )
        if config.step in Q_ON_N_STEPS and problem.s * problem.h not in Q_ON_N_ROWS:
            raise ShapeError(
                f"{self.name}: step {config.step} puts the s*h query rows on WGMMA's N and takes "
                f"s*h = {' or '.join(map(str, Q_ON_N_ROWS))} (got s={problem.s}, h={problem.h}: "
                f"drop --config step for the default build)"
            )
        if config.step in Q_ON_N_FP8_STEPS:
            # (the order makes each line's advice land: shape, cache, granularity, block)
            if problem.s * problem.h != 16:
                raise ShapeError(
                    f"{self.name}: step {config.step} puts the s*h query rows on WGMMA's N and "
                    f"takes s*h = 16 (got s={problem.s}, h={problem.h}: drop --config step for "
                    "the default build)"
                )
            if not problem.kv_fp8:
                raise ShapeError(
                    f"{self.name}: step {config.step} is an FP8 latent cache build (add "
                    f"--kv_dtype float8_e4m3fn, or take step {Q_ON_N_STEP} for a 16-bit cache)"
                )
            if config.step in PER_TOKEN_ONLY_STEPS and problem.kv_scale != "per_token":
                raise ShapeError(
                    f"{self.name}: step {config.step} folds the scale into P and takes --kv_scale "
                    f"per_token (got {problem.kv_scale}: use step {FP8_Q_ON_N_STEP} for "
                    f"per_block with --kv_block {FP8_Q_ON_N_MIN_BLOCK} or more)"
                )
            if problem.scale_block() < FP8_Q_ON_N_MIN_BLOCK:
                raise ShapeError(
                    f"{self.name}: step {config.step} takes a scale block of at least "
                    f"{FP8_Q_ON_N_MIN_BLOCK} columns (got --kv_block {problem.scale_block()}: "
                    f"use --kv_scale per_token or --kv_block {FP8_Q_ON_N_MIN_BLOCK})"
                )
        elif config.step in Q_ON_N_FP8_H64_STEPS:
            if problem.s * problem.h != 64:
                raise ShapeError(
                    f"{self.name}: step {config.step} puts the s*h query rows on WGMMA's N in two "
                    f"warpgroups and takes s*h = 64 (got s={problem.s}, h={problem.h}: drop "
                    "--config step for the default build, or at s*h = 16 take "
                    f"{steps_text(Q_ON_N_FP8_STEPS)})"
                )
            if not problem.kv_fp8:
                raise ShapeError(
                    f"{self.name}: step {config.step} is an FP8 latent cache build (add "
                    "--kv_dtype float8_e4m3fn, or drop --config step for a 16-bit cache)"
                )
            if problem.kv_scale != "per_token":
                raise ShapeError(
                    f"{self.name}: step {config.step} folds the scale into P and takes --kv_scale "
                    f"per_token (got {problem.kv_scale}: drop --config step for the default "
                    "build)"
                )
        elif problem.kv_fp8 and schedule == "seesaw":
            if config.step not in (AUTO_STEP, *FP8_STEPS):
                raise ShapeError(
                    f"{self.name}: the FP8 latent cache's seesaw builds are steps "
                    f"{steps_text(FP8_STEPS)} (got step={config.step}: drop --config step for the "
                    f"default, step {self.kernel_step(replace(config, step=AUTO_STEP), problem)} "
                    f"here, or at s*h = 16 take {steps_text(Q_ON_N_FP8_STEPS)}, at s*h = 64 "
                    f"{steps_text(Q_ON_N_FP8_H64_STEPS)})"
                )
            if config.splits:
                raise ShapeError(
                    f"{self.name}: the FP8 latent cache's seesaw build plans its own parts (the "
                    f"work list; got splits={config.splits}: drop --config splits, or add --config "
                    "schedule=lockstep)"
                )
        if config.step in (*Q_ON_N_FP8_STEPS, *Q_ON_N_FP8_H64_STEPS) and config.splits:
            raise ShapeError(
                f"{self.name}: step {config.step} walks the work list, which plans its own "
                f"parts (got splits={config.splits}: drop --config splits)"
            )
        if schedule == "seesaw" and config.loads == "cpasync":
            how = (
                "the e4m3 page, its scales and the rope part by TMA"
                if config.step in (*Q_ON_N_FP8_STEPS, *Q_ON_N_FP8_H64_STEPS)
                else "the 16-bit rope part by TMA, the FP8 latent part through its producer "
                "warpgroup"
                if problem.kv_fp8
                else "pages by TMA"
            )
            # (a named step is a seesaw build: lockstep would refuse the step in turn)
            fix = (
                "drop --config loads"
                if config.step != AUTO_STEP
                else "use --config schedule=lockstep for cp.async pages"
            )
            raise ShapeError(
                f"{self.name}: the seesaw schedule loads {how} (got loads=cpasync: {fix})"
            )
        if schedule == "lockstep" and config.step != AUTO_STEP:
            raise ShapeError(
                f"{self.name}: --config step applies to the seesaw schedule (got step="
                f"{config.step} with schedule={schedule}: use --config schedule=seesaw)"
            )
        if not problem.kv_fp8 and config.step in FP8_STEPS:
            raise ShapeError(
                f"{self.name}: step {config.step} is an FP8 latent cache build (add --kv_dtype "
                f"float8_e4m3fn, or take step {steps_text(BF16_STEPS)} for a 16-bit cache)"
            )
        if schedule == "seesaw" and config.splits and config.step > WORK_LIST_STEP:
            raise ShapeError(
                f"{self.name}: step {config.step} walks the work list, which plans its own parts "
                f"(got splits={config.splits}: drop --config splits, or take step=9 for the "
                "per-sequence splits)"
            )
        if config.cuts != "auto" and (
            schedule != "seesaw" or self.kernel_step(config, problem) < 11
        ):
            if schedule != "seesaw":
                why = f"schedule={schedule}"
            elif config.splits:
                why = f"splits={config.splits}, which builds step 9's per-sequence splits"
            else:
                why = f"step {self.kernel_step(config, problem)}"
            raise ShapeError(
                f"{self.name}: --config cuts applies to the work list (seesaw step 11 and later, "
                f"without splits; got cuts={config.cuts} with {why}: drop --config cuts)"
            )
        cap = split_cap(problem)
        if config.splits > cap:
            raise ShapeError(
                f"{self.name}: splits {config.splits} exceeds this problem's workspace "
                f"(at most {cap} split{'s' if cap > 1 else ''})"
            )

    def tensor_specs(self, problem: MlaDecodeProblem) -> dict[str, TensorSpec]:
        """The workload's tensors (with the FP8 cache: kv_cache e4m3 (pages, 64, 512),
        kv_scales fp32 (pages, 64, G), kv_rope (pages, 64, 64)), each with a dynamic layout
        (leading_dim = last mode): one compile per (s, h, causal, dtype, kv format, split or
        not); plus the split workspace (fp32 partial O and LSE for :func:`split_cap` splits;
        zeroed once, written before read), the counters of steps 10 and 35 and step 11's
        work list."""
        p = problem
        specs = dict(self.workload.tensor_specs(p))
        cap = split_cap(p)
        specs["o_acc"] = TensorSpec(
            (cap, p.b, p.s, p.h, p.d_latent), "float32", role="scratch", init="empty"
        )
        specs["lse_acc"] = TensorSpec((cap, p.b, p.s, p.h), "float32", role="scratch", init="empty")
        # the arrival counters per (sequence, m-tile) of seesaw steps 10 and 35: zero once,
        # and the last CTA (step 10) or the last merging warp (step 35) of each resets its
        # counter, so every launch finds them zero
        specs["split_count"] = TensorSpec((p.b, _ceil(p.s * p.h, 64)), "int32", init="zeros")
        # the seesaw step 11's work list (WorkList.rows), filled at bind by the plan's setup
        specs["work"] = TensorSpec((work_rows(p.b), 4), "int32", init="zeros")
        for n, s in specs.items():
            specs[n] = TensorSpec(
                s.shape, s.dtype, perm=s.perm, role=s.role, init=s.init, scale=s.scale,
                leading_dim=len(s.shape) - 1, align=16,
            )  # fmt: skip
        return specs

    def build_label(
        self, problem: MlaDecodeProblem, config: MlaSm90Config, target: Target | None = None
    ) -> str:
        """The schedule and step a call builds (the default ``step=0`` builds 86, or 87 where its
        plan makes every cut sequence a cluster pair, 42 at s*h = 16, 22 with the FP8 cache (47
        or 43 at s*h = 16), and 9 with an explicit split count), e.g.
        ``seesaw step 22 (FP8 cache: producer warpgroup)`` or ``lockstep schedule, cpasync
        pages``."""
        fp8 = " (FP8 cache: producer warpgroup)" if problem.kv_fp8 else ""
        if self.schedule_for(problem, config) == "lockstep":
            how = ", FP8 dequantised by the math warpgroups" if problem.kv_fp8 else ""
            return f"lockstep schedule, {self.loads_for(config)} pages{how}"
        sms = (target.sm_count if target else None) or 132
        step = self.kernel_step(config, problem, sms)
        if step in Q_ON_N_FP8_H64_STEPS:
            k_how = (
                "K straight from SMEM by FP8 WGMMA (Q in two e4m3 terms; outside the LSE "
                "tolerance on one-token sequences), V by F2FP to fp16"
                if step == 53
                else "K and V by F2FP to fp16"
            )
            how = {
                50: ", K addressed by offset",
                51: ", K addressed by offset, S^T in 2 accumulators",
                52: ", K addressed by offset, S^T in 2 accumulators, a page's O^T overlapped "
                "with the next page's S^T",
                53: "",
                54: ", K addressed by offset, Q by 16-byte loads",
                55: ", K and V addressed by offset, Q by 16-byte loads",
                56: ", K and V addressed by offset, Q by 16-byte loads, the partials of S^T "
                "added through SMEM",
                57: ", K and V addressed by offset, Q by 16-byte loads, the partials of S^T "
                "added through SMEM, no CTA barrier at a page's end",
            }.get(step, "")
            cut = "K's latent columns" if step >= 56 else "query rows"
            return (
                f"step {step} (FP8 cache at s*h = 64: query rows on WGMMA's N, two warpgroups on "
                f"each page, S^T split by {cut} and O^T by latent rows, {k_how} in the "
                f"register A operand{how}, {fp8_q_on_n_stages(step)} stages, "
                f"{ctas_per_sm(step)} CTA per SM)"
            )
        if step in Q_ON_N_FP8_STEPS:
            how = {
                45: "V by F2FP to fp16, K bit-placed",
                46: "K and V by F2FP to fp16",
                47: "K and V by F2FP to fp16, page index fetched a page early",
                48: "K and V by F2FP to fp16, page index fetched a page early, stage released "
                "before the last O^T WGMMAs",
            }.get(step, "bit-placed")
            return (
                f"step {step} (FP8 cache: query rows on WGMMA's N, e4m3 dequantised into the "
                f"register A operand, {how}, {fp8_q_on_n_stages(step)} stages, "
                f"{ctas_per_sm(step)} CTA(s) per SM)"
            )
        if step in Q_ON_N_STEPS:
            n_accs = st_accumulators(step, problem.s * problem.h)
            accs = f", S^T in {n_accs} accumulators" if n_accs > 1 else ""
            return f"step {step} (query rows on WGMMA's N, one warpgroup, work list{accs})"
        if crossover_built(step, problem.kv_fp8, _ceil(problem.s * problem.h, 64)):
            fp8 = " (FP8 cache: producer warpgroups in clusters of 2, the crossover)"
        elif problem.kv_fp8 and step == 26:
            fp8 = " (FP8 cache: m-tiles do not pair up, so step 22's code, no crossover)"
        note = ""
        if step >= WORK_LIST_STEP and not config.splits and not problem.kv_fp8:
            work = step_work(problem, step, config.cuts, sms)
            if config.cuts == "pairs" and pair_work_list(_pages(problem), work.parts) is None:
                note = " (cuts=pairs: no pair plan for this problem, so costed cuts)"
            elif step in PAIR_MERGE_STEPS and not any(work.paired):
                note = " (no sequence is a cluster pair here: clusters without the merge)"
        return f"seesaw step {step}{fp8}{note}"

    @staticmethod
    def schedule_for(problem: MlaDecodeProblem, config: MlaSm90Config) -> str:
        """The schedule a call builds: ``auto`` is seesaw, for either cache."""
        return "seesaw" if config.schedule == "auto" else config.schedule

    @staticmethod
    def loads_for(config: MlaSm90Config) -> str:
        """The lockstep schedule's page loads: ``auto`` is cp.async."""
        return "cpasync" if config.loads == "auto" else config.loads

    def splits_for(self, problem: MlaDecodeProblem, config: MlaSm90Config, target: Target) -> int:
        return self.split_plan(problem, config, target)[0]

    def split_plan(
        self, problem: MlaDecodeProblem, config: MlaSm90Config, target: Target
    ) -> tuple[int, int]:
        """(num_splits, pages_per_split) of one call; pages_per_split 0 = equal parts of each
        sequence (the kernel's ``split_range``)."""
        if config.splits:
            return min(config.splits, equal_cap(problem)), 0
        if config.split_rule == "balanced" and _unequal(problem):
            return choose_balanced(problem, target.sm_count or 132)
        return choose_splits(problem, target.sm_count or 132), 0

    @staticmethod
    def kernel_step(
        config: MlaSm90Config, problem: MlaDecodeProblem | None = None, sm_count: int = 132
    ) -> int:
        """The seesaw step built for ``config``: its ``step``, except that the default (0) and
        step 11 with an explicit ``splits`` build step 9 (the work list plans its own parts; a
        split count asks for the per-sequence splits; a later work-list step with one is refused
        by :meth:`supports_config`), that the default builds :data:`Q_ON_N_STEP` (42) at s*h =
        16, :data:`BF16_PAIR_STEP` (87) where its plan on ``sm_count`` SMs makes every cut
        sequence a cluster pair (:func:`pairs_everywhere`) and :data:`BF16_DEFAULT_STEP` (86)
        elsewhere, and that the FP8 cache
        (``problem.kv_fp8``) builds the step asked among 14-24, 26, 27, 30 and 43-57, else
        :data:`FP8_Q_ON_N_PER_TOKEN_STEP` (47) at s*h = 16 with per_token scales,
        :data:`FP8_Q_ON_N_STEP` (43) there with per_block scales of at least 128 columns,
        :data:`FP8_Q_ON_N_H64_STEP` (57) at h = 64, s = 1 with per_token scales and at least
        :data:`FP8_Q_ON_N_H64_MIN_BATCH` (128) sequences, and :data:`FP8_STEP` (22) elsewhere
        (and with an explicit ``splits``). Without ``problem`` the default resolves as for
        s*h > 16 and a 16-bit cache."""
        if problem is not None and problem.kv_fp8:
            if config.step in (*FP8_STEPS, *Q_ON_N_FP8_STEPS, *Q_ON_N_FP8_H64_STEPS):
                return config.step
            if config.splits:
                return FP8_STEP
            sh = problem.s * problem.h
            if sh == 16 and problem.scale_block() >= FP8_Q_ON_N_MIN_BLOCK:
                if problem.kv_scale == "per_token":
                    return FP8_Q_ON_N_PER_TOKEN_STEP
                return FP8_Q_ON_N_STEP
            if (
                problem.s == 1
                and problem.h == 64
                and problem.kv_scale == "per_token"
                and problem.b >= FP8_Q_ON_N_H64_MIN_BATCH
            ):
                return FP8_Q_ON_N_H64_STEP
            return FP8_STEP
        if config.splits and config.step in (AUTO_STEP, WORK_LIST_STEP):
            return 9
        if config.step == AUTO_STEP:
            if problem is not None and problem.s * problem.h == 16:
                return Q_ON_N_STEP
            if problem is not None and pairs_everywhere(
                step_work(problem, BF16_PAIR_STEP, config.cuts, sm_count)
            ):
                return BF16_PAIR_STEP
            return BF16_DEFAULT_STEP
        return config.step

    def plan(self, problem: MlaDecodeProblem, config: MlaSm90Config, target: Target) -> CuteKernel:
        import cutlass

        from .kernel import MlaDecodeSm90Kernel

        p = problem
        dt = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}[p.dtype]
        schedule = self.schedule_for(p, config)
        built = self.kernel_step(config, p, target.sm_count or 132)
        if schedule == "seesaw" and built in Q_ON_N_FP8_H64_STEPS:
            from .q_on_n_fp8_h64 import MlaDecodeSm90QOnNFp8H64

            k = MlaDecodeSm90QOnNFp8H64(
                p.s, p.h, bool(p.causal), dt, step=built, scale_block=p.scale_block()
            )
        elif schedule == "seesaw" and built in Q_ON_N_FP8_STEPS:
            from .q_on_n_fp8 import MlaDecodeSm90QOnNFp8

            k = MlaDecodeSm90QOnNFp8(
                p.s, p.h, bool(p.causal), dt, step=built, scale_block=p.scale_block()
            )
        elif schedule == "seesaw" and built in Q_ON_N_STEPS:
            from .q_on_n import MlaDecodeSm90QOnN

            k = MlaDecodeSm90QOnN(p.s, p.h, bool(p.causal), dt, step=built)
        elif schedule == "seesaw":
            from .seesaw import MlaDecodeSm90Seesaw

            k = MlaDecodeSm90Seesaw(
                p.s, p.h, bool(p.causal), dt, step=built, kv_fp8=p.kv_fp8,
                scale_block=p.scale_block() if p.kv_fp8 else p.d_latent,
            )  # fmt: skip
        else:
            k = MlaDecodeSm90Kernel(
                p.s, p.h, bool(p.causal), dt, loads=self.loads_for(config), kv_fp8=p.kv_fp8,
                scale_block=p.scale_block() if p.kv_fp8 else p.d_latent,
            )  # fmt: skip
        splits, per = self.split_plan(p, config, target)
        work = None
        step = built if schedule == "seesaw" else None
        if schedule == "seesaw" and step >= 11:
            work = step_work(p, step, config.cuts, target.sm_count or 132)
            cuts = config.cuts if config.cuts in ("equal", "even") else "costed"
            halves = pair_work_list(_pages(p), work.parts)
            asked = config.cuts == "pairs" or (step in PAIR_MERGE_STEPS and config.cuts == "auto")
            if asked and halves is not None and work.segments == halves.segments:
                cuts = "pairs"
            splits, per = work.parts, work.per
            if step in (*MERGE_IN_KERNEL_STEPS, *OWNER_MERGE_STEPS):
                _grid_fits_at_once(self.name, step, work.parts * _ceil(p.s * p.h, 64))
            if step in OWNER_MERGE_STEPS:
                _first_pieces_last(self.name, step, work)
        # the FP8 cache's scales and rope part; the 16-bit path passes its cache in their
        # places (unused: the compile-time kv_fp8 leaves them out of the code)
        extra = ("kv_scales", "kv_rope") if p.kv_fp8 else ("kv_cache", "kv_cache")
        kv = p.dtype
        if p.kv_fp8:
            kv = f"float8_e4m3fn {p.kv_scale} (scale block {p.scale_block()}), dequantised on chip"
            if step in (*Q_ON_N_FP8_STEPS, *Q_ON_N_FP8_H64_STEPS):
                kv += " into the WGMMA register A operand"
            elif schedule == "seesaw":
                kv += " by a producer warpgroup"
        # whether any sequence is in more than one piece (with the work list) or split; for
        # step 62 whether any such sequence is left to the combine kernel
        split = max(work.pieces, default=0) > 1 if work else splits > 1
        pairs = sum(work.paired) if work else 0
        if pairs:
            left = zip(work.pieces, work.paired, strict=True)
            split = any(n > 1 and not both for n, both in left)
            combine = "cluster pairs (dsmem)" + (" + pdl" if split else "")
        elif not split:
            combine = None
        elif step == 10:
            combine = "last CTA"
        elif step in MERGE_IN_KERNEL_STEPS:
            combine = "in kernel"
        elif step in OWNER_MERGE_STEPS:
            combine = "first piece's CTA"
        else:
            combine = "pdl"
        return CuteKernel(
            self.name,
            k,
            lambda t: (
                t["q"],
                t["kv_cache"],
                t["page_table"],
                t["seqlens"],
                t["o"],
                t["lse"],
                t["o_acc"],
                t["lse_acc"],
                t[extra[0]],
                t[extra[1]],
                t["split_count"],
                t["work"],
                cutlass.Float32(p.scale()),
                cutlass.Int32(splits),
                cutlass.Int32(per),
                Const(split),
                STREAM,
            ),  # fmt: skip
            self.tensor_specs(p),
            setup=None if work is None else _fill_work(work),
            meta={
                "split_kv": splits,
                "split_rule": "work list"
                if work
                else ("config" if config.splits else ("balanced" if per else "choose_splits")),
                "work_list": None
                if work is None
                else {
                    "parts": work.parts,
                    "cuts": cuts,
                    "pages_per_part": work.per,
                    "segments": len(work.segments),
                    "sequences_split": sum(n > 1 for n in work.pieces),
                    "max_pieces": max(work.pieces, default=0),
                    "sequences_paired": sum(work.paired),
                },
                "pages_per_split": per or None,
                "kv_load": "tma (e4m3, scales, rope) + dequant into registers"
                if step in (*Q_ON_N_FP8_STEPS, *Q_ON_N_FP8_H64_STEPS)
                else "ldg + dequant (producer warpgroup), rope by tma"
                if p.kv_fp8 and schedule == "seesaw"
                else "tma"
                if schedule == "seesaw" or self.loads_for(config) == "tma"
                else "cp.async",
                "schedule": schedule,
                "seesaw_step": step,
                "math_warpgroups": 1 if step in (*Q_ON_N_STEPS, *Q_ON_N_FP8_STEPS) else 2,
                "query_rows_on": "N"
                if step in (*Q_ON_N_STEPS, *Q_ON_N_FP8_STEPS, *Q_ON_N_FP8_H64_STEPS)
                else "M",
                "ctas_per_sm": ctas_per_sm(step) if work else None,
                # step 42: S^T's k-blocks spread over this many accumulators
                "st_accumulators": getattr(k, "s_accs", None),
                # step 14: a third warpgroup dequantises the FP8 pages into the stages
                "producer_warpgroup": bool(
                    p.kv_fp8
                    and schedule == "seesaw"
                    and step not in (*Q_ON_N_FP8_STEPS, *Q_ON_N_FP8_H64_STEPS)
                ),
                # step 26: the m-tile pairs as clusters of 2, each producer one group per page
                "crossover": bool(getattr(k, "crossover", False)),
                "combine": combine,
                "kv_cache": kv,
            },
        )
