"""MLA decode for Hopper (sm_90a), step 4: the seesaw schedule (``--config schedule=seesaw``).

Why (step 2's profile, knowledge/kernels/mla-decode-sm90.md): both warpgroups ran the same
phase at the same time (QK, then softmax, then PV, with three CTA barriers per page), so the
tensor pipe idled whenever the softmax ran: 43% tensor-pipe activity at B=32 T=4096 against
FlashInfer's 52%. O (64 x 512 fp32) fills half the register file, so FlashAttention-3's
ping-pong between two warpgroups that each own a whole O is impossible. FlashMLA's answer (the
"seesaw" schedule, deepseek-ai/FlashMLA ``docs/20250422-new-kernel-deep-dive.md``, steps 0-11)
keeps one O split by columns, O_L in warpgroup 0 and O_R in warpgroup 1, and lets each
warpgroup own a whole page of S at a time: pages come in pairs (K0 in stage 0, K1 in stage 1)
and the running row max m is handed from one warpgroup to the other, so that one warpgroup's
softmax runs while the other's WGMMAs do. This module is our implementation of that schedule
in the CuTe DSL (own code; the algorithm and the per-chunk TMA are FlashMLA's, the SMEM plan
below is ours).

Per pair of pages (K0 = page 2i, K1 = page 2i+1), with named barriers between the warpgroups::

    WG0                                         WG1
    S0 = Q K0^T (SMEM x SMEM)                   S1 = Q K1^T
    m0 = max(m, rowmax S0); publish m0 -------> wait m0; m1 = max(m0, rowmax S1)
    P0 = exp2(S0 - m0); O_L = O_L*sc0           publish m1 ------+
    O_L += P0 V0L   (P0 from registers)         P1 = exp2(S1 - m1); O_R = O_R*sc0*sc1
    wait m1 <------------------------------------+               O_R += P1 V1R (P1 in registers)
    P0 *= sc1 -> SMEM; publish P0 --------+     P1 -> SMEM; publish P1 ---+
    wait PV; O_L *= sc1                   |                               |
    wait P1 <-----------------------------|-------------------------------+
    O_L += P1 V1L  (P1 from SMEM)         +---> wait P0; O_R += P0 V0R (P0 from SMEM)

with sc0 = exp2(m - m0), sc1 = exp2(m0 - m1) (m in the log2 domain, already scaled). The row
sums: each warpgroup keeps the sum of its own P's, relative to the current m; they meet in SMEM
at the end.

SMEM: Q (72 KB) + two pages (144 KB) = 216 KB leaves no room for two 8 KB P tiles (227 KB per
CTA). FlashMLA keeps Q's last 64 columns in registers to make room. Here P goes where the
page's rope columns were: chunk 8 (columns 512..575) of a page is read only by Q K^T, and a
64 x 64 chunk of the 128-byte-swizzled page has exactly the layout of a 64 x 64 P tile as a
K-major WGMMA operand. So P0 is written over chunk 8 of stage 0 once S0 is done, P1 over chunk 8
of stage 1. No register Q, no extra SMEM: 222 KB in all.

Loads (TMA, 9 boxes of 64 tokens x 64 columns per page, one mbarrier per (stage, chunk), as in
step 3; FlashMLA's "fine-grained TMA copy - GEMM pipelining"): a chunk of the next page is
loaded as soon as the last reader of that chunk of the stage is done, by that reader:
    stage 0, chunks 0-3 (V0L): WG0 after its PV0L;   chunks 4-8 (V0R, P0): WG1 after its PV0R;
    stage 1, chunks 4-7 (V1R): WG1 after its PV1R;   chunks 0-3, 8 (V1L, P1): WG0 after PV1L.
A chunk is reloaded only after every wait on its current phase and every read of it: for the
issuer's own reads by its PV wait and a warpgroup barrier, for the other warpgroup's (its QK
on that stage) by BAR_P0 (stage 0) or BAR_P1 (stage 1), which each warpgroup arrives on only
after its QK has completed. So no waiter is ever a phase late, and these two barriers carry that
proof as well as the P hand-off: they must stay unconditional and after the QK waits (a review
of the protocol: results/logs/2026-12-01-seesaw-sync-review.md). No CTA barrier inside the
loop.

NaN tails: the TMA brings whole pages, so slots past a sequence's end (NaN in the check) reach
SMEM. S of those tokens is selected to -inf, and each warpgroup zeroes its own V half of the
tail rows before its first PV on that stage (stores, fence.proxy.async, a warpgroup barrier),
so P = 0 meets V = 0. An odd page count: the last pair has no K1 (WG1 contributes no keys).

Everything else is the base kernel's (:mod:`.kernel`): the query-row packing, the SMEM
layouts, the Q load, split-KV (equal parts or the balanced rule) and the PDL combine, the
causal limits for s > 1, the epilogue.

The schedule above is step 4; the compile-time ``step`` (:data:`STEPS`, ``--config step=N``)
builds each later step for before/after runs in one process: 5 reads the next pair's page
indices early, 6 stores P with stmatrix, 7 marks page loads evict-first, 8 batches the combine's
reads, 9 is 8 without 5, 10 is 9 with the combine merged into the split kernel's last CTA per
(sequence, m-tile), 11 is 9 with a host-planned work list (the pages of all sequences end to end
cut into one part per SM and m-tile; each CTA walks its part's segments, FlashMLA's tile
scheduler idea; :class:`.mla_decode_sm90.WorkList`; the default until session 21), 12 is 11
with the next segment's first two pages loaded during the current one's last pairs, 13 is 11
with the combine merging 2 pieces per round, not 4, 25 is 11 with an L2 prefetch stream of the
pair after next, 28 is 11 loading the next segment's Q in the current one's last pair, 29 is 28 with
12's early pages, 31 is 11 with WG0's next S0 issued right behind its PV1L (FlashMLA's order)
and 32 is 31 with PV1L queued after WG1's PV0R; 33 is 11 with WG1's S1 taking its page's
chunks in their release order, 4-7 (its own) before 0-3 and 8 (WG0's, released last)
(:func:`release_order_chunk`; the 16-bit default in session 21), 34 is 33 with 16-bit
partials, 35 merges the cut sequences in the split kernel (one row per warp), 36 is 33 with the
combine's 16-byte split loads, 37 is 35 with 4 rows per warp, and 38 is 36 with the combine's
first partial-O loads issued before its LSE reads (one round trip), and 39 is 33 with WG1
reloading stage 1's chunks 4-7 right after its PV1R retires (the 16-bit default in sessions
22-23), 58 (the next free number) is 39 with combine CTAs of 2 warps, small enough to be
resident beside a split CTA, and 59 is 39 with no combine kernel: the CTA of a cut sequence's
first piece (its part's last segment) merges the other pieces into its own partial O, still in
registers, 60 is 59 with that merge in one pass (each piece's LSE and O loaded together), and
61 is 39 with a lean combine: 2 pieces per round, 16-byte loads and one round trip (13, 36 and
38 together), 62 merges a sequence cut into one cluster's two parts through distributed
shared memory, 63 is 61 with the CTAs of two m-tiles a cluster that loads each page chunk
once for both (multicast TMA, issued by whichever CTA frees the chunk group second:
:meth:`MlaDecodeSm90Seesaw.load_group`), and 64 is 61 with warpgroup 0 reloading stage 0's
chunks 0-3 as soon as its PV0L retires (before it takes warpgroup 1's row max); 65 is 61 with
31's order, 66 traces each math warpgroup's code with its index a constant, 67 (the 16-bit
default in session 29) is 61 masking S only on the pages that reach past the tile's lowest key
limit, 68 is 62 with that mask, 70 is 67 storing a whole sequence's O through SMEM in 16-byte rows
(:meth:`.kernel.MlaDecodeSm90Kernel.store_o_through_smem`), 71 is 68 storing each pair's
merged O so, 72 and 73 are 70 without warpgroup 1's second wait for V0R before PV0R (72) or
warpgroup 0's for V1L before PV1L (73), 74 is 70 with warpgroup 1 storing P1 before it
issues PV1R, 75 is 71 without warpgroup 1's V0R re-wait (72's change), 76 and 77 are 72 and 75
re-waiting on two and one of V1L's four chunks, 78 and 79 are 72 and 75 issuing Q's cp.async
before the first pages' TMAs (the 16-bit defaults in session 33), 80 is 72 launched as a
programmatic dependent (78-80 built in session 31), 81 and 82 are 72 and 75 launched so and
triggering the next grid's launch at their start, 83 and 84 are 81 and 82 issuing Q first, and
85 is 72 with Q's rope columns in registers, the A operand of S's rope k-blocks (81-85 built in
session 32; 78-85 run in session 33: 80 and 85 neutral, the early trigger of 81-84 1-3% slower
at the h=128 rows where nothing is cut), 86 and 87 are 78 and 79 with the running row max
kept unless a page's max passes it by more than 8 in log2 units (a factor of 2^8 in P) and
warpgroup 0's second O_L rescale skipped by a warp vote where no row's max moved
(FlashAttention-4's conditional rescaling; the 16-bit defaults since session 34: 0.980-0.995x
78's and 79's time per round at h=128 on an H100), and 88 is 86 with each warpgroup's first
O rescale under the vote too (ptxas then serializes every WGMMA; built to show it, not
timed).
Steps 14-24, 26, 27 and 30 take the FP8 latent cache (and it only them):
14 is 11 with a third, producer warpgroup that dequantises each page into the 16-bit stages
(:meth:`MlaDecodeSm90Seesaw.fp8_producer`), 15 dequantises by bit placement
(:func:`e4m3x4_to_16bit`), 16 fills in release order, 17 is 15 with one group in flight in the
producer's registers, 18 is 17 with setmaxnreg 216 / 72, 19 is 18 publishing each chunk as it is
written, 20 is 18 prefetching the pages into L2 two ahead, 21 is 19 with that prefetch, 22 is 20
with each prefetch's page index read a page early (the FP8 default), 23 is 22 four pages ahead,
24 is 22 reloading the next group vector by vector, 26 is 22 with the crossover (clusters of 2
at h=128), 27 is 22 with whole-sector loads, 30 is 22 reading the next page index two pages
ahead. Their protocol: a
stage group (chunks 4w..4w+3, with chunk 8 where w != stage) is released by the warpgroup
that reads it last, after its wait_group and warpgroup barrier (the other warpgroup's QK
reads of the stage are proven done by BAR_P0 / BAR_P1, as for the TMA reloads); the
producer's k-th fill of a stage waits for release phase k - 1, so a release can never run two
phases ahead (releasing fill k needs fill k), and groups are disjoint 8 KB chunks, so writing
one while another is read is safe. The producer's stores are published by fence.proxy.async
in every writing thread, its 128-thread barrier and one arrive on each chunk's mbarrier.
Line-by-line review: results/logs/2026-12-01-fp8-producer-sync-review.md. Each step's measured
effect is in the devlog (knowledge/kernels/mla-decode-sm90.md).
"""

from __future__ import annotations

from typing import Optional

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass._mlir.dialects import llvm
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import T, dsl_user_op
from cutlass.experimental.primitives.nvvm_wrapper import cp_async_bulk_prefetch

from .kernel import (
    CHUNK,
    CHUNK_BYTES,
    D_ROPE,
    D_V,
    FP8_VEC,
    LN_2,
    LOG2_E,
    N_CHUNKS,
    NUM_WG,
    PAGE,
    THREADS,
    TILE_M,
    MlaDecodeSm90Kernel,
    _mn_view,
)
from .mla_decode_sm90 import (
    BF16_DEFAULT_STEP,
    FP8_STEPS,
    MERGE_IN_KERNEL_STEPS,
    MULTICAST_STEPS,
    OWNER_MERGE_STEPS,
    PAIR_MERGE_STEPS,
    PARTS_CAP,
    STEP_LINE,
    crossover_built,
    step_changes,
)

STAGES = 2  # K0 and K1
WG_THREADS = 128
HALF_V = D_V // NUM_WG  # 256 output columns per warpgroup
#: named barriers (0 is the CTA barrier): the hand-offs of one pair of pages, and one per
#: warpgroup for its own SMEM stores before its WGMMAs
BAR_M0, BAR_M1, BAR_P0, BAR_P1 = 1, 2, 3, 4
BAR_WG = (5, 6)
#: step 32: "WG1 has issued its PV0R" (WG0 issues PV1L after it); 8, as 7 is step 14's
#: producer's and 9 the math warpgroups' beside a producer
BAR_V0R = 8
#: steps 86 and 87: the running row max (log2 domain, scaled) is kept while a page's row max
#: exceeds it by at most this much, so P = exp2(S - m) <= 2^8 (FlashAttention-4's threshold
#: for 16-bit P)
RESCALE_SKIP_LOG2 = 8.0
#: chunk ranges (compile time): V's left half, V's right half, the rope chunk (= P's place)
V_L = (0, 4)
V_R = (4, 8)
P_CHUNK = 8
#: the devlog steps of this schedule that can be built (for before/after runs in one process):
#: 4 as first measured; 5 reads the next pair's page indices at the top of a pair (off the TMA
#: issue path); 6 also stores P with stmatrix (STSM) instead of one 16-bit store per value;
#: 7 also marks the page loads evict-first in L2 (each page is read by at most the CTAs of one
#: (sequence, split), close together in time; Q and the split workspace should stay)
#: 8 also lets the combine read 4 splits' partial O per round (loads in flight together);
#: 9 is 8 without step 5's early page-index reads (step 5 measured 0-3% slower on the H200):
#: the default, measured 0-3% faster than 8 on the H200 in one alternated run
#: (results/logs/2026-12-01-h200-session4/mla-sm90-steps/table.log; devlog
#: knowledge/kernels/mla-decode-sm90.md)
#: 10 is 9 without the combine kernel: the last CTA of a (sequence, m-tile) to finish merges
#: the splits in registers (MlaDecodeSm90Kernel.merge_splits); measured slower in session 4
#: 11 is 9 with a work list (mla_decode_sm90.WorkList, planned on the host): the pages of all
#: sequences end to end cut into one equal range per CTA and m-tile, so a CTA may walk the end
#: of one sequence and the start of the next (FlashMLA's tile scheduler); only the sequences
#: that a cut crosses go through the combine
#: 14 is 11 for the FP8 latent cache: a third warpgroup (the producer) loads each page's e4m3
#: latent part into registers a page ahead, dequantises it into the 16-bit stage once the
#: stage's readers have released it (an "empty" mbarrier per stage and releasing warpgroup)
#: and publishes it on the stage's chunk mbarriers; the rope part comes by TMA as before
#: 15 is 14 with the e4m3 values dequantised by bit placement (:func:`e4m3x4_to_16bit`):
#: integer and 16-bit-multiply instructions instead of three conversions per value (step 14's
#: producer took 2x the bf16 time, converting on the SM's conversion units alone)
#: 16 is 15 with the producer filling a pair's groups in the order the math warpgroups
#: release them, K1's chunks 4-7 released by WG1 right after its PV1R
#: 17 is 15 (not 16) with one group in flight in the producer's registers instead of two
#: 18 is 17 with setmaxnreg 216 / 72 (:data:`REG_SPLITS`); 19 is 18 publishing each chunk as
#: it is written (4 barriers and arrives per group, not 1), so the QK k-blocks of a chunk can
#: start while the producer converts the next
#: 20 is 18 with the producer's pages prefetched into L2 (one cp.async.bulk.prefetch.L2 per
#: page's e4m3 part and one per its scales, issued by one thread :data:`FP8_L2_AHEAD` pages
#: before the producer's loads): the loads that the producer waits for hit L2, and the HBM
#: reads of the next pages run while it converts (step 15's ncu: long_scoreboard the top
#: stall; the devlog); 21 is 19 with the same prefetch
#: 22 is 20 with the page index of each prefetch read one page earlier (step 20's ncu source
#: page, session 7, whose record did not survive: the prefetch consumed its page-table load
#: at once, and the producer's thread 0 waited for it at every page); 23 is 22 with the
#: prefetch FP8_L2_AHEAD_FAR pages ahead
#: 24 is 22 with a rolling reload: the producer loads vector j of the next group into the
#: registers of vector j right after converting it (the next group's scales at the start of
#: the group, into a second scale set), not the whole next group after the group's stores, so
#: each load has a whole group's conversion to land in instead of none (the same 32 registers
#: of e4m3 values; steps 17-23 wait for the next group's loads at its first conversion)
#: 25 (the 16-bit cache) is 11 with an L2 prefetch stream: warp 0 prefetches the pages of the
#: pair after next (:data:`BF16_L2_AHEAD` pages past the pair being computed) by TMA prefetch,
#: their page indices read a pair earlier (step 22's lesson), so that the page TMAs a stage's
#: release issues find their lines in L2 (steps 20-22 took 3.5-4.3% off the FP8 producer so)
#: 26 (the FP8 cache) is 22 with FlashMLA's crossover where the m-tiles come in pairs (h=128,
#: or s x h = 128): the two CTAs of a sequence's m-tiles run as a cluster of 2, and the
#: producer of CTA r dequantises only group r of every page (latent columns 256r..256r+255),
#: storing it into its own stage and, by st.async, into its peer's, so each producer does
#: half the conversions (deepseek-ai/FlashMLA docs/20250929-hopper-fp8-sparse-deep-dive.md,
#: "Crossover"); each CTA loads its own rope chunk by TMA
#: 27 (the FP8 cache) is 22 with whole-sector producer loads: the two threads of a token read
#: adjacent 16-byte vectors (one 32-byte sector), where steps 14-26 read vectors 2 apart, so
#: each LDG.128 of a warp asked for 32 sectors and used half of each (step 22's ncu source
#: page, session 9: 127100 of the producer's 257177 L2 sectors per SM "excessive"); the
#: tokens of a store phase become rows r, r + 4, r + 1, r + 5 (:meth:`fp8_token`) so that its
#: 8 STS.128 still hit 8 distinct bank groups under the 128-byte swizzle
#: 28 (the 16-bit cache) is 11 with the next segment's Q loaded early: each math warpgroup
#: issues its threads' cp.async of the part's next Q tile as soon as both warpgroups' last QK
#: of the segment has read sQ (WG0 after BAR_P1, WG1 after BAR_P0 of the last pair), so the
#: 73.7 KB load runs under the last PVs and the epilogue instead of after them (step 12's
#: varlen ncu, session 5: a segment costs about 4.5 us once its pages are already loading,
#: and Q, waited for in full, is part of it); 29 is 28 with step 12's early pages too
#: 30 (the FP8 cache) is 22 with the producer's next page index read a page earlier: during
#: page pg it reads the index of pg + 2 into a register carried to the next page, where
#: step 22 read pg + 1's at the top of page pg and ptxas sank that load to its use; measured
#: no faster in session 10 (the R2UR UR5, R53 that session 9's source page found waited on,
#: 8% of the producer's samples, feeds the L2 prefetch's address, not this index)
STEPS = (
    4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
    28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 58, 59, 60, *STEP_LINE,
)  # fmt: skip
#: step 37: packed rows one warp merges together in the split kernel (their loads in flight
#: together), where step 35 merges one row at a time
MERGE_ROWS = 4
#: the class's step when none is given: the 16-bit default
STEP = BF16_DEFAULT_STEP
#: step 61 and the builds on it, each with its base and its changes in
#: :data:`.mla_decode_sm90.STEP_LINE` (the flags below read them through ``step_changes``): each
#: has 61's lean combine and everything 61 took from 39 and 33, so one list for those flags
STEPS_ON_61 = tuple(STEP_LINE)
#: the V1L chunk mbarriers warpgroup 0 waits on again before its PV1L, by the change that sets
#: them (73: none, 77: the first, 76: the first two; every other step all of V_L's)
V1L_REWAIT_CHANGES = {"v1l_rewait_none": 0, "v1l_rewait_one": 1, "v1l_rewait_two": 2}


def release_order_chunk(c: int, stage):
    """Step 33: the page chunk that a warpgroup's S = Q K^T takes ``c``-th (0-8) in ``stage``
    (an int, or a DSL integer at run time): latent chunk (c + 4 stage) % 8, so stage 1 (WG1's)
    starts with chunks 4-7, which WG1 releases itself after its PV1R, and takes 0-3, which WG0
    releases after its PV1L, later; the rope chunk (8) last in both stages."""
    return c if c == P_CHUNK else (c + 4 * stage) % P_CHUNK


#: the FP8 cache's seesaw builds (steps 14-24, 26, 27 and 30 take only the FP8 cache, and it only
#: them) are the plan's FP8_STEPS (imported above: one list for the plan's checks and this class's)
#: step 14's register split (setmaxnreg). The CTA is launched with what ptxas gives 384
#: threads, 168 registers each (65536 / 384 rounded down to the allocation unit of 8), and
#: setmaxnreg only moves registers inside that pool: 2 x math + producer <= 3 x 168 = 504.
#: (A split summing to 512 leaves the math warpgroups' increase waiting forever: the first
#: H200 run of step 14 hung so.) The math warpgroups keep step 11's code in 208 (a few phase
#: words spill); the producer's two groups in flight take 64 of its 88.
LAUNCH_REGS = 168
MATH_REGS = 208
PRODUCER_REGS = 88
#: the (math, producer) split from a step on: step 18 gives the math warpgroups step 11's
#: budget back (216: no spills in a CPU compile), since step 17's producer fits in 72; step 26
#: keeps 216 / 72 (its producer spills at 56; its math warpgroups a few bytes at 216)
REG_SPLITS = {14: (MATH_REGS, PRODUCER_REGS), 18: (216, 72)}
#: step 14: the producer warpgroup's own named barrier (its 128 threads)
BAR_PROD = 7
#: step 14: the "stage released" mbarriers after the 18 chunk barriers, one per (stage,
#: releasing warpgroup): stage s, warpgroup w frees chunks 4w..4w+3 (and the rope chunk 8 when
#: w != s, the warpgroup that last reads P there)
EMPTY = STAGES * N_CHUNKS
N_EMPTY = STAGES * NUM_WG
#: step 26: per stage, "this CTA's warpgroup 1 - stage freed the rope chunk" (after EMPTY's)
ROPE_EMPTY = EMPTY + N_EMPTY
#: step 62 (16-bit cache, so no producer and no EMPTY barriers): the mbarrier on which the
#: peer CTA's st.async stores of a cluster pair's merge complete their bytes
PAIR_FULL = EMPTY
#: step 62: the 16-byte vectors of a thread's share of a warpgroup's fp32 O half (64 x 256
#: values over 128 threads: 128 each, 32 vectors of 4)
PAIR_VECS = TILE_M * HALF_V // WG_THREADS // 4
#: step 62: the bytes one CTA of a pair sends the other: a warpgroup's fp32 O half and the 64
#: rows' LSEs
PAIR_BYTES = WG_THREADS * PAIR_VECS * 16 + TILE_M * 4
#: step 63: the counters in cluster rank 0's SMEM that tell the CTA freeing a chunk group
#: second (its load's issuer): one per (stage, releasing warpgroup), :func:`release_counter`,
#: and one for a segment's first two pages
CNT_SEG = STAGES * NUM_WG
N_CNT = CNT_SEG + 1
#: step 63: a multicast TMA's destinations, both CTAs of the cluster
MCAST_MASK = 0b11


