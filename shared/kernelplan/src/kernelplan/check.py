"""Correctness: one tolerance table per output dtype, output poisoning, and the comparison.

A run passes when the output holds no NaN/Inf where the reference is finite, its
relative-norm error ``||out - ref||_2 / ||ref||_2`` is at most ``rel_norm``, and its largest
absolute error is at most ``max_abs_rel * max|ref|``. The bounds follow the output dtype's unit
roundoff ``u`` (fp16 2^-11, bf16 2^-8, fp8 e4m3 2^-4, tf32 2^-11): rounding the exact result
once costs at most ``u`` relative per element, so a correct kernel sits well under ``4u``
element-wise, while a wrong tile or a skipped K-block moves either bound by orders of magnitude.

Low-precision inputs (fp8, int4) and epilogues (GELU, scaling) bring errors the output dtype
alone does not predict. Where the workload gives a *baseline* (the same computation as a plain
PyTorch program does it from the same low-precision inputs,
:meth:`kernelplan.workload.Workload.reference_lowp`), the bounds are widened to
``LOWP_FACTOR`` times the baseline's own error against the exact reference when that is
larger: a kernel may be as wrong as PyTorch, with margin, and no more (the rule
flash-attention's CuTe DSL tests apply: ``tests/cute/test_flash_attn.py`` compares
``(out - ref)`` with ``2 * (out_pt - ref)``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .errors import KernelPlanError


@dataclass(frozen=True)
class Tolerance:
    rel_norm: float
    max_abs_rel: float
    basis: str


#: Per output dtype (torch spelling). ``u`` is the unit roundoff of the output format.
TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(rel_norm=1e-5, max_abs_rel=1e-4, basis="fp32 accumulate-order drift"),
    "tfloat32": Tolerance(rel_norm=2e-3, max_abs_rel=4e-3, basis="u = 2^-11 (10-bit mantissa)"),
    "float16": Tolerance(rel_norm=2e-3, max_abs_rel=4e-3, basis="u = 2^-11, bounds ~4u and ~8u"),
    "bfloat16": Tolerance(rel_norm=1.6e-2, max_abs_rel=3.2e-2, basis="u = 2^-8, bounds ~4u, 8u"),
    "float8_e4m3fn": Tolerance(rel_norm=1.25e-1, max_abs_rel=2.5e-1, basis="u = 2^-4"),
    "float8_e5m2": Tolerance(rel_norm=2.5e-1, max_abs_rel=5e-1, basis="u = 2^-3"),
}


def dtype_name(dtype: Any) -> str:
    """``torch.float16`` -> ``"float16"``; strings pass through."""
    return str(dtype).removeprefix("torch.")


def tolerance_for(dtype: Any) -> Tolerance:
    """The table row for an output dtype.

    Raises:
        KernelPlanError: no row for this dtype (add one to ``TOLERANCES`` with its basis).
    """
    name = dtype_name(dtype)
    try:
        return TOLERANCES[name]
    except KeyError:
        raise KernelPlanError(
            f"no tolerance for output dtype {name}: add a row to kernelplan.check.TOLERANCES"
        ) from None


def poison(t) -> None:
    """Fill an output tensor with a value a correct kernel never leaves behind.

    Floating outputs get NaN (any element the kernel forgets stays NaN and fails the check);
    integer outputs get their dtype's minimum.
    """
    import torch

    if t.is_floating_point():
        if t.element_size() == 1:  # fp8: view as bytes, 0x7F is NaN in e4m3 and e5m2
            t.view(torch.uint8).fill_(0x7F)
        else:
            t.fill_(float("nan"))
    else:
        t.fill_(torch.iinfo(t.dtype).min)


@dataclass
class CheckResult:
    """Outcome of comparing one output tensor against its reference.

    ``max_abs`` is in the output's units; ``rel_norm`` and ``max_abs_rel`` are ratios;
    ``nonfinite`` counts NaN/Inf elements of the output where the reference is finite.
    """

    name: str
    dtype: str
    passed: bool
    max_abs: float
    rel_norm: float
    ref_max_abs: float
    nonfinite: int
    tolerance: dict[str, Any]
    worst_index: list[int] | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        status = "PASS" if self.passed else "FAIL"
        tail = f"  ({self.reason})" if self.reason else ""
        return (
            f"{status} {self.name} [{self.dtype}] max_abs={self.max_abs:.3e} "
            f"rel_norm={self.rel_norm:.3e} (tol rel_norm {self.tolerance['rel_norm']:.1e}, "
            f"max_abs {self.tolerance['max_abs_rel'] * self.ref_max_abs:.3e} = "
            f"{self.tolerance['max_abs_rel']:.1e}*max|ref| {self.ref_max_abs:.3e}){tail}"
        )


#: How many times the low-precision baseline's error a kernel may make (see the module text).
LOWP_FACTOR = 2.0


def _errors(out, ref) -> tuple[float, float]:
    """(max_abs, rel_norm) of ``out`` against ``ref`` where ``ref`` is finite."""
    import torch

    o = out.detach().to(torch.float64)
    r = ref.detach().to(device=o.device, dtype=torch.float64)
    fin = torch.isfinite(r)
    d = torch.nan_to_num(torch.where(fin, (o - r).abs(), 0), nan=float("inf"))
    rn = float(torch.linalg.vector_norm(torch.where(fin, r, 0)).item())
    dn = float(torch.linalg.vector_norm(d).item())
    return (float(d.max().item()) if d.numel() else 0.0), (dn / rn if rn > 0 else dn)


def compare(name: str, out, ref, tol: Tolerance | None = None, baseline=None) -> CheckResult:
    """Compare ``out`` (the kernel's output, any float dtype) with ``ref`` (float32 or better).

    Shapes must match. Both are moved to float64 on their device for the statistics. With a
    ``baseline`` (the low-precision PyTorch result, same shape) the bounds become the larger
    of the dtype's and ``LOWP_FACTOR`` times the baseline's error; the tolerance recorded
    says which applied.

    Raises:
        KernelPlanError: the shapes differ.
    """
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        raise KernelPlanError(
            f"{name}: output shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
        )
    tol = tol or tolerance_for(out.dtype)
    if baseline is not None:
        if tuple(baseline.shape) != tuple(ref.shape):
            raise KernelPlanError(
                f"{name}: baseline shape {tuple(baseline.shape)} != reference {tuple(ref.shape)}"
            )
        b_abs, b_rel = _errors(baseline, ref)
        r_max = float(ref.detach().double().nan_to_num(0).abs().max().item()) or 1.0
        wide_rel = LOWP_FACTOR * b_rel
        wide_abs = LOWP_FACTOR * b_abs / r_max
        if wide_rel > tol.rel_norm or wide_abs > tol.max_abs_rel:
            tol = Tolerance(
                rel_norm=max(tol.rel_norm, wide_rel),
                max_abs_rel=max(tol.max_abs_rel, wide_abs),
                basis=f"{LOWP_FACTOR:g}x the low-precision PyTorch baseline's error "
                f"(rel_norm {b_rel:.2e}, max_abs {b_abs:.2e}); dtype bound: {tol.basis}",
            )
    o = out.detach().to(torch.float64)
    r = ref.detach().to(device=o.device, dtype=torch.float64)
    ref_finite = torch.isfinite(r)
    # where the reference is +-inf (a log-sum-exp over no key) the output must be the same
    # infinity; where it is NaN nothing is compared
    ref_inf = torch.isinf(r)
    nonfinite = int((~torch.isfinite(o) & ref_finite).sum().item()) + int(
        (ref_inf & (o != r)).sum().item()
    )
    diff = (o - r).abs()
    diff = torch.where(ref_finite, diff, torch.zeros_like(diff))
    diff_clean = torch.nan_to_num(diff, nan=float("inf"))
    max_abs = float(diff_clean.max().item()) if diff.numel() else 0.0
    ref_max = float(r[ref_finite].abs().max().item()) if ref_finite.any() else 0.0
    rnorm = float(torch.linalg.vector_norm(torch.where(ref_finite, r, 0)).item())
    dnorm = float(torch.linalg.vector_norm(diff_clean).item())
    rel = dnorm / rnorm if rnorm > 0 else (0.0 if dnorm == 0 else float("inf"))
    worst = None
    if diff.numel():
        flat = int(diff_clean.argmax().item())
        worst = [int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)]
    reasons = []
    if nonfinite:
        reasons.append(
            f"{nonfinite} element(s) NaN/Inf where the reference is finite, or not the "
            f"reference's infinity (first worst at {worst})"
        )
    if rel > tol.rel_norm:
        reasons.append(f"rel_norm {rel:.3e} > {tol.rel_norm:.1e}")
    if max_abs > tol.max_abs_rel * ref_max:
        reasons.append(f"max_abs {max_abs:.3e} > {tol.max_abs_rel:.1e}*max|ref| at {worst}")
    return CheckResult(
        name=name,
        dtype=dtype_name(out.dtype),
        passed=not reasons,
        max_abs=max_abs,
        rel_norm=rel,
        ref_max_abs=ref_max,
        nonfinite=nonfinite,
        tolerance=asdict(tol),
        worst_index=worst,
        reason="; ".join(reasons),
    )
