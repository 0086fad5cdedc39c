"""The FP8 (e4m3) latent cache of the mla_decode workload on the CPU: quantisation and its
round trip, the reference on the dequantised cache against the naive loops of
test_mla_reference.py, NaN slots, refusals (problem, inputs, implementations), bytes by hand,
and the size of the quantisation error against the bf16 problem, for the record."""

from __future__ import annotations

import pytest
import torch

from kernelplan.check import compare, tolerance_for
from kernelplan.workload import ShapeError
from kernelplan.workloads.mla_decode import (
    MLA_DECODE,
    MlaDecodeProblem,
    _pow2_ceil,
    dequantize_kv,
    quantize_kv,
)

from .test_mla_reference import SMALL, naive

W = MLA_DECODE
FP8 = "float8_e4m3fn"


def inputs_for(p: MlaDecodeProblem, seed: int = 0) -> dict:
    return W.prepare_inputs(p, W.tensor_specs(p), seed, device="cpu")


def dequantised(p: MlaDecodeProblem, x: dict) -> dict:
    """The inputs of the FP8 problem with the 16-bit-layout cache it stands for (float32)."""
    full = dequantize_kv(p, x["kv_cache"], x["kv_scales"], x["kv_rope"])
    return dict(x, kv_cache=full)


# -- quantisation ---------------------------------------------------------------------------


def test_pow2_ceil_is_exact():
    x = torch.tensor([0.0, 1.0, 0.75, 3.0, 2.0**-20, 2.0**-130, 448.0 / 448, 5e-3, float("nan")])
    got = _pow2_ceil(x)
    assert got[:8].tolist() == [1.0, 1.0, 1.0, 4.0, 2.0**-20, 2.0**-130, 1.0, 2.0**-7]
    assert torch.isnan(got[8])


