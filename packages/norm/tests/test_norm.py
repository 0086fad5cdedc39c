"""cute_norm on the CPU: the rmsnorm workload's reference against a naive per-row float64
loop, FLOPs and bytes, the problems, what each implementation refuses (one line), the torch
peers run on CPU tensors against the reference, quack's absence as one line, and the two
CuTe DSL kernels compiled for their SMs with fake tensors (skipped without the CUTLASS
sources)."""

from __future__ import annotations

import math

import pytest
import torch

from kernelplan import KernelPlanError, ShapeError
from kernelplan.check import compare
from kernelplan.testing import needs_sources
from kernelplan.workloads import get as get_workload
from kernelplan.workloads.rmsnorm import RMSNORM, RMSNormProblem

P = RMSNormProblem


def plan_of(name: str):
    from kernelplan.registry import load_plan_class

    return load_plan_class("norm", name)()


def naive(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """Row by row, element by element, in float64."""
    xd, wd = x.double(), w.double()
    out = torch.empty_like(xd)
    for i in range(xd.shape[0]):
        ss = 0.0
        for v in xd[i].tolist():
            ss += v * v
        r = 1.0 / math.sqrt(ss / xd.shape[1] + eps)
        out[i] = xd[i] * r * wd
    return out


def cpu_inputs(problem, seed=0, plan=None):
    specs = (plan or RMSNORM).tensor_specs(problem)
    return RMSNORM.prepare_inputs(problem, specs, seed, device="cpu")


def test_registered():
    from cute_norm import KERNELS

    assert set(KERNELS) == {
        "rmsnorm",
        "hopper_cta_norm",
        "quack_rmsnorm",
        "torch_rms_norm",
        "torch_eager",
    }
    for n in KERNELS:
        assert plan_of(n).workload is RMSNORM
    assert get_workload("rmsnorm") is RMSNORM


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_reference_matches_naive(dtype, eps):
    p = P(5, 40, dtype=dtype, eps=eps)
    t = cpu_inputs(p)
    ref = RMSNORM.reference(p, t)["y"]
    want = naive(t["x"], t["w"], eps)
    assert ref.dtype == torch.float32 and ref.shape == (5, 40)
    assert torch.allclose(ref.double(), want, rtol=2e-6, atol=1e-6)
    # the low-precision baseline is the same numbers rounded once to dtype
    lowp = RMSNORM.reference_lowp(p, t)["y"]
    assert torch.equal(lowp, ref.to(getattr(torch, dtype)).float())


def test_reference_catches_a_wrong_eps_and_weight():
    p = P(4, 64, eps=1e-2)
    t = cpu_inputs(p)
    ref = RMSNORM.reference(p, t)["y"]
    assert not compare("y", naive(t["x"], t["w"], 1e-6).float(), ref).passed
    assert not compare("y", naive(t["x"], torch.ones_like(t["w"]), 1e-2).float(), ref).passed


def test_flops_bytes():
    p = P(4096, 8192)
    flops, nbytes = RMSNORM.flops_bytes(p)
    assert flops == 4 * 4096 * 8192
    assert nbytes == (2 * 4096 * 8192 + 8192) * 2
    assert RMSNORM.compute_dtype(p) == "float32"


def test_problems():
    prof = RMSNORM.profile_problems()
    assert {(p.m, p.n, p.dtype) for p in prof} == {
        (m, n, "bfloat16") for m in (4096, 32768) for n in (4096, 8192)
    }
    checks = RMSNORM.check_problems()
    assert all(p.m * p.n <= 4 << 20 for p in checks)  # small
    assert {p.dtype for p in checks} == {"bfloat16", "float16"}
    assert any(p.n > 16384 for p in checks)  # the cluster reduction
    assert any(p.n % 1024 for p in checks)  # a partial column tile


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(m=0), "--m must be a positive integer"),
        (dict(n=-4), "--n must be a positive integer"),
        (dict(dtype="float32"), "--dtype float32: one of bfloat16, float16"),
        (dict(eps=0.0), "--eps must be a positive finite number"),
        (dict(eps=float("nan")), "--eps must be a positive finite number"),
    ],
)
def test_problem_refusals_one_line(kw, needle):
    with pytest.raises(ShapeError) as e:
        P(**kw)
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "kernel, kw, needle",
    [
        ("rmsnorm", dict(n=4100), "multiple of 8"),
        ("rmsnorm", dict(n=4097), "multiple of 8"),
        ("hopper_cta_norm", dict(n=1001), "multiple of 8"),
    ],
)
def test_odd_n_refused_one_line(kernel, kw, needle):
    with pytest.raises(ShapeError) as e:
        plan_of(kernel).problem(**kw)
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


