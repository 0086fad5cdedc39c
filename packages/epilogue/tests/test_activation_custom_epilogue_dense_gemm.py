"""epilogue/activation_custom_epilogue_dense_gemm: the reference (CPU), refusals as one line,
and a compile for sm_100a with fake tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
adapter = pytest.importorskip(
    "cute_epilogue.activation_custom_epilogue_dense_gemm.activation_custom_epilogue_dense_gemm"
)


def test_registered():
    from cute_epilogue import KERNELS

    assert_registered(KERNELS, adapter.ActivationCustomEpilogueDenseGemm)


@pytest.mark.parametrize("act", adapter.ACTIVATIONS)
def test_reference(act):
    plan = adapter.ActivationCustomEpilogueDenseGemm()
    p = plan.default_problem().replace(
        m=16, n=16, k=32, activation=act, alpha=0.5, beta=2.0, bias=0.25, scale_a=2.0, scale_c=-1.0
    )
    inp = plan.workload.prepare_inputs(p, plan.tensor_specs(p), 0, "cpu")
    r = plan.reference(p, inp)
    aux = (inp["a"] @ inp["b"].transpose(-1, -2)) + (-2.0) * inp["c"] + 0.25
    torch.testing.assert_close(r["aux"], aux)
    x = aux[0, 3, 5].item()
    want = {
        "identity": x,
        "relu": max(x, 0.0),
        "leaky_relu": x if x > 0 else 0.01 * x,
        "tanh": torch.tanh(torch.tensor(x)).item(),
        "sigmoid": 1 / (1 + torch.exp(torch.tensor(-x)).item()),
        "silu": x / (1 + torch.exp(torch.tensor(-x)).item()),
        "hardswish": x * min(max(x + 3, 0.0), 6.0) / 6,
        "gelu": 0.5 * x * (1 + torch.erf(torch.tensor(x / 2**0.5)).item()),
    }[act]
    assert r["d"][0, 3, 5].item() == pytest.approx(want, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(
    "kw, needle",
    [({"activation": "swish"}, "--activation swish"), ({"c_dtype": "float8_e4m3fn"}, "--c_dtype")],
)
def test_bad_input_one_line(kw, needle):
    plan = adapter.ActivationCustomEpilogueDenseGemm()
    with refused_in_one_line(needle):
        plan.problem(plan.default_problem().to_dict() | kw)


@needs_sources
def test_static_compile_for_target_sm():
    static_report(adapter.ActivationCustomEpilogueDenseGemm(), "sm_100a")