def release_counter(stage: int, wg: int) -> int:
    """Step 63: the counter of the chunk group that warpgroup ``wg`` frees in ``stage``
    (the FP8 producer's EMPTY barriers are numbered the same way): (0, 0) V0L, chunks 0-3;
    (0, 1) V0R and P0, chunks 4-8; (1, 0) V1L and P1, chunks 0-3 and 8; (1, 1) V1R, 4-7."""
    return stage * NUM_WG + wg


#: step 14's share of a page per producer thread and group (half of the latent columns):
#: token tidx // 2, 8 vectors of 16 e4m3 values (:meth:`MlaDecodeSm90Seesaw.fp8_vector`)
FP8_HALF_VECS = 8
#: the L2 cache hint "evict first" as the 64-bit policy a TMA load takes (CUTLASS
#: include/cute/arch/copy_sm90_desc.hpp:L186-L190, CacheHintSm90::EVICT_FIRST; FlashMLA's
#: KV loads use it: docs/20250422-new-kernel-deep-dive.md, "Cache hints")
EVICT_FIRST = 0x12F0000000000000
#: steps 20-22: how many pages ahead of its loads the producer prefetches into L2 (within a
#: segment; 2 x 33 KB per CTA in flight at per-token scales)
FP8_L2_AHEAD = 2
#: step 23's distance (4 x 33 KB per CTA, 17 MB of the H200's 50 MB L2 over 132 CTAs)
FP8_L2_AHEAD_FAR = 4
#: step 25: the pages prefetched into L2 at a pair's start are pg0 + BF16_L2_AHEAD and the one
#: after it: the pair after next, whose TMAs the next pair's releases issue (2 x 72 KB per
#: CTA ahead, 19 MB of the L2 over 132 CTAs)
BF16_L2_AHEAD = 4


