import math

import pytest
import torch

from kernelplan.check import TOLERANCES, compare, poison, tolerance_for
from kernelplan.errors import KernelPlanError


def _gemm(seed=0, dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(64, 96, generator=g).to(dtype)
    b = torch.randn(80, 96, generator=g).to(dtype)
    ref = a.float() @ b.float().T
    return ref, ref.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_correct_low_precision_result_passes(dtype):
    ref, out = _gemm(dtype=dtype)
    r = compare("c", out, ref)
    assert r.passed, r.line()
    assert 0 < r.rel_norm < TOLERANCES[str(dtype).removeprefix("torch.")].rel_norm


def test_wrong_result_fails_on_max_abs():
    ref, out = _gemm()
    out[10, 7] += 0.05 * ref.abs().max().to(out.dtype)  # one wrong element
    r = compare("c", out, ref)
    assert not r.passed
    assert "max_abs" in r.reason and r.worst_index == [10, 7]


def test_wrong_tile_fails_on_rel_norm():
    ref, out = _gemm()
    out[:32, :32] = 0  # a tile never written
    r = compare("c", out, ref)
    assert not r.passed and "rel_norm" in r.reason


def test_nan_fails_even_when_everything_else_is_close():
    ref, out = _gemm()
    out[3, 3] = float("nan")
    r = compare("c", out, ref)
    assert not r.passed
    assert r.nonfinite == 1 and "NaN" in r.reason


def test_poison_catches_an_unwritten_output():
    ref, out = _gemm()
    poison(out)  # the "kernel" wrote nothing
    r = compare("c", out, ref)
    assert not r.passed and r.nonfinite == out.numel()


def test_poison_integer_and_fp8():
    t = torch.zeros(4, dtype=torch.int32)
    poison(t)
    assert (t == torch.iinfo(torch.int32).min).all()
    f8 = torch.zeros(4, dtype=torch.float8_e4m3fn)
    poison(f8)
    assert torch.isnan(f8.float()).all()


def test_shape_mismatch_and_unknown_dtype_are_clear_errors():
    with pytest.raises(KernelPlanError, match="shape"):
        compare("c", torch.zeros(2, 3), torch.zeros(3, 2))
    with pytest.raises(KernelPlanError, match="TOLERANCES"):
        tolerance_for(torch.complex64)


def test_tolerances_follow_unit_roundoff():
    # each bound must admit one rounding of the exact result (u) and be below 1.
    for name, u in (("float16", 2**-11), ("bfloat16", 2**-8), ("float8_e4m3fn", 2**-4)):
        tol = TOLERANCES[name]
        assert u < tol.max_abs_rel < 1 and u < tol.rel_norm < 1
        assert math.isclose(tol.max_abs_rel / tol.rel_norm, 2.0)


# -- the low-precision baseline rule (kernelplan.check.compare(..., baseline=...)) ---------
def _fp8_gemm_gelu(seed=0, m=128, n=96, k=2048):
    """An fp8-input GEMM with a GELU epilogue and fp16 output, on the CPU: the exact result
    (float64 accumulate, erf GELU), the plain PyTorch program's (fp8 upcast to bf16, bf16
    matmul, tanh GELU in bf16, then fp16: the baseline), and a correct kernel's (fp32
    accumulate, fp32 GELU, one rounding to fp16)."""
    gelu = torch.nn.functional.gelu
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, generator=g).to(torch.float8_e4m3fn)
    acc = a.double() @ b.double().T
    ref = gelu(acc)
    lowp = gelu(a.to(torch.bfloat16) @ b.to(torch.bfloat16).T, approximate="tanh")
    kernel = gelu(acc.float()).to(torch.float16)
    return ref, lowp.to(torch.float16), kernel


def test_lowp_baseline_widens_the_bound_to_twice_pytorchs_error_and_no_more():
    from kernelplan.check import LOWP_FACTOR

    ref, lowp, kernel = _fp8_gemm_gelu()
    r = compare("c", kernel, ref, baseline=lowp)
    assert r.passed, r.line()
    # the plain PyTorch program's own error exceeds half the fp16 bound: the bound widens
    base = compare("c", lowp, ref)
    assert LOWP_FACTOR * base.rel_norm > TOLERANCES["float16"].rel_norm
    assert r.tolerance["rel_norm"] == pytest.approx(LOWP_FACTOR * base.rel_norm)
    assert "low-precision PyTorch baseline" in r.tolerance["basis"]
    # an error 1.5x PyTorch's passes with the baseline though fp16's own bound refuses it...
    err = ref + 1.5 * (lowp.double() - ref)
    assert not compare("c", err.to(torch.float16), ref).passed
    assert compare("c", err.to(torch.float16), ref, baseline=lowp).passed
    # ...and 2.5x PyTorch's fails: as wrong as PyTorch with margin, no more
    worse = (ref + 2.5 * (lowp.double() - ref)).to(torch.float16)
    assert not compare("c", worse, ref, baseline=lowp).passed


def test_lowp_baseline_still_fails_a_wrong_result_and_prints_the_product():
    ref, lowp, kernel = _fp8_gemm_gelu(seed=1)
    wrong = kernel.clone()
    wrong[5, 7] += 0.05 * float(ref.abs().max())  # one wrong element
    r = compare("c", wrong, ref, baseline=lowp)
    assert not r.passed and r.worst_index == [5, 7] and "max_abs" in r.reason
    line = r.line()
    assert line.startswith("FAIL c [float16]") and "\n" not in line
    tol, ref_max = r.tolerance["max_abs_rel"], r.ref_max_abs
    # the applied bound is shown as the product it is: value = factor*max|ref| max|ref|
    assert f"max_abs {tol * ref_max:.3e} = {tol:.1e}*max|ref| {ref_max:.3e}" in line
    assert f"tol rel_norm {r.tolerance['rel_norm']:.1e}" in line
    skipped = kernel.clone()
    skipped[:32, :32] = 0  # a tile never written: rel_norm, far beyond the widened bound
    assert not compare("c", skipped, ref, baseline=lowp).passed
    with pytest.raises(KernelPlanError, match="baseline shape"):
        compare("c", kernel, ref, baseline=lowp[:4])