@pytest.mark.parametrize("value", ["1000", "0", "2048", "-32"])
def test_cta_norm_block_size_refused_one_line(value):
    plan = plan_of("hopper_cta_norm")
    p = plan.problem(m=8, n=4096)
    with pytest.raises(ShapeError) as e:
        plan.config(p, {"threads_per_cta": value})
    msg = str(e.value)
    assert "multiple of 32 threads, at most 1024" in msg and "\n" not in msg


def test_cta_norm_heuristic_block():
    from cute_norm.hopper_cta_norm.hopper_cta_norm import heuristic_threads

    # the example's heuristic (cta_norm.py L89-L96), worked by hand
    assert heuristic_threads(4096) == 128  # 16 warp tiles / 4 = 4 warps
    assert heuristic_threads(8192) == 256
    assert heuristic_threads(1000) == 64  # 4 tiles -> 1 warp -> rounded up to 2
    assert heuristic_threads(32768) == 1024
    plan = plan_of("hopper_cta_norm")
    big = plan.problem(m=8, n=65536)  # the problem is taken; the default block is not
    with pytest.raises(ShapeError, match="2048 threads per CTA"):
        plan.config(big)
    assert plan.config(big, {"threads_per_cta": "1024"}).threads_per_cta == 1024
    assert all(q.n <= 32768 for q in plan.check_problems())


@pytest.mark.parametrize("kernel", ["torch_rms_norm", "torch_eager"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_torch_peers_on_cpu(kernel, dtype):
    plan = plan_of(kernel)
    p = plan.problem(m=33, n=1000, dtype=dtype, eps=1e-5)
    t = cpu_inputs(p, seed=3)
    ref = RMSNORM.reference(p, t)["y"]
    poisoned = t["y"].fill_(float("nan"))
    plan.plan(p, plan.default_config(p), None).bind(t)()
    assert t["y"] is not poisoned and t["y"].dtype == getattr(torch, dtype)
    res = compare("y", t["y"], ref, baseline=RMSNORM.reference_lowp(p, t)["y"])
    assert res.passed, res.line()


def test_quack_absent_is_one_line():
    pytest.importorskip("torch")
    try:
        import quack  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("quack-kernels is installed here")
    plan = plan_of("quack_rmsnorm")
    p = plan.problem(m=8, n=64)
    with pytest.raises(KernelPlanError) as e:
        plan.plan(p, plan.default_config(p), None)
    msg = str(e.value)
    assert "quack-kernels" in msg and "pip install" in msg and "\n" not in msg


def test_rmsnorm_compile_key_leaves_out_m_and_eps():
    plan = plan_of("rmsnorm")
    assert set(plan.runtime_problem_fields) == {"m", "eps"}
    a, b = plan.problem(m=8, n=4096), plan.problem(m=4000, n=4096, eps=1e-3)
    sig = {n: s.signature() for n, s in plan.tensor_specs(a).items()}
    assert sig == {n: s.signature() for n, s in plan.tensor_specs(b).items()}


@needs_sources
@pytest.mark.parametrize(
    "arch, n, cluster",
    [("sm_90a", 4096, 1), ("sm_90a", 32768, 2), ("sm_80", 32768, 1)],
)
def test_rmsnorm_compiles_statically(arch, n, cluster):
    plan = plan_of("rmsnorm")
    p = plan.problem(m=64, n=n)
    target = plan.target(arch)
    st = plan.run_static(p, plan.default_config(p), target, use_cache=False)
    assert st["arch"] == arch and st["registers"] > 0
    assert st["meta"]["cluster_n"] == cluster
    cats = st.get("categories") or {}
    assert cats.get("mma", 0) == 0 and cats.get("tmem", 0) == 0  # no tensor-core code
    assert (cats.get("mbarrier", 0) > 0) == (cluster > 1)  # the cluster reduction's mbarrier


@needs_sources
def test_cta_norm_compiles_statically():
    plan = plan_of("hopper_cta_norm")
    p = plan.problem(m=64, n=4096)
    st = plan.run_static(p, plan.default_config(p), use_cache=False)
    assert st["arch"] == "sm_90a" and st["registers"] > 0
    assert st["meta"]["threads_per_cta"] == 128
