"""The attention_fwd workload on the CPU: its reference against a deliberately naive loop,
the mask rules (bottom-right causal, windows, refusals), and FLOPs/bytes checked by hand."""

from __future__ import annotations

import math

import pytest
import torch

from kernelplan.check import compare
from kernelplan.workload import ShapeError
from kernelplan.workloads import get
from kernelplan.workloads.attention import ATTENTION_FWD, AttentionProblem

W = ATTENTION_FWD
P = AttentionProblem


def inputs_for(p: AttentionProblem, seed: int = 0) -> dict:
    return W.prepare_inputs(p, W.tensor_specs(p), seed, device="cpu")


def naive(p: AttentionProblem, x: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """float64, one (batch, head, query) at a time, the visibility rule written out per key:
    key k is visible to query r when r + sk - sq - left <= k <= r + sk - sq + right."""
    q, k, v = x["q"].double(), x["k"].double(), x["v"].double()
    o = torch.zeros(p.b, p.sq, p.h_q, p.d_v, dtype=torch.float64)
    lse = torch.zeros(p.b, p.h_q, p.sq, dtype=torch.float64)
    right = 0 if p.causal else (None if p.window_right < 0 else p.window_right)
    left = None if p.window_left < 0 else p.window_left
    for i in range(p.b):
        for j in range(p.h_q):
            g = j // (p.h_q // p.h_kv)
            for r in range(p.sq):
                pos = r + p.sk - p.sq
                keys = [
                    kk
                    for kk in range(p.sk)
                    if (left is None or kk >= pos - left) and (right is None or kk <= pos + right)
                ]
                scores = [float(q[i, r, j] @ k[i, kk, g]) * p.scale() for kk in keys]
                m = max(scores)
                w = [math.exp(s - m) for s in scores]
                tot = sum(w)
                acc = torch.zeros(p.d_v, dtype=torch.float64)
                for wi, kk in zip(w, keys, strict=True):
                    acc += wi * v[i, kk, g]
                o[i, r, j] = acc / tot
                lse[i, j, r] = m + math.log(tot)
    return o, lse


CASES = {
    "mha": P(b=2, sq=9, h_q=2, d_qk=8),
    "sq!=sk": P(b=1, sq=5, sk=11, h_q=2, d_qk=8),
    "causal-square": P(b=1, sq=7, h_q=2, d_qk=8, causal=True),
    "causal-bottom-right": P(b=2, sq=4, sk=9, h_q=2, d_qk=8, causal=True),
    "gqa-3:1": P(b=1, sq=6, h_q=6, h_kv=2, d_qk=8, causal=True),
    "mqa-dv": P(b=1, sq=5, sk=7, h_q=3, h_kv=1, d_qk=8, d_v=4),
    "window": P(b=1, sq=10, h_q=1, d_qk=8, window_left=2, window_right=1),
    "window-causal": P(b=1, sq=8, sk=12, h_q=2, d_qk=8, causal=True, window_left=3),
    "window-right-sq>sk": P(b=1, sq=8, sk=5, h_q=1, d_qk=8, window_right=3),
    "scale": P(b=1, sq=4, h_q=1, d_qk=8, softmax_scale=0.7),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reference_matches_naive(name):
    p = CASES[name]
    x = inputs_for(p, seed=3)
    ref = W.reference(p, x)
    o, lse = naive(p, x)
    assert ref["o"].shape == (p.b, p.sq, p.h_q, p.d_v)
    assert ref["lse"].shape == (p.b, p.h_q, p.sq)
    torch.testing.assert_close(ref["o"].double(), o, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ref["lse"].double(), lse, rtol=1e-5, atol=1e-5)


def test_reference_chunks_rows(monkeypatch):
    """The row-chunked reference gives the same numbers as one chunk."""
    import kernelplan.workloads.attention as att

    p = P(b=1, sq=33, sk=40, h_q=2, d_qk=8, causal=True)
    x = inputs_for(p)
    whole = W.reference(p, x)
    monkeypatch.setattr(att, "REF_CHUNK_ELEMS", 2 * 40 * 5)  # 5 rows per chunk
    parts = W.reference(p, x)
    torch.testing.assert_close(whole["o"], parts["o"])
    torch.testing.assert_close(whole["lse"], parts["lse"])


def test_reference_reads_5d_views():
    """A Hopper-style (b, s, h_kv, group, d) view of the same memory gives the same result."""
    p = P(b=1, sq=6, h_q=4, h_kv=2, d_qk=8)
    x = inputs_for(p)
    ref = W.reference(p, x)
    y = dict(x, q=x["q"].view(1, 6, 2, 2, 8), k=x["k"].view(1, 6, 2, 1, 8))
    torch.testing.assert_close(W.reference(p, y)["o"], ref["o"])


def test_lowp_baseline_rounds_and_passes():
    p = P(b=1, sq=64, h_q=2, d_qk=32, dtype="bfloat16")
    x = inputs_for(p)
    ref, low = W.reference(p, x), W.reference_lowp(p, x)
    assert not torch.equal(ref["o"], low["o"])
    assert torch.equal(low["o"], low["o"].to(torch.bfloat16).float())
    r = compare("o", low["o"].to(torch.bfloat16), ref["o"], W.tolerance(p, "o"), low["o"])
    assert r.passed, r.line()


def test_check_fails_on_a_wrong_mask():
    """A top-left causal output (SDPA's is_causal for sq != sk) fails against the workload's
    bottom-right reference: the check can tell the two alignments apart."""
    p = P(b=1, sq=16, sk=48, h_q=2, d_qk=16, causal=True)
    x = inputs_for(p)
    ref = W.reference(p, x)
    q, k, v = (x[n].float().transpose(1, 2) for n in ("q", "k", "v"))
    top_left = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=p.scale()
    ).transpose(1, 2)
    assert not compare("o", top_left, ref["o"]).passed


# -- flops and bytes -----------------------------------------------------------------------------
def test_flops_unmasked_is_4bhsd():
    p = P(b=4, sq=4096, h_q=32, d_qk=128)
    flops, nbytes = W.flops_bytes(p)
    assert flops == 4 * 4 * 32 * 4096 * 4096 * 128
    # Q, K, V, O bf16 (4 x 4*4096*32*128*2 B = 4 x 128 MiB) + fp32 LSE (4*32*4096*4 B)
    assert nbytes == 4 * (4 * 4096 * 32 * 128 * 2) + 4 * 32 * 4096 * 4


def test_flops_causal_square_counts_the_triangle():
    p = P(b=1, sq=1024, h_q=1, d_qk=64, causal=True)
    flops, _ = W.flops_bytes(p)
    pairs = 1024 * 1025 // 2  # query r sees r + 1 keys
    assert flops == 2 * pairs * (64 + 64)
    full, _ = W.flops_bytes(p.replace(causal=False))
    assert flops / full == pytest.approx(1025 / 2048)


def test_flops_causal_bottom_right():
    # sq=2, sk=5: query 0 sits at key 3 (sees 4 keys), query 1 at key 4 (sees 5)
    p = P(b=1, sq=2, sk=5, h_q=1, d_qk=8, causal=True)
    assert p.visible_pairs() == 9
    assert W.flops_bytes(p)[0] == 2 * 9 * 16


def test_flops_window_and_gqa_bytes():
    # sq=sk=6, left 1, right 1: rows see 2,3,3,3,3,2 keys
    p = P(b=1, sq=6, h_q=4, h_kv=2, d_qk=8, d_v=4, window_left=1, window_right=1)
    assert p.visible_pairs() == 16
    flops, nbytes = W.flops_bytes(p)
    assert flops == 2 * 4 * 16 * (8 + 4)
    q, kv, o, lse = 6 * 4 * 8, 6 * 2 * (8 + 4), 6 * 4 * 4, 4 * 6 * 4
    assert nbytes == (q + kv + o) * 2 + lse


# -- problems and refusals -----------------------------------------------------------------------
def test_defaults_resolve_and_rederive():
    p = P(sq=100, h_q=8, d_qk=64)
    assert (p.sk, p.h_kv, p.d_v) == (100, 8, 64)
    assert p.softmax_scale == pytest.approx(64**-0.5)
    q = p.replace(sq=200, d_qk=128)
    assert (q.sk, q.d_v) == (200, 128) and q.softmax_scale == pytest.approx(128**-0.5)
    assert get("attention_fwd") is W


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(h_q=6, h_kv=4), "--h_q 6 is not a multiple of --h_kv 4"),
        (dict(sq=10, sk=4, causal=True), "--causal with sq 10 > sk 4"),
        (dict(sq=10, sk=4, window_right=2), "--window_right 2 with sq 10 > sk 4"),
        (dict(causal=True, window_right=3), "contradicts"),
        (dict(d_qk=0), "--d_qk must be a positive integer"),
        (dict(window_left=-2), "--window_left must be an integer >= -1"),
        (dict(dtype="float8_e4m3fn"), "--dtype float8_e4m3fn"),
        (dict(softmax_scale=-1.0), "--softmax_scale must be a positive number"),
    ],
)
def test_bad_problems_one_line(kw, needle):
    with pytest.raises(ShapeError) as e:
        P(**kw)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_sq_greater_than_sk_unmasked_is_fine():
    p = P(b=1, sq=8, sk=3, h_q=1, d_qk=8)
    assert p.visible_pairs() == 24


def test_check_and_profile_problems_are_valid():
    for p in W.check_problems():
        assert p.b * p.sq * p.h_q * p.sk <= 2 * 512 * 8 * 512  # small
    prof = W.profile_problems()
    assert len(prof) == 12
    assert {(p.d_qk, p.sq, p.b * p.sq, p.dtype) for p in prof} == {
        (d, s, 16384, "bfloat16") for d in (64, 128) for s in (1024, 4096, 16384)
    }


def test_derived_fields_follow_the_command_line():
    """Derived fields travel as None, so a CLI that starts from the defaults re-derives them
    (``--sq 1024`` alone gives sk = 1024, not the default problem's 4096)."""
    d = P().to_dict()
    assert d["sk"] is None and d["h_kv"] is None and d["softmax_scale"] is None
    q = P.from_dict({**d, "sq": 1024, "d_qk": 64})
    assert (q.sk, q.d_v, q.softmax_scale) == (1024, 64, 0.125)
    assert P(sq=8, sk=8).to_dict()["sk"] == 8  # given: kept
    assert "sk=1024" in q.label()