class MlaDecodeSm90Seesaw(MlaDecodeSm90Kernel):
    """Step 4: the seesaw schedule with TMA pages (16-bit cache). Same arguments, tensors and
    compile-time parameters as :class:`MlaDecodeSm90Kernel` with ``loads="tma"``."""

    def __init__(
        self,
        s: int,
        h: int,
        causal: bool,
        dtype=cutlass.BFloat16,
        step: int = STEP,
        kv_fp8: bool = False,
        scale_block: int = D_V,
    ):
        if step not in STEPS:
            raise ValueError(f"step must be one of {STEPS} (got {step!r})")
        if kv_fp8 != (step in FP8_STEPS):
            raise ValueError(
                f"the FP8 latent cache builds steps {FP8_STEPS} and only them "
                f"(got step {step} with kv_fp8={kv_fp8})"
            )
        super().__init__(s, h, causal, dtype, loads="tma")
        self.set_kv_format(kv_fp8, scale_block)
        # the changes of a step on 61's line, its base's included (mla_decode_sm90.STEP_LINE)
        changes = step_changes(step)
        if len(changes & V1L_REWAIT_CHANGES.keys()) > 1:
            raise ValueError(f"step {step} carries two V1L re-wait changes: {sorted(changes)}")
        #: step 14: the dequantising producer warpgroup (threads 256..383)
        self.producer_wg = kv_fp8
        #: step 15: dequantise by placing the e4m3 bits into 16-bit values (no conversions)
        self.bit_dequant = step >= 15
        #: step 16: WG1 releases K1's chunks 4-7 right after its PV1R, and the producer fills
        #: the groups of a pair in the order they are released (:meth:`fp8_fill_pairs`)
        self.release_order = step == 16
        #: step 17: step 15 with one group in flight in the producer's registers, not two
        #: (32 more registers for the conversions' instruction-level parallelism)
        self.one_buffer = step >= 17
        #: step 26 (builds on 22): the crossover, where the m-tiles pair up into clusters of 2
        self.crossover = crossover_built(step, kv_fp8, self.m_tiles)
        #: steps 14-30: the setmaxnreg split (math, producer) of this step
        self.math_regs, self.producer_regs = (
            REG_SPLITS[max(k for k in REG_SPLITS if k <= step)] if kv_fp8 else (0, 0)
        )
        #: step 19: each chunk published as soon as it is written (and step 21, not 20)
        self.chunk_publish = step in (19, 21)
        #: steps 20-23: the producer's pages prefetched into L2 FP8_L2_AHEAD pages ahead
        #: (step 23: FP8_L2_AHEAD_FAR)
        self.l2_ahead = 0 if step < 20 else FP8_L2_AHEAD_FAR if step == 23 else FP8_L2_AHEAD
        #: step 22: each prefetch's page index loaded one page before it is used
        self.l2_index_early = step >= 22
        #: step 24: the next group's vectors reloaded one by one as the current group's are
        #: converted (:meth:`fp8_store_half`), its scales into the other scale set
        self.rolling_reload = step == 24
        #: step 27: whole-sector producer loads (:meth:`fp8_vector`, :meth:`fp8_token`)
        self.sector_loads = step == 27
        #: step 30: the page-table index of page pg + 2 read during page pg, carried
        self.pt_ahead = step == 30
        self.step = step
        #: step 5's early page-index reads (steps 5-8; step 9 drops them again)
        self.early_pages = 5 <= step <= 8
        if step >= 7:
            self.kv_cache_policy = EVICT_FIRST
        if step >= 8:
            self.combine_batch = 4
        if step == 13:
            # step 13: 2 pieces per round (72 registers per combine thread, not 128: more
            # warps per SM for a latency-bound merge; the devlog's combine profile)
            self.combine_batch = 2
        #: step 10 only (step 11 builds on 9)
        self.fused_combine = step == 10
        #: step 11: the CTA's segments come from the ``work`` tensor
        self.work_list = step >= 11
        #: step 12: the next segment's first two pages are loaded during the current one's
        #: last pair (each stage's next page, whichever segment it belongs to)
        self.prefetch_next = step in (12, 29)  # (13 builds on 11: 12 measured no gain)
        #: step 28 (16-bit cache; builds on 11): the next segment's Q issued after the last QK
        self.early_q = step in (28, 29)
        #: step 25 (16-bit cache; builds on 11): the L2 prefetch stream of the pair after next
        self.l2_pages = step == 25
        #: step 31 (16-bit cache; builds on 11): WG0 issues the next pair's S0 right behind its
        #: PV1L (FlashMLA's order, splitkv_mla.cuh wg0_subroutine), not after PV1L has retired.
        #: Step 31 was 1.005-1.04x step 11 (session 11), before steps 33 and 39 changed which
        #: chunks the next S waits on. Step 65 (builds on 61): the same order on the 61 base,
        #: where warpgroup 0 waits for PV1L, reloads, and only then issues the next S0, so no
        #: MMA of its own is queued while it waits; in 65 the S0's chunks 0-3 are (both still
        #: wait for everything, wait_group(0), before the next pair's softmax). Warpgroup 1 and
        #: a segment's first S0 keep 61's one group in step 33's release order. Measured in
        #: session 27 (H100): correct (3 launches per check), and against the default where
        #: it builds 61 1.043x its time per round at (64, 4096), 1.016 at (128, 4096), 1.058 at
        #: (128, 16384), 1.026 at s=2 and varlen, 0.998 at h=64 (not profiled; the devlog,
        #: "Session 27"). 61 stays
        self.qk_behind_pv = step in (31, 32) or "qk_behind_pv" in changes
        #: step 32: 31 with WG0's PV1L issued only once WG1 has issued its PV0R (FlashMLA's
        #: rO1sP0sV0RIssued barrier), so the tensor pipe takes PV0R first and WG1 reloads
        #: stage 0's chunks 4-8, which the next S0 waits for, a PV earlier
        self.pv0r_first = step == 32
        #: step 33 (16-bit cache; builds on 11): each warpgroup's S = Q K^T takes its page's
        #: chunks in the order their stage is released: WG0 (stage 0) 0-8 as before; WG1
        #: (stage 1) 4-7 first, which it releases itself after its PV1R, then 0-3 and 8, which
        #: WG0 releases only after its PV1L, just before WG1's next S1 starts. At h=128
        #: (128, 16384) on an H100, 15% of step 11's stall samples wait on chunk 0's mbarrier
        #: there (the devlog, "Session 20"). Measured in session 21 (H100): 0.982-0.987x step
        #: 11's time per round at the five h=128 s=1 rows, 1.00x at s=2.
        self.qk_release_order = step in (33, 34, 35, 36, 37, 38, 39, 58, 59, 60, *STEPS_ON_61)
        #: step 34 (16-bit cache; builds on 33): the cut sequences' partial O is stored in the
        #: dtype, not fp32 (one more rounding to 8 significant bits, then the weighted merge in
        #: fp32), so the CTAs write and the combine reads half the bytes: at (32, 4096) h=128
        #: 64 pieces (32 sequences in 2 each) x 128 rows x 512 columns, 16.8 MB as fp32, and
        #: step 33's combine kernel took 11 us of the call's 90 under ncu on an H100. Measured
        #: slower (the devlog, "Session 21")
        self.partials_16bit = step == 34
        #: step 35 (16-bit cache; builds on 33): no combine kernel. Each CTA counts a cut
        #: piece's partials on its (sequence, m-tile) counter once they are stored; after its
        #: last segment every warp of the grid merges packed rows (row = global warp, + the
        #: grid's warp count), each once its (sequence, m-tile) counter shows every piece, so
        #: the merge runs on all SMs from L2-hot partials without a second launch (FlashInfer's
        #: Hopper MLA merges after a grid-wide sync in its one cooperative kernel,
        #: include/flashinfer/attention/mla_hopper.cuh; step 10 merged in the last CTA alone
        #: and was slower). The grid is one wave (at most one CTA per SM, grid <= SMs), so a
        #: CTA waiting on a counter never holds back a CTA that has not started. Measured in
        #: session 21 (H100): correct (3 launches per check), and 1.05-1.10x step 33's time at
        #: h=128 s=1: a warp merges one row at a time, two dependent global round trips each,
        #: and 8 warps per SM hold far fewer loads in flight than the combine kernel's grid
        #: (ncu at (128, 16384): 1085.7 us against 33's 1029.2 + 19.4 us of combine).
        self.merge_in_kernel = step in MERGE_IN_KERNEL_STEPS
        #: step 37 (builds on 35): each warp merges MERGE_ROWS rows together, their LSEs, then
        #: per piece their weights and all their 16-byte partial-O loads at once, so a warp
        #: keeps 4 x 4 x 16 B in flight per piece where 35 kept one row's; the lesson of 35,
        #: whose merge was latency-bound. Measured in session 22 (H100): no better than 35,
        #: 1.04-1.09x step 33's time at h=128 s=1 (the devlog, "Session 22").
        self.merge_rows = MERGE_ROWS if step == 37 else 1
        #: step 36 (16-bit cache; builds on 33): the combine's split loads as 16-byte vectors
        #: (MlaDecodeSm90Kernel.combine_vec16). Found by a review in session 21: step 33's
        #: combine read each lane's 4 fp32 columns with four 4-byte loads, which fits step 34's
        #: finding that halving the combine's bytes did not shorten it. Measured in session 22
        #: (H100): tied with 33, 0.993-1.013x per round, its combine as long under ncu.
        # (step 37's merge: 16-byte vectors of its own)
        self.combine_vec16 = step in (36, 38, *STEPS_ON_61)
        #: step 38 (builds on 36): the combine issues its first round's partial-O loads (the
        #: pieces 0-3 that a row has) before it reads the pieces' LSEs, so a row's merge waits
        #: on one round trip to memory instead of two (the LSEs, then the partial O they
        #: weigh); the weights then gate only the FMAs
        #: (MlaDecodeSm90Kernel.combine_one_trip). Session 22 measured step 36 no faster than
        #: 33 (0.993-1.013x per round) and its combine under ncu as long as 33's (10.7-11.6
        #: us at (32, 4096) h=128), so neither the combine's bytes (step 34) nor its load
        #: instructions set its time; latency is what is left. Measured in session 22 (H100):
        #: tied with 33 (0.996-1.008x per round), its combine 7.0 against 7.5 us with warm L2.
        self.combine_one_trip = step in (38, *STEPS_ON_61)
        #: step 39 (16-bit cache; builds on 33): WG1 reloads stage 1's chunks 4-7 (V1R, page
        #: pg0 + 3) as soon as its PV1R has retired, right after it issues PV0R, where 33 waits
        #: for PV0R as well and reloads both stages' right halves together. Those chunks are
        #: the first that WG1's next S1 reads (step 33's release order), and the wait on the
        #: first chunk of S holds 13.7% of step 33's stall samples at h=128 (128, 16384) on an
        #: H100 (the devlog, "Session 22"): the reload gains PV0R's duration of lead. Only WG1
        #: reads or waits on those chunks (its S1 and PV1R), so the early reload is safe as
        #: the FP8 producer's step 16 release is. Measured in session 22 (H100): 0.955-0.978x
        #: step 33's time per round at every h=128 row, 1.001x at h=64: the 16-bit default.
        self.early_v1r = step in (39, 58, 59, 60, *STEPS_ON_61)
        #: step 58 (16-bit cache; builds on 39; the next free step number, 40-57 being the
        #: query-rows-on-N builds): combine CTAs of 2 warps instead of 4. A split CTA holds 256
        #: threads x 224 allocated registers = 57344 of the SM's 65536 and 219 KB of SMEM; a
        #: 4-warp combine CTA at 128 registers a thread needs 16384, so no combine CTA can start
        #: on an SM until its split CTA has left, while a 2-warp one needs 8192 and 1 KB and fits
        #: beside it. PDL launches the combine once every split CTA has reached its epilogue's
        #: griddepcontrol.launch_dependents, so with 2-warp CTAs one per SM can be resident,
        #: waiting at griddepcontrol.wait, before the split kernel ends. Session 22 measured the
        #: combine at about 7.5 us of the h=128 (32, 4096) call with warm L2, bound by neither its
        #: bytes (34), its load instructions (36) nor its round trips (38): its launch and ramp
        #: are what is left. Measured in session 23 (H100): tied with 39, 1.000-1.005x per
        #: round at the six h=128 rows; PDL hides almost none of the combine (the devlog).
        if step == 58:
            self.combine_rows = 2
        #: step 59 (16-bit cache; builds on 39): no combine kernel. The work list fills its
        #: parts in order, so a cut sequence's first piece is always the last segment of its
        #: part (the plan checks it: mla_decode_sm90._first_pieces_last) and every other piece
        #: is a first or only segment of a later part. The first piece's CTA stores only its
        #: LSE, keeps its partial O in registers, waits (thread 0, acquire loads) until the
        #: (sequence, m-tile) counter shows the other pieces stored, and merges them from L2
        #: in O's register layout (:meth:`merge_splits`, step 10's merge), then stores O as
        #: an uncut sequence does; the other pieces store their partials and count them
        #: (:meth:`piece_stored`, step 35's release). The premise was that a piece after the
        #: first, being the first segment of its part, is stored long before the first piece
        #: ends, so the wait is short and the first piece's 128 KB partial O is neither
        #: written nor read again. Session 23 measured the combine at 7.4 us of the default's
        #: 82.5 at (32, 4096) (warm-L2 ncu, main kernel 75.1 us), overlapping the split kernel
        #: hardly at all, while FlashInfer's one kernel took 80.4; steps 10, 35 and 37 had
        #: merged inside the split kernel in the CTA finishing last (10) or in every warp of
        #: the grid from both partials (35, 37), and lost to the separate combine. The grid
        #: must be resident at once (one CTA per SM), as for 35. Measured in session 23
        #: (H100): correct (3 launches per check), and 1.030x step 39's time per round at
        #: (32, 4096), 1.018x at (32, 16384), 1.048x at varlen, 0.996x at (128, 16384). The
        #: premise fails where it matters: the costed plan cuts each of the 32 sequences at
        #: (32, 4096) into two whole parts of 32 pages, so both pieces end together at the
        #: kernel's end, and the first piece's CTA waits for its partner's store and then reads
        #: it while the partner's SM idles: a serial tail on half the SMs, where the combine
        #: spreads the same rows over all of them (the devlog, "Session 23").
        self.owner_merge = step in OWNER_MERGE_STEPS
        #: step 60 (builds on 59): the first piece's merge in one pass over the other pieces
        #: (:meth:`merge_pieces_online`), each piece's LSE and partial O loaded together,
        #: where 59's (:meth:`merge_splits`, step 10's) reads every LSE twice (the max, then
        #: the weights) before the partial O: at the kernel's end, on its critical path, a
        #: chain of about six dependent L2 round trips per 2-piece row against two.
        #: Measured in session 23 (H100): 1.019x step 39's time per round at (32, 4096),
        #: 1.031x at varlen, 1.002x at (128, 16384): shorter than 59's merge, the same tail.
        self.online_merge = step == 60
        #: step 61 (builds on 39): the combine with 2 pieces per round (step 13: 70 registers a
        #: thread, 72 allocated, where 4 take 128, so 28 warps per SM where 16 fit, and the
        #: 4096 rows of h=128 (32, 4096) in about 1.1 waves where 16 warps per SM take two),
        #: 16-byte loads (36) and the first round's loads issued before the LSEs (38). Each of
        #: the three alone was within 0.5 us of the combine's 7.4-7.5 us (warm L2, sessions 5,
        #: 22 and 23); together they cut what its warps wait on (two round trips to one) and
        #: how many waves wait, where the tail of a balanced split grid is all the combine has
        #: (session 23). Measured in session 24 (H100): 0.990x step 39's time per round at
        #: (32, 4096), 0.981x at varlen, 0.996-0.997x at (32, 16384) and (128, 16384); its
        #: combine 6.2 us against 39's 7.5 with warm L2: the 16-bit default in sessions 24-28
        if step in STEPS_ON_61:
            self.combine_batch = 2
        #: step 62 (16-bit cache; builds on 61, whose lean combine merges the sequences that are
        #: not pairs): the parts run as clusters of 2 CTAs (parts 2k
        #: and 2k + 1 of an m-tile; the plan makes their count even), and where a sequence's
        #: two pieces are exactly those two parts, whole (mla_decode_sm90.pair_sequences; at
        #: h=128 (32, 4096) the costed plan cuts all 32 sequences so), the two CTAs merge it
        #: between them through distributed shared memory (:meth:`pair_merge_epilogue`): each
        #: sends its peer one warpgroup's fp32 O half and its rows' LSEs by st.async into the
        #: peer's freed KV stages, merges the half it kept and stores it, so the tail runs on
        #: both SMs, no partial goes through L2 and no combine kernel is launched for them.
        #: Session 23 measured the combine at 7.4 us of step 39's 82.5 at (32, 4096) (warm-L2
        #: ncu, H100), FlashInfer's one kernel at 80.4, and steps 59-60 (the same merge through
        #: L2, by the first piece's CTA alone) slower: the merge was a serial tail on half the
        #: SMs, waiting on L2 round trips (the devlog, "Session 23"). Measured in session 24
        #: (H100): correct (3 launches per check), 0.962x step 39's time per round and 0.979x
        #: FlashInfer's at (32, 4096), 0.989x 39 with cuts=pairs at (32, 16384); where no
        #: sequence pairs the cluster launch alone took 1.2-4.2% at h=128 (none at h=64), so
        #: the default builds 62 only where every cut sequence pairs (the devlog, "Session 24")
        self.pair_merge = step in PAIR_MERGE_STEPS
        #: step 63 (16-bit cache; builds on 61): the CTAs of m-tiles 2j and 2j + 1 run as a
        #: cluster of 2 (grid [m-tiles, 1, parts], cluster [2, 1, 1]); they hold the same part,
        #: so they walk the same pages in the same order, and each page chunk is loaded once
        #: for both by a multicast TMA. Where 61's warps issue a freed chunk group's next TMA,
        #: each CTA arms its own chunk mbarriers and adds 1 to the group's counter in cluster
        #: rank 0's SMEM (a relaxed atom.shared::cluster, :func:`cluster_add_one`); the CTA
        #: that finds the count odd freed the
        #: group second, so both copies are free, and it issues the group's TMAs to both
        #: (:meth:`load_group`). No CTA waits for its peer to load; a page's chunk lands in both
        #: as soon as the later of the two has freed it. Both CTAs of an h=128 part read every
        #: page, so 61 moves each page across L2 to the SMs twice: 311 MB of crossbar reads for
        #: 156 MB from DRAM at (32, 4096) and 4.86 GB for 2.44 GB at (128, 16384) under ncu on
        #: an H100 (the devlog, "Session 23"), and the rows where nothing is cut, which the
        #: power cap slows most (61 as fast as 39 there), are where FlashInfer leads by 3-5%.
        #: Measured in session 25 (H100): correct (3 launches per check), and 1.03-1.09x step
        #: 39's time per round at every h=128 row; under ncu at (128, 4096) 7.6% more SM cycles
        #: than 61, the tensor pipe 55.8% against 60.2%: a group's next page now waits for the
        #: later of the two CTAs to free it, and for the count's round trip, on the kernel's
        #: hottest wait (a page's first chunk), while L2-to-SM bytes were not a limit (the
        #: devlog, "Session 25")
        self.multicast = step in MULTICAST_STEPS
        #: step 64 (16-bit cache; builds on 61): warpgroup 0 reloads stage 0's chunks 0-3
        #: (V0L, page pg0 + 2) as soon as its PV0L retires, right after issuing it, before it
        #: waits for warpgroup 1's row max (BAR_M1) and scales and stores P0; 61 reloads them
        #: only after that. Those are the first chunks its next S0 reads, and the wait on the
        #: first of them held 13.7% of step 39's stall samples at h=128 (32, 4096) and (128,
        #: 16384) on an H100 (the devlog, "Session 23"); only warpgroup 0 reads them (its S0 and
        #: PV0L), so the release needs its own wait_group and barrier alone, as step 39's V1R.
        #: The cost: warpgroup 0 now waits for PV0L to retire before it can take m1, so where
        #: m1 is already there, P0 reaches warpgroup 1 (BAR_P0) later. Measured in session 25
        #: (H200): correct (3 launches per check), and 1.015-1.045x step 39's time per round at
        #: the uncut and long h=128 rows: warpgroup 1's PV0R and its reload of stage 0's chunks
        #: 4-8 come later by as much; 61 stays (the devlog, "Session 25")
        self.early_v0l = "early_v0l" in changes
        #: step 66 (16-bit cache; builds on 61): the math region traced once per warpgroup with
        #: its index a compile-time constant, behind one branch on the warp-uniform index, so
        #: that ptxas computes the WGMMA descriptors on the uniform datapath: in 61 the stage is
        #: ``tidx // 128`` and every HGMMA took four R2UR (10.6 M of 61's 72.0 M instructions
        #: at h=128 (128, 4096) under ncu on an H100, FlashMLA 57.2 M). Measured in session 29
        #: (H100): correct (3 launches per check), 55.4 M instructions, yet 1.2% more SM cycles
        #: than 61 and 0.9-1.6% slower per round; 61 stays (the devlog, "Session 29")
        self.wg_constant = "wg_constant" in changes
        #: step 67 (16-bit cache; builds on 61): S is masked only on a page that reaches past
        #: the tile's lowest key limit (the sequence's end; at s > 1 with causal, its end less
        #: s - 1), one warp-uniform branch per page; 61 compares and selects every element of
        #: every page (2.37 M FSEL against FlashMLA's 0.07 M at h=128 (128, 4096) on an H100,
        #: session 29's source pages, where FlashMLA masks only the last pair)
        #: Step 68 (builds on 62, the pair default until session 29): 62 with this mask;
        #: 0.983-0.991x 62's time per round at (32, 4096) and (32, 16384) in session 30
        self.tail_mask = "tail_mask" in changes
        #: step 70 (builds on 67): a sequence stored whole (one piece) leaves its O through
        #: SMEM (:meth:`MlaDecodeSm90Kernel.store_o`'s ``o_stage``): each warpgroup's 64 x 256
        #: half by stmatrix into stage 0's chunks (free after the last PVs: the epilogue's
        #: barrier follows every WGMMA's wait), then 16-byte rows to global memory, one 512-byte
        #: row per warp instruction. 67 stores each thread's fragment straight from registers,
        #: 64 four-byte STG per thread whose 16-byte runs half-fill each 32-byte sector: 1.05 M
        #: store sectors for 524 k of O at h=128 (128, 4096) and 1,240 lg_throttle samples
        #: against FlashMLA's 0 (session 29's source pages, H100; FlashMLA stages O in SMEM too).
        #: Step 71 (builds on 68): the same for the merged half that each CTA of a cluster pair
        #: stores (:meth:`pair_merge_epilogue`), through stage 1 (stage 0 holds the peer's half)
        self.o_via_smem = "o_via_smem" in changes
        # the staging needs the stages idle at a segment's end: no page of the next segment
        # loaded early (steps 12, 29), no producer warpgroup writing them (the FP8 steps)
        assert not (self.o_via_smem and (self.prefetch_next or self.producer_wg)), step
        #: steps 72 and 73 (build on 70): warpgroup 1 does not wait again on V0R's chunk
        #: mbarriers before its PV0R (72), or warpgroup 0 on V1L's before its PV1L (73). The
        #: other warpgroup's QK waited for those chunks before arriving on BAR_P0 / BAR_P1,
        #: which this one waits on first; FlashMLA issues both PVs right after its named
        #: barriers, no mbarrier wait. The re-waits held 342 (V1L) and 439 (V0R) of 28,678
        #: samples at h=128 (128, 4096) (session 29's source pages, H100). Dropping both makes
        #: ptxas spill (step 69 on 67; on 70: 255 registers, 256 bytes), either one alone not.
        #: Step 75 is 71 (the pair build) without the V0R re-wait, as 72 is 70 without it
        self.rewait_v0r = "no_rewait_v0r" not in changes
        #: steps 76 and 77 (build on 72 and 75): warpgroup 0 re-waits on the first two (76) or
        #: the first one (77) of V1L's four chunk mbarriers, not on all four. Session 31's
        #: source pages (H100) put 1,479 samples on the four V1L re-waits at h=128 (128, 16384),
        #: up to ~50 cycles per page
        #: (`results/logs/2026-12-07-h100-session31/call3-ncu/stall-comparison.md`). On 72, one
        #: re-wait or none makes ptxas spill (255 registers, 256 bytes; step 69 on 67: 248), two
        #: do not; on 75, one does not. Measured in session 31 (H100): correct (3 launches per
        #: check), 0.994-1.000x 72's and 75's time per round at h=128: no gain, 72 and 75 stay
        self.v1l_rewaits = next(
            (n for name, n in V1L_REWAIT_CHANGES.items() if name in changes), V_L[1] - V_L[0]
        )
        #: steps 78 and 79 (build on 72 and 75): at a segment's start every thread issues its
        #: share of Q's cp.async before warp 0 reads the first two pages' table entries and
        #: issues their 18 chunk TMAs; 72 issues Q after them, so warp 0's share of Q leaves
        #: two page-table reads and 18 TMA issues later, and the CTA barrier after Q's wait
        #: waits for warp 0. At s=2 (32, 4096) (one 64-page segment per CTA) that barrier
        #: held 197 samples, about 3.2 k cycles per CTA, and Q's wait 304 (session 31's
        #: source page, H100, `results/logs/2026-12-07-h100-session31/call5-ncu-s2/`
        #: `stall-comparison-s2.md`); FlashMLA issues Q first. The pages are not needed
        #: before Q: the first S reads both. Built in session 31; measured in session 33 (H100)
        #: at 0.988-0.999x 72's time per round at h=128 and h=64 and 0.987-1.000x 75's: the 16-bit
        #: defaults in session 33 (the devlog, "Session 33"), and the base of 86 and 87
        self.q_first = "q_first" in changes  # (83, 84: below)
        # Q loaded once per segment, by all threads, before this segment's own page loads
        assert not (self.q_first and (self.early_q or self.prefetch_next or self.producer_wg)), step
        #: step 80 (builds on 72): the split kernel launched as a programmatic dependent of
        #: the kernel before it in the stream (``use_pdl``), every thread waiting at
        #: griddepcontrol.wait after the mbarrier inits and the TMA descriptor prefetch,
        #: before its first global read or write: its launch and prologue overlap the tail of
        #: the previous kernel (a call's combine, or a split kernel where nothing is cut).
        #: FlashMLA's split kernel waits so (griddepcontrol.wait near the top of its SASS,
        #: session 31's s=2 source page, `results/logs/2026-12-07-h100-session31/`
        #: `call5-ncu-s2/stall-comparison-s2.md`); the combine kernel is one since step 1. Built in
        #: session 31; no gain in session 33 (H100; the devlog, "Session 33")
        self.pdl_split = "pdl_split" in changes
        #: steps 81 and 82 (build on 72 and 75): 80's launch, and every CTA executes
        #: griddepcontrol.launch_dependents right after its griddepcontrol.wait, so the next
        #: kernel in the stream (the next call's split kernel, or this call's combine) is
        #: launched as soon as every CTA of this grid has started, and its CTAs take the SMs
        #: this grid leaves free (4 of 132 at h=128 (128, 4096)) and each SM as its CTA exits,
        #: where they run their prologue and wait. In 80 the trigger is implicit at the grid's
        #: end (or the split epilogue's, where a combine follows), so the next grid's launch
        #: overlaps nothing. Correctness does not move: a dependent's griddepcontrol.wait still
        #: waits for this grid to complete and its memory to be visible. FlashMLA's split kernel
        #: triggers before its epilogue (PREEXIT, session 31's s=2 source page); ours at the
        #: top: dependents are scheduled only once every CTA of this grid has triggered or
        #: exited, so all of ours are resident by then (the grid is one wave here, at most one
        #: CTA per SM; with more waves the trigger would fire once the last wave started, still
        #: safe). 82 is 75 (the pair build, a cluster launch)
        #: so. Built in session 32. Steps 83 and 84 are 81 and 82 with 78's and 79's Q issued
        #: before the first pages (both changes together, should each pay alone). In session 33
        #: (H100) the early trigger took 1-3% more time at the h=128 rows where nothing is cut,
        #: (64, 4096), (128, 4096) and s=2, and none elsewhere (the devlog, "Session 33")
        self.pdl_trigger = "pdl_trigger" in changes
        #: step 85 (builds on 72): Q's 64 rope columns (512..575) held in registers, loaded
        #: from sQ once per segment after Q's barrier, and S's four rope k-blocks issued as
        #: WGMMAs with the A operand from registers (16 registers a thread), the other 32
        #: k-blocks as before. A 64 x 64 x 16 WGMMA with both operands in SMEM reads 4 KB in the
        #: 32 cycles the tensor pipe takes for it, 128 bytes per cycle, the SMEM pipe's whole
        #: width, so the QK phases run at the SMEM pipe's limit whenever the tensor pipe runs at
        #: its own. Session 31's raw pages (H100, h=128 (128, 16384)) counted 1,850 SMEM
        #: wavefronts per page in ours against FlashMLA's 1,795, of which WGMMA operands about
        #: 1,712 against 1,611, and ours' WGMMA issue stalls in the QK phases at 449 cycles per
        #: page against 212 (s=2, session 31). FlashMLA holds Q's rope columns in registers (its
        #: rQ), 64 wavefronts a page. Built in session 32; in session 33 (H100) it cut those
        #: wavefronts and no time: the QK phases are not SMEM-bound, and the WGMMA operand reads
        #: had differed from FlashMLA's by those 64 alone (1,728 against 1,664 per page; the
        #: devlog, "Session 33")
        self.q_rope_regs = "q_rope_regs" in changes
        #: step 74 (builds on 70): warpgroup 1 stores P1 (stmatrix) before it issues its PV1R,
        #: not after, so that the proxy fence publishing P1 waits on stores issued a WGMMA
        #: earlier (FlashMLA's order: STSM, PV1R, fence). 70's fence right after the STSM held
        #: 278 samples against FlashMLA's 67 (session 29's source pages, H100)
        self.p1_before_pv = "p1_before_pv" in changes
        #: steps 86 and 87 (on 78 and 79): the running row max moves only when a page's row max
        #: exceeds it by more than :data:`RESCALE_SKIP_LOG2` (log2 units, so every P stays <= 2^8),
        #: and warpgroup 0 multiplies O_L by sc1 only in a warp where one of its rows' maxima moved
        #: (a warp vote); the other rescales stay unconditional (below). FlashAttention-4's
        #: conditional rescaling (Dao-AILab/flash-attention ``flash_attn/cute/softmax.py``,
        #: ``SoftmaxSm100``'s ``rescale_threshold``), here in the seesaw's two hand-offs: m0 keeps
        #: m, m1 keeps m0 unless the page's own max is larger by more than the threshold. Exact in
        #: real arithmetic (O and the row sum share the stale reference; the LSE is m + log2 l of
        #: the same m). Only warpgroup 0's second O_L rescale (by sc1 = exp2(m0 - m1), 128 FMULs a
        #: thread a pair, between its PV0L's retirement and its PV1L, while warpgroup 1's warps on
        #: the same schedulers run their softmax) is skipped: the same vote-branch around either
        #: warpgroup's first O rescale (by sc_a, before its PV0L or PV1R) made ptxas serialize every
        #: WGMMA of the kernel (a CPU compile: 96 WARPGROUP instructions against 18, a DEPBAR after
        #: each HGMMA), and around P0's rescale it took 246 registers against 225. Session 33's ncu
        #: at (128, 16384) put ours' softmax class at 523 cycles per page against FlashMLA's 445.
        #: Built in session 34
        self.lazy_rescale = "lazy_rescale" in changes
        #: step 88 (on 86): each warpgroup's first O rescale (by sc_a, before its PV0L or PV1R)
        #: under the same warp vote. Built to keep the finding reproducible, not to be timed:
        #: ptxas then serializes every WGMMA of the kernel (a WARPGROUP.DEPBAR behind each
        #: HGMMA; session 34, a CPU compile), which any gain from the skipped multiplies
        #: cannot repay
        self.lazy_rescale_first = "lazy_rescale_first" in changes
        if self.multicast and self.m_tiles % 2:
            raise ValueError(
                f"step {step} takes an even number of m-tiles (got {self.m_tiles}: s*h = {s * h})"
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
        o_acc: cute.Tensor,  # (cap, b, s, h, 512) float32 workspace
        lse_acc: cute.Tensor,  # (cap, b, s, h) float32 workspace (log2)
        kv_scales: cute.Tensor,  # unused (the 16-bit cache only)
        kv_rope: cute.Tensor,  # unused
        split_count: cute.Tensor,  # (b, m_tiles) int32, zero: steps 10 and 35's counters
        work: cute.Tensor,  # (rows, 4) int32: step 11's work list (WorkList.rows); else unused
        softmax_scale: cutlass.Float32,
        num_splits: cutlass.Int32,
        pages_per_split: cutlass.Int32,
        split: cutlass.Constexpr,
        stream: cuda.CUstream,
    ):
        dt = self.dtype
        if cutlass.const_expr(self.partials_16bit):
            # step 34: the fp32 workspace's first half holds the partial O in the dtype (same
            # element strides, half the bytes), for the epilogue and the combine alike
            o_acc = cute.make_tensor(
                cute.recast_ptr(o_acc.iterator, dtype=self.dtype), o_acc.layout
            )
        mQ, mO, mL, mOa, mLa = self.problem_views(q, o, lse, o_acc, lse_acc)

        K = cute.nvgpu.OperandMajorMode.K
        MN = cute.nvgpu.OperandMajorMode.MN
        # S of one whole page per warpgroup (64 x 64, K = 576)
        qk_mma = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, K, cutlass.Float32, (1, 1, 1), (TILE_M, PAGE)
        )
        # step 85: S's rope k-blocks with Q from registers
        qk_rs = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, K, cutlass.Float32, (1, 1, 1), (TILE_M, PAGE),
            warpgroup.OperandSource.RMEM,
        )  # fmt: skip
        # O_half += P V_half: P from registers (own page) or from SMEM (the other's page)
        pv_rs = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, MN, cutlass.Float32, (1, 1, 1), (TILE_M, HALF_V),
            warpgroup.OperandSource.RMEM,
        )  # fmt: skip
        pv_ss = sm90_utils.make_trivial_tiled_mma(
            dt, dt, K, MN, cutlass.Float32, (1, 1, 1), (TILE_M, HALF_V)
        )

        atom, sQ_layout, sK_layout, sVt_outer = self.smem_layouts()  # STAGES = 2 pages
        q_copy = self.row_copy()
        mKV8, mSc = None, None
        if cutlass.const_expr(self.producer_wg):
            # step 14: the e4m3 latent part and its scales go through the producer's registers;
            # the TMA (the rope chunk only) reads the 16-bit rope part
            mKV8, mSc, _ = self.fp8_views(kv_cache, kv_scales, kv_rope)
            tma_atom, mKVt = self.page_tma(kv_rope, atom, D_ROPE)
        else:
            tma_atom, mKVt = self.page_tma(kv_cache, atom, multicast=self.multicast)

        n_mbar = EMPTY + (N_EMPTY if self.producer_wg else 0) + (STAGES if self.crossover else 0)
        n_mbar += 1 if self.pair_merge else 0  # step 62: PAIR_FULL

        @cute.struct
        class SharedStorage:
            sQ: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sQ_layout)], 1024]
            sK: cute.struct.Align[cute.struct.MemRange[dt, cute.cosize(sK_layout)], 1024]
            # the row max after WG0's page (m0) and after WG1's (m1); the row sums at the end
            sM0: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M], 16]
            sM1: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M], 16]
            sSum: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, TILE_M * NUM_WG], 16]
            # the chunk barriers per (stage, chunk); step 14 also the stage releases
            mbar: cute.struct.Align[cute.struct.MemRange[cutlass.Int64, n_mbar], 8]
            # step 10: "this CTA merges the splits", from thread 0 to all
            sFlag: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, 4], 16]
            # step 63: the chunk groups' release counters (rank 0's are the ones counted)
            sCnt: cute.struct.Align[cute.struct.MemRange[cutlass.Int32, N_CNT], 16]

        self.shared_storage = SharedStorage

        # the arrival counters of steps 10 and 35, one per (sequence, m-tile)
        mCnt = cute.make_tensor(
            split_count.iterator,
            cute.make_layout((q.shape[0], self.m_tiles), stride=(self.m_tiles, 1)),
        )
        # step 11's work list, (rows, 4) with static inner strides
        mWork = cute.make_tensor(work.iterator, cute.make_layout((work.shape[0], 4), stride=(4, 1)))
        scale_log2 = softmax_scale * LOG2_E
        threads = THREADS + (WG_THREADS if self.producer_wg else 0)
        # step 35: the merge's views, as the combine kernel takes them
        vO, vL, vOut, vLse, _, total = self.combine_views(o, lse, o_acc, lse_acc, q.shape[0], work)
        self.kernel_seesaw(
            mQ, page_table, seqlens, mO, mL, mOa, mLa, mCnt, mWork, mKV8, mSc, scale_log2,
            num_splits, pages_per_split, qk_mma, pv_rs, pv_ss, qk_rs, q_copy, tma_atom, mKVt,
            sQ_layout, sK_layout, sVt_outer, vO, vL, vOut, vLse, total, split,
        ).launch(grid=[self.m_tiles, 1 if self.work_list else q.shape[0], num_splits],
                 block=[threads, 1, 1],
                 stream=stream,
                 **({"cluster": [2, 1, 1]} if self.crossover or self.multicast else {}),
                 **({"cluster": [1, 1, 2]} if self.pair_merge else {}),
                 **({"use_pdl": True} if self.pdl_split else {}))  # fmt: skip
        if cutlass.const_expr(
            split and not self.fused_combine and not self.merge_in_kernel and not self.owner_merge
        ):
            self.launch_combine(o, lse, o_acc, lse_acc, num_splits, q.shape[0], stream, work)

    @cute.kernel
    def kernel_seesaw(
        self,
        mQ: cute.Tensor,
        mPT: cute.Tensor,
        mLens: cute.Tensor,
        mO: cute.Tensor,
        mL: cute.Tensor,
        mOa: cute.Tensor,
        mLa: cute.Tensor,
        mCnt: cute.Tensor,
        mWork: cute.Tensor,
        mKV8: Optional[cute.Tensor],  # noqa: UP045 (step 14: (page, token, 512) e4m3)
        mSc: Optional[cute.Tensor],  # noqa: UP045 (step 14: (page, token, G) fp32 scales)
        scale_log2: cutlass.Float32,
        num_splits: cutlass.Int32,
        pages_per_split: cutlass.Int32,
        qk_mma: cute.TiledMma,
        pv_rs: cute.TiledMma,
        pv_ss: cute.TiledMma,
        qk_rs: cute.TiledMma,  # step 85: S's rope k-blocks, Q from registers
        q_copy: cute.TiledCopy,
        tma_atom: cute.CopyAtom,
        mKVt: cute.Tensor,
        sQ_layout: cute.ComposedLayout,
        sK_layout: cute.ComposedLayout,
        sVt_outer: cute.Layout,
        vO: cute.Tensor,  # step 35: the merge's views (MlaDecodeSm90Kernel.combine_views)
        vL: cute.Tensor,
        vOut: cute.Tensor,
        vLse: cute.Tensor,
        total: cutlass.Int32,  # step 35: packed rows, b * s * h
        split: cutlass.Constexpr,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        m_blk, bidx, sp = cute.arch.block_idx()
        wg = tidx // WG_THREADS
        wg_tidx = tidx % WG_THREADS
        lane = tidx % 32
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        NEG_INF = -cutlass.Float32.inf

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)
        sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)  # (64, 576, 2)
        sVt = storage.sK.get_tensor(sVt_outer, swizzle=sK_layout.inner)  # (512, 64, 2)
        sM0 = storage.sM0.get_tensor(cute.make_layout(TILE_M))
        sM1 = storage.sM1.get_tensor(cute.make_layout(TILE_M))
        sSum = storage.sSum.get_tensor(cute.make_layout((TILE_M, NUM_WG)))
        sFlag = storage.sFlag.get_tensor(cute.make_layout(4))
        sCnt = storage.sCnt.get_tensor(cute.make_layout(N_CNT))
        mbar = storage.mbar.data_ptr()

        valid_rows = self.rows - m_blk * TILE_M

        # ---- mbarriers and TMA partitions (once per CTA) -----------------------------------
        if tidx == 0:
            for i in cutlass.range_constexpr(STAGES * N_CHUNKS):
                # the issuer's arrive + 8 KB (step 14's latent chunks: the producer's arrive)
                cute.arch.mbarrier_init(mbar + i, 1)
            if cutlass.const_expr(self.producer_wg):
                for i in cutlass.range_constexpr(N_EMPTY):
                    # one releasing thread (step 26: and the peer CTA's same warpgroup)
                    cute.arch.mbarrier_init(mbar + EMPTY + i, 2 if self.crossover else 1)
            if cutlass.const_expr(self.crossover):
                for i in cutlass.range_constexpr(STAGES):
                    cute.arch.mbarrier_init(mbar + ROPE_EMPTY + i, 1)  # this CTA's rope reader
            if cutlass.const_expr(self.pair_merge):
                # step 62: the receiving warpgroup's arrive (with the bytes it expects)
                cute.arch.mbarrier_init(mbar + PAIR_FULL, 1)
            if cutlass.const_expr(self.multicast):
                for i in cutlass.range_constexpr(N_CNT):
                    sCnt[i] = cutlass.Int32(0)
        cute.arch.mbarrier_init_fence()
        cnt = cutlass.Uint32(0)  # step 63: rank 0's first counter (shared::cluster address)
        if cutlass.const_expr(self.multicast):
            # the peer's multicast TMAs complete bytes on this CTA's chunk mbarriers and its
            # atomics count in rank 0's counters: both initialised before either starts
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()
            cnt = cluster_address(storage.sCnt.data_ptr(), 0)
        tKsKt, tKgK = self.page_tma_partitions(tma_atom, mKVt, sK)
        if warp == 0:
            cute.arch.sync_warp()
            cpasync.prefetch_descriptor(tma_atom)
        if cutlass.const_expr(self.pdl_split):
            # step 80: nothing above read or wrote global memory; the kernel before this one
            # in the stream may still be writing Q, the page table or reading the workspace
            cute.arch.griddepcontrol_wait()
            if cutlass.const_expr(self.pdl_trigger):
                cute.arch.griddepcontrol_launch_dependents()  # (step 81: the next grid may launch)

        # ---- step 14: the producer warpgroup (warps 8-11) apart from the math warpgroups ----
        # (each role's register budget is set at the top of its branch, and the branches meet
        # only at the kernel's end, so that ptxas allocates each within its own budget)
        math_wg = True
        if cutlass.const_expr(self.producer_wg):
            math_wg = wg < NUM_WG
            cute.arch.barrier()  # the mbarrier inits, seen by all 384 threads
            if cutlass.const_expr(self.crossover):
                # step 26: and by the peer CTA, which arrives and stores into this one's SMEM
                cute.arch.cluster_arrive()
                cute.arch.cluster_wait()

        # step 66: the math region traced once per warpgroup with its index a compile-time
        # constant, each copy run by its warpgroup alone (one branch on the warp-uniform index),
        # so that the stage, V half and barriers are constants and ptxas computes the WGMMA
        # descriptors and mbarrier addresses in uniform registers; the other builds trace it
        # once, ``wg`` the thread's run-time index
        wg_rt = cute.arch.make_warp_uniform(cute.arch.warp_idx()) // (WG_THREADS // 32)
        for wg_c in cutlass.range_constexpr(NUM_WG if self.wg_constant else 1):
            if cutlass.const_expr(self.wg_constant):
                wg = wg_c
                math_wg = wg_rt == wg_c
            if math_wg:  # (a Python True without the producer or step 66: no branch)
                if cutlass.const_expr(self.producer_wg):
                    cute.arch.setmaxregister_increase(self.math_regs)
                # ---- MMA partitions (once per CTA) -----------------------------------------------
                thr_qk = qk_mma.get_slice(wg_tidx)
                tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ))  # (MMA, 1, 36)
                tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK))  # (MMA, 1, 36, 2)
                acc_s_shape = thr_qk.partition_shape_C((TILE_M, PAGE))
                tScS = _mn_view(thr_qk.partition_C(cute.make_identity_tensor((TILE_M, PAGE))))
                # P's place in each stage: the rope chunk (columns 512..575), a 64 x 64 K-major tile
                sP = [cute.local_tile(sK[None, None, st], (TILE_M, CHUNK), (0, P_CHUNK))
                      for st in range(STAGES)]  # fmt: skip
                tPsP = [thr_qk.partition_C(sP[st]) for st in range(STAGES)]  # S's thread layout
                # step 6: P by stmatrix (8x8 16-bit matrices, 4 per instruction), S's layout
                st_copy = cute.make_tiled_copy_C(
                    cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), self.dtype),
                    qk_mma,
                )
                thr_st = st_copy.get_slice(wg_tidx)
                tPsP_st = [thr_st.partition_D(sP[st]) for st in range(STAGES)]

                thr_rs = pv_rs.get_slice(wg_tidx)
                thr_ss = pv_ss.get_slice(wg_tidx)
                # step 85: Q's rope chunk (columns 512..575) as the register A operand of S's
                # last four k-blocks; (qk_rs, its register copy, K's B operand), and sQ's view of
                # the columns the copy reads
                rope = None
                tSrQr = tSsQr = None
                if cutlass.const_expr(self.q_rope_regs):
                    thr_qr = qk_rs.get_slice(wg_tidx)
                    tSsQr = thr_qr.partition_A(
                        cute.local_tile(sQ, (TILE_M, CHUNK), (0, P_CHUNK))
                    )  # fmt: skip
                    tSrQr = cute.make_rmem_tensor(
                        cute.make_layout(((2, 2, 2), 1, CHUNK // 16)), self.dtype
                    )
                    tSrKr = thr_qr.make_fragment_B(thr_qr.partition_B(sK))  # (MMA, 1, 36, 2)
                    # set here, outside every run-time branch, so that the value dominates each
                    # use (a field set inside one branch cannot be read in another)
                    qk_rs.set(warpgroup.Field.ACCUMULATE, True)
                    rope = (qk_rs, tSrQr, tSrKr)
                # this warpgroup's V half
                sVt_wg = cute.local_tile(sVt, (HALF_V, PAGE, STAGES), (wg, 0, 0))
                tOrV = thr_rs.make_fragment_B(thr_rs.partition_B(sVt_wg))  # (MMA, 1, 4, 2)
                tOrVs = thr_ss.make_fragment_B(thr_ss.partition_B(sVt_wg))
                tOrPs = [thr_ss.make_fragment_A(thr_ss.partition_A(sP[st])) for st in range(STAGES)]
                acc_o = thr_rs.make_fragment_C(thr_rs.partition_shape_C((TILE_M, HALF_V)))
                acc_o_mn = _mn_view(acc_o)

                n_rows = cute.size(tScS, mode=[0])  # 2 rows per thread
                n_cols = cute.size(tScS, mode=[1])  # 16 columns per thread and row
                # m (log2), and the row sum of the own P's
                row_max = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
                row_sum = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
                limit = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Int32)
                sc_a = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
                sc_b = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
                bar_me = BAR_WG[0] + wg
                #: step 31: S carried from the end of one pair into the next (WG0's next page)
                acc_s_next = thr_qk.make_fragment_C(acc_s_shape)

                # ---- the CTA's segments: one (sequence, page range), or step 11's work list ------
                # (a part of the pages of all sequences end to end: one segment per sequence it
                # crosses, each with its own Q, pages and epilogue; the mbarriers' phases run on)
                seg_lo, seg_hi = 0, 1
                if cutlass.const_expr(self.work_list):
                    seg_lo = mWork[sp, 0]
                    seg_hi = mWork[sp, 1]
                ph0 = cutlass.Int32(0)  # the parity of stage 0's mbarrier phases so far
                ph1 = cutlass.Int32(0)  # and of stage 1's
                got0 = cutlass.Int32(0)  # step 12: this segment's first page is already loading
                got1 = cutlass.Int32(0)  # and its second
                q_got = cutlass.Int32(0)  # step 28: this segment's Q is already loading
                # (without the work list the one-trip loop is unrolled: step 9's code)
                for seg in cutlass.range(seg_lo, seg_hi, unroll=1, unroll_full=not self.work_list):
                    seq = bidx
                    slot = sp
                    pieces = cutlass.Int32(0)
                    if cutlass.const_expr(self.work_list):
                        seq = mWork[seg, 0]
                        slot = mWork[seg, 3]  # the workspace slot of this piece of the sequence
                        pieces = mWork[PARTS_CAP + seq, 0]
                    seqlen = mLens[seq]
                    p0 = cutlass.Int32(0)
                    p1 = cutlass.Int32(0)
                    if cutlass.const_expr(self.work_list):
                        p0 = mWork[seg, 1]
                        p1 = mWork[seg, 2]
                    else:
                        p0, p1 = self.page_range(seqlen, slot, num_splits, pages_per_split, split)

                    # step 12: the part's next segment, whose first two pages the last pairs load
                    nseq = cutlass.Int32(0)
                    np0 = cutlass.Int32(0)
                    np1 = cutlass.Int32(0)
                    if cutlass.const_expr(self.prefetch_next):  # noqa: SIM102 (compile-time, then run-time)
                        if seg + 1 < seg_hi:
                            nseq = mWork[seg + 1, 0]
                            np0 = mWork[seg + 1, 1]
                            np1 = mWork[seg + 1, 2]

                    # step 28: the part's next sequence, whose Q the last pair loads
                    qseq = cutlass.Int32(0)
                    q_next = cutlass.Int32(0)
                    if cutlass.const_expr(self.early_q):  # noqa: SIM102 (compile-time, then run-time)
                        if seg + 1 < seg_hi:
                            qseq = mWork[seg + 1, 0]
                            q_next = cutlass.Int32(1)

                    # steps 78, 79: Q's cp.async first (sQ is free: every QK of the previous
                    # segment retired before its epilogue's barriers)
                    if cutlass.const_expr(self.q_first):
                        self.load_q(q_copy, mQ, sQ, seq, m_blk, valid_rows, tidx)
                        cute.arch.cp_async_commit_group()

                    # the first two pages (warp 0), unless the previous segment loaded them
                    # (step 12) or the producer warpgroup fills the stages (step 14)
                    if cutlass.const_expr(self.multicast):
                        # step 63: both CTAs are past their previous segment (sync_math); the
                        # second to count loads the two pages into both
                        if warp == 0 and p1 > p0:
                            self.arm_chunks(mbar, 0, 0, N_CHUNKS)
                            if p0 + 1 < p1:
                                self.arm_chunks(mbar, 1, 0, N_CHUNKS)
                            if self.freed_last(cnt + 4 * CNT_SEG, lane):
                                self.multicast_chunks(tma_atom, tKgK, tKsKt, mbar, mPT[seq, p0], 0)
                                if p0 + 1 < p1:
                                    pg = mPT[seq, p0 + 1]
                                    self.multicast_chunks(tma_atom, tKgK, tKsKt, mbar, pg, 1)
                    elif cutlass.const_expr(not self.producer_wg):  # noqa: SIM102 (then run time)
                        if warp == 0:
                            if p1 > p0 and got0 == 0:
                                self.issue_chunks(
                                    tma_atom, tKgK, tKsKt, mbar, mPT[seq, p0], 0, 0, N_CHUNKS
                                )
                            if p0 + 1 < p1 and got1 == 0:
                                self.issue_chunks(
                                    tma_atom, tKgK, tKsKt, mbar, mPT[seq, p0 + 1], 1, 0, N_CHUNKS
                                )

                    # ---- Q by cp.async (all 256 threads), one CTA barrier before the loop --------
                    # (step 28: unless the previous segment's last pair issued it)
                    # (steps 78, 79: issued and committed above, before the pages)
                    if cutlass.const_expr(not self.q_first):
                        if cutlass.const_expr(self.early_q):
                            if q_got == 0:
                                self.load_q(q_copy, mQ, sQ, seq, m_blk, valid_rows, tidx)
                        else:
                            self.load_q(q_copy, mQ, sQ, seq, m_blk, valid_rows, tidx)
                        cute.arch.cp_async_commit_group()
                    cute.arch.cp_async_wait_group(0)
                    cute.arch.fence_proxy("async.shared", space="cta")
                    self.sync_math()
                    if cutlass.const_expr(self.q_rope_regs):
                        # step 85: this segment's Q rope columns into registers (sQ is complete)
                        for i in cutlass.range_constexpr(cute.size(tSrQr)):
                            tSrQr[i] = tSsQr[i]

                    # this segment's accumulators and row state
                    acc_o.fill(0.0)
                    for i in cutlass.range_constexpr(n_rows):
                        row_max[i] = NEG_INF
                        row_sum[i] = 0.0
                        lim = seqlen
                        if cutlass.const_expr(self.causal and self.s > 1):
                            r = (m_blk * TILE_M + tScS[i, 0][0]) // self.h
                            lim = cutlass.min(seqlen - self.s + r + 1, seqlen)
                        limit[i] = lim
                    # step 67: the lowest of those limits (row r = 0), below which no page masks
                    lim_lo = seqlen
                    if cutlass.const_expr(self.causal and self.s > 1):
                        lim_lo = seqlen - self.s + 1

                    # ---- main loop over pairs of pages -------------------------------------------
                    n_pairs = (p1 - p0 + 1) // 2
                    # step 25: the page indices of the first pair's prefetches (warp 0)
                    pf0 = cutlass.Int32(0)
                    pf1 = cutlass.Int32(0)
                    if cutlass.const_expr(self.l2_pages):  # noqa: SIM102 (compile time, then run time)
                        if warp == 0 and p1 > p0:  # (an empty segment has no table entry to read)
                            pf0 = mPT[seq, cutlass.min(p0 + BF16_L2_AHEAD, p1 - 1)]
                            pf1 = mPT[seq, cutlass.min(p0 + BF16_L2_AHEAD + 1, p1 - 1)]
                    for it in cutlass.range(n_pairs, unroll=1):
                        pg0 = p0 + 2 * it
                        has1 = pg0 + 1 < p1
                        if cutlass.const_expr(self.l2_pages):  # noqa: SIM102
                            if warp == 0:
                                # step 25: the pair after next into L2, then the next pair's indices
                                if pg0 + BF16_L2_AHEAD < p1:
                                    cute.prefetch(tma_atom, tKgK[None, pf0, None])
                                if pg0 + BF16_L2_AHEAD + 1 < p1:
                                    cute.prefetch(tma_atom, tKgK[None, pf1, None])
                                pf0 = mPT[seq, cutlass.min(pg0 + BF16_L2_AHEAD + 2, p1 - 1)]
                                pf1 = mPT[seq, cutlass.min(pg0 + BF16_L2_AHEAD + 3, p1 - 1)]
                        phase0 = (it % 2) ^ ph0  # stage 0's mbarrier phase for this pair
                        phase1 = (it % 2) ^ ph1
                        phase = phase0
                        if wg == 1:
                            phase = phase1  # this warpgroup's own stage
                        # step 5: the next pair's page indices, read by the two issuing warps now
                        # (their global loads overlap this pair's QK) instead of right before each
                        # TMA issue
                        nx0 = cutlass.Int32(0)
                        nx1 = cutlass.Int32(0)
                        if cutlass.const_expr(self.early_pages):  # noqa: SIM102 (compile-time, then run-time)
                            if warp % 4 == 0:
                                nx0 = mPT[seq, cutlass.min(pg0 + 2, p1 - 1)]
                                nx1 = mPT[seq, cutlass.min(pg0 + 3, p1 - 1)]
                        # this warpgroup's own page: WG0 pg0 in stage 0, WG1 pg0+1 in stage 1
                        own = wg
                        pg_own = pg0 + wg
                        acc_s = acc_s_next  # step 31: WG0's S may already be under way
                        if cutlass.const_expr(not self.qk_behind_pv):
                            acc_s = thr_qk.make_fragment_C(acc_s_shape)
                        s_mn = _mn_view(acc_s)
                        if wg == 0 or has1:
                            if cutlass.const_expr(self.qk_behind_pv):
                                # step 31: WG0's S of every pair but a segment's first was issued
                                # and waited for at the end of the pair before
                                if wg == 1 or it == 0:
                                    if cutlass.const_expr(self.qk_release_order):
                                        # step 65: here all 9 chunks in step 33's release order
                                        # (WG1: 4-7, 0-3, 8), as 61 takes them; only the S0 issued
                                        # behind PV1L is split in two
                                        qk_mma = self.qk_chunks(
                                            qk_mma, acc_s, tSrQ, tSrK, mbar, own, phase, -1, rope
                                        )
                                    else:
                                        qk_mma = self.qk_chunks(
                                            qk_mma, acc_s, tSrQ, tSrK, mbar, own, phase, 0, rope
                                        )
                                        qk_mma = self.qk_chunks(
                                            qk_mma, acc_s, tSrQ, tSrK, mbar, own, phase, 1, rope
                                        )
                                    warpgroup.wait_group(0)
                            else:
                                qk_mma = self.qk_chunks(
                                    qk_mma, acc_s, tSrQ, tSrK, mbar, own, phase, -1, rope
                                )
                                warpgroup.wait_group(0)
                            # mask: keys past the row's limit (the sequence's end, or causal);
                            # step 67: only where the page reaches past the lowest limit
                            if (pg_own + 1) * PAGE > lim_lo if self.tail_mask else True:
                                for i in cutlass.range_constexpr(n_rows):
                                    for j in cutlass.range_constexpr(n_cols):
                                        if pg_own * PAGE + tScS[i, j][1] >= limit[i]:
                                            s_mn[i, j] = NEG_INF
                        else:
                            acc_s.fill(NEG_INF)  # no K1 in this (last, odd) pair: no keys

                        # this page's row max (log2 domain, scaled)
                        mloc = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
                        for i in cutlass.range_constexpr(n_rows):
                            mx = NEG_INF
                            for j in cutlass.range_constexpr(n_cols):
                                mx = cute.arch.fmax(mx, s_mn[i, j])
                            mloc[i] = (
                                cute.arch.warp_reduction_max(mx, threads_in_group=4) * scale_log2
                            )

                        if wg == 0:
                            # m0 = max(m, rowmax S0); publish it; sc_a = exp2(m - m0)
                            for i in cutlass.range_constexpr(n_rows):
                                m_new = self.running_max(row_max[i], mloc[i])
                                sc_a[i] = self.rescale(row_max[i], m_new)
                                row_max[i] = m_new
                                if lane % 4 == 0:
                                    sM0[tScS[i, 0][0]] = m_new
                            cute.arch.barrier_arrive(barrier_id=BAR_M0, number_of_threads=THREADS)
                        else:
                            # wait for m0; m1 = max(m0, rowmax S1); publish it; sc_a = exp2(m - m1)
                            cute.arch.barrier(barrier_id=BAR_M0, number_of_threads=THREADS)
                            for i in cutlass.range_constexpr(n_rows):
                                m0 = sM0[tScS[i, 0][0]]
                                m_new = self.running_max(m0, mloc[i])
                                sc_a[i] = self.rescale(row_max[i], m_new)  # = sc0 * sc1
                                row_max[i] = m_new
                                if lane % 4 == 0:
                                    sM1[tScS[i, 0][0]] = m_new
                            cute.arch.barrier_arrive(barrier_id=BAR_M1, number_of_threads=THREADS)

                        # P = exp2(S - m_new) of this warpgroup's page; O_half and row sum rescaled
                        for i in cutlass.range_constexpr(n_rows):
                            base = row_max[i]
                            if base == NEG_INF:
                                base = cutlass.Float32(
                                    0.0
                                )  # nothing seen yet: exp2(-inf) = 0, never NaN
                            part = cutlass.Float32(0.0)
                            for j in cutlass.range_constexpr(n_cols):
                                p = cute.math.exp2(s_mn[i, j] * scale_log2 - base, fastmath=True)
                                s_mn[i, j] = p
                                part += p
                            row_sum[i] = row_sum[i] * sc_a[i] + part
                            # (steps 86-87 keep this one unconditional: the same vote-branch here,
                            # step 88, makes ptxas serialize every WGMMA of the kernel)
                            if cutlass.const_expr(not self.lazy_rescale_first):
                                for j in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[1])):
                                    acc_o_mn[i, j] = acc_o_mn[i, j] * sc_a[i]
                        if cutlass.const_expr(self.lazy_rescale_first):
                            # step 88: the first O rescale under the warp vote too
                            self.rescale_rows_if_moved(acc_o_mn, sc_a, n_rows)
                        rP = self.acc_to_a(acc_s)
                        if cutlass.const_expr(self.p1_before_pv):  # noqa: SIM102
                            # step 74: P1 over stage 1's rope chunk before PV1R (published below)
                            if wg == 1 and has1:
                                self.store_p(acc_s, tPsP[1], st_copy, tPsP_st[1])

                        # O_half += P V_half of the own page, P from registers
                        if wg == 0 or has1:
                            self.zero_tail_half(
                                sK, own, seqlen - pg_own * PAGE, wg, wg_tidx, bar_me
                            )
                            warpgroup.fence()
                            for k in cutlass.range_constexpr(PAGE // 16):
                                pv_rs.set(warpgroup.Field.ACCUMULATE, True)
                                cute.gemm(
                                    pv_rs, acc_o, rP[None, None, k], tOrV[None, None, k, own], acc_o
                                )
                            warpgroup.commit_group()
                            if cutlass.const_expr(self.early_v0l):  # noqa: SIM102
                                # step 64: PV0L retired in every warp of WG0 (reload_left's
                                # barrier): V0L is free for page pg0 + 2 before m1 is taken
                                if wg == 0:
                                    warpgroup.wait_group(0)
                                    self.reload_left(
                                        tma_atom, tKgK, tKsKt, mPT, mbar, seq, 0, pg0 + 2, p1, nx0,
                                        warp, wg_tidx, bar_me, cnt, lane,
                                    )  # fmt: skip

                        if wg == 0:
                            # wait for m1; P0 * exp2(m0 - m1) over the rope chunk of stage 0;
                            # publish it
                            cute.arch.barrier(barrier_id=BAR_M1, number_of_threads=THREADS)
                            for i in cutlass.range_constexpr(n_rows):
                                m1 = sM1[tScS[i, 0][0]]
                                sc_b[i] = self.rescale(row_max[i], m1)
                                row_max[i] = m1
                                for j in cutlass.range_constexpr(n_cols):
                                    s_mn[i, j] = s_mn[i, j] * sc_b[i]
                            self.store_p(acc_s, tPsP[0], st_copy, tPsP_st[0])
                            cute.arch.fence_proxy("async.shared", space="cta")
                            # also proves WG0's QK on stage 0 done (WG1 reloads chunks 4-8 after it)
                            cute.arch.barrier_arrive(barrier_id=BAR_P0, number_of_threads=THREADS)
                            # PV0L done (every warp of WG0: the warpgroup barrier): V0L (chunks 0-3
                            # of stage 0) is free for page pg0+2 (step 64 reloaded it already)
                            if cutlass.const_expr(not self.early_v0l):
                                warpgroup.wait_group(0)
                                self.reload_left(
                                    tma_atom, tKgK, tKsKt, mPT, mbar, seq, 0, pg0 + 2, p1, nx0,
                                    warp, wg_tidx, bar_me, cnt, lane,
                                )  # fmt: skip
                            if cutlass.const_expr(self.prefetch_next):  # noqa: SIM102
                                # stage 0's last page of this segment: V0L of the next one's first
                                if warp == 0 and pg0 + 2 >= p1 and np0 < np1:
                                    pg = mPT[nseq, np0]
                                    self.issue_chunks(
                                        tma_atom, tKgK, tKsKt, mbar, pg, 0, V_L[0], V_L[1]
                                    )
                            for i in cutlass.range_constexpr(n_rows):
                                row_sum[i] = row_sum[i] * sc_b[i]
                                if cutlass.const_expr(not self.lazy_rescale):
                                    for j in cutlass.range_constexpr(cute.size(acc_o_mn, mode=[1])):
                                        acc_o_mn[i, j] = acc_o_mn[i, j] * sc_b[i]
                            if cutlass.const_expr(self.lazy_rescale):
                                # steps 86-87: O_L * sc1 only in a warp where m1 moved past m0
                                self.rescale_rows_if_moved(acc_o_mn, sc_b, n_rows)
                            # O_L += P1 V1L, P1 from SMEM (stage 1's rope chunk) unconditional: also
                            # proves WG1's QK on stage 1 is done before WG0 reloads it
                            cute.arch.barrier(barrier_id=BAR_P1, number_of_threads=THREADS)
                            if cutlass.const_expr(self.early_q):  # noqa: SIM102
                                # step 28: both QKs of the last pair have read sQ (WG1's: BAR_P1)
                                if it == n_pairs - 1 and q_next == 1:
                                    self.load_q(q_copy, mQ, sQ, qseq, m_blk, valid_rows, tidx)
                                    cute.arch.cp_async_commit_group()
                            if has1:
                                v1l_end = V_L[0] + self.v1l_rewaits  # (steps 73, 76, 77)
                                for c in cutlass.range_constexpr(V_L[0], v1l_end):
                                    cute.arch.mbarrier_wait(
                                        mbar + N_CHUNKS + c, phase1
                                    )  # V1L landed (seen)
                                self.fence_remote_chunk()
                                self.zero_tail_half(
                                    sK, 1, seqlen - (pg0 + 1) * PAGE, 0, wg_tidx, bar_me
                                )
                                if cutlass.const_expr(self.pv0r_first):
                                    # step 32: WG1's PV0R is issued (queued ahead of this PV1L)
                                    cute.arch.barrier(barrier_id=BAR_V0R, number_of_threads=THREADS)
                                warpgroup.fence()
                                for k in cutlass.range_constexpr(PAGE // 16):
                                    pv_ss.set(warpgroup.Field.ACCUMULATE, True)
                                    a_k, b_k = tOrPs[1][None, None, k], tOrVs[None, None, k, 1]
                                    cute.gemm(pv_ss, acc_o, a_k, b_k, acc_o)
                                warpgroup.commit_group()
                                # WG0's reload of stage 1's left half, for page pg0 + 3 (below)
                                reload1 = (tma_atom, tKgK, tKsKt, mPT, mbar, seq, 1, pg0 + 3, p1)
                                reload1 = (*reload1, nx1, warp, wg_tidx, bar_me, cnt, lane)
                                if cutlass.const_expr(self.qk_behind_pv):
                                    # step 31: the next pair's S0 (page pg0 + 2, stage 0) queued
                                    # behind PV1L: chunks 0-3, PV1L retired (the older group),
                                    # stage 1 reloaded, chunks 4-8, all waited for inside one branch
                                    # (no WGMMA in flight where the branches meet: ptxas would wait
                                    # for everything there)
                                    if pg0 + 2 < p1:
                                        qk_mma = self.qk_chunks(
                                            qk_mma, acc_s, tSrQ, tSrK, mbar, 0, phase0 ^ 1, 0, rope
                                        )
                                        warpgroup.wait_group(1)
                                        self.reload_left(*reload1)
                                        qk_mma = self.qk_chunks(
                                            qk_mma, acc_s, tSrQ, tSrK, mbar, 0, phase0 ^ 1, 1, rope
                                        )
                                        warpgroup.wait_group(0)
                                    else:
                                        warpgroup.wait_group(0)
                                        self.reload_left(*reload1)
                                else:
                                    warpgroup.wait_group(0)
                                    self.reload_left(*reload1)
                                if cutlass.const_expr(self.prefetch_next):  # noqa: SIM102
                                    # stage 1's last page: V1L and P1 of the next segment's second
                                    if warp == 0 and pg0 + 3 >= p1 and np0 + 1 < np1:
                                        pg = mPT[nseq, np0 + 1]
                                        self.issue_chunks(
                                            tma_atom, tKgK, tKsKt, mbar, pg, 1, V_L[0], V_L[1]
                                        )
                                        self.issue_chunks(
                                            tma_atom, tKgK, tKsKt, mbar, pg, 1, P_CHUNK, N_CHUNKS
                                        )
                        else:
                            # P1 over the rope chunk of stage 1; publish it
                            if has1:
                                if cutlass.const_expr(not self.p1_before_pv):
                                    self.store_p(acc_s, tPsP[1], st_copy, tPsP_st[1])
                                cute.arch.fence_proxy("async.shared", space="cta")
                            # unconditional (the module docstring: it also proves WG1's QK done)
                            cute.arch.barrier_arrive(barrier_id=BAR_P1, number_of_threads=THREADS)
                            # O_R += P0 V0R, P0 from SMEM (stage 0's rope chunk)
                            cute.arch.barrier(barrier_id=BAR_P0, number_of_threads=THREADS)
                            if cutlass.const_expr(self.early_q):  # noqa: SIM102
                                # step 28: both QKs of the last pair have read sQ (WG0's: BAR_P0)
                                if it == n_pairs - 1 and q_next == 1:
                                    self.load_q(q_copy, mQ, sQ, qseq, m_blk, valid_rows, tidx)
                                    cute.arch.cp_async_commit_group()
                            v0r_end = V_R[1] if self.rewait_v0r else V_R[0]  # (steps 72, 75-85)
                            for c in cutlass.range_constexpr(V_R[0], v0r_end):
                                cute.arch.mbarrier_wait(
                                    mbar + c, phase0
                                )  # V0R landed (seen by this WG)
                            self.fence_remote_chunk()
                            self.zero_tail_half(sK, 0, seqlen - pg0 * PAGE, 1, wg_tidx, bar_me)
                            warpgroup.fence()
                            for k in cutlass.range_constexpr(PAGE // 16):
                                pv_ss.set(warpgroup.Field.ACCUMULATE, True)
                                a_k, b_k = tOrPs[0][None, None, k], tOrVs[None, None, k, 0]
                                cute.gemm(pv_ss, acc_o, a_k, b_k, acc_o)
                            warpgroup.commit_group()
                            if cutlass.const_expr(self.pv0r_first):  # noqa: SIM102
                                # step 32: PV0R issued; WG0 issues its PV1L after it (pairs with K1)
                                if has1:
                                    cute.arch.barrier_arrive(
                                        barrier_id=BAR_V0R, number_of_threads=THREADS
                                    )
                            if cutlass.const_expr(self.release_order or self.early_v1r):
                                # steps 16 and 39: PV1R (the older group) retired in every warp of
                                # WG1: K1's chunks 4-7 are free now, while PV0R runs; to the
                                # producer (16, the FP8 cache), or page pg0 + 3 by TMA (39)
                                warpgroup.wait_group(1)
                                cute.arch.barrier(barrier_id=bar_me, number_of_threads=WG_THREADS)
                                if cutlass.const_expr(self.release_order):
                                    if has1:
                                        self.release_to_producer(mbar, 1, 1, wg_tidx)
                                else:  # noqa: PLR5501 (compile time, then run time)
                                    if warp == NUM_WG * 2 and pg0 + 3 < p1:
                                        self.load_group(
                                            tma_atom, tKgK, tKsKt, mbar, mPT[seq, pg0 + 3], 1,
                                            (V_R,), cnt + 4 * release_counter(1, 1), lane,
                                        )  # fmt: skip
                            warpgroup.wait_group(
                                0
                            )  # PV1R and PV0R both done, in every warp of WG1:
                            cute.arch.barrier(barrier_id=bar_me, number_of_threads=WG_THREADS)
                            # step 14: K0's chunks 4-8 and K1's 4-7 to the producer
                            self.release_to_producer(mbar, 0, 1, wg_tidx)
                            if cutlass.const_expr(not self.release_order):  # noqa: SIM102
                                if has1:
                                    self.release_to_producer(mbar, 1, 1, wg_tidx)
                            if cutlass.const_expr(not self.producer_wg):  # noqa: SIM102 (then run time)
                                if warp == NUM_WG * 2:  # warp 4, WG1's first
                                    if pg0 + 2 < p1:  # V0R and P0 (chunks 4-8 of stage 0)
                                        pg = nx0
                                        if cutlass.const_expr(not self.early_pages):
                                            pg = mPT[seq, pg0 + 2]
                                        self.load_group(
                                            tma_atom, tKgK, tKsKt, mbar, pg, 0,
                                            ((V_R[0], N_CHUNKS),), cnt + 4 * release_counter(0, 1),
                                            lane,
                                        )  # fmt: skip
                                    # V1R (chunks 4-7 of stage 1), unless step 39 reloaded them
                                    if cutlass.const_expr(not self.early_v1r):  # noqa: SIM102
                                        if pg0 + 3 < p1:
                                            pg = nx1
                                            if cutlass.const_expr(not self.early_pages):
                                                pg = mPT[seq, pg0 + 3]
                                            self.issue_chunks(
                                                tma_atom, tKgK, tKsKt, mbar, pg, 1, V_R[0], V_R[1]
                                            )
                                    if cutlass.const_expr(self.prefetch_next):
                                        # each stage's last page of this segment: the next one's
                                        # first (stage 0) and second (stage 1, only in a pair that
                                        # has one)
                                        if pg0 + 2 >= p1 and np0 < np1:
                                            pg = mPT[nseq, np0]
                                            self.issue_chunks(
                                                tma_atom, tKgK, tKsKt, mbar, pg, 0, V_R[0], N_CHUNKS
                                            )
                                        if has1 and pg0 + 3 >= p1 and np0 + 1 < np1:
                                            pg = mPT[nseq, np0 + 1]
                                            self.issue_chunks(
                                                tma_atom, tKgK, tKsKt, mbar, pg, 1, V_R[0], V_R[1]
                                            )

                    # ---- epilogue (the base kernel's): row sums, O / sum, O and LSE --------------
                    if cutlass.const_expr(self.work_list):
                        # a sequence in one piece stores O itself; the pieces of a longer one go to
                        # their workspace slots for the combine
                        paired = cutlass.Int32(0)
                        if cutlass.const_expr(self.pair_merge):
                            paired = mWork[PARTS_CAP + seq, 1]
                        if paired != 0:
                            # step 62: this part and its cluster peer's hold the sequence's two
                            # pieces, whole; each CTA merges and stores one column half of O
                            o_stage = None
                            if cutlass.const_expr(self.o_via_smem):
                                # step 71: the merging warpgroup's half through stage 1's chunks
                                # 0-3 (the peer's half arrives in stage 0)
                                s_o = cute.local_tile(sK[None, None, 1], (TILE_M, HALF_V), (0, 0))
                                o_stage = (s_o, pv_rs, wg_tidx, bar_me)
                            self.pair_merge_epilogue(
                                (acc_o, row_sum, row_max, tScS, thr_rs), sSum,
                                storage.sK.data_ptr(), mbar, (mO, mL), seq, m_blk, wg, wg_tidx,
                                lane, valid_rows, o_stage=o_stage,
                            )  # fmt: skip
                        elif pieces > 1:
                            # step 59: the first piece keeps its O and merges the others
                            first = None
                            if cutlass.const_expr(self.owner_merge):
                                first = slot == 0
                            self.epilogue(
                                acc_o, row_sum, row_max, tScS, sSum, thr_rs, mO, mL, mOa, mLa, seq,
                                m_blk, slot, wg, lane, valid_rows, True, keep_o=first,
                            )  # fmt: skip
                            if cutlass.const_expr(self.owner_merge):
                                if first:
                                    self.merge_as_first_piece(
                                        (acc_o, row_sum, row_max, tScS, thr_rs), (mO, mL),
                                        (mOa, mLa), mCnt, seq, m_blk, wg, lane, valid_rows, pieces,
                                        tidx,
                                    )  # fmt: skip
                                else:
                                    self.piece_stored(mCnt, seq, m_blk, tidx)
                            elif cutlass.const_expr(self.merge_in_kernel):
                                self.piece_stored(mCnt, seq, m_blk, tidx)
                        else:
                            o_stage = None
                            if cutlass.const_expr(self.o_via_smem):
                                # step 70: this warpgroup's O half through stage 0's chunks
                                # 4 wg .. 4 wg + 3 (the same swizzled layout as the page)
                                s_o = cute.local_tile(sK[None, None, 0], (TILE_M, HALF_V), (0, wg))
                                o_stage = (s_o, pv_rs, wg_tidx, bar_me)
                            self.epilogue(
                                acc_o, row_sum, row_max, tScS, sSum, thr_rs, mO, mL, mOa, mLa, seq,
                                m_blk, slot, wg, lane, valid_rows, False, o_stage=o_stage,
                            )  # fmt: skip
                        # every thread is past its last WGMMA and its reads of sQ and sSum before
                        # the next segment's TMA and Q overwrite them
                        self.sync_math()
                        ph0 = ph0 ^ (n_pairs % 2)
                        if cutlass.const_expr(self.early_q):
                            # the next segment's Q was issued only if this one had a pair
                            q_got = cutlass.Int32(0)
                            if n_pairs > 0 and q_next == 1:
                                q_got = cutlass.Int32(1)
                        ph1 = ph1 ^ (((p1 - p0) // 2) % 2)
                        if cutlass.const_expr(self.prefetch_next):
                            # what this segment loaded of the next: a stage's page only where this
                            # segment had a page in that stage (its last reader issues the next)
                            got0 = cutlass.Int32(0)
                            got1 = cutlass.Int32(0)
                            if p1 > p0 and np0 < np1:
                                got0 = cutlass.Int32(1)
                            if p1 > p0 + 1 and np0 + 1 < np1:
                                got1 = cutlass.Int32(1)
                    else:
                        self.epilogue(
                            acc_o, row_sum, row_max, tScS, sSum, thr_rs, mO, mL, mOa, mLa, seq,
                            m_blk, sp, wg, lane, valid_rows, split, mCnt, sFlag, num_splits, tidx,
                        )  # fmt: skip
                if cutlass.const_expr(self.merge_in_kernel and split):
                    # ---- step 35: the merge, every warp of the grid, after its CTA's segments ----
                    warps = THREADS // 32
                    gwarp = (sp * self.m_tiles + m_blk) * warps + tidx // 32
                    nwarps = num_splits * self.m_tiles * warps
                    if cutlass.const_expr(self.merge_rows == 1):
                        for row in cutlass.range(gwarp, total, nwarps, unroll=1):
                            rseq = row // self.rows
                            rpieces = mWork[PARTS_CAP + rseq, 0]
                            if rpieces > 1:
                                self.merge_when_stored(
                                    (vO, vL, vOut, vLse), mCnt, row, rseq, rpieces, lane
                                )  # fmt: skip
                    else:
                        # step 37: rows gwarp + (j * R + r) * nwarps, r < R, merged together
                        step_rows = nwarps * self.merge_rows
                        for row0 in cutlass.range(gwarp, total, step_rows, unroll=1):
                            self.merge_rows_when_stored(
                                (vO, vL, vOut, vLse), mCnt, mWork, row0, nwarps, total, lane
                            )  # fmt: skip

            else:
                if cutlass.const_expr(self.producer_wg):
                    cute.arch.setmaxregister_decrease(self.producer_regs)
                    self.fp8_producer(
                        mKV8, mSc, mPT, mLens, mWork, sK, mbar, tma_atom, tKgK, tKsKt, bidx, sp,
                        num_splits, pages_per_split, split, wg_tidx, warp,
                    )  # fmt: skip
        if cutlass.const_expr(self.crossover or self.multicast):
            # step 26: neither CTA leaves while its peer may still arrive on its mbarriers or
            # store into its SMEM (step 63: count in rank 0's counters)
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()

    # ---- helpers ------------------------------------------------------------------------------
    @cute.jit
    def fp8_producer(
        self,
        mKV8: cute.Tensor,
        mSc: cute.Tensor,
        mPT: cute.Tensor,
        mLens: cute.Tensor,
        mWork: cute.Tensor,
        sK: cute.Tensor,
        mbar: cute.Pointer,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        bidx: cutlass.Int32,
        sp: cutlass.Int32,
        num_splits: cutlass.Int32,
        pages_per_split: cutlass.Int32,
        split: cutlass.Constexpr,
        ptid: cutlass.Int32,
        warp: cutlass.Int32,
    ):
        """Step 14: the producer warpgroup (``ptid`` 0..127, warps 8-11). It walks the CTA's
        pages in the math warpgroups' order (page p0 + i of a segment into stage i % 2) and
        fills each page's stage in two groups, one per releasing warpgroup w: the e4m3 latent
        columns [256 w, 256 w + 256) (chunks 4w..4w+3), dequantised from registers into the
        16-bit stage (:meth:`fp8_store_half`), and with the group that frees it (w != stage)
        the rope chunk 8 by TMA. Before refilling a group it waits on the stage's "released"
        mbarrier of warpgroup w (the k-th fill of a stage waits for phase k - 1); after its
        stores, ``fence.proxy.async`` and its own barrier, one thread arrives on the group's 4
        chunk mbarriers, on which the math warpgroups wait as for a TMA. Each group's global
        loads are issued one page ahead, right after the group's previous stores, so they are
        in flight while the producer waits for the release. Later steps change the order and
        depth, not the protocol: step 16 fills a pair's groups in release order
        (:meth:`fp8_fill_pairs`), steps 17-19 hold one group in flight (loaded right after
        the previous group's stores), step 19 arrives on each chunk as it is written."""
        if cutlass.const_expr(self.crossover):
            # one copy of the loop per cluster rank: the group's columns stay compile-time
            # (a run-time group index cost 172 spill bytes in the producer's 72 registers)
            if cute.arch.block_idx_in_cluster() == 0:
                self.fp8_producer_crossover(
                    mKV8, mSc, mPT, mWork, sK, mbar, tma_atom, tKgK, tKsKt, sp, ptid, warp, 0
                )
            else:
                self.fp8_producer_crossover(
                    mKV8, mSc, mPT, mWork, sK, mbar, tma_atom, tKgK, tKsKt, sp, ptid, warp, 1
                )
            return
        seg_lo, seg_hi = 0, 1
        if cutlass.const_expr(self.work_list):
            seg_lo = mWork[sp, 0]
            seg_hi = mWork[sp, 1]
        f0 = cutlass.Int32(0)  # pages filled into stage 0 so far (all segments)
        f1 = cutlass.Int32(0)  # and into stage 1
        tok = self.fp8_token(ptid)
        par = ptid % 2
        n_sc = self.fp8_half_scales()
        buf = [cute.make_rmem_tensor(cute.make_layout((FP8_VEC, FP8_HALF_VECS)),
                                     cutlass.Float8E4M3FN) for _ in range(NUM_WG)]  # fmt: skip
        sbuf = [cute.make_rmem_tensor(cute.make_layout(n_sc), cutlass.Float32)
                for _ in range(NUM_WG)]  # fmt: skip
        for seg in cutlass.range(seg_lo, seg_hi, unroll=1, unroll_full=not self.work_list):
            seq = bidx
            if cutlass.const_expr(self.work_list):
                seq = mWork[seg, 0]
            p0 = cutlass.Int32(0)
            p1 = cutlass.Int32(0)
            if cutlass.const_expr(self.work_list):
                p0 = mWork[seg, 1]
                p1 = mWork[seg, 2]
            else:
                p0, p1 = self.page_range(mLens[seq], sp, num_splits, pages_per_split, split)
            if cutlass.const_expr(self.release_order):
                self.fp8_fill_pairs(
                    mKV8, mSc, mPT, sK, mbar, tma_atom, tKgK, tKsKt, seq, p0, p1, f0, f1, tok,
                    par, ptid, warp, buf, sbuf,
                )  # fmt: skip
            else:
                # steps 14, 15: each group's next load one page ahead into its own buffer;
                # step 17: one buffer, loaded right after the previous group's stores (the
                # next half of this page, or the next page's first half)
                nb = 1 if self.one_buffer else NUM_WG
                page = cutlass.Int32(0)
                if p1 > p0:
                    page = mPT[seq, p0]
                    for w in cutlass.range_constexpr(nb):
                        self.fp8_load_half(mKV8, mSc, page, w, tok, par, buf[w], sbuf[w])
                    # steps 20-23: the segment's next pages into L2 (the first is loaded now)
                    for d in cutlass.range_constexpr(1, self.l2_ahead):
                        if p0 + d < p1:
                            self.fp8_prefetch_l2(mKV8, mSc, mPT[seq, p0 + d], ptid)
                # step 22: the page index of the next prefetch, loaded a page before its use
                pf = cutlass.Int32(0)
                if cutlass.const_expr(self.l2_index_early):  # noqa: SIM102
                    if p0 + self.l2_ahead < p1:
                        pf = mPT[seq, p0 + self.l2_ahead]
                # step 30: the next page's index carried from the previous page (read there
                # two pages ahead of its page), so its load has a whole page to land in
                nxt_c = cutlass.Int32(0)
                if cutlass.const_expr(self.pt_ahead):  # noqa: SIM102 (compile, run time)
                    if p0 + 1 < p1:
                        nxt_c = mPT[seq, p0 + 1]
                for pg in cutlass.range(p0, p1, unroll=1):
                    if cutlass.const_expr(self.l2_index_early):
                        if pg + self.l2_ahead < p1:
                            self.fp8_prefetch_l2(mKV8, mSc, pf, ptid)
                        if pg + self.l2_ahead + 1 < p1:
                            pf = mPT[seq, pg + self.l2_ahead + 1]
                    elif cutlass.const_expr(self.l2_ahead):  # noqa: SIM102 (compile, run time)
                        if pg + self.l2_ahead < p1:
                            self.fp8_prefetch_l2(mKV8, mSc, mPT[seq, pg + self.l2_ahead], ptid)
                    st = (pg - p0) % 2
                    fill = f0 + (pg - p0) // 2
                    if st == 1:
                        fill = f1 + (pg - p0) // 2
                    nxt = cutlass.Int32(0)
                    if cutlass.const_expr(self.pt_ahead):
                        nxt = nxt_c
                    elif pg + 1 < p1:
                        nxt = mPT[seq, pg + 1]
                    for w in cutlass.range_constexpr(NUM_WG):
                        b = w % nb
                        if cutlass.const_expr(self.rolling_reload):
                            # step 24: group w from buf[0] and sbuf[w]; the next group (this
                            # page's second half, or the next page's first) is loaded while
                            # it converts: its scales first, each vector after its own. No
                            # branch: after a segment's last page it reloads from nxt = 0,
                            # a valid page whose values nothing reads. Each load is followed
                            # by a warp sync, which ptxas does not move loads across: without
                            # it, ptxas sinks them all to the group's end (the loads' uses
                            # are in the next group), as in step 22
                            nw = (w + 1) % NUM_WG
                            npage = page if w == 0 else nxt
                            self.fp8_load_scales(mSc, npage, nw, tok, par, sbuf[nw])
                            cute.arch.sync_warp()
                            self.fp8_fill(
                                sK, mbar, tma_atom, tKgK, tKsKt, page, st, w, fill, tok, par,
                                ptid, warp, buf[0], sbuf[w], (mKV8, npage, nw),
                            )  # fmt: skip
                            continue
                        self.fp8_fill(
                            sK, mbar, tma_atom, tKgK, tKsKt, page, st, w, fill, tok, par, ptid,
                            warp, buf[b], sbuf[b],
                        )  # fmt: skip
                        if cutlass.const_expr(self.one_buffer and w == 0):
                            self.fp8_load_half(mKV8, mSc, page, 1, tok, par, buf[b], sbuf[b])
                        else:
                            nw = (w + 1) % NUM_WG if self.one_buffer else w
                            if pg + 1 < p1:
                                self.fp8_load_half(mKV8, mSc, nxt, nw, tok, par, buf[b], sbuf[b])
                    page = nxt
                    if cutlass.const_expr(self.pt_ahead):  # noqa: SIM102 (compile, run time)
                        if pg + 2 < p1:
                            nxt_c = mPT[seq, pg + 2]
            f0 = f0 + (p1 - p0 + 1) // 2
            f1 = f1 + (p1 - p0) // 2

    @cute.jit
    def fp8_producer_crossover(
        self,
        mKV8: cute.Tensor,
        mSc: cute.Tensor,
        mPT: cute.Tensor,
        mWork: cute.Tensor,
        sK: cute.Tensor,
        mbar: cute.Pointer,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        sp: cutlass.Int32,
        ptid: cutlass.Int32,
        warp: cutlass.Int32,
        rank: cutlass.Constexpr,
    ):
        """Step 26, the producer of CTA ``rank`` = r of a cluster of 2 (the sequence's m-tiles 2k
        and 2k + 1 walk the same work-list part, page for page): step 22's loop over the
        part's pages with one group per page instead of two, group ``r`` (latent chunks
        4r..4r+3), dequantised into this CTA's stage and, by st.async, into the peer's
        (:meth:`fp8_fill_crossover`); one group in flight in registers, the L2 prefetch of
        step 22 (each CTA prefetches the whole page: the second request hits L2)."""
        seg_lo = mWork[sp, 0]
        seg_hi = mWork[sp, 1]
        f0 = cutlass.Int32(0)
        f1 = cutlass.Int32(0)
        tok = self.fp8_token(ptid)
        par = ptid % 2
        buf = cute.make_rmem_tensor(
            cute.make_layout((FP8_VEC, FP8_HALF_VECS)), cutlass.Float8E4M3FN
        )
        sbuf = cute.make_rmem_tensor(cute.make_layout(self.fp8_half_scales()), cutlass.Float32)
        for seg in cutlass.range(seg_lo, seg_hi, unroll=1):
            seq = mWork[seg, 0]
            p0 = mWork[seg, 1]
            p1 = mWork[seg, 2]
            page = cutlass.Int32(0)
            if p1 > p0:
                page = mPT[seq, p0]
                self.fp8_load_half(mKV8, mSc, page, rank, tok, par, buf, sbuf)
                for d in cutlass.range_constexpr(1, self.l2_ahead):
                    if p0 + d < p1:
                        self.fp8_prefetch_l2(mKV8, mSc, mPT[seq, p0 + d], ptid)
            pf = cutlass.Int32(0)
            if p0 + self.l2_ahead < p1:
                pf = mPT[seq, p0 + self.l2_ahead]
            for pg in cutlass.range(p0, p1, unroll=1):
                if pg + self.l2_ahead < p1:
                    self.fp8_prefetch_l2(mKV8, mSc, pf, ptid)
                if pg + self.l2_ahead + 1 < p1:
                    pf = mPT[seq, pg + self.l2_ahead + 1]
                st = (pg - p0) % 2
                fill = f0 + (pg - p0) // 2
                if st == 1:
                    fill = f1 + (pg - p0) // 2
                nxt = cutlass.Int32(0)
                if pg + 1 < p1:
                    nxt = mPT[seq, pg + 1]
                self.fp8_fill_crossover(
                    sK, mbar, tma_atom, tKgK, tKsKt, page, st, rank, fill, tok, par, ptid, warp,
                    buf, sbuf,
                )  # fmt: skip
                if pg + 1 < p1:
                    self.fp8_load_half(mKV8, mSc, nxt, rank, tok, par, buf, sbuf)
                page = nxt
            f0 = f0 + (p1 - p0 + 1) // 2
            f1 = f1 + (p1 - p0) // 2

    @cute.jit
    def fp8_fill_crossover(
        self,
        sK: cute.Tensor,
        mbar: cute.Pointer,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        page: cutlass.Int32,
        st: cutlass.Int32,
        rank: cutlass.Constexpr,
        fill: cutlass.Int32,
        tok: cutlass.Int32,
        par: cutlass.Int32,
        ptid: cutlass.Int32,
        warp: cutlass.Int32,
        rK8: cute.Tensor,
        rSc: cute.Tensor,
    ):
        """Step 26, the producer of CTA ``rank``: group ``rank`` of the ``fill``-th page of
        stage ``st``, in both CTAs. It waits until warpgroup ``rank`` of both CTAs released
        the group (this CTA's "released" mbarrier counts 2 arrivals, one of them remote),
        stores the dequantised values into this CTA's stage (STS, then fence.proxy.async,
        the producer's barrier and one arrive on each of the 4 chunk mbarriers, as step 14)
        and the same 16-byte units into the peer's stage by st.async, each completing the
        bytes on the peer's chunk mbarrier, on which thread 0 then arrives with the group's
        bytes expected (an mbarrier's tx-count may go below zero until then). The rope chunk
        of this CTA's stage comes by this CTA's TMA once this CTA's warpgroup 1 - st freed
        it: before the stores when that warpgroup's release is the one just waited for
        (rank != st), else after them, on its own mbarrier (``ROPE_EMPTY``)."""
        if fill > 0:
            cute.arch.mbarrier_wait(mbar + EMPTY + st * NUM_WG + rank, (fill - 1) % 2)
        peer = 1 - rank
        if warp == NUM_WG * 4 and st != rank:
            self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, page, st, P_CHUNK, N_CHUNKS, P_CHUNK)
        self.fp8_store_half(
            sK, st, rank, tok, par, rK8, rSc, remote=(peer, mbar + st * N_CHUNKS)
        )  # fmt: skip
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.barrier(barrier_id=BAR_PROD, number_of_threads=WG_THREADS)
        if ptid == 0:
            for c in cutlass.range_constexpr(4):
                bar = mbar + st * N_CHUNKS + 4 * rank + c
                cute.arch.mbarrier_arrive(bar)
                # the peer's copy: the data's visibility comes with st.async's complete_tx;
                # this arrive only counts (relaxed: no MEMBAR before it)
                cute.arch.mbarrier_arrive_and_expect_tx(
                    bar, CHUNK_BYTES, peer_cta_rank_in_cluster=peer, relaxed=True
                )
        if warp == NUM_WG * 4 and st == rank:
            if fill > 0:
                cute.arch.mbarrier_wait(mbar + ROPE_EMPTY + st, (fill - 1) % 2)
            self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, page, st, P_CHUNK, N_CHUNKS, P_CHUNK)

    @cute.jit
    def fp8_prefetch_l2(
        self, mKV8: cute.Tensor, mSc: cute.Tensor, page: cutlass.Int32, ptid: cutlass.Int32
    ):
        """Steps 20-23, the producer: cache page ``page`` (an index from the page table) into
        L2 ahead of its loads: its e4m3 part (64 x 512 B, contiguous) and its scales (64 x G
        fp32), one ``cp.async.bulk.prefetch.L2.global`` each from producer thread 0. Nothing
        waits for a prefetch and nothing is written to SMEM: a page evicted before its loads
        is read from HBM as in step 18."""
        if ptid == 0:
            cp_async_bulk_prefetch(mKV8[page, None, None].iterator, PAGE * D_V)
            cp_async_bulk_prefetch(mSc[page, None, None].iterator, PAGE * self.groups * 4)

    @cute.jit
    def fence_remote_chunk(self):
        """Step 26, a math warpgroup after waiting for a latent group's chunks: half of each
        page's latent chunks were written by the peer CTA's st.async; a proxy fence before the
        WGMMAs read them (the conservative reading of the memory model for data that the async
        proxy reads after another CTA's stores; one fence per group waited for, not per
        chunk: a group lands at once). Nothing in the other steps."""
        if cutlass.const_expr(self.crossover):
            cute.arch.fence_proxy("async.shared", space="cta")

    @cute.jit
    def pair_merge_epilogue(
        self,
        state: tuple,  # (acc_o, row_sum, m_log2, tScS, thr_pv): O_half and the row statistics
        sSum: cute.Tensor,
        sK_ptr: cute.Pointer,  # the KV stages (SMEM), free once every WGMMA has retired
        mbar: cute.Pointer,
        out: tuple,  # (mO, mL): O and LSE
        seq: cutlass.Int32,
        m_blk: cutlass.Int32,
        wg: cutlass.Int32,
        wg_tidx: cutlass.Int32,
        lane: cutlass.Int32,
        valid_rows: cutlass.Int32,
        o_stage: Optional[tuple] = None,  # noqa: UP045 (step 71: store_o's way through SMEM)
    ):
        """Step 62, the 256 math threads of both CTAs of a cluster whose two parts hold the
        two pieces of sequence ``seq`` (cluster rank r = the piece). Each CTA divides its O by
        its row sums (:meth:`divide_by_row_sums`) and forms each row's piece LSE (log2 domain,
        m + log2 sum; -inf without keys). One cluster barrier (release / acquire) proves both
        CTAs' WGMMAs retired, so each CTA's KV stages are free for its peer's stores. Then
        warpgroup 1 - r sends its 64 x 256 fp32 O half and the 64 LSEs to the same warpgroup
        of the peer, by st.async into the peer's stage memory (thread t's 4-value vector v at
        float (128 v + t) x 4: 16-byte stores, consecutive threads in consecutive banks), each
        completing its bytes on the peer's ``PAIR_FULL`` mbarrier; warpgroup r expects
        :data:`PAIR_BYTES` on its own, waits, and merges row by row, m = max(l_own, l_peer),
        w = 2^(l - m), O = (w_own O_own + w_peer O_peer) / (w_own + w_peer), LSE = (m +
        log2(w_own + w_peer)) ln 2 (the combine kernel's formula, for two pieces), then
        stores its half of O and the LSE (:meth:`store_o`; step 71: through ``o_stage``, 64 x
        256 of stage 1, which the peer does not write). Rank 0 thus stores O's columns
        0-255 and rank 1 columns 256-511. A CTA leaves only after its peer's stores into it
        have arrived (its wait), and those are the only remote accesses, so no barrier
        follows."""
        acc_o, row_sum, m_log2, tScS, thr_pv = state
        mO, mL = out
        n_rows = cute.size(tScS, mode=[0])
        assert cute.size(acc_o) == 4 * PAIR_VECS, "a thread's O half is PAIR_VECS vectors of 4"
        self.divide_by_row_sums(acc_o, row_sum, tScS, sSum, wg, lane)
        lse = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
        for i in cutlass.range_constexpr(n_rows):
            lse[i] = -cutlass.Float32.inf
            if row_sum[i] > 0.0:
                lse[i] = m_log2[i] + cute.math.log2(row_sum[i])
        # the received O half, (4 values, 128 threads, 32 vectors), and the 64 rows' LSEs
        buf = cute.recast_ptr(sK_ptr, dtype=cutlass.Float32)
        sRecv = cute.make_tensor(
            buf, cute.make_layout((4, WG_THREADS, PAIR_VECS), stride=(1, 4, 4 * WG_THREADS))
        )
        sRecvL = cute.make_tensor(buf + TILE_M * HALF_V, cute.make_layout(TILE_M))
        rank = cute.arch.block_idx_in_cluster()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        # (the flat index e of O's fragment ((2, 2, 32), 1, 1) is row (e // 2) % 2 of the
        # thread's two, so vector v's 4 values are rows 0, 0, 1, 1)
        if wg != rank:
            # the peer's addresses (mapa) once; each store adds its vector's constant offset
            peer = 1 - rank
            dst = cluster_address(sRecv[None, wg_tidx, 0].iterator, peer)
            bar = cluster_address(mbar + PAIR_FULL, peer)
            words = cute.recast_tensor(acc_o, cutlass.Uint32)
            for v in cutlass.range_constexpr(PAIR_VECS):
                vals = [words[4 * v + k] for k in range(4)]
                st_async_complete_tx(dst + v * 16 * WG_THREADS, vals, bar)
            if lane % 4 == 0:
                lse_w = cute.recast_tensor(lse, cutlass.Uint32)
                dst_l = cluster_address(sRecvL.iterator, peer)
                for i in cutlass.range_constexpr(n_rows):
                    st_async_complete_tx(dst_l + tScS[i, 0][0] * 4, [lse_w[i]], bar)
        else:
            if wg_tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(mbar + PAIR_FULL, PAIR_BYTES)
            cute.arch.mbarrier_wait(mbar + PAIR_FULL, 0)
            w_own = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
            w_peer = cute.make_rmem_tensor(cute.make_layout(n_rows), cutlass.Float32)
            for i in cutlass.range_constexpr(n_rows):
                other = sRecvL[tScS[i, 0][0]]
                m = cute.arch.fmax(lse[i], other)
                total = cutlass.Float32(0.0)
                w_own[i] = 0.0
                w_peer[i] = 0.0
                if m > -cutlass.Float32.inf:
                    a = cute.math.exp2(lse[i] - m)
                    c = cute.math.exp2(other - m)
                    total = a + c
                    w_own[i] = a / total
                    w_peer[i] = c / total
                m_log2[i] = m
                row_sum[i] = total
            got = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
            for v in cutlass.range_constexpr(PAIR_VECS):
                cute.autovec_copy(sRecv[None, wg_tidx, v], got)
                for k in cutlass.range_constexpr(4):
                    i = k // 2
                    e = 4 * v + k
                    acc_o[e] = acc_o[e] * w_own[i] + got[k] * w_peer[i]
            tOcO = thr_pv.partition_C(cute.make_identity_tensor((TILE_M, HALF_V)))
            self.store_o(
                acc_o, row_sum, m_log2, tScS, tOcO, thr_pv, mO, mL, seq, m_blk, wg, lane,
                valid_rows, lse_wg=rank, o_stage=o_stage,
            )  # fmt: skip

    @cute.jit
    def piece_stored(
        self, mCnt: cute.Tensor, seq: cutlass.Int32, m_blk: cutlass.Int32, tidx: cutlass.Int32
    ):
        """Step 35, by the 256 math threads after the epilogue stored a cut piece's partial O and
        LSE: every thread fences its stores at GPU scope, one barrier, and thread 0 adds 1 to
        the (sequence ``seq``, m-tile ``m_blk``) counter with release semantics (the CUDA C++
        Programming Guide's pattern of memory fence functions, as step 10's split_ticket)."""
        cute.arch.fence_acq_rel_gpu()
        self.sync_math()
        if tidx == 0:
            ptr = (mCnt.iterator + (seq * self.m_tiles + m_blk)).llvm_ptr
            cute.arch.atomic_add(ptr, cutlass.Int32(1), sem="release", scope="gpu")

    @cute.jit
    def merge_as_first_piece(
        self,
        state: tuple,  # (acc_o, row_sum, m_log2, tScS, thr_pv): the epilogue's O and statistics
        out: tuple,  # (mO, mL): O and LSE
        workspace: tuple,  # (mOa, mLa): the partial O and LSE slots
        mCnt: cute.Tensor,
        seq: cutlass.Int32,
        m_blk: cutlass.Int32,
        wg: cutlass.Int32,
        lane: cutlass.Int32,
        valid_rows: cutlass.Int32,
        pieces: cutlass.Int32,
        tidx: cutlass.Int32,
    ):
        """Step 59, the 256 math threads of the CTA that holds piece 0 of cut sequence ``seq``
        (its part's last segment), after its epilogue stored the piece's LSE into slot 0 and
        kept its O (divided by its row sums) in ``acc_o``: thread 0 spins on acquire loads
        (GPU scope) until the (``seq``, ``m_blk``) counter shows the other ``pieces`` - 1
        pieces stored (:meth:`piece_stored`), and sets it back to 0 for the next launch (no
        other piece counts after that); one barrier (the slot-0 LSEs of this CTA's warpgroup 0
        become visible to every thread); every thread fences at GPU scope before it reads the
        other pieces' partials; :meth:`merge_splits` (step 60: :meth:`merge_pieces_online`)
        weighs and adds them in O's register layout, and :meth:`store_o` writes O and the
        natural-log LSE as for an uncut sequence."""
        if tidx == 0:
            ptr = (mCnt.iterator + (seq * self.m_tiles + m_blk)).llvm_ptr
            self.wait_for_pieces(ptr, pieces - 1)
            cute.arch.store(ptr, cutlass.Int32(0), sem="relaxed", scope="gpu")
        self.sync_math()
        cute.arch.fence_acq_rel_gpu()
        acc_o, row_sum, m_log2, tScS, thr_pv = state
        mO, mL = out
        mOa, mLa = workspace
        if cutlass.const_expr(self.online_merge):
            self.merge_pieces_online(state, workspace, seq, m_blk, wg, pieces, valid_rows)
        else:
            self.merge_splits(
                acc_o, row_sum, m_log2, tScS, thr_pv, mOa, mLa, seq, m_blk, 0, wg, pieces,
                valid_rows,
            )  # fmt: skip
        tOcO = thr_pv.partition_C(cute.make_identity_tensor((TILE_M, D_V // NUM_WG)))
        self.store_o(
            acc_o, row_sum, m_log2, tScS, tOcO, thr_pv, mO, mL, seq, m_blk, wg, lane, valid_rows
        )  # fmt: skip

    @cute.jit
    def merge_when_stored(
        self,
        views: tuple,  # (vO, vL, vOut, vLse): MlaDecodeSm90Kernel.combine_views
        mCnt: cute.Tensor,
        row: cutlass.Int32,
        seq: cutlass.Int32,
        pieces: cutlass.Int32,
        lane: cutlass.Int32,
    ):
        """Step 35, one warp: wait (every lane, acquire loads at GPU scope) until the counter
        of packed row ``row``'s (sequence, m-tile) shows all ``pieces`` pieces stored, merge
        the row (:meth:`merge_row`, the combine kernel's code), then add 1 for the row. The
        warp that brings the counter to ``pieces`` + the m-tile's rows is the last to use it
        (every waiter is past its wait) and sets it back to 0 for the next launch."""
        ptr, tile_rows = self.row_counter(mCnt, row, seq)
        self.wait_for_pieces(ptr, pieces)
        self.merge_row(*views, row, lane, pieces)
        if lane == 0:
            self.count_merged_row(ptr, pieces, tile_rows)

    @cute.jit
    def row_counter(self, mCnt: cute.Tensor, row: cutlass.Int32, seq: cutlass.Int32):
        """Steps 35 and 37: the pointer to packed row ``row``'s (sequence ``seq``, m-tile)
        counter, and that m-tile's row count (64, fewer in the last m-tile of s*h rows)."""
        m_blk = (row - seq * self.rows) // TILE_M
        ptr = (mCnt.iterator + (seq * self.m_tiles + m_blk)).llvm_ptr
        return ptr, cutlass.min(self.rows - m_blk * TILE_M, TILE_M)

    @cute.jit
    def wait_for_pieces(self, ptr, pieces: cutlass.Int32):
        """Steps 35 and 37, every lane (step 59: thread 0, for the other pieces): spin on
        acquire loads (GPU scope) until the counter at ``ptr`` shows ``pieces`` stored pieces;
        what they stored is visible after it."""
        seen = cute.arch.load(ptr, cutlass.Int32, sem="acquire", scope="gpu")
        while seen < pieces:
            seen = cute.arch.load(ptr, cutlass.Int32, sem="acquire", scope="gpu")

    @cute.jit
    def count_merged_row(self, ptr, pieces: cutlass.Int32, tile_rows: cutlass.Int32):
        """Steps 35 and 37, one lane per merged row: add 1 to the counter; the row that brings
        it to ``pieces`` + ``tile_rows`` is the m-tile's last (every waiter is past its
        wait) and sets it back to 0 for the next launch."""
        old = cute.arch.atomic_add(ptr, cutlass.Int32(1), sem="relaxed", scope="gpu")
        if old == pieces + tile_rows - 1:
            cute.arch.store(ptr, cutlass.Int32(0), sem="relaxed", scope="gpu")

    @cute.jit
    def merge_rows_when_stored(
        self,
        views: tuple,  # (vO, vL, vOut, vLse): MlaDecodeSm90Kernel.combine_views
        mCnt: cute.Tensor,
        mWork: cute.Tensor,
        row0: cutlass.Int32,
        stride: cutlass.Int32,
        total: cutlass.Int32,
        lane: cutlass.Int32,
    ):
        """Step 37, one warp: packed rows ``row0 + r * stride`` (r < MERGE_ROWS, those below
        ``total`` whose sequence is cut) merged together, as :meth:`merge_row` merges one: wait
        for each row's (sequence, m-tile) counter to show all its pieces (acquire loads, every
        lane), each row's max and weight sum over its pieces' LSEs, then per piece every row's
        weight and all the rows' 16-byte partial-O loads before their FMAs, so that R x 4
        loads per lane are in flight at once; O, LSE, and 1 added per row to its counter (the
        last of the tile's rows resets it, as in :meth:`merge_when_stored`)."""
        vO, vL, vOut, vLse = views
        R = self.merge_rows
        rows = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Int32)
        pcs = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Int32)
        seqs = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Int32)
        npmax = cutlass.Int32(0)
        for r in cutlass.range_constexpr(R):
            row = row0 + r * stride
            rows[r] = row
            pcs[r] = cutlass.Int32(0)
            seqs[r] = cutlass.Int32(0)
            if row < total:
                sq = row // self.rows
                pc = mWork[PARTS_CAP + sq, 0]
                if pc > 1:
                    pcs[r] = pc
                    seqs[r] = sq
                    npmax = cutlass.max(npmax, pc)
                    ptr, _ = self.row_counter(mCnt, row, sq)
                    self.wait_for_pieces(ptr, pc)
        # each row's max and weight sum over its pieces (lane i holds pieces i, i + 32, ...)
        mxs = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Float32)
        bases = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Float32)
        wsums = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Float32)
        invs = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Float32)
        for r in cutlass.range_constexpr(R):
            mx = -cutlass.Float32.inf
            for i in cutlass.range(lane, pcs[r], 32, unroll=1):
                mx = cute.arch.fmax(mx, vL[i, rows[r]])
            mxs[r] = cute.arch.warp_reduction_max(mx)
        for r in cutlass.range_constexpr(R):
            base = mxs[r]
            if base == -cutlass.Float32.inf:
                base = cutlass.Float32(0.0)  # no piece saw a key: every weight is 0
            bases[r] = base
            ws = cutlass.Float32(0.0)
            for i in cutlass.range(lane, pcs[r], 32, unroll=1):
                ws += cute.math.exp2(vL[i, rows[r]] - base, fastmath=True)
            ws = cute.arch.warp_reduction_sum(ws)
            wsums[r] = ws
            inv = cutlass.Float32(0.0)
            if ws > 0.0:
                inv = 1.0 / ws
            invs[r] = inv
        # per piece: every row's weight, then all the rows' loads, then the FMAs
        acc = cute.make_rmem_tensor(
            cute.make_layout((R, D_V // 128, 4), stride=(D_V // 32, 4, 1)), cutlass.Float32
        )
        acc.fill(0.0)
        part = cute.make_rmem_tensor(
            cute.make_layout((R, D_V // 128, 4), stride=(D_V // 32, 4, 1)), vO.element_type
        )
        wts = cute.make_rmem_tensor(cute.make_layout((R,)), cutlass.Float32)
        for i in cutlass.range(npmax, unroll=1):
            for r in cutlass.range_constexpr(R):
                wts[r] = cutlass.Float32(0.0)
                if i < pcs[r]:
                    wts[r] = cute.math.exp2(vL[i, rows[r]] - bases[r], fastmath=True) * invs[r]
            for r in cutlass.range_constexpr(R):
                if wts[r] > 0.0:  # an empty piece (weight 0) is not read
                    for k in cutlass.range_constexpr(D_V // 128):
                        cute.autovec_copy(vO[i, rows[r], k, lane, None], part[r, k, None])
            for r in cutlass.range_constexpr(R):
                if wts[r] > 0.0:
                    for k in cutlass.range_constexpr(D_V // 128):
                        for v in cutlass.range_constexpr(4):
                            acc[r, k, v] = acc[r, k, v] + wts[r] * part[r, k, v].to(cutlass.Float32)
        out = cute.make_rmem_tensor(cute.make_layout((4,)), self.dtype)
        for r in cutlass.range_constexpr(R):
            if pcs[r] > 1:
                row = rows[r]
                for k in cutlass.range_constexpr(D_V // 128):
                    out.store(acc[r, k, None].load().to(self.dtype))
                    cute.autovec_copy(out, vOut[row, k, lane, None])
                ptr, tile_rows = self.row_counter(mCnt, row, seqs[r])
                if lane == 0:
                    val = -cutlass.Float32.inf
                    if wsums[r] > 0.0:
                        val = (mxs[r] + cute.math.log2(wsums[r])) * LN_2
                    vLse[row] = val
                    self.count_merged_row(ptr, pcs[r], tile_rows)

    @cute.jit
    def release_to_producer(
        self, mbar: cute.Pointer, stage: cutlass.Constexpr, w: cutlass.Constexpr, wg_tidx
    ):
        """Steps 14-30 (the FP8 cache), a math warpgroup after its barrier: tell the producer
        that warpgroup ``w`` is done with its chunks of ``stage`` (one arrive on the stage's
        "released" mbarrier); nothing without the producer (the 16-bit builds reissue TMAs
        instead)."""
        if cutlass.const_expr(self.producer_wg):  # noqa: SIM102 (compile time, then run time)
            if wg_tidx == 0:
                if cutlass.const_expr(self.crossover):
                    # step 26: group w of every page is filled by the producer of CTA w of the
                    # cluster (this one or the peer); the rope chunk by this CTA's own. The
                    # arrive hands over no data (this warpgroup's WGMMA reads of the stage are
                    # complete: wait_group and its barrier came first), so the default CTA
                    # scope: a cluster-scoped arrive adds MEMBAR.ALL.GPU before it in the SASS
                    cute.arch.mbarrier_arrive(
                        mbar + EMPTY + stage * NUM_WG + w, peer_cta_rank_in_cluster=w
                    )
                    if cutlass.const_expr(w != stage):
                        cute.arch.mbarrier_arrive(mbar + ROPE_EMPTY + stage)
                else:
                    cute.arch.mbarrier_arrive(mbar + EMPTY + stage * NUM_WG + w)

    @cute.jit
    def fp8_fill(
        self,
        sK: cute.Tensor,
        mbar: cute.Pointer,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        page: cutlass.Int32,
        st: cutlass.Int32,
        w: cutlass.Constexpr,
        fill: cutlass.Int32,
        tok: cutlass.Int32,
        par: cutlass.Int32,
        ptid: cutlass.Int32,
        warp: cutlass.Int32,
        rK8: cute.Tensor,
        rSc: cute.Tensor,
        reload: cutlass.Constexpr = None,
    ):
        """Steps 14-16, the producer: group ``w`` (latent chunks 4w..4w+3) of the ``fill``-th
        page of stage ``st`` from registers ``rK8``/``rSc`` (:meth:`fp8_load_half`): wait for
        the stage's release by warpgroup w (phase fill - 1; the first fill of a stage waits
        for nothing), the rope chunk by TMA where this group frees it (stage 0's with WG1's,
        stage 1's with WG0's: the warpgroup that last reads P there), the dequantised stores,
        ``fence.proxy.async``, the producer's barrier and one arrive on each chunk's
        mbarrier. Step 24 passes ``reload`` = (mKV8, page, w): the next group, whose vectors
        :meth:`fp8_store_half` loads into ``rK8`` as it frees them."""
        if fill > 0:
            cute.arch.mbarrier_wait(mbar + EMPTY + st * NUM_WG + w, (fill - 1) % 2)
        if warp == NUM_WG * 4 and st != w:
            self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, page, st, P_CHUNK, N_CHUNKS, P_CHUNK)
        if cutlass.const_expr(self.chunk_publish):
            # step 19: vectors 2c and 2c + 1 of every thread are chunk c of the group
            for c in cutlass.range_constexpr(4):
                self.fp8_store_half(sK, st, w, tok, par, rK8, rSc, 2 * c, 2 * c + 2)
                cute.arch.fence_proxy("async.shared", space="cta")
                cute.arch.barrier(barrier_id=BAR_PROD, number_of_threads=WG_THREADS)
                if ptid == 0:
                    cute.arch.mbarrier_arrive(mbar + st * N_CHUNKS + 4 * w + c)
        else:
            self.fp8_store_half(sK, st, w, tok, par, rK8, rSc, reload=reload)
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier(barrier_id=BAR_PROD, number_of_threads=WG_THREADS)
            if ptid == 0:
                for c in cutlass.range_constexpr(4 * w, 4 * w + 4):
                    cute.arch.mbarrier_arrive(mbar + st * N_CHUNKS + c)

    @cute.jit
    def fp8_fill_pairs(
        self,
        mKV8: cute.Tensor,
        mSc: cute.Tensor,
        mPT: cute.Tensor,
        sK: cute.Tensor,
        mbar: cute.Pointer,
        tma_atom: cute.CopyAtom,
        tKgK: cute.Tensor,
        tKsKt: cute.Tensor,
        seq: cutlass.Int32,
        p0: cutlass.Int32,
        p1: cutlass.Int32,
        f0: cutlass.Int32,
        f1: cutlass.Int32,
        tok: cutlass.Int32,
        par: cutlass.Int32,
        ptid: cutlass.Int32,
        warp: cutlass.Int32,
        buf: list,
        sbuf: list,
    ):
        """Step 16, the producer over one segment's pages p0..p1 of sequence ``seq``, in the
        order the math warpgroups release the groups within a pair of pages (K0 = page pg0 in
        stage 0, K1 = pg0 + 1 in stage 1): K0's chunks 0-3 (WG0, after its PV0L), K1's 4-7
        (WG1, after its PV1R: step 16 releases them there), K0's 4-7 (WG1's end of pair), K1's
        0-3 (WG0's end). The two register buffers alternate along that order, each reloaded
        with the group two places on right after its stores; so at a pair's end, when three
        groups are released together, two of them are already in registers (step 14's page
        order had one, and the third group's loads waited for its conversion)."""
        n_pairs = (p1 - p0 + 1) // 2
        # the stage indices as run-time values (p0 >= 0): with literal stages the compiler
        # hoists the swizzled store addresses of all four groups out of the loop and the
        # producer spills them (432 B at 88 registers in a CPU compile)
        s0 = p0 >> 31
        s1 = s0 + 1
        if p1 > p0:
            self.fp8_load_half(mKV8, mSc, mPT[seq, p0], 0, tok, par, buf[0], sbuf[0])
        if p1 > p0 + 1:
            self.fp8_load_half(mKV8, mSc, mPT[seq, p0 + 1], 1, tok, par, buf[1], sbuf[1])
        for it in cutlass.range(n_pairs, unroll=1):
            pg0 = p0 + 2 * it
            has1 = pg0 + 1 < p1
            k0 = f0 + it  # this pair's fill of stage 0, and of stage 1
            k1 = f1 + it
            page0 = mPT[seq, pg0]
            page1 = cutlass.Int32(0)
            if has1:
                page1 = mPT[seq, pg0 + 1]
            # K0 chunks 0-3 (buffer 0), then buffer 0 takes K0's chunks 4-7
            self.fp8_fill(
                sK, mbar, tma_atom, tKgK, tKsKt, page0, s0, 0, k0, tok, par, ptid, warp, buf[0],
                sbuf[0],
            )  # fmt: skip
            self.fp8_load_half(mKV8, mSc, page0, 1, tok, par, buf[0], sbuf[0])
            # K1 chunks 4-7 (buffer 1), then buffer 1 takes K1's chunks 0-3
            if has1:
                self.fp8_fill(
                    sK, mbar, tma_atom, tKgK, tKsKt, page1, s1, 1, k1, tok, par, ptid, warp,
                    buf[1], sbuf[1],
                )  # fmt: skip
                self.fp8_load_half(mKV8, mSc, page1, 0, tok, par, buf[1], sbuf[1])
            # K0 chunks 4-7 (+ the rope), then buffer 0 takes the next pair's K0 chunks 0-3
            self.fp8_fill(
                sK, mbar, tma_atom, tKgK, tKsKt, page0, s0, 1, k0, tok, par, ptid, warp, buf[0],
                sbuf[0],
            )  # fmt: skip
            if pg0 + 2 < p1:
                self.fp8_load_half(mKV8, mSc, mPT[seq, pg0 + 2], 0, tok, par, buf[0], sbuf[0])
            # K1 chunks 0-3 (+ the rope), then buffer 1 takes the next pair's K1 chunks 4-7
            if has1:
                self.fp8_fill(
                    sK, mbar, tma_atom, tKgK, tKsKt, page1, s1, 0, k1, tok, par, ptid, warp,
                    buf[1], sbuf[1],
                )  # fmt: skip
                if pg0 + 3 < p1:
                    self.fp8_load_half(mKV8, mSc, mPT[seq, pg0 + 3], 1, tok, par, buf[1], sbuf[1])

    def fp8_half_scales(self) -> int:
        """Step 14: the scales a producer thread holds per group (trace time): one per scale
        block its 8 vectors touch when a block spans >= 64 columns (1 for a block of 256 or
        512, 2 for 128, 4 for 64), else one per vector (8)."""
        if self.scale_block >= CHUNK:
            return max(1, (D_V // NUM_WG) // self.scale_block)
        return FP8_HALF_VECS

    def fp8_vector(self, j: int, par):
        """Step 14: the 16-column vector (0..15 within a group's 256 columns) of a producer
        thread's j-th load: (j % 2) + 4 (j // 2) + 2 par, ``par`` = the thread's parity. The
        two threads of a token write 16-byte units 4 apart, so the 8 threads of a store phase
        (4 consecutive tokens) hit 8 distinct bank groups under the 128-byte swizzle. Both
        threads' loads fall in different 32-byte sectors, though: a warp's LDG.128 asks for
        32 sectors and uses half of each. Step 27: 2 j + par, the two threads' vectors
        adjacent (one sector, 16 sectors per LDG.128); vectors 2c and 2c + 1 are still chunk c
        of the group. Its store phase is kept conflict-free by :meth:`fp8_token`."""
        if cutlass.const_expr(self.sector_loads):
            return 2 * j + par
        return (j % 2) + 4 * (j // 2) + 2 * par

    def fp8_token(self, ptid):
        """Step 14: the page row (token 0..63) producer thread ``ptid`` loads and stores:
        ``ptid // 2``. Step 27 permutes each 8 tokens (b -> b // 2 + 4 (b % 2): 0, 4, 1, 5, 2,
        6, 3, 7) so that a store phase (4 thread pairs) holds rows r, r + 4, r + 1, r + 5:
        with :meth:`fp8_vector`'s adjacent vectors a pair writes units 4k + {0, 1, 2, 3} of
        one chunk row, and the swizzle (unit XOR row mod 8) then spreads the phase's 8 stores
        over 8 bank groups, where 4 consecutive rows would leave them in 4 (2-way conflicts).
        Which thread reads which row does not change the sectors a warp's load asks for."""
        pair = ptid // 2
        if cutlass.const_expr(self.sector_loads):
            b = pair % 8
            return pair - b + b // 2 + 4 * (b % 2)
        return pair

    @cute.jit
    def fp8_load_half(
        self,
        mKV8: cute.Tensor,
        mSc: cute.Tensor,
        page: cutlass.Int32,
        w: cutlass.Constexpr,
        tok: cutlass.Int32,
        par: cutlass.Int32,
        rK8: cute.Tensor,
        rSc: cute.Tensor,
    ):
        """Step 14: a producer thread's share of group ``w`` of cache page ``page`` (an index
        from the page table) into registers: token ``tok``'s 8 vectors of 16 e4m3 values
        (:meth:`fp8_vector`) into ``rK8`` (16, 8) and their scales into ``rSc``. Tokens past
        the sequence's end are loaded as they are (their stage rows are masked in S and their
        V rows zeroed by the math warpgroups, as with 16-bit TMA pages)."""
        for j in cutlass.range_constexpr(FP8_HALF_VECS):
            self.fp8_load_vector(mKV8, page, w, tok, par, rK8, j)
        self.fp8_load_scales(mSc, page, w, tok, par, rSc)

    @cute.jit
    def fp8_load_vector(
        self,
        mKV8: cute.Tensor,
        page: cutlass.Int32,
        w: cutlass.Constexpr,
        tok: cutlass.Int32,
        par: cutlass.Int32,
        rK8: cute.Tensor,
        j: cutlass.Constexpr,
    ):
        """Step 14: the j-th of :meth:`fp8_load_half`'s 8 vectors (16 e4m3 values, one
        LDG.128) into ``rK8[None, j]``."""
        v = cute.local_tile(mKV8[page, tok, None], (FP8_VEC,), (16 * w + self.fp8_vector(j, par),))
        cute.autovec_copy(v, rK8[None, j])

    @cute.jit
    def fp8_load_scales(
        self,
        mSc: cute.Tensor,
        page: cutlass.Int32,
        w: cutlass.Constexpr,
        tok: cutlass.Int32,
        par: cutlass.Int32,
        rSc: cute.Tensor,
    ):
        """Step 14: the scales of :meth:`fp8_load_half`'s vectors into ``rSc``
        (:meth:`fp8_half_scales` of them)."""
        if cutlass.const_expr(self.scale_block >= CHUNK):
            base = (HALF_V * w) // self.scale_block
            for i in cutlass.range_constexpr(self.fp8_half_scales()):
                rSc[i] = mSc[page, tok, base + i]
        else:
            for j in cutlass.range_constexpr(FP8_HALF_VECS):
                col = HALF_V * w + FP8_VEC * self.fp8_vector(j, par)
                rSc[j] = mSc[page, tok, col // self.scale_block]

    @cute.jit
    def fp8_store_half(
        self,
        sK: cute.Tensor,
        stage: cutlass.Int32,
        w: cutlass.Constexpr,
        tok: cutlass.Int32,
        par: cutlass.Int32,
        rK8: cute.Tensor,
        rSc: cute.Tensor,
        j_lo: cutlass.Constexpr = 0,
        j_hi: cutlass.Constexpr = FP8_HALF_VECS,
        reload: cutlass.Constexpr = None,
        remote: cutlass.Constexpr = None,
    ):
        """Step 14: dequantise the registers of :meth:`fp8_load_half` (e4m3 -> fp32, times the
        scale: exact with power-of-two scales, -> dtype; from step 15 by bit placement) into
        SMEM stage ``stage`` at their (token, column) places of the 128-byte-swizzled page the
        WGMMAs read: two 16-byte stores per vector; vectors j_lo..j_hi-1 only (step 19 stores
        a group chunk by chunk: vectors 2c and 2c + 1 are chunk c). Step 24 (``reload`` =
        (mKV8, page, w)): once vector j is converted, the next group's vector j is loaded into
        its registers."""
        sPage = sK[None, None, stage]
        out = cute.make_rmem_tensor(cute.make_layout((8,)), self.dtype)
        half16 = self.dtype is cutlass.Float16
        for j in cutlass.range_constexpr(j_lo, j_hi):
            if cutlass.const_expr(self.scale_block >= CHUNK):
                sc = rSc[(64 * (j // 2)) // self.scale_block]
            else:
                sc = rSc[j]
            if cutlass.const_expr(self.bit_dequant):
                # step 15: 4 e4m3 values per 32-bit word -> 2 words of two 16-bit values each
                words = cute.recast_tensor(rK8[None, j], cutlass.Uint32)  # (4,)
                sc2 = pack_scale(sc, half16)
                out32 = cute.recast_tensor(out, cutlass.Uint32)  # (4,): 8 values
                for half in cutlass.range_constexpr(FP8_VEC // 8):
                    for i in cutlass.range_constexpr(2):
                        x = words[2 * half + i]
                        out32[2 * i] = e4m3x4_to_16bit(x, sc2, half16, False)
                        out32[2 * i + 1] = e4m3x4_to_16bit(x, sc2, half16, True)
                    unit = 32 * w + 2 * self.fp8_vector(j, par) + half
                    dst = cute.local_tile(sPage, (1, 8), (tok, unit))
                    cute.autovec_copy(out, dst)
                    if cutlass.const_expr(remote is not None):
                        # step 26: the same 16 bytes into the peer CTA's stage (st.async, its
                        # chunk mbarrier completing the bytes)
                        peer, bars = remote
                        vals = (out32[0], out32[1], out32[2], out32[3])  # (not `words`: the
                        # e4m3 input of the next half)
                        cute.arch.store_async_dsmem(
                            swizzled_smem_ptr(dst.iterator, self.dtype), vals, bars + unit // 8,
                            peer,
                        )  # fmt: skip
                if cutlass.const_expr(reload is not None):
                    kv8, npage, nw = reload
                    self.fp8_load_vector(kv8, npage, nw, tok, par, rK8, j)
                    cute.arch.sync_warp()  # keeps the load here (see fp8_producer, step 24)
                continue
            # 8 values at a time (one 16-byte unit): fewer fp32 temporaries in the producer's
            # registers (steps 14-16 hold two groups of loads in flight, 64 registers)
            for half in cutlass.range_constexpr(FP8_VEC // 8):
                src = cute.local_tile(rK8[None, j], (8,), (half,))
                out.store((src.load().to(cutlass.Float32) * sc).to(self.dtype))
                unit = 32 * w + 2 * self.fp8_vector(j, par) + half  # 8-column unit of the row
                cute.autovec_copy(out, cute.local_tile(sPage, (1, 8), (tok, unit)))

    @cute.jit
    def arm_chunks(self, mbar, stage, c_lo: cutlass.Constexpr, c_hi: cutlass.Constexpr):
        """Step 63, a whole warp: this CTA's chunk mbarriers c_lo..c_hi-1 of ``stage`` expect
        their 8 KB (the elected lane's arrive), whichever CTA of the cluster issues the TMA.
        Called before this CTA counts the group's release (:meth:`freed_last`); the relaxed
        count does not order this arrive before the peer's TMA, and correctness does not need
        it: bytes that land first leave the transaction count below zero, and the phase
        cannot complete while this arrive is pending."""
        for c in cutlass.range_constexpr(c_lo, c_hi):
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive_and_expect_tx(mbar + stage * N_CHUNKS + c, CHUNK_BYTES)

    @cute.jit
    def multicast_chunks(
        self, tma_atom, tKgK, tKsKt, mbar, page, stage,
        c_lo: cutlass.Constexpr = 0, c_hi: cutlass.Constexpr = N_CHUNKS,
    ):  # fmt: skip
        """Step 63, a whole warp: chunks c_lo..c_hi-1 of cache page ``page`` into ``stage`` of
        both CTAs of the cluster (:data:`MCAST_MASK`), each completing its bytes on the chunk's
        mbarrier at the same offset in each CTA (evict-first, as steps 7 on)."""
        for c in cutlass.range_constexpr(c_lo, c_hi):
            cute.copy(
                tma_atom, tKgK[None, page, c], tKsKt[None, c, stage],
                tma_bar_ptr=mbar + stage * N_CHUNKS + c, mcast_mask=cutlass.Int16(MCAST_MASK),
                cache_policy=cutlass.Int64(self.kv_cache_policy),
            )  # fmt: skip

    @cute.jit
    def freed_last(self, counter, lane) -> cutlass.Boolean:
        """Step 63, a whole warp: add 1 to the counter at shared::cluster address ``counter``
        (lane 0, :func:`cluster_add_one`) and tell every lane whether the count was odd before:
        this CTA freed the group second, so both copies are free for its TMA. One atomic
        location orders the two CTAs' counts, which two mbarriers (each CTA arriving on its own
        and its peer's) could not: each CTA could see itself last, or neither."""
        old = cutlass.Int32(0)
        if lane == 0:
            old = cutlass.Int32(cluster_add_one(counter))
        old = cute.arch.shuffle_sync(old, 0)
        return old % 2 == 1

    @cute.jit
    def load_group(
        self, tma_atom, tKgK, tKsKt, mbar, page, stage: cutlass.Constexpr,
        ranges: cutlass.Constexpr, counter, lane,
    ):  # fmt: skip
        """A whole warp, once a chunk group of ``stage`` is freed in this CTA: the next page
        ``page`` into its chunk ``ranges`` ((lo, hi), ...). Without step 63 one TMA per chunk
        (:meth:`issue_chunks`); with it this CTA arms its chunk mbarriers, counts the release on
        the group's ``counter`` and, if it freed the group second (:meth:`freed_last`), loads
        the chunks into both CTAs (:meth:`multicast_chunks`)."""
        if cutlass.const_expr(not self.multicast):
            for lo, hi in ranges:
                self.issue_chunks(tma_atom, tKgK, tKsKt, mbar, page, stage, lo, hi)
        else:
            for lo, hi in ranges:
                self.arm_chunks(mbar, stage, lo, hi)
            if self.freed_last(counter, lane):
                for lo, hi in ranges:
                    self.multicast_chunks(tma_atom, tKgK, tKsKt, mbar, page, stage, lo, hi)

    @cute.jit
    def reload_left(
        self, tma_atom, tKgK, tKsKt, mPT, mbar, seq, stage: cutlass.Constexpr, pg, p1, nx, warp,
        wg_tidx, bar_me, cnt, lane,
    ):  # fmt: skip
        """WG0 after its PV on ``stage`` has retired (its wait_group): V's left half there
        (chunks 0-3, and on stage 1 P1's chunk 8) is free for page ``pg`` (pg0 + 2 + stage)
        once every warp of WG0 is past that wait (the warpgroup barrier); warp 0 issues their
        TMA if ``pg`` is in the segment (``nx``: its index read early, step 5), or the stage
        goes back to the producer (the FP8 cache, step 14); step 63 through the group's
        counter (:meth:`load_group`; ``cnt``: rank 0's first counter, ``lane``: the thread's
        lane)."""
        cute.arch.barrier(barrier_id=bar_me, number_of_threads=WG_THREADS)
        self.release_to_producer(mbar, stage, 0, wg_tidx)  # step 14: chunks 0-3 of the stage
        if cutlass.const_expr(not self.producer_wg):  # noqa: SIM102 (then run time)
            if warp == 0 and pg < p1:
                page = nx
                if cutlass.const_expr(not self.early_pages):
                    page = mPT[seq, pg]
                ranges = (V_L,) if stage == 0 else (V_L, (P_CHUNK, N_CHUNKS))
                self.load_group(
                    tma_atom, tKgK, tKsKt, mbar, page, stage, ranges,
                    cnt + 4 * release_counter(stage, 0), lane,
                )  # fmt: skip

    def qk_chunks(self, qk_mma, acc_s, tSrQ, tSrK, mbar, stage, phase, part: int, rope=None):
        """Issue S = Q K^T of the page in ``stage`` (64 x 64 fp32 into ``acc_s``), each
        64-column chunk's four k16 WGMMAs after that chunk's mbarrier reaches ``phase``, and
        commit them as one group (the caller waits). ``part``: -1 all 9 chunks; 0 chunks 0-3
        (V's left half) and 1 chunks 4-8, so that step 31 can retire an older group between
        the two. Plain Python, traced in place (not a ``cute.jit`` call, which would pass
        ``qk_mma``'s fields as operands: the ACCUMULATE value each k-block sets belongs to the
        region it is set in: the caller rebinds ``qk_mma`` to the return value, so that the
        DSL threads it through the branch that calls this). ``rope`` (step 85): (the RS MMA,
        Q's rope columns in registers, K's B operand for it), with which the
        rope chunk's k-blocks take Q from registers; None: every k-block from SMEM."""
        k_per_chunk = CHUNK // 16
        c_lo, c_hi = (0, N_CHUNKS) if part == -1 else V_L if part == 0 else (V_R[0], N_CHUNKS)
        warpgroup.fence()
        # step 33: the i-th chunk issued is latent chunk (i + 4 stage) % 8, the rope chunk (8)
        # last: WG1's stage 1 gives 4-7, 0-3, 8; WG0's stage 0 the natural order
        reorder = self.qk_release_order and part == -1 and not self.crossover
        # step 85 takes the rope chunk by its issue position (i // 4 == 8): the reorder keeps it
        assert release_order_chunk(P_CHUNK, 0) == release_order_chunk(P_CHUNK, 1) == P_CHUNK
        for i in range(c_lo * k_per_chunk, c_hi * k_per_chunk):
            c = i // k_per_chunk
            if reorder:
                c = release_order_chunk(c, stage)
            k = c * k_per_chunk + i % k_per_chunk  # the k-block issued i-th
            if i % k_per_chunk == 0 and not self.crossover:
                cute.arch.mbarrier_wait(mbar + stage * N_CHUNKS + c, phase)
            if i % k_per_chunk == 0 and self.crossover and c % 4 == 0:
                # step 26: a latent group lands at once (from one producer); its 4 chunks,
                # then one proxy fence (the rope chunk: a TMA)
                for cc in range(c, min(c + 4, N_CHUNKS)):
                    cute.arch.mbarrier_wait(mbar + stage * N_CHUNKS + cc, phase)
                if c < P_CHUNK:
                    self.fence_remote_chunk()
            if rope is not None and i // k_per_chunk == P_CHUNK:
                # step 85: the rope chunk, issued last in every order (so i > 0: accumulate);
                # its k-blocks are 32..35 (a Python int: the reorder never moves chunk 8)
                rs, rQ, rK = rope  # (rs accumulates: set once where rope is made)
                kr = i % k_per_chunk
                kk = P_CHUNK * k_per_chunk + kr
                cute.gemm(rs, acc_s, rQ[None, None, kr], rK[None, None, kk, stage], acc_s)
            else:
                qk_mma.set(warpgroup.Field.ACCUMULATE, i != 0)
                cute.gemm(qk_mma, acc_s, tSrQ[None, None, k], tSrK[None, None, k, stage], acc_s)
        warpgroup.commit_group()
        return qk_mma

    @cute.jit
    def running_max(self, m: cutlass.Float32, page_max: cutlass.Float32) -> cutlass.Float32:
        """The running row max (log2 domain, scaled) after a page whose own row max is
        ``page_max``: max(m, page_max), where warpgroup 0 takes m0 from m and warpgroup 1 m1
        from m0. Steps 86-87 keep ``m`` unless ``page_max`` passes it by more than
        :data:`RESCALE_SKIP_LOG2` (FlashAttention-4's conditional rescaling)."""
        m_new = cute.arch.fmax(m, page_max)
        if cutlass.const_expr(self.lazy_rescale):  # noqa: SIM102
            if page_max <= m + RESCALE_SKIP_LOG2:
                m_new = m
        return m_new

    @cute.jit
    def rescale(self, m_old: cutlass.Float32, m_new: cutlass.Float32) -> cutlass.Float32:
        """exp2(m_old - m_new) for running maxima in the log2 domain; 1 while nothing has been
        seen (both -inf: never NaN), 0 when the first keys arrive (m_old = -inf). Steps 86-87:
        exactly 1 whenever the maximum was kept (the skipped rescales test for 1)."""
        sc = cutlass.Float32(1.0)
        if cutlass.const_expr(self.lazy_rescale):
            if m_new != -cutlass.Float32.inf and m_new != m_old:
                sc = cute.math.exp2(m_old - m_new, fastmath=True)
        else:  # noqa: PLR5501 (compile time, then run time)
            if m_new != -cutlass.Float32.inf:
                sc = cute.math.exp2(m_old - m_new, fastmath=True)
        return sc

    @cute.jit
    def rescale_rows_if_moved(self, t_mn: cute.Tensor, sc: cute.Tensor, n_rows: int) -> None:
        """Multiply each of this thread's rows of ``t_mn`` (an accumulator in (row, column)
        view: O's 64 x 256 half, fp32) by its factor in ``sc`` (``n_rows``
        factors, exp2 of the old reference max minus the new), but only in a warp where some
        row's factor is not 1: the branch is warp-uniform (a vote), so a warp whose 16 rows
        kept their maxima (steps 86-87: the usual case after a sequence's first pages) skips
        every multiply. Nothing is in flight on ``t_mn`` here (its WGMMAs were waited for)."""
        moved = False
        for i in cutlass.range_constexpr(n_rows):
            moved = moved or sc[i] != 1.0
        if cute.arch.vote_any_sync(moved):
            for i in cutlass.range_constexpr(n_rows):
                for j in cutlass.range_constexpr(cute.size(t_mn, mode=[1])):
                    t_mn[i, j] = t_mn[i, j] * sc[i]

    @cute.jit
    def acc_to_a(self, acc_s: cute.Tensor) -> cute.Tensor:
        """P (dtype) as the register A operand of the PV WGMMA: for 16-bit types the m64n64
        accumulator's registers, in order, are the A fragments of four m64k16 k-blocks
        (knowledge/languages/cute-dsl/optimizations/wgmma-register-a-operand-from-accumulator.md).
        Returns ((2, 2, 2), 1, 4)."""
        p = cute.make_rmem_tensor(cute.make_layout(((2, 2, 2), 1, PAGE // 16)), self.dtype)
        p_as_acc = cute.make_tensor(p.iterator, cute.make_layout(acc_s.shape))
        p_as_acc.store(acc_s.load().to(self.dtype))
        return p

    @cute.jit
    def store_p(
        self,
        acc_s: cute.Tensor,
        tPsP: cute.Tensor,
        st_copy: cute.TiledCopy,
        tPsP_st: cute.Tensor,
    ):
        """P (dtype) from the S accumulator's registers into a stage's rope chunk: one 16-bit
        store per value (steps 4-5) or stmatrix, four 8x8 matrices per instruction (step 6)."""
        rP = cute.make_rmem_tensor(acc_s.layout, self.dtype)
        rP.store(acc_s.load().to(self.dtype))
        if cutlass.const_expr(self.step >= 6):
            cute.copy(st_copy, st_copy.retile(rP), tPsP_st)
        else:
            for e in cutlass.range_constexpr(cute.size(rP)):
                tPsP[e] = rP[e]

    @cute.jit
    def zero_tail_half(
        self,
        sK: cute.Tensor,
        stage: cutlass.Int32,
        tail: cutlass.Int32,
        half: cutlass.Int32,
        wg_tidx: cutlass.Int32,
        bar_id: cutlass.Int32,
    ):
        """When a page holds fewer than 64 tokens (``tail`` < 64): zero V columns
        [256 half, 256 half + 256) of its rows tail..63 in ``stage`` (the NaN slots past the
        sequence's end), by one warpgroup: thread t takes 8 columns of rows tail + t // 32,
        +4, ...; then fence.proxy.async and a warpgroup barrier before its WGMMAs read them."""
        if tail < PAGE:
            self.zero_v_rows(
                sK, stage, cutlass.max(tail, 0), wg_tidx, half * HALF_V, HALF_V, WG_THREADS
            )
            cute.arch.fence_proxy("async.shared", space="cta")
            cute.arch.barrier(barrier_id=bar_id, number_of_threads=WG_THREADS)


#: e4m3 bits placed into a 16-bit value (:func:`e4m3x4_to_16bit`) give the e4m3 value times
#: 2^-120 in bf16 (exponent bias 127 against 7) and 2^-8 in fp16 (15 against 7); these are
#: the 16-bit pairs of 2^120 and 2^8 that undo it
_BF16X2_2P120 = 0x7B807B80
_F16X2_2P8 = 0x5C005C00
#: per 16-bit type (fp16?): the right shift of the 7 exponent-and-mantissa bits, their mask
#: in the pair, and the pair of 2^bias that restores the value
E4M3_PLACEMENT = {False: (4, 0x07F007F0, _BF16X2_2P120), True: (1, 0x3F803F80, _F16X2_2P8)}
#: the ``prmt`` selectors moving bytes 0, 1 (``high``: 2, 3) of a word to bits 8-15, 24-31
E4M3_PRMT = {False: 0x1404, True: 0x3424}


def asm_u32(asm: str, constraints: str, values, side_effects: bool = False) -> cutlass.Uint32:
    """One inline PTX block with a 32-bit result (``$0``) over the MLIR ``values``; for the
    dequantisation ops here and in :mod:`.q_on_n_fp8` (call inside a ``dsl_user_op``)."""
    return cutlass.Uint32(
        llvm.inline_asm(
            T.i32(),
            values,
            asm,
            constraints,
            has_side_effects=side_effects,
            is_align_stack=False,
            asm_dialect=llvm.AsmDialect.AD_ATT,
        )  # fmt: skip
    )


@dsl_user_op
def cluster_address(ptr: cute.Pointer, peer, *, loc=None, ip=None) -> cutlass.Uint32:
    """Step 62: the shared::cluster address of SMEM pointer ``ptr``'s byte in the CTA of
    cluster rank ``peer`` (``mapa.shared::cluster.u32``), for :func:`st_async_complete_tx`.
    One mapa per base address, where ``cute.arch.store_async_dsmem`` maps every store's
    pointer and its mbarrier's anew (step 62's first build spilled 192 bytes with it)."""
    local = cutlass.Uint32(ptr.toint()).ir_value(loc=loc, ip=ip)
    rank = cutlass.Uint32(peer).ir_value(loc=loc, ip=ip)
    return asm_u32("mapa.shared::cluster.u32 $0, $1, $2;", "=r,r,r", [local, rank])


@dsl_user_op
def st_async_complete_tx(addr, values, mbar, *, loc=None, ip=None) -> None:
    """Step 62: ``st.async`` of 1 or 4 32-bit ``values`` to shared::cluster address
    ``addr`` (:func:`cluster_address`; 4- or 16-byte aligned), completing their bytes on
    the mbarrier at shared::cluster address ``mbar`` (PTX ISA, "st.async"): the receiver
    sees them once its wait on that mbarrier's phase returns."""
    regs = [cutlass.Uint32(x).ir_value(loc=loc, ip=ip) for x in (addr, *values, mbar)]
    n = len(values)
    vec = "{$1, $2, $3, $4}" if n == 4 else "$1"
    llvm.inline_asm(
        None,
        regs,
        f"st.async.shared::cluster.mbarrier::complete_tx::bytes{'.v4' if n == 4 else ''}.b32 "
        f"[$0], {vec}, [${n + 1}];",
        ",".join(["r"] * (n + 2)),
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
    )


@dsl_user_op
def cluster_add_one(addr, *, loc=None, ip=None) -> cutlass.Uint32:
    """Step 63: ``atom.relaxed.cluster.shared::cluster.add.u32`` of 1 at shared::cluster
    address ``addr`` (:func:`cluster_address`); returns the old value. Relaxed: with
    ``.acq_rel`` ptxas put MEMBAR.ALL.CTA and MEMBAR.ALL.GPU before each ATOM (CPU compile,
    session 25), a wait for every outstanding memory operation of the thread, 4 times per
    pair of pages. Why the fences are not needed here: what the count releases is the
    group's SMEM, whose every read (the WGMMAs, async proxy) has completed at the
    warpgroup's wait_group before its barrier, and whose generic writes (P, the zeroed tail
    rows) were fenced to the async proxy and read by those WGMMAs; the peer's TMA that
    follows the count depends on its value (a branch). That argues from operations the
    hardware has completed; the PTX memory model does not promise it for a relaxed atomic
    (CUTLASS hands a buffer across CTAs with a release-ordered mbarrier arrive). Step 63
    passed its GPU checks so, and was measured slower anyway."""
    a = cutlass.Uint32(addr).ir_value(loc=loc, ip=ip)
    return asm_u32("atom.relaxed.cluster.shared::cluster.add.u32 $0, [$1], 1;", "=r,r", [a], True)


def e4m3_placement_ptx(y: str, s: str, t: str, half16: bool) -> str:
    """The PTX lines of the bit placement on register ``y`` (each e4m3 byte at bits 8-15 of its
    half): the sign kept, the 7 exponent-and-mantissa bits shifted into the 16-bit fields
    (:data:`E4M3_PLACEMENT`), so that ``y`` holds the values times 2^-120 (bf16) or 2^-8
    (fp16); ``s`` and ``t`` are scratch registers."""
    shift, mask, _ = E4M3_PLACEMENT[half16]
    return (
        f"and.b32 {s}, {y}, 0x80008000;\n\t"
        f"shr.b32 {t}, {y}, {shift};\n\t"
        f"and.b32 {t}, {t}, {mask:#x};\n\t"
        f"or.b32 {y}, {s}, {t};\n\t"
    )


@dsl_user_op
def pack_scale(sc, half16: bool, *, loc=None, ip=None) -> cutlass.Uint32:
    """An fp32 scale as a pair of equal 16-bit values (bf16, or fp16 with ``half16``), the
    second factor of :func:`e4m3x4_to_16bit`; exact for the workload's power-of-two scales
    (bf16 has fp32's exponent range; fp16 down to 2^-24)."""
    kind = "f16x2" if half16 else "bf16x2"
    v = cutlass.Float32(sc).ir_value(loc=loc, ip=ip)
    return asm_u32(f"cvt.rn.{kind}.f32 $0, $1, $2;", "=r,f,f", [v, v])


@dsl_user_op
def swizzled_smem_ptr(ptr: cute.Pointer, dtype, *, loc=None, ip=None) -> cute.Pointer:
    """Step 26: the physical SMEM address of a 16-byte unit that ``ptr`` (an element pointer of
    the 128-byte-swizzled stages, as ``local_tile`` of ``sK`` gives it) points at, as a plain
    16-byte-aligned pointer: the swizzle (Swizzle<3,4,3> on byte addresses: bits 4-6 XOR bits
    7-9, the stages 1024-byte aligned) applied to the address the pointer holds. A swizzled
    pointer keeps its offset unswizzled and applies the swizzle where cute copies through it;
    ``st.async`` takes a raw address, so it is applied here, the same XOR that the DSL emits
    for the local 16-byte store to the same tile."""
    a = ptr.toint()
    return cute.make_ptr(dtype, a ^ ((a >> 3) & 0x70), cute.AddressSpace.smem, assumed_align=16)


def e4m3x4_to_16bit(x, sc2, half16: bool, high: bool, *, loc=None, ip=None) -> cutlass.Uint32:
    """Step 15: dequantise two of the four e4m3 values in the 32-bit word ``x`` (bytes 0-1,
    or 2-3 with ``high``) into a pair of 16-bit values (bf16, or fp16 with ``half16``), times
    the pair ``sc2`` (:func:`pack_scale`), without the conversion units.

    Method (the bit placement that FP8-to-bf16 dequantisers such as vLLM's Marlin kernels use;
    written here): ``prmt`` moves byte b of each value to bits 8-15 of its half; the sign stays
    at bit 15 and the 7 exponent-and-mantissa bits shift right by 4 (bf16: 8 exponent bits) or
    1 (fp16: 5), landing as a 16-bit value equal to the e4m3 value times 2^-120 (bf16) or 2^-8
    (fp16), subnormals included (e4m3 exponent 0 lands as a 16-bit subnormal of the same
    ratio). One 16-bit multiply by 2^120 (2^8) restores it exactly, a second applies the scale.
    The asm is marked as having side effects so that it stays after the producer's mbarrier
    wait: as a pure value LLVM hoisted the conversions above the wait, which doubles the live
    registers (16-bit values instead of e4m3) and spilled step 16's producer.
    e4m3's NaN (0x7f) lands as a finite value: the cache's NaN slots past a sequence's end are
    masked in S and zeroed in V by the math warpgroups, as for 16-bit TMA pages.

    Instructions per two values: PRMT, SHF, LOP3 (x2) and two HMUL2, against step 14's F2FP
    (e4m3x2 -> f16x2), two HADD2.F32, two FMUL and F2FP (f32x2 -> 16-bit x2)."""
    _, _, one = E4M3_PLACEMENT[half16]
    kind = "f16x2" if half16 else "bf16x2"
    asm = (
        "{\n\t.reg .b32 y, s, t, k;\n\t"
        f"prmt.b32 y, $1, 0, {E4M3_PRMT[high]:#x};\n\t"
        + e4m3_placement_ptx("y", "s", "t", half16)
        + f"mov.b32 k, {one:#x};\n\t"
        f"mul.rn.{kind} y, y, k;\n\t"
        f"mul.rn.{kind} $0, y, $2;\n\t}}"
    )
    args = [
        cutlass.Uint32(x).ir_value(loc=loc, ip=ip),
        cutlass.Uint32(sc2).ir_value(loc=loc, ip=ip),
    ]
    return asm_u32(asm, "=r,r,r", args, side_effects=True)


@cute.kernel
def _dequant_words_kernel(
    src: cute.Tensor, dst: cute.Tensor, sc: cutlass.Float32, half16: cutlass.Constexpr
):
    t, _, _ = cute.arch.thread_idx()
    sc2 = pack_scale(sc, half16)
    x = src[t]
    dst[2 * t] = e4m3x4_to_16bit(x, sc2, half16, False)
    dst[2 * t + 1] = e4m3x4_to_16bit(x, sc2, half16, True)


@cute.jit
def dequant_words(
    src: cute.Tensor, dst: cute.Tensor, sc: cutlass.Float32, half16: cutlass.Constexpr
):
    """:func:`e4m3x4_to_16bit` on its own, one thread per word: ``src`` (n,) uint32 (4 e4m3
    values each), ``dst`` (2n,) uint32 (the 16-bit values, in order), times ``sc``; a check of
    the bit placement on a GPU (``scripts/device/fp8_dequant_check.py``)."""
    _dequant_words_kernel(src, dst, sc, half16).launch(grid=[1, 1, 1], block=[src.shape[0], 1, 1])
