"""The attention_bwd peers on the CPU: SDPA's math backward against the workload's reference
(GQA, bottom-right causal, a window, d_v != d_qk), the timed launch being the backward only,
planted faults failing the check, and one-line refusals of the GPU-only backward peers (the
flash, cuDNN and memory-efficient SDPA backends; flash-attn-4: its SMs, its window on sm_90)."""

from __future__ import annotations

import pytest
import torch

from kernelplan import KernelPlanError, NoConfig, ShapeError, Target
from kernelplan.check import compare
from kernelplan.workloads.attention import ATTENTION_BWD, AttentionProblem

P = AttentionProblem
BWD = ("sdpa_flash_bwd", "sdpa_cudnn_bwd", "sdpa_efficient_bwd", "sdpa_math_bwd", "flash_attn4_bwd")
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is visible")


def plan_of(name: str):
    from kernelplan.registry import load_plan_class

    return load_plan_class("fmha", name)()


def test_registered_as_backward():
    from cute_fmha import KERNELS

    for n in BWD:
        assert n in KERNELS and plan_of(n).workload is ATTENTION_BWD


CASES = [
    dict(b=2, sq=33, h_q=4, d_qk=16),
    dict(b=1, sq=8, sk=20, h_q=4, h_kv=2, d_qk=16, causal=True),  # GQA, bottom-right
    dict(b=1, sq=24, h_q=2, d_qk=16, causal=True, window_left=5),
    dict(b=1, sq=16, sk=20, h_q=3, h_kv=1, d_qk=16, d_v=8),  # MQA, d_v != d_qk
]


@pytest.mark.parametrize("kw", CASES)
def test_sdpa_math_bwd_on_cpu_matches_the_workload(kw):
    plan = plan_of("sdpa_math_bwd")
    p = plan.problem(P(dtype="float32", **kw))
    x = plan.prepare_inputs(p, seed=3, device="cpu")
    plan.plan(p, plan.default_config(p), None).bind(x)()
    ref = plan.reference(p, x)
    for n in ("dq", "dk", "dv"):
        assert x[n].shape == ref[n].shape
        r = compare(n, x[n], ref[n], ATTENTION_BWD.tolerance(p, n))
        assert r.passed, r.line()


def test_the_timed_launch_is_the_backward_only(monkeypatch):
    """The forward runs once at bind (setup); each launch runs no forward and gives the same
    grads (the graph is retained)."""
    import torch.nn.functional as F

    calls = []
    real = F.scaled_dot_product_attention

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counted)
    plan = plan_of("sdpa_math_bwd")
    p = plan.problem(P(b=1, sq=16, h_q=2, d_qk=16, causal=True, dtype="float32"))
    x = plan.prepare_inputs(p, seed=0, device="cpu")
    launch = plan.plan(p, NoConfig(), None).bind(x)
    assert len(calls) == 1
    launch()
    first = x["dq"].clone()
    launch()
    assert len(calls) == 1 and torch.equal(first, x["dq"])


class _CpuMathBwd:
    """sdpa_math_bwd with its inputs on the CPU (run_check draws them on "cuda")."""

    def __new__(cls):
        base = type(plan_of("sdpa_math_bwd"))

        class CpuMathBwd(base):
            def prepare_inputs(self, problem, seed, device="cuda"):
                return super().prepare_inputs(problem, seed, device="cpu")

        return CpuMathBwd()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_planted_faults_fail_the_backward_check(monkeypatch, dtype):
    """Through KernelPlan.run_check: the math backward passes; ``perturb`` (dq moved by 4x
    its tolerance) and ``skip-launch`` (outputs left poisoned) must fail."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    plan = _CpuMathBwd()
    p = plan.problem(P(b=1, sq=64, sk=80, h_q=4, h_kv=2, d_qk=32, causal=True, dtype=dtype))
    target = Target.resolve("sm_90a")
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1)
    assert ok, [r.line() for r in res]
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1, fault="perturb")
    assert not ok and [r.name for r in res if not r.passed] == ["dq"]
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1, fault="skip-launch")
    assert not ok and not any(r.passed for r in res)


@no_gpu
@pytest.mark.parametrize("kernel", [k for k in BWD if k != "sdpa_math_bwd"])
def test_gpu_only_backward_refuses_on_a_cpu_host(kernel):
    plan = plan_of(kernel)
    p = plan.problem(P(b=1, sq=64, h_q=2, d_qk=64))
    with pytest.raises(KernelPlanError) as e:
        plan.plan(p, plan.default_config(p), None)
    assert "needs a CUDA GPU" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "sm, kw, needle",
    [
        ("sm_80", dict(), "runs on sm_90, sm_100 and sm_110 only"),
        ("sm_120a", dict(), "this target is sm_120a"),
        ("sm_90a", dict(causal=True, window_left=64), "sm_90 backward takes no sliding window"),
    ],
)
def test_flash_attn4_bwd_refuses_sms_and_windows(monkeypatch, sm, kw, needle):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    plan = plan_of("flash_attn4_bwd")
    p = plan.problem(P(b=1, sq=256, h_q=2, d_qk=64, **kw))
    with pytest.raises(ShapeError) as e:
        plan.plan(p, NoConfig(), Target.resolve(sm))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_flash_attn4_bwd_dtype_and_missing_are_one_line(monkeypatch):
    plan = plan_of("flash_attn4_bwd")
    with pytest.raises(ShapeError) as e:
        plan.problem(P(dtype="float32"))
    assert "takes dtype" in str(e.value)
    try:
        import flash_attn.cute  # noqa: F401
    except ImportError:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        p = plan.problem(P(b=1, sq=64, h_q=2, d_qk=64))
        with pytest.raises(KernelPlanError) as e:
            plan.plan(p, NoConfig(), Target.resolve("sm_90a"))
        assert "flash-attn-4 is not installed" in str(e.value) and "\n" not in str(e.value)
