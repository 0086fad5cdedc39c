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
  ``tests/test_flash_mla_dense_decoding.py:L114-L116``); its adapter maps it. (The core's
  check skips elements whose reference is not finite, so such lse entries are not compared;
  ``o = 0`` is.)
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
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import dtypes
from ..errors import KernelPlanError
from ..kernel import TensorSpec
from ..workload import Problem, ShapeError, Workload

#: the element types Q, the cache and O may have (implementations restrict further)
DTYPES = ("bfloat16", "float16", "float8_e4m3fn", "float32")
#: spare pages the default cache holds beyond what the lengths need
SPARE_PAGES = 4
#: the fraction of sequences a varlen problem leaves empty (at least one when b >= 2)
VARLEN_EMPTY_EVERY = 8
#: varlen weights are drawn uniformly from this range, then scaled to mean t
VARLEN_WEIGHTS = (0.25, 1.75)
#: the tensor names of the workload, inputs then outputs
INPUTS = ("q", "kv_cache", "page_table", "seqlens")
OUTPUTS = ("o", "lse")


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
class MlaDecodeProblem(Problem):
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

    Derived (methods, not fields): :meth:`lengths`, :meth:`scale`, :attr:`d_qk`,
    :meth:`table_pages` (page-table columns), :meth:`pages_needed`, :meth:`pages_total`
    (= ``num_pages``), :meth:`keys_seen`.
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

    label_always: ClassVar[tuple[str, ...] | None] = ("b", "s", "t", "h")
    label_derived: ClassVar[tuple[str, ...]] = ("softmax_scale", "num_pages")

    def validate(self) -> None:
        def integer(key: str, lo: int) -> int:
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                what = "a positive integer" if lo == 1 else f"an integer >= {lo}"
                raise ShapeError(f"--{key} must be {what} (got {v!r})")
            return v

        integer("b", 1)
        integer("s", 1)
        integer("t", 0)
        integer("h", 1)
        integer("page", 1)
        integer("d_latent", 1)
        integer("d_rope", 0)
        integer("varlen_seed", 0)
        for key in ("varlen", "causal"):
            if not isinstance(getattr(self, key), bool):
                raise ShapeError(f"--{key} must be true or false (got {getattr(self, key)!r})")
        if self.dtype not in DTYPES:
            raise ShapeError(f"--dtype {self.dtype}: one of {', '.join(DTYPES)}")
        if self.seqlens is not None:
            lens = tuple(self.seqlens)
            if len(lens) != self.b:
                raise ShapeError(f"--seqlens has {len(lens)} lengths but --b is {self.b}")
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
        if self.softmax_scale is None:
            object.__setattr__(self, "softmax_scale", float(self.d_qk) ** -0.5)
            auto.add("softmax_scale")
        sc = self.softmax_scale
        if isinstance(sc, bool) or not isinstance(sc, (int, float)) or not 0 < sc < math.inf:
            raise ShapeError(f"--softmax_scale must be a positive number (got {sc!r})")
        object.__setattr__(self, "softmax_scale", float(sc))
        need = self.pages_needed()
        width = self.table_pages()  # once: it walks every length
        spare = 1 if any(_ceil_div(n, self.page) < width for n in lens) else 0
        if self.num_pages is None:
            object.__setattr__(self, "num_pages", need + SPARE_PAGES)
            auto.add("num_pages")
        integer("num_pages", 1)
        if self.num_pages < need + spare:
            extra = " plus 1 spare page that the page table's unused entries point at"
            raise ShapeError(
                f"--num_pages {self.num_pages}: cache too small; the lengths need {need} pages"
                + (extra if spare else "")
            )
        object.__setattr__(self, "_auto", frozenset(auto))

    def replace(self, **changes: Any) -> MlaDecodeProblem:
        """A copy with ``changes``; ``softmax_scale`` and ``num_pages`` that were derived are
        derived again (a larger ``t`` gets a larger cache) unless given."""
        derived = {k: None for k in getattr(self, "_auto", ())}
        return dataclasses.replace(self, **{**derived, **changes})

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

    def keys_seen(self, length: int) -> int:
        """(query token, key) pairs of one sequence of ``length`` keys: ``s * length``, or with
        ``causal`` and ``s > 1`` the sum over r of ``clamp(length - s + r + 1, 0, length)``."""
        if not self.causal or self.s == 1:
            return self.s * length
        return sum(min(length, max(0, length - self.s + r + 1)) for r in range(self.s))


