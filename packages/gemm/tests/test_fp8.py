"""The fp8 implementations of the GEMM workload on the CPU: the workload's fp8 rows, the
reference and low-precision baseline on fp8 inputs against a naive loop, what the CUTLASS
Hopper fp8 2xAcc GEMM and the ``torch._scaled_mm`` peer refuse (one line each), the scales
the CuTe kernel is given, and its sm_90a compile with fake tensors (skipped without the
CUTLASS sources)."""

from __future__ import annotations

import pytest
import torch

from kernelplan import ShapeError
from kernelplan.registry import load_plan_class
from kernelplan.testing import needs_sources
from kernelplan.workloads.gemm import FP8, GEMM, GemmProblem

FP8_KERNELS = ("hopper_dense_gemm_fp8_2xacc", "torch_scaled_mm")


def _plan(name):
    return load_plan_class("gemm", name)()


def test_workload_has_fp8_rows_and_the_old_rows_first():
    checks = GEMM.check_problems()
    assert [p.dtype for p in checks[:4]] == ["float16"] * 4  # unchanged, in front
    fp8 = [p for p in checks if p.dtype == FP8]
    assert len(fp8) == 4 and {p.c_dtype for p in fp8} == {"float16", "bfloat16"}
    assert any(p.l > 1 for p in fp8) and any(p.m % 64 for p in fp8)
    prof = [p for p in GEMM.profile_problems() if p.dtype == FP8]
    assert {(p.m, p.c_dtype) for p in prof} == {(4096, "bfloat16"), (8192, "bfloat16")}


@pytest.mark.parametrize(
    "name", ["hopper_dense_gemm", "hopper_dense_gemm_persistent", "torch_matmul", "dense_gemm"]
)
def test_other_implementations_skip_the_fp8_rows(name):
    plan = _plan(name)
    assert all(p.dtype != FP8 for p in plan.check_problems())
    assert all(p.dtype != FP8 for p in plan.profile_problems())


def test_fp8_implementations_take_only_fp8_rows():
    cute, peer = (_plan(n) for n in FP8_KERNELS)
    assert [p.label() for p in cute.check_problems()] == [
        p.label() for p in GEMM.check_problems() if p.dtype == FP8
    ]
    # the peer is 2-D: the batched row is skipped
    assert all(p.l == 1 and p.dtype == FP8 for p in peer.check_problems())
    assert len(peer.check_problems()) == 3


def test_fp8_reference_and_baseline_against_naive():
    p = GemmProblem(3, 5, 32, dtype=FP8, c_dtype="bfloat16")
    specs = GEMM.tensor_specs(p)
    t = GEMM.prepare_inputs(p, specs, seed=1, device="cpu")
    a, b = t["a"].double(), t["b"].double()
    naive = torch.zeros(1, 3, 5, dtype=torch.float64)
    for i in range(3):
        for j in range(5):
            naive[0, i, j] = sum(a[0, i, k] * b[0, j, k] for k in range(32))
    ref = GEMM.reference(p, t)["c"]
    assert torch.allclose(ref.double(), naive, rtol=1e-6, atol=1e-5)
    lowp = GEMM.reference_lowp(p, t)["c"]
    assert torch.equal(lowp, ref.to(torch.bfloat16).float())


@pytest.mark.parametrize(
    "kernel, kw, needle",
    [
        ("hopper_dense_gemm_fp8_2xacc", dict(dtype="float16"), "takes float8_e4m3fn"),
        ("hopper_dense_gemm_fp8_2xacc", dict(dtype=FP8, c_dtype="float16", k=1000), "16 bytes"),
        ("torch_scaled_mm", dict(dtype=FP8, c_dtype="bfloat16", l=2), "--l must be 1"),
        ("torch_scaled_mm", dict(dtype=FP8, c_dtype="bfloat16", n=1112), "multiple of 16"),
        ("torch_scaled_mm", dict(dtype=FP8, c_dtype=FP8), "writes C as"),
        ("torch_scaled_mm", dict(dtype="bfloat16"), "takes float8_e4m3fn"),
    ],
)
def test_refusals_one_line(kernel, kw, needle):
    with pytest.raises(ShapeError) as e:
        _plan(kernel).problem(**kw)
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


@pytest.mark.parametrize(
    "items, needle",
    [
        ({"mma_promotion_interval": "6"}, "a positive multiple of 4"),
        ({"mma_promotion_interval": "0"}, "a positive multiple of 4"),
        ({"tile_mn": "96,128"}, "tile_mn 96x128 unsupported"),
        ({"cluster_mn": "4,2"}, "at most 4 CTAs"),
    ],
)
def test_fp8_config_refusals_one_line(items, needle):
    plan = _plan("hopper_dense_gemm_fp8_2xacc")
    p = plan.default_problem()
    with pytest.raises(ShapeError) as e:
        plan.config(p, items)
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


def test_fp8_defaults_and_scales():
    plan = _plan("hopper_dense_gemm_fp8_2xacc")
    p = plan.default_problem()
    assert (p.m, p.n, p.k, p.dtype, p.c_dtype) == (4096, 4096, 4096, FP8, "float16")
    cfg = plan.default_config(p)
    assert cfg.tile_mn == (128, 128) and cfg.cluster_mn == (1, 2)
    assert cfg.mma_promotion_interval == 4
    small = plan.problem(m=64, n=64, k=64, dtype=FP8, c_dtype="float16")
    t = plan.prepare_inputs(small, seed=0, device="cpu")
    assert float(t["scale_a"]) * float(t["scale_b"]) == 1.0  # D = A B^T exactly
    assert float(t["scale_a"]) != 1.0  # a dropped scale would show
    assert set(plan.output_names(small)) == {"c"}


@needs_sources
def test_fp8_2xacc_compiles_for_sm90a():
    plan = _plan("hopper_dense_gemm_fp8_2xacc")
    p = plan.check_problems()[0]
    st = plan.run_static(p, plan.default_config(p), use_cache=False)
    assert st["arch"] == "sm_90a" and st["registers"] > 0
    cats = st.get("categories") or {}
    assert cats.get("mma", 0) > 0 and cats.get("tma", 0) > 0  # HGMMA and TMA
    assert st["max_active_clusters"] == 132 // 2
