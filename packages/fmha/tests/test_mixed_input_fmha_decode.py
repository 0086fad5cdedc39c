"""fmha/mixed_input_fmha_decode on the CPU: registration, the quantised K/V of each type
(int8, int4 packed, fp8 e4m3) and their dequantisation, the reference against the workload's
on the dequantised K/V, the split count, the bytes, the one-line refusals, and a compile for
sm_100a with fake tensors (skipped without the CUTLASS sources)."""

from __future__ import annotations

import pytest

from kernelplan import ShapeError
from kernelplan.testing import needs_sources

adapter = pytest.importorskip(
    "cute_fmha.mixed_input_fmha_decode.mixed_input_fmha_decode",
    reason="cute_fmha is not installed: run `uv sync --all-packages`",
)


def plan():
    return adapter.MixedInputFmhaDecode()


def test_registered():
    from cute_fmha import KERNELS

    assert KERNELS["mixed_input_fmha_decode"] == f"{adapter.__name__}:MixedInputFmhaDecode"


def test_pack_int4_round_trip():
    import torch
    from cute_fmha.mixed_input_prefill import pack_int4, unpack_int4

    v = torch.arange(-8, 8, dtype=torch.int32).repeat(3, 2)  # (3, 32)
    packed = pack_int4(v)
    assert packed.dtype == torch.uint8 and packed.shape == (3, 16)
    assert int(packed[0, 0]) == ((-7) & 0xF) << 4 | ((-8) & 0xF)  # even element: low nibble
    assert torch.equal(unpack_int4(packed), v)


@pytest.mark.parametrize("kv, step", [("int8", 1 / 127), ("int4", 1 / 7), ("float8_e4m3fn", 1 / 8)])
def test_quantised_kv_and_reference(kv, step):
    import torch
    from cute_fmha.mixed_input_prefill import dequantise

    pl = plan()
    p = pl.problem(b=2, sq=1, sk=256, h_q=8, h_kv=2, d_qk=256, kv_dtype=kv, scale_granularity=128)
    x = pl.prepare_inputs(p, seed=3, device="cpu")
    specs = pl.tensor_specs(p)
    for n, s in specs.items():
        assert tuple(x[n].shape) == s.shape and x[n].dtype == getattr(torch, s.dtype), n
    width = 128 if kv == "int4" else 256
    assert x["k"].shape == (2, 2, 256, width) and x["scale_k"].shape == (2, 2, 256, 2)
    assert specs["k"].element == ("Int4" if kv == "int4" else None)
    assert torch.isneginf(x["m"]).all() and torch.isneginf(x["m_partial"]).all()
    assert not x["o_partial"].any() and not x["l_partial"].any()
    w = pl.workload.prepare_inputs(p, pl.workload.tensor_specs(p), 3, "cpu")
    assert torch.equal(x["q"], w["q"])  # Q is the workload's own storage
    k = dequantise(x["k"], x["scale_k"], 128)
    # per-block error: at most a rounding step of the block's largest value (fp8: 3 mantissa
    # bits, a relative step of 1/8 at most), plus the bf16 scale's own rounding
    blocks = w["k"].float().reshape(2, 256, 2, 2, 128)
    err = (k - w["k"].float()).reshape(2, 256, 2, 2, 128).abs().amax(-1)
    assert (err <= blocks.abs().amax(-1) * step * 1.01).all()
    ref = pl.reference(p, x)
    direct = pl.workload.reference(
        p, {"q": x["q"], "k": k, "v": dequantise(x["v"], x["scale_v"], 128)}
    )
    assert ref["o"].shape == (2, 1, 8, 256) and ref["lse"].shape == (2, 8, 1)
    assert torch.equal(ref["o"], direct["o"]) and torch.equal(ref["lse"], direct["lse"])
    lowp = pl.reference_lowp(p, x)["o"]
    assert (lowp - ref["o"]).abs().max() < 0.02


def test_causal_is_no_mask_at_one_query():
    import torch

    pl = plan()
    kw = dict(b=1, sq=1, sk=384, h_q=4, h_kv=4, d_qk=128, scale_granularity=128)
    a, b = pl.problem(**kw), pl.problem(**kw, causal=True)
    x = pl.prepare_inputs(a, seed=1, device="cpu")
    assert torch.equal(pl.reference(a, x)["o"], pl.reference(b, x)["o"])


