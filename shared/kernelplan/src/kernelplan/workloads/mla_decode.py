"""The MLA decode workload: DeepSeek-style multi-head latent attention over a paged latent cache.

For each sequence ``i`` of the batch (``b``), each query token ``r`` of its ``s`` query tokens
and each query head ``j`` of ``h``::

    S[k]   = softmax_scale * dot(q[i, r, j, :], K[k, :])      K = the cache rows, all 576 columns
    lse    = log(sum_k exp(S[k]))                              natural log, over the visible keys
    O[i, r, j, :] = sum_k exp(S[k] - lse) * K[k, :d_latent]    V = the first d_latent columns

over the keys ``k`` that query ``r`` sees: with ``causal`` and ``s > 1``, query ``r`` sits at
position ``len_i - s + r`` and sees keys ``0 .. len_i - s + r`` (FlashMLA's convention: its
reference masks with ``tril(diagonal=s_k - s_q)``, deepseek-ai/FlashMLA
``tests/test_flash_mla_dense_decoding.py:L102-L107`` at 9241ae3); otherwise (or ``s == 1``)
every query sees keys ``0 .. len_i - 1``. There is one latent KV head shared by every query
head (MQA in the latent space), so K and V are one cache: K is all ``d_latent + d_rope``
columns, V the first ``d_latent`` of the same rows.

Tensors (storage shapes, row-major; :meth:`MlaDecodeWorkload.tensor_specs`):

    q           (b, s, h, d_latent + d_rope)      dtype   latent part first, rope part last
    kv_cache    (num_pages, page, d_latent + d_rope) dtype  one latent head, token-major pages
    page_table  (b, table_pages)                  int32   table_pages() = ceil(max length / page)
    seqlens     (b,)                              int32   the KV length of each sequence
    o           (b, s, h, d_latent)               dtype   output
    lse         (b, s, h)                         float32 output, natural log

Token ``k`` of sequence ``i`` lives at ``kv_cache[page_table[i, k // page], k % page]``.
Implementations whose upstream API takes other layouts (FlashMLA's lse is (b, h, s); CUTLASS's
``mla_decode_fp16`` takes a (page_count, batch) table and returns a base-2 LSE of shape
(h, s, b), ``examples/python/CuTeDSL/cute/blackwell/kernel/attention/mla/mla_decode_fp16.py:
L310, L314, L3954``) convert in their adapters.

Conventions every implementation must follow:

* ``softmax_scale`` defaults to ``(d_latent + d_rope) ** -0.5`` = 1/24 for 576: the
  ``1/sqrt(head_dim of Q and K)`` default of FlashMLA's ``flash_mla_with_kvcache``
  (deepseek-ai/FlashMLA ``flash_mla/flash_mla_interface.py:L82, L113`` at 9241ae3).
* A query that sees no key (a zero-length sequence; with ``causal`` and ``s > 1`` a query of a
  sequence shorter than ``s``) has ``o = 0`` and ``lse = -inf`` (the log of an empty sum).
  FlashMLA returns ``+inf`` there instead (its reference sets ``lse[lonely_q] = +inf``,
  ``tests/test_flash_mla_dense_decoding.py:L114-L118``); its adapter maps it. (The core's
  check requires the reference's own infinity where the reference is infinite, so an
  unmapped ``+inf`` fails; ``o = 0`` is compared as any value.)
* Page-table entries past a sequence's own ``ceil(len / page)`` pages point at a *spare* page:
  a valid page index (so a kernel that prefetches them reads memory it may read), belonging to
  no sequence and filled with NaN. Implementations must not use them.
* Every cache slot that belongs to no sequence (the spare pages and the unused tail of each
  sequence's last page) holds NaN, as FlashMLA's own test does
  (``tests/test_flash_mla_dense_decoding.py:L63-L69``): a kernel that lets a slot past a
  sequence's end into S or into P@V produces NaN and fails the check. Masking S alone is not
  enough: a masked P of 0 times a NaN V row is NaN, so V rows past the end must be kept out of
  the MMA (zeroed, or predicated off) too.
* Pages are a random permutation (drawn from the check's seed), so the table is not the
  identity and neighbouring tokens of two sequences are not neighbours in memory.

Lengths: ``t`` for every sequence; with ``varlen``, drawn around ``t`` from a generator seeded
only by the problem (``varlen_seed``, ``b``, ``t``): about one sequence in eight is empty,
the others get weights uniform in [0.25, 1.75], scaled so the mean over all ``b`` sequences is
exactly ``t`` (so FLOPs and bytes equal the fixed-length problem's); ``seqlens`` gives them
explicitly and overrides ``t`` and ``varlen``.

FLOPs: ``2 * h * (d_latent + d_rope + d_latent)`` per (query token, visible key) pair, i.e.
``2*s*h*1088`` per KV token for s = 1 (QK^T and PV; softmax not counted), with the causal count
exact when ``s > 1``. Minimum bytes: every sequence's KV rows read once (1152 B per token in
bf16) + Q + O + LSE; the page table and lengths are not counted (int32, ``b * (table_pages + 1)``
words). At h = 128, s = 1, bf16 that is 278528 FLOP / 1152 B = 241.8 FLOP per KV byte.

FP8 latent cache (``kv_dtype="float8_e4m3fn"``, with ``dtype`` bfloat16 or float16)
-----------------------------------------------------------------------------------
The cache is stored in three tensors, all page-major like the 16-bit cache (token ``k`` of
sequence ``i`` is row ``[page_table[i, k // page], k % page]`` of each):

    kv_cache    (num_pages, page, d_latent)  float8_e4m3fn  the latent part, quantised
    kv_scales   (num_pages, page, G)         float32        dequantisation multipliers
    kv_rope     (num_pages, page, d_rope)    dtype          the rope part, not quantised

The dequantised row is ``K[k, c] = float(kv_cache[.., c]) * kv_scales[.., c // kv_block]``
for the latent columns ``c < d_latent`` and ``K[k, d_latent + c] = kv_rope[.., c]``; V is
again its first ``d_latent`` columns. ``kv_scale`` picks the scale granularity: ``per_token``
(the default) is one scale per token over its ``d_latent`` values (G = 1); ``per_block`` is one
per token per ``kv_block`` consecutive latent values (G = d_latent / kv_block; kv_block 128 by
default, G = 4 at 512). Scales are per token in both cases (never shared between tokens), so
appending a token to the cache never rescales another one. Prior art this follows:

* DeepSeek's FP8 MLA cache (FlashMLA's sparse decode, "V32_FP8Sparse") quantises the 512
  latent values in 1 x 128 tiles with one float32 scale each, keeps the 64 rope values in
  bf16 ("not quantized for accuracy"), 656 B per token (deepseek-ai/FlashMLA ``README.md``
  L118-L121, ``tests/quant.py`` L13 at 9241ae3): our ``per_block`` at kv_block 128, in three
  tensors rather than FlashMLA's one 656-byte row (separate tensors are separate TMA
  descriptors, each with its own element type).
* Its scales are powers of two: ``2 ** ceil(log2(amax / 448))`` (``tests/quant.py`` L17-L18,
  L44-L45), and its kernel dequantises fp8 -> fp32 -> bf16 and multiplies by the scale in bf16
  (``csrc/sm90/decode/sparse_fp8/components/dequant.h`` L20-L34). Ours are powers of two too,
  for that reason: an e4m3 value has 4 significant bits, so ``value * 2**e`` is exact in bf16
  (and in fp16 for scales in [2**-15, 2**7]), and a kernel that dequantises into its 16-bit
  MMA operands feeds the MMA exactly the cache the reference reads. :meth:`validate_inputs`
  refuses scales in use that are not positive powers of two (NaN passes: it poisons the
  result, as a NaN in the 16-bit cache does).
* FlashInfer's SM90 MLA (fa2/fa3) takes an FP8 cache with bf16 queries and either a
  per-tensor ``ckv_scale`` or ``ckv_scale_arr``: float32, per token and per 128 latent
  channels, shaped ``ckv_cache.shape[:-1] + (4,)``, i.e. our ``kv_scales`` at per_block 128
  (flashinfer-ai/flashinfer ``flashinfer/mla/_core.py`` L2186-L2215, L2365-L2375 at
  fb28d7242; added in 38ebb1511, #4373). It quantises the rope part too (the rope cache must be
  the same FP8 type, with a per-tensor ``kpe_scale``, L2376-L2379, L2462-L2477): not this
  problem, which keeps the rope in ``dtype`` as DeepSeek does. Its scales are
  ``amax / 448`` (not powers of two; ``tests/attention/test_deepseek_mla.py`` L833-L846).

Inputs: :meth:`MlaDecodeWorkload.prepare_inputs` draws the same Q, page table and 16-bit cache
as the 16-bit problem with the same seed, then quantises that cache (:func:`quantize_kv`), so
the two problems' results differ only by the quantisation. Slots that belong to no sequence
are NaN in all three tensors (a NaN latent value, a NaN scale, a NaN rope value).

Reference: float32 math on the *dequantised* cache (:func:`dequantize_kv`). The quantisation
error is the cache's, not the kernel's: against the bf16 problem's reference (same seed, on
the CPU; ``tests/test_mla_fp8_kv.py::test_quantisation_error_for_the_record``) it is 2.9e-2 to
3.1e-2 relative-norm in O (max error 3.3e-2 to 4.3e-2 of max|O|) and 1.9e-4 to 2.4e-4 in LSE,
from 2.7e-2 in the latent values themselves: above bf16's bounds (1.6e-2 / 3.2e-2; LSE
1e-4), so a check against the 16-bit cache would fail a correct FP8 kernel and could not tell
it from a wrong one (FlashMLA's test dequantises for the same reason: ``tests/lib.py`` L180-L192
at 9241ae3; so does FlashInfer's, ``tests/attention/test_deepseek_mla.py`` L914-L966 at
fb28d7242). The MMAs stay in ``dtype``: Q is not quantised, and P is rounded to ``dtype`` as
in the 16-bit problem, so ``reference_lowp`` is the 16-bit one on the dequantised cache and
``o`` keeps ``dtype``'s tolerance (:meth:`MlaDecodeWorkload.tolerance`). A kernel that
feeds an FP8 MMA (P or Q in e4m3) computes another problem and needs its own tolerance.

FLOPs are the 16-bit problem's. KV bytes per token: ``d_latent`` (fp8) + ``2 * d_rope``
(16-bit rope) + ``4 * G`` (scales) = 644 B per_token, 656 B per_block 128, against 1152 B;
at h = 64, b = 128, t = 4096 the whole problem moves 355500032 B against 621838336 B (0.572x;
the KV part alone 0.559x: the latent half halves, the rope does not).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .. import dtypes
from ..errors import KernelPlanError
from ..kernel import TensorSpec
from ..workload import Problem, ShapeError, Workload
from ._common import Rederived, check_integer, lse_tolerance, no_tf32, resolve_softmax_scale

#: the element types Q, the cache and O may have (implementations restrict further)
DTYPES = ("bfloat16", "float16", "float8_e4m3fn", "float32")
#: spare pages the default cache holds beyond what the lengths need
SPARE_PAGES = 4
#: the fraction of sequences a varlen problem leaves empty (at least one when b >= 2)
VARLEN_EMPTY_EVERY = 8
#: varlen weights are drawn uniformly from this range, then scaled to mean t
VARLEN_WEIGHTS = (0.25, 1.75)
#: ``init="spiky"``: one cache token in SPIKE_EVERY (drawn per slot) has its whole row (latent
#: and rope) scaled by SPIKE_SCALE, so its scores have 16x the spread (about 23 in log2 units
#: against 1.4 at ``softmax_scale`` = 576^-0.5): a row's running maximum jumps past 2^8 at some
#: spikes and not at others, at random pages
INITS = ("randn", "spiky")
SPIKE_EVERY = 32
SPIKE_SCALE = 16.0
#: the spikes' generator is seeded with the problem's seed plus this (the table's generator
#: and the device one are left as ``randn`` draws them)
SPIKE_SEED_OFFSET = 0x5B1
#: the tensor names of the workload, inputs then outputs
INPUTS = ("q", "kv_cache", "page_table", "seqlens")
OUTPUTS = ("o", "lse")
#: the cache types ``kv_dtype`` names: the 16-bit ones (= ``dtype``) or the FP8 latent cache
KV_DTYPES = ("bfloat16", "float16", "float8_e4m3fn")
#: the FP8 cache's type, and the ``dtype`` values it may go with (its MMAs run in ``dtype``)
KV_FP8 = "float8_e4m3fn"
KV_FP8_WITH = ("bfloat16", "float16")
#: the inputs the FP8 cache adds to :data:`INPUTS` (``kv_cache`` is then the latent part)
KV_FP8_INPUTS = ("kv_scales", "kv_rope")
#: the largest finite e4m3fn value
E4M3_MAX = 448.0
#: latent values per scale with ``kv_scale="per_block"`` and no ``kv_block`` (FlashMLA's tile)
KV_BLOCK_DEFAULT = 128
#: the most sequences a problem takes: validation holds one length per sequence on the host
#: and walks them (pages, page-table width), so a larger --b would stall before any check
MAX_SEQUENCES = 1 << 24
#: the most bytes Q or the KV cache may take (1 TiB): more than any GPU's memory, so such a
#: problem is refused before its lengths are built
MAX_TENSOR_BYTES = 1 << 40


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def varlen_lengths(b: int, t: int, seed: int) -> tuple[int, ...]:
    """The lengths of a ``varlen`` problem: a function of (b, t, seed) only.

    ``b // VARLEN_EMPTY_EVERY`` sequences (at least one when ``b >= 2``) are empty; the rest
    get weights uniform in :data:`VARLEN_WEIGHTS`; lengths are the weights scaled so that the
    sum is exactly ``b * t`` (rounded; the rounding residue goes to the longest).
    """
    rng = random.Random(f"mla_decode varlen {seed} {b} {t}")
    n_empty = max(1, b // VARLEN_EMPTY_EVERY) if b >= 2 else 0
    empty = set(rng.sample(range(b), n_empty))
    weights = [0.0 if i in empty else rng.uniform(*VARLEN_WEIGHTS) for i in range(b)]
    total = b * t
    wsum = sum(weights)
    lengths = [int(round(w / wsum * total)) for w in weights]
    longest = max(range(b), key=lambda i: lengths[i])
    lengths[longest] += total - sum(lengths)
    return tuple(lengths)


@dataclass(frozen=True)
class MlaDecodeProblem(Rederived):
    """One MLA decode step (see the module docstring for the math and the conventions).

    Args:
        b: batch (sequences).
        s: query tokens per sequence, s_q (1 for decode, 2-4 for speculative decoding).
        t: KV length of every sequence (the mean length when ``varlen``).
        h: query heads h_q (128; 16/32/64 after tensor parallelism).
        page: page size of the cache, in tokens.
        dtype: element type of Q, the cache and O.
        varlen: draw per-sequence lengths around ``t`` (some zero) from ``varlen_seed``.
        varlen_seed: the seed of those lengths (they depend on the problem only).
        seqlens: explicit per-sequence lengths (``b`` of them); override ``t`` and ``varlen``.
        causal: for ``s > 1``, query r of s sees keys 0 .. len - s + r (FlashMLA's rule).
        d_latent: latent (V) width, 512 in DeepSeek-V2/V3.
        d_rope: rope width, 64; Q and K rows are ``d_latent + d_rope`` wide.
        softmax_scale: scale of QK^T; None -> ``(d_latent + d_rope) ** -0.5`` (resolved at
            construction: the field then holds the number).
        num_pages: pages in the cache; None -> the pages the lengths need plus
            :data:`SPARE_PAGES` (resolved at construction).
        kv_dtype: storage type of the cache; None -> ``dtype``. ``"float8_e4m3fn"`` with a
            16-bit ``dtype`` is the FP8 latent cache of the module docstring (scaled, the rope
            part kept in ``dtype``); a value equal to ``dtype`` is stored as None.
        kv_scale: the FP8 cache's scale granularity: ``per_token`` (one scale per token) or
            ``per_block`` (one per token per ``kv_block`` latent values). Only with the FP8
            cache.
        kv_block: latent values per scale with ``per_block``; None -> :data:`KV_BLOCK_DEFAULT`
            (128, stored as None when given); must divide ``d_latent``. Only with
            ``per_block``.
        init: Q and cache values: ``randn`` (standard normal) or ``spiky``: the same, with
            one cache token in :data:`SPIKE_EVERY` (drawn from the seed) scaled by
            :data:`SPIKE_SCALE`, so that a query row's running maximum of S jumps at random
            pages of a sequence, by more than 2^8 in softmax terms for some rows and not for
            others; a kernel that skips rescaling O while the maximum barely moves (the
            seesaw's steps 86-87) is checked on it.

    Derived (methods, not fields): :meth:`lengths`, :meth:`scale`, :attr:`d_qk`,
    :meth:`table_pages` (page-table columns), :meth:`pages_needed`, :meth:`pages_total`
    (= ``num_pages``), :meth:`keys_seen`; for the cache :attr:`kv_fp8`,
    :meth:`cache_dtype`, :meth:`scale_block`, :meth:`scale_groups`,
    :meth:`kv_bytes_per_token`.
    """

    b: int = 32
    s: int = 1
    t: int = 4096
    h: int = 128
    page: int = 64
    dtype: str = "bfloat16"
    varlen: bool = False
    varlen_seed: int = 0
    seqlens: tuple[int, ...] | None = None
    causal: bool = True
    d_latent: int = 512
    d_rope: int = 64
    softmax_scale: float | None = None
    num_pages: int | None = None
    kv_dtype: str | None = None
    kv_scale: Literal["per_token", "per_block"] = "per_token"
    kv_block: int | None = None
    init: Literal["randn", "spiky"] = "randn"

    label_always: ClassVar[tuple[str, ...] | None] = ("b", "s", "t", "h")
    label_derived: ClassVar[tuple[str, ...]] = ("softmax_scale", "num_pages")

    def validate(self) -> None:
        check_integer(self, "b", 1)
        check_integer(self, "s", 1)
        check_integer(self, "t", 0)
        check_integer(self, "h", 1)
        check_integer(self, "page", 1)
        check_integer(self, "d_latent", 1)
        check_integer(self, "d_rope", 0)
        check_integer(self, "varlen_seed", 0)
        for key in ("varlen", "causal"):
            if not isinstance(getattr(self, key), bool):
                raise ShapeError(f"--{key} must be true or false (got {getattr(self, key)!r})")
        if self.dtype not in DTYPES:
            raise ShapeError(f"--dtype {self.dtype}: one of {', '.join(DTYPES)}")
        if self.init not in INITS:
            raise ShapeError(f"--init {self.init}: one of {', '.join(INITS)}")
        self._check_size()
        if self.seqlens is not None:
            lens = tuple(self.seqlens)
            if len(lens) != self.b:
                raise ShapeError(
                    f"--seqlens has {len(lens)} lengths but --b is {self.b}: pass --b "
                    f"{len(lens)}, or {self.b} lengths"
                )
            if any(not isinstance(x, int) or isinstance(x, bool) or x < 0 for x in lens):
                raise ShapeError(f"--seqlens must be non-negative integers (got {lens})")
            object.__setattr__(self, "seqlens", lens)
        elif self.varlen:
            lens = varlen_lengths(self.b, self.t, self.varlen_seed)
        else:
            lens = (self.t,) * self.b
        if not any(lens):
            raise ShapeError("T=0 for every sequence: nothing to decode (--t / --seqlens)")
        object.__setattr__(self, "_lengths", lens)

        # fields resolved here are re-derived by replace() unless given again
        auto = set()
        resolve_softmax_scale(self, self.d_qk, auto)
        need = self.pages_needed()
        width = self.table_pages()  # once: it walks every length
        spare = 1 if any(_ceil_div(n, self.page) < width for n in lens) else 0
        if self.num_pages is None:
            object.__setattr__(self, "num_pages", need + SPARE_PAGES)
            auto.add("num_pages")
        check_integer(self, "num_pages", 1)
        if self.num_pages < need + spare:
            extra = " plus 1 spare page that the page table's unused entries point at"
            raise ShapeError(
                f"--num_pages {self.num_pages}: cache too small; the lengths need {need} pages"
                + (extra if spare else "")
            )
        object.__setattr__(self, "_auto", frozenset(auto))
        self._validate_cache()

    def _check_size(self) -> None:
        """Refuse, before any per-sequence work, a batch larger than :data:`MAX_SEQUENCES` or
        a Q or KV cache (``t`` tokens per sequence, or the given ``seqlens``) larger than
        :data:`MAX_TENSOR_BYTES` in ``dtype``."""
        if self.b > MAX_SEQUENCES:
            raise ShapeError(
                f"--b {self.b}: at most {MAX_SEQUENCES} sequences (each one's length is held "
                "on the host); use a smaller --b"
            )
        row = self.d_qk * dtypes.nbytes(self.dtype)
        tokens = self.b * self.t
        if self.seqlens is not None and len(self.seqlens) == self.b:
            tokens = sum(x for x in self.seqlens if isinstance(x, int) and x > 0)
        for what, n, hint in (
            ("Q", self.b * self.s * self.h * row, "--b, --s or --h"),
            ("the KV cache", tokens * row, "--b or --t (--seqlens)"),
        ):
            if n > MAX_TENSOR_BYTES:
                raise ShapeError(
                    f"{what} would take {n / 2**40:.1f} TiB, more than any GPU holds "
                    f"(at most {MAX_TENSOR_BYTES >> 40} TiB here); use a smaller {hint}"
                )

    def _validate_cache(self) -> None:
        """``kv_dtype``, ``kv_scale``, ``kv_block``: one spelling per problem (a value equal
        to its default is stored as None)."""
        kv = self.kv_dtype
        if kv is not None and kv not in KV_DTYPES:
            raise ShapeError(
                f"--kv_dtype {kv}: one of {', '.join(KV_DTYPES)} (or none: the --dtype)"
            )
        if kv == self.dtype:
            object.__setattr__(self, "kv_dtype", kv := None)
        if kv is not None and kv != KV_FP8:
            raise ShapeError(
                f"--kv_dtype {kv} with --dtype {self.dtype}: a 16-bit cache has the --dtype; "
                f"the other choice is --kv_dtype {KV_FP8}"
            )
        if kv == KV_FP8 and self.dtype not in KV_FP8_WITH:
            raise ShapeError(
                f"--kv_dtype {KV_FP8} takes --dtype {' or '.join(KV_FP8_WITH)} (got --dtype "
                f"{self.dtype}; --dtype float8_e4m3fn alone is the unscaled all-FP8 problem)"
            )
        if self.kv_scale not in ("per_token", "per_block"):
            raise ShapeError(f"--kv_scale must be per_token or per_block (got {self.kv_scale!r})")
        if kv is None:
            if self.kv_scale != "per_token" or self.kv_block is not None:
                raise ShapeError(
                    f"--kv_scale and --kv_block apply to --kv_dtype {KV_FP8} only (the cache "
                    f"is {self.dtype}, unscaled)"
                )
            return
        blk = self.kv_block
        if blk is None:
            if self.kv_scale == "per_block" and self.d_latent % KV_BLOCK_DEFAULT:
                raise ShapeError(
                    f"--kv_block {KV_BLOCK_DEFAULT} (the default) does not divide --d_latent "
                    f"{self.d_latent}: give --kv_block"
                )
            return
        if not isinstance(blk, int) or isinstance(blk, bool) or blk < 1:
            raise ShapeError(f"--kv_block must be a positive integer (got {blk!r})")
        if self.kv_scale == "per_token":
            if blk != self.d_latent:
                raise ShapeError(
                    f"--kv_block {blk} with --kv_scale per_token: a per-token scale covers all "
                    f"--d_latent {self.d_latent} values (--kv_scale per_block for blocks)"
                )
            object.__setattr__(self, "kv_block", None)
            return
        if self.d_latent % blk:
            raise ShapeError(f"--kv_block {blk} does not divide --d_latent {self.d_latent}")
        if blk == KV_BLOCK_DEFAULT:
            object.__setattr__(self, "kv_block", None)

    # replace(): ``softmax_scale`` and ``num_pages`` that were derived are derived again (a
    # larger ``t`` gets a larger cache) unless given (Rederived)

    # -- derived values ---------------------------------------------------------------------
    def lengths(self) -> tuple[int, ...]:
        """The KV length of each sequence (``seqlens``, the varlen draw, or ``t`` each)."""
        return self._lengths  # type: ignore[attr-defined]

    def scale(self) -> float:
        """The softmax scale (``softmax_scale``, resolved: never None)."""
        return float(self.softmax_scale)  # type: ignore[arg-type]

    @property
    def d_qk(self) -> int:
        """Width of a Q/K row: ``d_latent + d_rope`` (576)."""
        return self.d_latent + self.d_rope

    def table_pages(self) -> int:
        """Columns of the page table: the pages of the longest sequence."""
        return max(_ceil_div(n, self.page) for n in self.lengths())

    def pages_needed(self) -> int:
        """Pages the sequences occupy together (each sequence's last page may be partly used)."""
        return sum(_ceil_div(n, self.page) for n in self.lengths())

    def pages_total(self) -> int:
        """Pages in the cache (``num_pages``, resolved: never None)."""
        return int(self.num_pages)  # type: ignore[arg-type]

    @property
    def kv_fp8(self) -> bool:
        """Whether the cache is the scaled FP8 latent cache (``kv_dtype`` float8_e4m3fn with a
        16-bit ``dtype``): tensors ``kv_cache`` (latent), ``kv_scales``, ``kv_rope``."""
        return self.kv_dtype is not None

    def cache_dtype(self) -> str:
        """Storage type of ``kv_cache`` (``kv_dtype``, or ``dtype`` where that is None)."""
        return self.kv_dtype or self.dtype

    def scale_block(self) -> int:
        """Latent values per scale: ``d_latent`` per_token, ``kv_block`` (default 128)
        per_block. Meaningful with :attr:`kv_fp8` only."""
        if self.kv_scale == "per_token":
            return self.d_latent
        return self.kv_block or KV_BLOCK_DEFAULT

    def scale_groups(self) -> int:
        """Scales per token, G = d_latent / :meth:`scale_block` (1 per_token)."""
        return self.d_latent // self.scale_block()

    def kv_bytes_per_token(self) -> int:
        """Cache bytes one token occupies (and a kernel reads once): ``d_qk`` elements of
        ``dtype``, or with the FP8 cache ``d_latent`` bytes + ``d_rope`` elements of ``dtype``
        + 4 bytes per scale (644 per_token, 656 per_block 128 at 512 + 64, bf16)."""
        e = dtypes.nbytes(self.dtype)
        if not self.kv_fp8:
            return int(self.d_qk * e)
        return int(self.d_latent + self.d_rope * e + 4 * self.scale_groups())

    def keys_seen(self, length: int) -> int:
        """(query token, key) pairs of one sequence of ``length`` keys: ``s * length``, or with
        ``causal`` and ``s > 1`` the sum over r of ``clamp(length - s + r + 1, 0, length)``."""
        if not self.causal or self.s == 1:
            return self.s * length
        return sum(min(length, max(0, length - self.s + r + 1)) for r in range(self.s))


def _pow2_ceil(x):
    """The smallest power of two >= ``x`` (float32, x >= 0), exactly (frexp, not log2); 1 for
    0; NaN stays NaN."""
    import torch

    m, e = torch.frexp(x)  # x = m * 2**e, 0.5 <= m < 1
    e = torch.where(m == 0.5, e - 1, e)  # x is a power of two already
    p = torch.ldexp(torch.ones_like(x), e)
    return torch.where(torch.isnan(x), x, p)


def quantize_kv(problem: MlaDecodeProblem, cache):
    """The FP8 latent cache of a 16-bit cache: ``(kv_cache, kv_scales, kv_rope)``.

    ``cache`` is ``(..., d_qk)`` (any float type; the workload passes the 16-bit cache the
    16-bit problem would see). Per group of :meth:`~MlaDecodeProblem.scale_block` latent
    values of one token, the scale is the smallest power of two >= amax / 448 (FlashMLA's
    rule, ``tests/quant.py`` L17-L18, L44-L45 at 9241ae3, computed exactly), the stored value
    ``round_to_e4m3(x / scale)`` (exact division; |x / scale| <= 448). A group holding a NaN
    gets a NaN scale and NaN values; an all-zero group scale 1. The rope part is returned as
    it is (a contiguous copy)."""
    import torch

    p = problem
    lead = cache.shape[:-1]
    g, blk = p.scale_groups(), p.scale_block()
    lat = cache[..., : p.d_latent].float().reshape(*lead, g, blk)
    scales = _pow2_ceil(lat.abs().amax(dim=-1) / E4M3_MAX)  # (..., g); NaN where NaN
    q = (lat / scales.unsqueeze(-1)).clamp(-E4M3_MAX, E4M3_MAX)
    kv = q.to(torch.float8_e4m3fn).reshape(*lead, p.d_latent)
    return kv, scales.contiguous(), cache[..., p.d_latent :].contiguous()


def dequantize_kv(problem: MlaDecodeProblem, kv_cache, kv_scales, kv_rope, dtype=None):
    """The ``(..., d_qk)`` rows the FP8 cache stands for (the module docstring's formula), in
    float32 (or ``dtype``: exact in bf16 with power-of-two scales). Leading shapes must agree
    (whole cache or gathered rows)."""
    import torch

    p = problem
    lead = kv_cache.shape[:-1]
    g = p.scale_groups()
    lat = kv_cache.float().reshape(*lead, g, p.scale_block()) * kv_scales.float().unsqueeze(-1)
    out = torch.cat([lat.reshape(*lead, p.d_latent), kv_rope.float()], dim=-1)
    return out if dtype is None else out.to(dtype)


def plain_cache_only(name: str, problem: MlaDecodeProblem) -> None:
    """For an implementation's ``supports()``: refuse the FP8 latent cache (one line).

    Raises:
        ShapeError: ``problem.kv_dtype`` is set (the cache is not the ``dtype``).
    """
    if problem.kv_fp8:
        raise ShapeError(
            f"{name} takes a cache of the --dtype only (got --kv_dtype {problem.kv_dtype}: "
            "the scaled FP8 latent cache)"
        )


class MlaDecodeWorkload(Workload):
    """See the module docstring."""

    name: ClassVar[str] = "mla_decode"
    problem_type: ClassVar[type[Problem]] = MlaDecodeProblem
    description: ClassVar[str] = (
        "DeepSeek MLA decode: paged latent cache (576 = 512 latent + 64 rope), one KV head, "
        "O (d_latent) and natural-log LSE"
    )

    def tensor_specs(self, problem: MlaDecodeProblem) -> dict[str, TensorSpec]:
        """The six tensors of the module docstring; with the FP8 cache ``kv_cache`` is the
        latent part ``(num_pages, page, d_latent)`` float8_e4m3fn and ``kv_scales``
        ``(num_pages, page, G)`` float32 and ``kv_rope`` ``(num_pages, page, d_rope)`` in
        ``dtype`` follow it (after ``seqlens``)."""
        p = problem
        pages = (p.pages_total(), p.page)
        if p.kv_fp8:
            cache = {
                "kv_cache": TensorSpec((*pages, p.d_latent), p.cache_dtype(), init="randn"),
                "kv_scales": TensorSpec((*pages, p.scale_groups()), "float32", init="zeros"),
                "kv_rope": TensorSpec((*pages, p.d_rope), p.dtype, init="randn"),
            }
        else:
            cache = {"kv_cache": TensorSpec((*pages, p.d_qk), p.dtype, init="randn")}
        return {
            "q": TensorSpec((p.b, p.s, p.h, p.d_qk), p.dtype, init="randn"),
            "kv_cache": cache.pop("kv_cache"),
            "page_table": TensorSpec((p.b, p.table_pages()), "int32", init="zeros"),
            "seqlens": TensorSpec((p.b,), "int32", init="zeros"),
            **cache,
            "o": TensorSpec((p.b, p.s, p.h, p.d_latent), p.dtype, role="output", init="empty"),
            "lse": TensorSpec((p.b, p.s, p.h), "float32", role="output", init="empty"),
        }

    # -- inputs -------------------------------------------------------------------------------
    def prepare_inputs(
        self,
        problem: MlaDecodeProblem,
        specs: Mapping[str, TensorSpec],
        seed: int,
        device: str = "cuda",
    ) -> dict[str, Any]:
        """Q and the cache drawn from N(0, 1) with ``seed`` (on ``device``; with ``init`` =
        ``spiky`` some cache tokens then scaled, see :class:`MlaDecodeProblem`); a page table
        that is a random permutation of the cache's pages (drawn from ``seed`` on the CPU, so
        the same seed gives the same table on every device); entries past a sequence's pages
        pointing at spare pages; NaN in every slot that belongs to no sequence; outputs zeroed
        (the check poisons them). Tensors an implementation adds to the specs (a workspace)
        are allocated as their spec says; the workload's own are always returned (the
        references read them even where an implementation's specs leave one out). With the
        FP8 cache the 16-bit cache of the same seed is drawn and quantised
        (:func:`quantize_kv`): ``kv_cache``, ``kv_scales`` and ``kv_rope`` replace it, NaN in
        the same slots, and Q and the page table are the 16-bit problem's.

        Raises:
            KernelPlanError: an implementation's spec changes the storage shape or dtype of
                one of the workload's tensors (take another view with ``perm`` instead).
        """
        import torch

        p = problem
        own = self.tensor_specs(p)
        for n, s in specs.items():
            if n in own and (tuple(s.shape), s.dtype) != (tuple(own[n].shape), own[n].dtype):
                raise KernelPlanError(
                    f"mla_decode: tensor {n} must be stored as {own[n].shape} {own[n].dtype} "
                    f"(got {s.shape} {s.dtype}); take another view with TensorSpec.perm"
                )
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        dt = getattr(torch, p.dtype)
        out: dict[str, Any] = {}
        q = torch.randn((p.b, p.s, p.h, p.d_qk), generator=gen, device=device)
        cache = torch.randn((p.pages_total(), p.page, p.d_qk), generator=gen, device=device)
        out["q"] = q.to(dt)

        cpu = torch.Generator()
        cpu.manual_seed(seed)
        perm = torch.randperm(p.pages_total(), generator=cpu)
        spares = perm[p.pages_needed() :]
        width = p.table_pages()
        # every entry first names a random spare page (validate() ensures one exists where an
        # entry lies past a sequence's pages); each sequence's own pages then overwrite its head
        table = torch.zeros((p.b, width), dtype=torch.int64)
        if spares.numel():
            pick = torch.randint(spares.numel(), (p.b, width), generator=cpu)
            table = spares[pick]
        covered = torch.zeros((p.pages_total(), p.page), dtype=torch.bool)
        at = 0
        for i, n in enumerate(p.lengths()):
            npg = _ceil_div(n, p.page)
            if npg == 0:
                continue
            mine = perm[at : at + npg]
            at += npg
            table[i, :npg] = mine
            covered[mine[:-1]] = True
            covered[mine[-1], : n - (npg - 1) * p.page] = True
        table = table.to(torch.int32)
        if p.init == "spiky":
            # a generator of its own, so the spikes leave the table (and Q, the cache) as randn's
            spikes = torch.Generator()
            spikes.manual_seed(seed + SPIKE_SEED_OFFSET)
            hit = torch.rand((p.pages_total(), p.page), generator=spikes) < 1.0 / SPIKE_EVERY
            cache[hit.to(device)] *= SPIKE_SCALE
        cache.masked_fill_(~covered.to(device).unsqueeze(-1), float("nan"))
        if p.kv_fp8:
            kv, scales, rope = quantize_kv(p, cache.to(dt))
            out["kv_cache"], out["kv_scales"], out["kv_rope"] = kv, scales, rope
        else:
            out["kv_cache"] = cache.to(dt)
        out["page_table"] = table.to(device)
        out["seqlens"] = torch.tensor(p.lengths(), dtype=torch.int32, device=device)
        out["o"] = torch.zeros((p.b, p.s, p.h, p.d_latent), dtype=dt, device=device)
        out["lse"] = torch.zeros((p.b, p.s, p.h), dtype=torch.float32, device=device)
        for n, s in specs.items():
            if n not in out:
                out[n] = s.allocate(gen, device)
        return out

    def validate_inputs(self, problem: MlaDecodeProblem, inputs: Mapping[str, Any]) -> None:
        """Refuse tensors a user built that do not describe ``problem`` (one line each).

        Raises:
            ShapeError: a shape or dtype other than the specs' (the page table may be wider);
                lengths other than the problem's; a length longer than the page table covers
                ("a length vector longer than the page table covers"); a page-table entry
                within a sequence's pages outside [0, num_pages) ("a page table pointing
                outside the cache").
        """
        import torch

        p = problem
        specs = self.tensor_specs(p)
        for n in INPUTS + (KV_FP8_INPUTS if p.kv_fp8 else ()):
            if n not in inputs:
                raise ShapeError(f"mla_decode: input {n} is missing")
            t, s = inputs[n], specs[n]
            if str(t.dtype).removeprefix("torch.") != s.dtype:
                raise ShapeError(f"mla_decode: {n} is {t.dtype}; the problem says {s.dtype}")
            shape = tuple(t.shape)
            if n == "page_table":
                ok = len(shape) == 2 and shape[0] == p.b
            elif n == "kv_cache":
                ok = len(shape) == 3 and shape[1:] == s.shape[1:]
            elif n in KV_FP8_INPUTS:  # as many pages as kv_cache
                ok = shape == (inputs["kv_cache"].shape[0], *s.shape[1:])
            else:
                ok = shape == tuple(s.shape)
            if not ok:
                raise ShapeError(f"mla_decode: {n} has shape {shape}; the problem says {s.shape}")
        lens = [int(x) for x in inputs["seqlens"].tolist()]
        if tuple(lens) != p.lengths():
            raise ShapeError(
                f"mla_decode: the seqlens tensor {lens[:8]}{'...' if p.b > 8 else ''} differs "
                "from the problem's lengths (give them as --seqlens)"
            )
        table = inputs["page_table"].to("cpu", torch.int64)
        width, n_pages = table.shape[1], int(inputs["kv_cache"].shape[0])
        for i, n in enumerate(lens):
            npg = _ceil_div(n, p.page)
            if npg > width:
                raise ShapeError(
                    f"a length vector longer than the page table covers: sequence {i} has "
                    f"{n} tokens = {npg} pages of {p.page}; the table has {width} columns"
                )
            row = table[i, :npg]
            bad = ((row < 0) | (row >= n_pages)).nonzero()
            if bad.numel():
                k = int(bad[0, 0])
                raise ShapeError(
                    f"a page table pointing outside the cache: page_table[{i}, {k}] = "
                    f"{int(row[k])}, not in [0, {n_pages})"
                )
            if p.kv_fp8 and n:
                used = inputs["kv_scales"][row.to(inputs["kv_scales"].device)]
                used = used.reshape(npg * p.page, -1)[:n].float()
                m, _ = torch.frexp(used)
                # NaN passes (it poisons the result, as a NaN in the 16-bit cache does)
                wrong = ~((m == 0.5) & (used > 0) & torch.isfinite(used)) & ~torch.isnan(used)
                if bool(wrong.any()):
                    raise ShapeError(
                        f"mla_decode: kv_scales of sequence {i} holds {float(used[wrong][0])!r}:"
                        " the scales in use must be positive powers of two (exact 16-bit "
                        "dequantisation)"
                    )

    # -- references ---------------------------------------------------------------------------
    def _attend(self, problem: MlaDecodeProblem, inputs: Mapping[str, Any], lowp: bool):
        """o (float32) and lse, per sequence, from the pages the table names."""
        import torch

        self.validate_inputs(problem, inputs)
        p = problem
        q, cache, table = inputs["q"], inputs["kv_cache"], inputs["page_table"]
        dev = q.device
        op_dtype = getattr(torch, p.dtype)  # what the P@V MMA takes P as
        o = torch.zeros((p.b, p.s, p.h, p.d_latent), dtype=torch.float32, device=dev)
        lse = torch.full((p.b, p.s, p.h), float("-inf"), dtype=torch.float32, device=dev)
        # key k is visible to query r when k <= k_last[r]
        shift = [(-p.s + r + 1) if (p.causal and p.s > 1) else 0 for r in range(p.s)]
        with no_tf32():
            for i, n in enumerate(p.lengths()):
                if n == 0:
                    continue
                npg = _ceil_div(n, p.page)
                pages = table[i, :npg].long()
                if p.kv_fp8:  # the dequantised rows (exact in dtype; fp32 here)
                    rows = dequantize_kv(
                        p, cache[pages], inputs["kv_scales"][pages], inputs["kv_rope"][pages]
                    ).reshape(npg * p.page, p.d_qk)[:n]
                else:
                    rows = cache[pages].reshape(npg * p.page, p.d_qk)[:n].float()
                qi = q[i].float()  # (s, h, d_qk)
                scores = torch.einsum("shd,kd->shk", qi, rows) * p.scale()
                keys = torch.arange(n, device=dev)
                seen = torch.tensor([n - 1 + sh for sh in shift], device=dev)
                visible = keys.view(1, n) <= seen.view(p.s, 1)  # (s, n)
                scores = scores.masked_fill(~visible.view(p.s, 1, n), float("-inf"))
                m = scores.amax(dim=-1, keepdim=True)
                m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
                e = torch.exp(scores - m)  # 0 where masked
                l_sum = e.sum(dim=-1, keepdim=True)
                if lowp:  # a kernel feeds the MMA the unnormalised P in the operand dtype
                    e = e.to(op_dtype).float()
                oi = torch.einsum("shk,kd->shd", e, rows[:, : p.d_latent])
                oi = torch.where(l_sum > 0, oi / l_sum.clamp_min(1e-30), torch.zeros_like(oi))
                o[i] = oi
                lse[i] = torch.where(
                    l_sum[..., 0] > 0, (m + torch.log(l_sum))[..., 0], float("-inf")
                )
        if lowp:
            o = o.to(op_dtype).float()
        return {"o": o, "lse": lse}

    def reference(self, problem: MlaDecodeProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """float32 math (TF32 off): o (float32, (b, s, h, d_latent)) and lse (natural log,
        (b, s, h)); a query that sees no key gets o = 0, lse = -inf. Reads the pages through
        ``page_table`` and only the first ``seqlens[i]`` tokens of each sequence, so the NaN
        slots never enter. With the FP8 cache it reads the dequantised rows
        (:func:`dequantize_kv`): what a correct kernel can compute, not the 16-bit cache they
        were quantised from. Validates the inputs first (:meth:`validate_inputs`)."""
        return self._attend(problem, inputs, lowp=False)

    def reference_lowp(
        self, problem: MlaDecodeProblem, inputs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What a kernel must round: S and the softmax statistics in float32, the unnormalised
        P = exp(S - max) rounded to ``dtype`` (the P@V MMA's operand type: bf16 for bf16)
        before P@V, the fp32 row sum of the unrounded P as the divisor, O rounded to
        ``dtype``. lse is the reference's (float32 throughout). With the FP8 cache the same,
        on the dequantised rows (which ``dtype`` holds exactly): the MMAs are ``dtype``'s."""
        return self._attend(problem, inputs, lowp=True)

    # -- checking -------------------------------------------------------------------------------
    input_faults: ClassVar[dict[str, str]] = {
        "wrong-page": "one page-table entry of the longest sequence points at another "
        "sequence's page (or a spare page): the kernel reads valid but wrong keys",
    }

    def plant_input_fault(
        self, problem: MlaDecodeProblem, inputs: dict[str, Any], fault: str
    ) -> None:
        """``wrong-page``: the first page of the longest sequence is redirected to a page it
        does not own (the last page of the cache: a spare page or another sequence's)."""
        if fault != "wrong-page":
            super().plant_input_fault(problem, inputs, fault)
        lengths = problem.lengths()
        i = max(range(problem.b), key=lambda j: lengths[j])
        table = inputs["page_table"]
        owned = set(table[i, : -(-lengths[i] // problem.page)].tolist())
        other = next(pg for pg in range(problem.pages_total() - 1, -1, -1) if pg not in owned)
        table[i, 0] = other

    def tolerance(self, problem: MlaDecodeProblem, output: str):
        """``lse`` (float32) is judged at 1e-4 relative-norm and 1e-3 x max|lse| rather than
        the fp32 table's 1e-5: a kernel computes it from fp32 sums of bf16 products with the
        hardware's exp2/log2 approximations, and FlashMLA's own test allows about 1.2e-4
        relative on it (deepseek-ai/FlashMLA ``tests/test_flash_mla_dense_decoding.py``
        L171 at 9241ae3). ``o`` follows its dtype and the low-precision baseline; with the FP8
        cache too (bf16's 1.6e-2 / 3.2e-2, or 2x the baseline's error where larger), since
        the reference reads the dequantised cache, which a kernel's 16-bit MMA operands hold
        exactly (power-of-two scales): the quantisation error is not charged to the kernel,
        and nothing else is added to it."""
        from ..check import Tolerance, tolerance_for

        if output == "lse":
            return lse_tolerance("; FlashMLA's test allows ~1.2e-4 relative")
        if output == "o" and problem.kv_fp8:
            t = tolerance_for(problem.dtype)
            return Tolerance(
                rel_norm=t.rel_norm,
                max_abs_rel=t.max_abs_rel,
                basis=f"{problem.dtype} output from the dequantised FP8 cache (exact in "
                f"{problem.dtype}: power-of-two scales), so {problem.dtype}'s bound: {t.basis}; "
                "the quantisation error is the reference's input, not charged",
            )
        return None

    # -- roofline -----------------------------------------------------------------------------
    def flops_bytes(self, problem: MlaDecodeProblem) -> tuple[float, float]:
        p = problem
        pairs = sum(p.keys_seen(n) for n in p.lengths())
        flops = 2.0 * p.h * (p.d_qk + p.d_latent) * pairs
        e = dtypes.nbytes(p.dtype)
        kv = sum(p.lengths()) * p.kv_bytes_per_token()  # FP8 cache: latent + rope + scales
        qo = p.b * p.s * p.h * ((p.d_qk + p.d_latent) * e + 4)  # Q, O and the fp32 LSE
        return flops, float(kv + qo)

    def compute_dtype(self, problem: MlaDecodeProblem) -> str:
        return problem.dtype

    # -- problems -----------------------------------------------------------------------------
    def check_problems(self) -> list[MlaDecodeProblem]:
        """Small and fast: page-aligned lengths; T not a multiple of the page (a partly filled
        last page, its NaN tail in reach of a tile); varlen with empty sequences; s = 2 causal;
        h = 64 and h = 16 (after tensor parallelism); outlier keys (``init="spiky"``: running
        maxima that jump mid-sequence, the branch a kernel that skips rescales must get right);
        the FP8 cache per_token (varlen, h = 128, and h = 16, where implementations may take
        another route) and per_block 128 (s = 2, h = 64, a partly filled last page)."""
        return [
            MlaDecodeProblem(b=4, t=1024),
            MlaDecodeProblem(b=3, t=1000),
            MlaDecodeProblem(b=8, t=777, varlen=True),
            MlaDecodeProblem(b=4, s=2, t=1000),
            MlaDecodeProblem(b=4, t=513, h=64),
            MlaDecodeProblem(b=4, t=300, h=16, varlen=True),
            MlaDecodeProblem(b=4, t=1000, init="spiky"),
            MlaDecodeProblem(b=8, t=777, varlen=True, kv_dtype=KV_FP8),
            MlaDecodeProblem(b=4, t=300, h=16, varlen=True, kv_dtype=KV_FP8),
            MlaDecodeProblem(b=4, s=2, t=1000, h=64, kv_dtype=KV_FP8, kv_scale="per_block"),
        ]

    def profile_problems(self) -> list[MlaDecodeProblem]:
        """The table of issue 9: h = 128, s = 1 at (B, T) = (32, 4096), (64, 4096),
        (128, 4096), (32, 16384), (128, 16384); s = 2 at (32, 4096); h = 16 and h = 64 at
        (128, 4096); varlen B = 32 with mean T = 4096."""
        P = MlaDecodeProblem
        return [
            *(P(b=b, t=t) for b, t in ((32, 4096), (64, 4096), (128, 4096), (32, 16384))),
            P(b=128, t=16384),
            P(b=32, s=2, t=4096),
            P(b=128, t=4096, h=16),
            P(b=128, t=4096, h=64),
            P(b=32, t=4096, varlen=True),
        ]


MLA_DECODE = MlaDecodeWorkload()
