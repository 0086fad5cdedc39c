"""What the attention-like workloads (:mod:`.attention`, :mod:`.mla_decode`) share: the
problem checks for integer fields and the softmax scale, fields derived again by
``replace``, the fp32 references' TF32 switch, and the LSE's tolerance."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

from ..workload import Problem, ShapeError


def check_integer(problem: Problem, key: str, lo: int) -> int:
    """``problem.<key>``, refused (one line naming ``--key``) unless an integer >= ``lo``."""
    v = getattr(problem, key)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        what = "a positive integer" if lo == 1 else f"an integer >= {lo}"
        raise ShapeError(f"--{key} must be {what} (got {v!r})")
    return v


def resolve_softmax_scale(problem: Problem, d_qk: int, auto: set[str]) -> None:
    """``softmax_scale``: None becomes ``d_qk ** -0.5`` (and is named in ``auto``); the
    value must be a positive finite number, stored as float. Call it from ``validate``."""
    if problem.softmax_scale is None:
        object.__setattr__(problem, "softmax_scale", float(d_qk) ** -0.5)
        auto.add("softmax_scale")
    sc = problem.softmax_scale
    if isinstance(sc, bool) or not isinstance(sc, (int, float)) or not 0 < sc < math.inf:
        raise ShapeError(f"--softmax_scale must be a positive number (got {sc!r})")
    object.__setattr__(problem, "softmax_scale", float(sc))


class Rederived(Problem):
    """A problem whose ``validate`` fills some None fields and names them in ``_auto``
    (a frozenset): :meth:`replace` derives those again unless they are given."""

    def replace(self, **changes: Any):
        """A copy with ``changes``; fields that were derived are derived again unless given."""
        derived = {k: None for k in getattr(self, "_auto", ())}
        return dataclasses.replace(self, **{**derived, **changes})


@contextlib.contextmanager
def no_tf32():
    """fp32 matmuls in fp32 (TF32 would round the operands to 10-bit mantissas)."""
    import torch

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def lse_tolerance(note: str = ""):
    """The fp32 LSE's bound: 1e-4 relative-norm and 1e-3 x max|lse| (kernels compute it from
    fp32 sums of low-precision products with the hardware's exp2/log2 approximations);
    ``note`` is added to the basis."""
    from ..check import Tolerance

    return Tolerance(
        rel_norm=1e-4,
        max_abs_rel=1e-3,
        basis="fp32 LSE from fp32 sums with exp2/log2 approximations" + note,
    )