@contextlib.contextmanager
def _no_tf32():
    """fp32 matmuls in fp32 (TF32 would round the operands to 10-bit mantissas)."""
    import torch

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


class MlaDecodeWorkload(Workload):
    """See the module docstring."""

    name: ClassVar[str] = "mla_decode"
    problem_type: ClassVar[type[Problem]] = MlaDecodeProblem
    description: ClassVar[str] = (
        "DeepSeek MLA decode: paged latent cache (576 = 512 latent + 64 rope), one KV head, "
        "O (d_latent) and natural-log LSE"
    )

    def tensor_specs(self, problem: MlaDecodeProblem) -> dict[str, TensorSpec]:
        p = problem
        return {
            "q": TensorSpec((p.b, p.s, p.h, p.d_qk), p.dtype, init="randn"),
            "kv_cache": TensorSpec((p.pages_total(), p.page, p.d_qk), p.dtype, init="randn"),
            "page_table": TensorSpec((p.b, p.table_pages()), "int32", init="zeros"),
            "seqlens": TensorSpec((p.b,), "int32", init="zeros"),
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
        """Q and the cache drawn from N(0, 1) with ``seed`` (on ``device``); a page table
        that is a random permutation of the cache's pages (drawn from ``seed`` on the CPU, so
        the same seed gives the same table on every device); entries past a sequence's pages
        pointing at spare pages; NaN in every slot that belongs to no sequence; outputs zeroed
        (the check poisons them). Tensors an implementation adds to the specs (a workspace)
        are allocated as their spec says; the workload's six are always returned (the
        references read them even where an implementation's specs leave one out).

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
        cache.masked_fill_(~covered.to(device).unsqueeze(-1), float("nan"))
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
        for n in INPUTS:
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
        with _no_tf32():
            for i, n in enumerate(p.lengths()):
                if n == 0:
                    continue
                npg = _ceil_div(n, p.page)
                rows = cache[table[i, :npg].long()].reshape(npg * p.page, p.d_qk)[:n].float()
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
        slots never enter. Validates the inputs first (:meth:`validate_inputs`)."""
        return self._attend(problem, inputs, lowp=False)

    def reference_lowp(
        self, problem: MlaDecodeProblem, inputs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What a kernel must round: S and the softmax statistics in float32, the unnormalised
        P = exp(S - max) rounded to ``dtype`` (the P@V MMA's operand type: bf16 for bf16)
        before P@V, the fp32 row sum of the unrounded P as the divisor, O rounded to
        ``dtype``. lse is the reference's (float32 throughout)."""
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
        L171 at 9241ae3). ``o`` follows its dtype and the low-precision baseline."""
        if output == "lse":
            from ..check import Tolerance

            return Tolerance(
                rel_norm=1e-4,
                max_abs_rel=1e-3,
                basis="fp32 LSE from fp32 sums with exp2/log2 approximations; FlashMLA's "
                "test allows ~1.2e-4 relative",
            )
        return None

    # -- roofline -----------------------------------------------------------------------------
    def flops_bytes(self, problem: MlaDecodeProblem) -> tuple[float, float]:
        p = problem
        pairs = sum(p.keys_seen(n) for n in p.lengths())
        flops = 2.0 * p.h * (p.d_qk + p.d_latent) * pairs
        e = dtypes.nbytes(p.dtype)
        kv = sum(p.lengths()) * p.d_qk * e
        qo = p.b * p.s * p.h * ((p.d_qk + p.d_latent) * e + 4)  # Q, O and the fp32 LSE
        return flops, float(kv + qo)

    def compute_dtype(self, problem: MlaDecodeProblem) -> str:
        return problem.dtype

    # -- problems -----------------------------------------------------------------------------
    def check_problems(self) -> list[MlaDecodeProblem]:
        """Small and fast: page-aligned lengths; T not a multiple of the page (a partly filled
        last page, its NaN tail in reach of a tile); varlen with empty sequences; s = 2 causal;
        h = 64 and h = 16 (after tensor parallelism)."""
        return [
            MlaDecodeProblem(b=4, t=1024),
            MlaDecodeProblem(b=3, t=1000),
            MlaDecodeProblem(b=8, t=777, varlen=True),
            MlaDecodeProblem(b=4, s=2, t=1000),
            MlaDecodeProblem(b=4, t=513, h=64),
            MlaDecodeProblem(b=4, t=300, h=16, varlen=True),
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