def test_check_problems_taken_and_config_rules():
    from kernelplan.device import Target

    pl = plan()
    probs = pl.check_problems()
    assert probs[0] == pl.default_problem() and len(probs) >= 5
    assert {p.kv_dtype for p in probs} == {"int8", "int4", "float8_e4m3fn"}
    for p in probs:
        pl.supports_config(p, pl.default_config(p))
    b200 = Target("sm_100a", 148)
    cfg = adapter.MixedInputDecodeConfig()
    P = adapter.MixedInputAttentionProblem
    big = P(b=1, sq=1, sk=8192, h_q=32, h_kv=4, d_qk=512, scale_granularity=512)
    assert pl.kv_splits(big, cfg, b200)[0] == 148 // 4  # one wave
    batch = P(b=8, sq=1, sk=8192, h_q=32, h_kv=4, d_qk=512, scale_granularity=512)
    assert pl.kv_splits(batch, cfg, b200)[0] == 9  # upstream's two-wave special case
    short = P(b=1, sq=1, sk=512, h_q=32, h_kv=4, d_qk=512, scale_granularity=512)
    n, how = pl.kv_splits(short, cfg, b200)
    assert n == 4 and "lowered" in how
    # convert warpgroups (upstream's rule) and the head tile
    i4 = P(b=1, sq=1, sk=512, h_q=32, h_kv=4, d_qk=512, kv_dtype="int4", scale_granularity=512)
    assert pl._convert_warpgroups(i4, cfg) == 4 and pl._head_tile(i4, cfg) == 8
    mqa = P(sq=1, sk=128, h_q=64, h_kv=1, d_qk=128, scale_granularity=128)
    assert pl._head_tile(mqa, cfg) == 32
    # int4 bytes: half a byte an element
    f8, b8 = pl.flops_bytes(short)
    _, b4 = pl.flops_bytes(i4)
    kv_elems = 2 * 4 * 512 * 512
    assert b8 - b4 == kv_elems / 2 and f8 == 4 * 32 * 512 * 512


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(sq=2, sk=1024), "--sq 1"),
        (dict(sk=1000), "multiple of 128"),
        (dict(sk=1024, d_qk=96, scale_granularity=96), "multiple of 64"),
        (dict(sk=1024, d_qk=192, scale_granularity=192, kv_dtype="int4"), "multiple of 128"),
        (dict(sk=1024, d_qk=128, scale_granularity=64), "multiple of 128"),
        (dict(sk=1024, d_qk=128, scale_granularity=100), "does not divide"),
        (dict(sk=1024, d_qk=128, d_v=64, scale_granularity=64), "one head dim"),
        (dict(sk=1024, window_left=64), "no sliding window"),
        (dict(sk=1024, dtype="float32"), "takes dtype"),
        (dict(sk=1024, h_q=32, h_kv=5), "not a multiple of --h_kv"),
        (dict(sk=1024, kv_dtype="int2"), "--kv_dtype int2"),
    ],
)
def test_refusals(kw, needle):
    base = dict(b=1, sq=1, h_q=32, h_kv=4, d_qk=512, scale_granularity=512)
    with pytest.raises(ShapeError, match=needle):
        plan().problem(**{**base, **kw})


def test_config_refusals_and_prefill_keeps_int8():
    from cute_fmha.mixed_input_fmha_prefill_d256.mixed_input_fmha_prefill_d256 import (
        MixedInputFmhaPrefillD256,
    )

    pl = plan()
    p = pl.default_problem()
    with pytest.raises(ShapeError, match="convert_warpgroups 3 must divide"):
        pl.config(p, {"convert_warpgroups": "3"})
    with pytest.raises(ShapeError, match="grouped_head_tile 12"):
        pl.config(p, {"grouped_head_tile": "12"})
    g32 = pl.problem(b=1, sq=1, sk=1024, h_q=32, h_kv=1, d_qk=512, scale_granularity=512)
    with pytest.raises(ShapeError, match="exceed the 512"):
        pl.config(g32, {"convert_warpgroups": "4"})
    with pytest.raises(ShapeError, match="takes --kv_dtype int8"):
        MixedInputFmhaPrefillD256().problem(sq=256, d_qk=256, kv_dtype="int4")


@needs_sources
def test_static_compile_for_target_sm():
    pl = plan()
    p = pl.default_problem()
    report = pl.run_static(p, pl.default_config(p), use_cache=False)
    assert report["arch"] == "sm_100a"
    assert report["registers"] > 0 and report["cubin_bytes"] > 0
    assert report["meta"]["kv_splits"] == 8 and report["meta"]["reduction_kernel"]
    assert any("reduction" in f["kernel"] for f in report["functions"])
