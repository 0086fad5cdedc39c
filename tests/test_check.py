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
