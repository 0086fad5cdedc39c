"""The attention workloads: forward (softmax(Q K^T * scale, masked) V, with its log-sum-exp)
and backward (dQ, dK, dV from dO, given the forward's O and LSE), over one problem type.

For batch ``i``, query head ``j`` (of ``h_q``), query position ``r`` (of ``sq``)::

    S[k]        = scale * dot(q[i, r, j, :], k[i, k, g(j), :])      over the keys k it sees
    lse[i,j,r]  = log(sum_k exp(S[k]))                               natural log
    o[i, r, j]  = sum_k exp(S[k] - lse) * v[i, k, g(j), :]

where ``g(j) = j // (h_q // h_kv)`` is the KV head a query head shares (GQA; MQA when
``h_kv = 1``, MHA when ``h_kv = h_q``), the grouping flash-attention and SDPA's ``enable_gqa``
use (consecutive query heads share one KV head).

Which keys a query sees (flash-attention's rule, bottom-right aligned: the last query sits at
the last key, so query ``r`` is at key position ``r + sk - sq``): with ``window_left`` ``L``
and ``window_right`` ``R`` (``-1``: unbounded), key ``k`` is visible to query ``r`` when
``r + sk - sq - L <= k <= r + sk - sq + R``; ``causal`` is ``R = 0`` (flash-attention's
``flash_attn_func`` docstring: "the causal mask will be aligned to the bottom right corner of
the attention matrix"; Dao-AILab/flash-attention ``flash_attn/flash_attn_interface.py``, the
``flash_attn_func`` docstring). For ``sq == sk`` that is the usual lower-triangular mask.
SDPA's ``is_causal=True`` is *top-left* aligned instead (``torch.tril`` of ones); a SDPA peer
uses ``torch.nn.attention.bias.causal_lower_right`` for ``sq != sk``.

A problem in which some query sees no key (causal, or a bounded right window ``R``, with
``sq - sk > R``: the first queries sit before the first key) is refused with one line:
softmax over no key is undefined (flash-attention returns o = 0 there, SDPA's math backend
NaN), so no implementation can be judged on it.

Tensors (storage shapes, row-major; BSHD as flash-attention and SDPA's callers take them):

    q    (b, sq, h_q, d_qk)   dtype
    k    (b, sk, h_kv, d_qk)  dtype
    v    (b, sk, h_kv, d_v)   dtype
    o    (b, sq, h_q, d_v)    dtype    output
    lse  (b, h_q, sq)         float32  output, natural log (flash-attention's layout)

Implementations whose upstream takes other views (CUTLASS Hopper ``fmha.py``: (s, d, h_r, h_k,
b) views of (b, s, h_kv, h_q/h_kv, d) storage, which is the same memory as BSHD; its lse is
(b, sq, h_q) storage) or produces no lse (SDPA, CUTLASS Ampere ``flash_attention_v2.py``)
state it in their adapters.

FLOPs: ``2 * (d_qk + d_v)`` per visible (query, key) pair and head (QK^T and PV; the softmax
not counted), i.e. ``4 * b * h_q * sq * sk * d`` without a mask when ``d_qk = d_v = d``; under a
causal or windowed mask the visible pairs are counted exactly. Minimum bytes: Q, K, V read once,
O and the fp32 LSE written once.

Backward (``attention_bwd``, the same problem): given dO (b, sq, h_q, d_v) and the forward's O
and LSE, with ``P = exp(S - lse)`` over the visible keys and ``D = rowsum(dO * O)``::

    dV = P^T dO          dP = dO V^T          dS = P * (dP - D)
    dQ = scale * dS K    dK = scale * dS^T Q

(dK and dV of a KV head summed over the query heads of its group). Tensors: inputs q, k, v,
o, lse (as the forward's: o in ``dtype``, lse fp32 (b, h_q, sq)) and ``do`` (b, sq, h_q, d_v);
outputs dq (b, sq, h_q, d_qk), dk (b, sk, h_kv, d_qk), dv (b, sk, h_kv, d_v), in ``dtype``.
The workload draws q, k, v, do from the seed and computes o and lse with the forward reference
(o rounded to ``dtype``), so a kernel gets a consistent forward. FLOPs: the five matmuls per
visible pair and head, ``2 * (3 * d_qk + 2 * d_v)`` (S recomputed, dP, dV, dQ, dK), i.e. 2.5x
the forward's ``2 * (d_qk + d_v)`` when ``d_qk = d_v`` (flash-attention's convention), visible
pairs counted exactly. Minimum bytes: Q, K, V, O, dO and the fp32 LSE read once, dQ, dK, dV
written once (a kernel's fp32 dQ accumulator and D are workspace, not counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import dtypes
from ..kernel import TensorSpec
from ..workload import Problem, ShapeError, Workload
from ._common import Rederived, check_integer, lse_tolerance, no_tf32, resolve_softmax_scale

#: element types of Q, K, V and O (implementations restrict further)
DTYPES = ("bfloat16", "float16", "float32")
#: the tensor names, inputs then outputs
INPUTS = ("q", "k", "v")
OUTPUTS = ("o", "lse")
#: the reference computes S in chunks of at most this many fp32 elements (memory bound)
REF_CHUNK_ELEMS = 1 << 27


@dataclass(frozen=True)
class AttentionProblem(Rederived):
    """One attention forward problem (see the module docstring for the math and the mask).

    Args:
        b: batch.
        sq: query length.
        sk: key length; None -> ``sq`` (resolved at construction).
        h_q: query heads.
        h_kv: key/value heads (GQA: divides ``h_q``); None -> ``h_q``.
        d_qk: head dim of Q and K.
        d_v: head dim of V and O; None -> ``d_qk``.
        causal: bottom-right aligned causal mask (``window_right = 0``).
        window_left: sliding window to the left (-1: unbounded).
        window_right: sliding window to the right (-1: unbounded; 0 with ``causal``).
        softmax_scale: None -> ``d_qk ** -0.5`` (resolved at construction).
        dtype: element type of Q, K, V and O.
    """

    b: int = 4
    sq: int = 4096
    sk: int | None = None
    h_q: int = 32
    h_kv: int | None = None
    d_qk: int = 128
    d_v: int | None = None
    causal: bool = False
    window_left: int = -1
    window_right: int = -1
    softmax_scale: float | None = None
    dtype: str = "bfloat16"

    label_always: ClassVar[tuple[str, ...] | None] = (
        "b", "sq", "sk", "h_q", "h_kv", "d_qk", "causal", "dtype",
    )  # fmt: skip
    label_derived: ClassVar[tuple[str, ...]] = ("softmax_scale",)

    def validate(self) -> None:
        auto = set()
        for key, src in (("sk", "sq"), ("h_kv", "h_q"), ("d_v", "d_qk")):
            if getattr(self, key) is None:
                object.__setattr__(self, key, getattr(self, src))
                auto.add(key)
        for key in ("b", "sq", "sk", "h_q", "h_kv", "d_qk", "d_v"):
            check_integer(self, key, 1)
        check_integer(self, "window_left", -1)
        check_integer(self, "window_right", -1)
        if not isinstance(self.causal, bool):
            raise ShapeError(f"--causal must be true or false (got {self.causal!r})")
        if self.h_q % self.h_kv:
            raise ShapeError(
                f"--h_q {self.h_q} is not a multiple of --h_kv {self.h_kv} (GQA groups query "
                "heads evenly over the KV heads)"
            )
        if self.dtype not in DTYPES:
            raise ShapeError(f"--dtype {self.dtype}: one of {', '.join(DTYPES)}")
        if self.causal and self.window_right not in (-1, 0):
            raise ShapeError(
                f"--causal sets the right window to 0; --window_right {self.window_right} "
                "contradicts it (leave it -1)"
            )
        right = self.right()
        if right is not None and self.sq - self.sk > right:
            what = "--causal" if self.causal else f"--window_right {right}"
            raise ShapeError(
                f"{what} with sq {self.sq} > sk {self.sk} + {right}: the first "
                f"{self.sq - self.sk - right} queries see no key (bottom-right aligned), "
                "softmax over no key is undefined"
            )
        resolve_softmax_scale(self, self.d_qk, auto)
        # derived (``sk`` from ``sq``, ``h_kv``, ``d_v``, ``softmax_scale``): replace() derives
        # them again unless given
        object.__setattr__(self, "_auto", frozenset(auto))

    def resolved(self) -> dict[str, Any]:
        """Every field with its value (derived ones included; the same as :meth:`to_dict`,
        which records and compile keys use: a record shows the real ``sk``, ``h_kv``,
        ``d_v`` and ``softmax_scale``). The command line re-derives these fields when they
        are not given (they are declared None: :func:`kernelplan.cli.build_parser` leaves
        them out of an implementation's defaults), so ``--sq 1024`` alone gives sk 1024."""
        return self.to_dict()

    def label(self) -> str:
        r = self.resolved()
        r["softmax_scale"] = round(r["softmax_scale"], 6)
        return " ".join(f"{k}={v}" for k, v in r.items())

    # -- derived values ---------------------------------------------------------------------
    def scale(self) -> float:
        return float(self.softmax_scale)  # type: ignore[arg-type]

    @property
    def group(self) -> int:
        """Query heads per KV head (``h_q // h_kv``)."""
        return self.h_q // self.h_kv  # type: ignore[operator]

    def left(self) -> int | None:
        """The left window (None: unbounded)."""
        return None if self.window_left < 0 else self.window_left

    def right(self) -> int | None:
        """The right window (None: unbounded; 0 with ``causal``)."""
        if self.causal:
            return 0
        return None if self.window_right < 0 else self.window_right

    def masked(self) -> bool:
        """Whether any (query, key) pair is hidden (a causal mask or a bounded window)."""
        return self.left() is not None or self.right() is not None

    def key_range(self, r: int) -> tuple[int, int]:
        """[first, last] key query ``r`` sees (never empty: validate() refuses that)."""
        diag = r + self.sk - self.sq  # type: ignore[operator]
        lo = 0 if self.left() is None else max(0, diag - self.left())
        hi = self.sk - 1 if self.right() is None else min(self.sk - 1, diag + self.right())
        return lo, hi

    def visible_pairs(self) -> int:
        """(query, key) pairs per (batch, head) that the mask leaves visible, counted exactly."""
        if not self.masked():
            return self.sq * self.sk  # type: ignore[operator]
        total = 0
        for r in range(self.sq):
            lo, hi = self.key_range(r)
            total += max(0, hi - lo + 1)
        return total


def visible_mask(problem: AttentionProblem, rows: range | None = None, device: Any = "cpu"):
    """Boolean (len(rows), sk) tensor: True where query ``r`` sees key ``k`` (None if nothing
    is masked)."""
    import torch

    p = problem
    if not p.masked():
        return None
    rows = rows if rows is not None else range(p.sq)
    r = torch.arange(rows.start, rows.stop, device=device).view(-1, 1)
    k = torch.arange(p.sk, device=device).view(1, -1)
    diag = r + (p.sk - p.sq)
    ok = torch.ones((len(rows), p.sk), dtype=torch.bool, device=device)
    if p.left() is not None:
        ok &= k >= diag - p.left()
    if p.right() is not None:
        ok &= k <= diag + p.right()
    return ok


def _sizes(problem: AttentionProblem) -> tuple[int, int, int, int]:
    """Elements of Q, of K and V together, of O; bytes of the fp32 LSE."""
    p = problem
    q = p.b * p.sq * p.h_q * p.d_qk
    kv = p.b * p.sk * p.h_kv * (p.d_qk + p.d_v)
    o = p.b * p.sq * p.h_q * p.d_v
    return q, kv, o, p.b * p.h_q * p.sq * 4


class AttentionFwdWorkload(Workload):
    """See the module docstring."""

    name: ClassVar[str] = "attention_fwd"
    problem_type: ClassVar[type[Problem]] = AttentionProblem
    description: ClassVar[str] = (
        "softmax(scale Q K^T, causal/window mask bottom-right aligned) V, GQA, BSHD; O and "
        "natural-log LSE"
    )

    def tensor_specs(self, problem: AttentionProblem) -> dict[str, TensorSpec]:
        p = problem
        return {
            "q": TensorSpec((p.b, p.sq, p.h_q, p.d_qk), p.dtype),
            "k": TensorSpec((p.b, p.sk, p.h_kv, p.d_qk), p.dtype),
            "v": TensorSpec((p.b, p.sk, p.h_kv, p.d_v), p.dtype),
            "o": TensorSpec((p.b, p.sq, p.h_q, p.d_v), p.dtype, role="output", init="empty"),
            "lse": TensorSpec((p.b, p.h_q, p.sq), "float32", role="output", init="empty"),
        }

    def prepare_inputs(
        self,
        problem: AttentionProblem,
        specs: Mapping[str, TensorSpec],
        seed: int,
        device: str = "cuda",
    ) -> dict[str, Any]:
        """The workload's five tensors, always in the workload's shapes and drawn the same way
        from ``seed`` (Q, K, V from N(0, 1), outputs zeroed), whatever ``specs`` an
        implementation passes: an implementation that takes other views reshapes these in its
        own ``prepare_inputs``, so every implementation sees the same numbers for one seed.
        Tensors only the implementation names are allocated as its specs say."""
        import torch

        own = self.tensor_specs(problem)
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        out = {n: own[n].allocate(gen, device) for n in (*INPUTS, *OUTPUTS)}
        for n, s in specs.items():
            if n not in out:
                out[n] = s.allocate(gen, device)
        return out

    # -- references ---------------------------------------------------------------------------
    def _attend(self, problem: AttentionProblem, inputs: Mapping[str, Any], lowp: bool):
        import torch

        p = problem
        q, k, v = (inputs[n] for n in INPUTS)
        dev = q.device
        op_dtype = getattr(torch, p.dtype)
        q = q.reshape(p.b, p.sq, p.h_q, p.d_qk)
        k = k.reshape(p.b, p.sk, p.h_kv, p.d_qk)
        v = v.reshape(p.b, p.sk, p.h_kv, p.d_v)
        o = torch.empty((p.b, p.sq, p.h_q, p.d_v), dtype=torch.float32, device=dev)
        lse = torch.empty((p.b, p.h_q, p.sq), dtype=torch.float32, device=dev)
        rows = max(1, min(p.sq, REF_CHUNK_ELEMS // max(1, p.h_q * p.sk)))
        with no_tf32():
            for i in range(p.b):
                kf = k[i].float().repeat_interleave(p.group, dim=1)  # (sk, h_q, d_qk)
                vf = v[i].float().repeat_interleave(p.group, dim=1)  # (sk, h_q, d_v)
                for r0 in range(0, p.sq, rows):
                    r1 = min(p.sq, r0 + rows)
                    qf = q[i, r0:r1].float()  # (n, h_q, d_qk)
                    s = torch.einsum("qhd,khd->hqk", qf, kf) * p.scale()
                    mask = visible_mask(p, range(r0, r1), dev)
                    if mask is not None:
                        s = s.masked_fill(~mask.unsqueeze(0), float("-inf"))
                    m = s.amax(dim=-1, keepdim=True)  # finite: every query sees a key
                    e = torch.exp(s - m)
                    l_sum = e.sum(dim=-1, keepdim=True)
                    if lowp:  # a kernel feeds P@V the unnormalised P in the operand dtype
                        e = e.to(op_dtype).float()
                    o[i, r0:r1] = torch.einsum("hqk,khd->qhd", e / l_sum, vf)
                    lse[i, :, r0:r1] = (m + torch.log(l_sum))[..., 0]
        if lowp:
            o = o.to(op_dtype).float()
        return {"o": o, "lse": lse}

    def reference(self, problem: AttentionProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """float32 math (TF32 off), in chunks of query rows: o (float32, (b, sq, h_q, d_v)),
        lse (natural log, (b, h_q, sq)). Q, K, V may come in any shape of the same
        contiguous memory (an implementation's 5-D view): they are read as BSHD."""
        return self._attend(problem, inputs, lowp=False)

    def reference_lowp(
        self, problem: AttentionProblem, inputs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What a flash kernel must round: S and the softmax statistics in float32, the
        unnormalised P = exp(S - max) rounded to ``dtype`` (the P@V MMA's operand type)
        before P@V, the fp32 row sum of the unrounded P as the divisor, O rounded to
        ``dtype``. lse is the reference's."""
        return self._attend(problem, inputs, lowp=True)

    def tolerance(self, problem: AttentionProblem, output: str):
        """``lse`` (float32) is judged at 1e-4 relative-norm and 1e-3 x max|lse|: kernels
        compute it from fp32 sums of low-precision products with the hardware's exp2/log2
        approximations (the same bound as :mod:`kernelplan.workloads.mla_decode`). ``o``
        follows its dtype and the low-precision baseline."""
        return lse_tolerance() if output == "lse" else None

    # -- roofline -----------------------------------------------------------------------------
    def flops_bytes(self, problem: AttentionProblem) -> tuple[float, float]:
        p = problem
        flops = 2.0 * p.b * p.h_q * p.visible_pairs() * (p.d_qk + p.d_v)
        e, (q, kv, o, lse) = dtypes.nbytes(p.dtype), _sizes(p)
        return flops, float((q + kv + o) * e + lse)

    def compute_dtype(self, problem: AttentionProblem) -> str:
        return problem.dtype

    # -- problems -----------------------------------------------------------------------------
    def check_problems(self) -> list[AttentionProblem]:
        """Small and fast: tile-aligned MHA at D=64 and 128, causal and not; lengths that are
        multiples of no tile (sq != sk); bottom-right causal with sq < sk; GQA 4:1 causal; a
        sliding window; fp16."""
        P = AttentionProblem
        return [
            P(b=2, sq=512, h_q=4, d_qk=64),
            P(b=2, sq=512, h_q=4, d_qk=128, causal=True),
            P(b=2, sq=200, sk=333, h_q=3, d_qk=128),
            P(b=1, sq=300, h_q=4, d_qk=64, causal=True),
            P(b=2, sq=128, sk=384, h_q=4, d_qk=128, causal=True),
            P(b=2, sq=512, h_q=8, h_kv=2, d_qk=128, causal=True),
            P(b=1, sq=512, h_q=4, d_qk=64, causal=True, window_left=128),
            P(b=2, sq=256, h_q=4, d_qk=128, dtype="float16"),
        ]

    def profile_problems(self) -> list[AttentionProblem]:
        """Issue 12 item 4: bf16, D = 64 and 128, S = 1k, 4k, 16k with b * S = 16k tokens
        (b = 16, 4, 1), causal and not; h_q = 32 (the issue's orientation run: B=4, S=4096,
        H=32, D=128)."""
        P = AttentionProblem
        return [
            P(b=16384 // s, sq=s, h_q=32, d_qk=d, causal=c)
            for d in (64, 128)
            for s in (1024, 4096, 16384)
            for c in (False, True)
        ]


ATTENTION_FWD = AttentionFwdWorkload()


# -- backward --------------------------------------------------------------------------------
#: the backward's tensors: inputs (the forward's O and LSE among them), then outputs
BWD_INPUTS = ("q", "k", "v", "o", "lse", "do")
BWD_OUTPUTS = ("dq", "dk", "dv")


class AttentionBwdWorkload(Workload):
    """See the module docstring (backward)."""

    name: ClassVar[str] = "attention_bwd"
    problem_type: ClassVar[type[Problem]] = AttentionProblem
    description: ClassVar[str] = (
        "dQ, dK, dV of softmax(scale Q K^T, mask bottom-right aligned) V from dO, given the "
        "forward's O and LSE; GQA, BSHD"
    )

    def tensor_specs(self, problem: AttentionProblem) -> dict[str, TensorSpec]:
        p = problem
        out = {"role": "output", "init": "empty"}
        return {
            "q": TensorSpec((p.b, p.sq, p.h_q, p.d_qk), p.dtype),
            "k": TensorSpec((p.b, p.sk, p.h_kv, p.d_qk), p.dtype),
            "v": TensorSpec((p.b, p.sk, p.h_kv, p.d_v), p.dtype),
            "o": TensorSpec((p.b, p.sq, p.h_q, p.d_v), p.dtype, init="empty"),
            "lse": TensorSpec((p.b, p.h_q, p.sq), "float32", init="empty"),
            "do": TensorSpec((p.b, p.sq, p.h_q, p.d_v), p.dtype),
            "dq": TensorSpec((p.b, p.sq, p.h_q, p.d_qk), p.dtype, **out),
            "dk": TensorSpec((p.b, p.sk, p.h_kv, p.d_qk), p.dtype, **out),
            "dv": TensorSpec((p.b, p.sk, p.h_kv, p.d_v), p.dtype, **out),
        }

    def prepare_inputs(
        self,
        problem: AttentionProblem,
        specs: Mapping[str, TensorSpec],
        seed: int,
        device: str = "cuda",
    ) -> dict[str, Any]:
        """The workload's tensors in its shapes, whatever ``specs`` an implementation passes
        (it takes views in its own ``prepare_inputs``): Q, K, V, dO from N(0, 1) drawn from
        ``seed``, O and LSE from the forward reference (O rounded to ``dtype``, the LSE in
        fp32), outputs zeroed. Tensors only the implementation names (a workspace) are
        allocated as its specs say."""
        import torch

        own = self.tensor_specs(problem)
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
        out = {n: own[n].allocate(gen, device) for n in (*BWD_INPUTS, *BWD_OUTPUTS)}
        fwd = ATTENTION_FWD.reference(problem, out)
        out["o"].copy_(fwd["o"].to(out["o"].dtype))
        out["lse"].copy_(fwd["lse"])
        for n, s in specs.items():
            if n not in out:
                out[n] = s.allocate(gen, device)
        return out

    # -- references ---------------------------------------------------------------------------
    def _read(self, problem: AttentionProblem, inputs: Mapping[str, Any], names: tuple[str, ...]):
        """``inputs[n]`` in the workload's shape (BSHD; the LSE (b, h_q, sq)): an
        implementation may pass views of the same memory in other shapes."""
        own = self.tensor_specs(problem)
        return tuple(inputs[n].reshape(own[n].shape) for n in names)

    def _grads(self, problem: AttentionProblem, device: Any):
        """fp32 dQ (filled per head chunk), dK and dV (zeroed: summed over each group)."""
        import torch

        own = self.tensor_specs(problem)
        dq = torch.empty(own["dq"].shape, dtype=torch.float32, device=device)
        dk = torch.zeros(own["dk"].shape, dtype=torch.float32, device=device)
        dv = torch.zeros(own["dv"].shape, dtype=torch.float32, device=device)
        return dq, dk, dv

    def _head_chunk(self, problem: AttentionProblem) -> int:
        p = problem
        return max(1, min(p.h_q, REF_CHUNK_ELEMS // max(1, p.sq * p.sk)))

    def reference(self, problem: AttentionProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """torch autograd in float32 (TF32 off) through the forward recomputed from Q, K, V
        (not the given O and LSE), with dO as the output's gradient; one batch and a chunk
        of query heads at a time (memory bound), dK and dV summed over each KV head's group.
        Inputs may come as views of the same memory (an implementation's 5-D views)."""
        import torch

        p = problem
        q, k, v, do = self._read(p, inputs, ("q", "k", "v", "do"))
        dev = q.device
        dq, dk, dv = self._grads(p, dev)
        mask = visible_mask(p, None, dev)
        hc = self._head_chunk(p)
        with no_tf32(), torch.enable_grad():
            for i in range(p.b):
                for j0 in range(0, p.h_q, hc):
                    heads = torch.arange(j0, min(p.h_q, j0 + hc), device=dev)
                    kv = heads // p.group
                    qf = q[i, :, heads].float().requires_grad_(True)  # (sq, hc, d_qk)
                    kf = k[i][:, kv].float().requires_grad_(True)  # (sk, hc, d_qk)
                    vf = v[i][:, kv].float().requires_grad_(True)  # (sk, hc, d_v)
                    s = torch.einsum("qhd,khd->hqk", qf, kf) * p.scale()
                    if mask is not None:
                        s = s.masked_fill(~mask.unsqueeze(0), float("-inf"))
                    o = torch.einsum("hqk,khd->qhd", torch.softmax(s, dim=-1), vf)
                    o.backward(do[i, :, heads].float())
                    dq[i, :, heads] = qf.grad
                    dk[i].index_add_(1, kv, kf.grad)
                    dv[i].index_add_(1, kv, vf.grad)
        return {"dq": dq, "dk": dk, "dv": dv}

    def reference_lowp(
        self, problem: AttentionProblem, inputs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What a flash backward must round: S, P = exp(S - lse) and D = rowsum(dO * O) in
        float32 from the given O and LSE; P and dS rounded to ``dtype`` (the MMAs' operand
        type) before dV = P^T dO, dQ = dS K, dK = dS^T Q; the results rounded to ``dtype``."""
        import torch

        p = problem
        lp = getattr(torch, p.dtype)
        q, k, v, o, do, lse = self._read(p, inputs, ("q", "k", "v", "o", "do", "lse"))
        dev = q.device
        dq, dk, dv = self._grads(p, dev)
        mask = visible_mask(p, None, dev)
        hc = self._head_chunk(p)

        def r(t):
            return t.to(lp).float()

        with no_tf32():
            for i in range(p.b):
                for j0 in range(0, p.h_q, hc):
                    heads = torch.arange(j0, min(p.h_q, j0 + hc), device=dev)
                    kv = heads // p.group
                    qf, dof = q[i, :, heads].float(), do[i, :, heads].float()
                    kf, vf = k[i][:, kv].float(), v[i][:, kv].float()
                    s = torch.einsum("qhd,khd->hqk", qf, kf) * p.scale()
                    pr = torch.exp(s - lse[i, heads].unsqueeze(-1))
                    if mask is not None:
                        pr = pr.masked_fill(~mask.unsqueeze(0), 0.0)
                    dsum = (dof * o[i, :, heads].float()).sum(-1).transpose(0, 1)  # (hc, sq)
                    dp = torch.einsum("qhd,khd->hqk", dof, vf)
                    ds = r(pr * (dp - dsum.unsqueeze(-1)))
                    dv[i].index_add_(1, kv, torch.einsum("hqk,qhd->khd", r(pr), dof))
                    dq[i, :, heads] = torch.einsum("hqk,khd->qhd", ds, kf) * p.scale()
                    dk[i].index_add_(1, kv, torch.einsum("hqk,qhd->khd", ds, qf) * p.scale())
        return {"dq": r(dq), "dk": r(dk), "dv": r(dv)}

    # -- roofline -----------------------------------------------------------------------------
    def flops_bytes(self, problem: AttentionProblem) -> tuple[float, float]:
        p = problem
        flops = 2.0 * p.b * p.h_q * p.visible_pairs() * (3 * p.d_qk + 2 * p.d_v)
        e, (q, kv, o, lse) = dtypes.nbytes(p.dtype), _sizes(p)
        # read Q, K, V, O, dO, LSE; write dQ, dK, dV
        return flops, float((2 * (q + kv) + 2 * o) * e + lse)

    def compute_dtype(self, problem: AttentionProblem) -> str:
        return problem.dtype

    # -- problems -----------------------------------------------------------------------------
    def check_problems(self) -> list[AttentionProblem]:
        """The forward's check problems (the same shapes, masks and GQA)."""
        return ATTENTION_FWD.check_problems()

    def profile_problems(self) -> list[AttentionProblem]:
        """The forward's profile problems (issue 12 item 4: backward at the same settings)."""
        return ATTENTION_FWD.profile_problems()


ATTENTION_BWD = AttentionBwdWorkload()
