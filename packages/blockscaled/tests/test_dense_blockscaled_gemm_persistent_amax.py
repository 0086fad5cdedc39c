"""blockscaled/dense_blockscaled_gemm_persistent_amax: the extra output (amax of C from the
fp32 reference; -inf set at bind), refusals as one line, a compile for sm_100a with fake
tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan import CuteKernel
from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
fm = pytest.importorskip("cute_blockscaled.formats")
adapter = pytest.importorskip(
    "cute_blockscaled.dense_blockscaled_gemm_persistent_amax.dense_blockscaled_gemm_persistent_amax"
)
P = fm.BlockScaledGemmProblem
PLAN = adapter.DenseBlockscaledGemmPersistentAmax


def test_registered():
    from cute_blockscaled import KERNELS

    assert_registered(KERNELS, adapter.DenseBlockscaledGemmPersistentAmax)


def test_amax_is_max_abs_of_the_fp32_product():
    p = P(m=128, n=64, k=64, l=2, sf_dtype="float8_e8m0fnu", c_dtype="bfloat16")
    plan = PLAN()
    inp = plan.prepare_inputs(p, seed=2, device="cpu")
    assert plan.output_names(p) == ["c", "amax"] and inp["amax"].shape == (1, 1, 1)
    ref = plan.reference(p, inp)
    assert ref["amax"].shape == (1, 1, 1)
    assert ref["amax"].item() == ref["c"].abs().max().item() > 0
    low = plan.reference_lowp(p, inp)
    assert low["amax"].item() == ref["amax"].item()  # reduced before the rounding to C


def test_bind_sets_amax_to_minus_inf(monkeypatch):
    seen = {}
    monkeypatch.setattr(CuteKernel, "bind", lambda self, inputs: seen.setdefault("v", inputs))
    k = adapter.AmaxKernel("x", None, lambda t: (), {})
    inputs = {"amax": torch.full((1, 1, 1), float("nan"))}
    k.bind(inputs)
    assert seen["v"]["amax"].item() == float("-inf")


def test_bytes_add_the_amax_word():
    p = P(512, 256, 256, 1, sf_dtype="float8_e8m0fnu")
    assert PLAN().flops_bytes(p)[1] == fm.flops_bytes(p)[1] + 4


@pytest.mark.parametrize(
    "kw, cfg, needle",
    [
        ({"sf_vec_size": 8}, {}, "--sf_vec_size 8"),
        ({"n": 100}, {}, "--n 100"),
        # upstream's can_implement is read from the example: needs the sources
        pytest.param({}, {"mma_tiler_mn": "128,64"}, "can_implement refuses", marks=needs_sources),
    ],
)
def test_bad_input_one_line(kw, cfg, needle):
    plan = PLAN()
    with refused_in_one_line(needle):
        p = plan.problem(plan.default_problem().to_dict() | kw)
        plan.supports(p)
        if cfg:
            plan.supports_config(p, plan.config(p, cfg))


@needs_sources
def test_static_compile_for_target_sm():
    report = static_report(PLAN(), "sm_100a")
    assert report["opcodes"].get("REDUX", 0) > 0  # the warp fmax of amax
