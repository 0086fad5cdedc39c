"""blockscaled/dense_blockscaled_gemm_persistent_prefetch: this entry's storage (one byte per
element, FP4 packed in the first half), the reference against the format's definition read
straight from the stored bytes (CPU), refusals as one line, a compile for sm_100a with fake
tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan import ShapeError
from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
fm = pytest.importorskip("cute_blockscaled.formats")
tt = pytest.importorskip("cute_blockscaled.tensors")
adapter = pytest.importorskip(
    "cute_blockscaled.dense_blockscaled_gemm_persistent_prefetch."
    "dense_blockscaled_gemm_persistent_prefetch"
)
P = fm.BlockScaledGemmProblem
PLAN = adapter.DenseBlockscaledGemmPersistentPrefetch


def test_registered():
    from cute_blockscaled import KERNELS

    assert_registered(KERNELS, adapter.DenseBlockscaledGemmPersistentPrefetch)


def _e2m1(code: int) -> float:
    """OCP MX v1.0 5.3.3, from the bits: sign, 2 exponent bits (bias 1), 1 mantissa bit."""
    s, e, m = code >> 3, (code >> 1) & 3, code & 1
    v = (m / 2) if e == 0 else (1 + m / 2) * 2.0 ** (e - 1)
    return -v if s else v


def _element(buf, l, row, k, rows, kk):
    """FP4 element (l, row, kk) of an (L, rows, K) operand packed in the first half of its
    byte buffer: element index i = (l*rows + row)*K + kk, byte i // 2, low nibble if even."""
    i = (l * rows + row) * k + kk
    byte = int(buf.reshape(-1)[i // 2])
    return _e2m1(byte & 0xF if i % 2 == 0 else byte >> 4)


def _sf(blocked, l, row, kb):
    """E8M0 scale of (row, kb) in the 32x4x4 blocked storage (L, MN/128, SFK/4, 32, 4, 4):
    row = 128 i + 32 j + r, kb = 4 q + s at [l, i, q, r, j, s]; value 2^(byte - 127)."""
    i, j, r = row // 128, (row // 32) % 4, row % 32
    return 2.0 ** (int(blocked[l, i, kb // 4, r, j, kb % 4]) - 127)


def test_storage_and_reference_from_the_bytes():
    p = P(m=130, n=64, k=96, l=2, sf_dtype="float8_e8m0fnu", sf_vec_size=16, c_dtype="float32")
    plan = PLAN()
    inp = plan.prepare_inputs(p, seed=5, device="cpu")
    assert inp["a"].shape == (2, 130, 96) and inp["a"].dtype == torch.uint8
    assert not inp["a"].view(-1)[2 * 130 * 48 :].any()  # second half unused
    assert inp["sfa"].shape == (2, 2, 2, 32, 4, 4)
    ref = plan.reference(p, inp)["c"]
    for l, i, j in ((0, 0, 0), (1, 129, 63), (1, 77, 31)):
        want = sum(
            _element(inp["a"], l, i, p.k, p.m, kk)
            * _sf(inp["sfa"], l, i, kk // 16)
            * _element(inp["b"], l, j, p.k, p.n, kk)
            * _sf(inp["sfb"], l, j, kk // 16)
            for kk in range(p.k)
        )
        assert ref[l, i, j].item() == want


def test_fp8_operands_stored_as_bytes():
    p = P(m=128, n=64, k=64, dtype="float8_e4m3fn", sf_dtype="float8_e8m0fnu", sf_vec_size=32)
    inp = PLAN().prepare_inputs(p, seed=1, device="cpu")
    assert inp["a"].dtype == torch.uint8 and inp["a"].shape == (1, 128, 64)
    a = inp["a"].view(torch.float8_e4m3fn).float()
    sf = 2.0 ** (inp["sfa"][0, 0, 0, 3, 1, 1].float() - 127)  # row 35, block 1
    b = inp["b"].view(torch.float8_e4m3fn).float()
    sfb = fm.decode_sf(fm.from_blocked(inp["sfb"], p, p.n), p.sf_dtype)
    want = sum(
        float(a[0, 35, kk]) * float(sf) * float(b[0, 2, kk] * sfb[0, 2, kk // 32])
        for kk in range(32, 64)
    )
    want += sum(
        float(a[0, 35, kk])
        * float(2.0 ** (inp["sfa"][0, 0, 0, 3, 1, 0].float() - 127))
        * float(b[0, 2, kk] * sfb[0, 2, 0])
        for kk in range(32)
    )
    assert PLAN().reference(p, inp)["c"][0, 35, 2].item() == pytest.approx(want, rel=1e-6)


def test_specs_carry_upstream_marks():
    specs = PLAN().tensor_specs(P(512, 256, 256, 1, sf_dtype="float8_e8m0fnu"))
    assert specs["a"].element == "Float4E2M1FN" and specs["a"].divisibility == 32
    assert specs["c"].divisibility == 32 and specs["c"].dtype == "float16"
    assert specs["sfa"].element == "Float8E8M0FNU" and specs["sfa"].perm == (3, 4, 1, 5, 2, 0)


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"sf_vec_size": 64}, "--sf_vec_size 64"),
        ({"dtype": "float8_e4m3fn", "sf_vec_size": 16}, "--sf_vec_size 16 only with"),
        ({"k": 80}, "--k 80 is not a multiple of 16 bytes"),
        ({"n": 240}, "--n 240 is not a multiple of 32"),
        ({"k": 255}, "--k 255"),
    ],
)
def test_bad_input_one_line(kw, needle):
    plan = PLAN()
    with refused_in_one_line(needle):
        p = plan.problem(plan.default_problem().to_dict() | kw)
        plan.supports(p)


@needs_sources  # plans through the example: needs the CUTLASS sources
def test_prefetch_dist_config():
    plan = PLAN()
    p = plan.default_problem()
    assert plan.config(p, {"prefetch_dist": "0"}).prefetch_dist == 0
    with pytest.raises(ShapeError) as e:
        plan.config(p, {"prefetch_dist": "-1"})
    assert "prefetch_dist -1" in str(e.value) and "\n" not in str(e.value)


@needs_sources
def test_static_compile_for_target_sm():
    report = static_report(PLAN(), "sm_100a")
    assert report["opcodes"].get("UTMAPF", 0) > 0  # the TMA prefetches
