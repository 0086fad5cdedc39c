"""cute_fmha on the CPU: registration, what each implementation refuses (one line), the Hopper
adapter's 5-D views and transposed LSE, the SDPA mapping (math backend on the CPU: GQA,
bottom-right causal, windows) against the workload's reference, and the two CuTe DSL kernels
compiled for their SMs with fake tensors (skipped without the CUTLASS sources)."""

from __future__ import annotations

import pytest
import torch

from kernelplan import KernelPlanError, ShapeError
from kernelplan.check import compare
from kernelplan.testing import needs_sources
from kernelplan.workloads.attention import ATTENTION_BWD, ATTENTION_FWD, AttentionProblem

P = AttentionProblem


def plan_of(name: str):
    from kernelplan.registry import load_plan_class

    return load_plan_class("fmha", name)()


def test_registered():
    from cute_fmha import KERNELS

    assert set(KERNELS) >= {
        "hopper_fmha",
        "ampere_flash_attention_v2",
        "sdpa_flash",
        "sdpa_cudnn",
        "sdpa_efficient",
        "sdpa_math",
        "flash_attn4",
        "blackwell_fmha",
        "blackwell_fmha_bwd",
    }
    for n in KERNELS:
        want = ATTENTION_BWD if n.endswith("_bwd") else ATTENTION_FWD
        assert plan_of(n).workload is want


@pytest.mark.parametrize(
    "kernel, kw, needle",
    [
        ("hopper_fmha", dict(d_qk=96), "takes head dim 32, 64, 128, 256"),
        ("hopper_fmha", dict(d_qk=128, d_v=64), "one head dim"),
        ("hopper_fmha", dict(dtype="float32"), "takes dtype"),
        ("hopper_fmha", dict(sq=64, window_left=63), "--window_left < sk - 1"),
        ("ampere_flash_attention_v2", dict(h_kv=8), "h_kv == h_q only"),
        ("ampere_flash_attention_v2", dict(sq=128, sk=256, causal=True), "top-left"),
        ("ampere_flash_attention_v2", dict(d_qk=60), "multiple of 8"),
        ("ampere_flash_attention_v2", dict(window_left=8), "no sliding window"),
        ("sdpa_math", dict(b=1, sq=16384, h_q=32), "GiB"),
        ("flash_attn4", dict(dtype="float32"), "takes dtype"),
    ],
)
def test_refusals_one_line(kernel, kw, needle):
    with pytest.raises(ShapeError) as e:
        plan_of(kernel).problem(P(**kw))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_flash_attn4_missing_is_one_line():
    try:
        import flash_attn.cute  # noqa: F401
    except ImportError:
        p = plan_of("flash_attn4")
        with pytest.raises(KernelPlanError) as e:
            p.plan(P(b=1, sq=64, h_q=2, d_qk=64), p.default_config(None), None)
        assert "flash-attn-4 is not installed" in str(e.value) and "\n" not in str(e.value)
    else:
        pytest.skip("flash-attn-4 is installed here")


def test_hopper_views_and_reference_layout():
    plan = plan_of("hopper_fmha")
    p = P(b=2, sq=6, sk=10, h_q=4, h_kv=2, d_qk=32, causal=True)
    x = plan.prepare_inputs(p, seed=1, device="cpu")
    w = ATTENTION_FWD.prepare_inputs(p, ATTENTION_FWD.tensor_specs(p), 1, device="cpu")
    specs = plan.tensor_specs(p)
    for n in ("q", "k", "v", "o", "lse"):
        assert tuple(x[n].shape) == specs[n].shape
    assert torch.equal(x["q"].reshape(w["q"].shape), w["q"])  # same numbers, a view
    ref, wref = plan.reference(p, x), ATTENTION_FWD.reference(p, w)
    # upstream's lse storage (b, sq, h_kv, group, 1) is the workload's (b, h_q, sq) transposed
    assert torch.equal(ref["lse"][1, 4, 1, 0, 0], wref["lse"][1, 2, 4])
    assert torch.equal(ref["o"].reshape(wref["o"].shape), wref["o"])
    # the kernel's view of q: (s, d, h_r, h_k, b)
    assert specs["q"].view_shape() == (6, 32, 2, 2, 2)


