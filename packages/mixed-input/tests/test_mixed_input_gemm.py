"""mixed-input/mixed_input_gemm: int4 storage and the dequantising reference (CPU), refusals
as one line, and a compile for sm_100a with fake tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan import ShapeError
from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
fm = pytest.importorskip("cute_mixed_input.formats")
adapter = pytest.importorskip("cute_mixed_input.mixed_input_gemm.mixed_input_gemm")
P = fm.MixedInputGemmProblem


def test_registered():
    from cute_mixed_input import KERNELS

    assert_registered(KERNELS, adapter.MixedInputGemm)


@pytest.mark.parametrize("shuffle", [False, True])
def test_int4_pack_roundtrip_and_nibble_order(shuffle):
    v = torch.arange(-8, 8).repeat(2).view(1, 1, 32)
    assert torch.equal(fm.unpack_int4(fm.pack_int4(v, shuffle), shuffle), v)
    plain = fm.pack_int4(torch.tensor([[[-1, 3, 0, 0, 0, 0, 0, 0]]]), False)
    assert plain[0, 0, 0].item() == 0x3F  # even K in the low nibble, two's complement
    shuf = fm.pack_int4(torch.tensor([[[1, 2, 3, 4, 5, 6, 7, -8]]]), True)
    assert shuf[0, 0, 0].item() == 0x31  # stored order 0, 2, 1, 3, ...


def test_reference_is_the_dequantised_product():
    p = P(m=16, n=8, k=256, l=2, scale_granularity_k=128)
    plan = adapter.MixedInputGemm()
    inp = plan.prepare_inputs(p, seed=1, device="cpu")
    assert inp["a"].shape == (2, 16, 256) and inp["a_scale"].shape == (2, 2, 16)
    ref = plan.reference(p, inp)["c"]
    a = fm.unpack_int4(inp["a"].reshape(-1)[: 2 * 16 * 128].view(2, 16, 128), fm.shuffled(p))
    i, j, l = 5, 7, 1
    want = sum(
        float(a[l, i, kk]) * float(inp["a_scale"][l, kk // 128, i]) * float(inp["b"][l, j, kk])
        for kk in range(256)
    )
    assert ref[l, i, j].item() == pytest.approx(want, rel=1e-6)


def test_int8_convert_only():
    p = P(m=16, n=16, k=32, a_dtype="int8", scale_granularity_k=0)
    inp = adapter.MixedInputGemm().prepare_inputs(p, seed=0, device="cpu")
    assert "a_scale" not in inp
    want = inp["a"].float() @ inp["b"].float().transpose(-1, -2)
    assert torch.equal(fm.reference(p, inp)["c"], want)


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"k": 129, "scale_granularity_k": 129}, "--k 129: an int4 A is packed two"),
        ({"k": 256, "scale_granularity_k": 96}, "--scale_granularity_k 96"),
        ({"a_dtype": "int8", "scale_granularity_k": 128}, "takes no scales"),
        ({"n": 100}, "--n 100 is not a multiple of 16 bytes"),
    ],
)
def test_bad_input_one_line(kw, needle):
    plan = adapter.MixedInputGemm()
    with refused_in_one_line(needle):
        plan.problem(plan.default_problem().to_dict() | kw)


@needs_sources  # plans through the example: needs the CUTLASS sources
def test_config_upstream_refuses():
    plan = adapter.MixedInputGemm()
    p = plan.default_problem().replace(k=256, scale_granularity_k=64)  # group < tile K
    with pytest.raises(ShapeError, match="upstream can_implement refuses"):
        plan.config(p)


@needs_sources
def test_static_compile_for_target_sm():
    static_report(adapter.MixedInputGemm(), "sm_100a")
