"""blockscaled/dense_blockscaled_gemm_persistent: the formats and the dequantising reference
(CPU), refusals as one line, the shape-generic compile key, and a compile for sm_100a with fake
tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan import ShapeError
from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
fm = pytest.importorskip("cute_blockscaled.formats")
adapter = pytest.importorskip(
    "cute_blockscaled.dense_blockscaled_gemm_persistent.dense_blockscaled_gemm_persistent"
)
P = fm.BlockScaledGemmProblem


def test_registered():
    from cute_blockscaled import KERNELS

    assert_registered(KERNELS, adapter.DenseBlockscaledGemmPersistent)


def test_e2m1_codes_decode_to_the_ocp_values():
    codes = torch.arange(16).view(1, 16)
    got = fm.decode_e2m1(fm.encode_e2m1(codes), 16)[0].tolist()
    mags = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert got == mags + [-m for m in mags]
    # the even element in the low nibble
    assert fm.encode_e2m1(torch.tensor([[2, 0xC]])).item() == 0xC2


def test_e8m0_and_e4m3_scales():
    raw = torch.tensor([127, 128, 125, 0xFF], dtype=torch.uint8)
    got = fm.decode_sf(raw, "float8_e8m0fnu")
    assert got[:3].tolist() == [1.0, 2.0, 0.25] and torch.isnan(got[3])
    e4m3 = torch.tensor([0.5, 4.0]).to(torch.float8_e4m3fn).view(torch.uint8)
    assert fm.decode_sf(e4m3, "float8_e4m3fn").tolist() == [0.5, 4.0]


def test_blocked_layout_places_row_and_block_as_the_kernel_addresses():
    p = P(m=300, n=64, k=96 * 16, l=2)  # 300 rows -> 3 row blocks, 96 K blocks -> 24
    sf = torch.arange(p.l * p.m * p.sf_k).view(p.l, p.m, p.sf_k) % 251
    blocked = fm.to_blocked(sf.to(torch.uint8), p, p.m)
    assert blocked.shape == (2, 3, 24, 32, 4, 4)
    flat = blocked.reshape(-1)
    ll, mm, kb = 1, 128 + 32 * 2 + 5, 4 * 7 + 3  # row 197 = 128*1 + 32*2 + 5, block 31
    off = ll * 3 * 24 * 512 + 1 * 24 * 512 + 7 * 512 + 5 * 16 + 2 * 4 + 3
    assert flat[off].item() == sf[ll, mm, kb].item() % 256
    assert torch.equal(fm.from_blocked(blocked, p, p.m), sf.to(torch.uint8))


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"dtype": "float4_e2m1fn", "sf_dtype": "float8_e8m0fnu", "sf_vec_size": 32},
        {"dtype": "float8_e4m3fn", "sf_dtype": "float8_e8m0fnu", "sf_vec_size": 32},
    ],
)
def test_reference_is_the_dequantised_product(kw):
    p = P(m=130, n=64, k=96, l=2, **kw)
    plan = adapter.DenseBlockscaledGemmPersistent()
    inp = plan.prepare_inputs(p, seed=3, device="cpu")
    ref = plan.reference(p, inp)["c"]
    # element by element, without the blocked layout or repeat_interleave
    a = fm.decode_ab(inp["a"], p.dtype, p.k)
    b = fm.decode_ab(inp["b"], p.dtype, p.k)
    sfa = fm.decode_sf(fm.from_blocked(inp["sfa"], p, p.m), p.sf_dtype)
    sfb = fm.decode_sf(fm.from_blocked(inp["sfb"], p, p.n), p.sf_dtype)
    i, j, l = 129, 63, 1
    want = sum(
        float(a[l, i, kk] * sfa[l, i, kk // p.sf_vec_size])
        * float(b[l, j, kk] * sfb[l, j, kk // p.sf_vec_size])
        for kk in range(p.k)
    )
    assert ref.shape == (2, 130, 64) and ref[l, i, j].item() == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"sf_vec_size": 64}, "--sf_vec_size 64"),
        ({"dtype": "float8_e4m3fn", "sf_vec_size": 16}, "--sf_vec_size 16 only with"),
        (
            {"sf_vec_size": 32, "sf_dtype": "float8_e4m3fn", "dtype": "float8_e4m3fn"},  # noqa: E501
            "takes --sf_dtype float8_e8m0fnu",
        ),
        ({"k": 255}, "--k 255"),
        ({"k": 200}, "--k 200 is not a multiple of 16 bytes"),
    ],
)
def test_bad_input_one_line(kw, needle):
    plan = adapter.DenseBlockscaledGemmPersistent()
    with refused_in_one_line(needle):
        plan.problem(plan.default_problem().to_dict() | kw)


def test_bad_config_one_line():
    with pytest.raises(ShapeError, match="cluster_shape_mn 8x1"):
        adapter.BlockScaledConfig(cluster_shape_mn=(8, 1))


@needs_sources  # plans through the example: needs the CUTLASS sources
def test_one_compile_serves_every_shape():
    """The entry takes pointers and Int32 extents: M, N, K, L are not in the compile key."""
    pytest.importorskip("cutlass")
    plan = adapter.DenseBlockscaledGemmPersistent()
    p = plan.default_problem()
    cfg, target = plan.default_config(p), plan.target()
    k1 = plan.kernel(p, cfg, target)
    k2 = plan.kernel(p.replace(m=1000, n=1024, k=4096, l=3), cfg, target)
    k3 = plan.kernel(p.replace(sf_dtype="float8_e8m0fnu"), cfg, target)
    assert k1.key == k2.key != k3.key
    assert "one compile serves every M, N, K, L" in k1.meta["shape_generic"]


@needs_sources
def test_static_compile_for_target_sm():
    report = static_report(adapter.DenseBlockscaledGemmPersistent(), "sm_100a")
    assert report["registers"] > 0
