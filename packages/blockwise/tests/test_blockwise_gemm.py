"""blockwise/blockwise_gemm: the blockwise-scaled reference (CPU), refusals as one line, and
a compile for sm_100a with fake tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
fm = pytest.importorskip("cute_blockwise.formats")
adapter = pytest.importorskip("cute_blockwise.blockwise_gemm.blockwise_gemm")
P = fm.BlockwiseGemmProblem


def test_registered():
    from cute_blockwise import KERNELS

    assert_registered(KERNELS, adapter.BlockwiseGemm)


def test_reference_scales_1x128_a_groups_and_128x128_b_blocks():
    p = P(m=130, n=200, k=272, l=2)
    plan = adapter.BlockwiseGemm()
    inp = plan.prepare_inputs(p, seed=2, device="cpu")
    assert inp["sfa"].shape == (2, 3, 130) and inp["sfb"].shape == (2, 2, 3)
    ref = plan.reference(p, inp)["c"]
    a, b = inp["a"].float(), inp["b"].float()
    i, j, l = 129, 199, 1
    want = sum(
        float(a[l, i, kk] * inp["sfa"][l, kk // 128, i])
        * float(b[l, j, kk] * inp["sfb"][l, j // 128, kk // 128])
        for kk in range(p.k)
    )
    assert ref[l, i, j].item() == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"scale_block": 64}, "--scale_block 64"),
        ({"dtype": "float16"}, "--dtype float16"),
        ({"k": 100}, "--k 100 is not a multiple of 16 bytes"),
    ],
)
def test_bad_input_one_line(kw, needle):
    plan = adapter.BlockwiseGemm()
    with refused_in_one_line(needle):
        plan.problem(plan.default_problem().to_dict() | kw)


@needs_sources
def test_static_compile_for_target_sm():
    static_report(adapter.BlockwiseGemm(), "sm_100a")