@pytest.mark.parametrize(
    "kw",
    [
        dict(b=2, sq=33, h_q=4, d_qk=16),
        dict(b=1, sq=8, sk=20, h_q=4, h_kv=2, d_qk=16, causal=True),  # GQA, bottom-right
        dict(b=1, sq=24, h_q=2, d_qk=16, causal=True, window_left=5),
        dict(b=1, sq=16, sk=20, h_q=3, h_kv=1, d_qk=16, d_v=8),
    ],
)
def test_sdpa_math_on_cpu_matches_the_workload(kw):
    """The SDPA mapping (transposes, enable_gqa, causal_lower_right, window mask) on the CPU
    with the math backend, in float32."""
    plan = plan_of("sdpa_math")
    p = P(dtype="float32", **kw)
    x = plan.prepare_inputs(p, seed=2, device="cpu")
    assert "lse" not in plan.tensor_specs(p)
    plan.plan(p, plan.default_config(p), None).bind(x)()
    ref = plan.reference(p, x)
    r = compare("o", x["o"], ref["o"], ATTENTION_FWD.tolerance(p, "o"))
    assert r.passed, r.line()


def test_sdpa_refusal_is_one_line():
    """A backend that cannot take the problem (cuDNN: none on the CPU) says so."""
    plan = plan_of("sdpa_cudnn")
    p = P(b=1, sq=8, h_q=2, d_qk=16, dtype="float32")
    x = plan.prepare_inputs(p, seed=0, device="cpu")
    with pytest.raises(ShapeError) as e:
        plan.plan(p, plan.default_config(p), None).bind(x)()
    assert "CUDNN_ATTENTION backend refuses" in str(e.value) and "\n" not in str(e.value)


@needs_sources
@pytest.mark.parametrize(
    "kernel, kw",
    [
        ("hopper_fmha", dict(b=1, sq=300, sk=500, h_q=8, h_kv=2, d_qk=128, causal=True)),
        ("ampere_flash_attention_v2", dict(b=1, sq=256, h_q=4, d_qk=64, causal=True)),
    ],
)
def test_static_compile_for_target_sm(kernel, kw):
    plan = plan_of(kernel)
    p = plan.problem(P(**kw))
    report = plan.run_static(p, plan.default_config(p), use_cache=False)
    assert report["arch"] == plan.target_sm[0]
    assert report["registers"] > 0 and report["cubin_bytes"] > 0
    if kernel == "hopper_fmha":
        assert report["meta"]["mask_type"] == "WINDOW_MASK_INFERENCE"  # bottom-right


@pytest.mark.parametrize(
    "kernel", ["hopper_fmha", "ampere_flash_attention_v2", "sdpa_flash", "flash_attn4"]
)
@pytest.mark.parametrize(
    "args, needle",
    [
        # causal, bottom-right aligned: the first sq - sk queries would see no key
        (["--sq", "256", "--sk", "128", "--causal", "true"], "softmax over no key is undefined"),
        # GQA: query heads grouped evenly over the KV heads
        (["--h_q", "6", "--h_kv", "4"], "is not a multiple of --h_kv 4"),
    ],
)
def test_undefined_problems_are_one_line_exit_2_for_every_implementation(
    kernel, args, needle, capsys, tmp_path
):
    """Issue 12's bad input through the command line: a problem the workload does not define
    is refused before any implementation sees it: one line on stderr, exit 2, no record."""
    from kernelplan.cli import package_main

    rc = package_main(
        "fmha",
        [kernel, "--b", "1", "--sq", "128", "--sk", "128", "--h_q", "4", "--d_qk", "128",
         *args, "--prof_type", "static", "--results-dir", str(tmp_path)],
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("error:") and needle in err[0]
    assert not list(tmp_path.rglob("*.json"))
