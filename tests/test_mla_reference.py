"""The mla_decode workload on the CPU: its reference against a deliberately naive second
implementation, the NaN pages, input validation, and FLOPs/bytes checked by hand."""

from __future__ import annotations

import math

import pytest
import torch

from kernelplan.check import compare
from kernelplan.roofline import PEAKS
from kernelplan.workload import ShapeError
from kernelplan.workloads import get
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem

W = MLA_DECODE


def inputs_for(p: MlaDecodeProblem, seed: int = 0) -> dict:
    return W.prepare_inputs(p, W.tensor_specs(p), seed, device="cpu")


def naive(p: MlaDecodeProblem, x: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """float64, one token at a time: each key row fetched on its own through the page table,
    each (sequence, query, head) a scalar two-pass softmax. Shares nothing with the workload's
    reference but the inputs."""
    q, cache, table, seqlens = x["q"], x["kv_cache"], x["page_table"], x["seqlens"]
    o = torch.zeros(p.b, p.s, p.h, p.d_latent, dtype=torch.float64)
    lse = torch.full((p.b, p.s, p.h), -math.inf, dtype=torch.float64)
    for i in range(p.b):
        n = int(seqlens[i])
        keys = []
        for k in range(n):
            page = int(table[i, k // p.page])
            keys.append(cache[page, k % p.page].double())
        for r in range(p.s):
            # with causal and s > 1, query r sits at position n - s + r
            n_seen = n - p.s + r + 1 if p.causal and p.s > 1 else n
            n_seen = max(0, min(n, n_seen))
            for j in range(p.h):
                qv = q[i, r, j].double()
                scores = [float(qv @ keys[k]) * p.scale() for k in range(n_seen)]
                if not scores:
                    continue
                m = max(scores)
                weights = [math.exp(sc - m) for sc in scores]
                total = sum(weights)
                acc = torch.zeros(p.d_latent, dtype=torch.float64)
                for w, key in zip(weights, keys[:n_seen], strict=True):
                    acc += w * key[: p.d_latent]
                o[i, r, j] = acc / total
                lse[i, r, j] = m + math.log(total)
    return o, lse


SMALL = dict(d_latent=16, d_rope=8)  # narrow rows keep the naive loops fast
CASES = {
    # variable lengths with a zero, partly filled last pages (page 8)
    "varlen-explicit": MlaDecodeProblem(b=5, h=3, page=8, seqlens=(13, 0, 8, 1, 21), **SMALL),
    # the varlen draw (b=8 leaves one sequence empty), s=2 causal
    "varlen-draw-s2": MlaDecodeProblem(b=8, s=2, t=11, h=2, page=4, varlen=True, **SMALL),
    # s=3 causal with a sequence shorter than s: its first query sees nothing
    "s3-short": MlaDecodeProblem(b=3, s=3, h=2, page=4, seqlens=(2, 9, 5), **SMALL),
    "s3-noncausal": MlaDecodeProblem(
        b=3, s=3, h=2, page=4, seqlens=(2, 9, 5), causal=False, **SMALL
    ),
    # the real head dims (576 = 512 + 64), fp16, T not a multiple of the page
    "full-dims": MlaDecodeProblem(b=2, h=2, t=70, page=64, dtype="float16"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reference_matches_naive(name):
    p = CASES[name]
    x = inputs_for(p, seed=3)
    ref = W.reference(p, x)
    o_n, lse_n = naive(p, x)
    assert ref["o"].dtype == torch.float32 and ref["o"].shape == (p.b, p.s, p.h, p.d_latent)
    assert ref["lse"].dtype == torch.float32 and ref["lse"].shape == (p.b, p.s, p.h)
    torch.testing.assert_close(ref["o"].double(), o_n, rtol=1e-5, atol=1e-5)
    empty = torch.isinf(lse_n)
    assert torch.equal(torch.isinf(ref["lse"]), empty)
    assert (ref["lse"][empty] < 0).all() and (ref["o"][empty] == 0).all()  # -inf, o = 0
    torch.testing.assert_close(ref["lse"].double()[~empty], lse_n[~empty], rtol=1e-6, atol=1e-6)
    assert torch.isfinite(ref["o"]).all()


def test_zero_and_short_rows_follow_the_convention():
    p = CASES["s3-short"]  # length 2 < s = 3: query 0 sees no key; query 1 sees key 0
    ref = W.reference(p, inputs_for(p))
    assert torch.isneginf(ref["lse"][0, 0]).all() and (ref["o"][0, 0] == 0).all()
    assert torch.isfinite(ref["lse"][0, 1:]).all()
    p = CASES["varlen-explicit"]  # sequence 1 is empty
    ref = W.reference(p, inputs_for(p))
    assert torch.isneginf(ref["lse"][1]).all() and (ref["o"][1] == 0).all()


def test_inputs_layout_and_nan_slots():
    p = CASES["varlen-explicit"]
    x = inputs_for(p, seed=5)
    table, cache = x["page_table"], x["kv_cache"]
    assert table.dtype == torch.int32 and table.shape == (p.b, p.table_pages())
    assert x["seqlens"].tolist() == list(p.lengths())
    assert p.pages_total() == p.pages_needed() + 4  # the default spare pages
    owned = {}
    for i, n in enumerate(p.lengths()):
        npg = -(-n // p.page)
        for k in range(npg):
            pg = int(table[i, k])
            assert pg not in owned, "a page shared by two sequences"
            owned[pg] = (i, k)
            filled = min(p.page, n - k * p.page)
            assert torch.isfinite(cache[pg, :filled].float()).all()
            assert torch.isnan(cache[pg, filled:].float()).all()  # the last page's tail
        for k in range(npg, p.table_pages()):  # past the end: a spare page, all NaN
            pg = int(table[i, k])
            assert 0 <= pg < p.pages_total() and pg not in owned
            assert torch.isnan(cache[pg].float()).all()
    spare = set(range(p.pages_total())) - set(owned)
    assert len(spare) == 4 and all(torch.isnan(cache[pg].float()).all() for pg in spare)
    used = [int(table[i, k]) for i, k in owned.values()]
    assert used != sorted(used)  # a permutation, not the identity
    # the table depends on the seed; the lengths only on the problem
    assert not torch.equal(inputs_for(p, seed=6)["page_table"], table)
    assert torch.equal(inputs_for(p, seed=5)["page_table"], table)


def test_spiky_keys_scale_a_few_cache_rows_and_nothing_else():
    """``init="spiky"``: the same Q, page table and NaN slots as ``randn`` at the same seed;
    about one cache token in SPIKE_EVERY has its whole row scaled by SPIKE_SCALE, and a
    query row's running maximum of S (log2 units) then jumps by more than 2^8 after the first
    page in some rows (what steps 86-87 must rescale for) but not in most."""
    from kernelplan.workloads.mla_decode import SPIKE_EVERY, SPIKE_SCALE

    p = MlaDecodeProblem(b=4, t=1000)
    sp = MlaDecodeProblem(b=4, t=1000, init="spiky")
    assert sp.label() != p.label() and "init=spiky" in sp.label()
    a, b = inputs_for(p, seed=3), inputs_for(sp, seed=3)
    assert torch.equal(a["q"], b["q"]) and torch.equal(a["page_table"], b["page_table"])
    ca, cb = a["kv_cache"].float(), b["kv_cache"].float()
    assert torch.equal(torch.isnan(ca), torch.isnan(cb))
    fin = ~torch.isnan(ca[..., 0])
    same = (ca[fin] == cb[fin]).all(-1)
    scaled = torch.isclose(cb[fin], ca[fin] * SPIKE_SCALE, rtol=1e-2, atol=1e-2).all(-1)
    assert (same | scaled).all()  # a row is either untouched or scaled whole
    n, k = int(fin.sum()), int((~same).sum())
    assert 0.5 * n / SPIKE_EVERY < k < 2 * n / SPIKE_EVERY, (k, n)
    # the running max of S (log2 domain, scaled) jumps by > 2^8 at some later page
    q = b["q"].float()[:, 0]
    jumps = rows = 0
    for i, n_i in enumerate(sp.lengths()):
        pages = b["page_table"][i, : -(-n_i // sp.page)].long()
        keys = cb[pages].reshape(-1, sp.d_qk)[:n_i]  # the sequence's tokens, no NaN slot
        s = (q[i] @ keys.T) * sp.scale() * 1.4426950408889634  # (h, n_i)
        page_max = torch.stack([c.amax(-1) for c in s.split(sp.page, dim=-1)], -1)
        m = page_max.cummax(-1).values
        jumps += int(((m[:, 1:] - m[:, :-1]) > 8).any(-1).sum())
        rows += m.shape[0]
    assert 0 < jumps < rows, (jumps, rows)


def test_nan_pages_never_reach_the_reference():
    p = CASES["varlen-draw-s2"]
    x = inputs_for(p, seed=1)
    assert torch.isnan(x["kv_cache"]).any()
    ref = W.reference(p, x)
    low = W.reference_lowp(p, x)
    for out in (ref, low):
        assert not torch.isnan(out["o"]).any() and not torch.isnan(out["lse"]).any()
    # whatever the slots past the end hold, the result is the same
    y = dict(x, kv_cache=torch.nan_to_num(x["kv_cache"], nan=1e4))
    ref2 = W.reference(p, y)
    assert torch.equal(ref["o"], ref2["o"]) and torch.equal(ref["lse"], ref2["lse"])


def test_lowp_baseline_and_the_check():
    p = MlaDecodeProblem(b=3, h=8, t=150, varlen=True)  # bf16, real dims
    x = inputs_for(p, seed=2)
    ref, low = W.reference(p, x), W.reference_lowp(p, x)
    assert not torch.equal(ref["o"], low["o"])  # P and O were rounded
    assert torch.equal(ref["lse"], low["lse"])
    r = compare("o", low["o"].to(torch.bfloat16), ref["o"], baseline=low["o"])
    assert r.passed, r.line()
    # the same output through a page table with one entry moved to another sequence's page
    bad = dict(x, page_table=x["page_table"].clone())
    i = max(range(p.b), key=lambda k: p.lengths()[k])
    bad["page_table"][i, 0] = (
        x["page_table"][(i + 1) % p.b, 0]
        if p.lengths()[(i + 1) % p.b]
        else x["page_table"][(i + 2) % p.b, 0]
    )
    wrong = W.reference_lowp(p, bad)["o"].to(torch.bfloat16)
    r = compare("o", wrong, ref["o"], baseline=low["o"])
    assert not r.passed, r.line()


def test_torch_reference_peer_passes_on_cpu():
    from cute_mla.torch_reference import TorchReference

    plan = TorchReference()
    for p in (
        CASES["varlen-draw-s2"],
        CASES["s3-short"],
        MlaDecodeProblem(b=3, h=8, t=150, varlen=True),
    ):
        x = inputs_for(p, seed=4)
        x["o"].fill_(float("nan"))
        x["lse"].fill_(float("nan"))
        kernel = plan.kernel(p, plan.default_config(p), plan.target("sm_90a"))
        kernel.bind(x)()
        ref, low = W.reference(p, x), W.reference_lowp(p, x)
        for n in ("o", "lse"):
            r = compare(n, x[n], ref[n], baseline=low[n])
            assert r.passed, r.line()
        empty = torch.isneginf(ref["lse"])
        assert torch.isneginf(x["lse"][empty]).all()  # the convention, which compare skips
    with pytest.raises(ShapeError, match="fp8"):
        plan.problem(MlaDecodeProblem(b=2, t=64, dtype="float8_e4m3fn"))


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(b=0), "--b must be a positive integer"),
        (dict(t=0), "T=0 for every sequence: nothing to decode"),
        (dict(b=3, seqlens=(0, 0, 0)), "T=0 for every sequence"),
        (dict(b=4, t=0, varlen=True), "T=0 for every sequence"),
        (dict(h=0), "--h must be a positive integer"),
        (dict(s=0), "--s must be a positive integer"),
        (dict(page=0), "--page must be a positive integer"),
        (dict(t=-1), "--t must be an integer >= 0"),
        (dict(b=2, seqlens=(5,)), "--seqlens has 1 lengths but --b is 2"),
        (dict(b=2, seqlens=(5, -1)), "--seqlens must be non-negative"),
        (dict(b=2, seqlens=(100, 10), num_pages=2), "cache too small"),
        (dict(b=2, seqlens=(100, 10), num_pages=3), "plus 1 spare page"),
        (dict(dtype="int8"), "--dtype int8"),
        (dict(init="randint"), "--init randint: one of randn, spiky"),
        (dict(softmax_scale=0.0), "--softmax_scale must be a positive number"),
        (dict(b=1_000_000_000), "--b 1000000000: at most 16777216 sequences"),
        (dict(b=1_000_000, t=1_000_000), "the KV cache would take 1047.7 TiB"),
        (dict(b=1 << 20, t=0, h=1 << 20), "Q would take"),
    ],
)
def test_problem_validation_one_line(kw, message):
    with pytest.raises(ShapeError, match=message) as e:
        MlaDecodeProblem(**kw)
    assert "\n" not in str(e.value)


def test_validate_inputs_one_line():
    p = MlaDecodeProblem(b=2, h=2, page=4, seqlens=(9, 3), **SMALL)
    x = inputs_for(p)
    W.validate_inputs(p, x)  # what prepare_inputs draws is valid
    bad = dict(x, page_table=x["page_table"].clone())
    bad["page_table"][0, 2] = p.pages_total()  # one past the cache
    msg = r"a page table pointing outside the cache: page_table\[0, 2\]"
    with pytest.raises(ShapeError, match=msg):
        W.validate_inputs(p, bad)
    bad["page_table"][0, 2] = -1
    with pytest.raises(ShapeError, match="pointing outside the cache"):
        W.reference(p, bad)  # the reference validates first
    short = dict(x, page_table=x["page_table"][:, :2].contiguous())  # 9 tokens need 3 pages
    with pytest.raises(ShapeError, match="a length vector longer than the page table covers"):
        W.validate_inputs(p, short)
    other = dict(x, seqlens=torch.tensor([9, 4], dtype=torch.int32))
    with pytest.raises(ShapeError, match="differs from the problem's lengths"):
        W.validate_inputs(p, other)
    wrong_q = dict(x, q=x["q"][:, :, :1])
    with pytest.raises(ShapeError, match="q has shape"):
        W.validate_inputs(p, wrong_q)
    # entries past a sequence's pages are never checked (peers must not read them)
    past = dict(x, page_table=x["page_table"].clone())
    past["page_table"][1, 2] = -1
    W.validate_inputs(p, past)


def test_flops_and_bytes_by_hand():
    """B=32, T=4096, h=128, s=1, bf16 (the request's first row).

    per KV token: QK^T 2*128*576 = 147456 FLOP, PV 2*128*512 = 131072 FLOP, 278528 in all,
    against 576 * 2 B = 1152 B of cache: 278528 / 1152 = 241.78 FLOP/B. The H200's ridge is
    989.4 TFLOP/s / 4800 GB/s = 206.1 FLOP/B (kernelplan.roofline.PEAKS), so h=128 s=1 is
    compute-bound once Q, O and LSE are added too (228.3 FLOP/B); h=64 halves the FLOPs per
    byte (120.9): memory-bound.
    """
    p = MlaDecodeProblem()
    flops, nbytes = W.flops_bytes(p)
    assert flops == 32 * 4096 * 278528 == 36_507_222_016
    kv = 32 * 4096 * 1152  # 150_994_944
    q = 32 * 1 * 128 * 576 * 2  # 4_718_592
    o = 32 * 1 * 128 * 512 * 2  # 4_194_304
    lse = 32 * 1 * 128 * 4  # 16_384
    assert nbytes == kv + q + o + lse == 159_924_224
    assert round(278528 / 1152, 1) == 241.8
    assert round(flops / nbytes, 1) == 228.3
    h200 = PEAKS["H200 SXM"]
    ridge = h200["tflops"]["bfloat16"] * 1e12 / (h200["gbps"] * 1e9)
    assert round(ridge, 1) == 206.1 and flops / nbytes > ridge
    f64, b64 = W.flops_bytes(p.replace(h=64))
    assert f64 / b64 < ridge
    assert W.compute_dtype(p) == "bfloat16"


def test_causal_pair_count():
    # s=2, lengths 10 and 1: 10 + 9 pairs, then 1 + 0 (query 0 of the short one sees nothing)
    p = MlaDecodeProblem(b=2, s=2, seqlens=(10, 1))
    assert p.keys_seen(10) == 19 and p.keys_seen(1) == 1
    assert W.flops_bytes(p)[0] == 2 * 128 * 1088 * 20
    assert W.flops_bytes(p.replace(causal=False))[0] == 2 * 128 * 1088 * 22
    assert W.flops_bytes(p.replace(s=1))[0] == 2 * 128 * 1088 * 11


def test_varlen_lengths_and_derived_fields():
    p = MlaDecodeProblem(b=32, t=4096, varlen=True)
    assert p.lengths() == MlaDecodeProblem(b=32, t=4096, varlen=True).lengths()  # problem only
    assert sum(p.lengths()) == 32 * 4096 and p.lengths().count(0) == 4
    assert p.lengths() != MlaDecodeProblem(b=32, t=4096, varlen=True, varlen_seed=1).lengths()
    assert p.softmax_scale == p.scale() == 576**-0.5
    assert p.num_pages == p.pages_needed() + 4
    bigger = p.replace(t=8192)  # derived fields are derived again
    assert bigger.num_pages == bigger.pages_needed() + 4
    fixed = MlaDecodeProblem(softmax_scale=0.1).replace(b=8)
    assert fixed.softmax_scale == 0.1
    assert MlaDecodeProblem.from_dict(p.to_dict()) == p  # a record's problem round-trips
    assert get("mla_decode") is W


def test_check_and_profile_problems():
    checks = W.check_problems()
    assert any(p.varlen and 0 in p.lengths() for p in checks)
    assert any(any(n % p.page for n in p.lengths()) for p in checks)
    assert any(p.s == 2 for p in checks)
    assert any(p.init == "spiky" for p in checks)  # the moved-max branch (steps 86-87)
    assert all(sum(p.lengths()) <= 8 * 1024 for p in checks)  # small
    rows = {(p.b, p.t, p.h, p.s, p.varlen) for p in W.profile_problems()}
    assert rows == {
        (32, 4096, 128, 1, False),
        (64, 4096, 128, 1, False),
        (128, 4096, 128, 1, False),
        (32, 16384, 128, 1, False),
        (128, 16384, 128, 1, False),
        (32, 4096, 128, 2, False),
        (128, 4096, 16, 1, False),
        (128, 4096, 64, 1, False),
        (32, 4096, 128, 1, True),
    }