@pytest.mark.parametrize(
    "scale, block", [("per_token", None), ("per_block", None), ("per_block", 64)]
)
def test_quantise_dequantise_round_trip(scale, block):
    p = MlaDecodeProblem(b=2, t=70, kv_dtype=FP8, kv_scale=scale, kv_block=block)
    g = p.scale_groups()
    assert g == {"per_token": 1, "per_block": 512 // (block or 128)}[scale]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 576, generator=gen) * torch.logspace(-3, 3, 5).view(1, 5, 1)
    x = x.to(torch.bfloat16)
    x[0, 0, : p.scale_block()] = 0  # an all-zero group: scale 1, values 0
    x[1, 1, 7] = float("nan")  # a NaN poisons its own group only
    kv, sc, rope = quantize_kv(p, x)
    assert kv.dtype == torch.float8_e4m3fn and kv.shape == (3, 5, 512)
    assert sc.dtype == torch.float32 and sc.shape == (3, 5, g) and sc.is_contiguous()
    assert rope.dtype == torch.bfloat16 and torch.equal(rope, x[..., 512:])  # not quantised
    assert sc[0, 0, 0] == 1.0 and (kv[0, 0, : p.scale_block()].float() == 0).all()
    assert torch.isnan(sc[1, 1, 0]) and torch.isnan(kv[1, 1, : p.scale_block()].float()).all()
    fin = torch.isfinite(sc)
    assert fin.sum() == sc.numel() - 1 and torch.isfinite(kv.float()[1, 1, p.scale_block() :]).all()
    m, _ = torch.frexp(sc[fin])
    assert (m == 0.5).all() and (sc[fin] > 0).all()  # powers of two
    # each scale is the smallest power of two with amax / scale <= 448
    lat = x[..., :512].float().reshape(3, 5, g, -1)
    amax = lat.abs().amax(-1)
    nz = fin & (amax > 0)
    assert (amax[nz] / sc[nz] <= 448).all() and (amax[nz] / sc[nz] > 224).all()
    # e4m3 rounding: at most half an ulp (2^-4 relative) for normals, 2^-10 * scale below
    deq = dequantize_kv(p, kv, sc, rope)
    assert deq.dtype == torch.float32 and deq.shape == (3, 5, 576)
    ok = torch.isfinite(deq[..., :512])
    err = (deq[..., :512] - x[..., :512].float()).abs()
    per = sc.repeat_interleave(p.scale_block(), dim=-1)
    bound = torch.maximum(x[..., :512].float().abs() * 2.0**-4, per * 2.0**-10)
    assert (err[ok] <= bound[ok]).all()
    # the dequantised values are exact in bf16 (power-of-two scales), and quantising them
    # again gives the same values back
    exact = dequantize_kv(p, kv, sc, rope, torch.bfloat16).float()
    torch.testing.assert_close(exact, deq, rtol=0, atol=0, equal_nan=True)
    again = dequantize_kv(p, *quantize_kv(p, deq.to(torch.bfloat16)))
    assert torch.equal(again[ok.all(-1)], deq[ok.all(-1)])


def test_outlier_block_is_what_per_block_is_for():
    """On Gaussian data the granularity hardly matters (e4m3 is floating point: a scale only
    moves the exponent window), but one outlier block pushes a per-token scale so high that
    the other blocks' values fall into e4m3's subnormal range, and per_block keeps them."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64, 576, generator=gen)
    x[:, 128:256] *= 3e4
    x = x.to(torch.bfloat16)
    errs = {}
    for scale in ("per_token", "per_block"):
        p = MlaDecodeProblem(kv_dtype=FP8, kv_scale=scale)
        deq = dequantize_kv(p, *quantize_kv(p, x))
        quiet = torch.cat([x[:, :128], x[:, 256:512]], -1).float()
        got = torch.cat([deq[:, :128], deq[:, 256:512]], -1)
        errs[scale] = float((got - quiet).norm() / quiet.norm())
    # seed 1: per_block 2.65e-2 (as on plain Gaussian data), per_token 1.44e-1
    assert errs["per_block"] < 0.03 and errs["per_token"] > 0.1, errs


# -- inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_fp8_inputs_are_the_16bit_draw_quantised(dtype):
    kw = dict(b=5, h=3, page=8, seqlens=(13, 0, 8, 1, 21), dtype=dtype, **SMALL)
    p16 = MlaDecodeProblem(**kw)
    p8 = MlaDecodeProblem(**kw, kv_dtype=FP8, kv_scale="per_block", kv_block=8)
    x16, x8 = inputs_for(p16, seed=7), inputs_for(p8, seed=7)
    for n in ("q", "page_table", "seqlens"):
        assert torch.equal(x16[n], x8[n])
    assert set(x8) == set(W.tensor_specs(p8))
    specs = W.tensor_specs(p8)
    for n in ("kv_cache", "kv_scales", "kv_rope"):
        assert (
            tuple(x8[n].shape) == specs[n].shape and str(x8[n].dtype) == f"torch.{specs[n].dtype}"
        )
    assert (
        specs["kv_cache"].shape == (p8.pages_total(), 8, 16) and specs["kv_scales"].shape[-1] == 2
    )
    kv, sc, rope = quantize_kv(p8, x16["kv_cache"])
    assert torch.equal(kv.view(torch.uint8), x8["kv_cache"].view(torch.uint8))
    assert torch.equal(sc.nan_to_num(-1), x8["kv_scales"].nan_to_num(-1))
    assert torch.equal(rope.nan_to_num(-1), x8["kv_rope"].nan_to_num(-1))
    assert x8["kv_rope"].dtype == getattr(torch, dtype)


def test_nan_slots_in_all_three_tensors():
    p = MlaDecodeProblem(
        b=5, h=3, page=8, seqlens=(13, 0, 8, 1, 21), kv_dtype=FP8, kv_scale="per_block",
        kv_block=4, **SMALL,
    )  # fmt: skip
    x = inputs_for(p, seed=5)
    table = x["page_table"]
    used = torch.zeros(p.pages_total(), p.page, dtype=torch.bool)
    for i, n in enumerate(p.lengths()):
        for k in range(n):
            used[int(table[i, k // p.page]), k % p.page] = True
    for name in ("kv_cache", "kv_scales", "kv_rope"):
        t = x[name].float()
        assert torch.isfinite(t[used]).all(), name
        assert torch.isnan(t[~used]).all(), name  # spare pages and each last page's tail
    W.validate_inputs(p, x)  # unused slots' NaN scales are not checked


def test_nan_slots_never_leak():
    from cute_mla.torch_reference import TorchReference

    p = MlaDecodeProblem(b=8, s=2, t=11, h=2, page=4, varlen=True, kv_dtype=FP8, **SMALL)
    x = inputs_for(p, seed=1)
    assert torch.isnan(x["kv_cache"].float()).any() and torch.isnan(x["kv_scales"]).any()
    ref, low = W.reference(p, x), W.reference_lowp(p, x)
    for out in (ref, low):
        assert not torch.isnan(out["o"]).any() and not torch.isnan(out["lse"]).any()
    # whatever the unused slots hold (large finite values, a power-of-two scale), same result
    y = dict(
        x,
        kv_cache=x["kv_cache"].float().nan_to_num(448.0).to(torch.float8_e4m3fn),
        kv_scales=x["kv_scales"].nan_to_num(2.0**10),
        kv_rope=x["kv_rope"].nan_to_num(1e4),
    )
    ref2 = W.reference(p, y)
    assert torch.equal(ref["o"], ref2["o"]) and torch.equal(ref["lse"], ref2["lse"])
    plan = TorchReference()
    x["o"].fill_(float("nan"))
    x["lse"].fill_(float("nan"))
    plan.kernel(p, plan.default_config(p), plan.target("sm_90a")).bind(x)()
    assert not torch.isnan(x["o"]).any()


# -- reference ----------------------------------------------------------------------------

CASES = {
    "varlen-per-token": MlaDecodeProblem(
        b=5, h=3, page=8, seqlens=(13, 0, 8, 1, 21), kv_dtype=FP8, **SMALL
    ),
    "varlen-s2-per-block": MlaDecodeProblem(
        b=8,
        s=2,
        t=11,
        h=2,
        page=4,
        varlen=True,
        kv_dtype=FP8,
        kv_scale="per_block",
        kv_block=8,
        **SMALL,
    ),
    "s3-short": MlaDecodeProblem(
        b=3,
        s=3,
        h=2,
        page=4,
        seqlens=(2, 9, 5),
        kv_dtype=FP8,
        kv_scale="per_block",
        kv_block=4,
        **SMALL,
    ),
    "full-dims-fp16-per-block": MlaDecodeProblem(
        b=2, h=2, t=70, page=64, dtype="float16", kv_dtype=FP8, kv_scale="per_block"
    ),
    "full-dims-bf16-per-token": MlaDecodeProblem(b=2, h=2, t=70, page=64, kv_dtype=FP8),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reference_matches_naive_on_the_dequantised_cache(name):
    p = CASES[name]
    x = inputs_for(p, seed=3)
    ref = W.reference(p, x)
    o_n, lse_n = naive(p, dequantised(p, x))  # float64, one key at a time
    assert ref["o"].dtype == torch.float32 and ref["o"].shape == (p.b, p.s, p.h, p.d_latent)
    torch.testing.assert_close(ref["o"].double(), o_n, rtol=1e-5, atol=1e-5)
    empty = torch.isinf(lse_n)
    assert torch.equal(torch.isinf(ref["lse"]), empty)
    assert (ref["o"][empty] == 0).all()
    torch.testing.assert_close(ref["lse"].double()[~empty], lse_n[~empty], rtol=1e-6, atol=1e-6)
    # the same as the 16-bit problem's reference over the dequantised cache in dtype
    kw = {k: v for k, v in p.to_dict().items() if not k.startswith("kv_")}
    p16 = MlaDecodeProblem(**kw)
    x16 = dict(dequantised(p, x))
    x16["kv_cache"] = x16["kv_cache"].to(getattr(torch, p.dtype))  # exact
    for a, b in (
        (W.reference(p16, x16), ref),
        (W.reference_lowp(p16, x16), W.reference_lowp(p, x)),
    ):
        assert torch.equal(a["o"], b["o"]) and torch.equal(a["lse"], b["lse"])


def test_tolerance_and_check_of_a_correct_fp8_result():
    p = MlaDecodeProblem(b=3, h=8, t=150, varlen=True, kv_dtype=FP8, kv_scale="per_block")
    tol = W.tolerance(p, "o")
    bf16 = tolerance_for("bfloat16")
    assert (tol.rel_norm, tol.max_abs_rel) == (bf16.rel_norm, bf16.max_abs_rel)
    assert "dequantised" in tol.basis
    assert W.tolerance(p, "lse").rel_norm == 1e-4
    x = inputs_for(p, seed=2)
    ref, low = W.reference(p, x), W.reference_lowp(p, x)
    r = compare("o", low["o"].to(torch.bfloat16), ref["o"], tol, baseline=low["o"])
    assert r.passed, r.line()
    # a wrong page still fails
    bad = dict(x, page_table=x["page_table"].clone())
    W.plant_input_fault(p, bad, "wrong-page")
    wrong = W.reference_lowp(p, bad)["o"].to(torch.bfloat16)
    r = compare("o", wrong, ref["o"], tol, baseline=low["o"])
    assert not r.passed, r.line()
    # so does a kernel that applies no scales (reads the raw e4m3 values)
    raw = dict(x, kv_scales=torch.ones_like(x["kv_scales"]))
    r = compare(
        "o", W.reference_lowp(p, raw)["o"].to(torch.bfloat16), ref["o"], tol, baseline=low["o"]
    )
    assert not r.passed, r.line()


def test_torch_reference_takes_the_fp8_cache():
    from cute_mla.torch_reference import TorchReference

    plan = TorchReference()
    for p in (CASES["varlen-s2-per-block"], CASES["s3-short"], *W.check_problems()[-2:]):
        assert p.kv_fp8
        plan.supports(p)
        x = inputs_for(p, seed=4)
        x["o"].fill_(float("nan"))
        x["lse"].fill_(float("nan"))
        plan.kernel(p, plan.default_config(p), plan.target("sm_90a")).bind(x)()
        ref, low = W.reference(p, x), W.reference_lowp(p, x)
        for n in ("o", "lse"):
            r = compare(n, x[n], ref[n], W.tolerance(p, n), baseline=low[n])
            assert r.passed, r.line()


# -- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(kv_dtype="float8_e5m2"), "--kv_dtype float8_e5m2: one of bfloat16, float16"),
        (dict(kv_dtype="int8"), "--kv_dtype int8: one of"),
        (dict(kv_dtype="float32"), "--kv_dtype float32: one of"),
        (dict(kv_dtype="float16"), "--kv_dtype float16 with --dtype bfloat16"),
        (dict(dtype="float8_e4m3fn", kv_dtype=FP8), None),  # = dtype: the all-fp8 problem
        (dict(dtype="float32", kv_dtype=FP8), "takes --dtype bfloat16 or float16"),
        (dict(kv_dtype=FP8, kv_scale="per_block", kv_block=96), "--kv_block 96 does not divide"),
        (dict(kv_dtype=FP8, kv_scale="per_block", kv_block=0), "--kv_block must be a positive"),
        (dict(kv_dtype=FP8, kv_scale="per_block", d_latent=64), "--kv_block 128 (the default)"),
        (dict(kv_dtype=FP8, kv_block=128), "--kv_block 128 with --kv_scale per_token"),
        (dict(kv_dtype=FP8, kv_scale="per_tensor"), "--kv_scale must be per_token or per_block"),
        (dict(kv_scale="per_block"), "apply to --kv_dtype float8_e4m3fn only"),
        (dict(kv_block=64), "apply to --kv_dtype float8_e4m3fn only"),
    ],
)
def test_problem_refusals_one_line(kw, message):
    if message is None:
        assert MlaDecodeProblem(**kw).kv_dtype is None
        return
    with pytest.raises(ShapeError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        MlaDecodeProblem(**kw)
    assert "\n" not in str(e.value)


def test_one_spelling_per_problem():
    P = MlaDecodeProblem
    assert P(kv_dtype="bfloat16") == P() and P(dtype="float16", kv_dtype="float16").kv_dtype is None
    assert P(kv_dtype=FP8, kv_scale="per_block", kv_block=128).kv_block is None
    assert P(kv_dtype=FP8, kv_block=512).kv_block is None  # per_token covers d_latent
    p = P(kv_dtype=FP8, kv_scale="per_block", kv_block=64)
    assert (p.scale_block(), p.scale_groups(), p.cache_dtype()) == (64, 8, FP8)
    assert P.from_dict(p.to_dict()) == p
    assert "kv_dtype=float8_e4m3fn" in p.label() and "kv_block=64" in p.label()
    assert "kv_" not in P().label()  # the 16-bit problems' labels do not change
    assert not P().kv_fp8 and P().cache_dtype() == "bfloat16" and P(kv_dtype=FP8).kv_fp8
    assert p.replace(t=8192).kv_block == 64


def test_validate_inputs_refuses_bad_fp8_tensors():
    p = CASES["varlen-per-token"]
    x = inputs_for(p)
    W.validate_inputs(p, x)
    missing = {k: v for k, v in x.items() if k != "kv_scales"}
    with pytest.raises(ShapeError, match="input kv_scales is missing"):
        W.validate_inputs(p, missing)
    wrong = dict(x, kv_rope=x["kv_rope"].float())
    with pytest.raises(ShapeError, match="kv_rope is torch.float32; the problem says bfloat16"):
        W.validate_inputs(p, wrong)
    short = dict(x, kv_scales=x["kv_scales"][:-1])
    with pytest.raises(ShapeError, match="kv_scales has shape"):
        W.validate_inputs(p, short)
    # a scale in use that is not a power of two, or not positive
    for v in (0.3, 0.0, -0.25, float("inf")):
        bad = dict(x, kv_scales=x["kv_scales"].clone())
        bad["kv_scales"][int(x["page_table"][0, 0]), 0, 0] = v
        with pytest.raises(ShapeError, match="must be positive powers of two") as e:
            W.reference(p, bad)
        assert "\n" not in str(e.value)


def test_implementations_refuse_or_take_the_fp8_cache():
    from cute_mla.cutlass_mla_decode_fp8 import CutlassMlaDecodeFp8
    from cute_mla.cutlass_mla_decode_fp16 import CutlassMlaDecodeFp16
    from cute_mla.flashinfer_mla import FlashInferMla
    from cute_mla.mla_decode_sm90 import MlaDecodeSm90
    from cute_mla.tilegym_mla import TileGymMla
    from cute_mla.torch_reference import TorchReference

    p = MlaDecodeProblem(b=2, t=128, kv_dtype=FP8, kv_scale="per_block")
    for cls in (
        FlashInferMla,
        TileGymMla,
        CutlassMlaDecodeFp16,
        CutlassMlaDecodeFp8,
    ):
        plan = cls()
        with pytest.raises(ShapeError, match="takes a cache of the --dtype only") as e:
            plan.supports(p)
        assert "\n" not in str(e.value)
        assert not any(q.kv_fp8 for q in plan.check_problems())
    TorchReference().supports(p)
    MlaDecodeSm90().supports(p)  # dequantises on chip (packages/mla/tests/test_mla_decode_sm90.py)
    # the CUTLASS fp8 example's problem is --dtype float8_e4m3fn (Q, cache, O in e4m3): still
    # its own, and still refused by the others as before
    all_fp8 = MlaDecodeProblem(b=2, t=128, dtype=FP8)
    assert not all_fp8.kv_fp8
    CutlassMlaDecodeFp8().supports(all_fp8)


# -- FLOPs and bytes -------------------------------------------------------------------------


def test_bytes_by_hand():
    """h=64, B=128, T=4096, s=1 (the memory-bound row of issue 11).

    bf16: KV 128*4096*1152 = 603979776 B. FP8 per_token: 512 B latent + 64*2 B rope + 4 B
    scale = 644 B per token, KV 128*4096*644 = 337641472 B (0.559x: the latent half halves,
    the rope half does not, the scales add 4 B). Q + O + LSE (not quantised):
    128*64*(576*2 + 512*2 + 4) = 17858560 B. Whole problem: 621838336 -> 355500032 B (0.572x).
    per_block 128 (FlashMLA's 656-byte row): 512 + 128 + 16 = 656 B, 343932928 B of KV.
    """
    p16 = MlaDecodeProblem(b=128, t=4096, h=64)
    p8 = p16.replace(kv_dtype=FP8)
    pb = p16.replace(kv_dtype=FP8, kv_scale="per_block")
    assert (p16.kv_bytes_per_token(), p8.kv_bytes_per_token(), pb.kv_bytes_per_token()) == (
        1152,
        644,
        656,
    )
    f16, b16 = W.flops_bytes(p16)
    f8, b8 = W.flops_bytes(p8)
    fb, bb = W.flops_bytes(pb)
    qol = 128 * 64 * (576 * 2 + 512 * 2 + 4)
    assert qol == 17_858_560
    assert b16 == 128 * 4096 * 1152 + qol == 621_838_336
    assert b8 == 128 * 4096 * 644 + qol == 355_500_032
    assert bb == 128 * 4096 * 656 + qol == 361_791_488
    assert round(b8 / b16, 3) == 0.572 and round(644 / 1152, 3) == 0.559
    assert f16 == f8 == fb == 128 * 4096 * 2 * 64 * 1088  # FLOPs unchanged
    assert W.compute_dtype(p8) == "bfloat16"  # the MMAs stay bf16
    # fp16 rope, per_block 64: 512 + 128 + 32
    assert (
        p16.replace(
            dtype="float16", kv_dtype=FP8, kv_scale="per_block", kv_block=64
        ).kv_bytes_per_token()
        == 672
    )


def test_fp8_check_problems():
    fp8 = [p for p in W.check_problems() if p.kv_fp8]
    assert {p.kv_scale for p in fp8} == {"per_token", "per_block"}
    assert any(p.varlen and 0 in p.lengths() for p in fp8)
    assert any(p.s == 2 and p.h == 64 for p in fp8)
    assert all(sum(p.lengths()) <= 8 * 1024 for p in fp8)
    assert not any(p.kv_fp8 for p in W.profile_problems())  # the issue-9 table is unchanged


# -- the quantisation error, for the record ---------------------------------------------------


def test_quantisation_error_for_the_record(capsys):
    """What the check does *not* charge a kernel: the FP8 problem's reference against the
    bf16 problem's (same seed, same Q, same cache before quantisation). The numbers are quoted
    in the workload's docstring; they exceed bf16's bounds, which is why the check compares
    against the dequantised cache."""
    rows = []
    for kw in (dict(b=4, t=1024), dict(b=4, t=1024, h=64), dict(b=8, t=777, varlen=True)):
        p16 = MlaDecodeProblem(**kw)
        x16 = inputs_for(p16, seed=0)
        r16 = W.reference(p16, x16)
        for scale in ("per_token", "per_block"):
            p8 = p16.replace(kv_dtype=FP8, kv_scale=scale)
            x8 = inputs_for(p8, seed=0)
            r8 = W.reference(p8, x8)
            o = compare("o", r8["o"], r16["o"])
            lse = compare("lse", r8["lse"], r16["lse"], W.tolerance(p16, "lse"))
            lat = x16["kv_cache"][..., :512].float()
            deq = dequantize_kv(p8, x8["kv_cache"], x8["kv_scales"], x8["kv_rope"])[..., :512]
            fin = torch.isfinite(lat)
            k_rel = float((deq - lat)[fin].norm() / lat[fin].norm())
            rows.append((p8.label(), k_rel, o.rel_norm, o.max_abs / o.ref_max_abs, lse.rel_norm))
            # a correct FP8 kernel's output (the lowp baseline) judged against the bf16
            # problem's reference with bf16's bounds fails: the quantisation error alone
            low8 = W.reference_lowp(p8, x8)["o"].to(torch.bfloat16)
            assert not compare("o", low8, r16["o"], W.tolerance(p16, "o")).passed
            assert compare("o", low8, r8["o"], W.tolerance(p8, "o")).passed
    with capsys.disabled():
        print("\nFP8 latent cache vs bf16 cache (reference vs reference, CPU, seed 0):")
        print("problem | K latent rel_norm | O rel_norm | O max_abs/max|O| | LSE rel_norm")
        for r in rows:
            print(f"{r[0]} | {r[1]:.3e} | {r[2]:.3e} | {r[3]:.3e} | {r[4]:.3e}")
    for _, k_rel, o_rel, o_abs, lse_rel in rows:
        assert 2.5e-2 < k_rel < 2.8e-2  # e4m3's 3-bit mantissa
        assert 2.8e-2 < o_rel < 3.2e-2 and 3.2e-2 < o_abs < 4.4e-2
        assert o_rel > tolerance_for("bfloat16").rel_norm
        assert 1.8e-4 < lse_rel < 2.5e-4 and lse_rel > 1e-4
