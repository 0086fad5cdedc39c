"""The attention workloads on the CPU: the forward reference against a deliberately naive loop,
the mask rules (bottom-right causal, windows, refusals), FLOPs/bytes checked by hand; the
backward's autograd reference against the gradient formulas written out in float64, its
low-precision baseline, FLOPs/bytes, and planted faults that the check must catch (through
``KernelPlan.run_check`` itself, on CPU tensors)."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest
import torch

from kernelplan import KernelPlan, NoConfig, Target
from kernelplan.check import compare
from kernelplan.kernel import TorchKernel
from kernelplan.workload import ShapeError
from kernelplan.workloads import get
from kernelplan.workloads.attention import ATTENTION_BWD, ATTENTION_FWD, AttentionProblem

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


def test_records_show_derived_values_and_the_cli_rederives_them():
    """A problem's dict (what records and compile keys hold) has the real sk, h_kv, d_v and
    softmax_scale; the command line, which leaves fields declared None out of an
    implementation's defaults, derives them again from the flags given (``--sq 1024`` alone
    gives sk = 1024, not the default problem's 4096)."""
    from kernelplan.cli import parse

    d = P().to_dict()
    assert (d["sk"], d["h_kv"], d["d_v"]) == (4096, 32, 128)
    assert d["softmax_scale"] == pytest.approx(128**-0.5)
    assert P.from_dict(d) == P()  # a record's problem reads back to the same problem
    plan = _CpuPlan()
    q, _, _ = parse(plan, ["--sq", "1024", "--d_qk", "64"])
    assert (q.sk, q.d_v, q.softmax_scale) == (1024, 64, 0.125)
    q, _, _ = parse(plan, ["--sq", "1024", "--sk", "2048"])
    assert q.sk == 2048  # given: kept
    assert "sk=1024" in P(sq=1024).label()


# -- backward ------------------------------------------------------------------------------------
B = ATTENTION_BWD


def bwd_inputs(p: AttentionProblem, seed: int = 0) -> dict:
    return B.prepare_inputs(p, B.tensor_specs(p), seed, device="cpu")


def naive_bwd(p: AttentionProblem, x: dict) -> dict:
    """float64, the gradient formulas written out with the visibility rule of :func:`naive`:
    P = softmax(S) over visible keys, dV = P^T dO, dS = P * (dO V^T - rowsum(dO * O)),
    dQ = scale dS K, dK = scale dS^T Q, dK/dV summed over each KV head's query heads."""
    q, k, v, do = (x[n].double() for n in ("q", "k", "v", "do"))
    dq = torch.zeros(p.b, p.sq, p.h_q, p.d_qk, dtype=torch.float64)
    dk = torch.zeros(p.b, p.sk, p.h_kv, p.d_qk, dtype=torch.float64)
    dv = torch.zeros(p.b, p.sk, p.h_kv, p.d_v, dtype=torch.float64)
    r_idx = torch.arange(p.sq).view(-1, 1) + (p.sk - p.sq)
    k_idx = torch.arange(p.sk).view(1, -1)
    vis = torch.ones(p.sq, p.sk, dtype=torch.bool)
    right = 0 if p.causal else (None if p.window_right < 0 else p.window_right)
    if right is not None:
        vis &= k_idx <= r_idx + right
    if p.window_left >= 0:
        vis &= k_idx >= r_idx - p.window_left
    for i in range(p.b):
        for j in range(p.h_q):
            g = j // (p.h_q // p.h_kv)
            s = (q[i, :, j] @ k[i, :, g].T) * p.scale()
            s = s.masked_fill(~vis, float("-inf"))
            pr = torch.softmax(s, dim=-1)
            o = pr @ v[i, :, g]
            dv[i, :, g] += pr.T @ do[i, :, j]
            ds = pr * (do[i, :, j] @ v[i, :, g].T - (do[i, :, j] * o).sum(-1, keepdim=True))
            dq[i, :, j] = ds @ k[i, :, g] * p.scale()
            dk[i, :, g] += ds.T @ q[i, :, j] * p.scale()
    return {"dq": dq, "dk": dk, "dv": dv}


@pytest.mark.parametrize("name", list(CASES))
def test_bwd_reference_matches_the_formulas(name):
    p = CASES[name]
    x = bwd_inputs(p, seed=5)
    ref = B.reference(p, x)
    want = naive_bwd(p, x)
    for n in ("dq", "dk", "dv"):
        assert ref[n].shape == B.tensor_specs(p)[n].shape
        torch.testing.assert_close(ref[n].double(), want[n], rtol=1e-5, atol=1e-5)


def test_bwd_inputs_carry_the_forward():
    """O and LSE are the forward reference's (O rounded to the dtype), so a kernel that reads
    them gets a consistent forward; Q, K, V are the forward's draws for the same seed."""
    p = P(b=1, sq=12, sk=20, h_q=4, h_kv=2, d_qk=8, causal=True)
    x = bwd_inputs(p, seed=9)
    f = W.reference(p, x)
    assert torch.equal(x["o"], f["o"].to(x["o"].dtype))
    assert torch.equal(x["lse"], f["lse"])
    assert torch.equal(x["q"], inputs_for(p, seed=9)["q"])
    assert get("attention_bwd") is B


def test_bwd_reference_chunks_heads(monkeypatch):
    import kernelplan.workloads.attention as att

    p = P(b=2, sq=9, sk=13, h_q=6, h_kv=2, d_qk=8, causal=True)
    x = bwd_inputs(p)
    whole, whole_low = B.reference(p, x), B.reference_lowp(p, x)
    monkeypatch.setattr(att, "REF_CHUNK_ELEMS", 2 * 9 * 13)  # 2 heads per chunk
    parts, parts_low = B.reference(p, x), B.reference_lowp(p, x)
    for n in ("dq", "dk", "dv"):
        torch.testing.assert_close(whole[n], parts[n])
        torch.testing.assert_close(whole_low[n], parts_low[n])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_bwd_lowp_baseline_rounds_and_passes(dtype):
    p = P(b=1, sq=64, sk=96, h_q=4, h_kv=2, d_qk=32, causal=True, dtype=dtype)
    x = bwd_inputs(p)
    ref, low = B.reference(p, x), B.reference_lowp(p, x)
    for n in ("dq", "dk", "dv"):
        assert not torch.equal(ref[n], low[n])
        lp = low[n].to(getattr(torch, dtype))
        assert torch.equal(low[n], lp.float())
        r = compare(n, lp, ref[n], B.tolerance(p, n))  # within the dtype's own bound
        assert r.passed, r.line()


def test_bwd_flops_are_2_5x_forward_counted_exactly():
    for p in (
        P(b=2, sq=256, h_q=4, d_qk=64),
        P(b=1, sq=300, h_q=4, d_qk=128, causal=True),
        P(b=1, sq=100, sk=333, h_q=8, h_kv=2, d_qk=64, causal=True, window_left=50),
    ):
        assert B.flops_bytes(p)[0] == 2.5 * W.flops_bytes(p)[0]
    p = P(b=1, sq=1024, h_q=1, d_qk=64, causal=True)
    assert B.flops_bytes(p)[0] == 2 * (1024 * 1025 // 2) * (3 * 64 + 2 * 64)
    # d_qk != d_v: five matmuls, three over d_qk (S, dQ, dK) and two over d_v (dP, dV)
    p = P(b=1, sq=4, h_q=1, d_qk=8, d_v=4)
    assert B.flops_bytes(p)[0] == 2 * 16 * (3 * 8 + 2 * 4)


def test_bwd_bytes():
    p = P(b=1, sq=6, sk=10, h_q=4, h_kv=2, d_qk=8, d_v=4, dtype="float16")
    q, kv, o, lse = 6 * 4 * 8, 10 * 2 * (8 + 4), 6 * 4 * 4, 4 * 6 * 4
    # read Q, K, V, O, dO (2 B) and LSE (4 B); write dQ, dK, dV (2 B)
    assert B.flops_bytes(p)[1] == (2 * q + 2 * kv + 2 * o) * 2 + lse


# -- planted faults through KernelPlan.run_check, on the CPU -------------------------------------
class _CpuPlan(KernelPlan):
    """A stand-in implementation on CPU tensors: the "kernel" writes the workload's
    low-precision baseline into the outputs (what a correct flash kernel would produce)."""

    name: ClassVar[str] = "cpu_lowp"
    package: ClassVar[str] = "test"
    workload = ATTENTION_FWD

    def prepare_inputs(self, problem, seed, device="cuda"):
        return super().prepare_inputs(problem, seed, device="cpu")

    def plan(self, problem, config, target):
        def fn(t):
            low = self.workload.reference_lowp(problem, t)
            for n, v in low.items():
                t[n].copy_(v)

        return TorchKernel(self.name, fn)


class _CpuBwdPlan(_CpuPlan):
    name: ClassVar[str] = "cpu_lowp_bwd"
    workload = ATTENTION_BWD


@pytest.fixture
def no_cuda_sync(monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)


FAULT_CASES = [
    P(b=1, sq=64, sk=80, h_q=4, h_kv=2, d_qk=32, causal=True),
    P(b=2, sq=48, h_q=2, d_qk=16, dtype="float16"),
]


@pytest.mark.parametrize("plan_cls", [_CpuBwdPlan, _CpuPlan], ids=["bwd", "fwd"])
@pytest.mark.parametrize("p", FAULT_CASES, ids=["bf16-causal-gqa", "fp16"])
def test_planted_faults_fail_the_check(no_cuda_sync, plan_cls, p):
    """The correct outputs pass; ``perturb`` (one element of the FIRST output, dq for the
    backward, moved by 4x its tolerance) and ``skip-launch`` (outputs left poisoned) fail."""
    plan = plan_cls()
    target = Target.resolve("sm_90a")
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1)
    assert ok, [r.line() for r in res]
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1, fault="perturb")
    assert not ok
    first = plan.output_names(p)[0]
    assert [r.name for r in res if not r.passed] == [first]
    assert first == ("dq" if plan.workload is B else "o")
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1, fault="skip-launch")
    assert not ok and not any(r.passed for r in res)


class _CpuFirstLaunchOnlyPlan(_CpuPlan):
    """A kernel that keeps state between launches and gets it wrong: only its first launch
    writes the outputs (as a split kernel whose arrival counter is never reset would)."""

    name: ClassVar[str] = "cpu_first_launch_only"

    def plan(self, problem, config, target):
        inner = super().plan(problem, config, target).fn
        done = []

        def fn(t):
            if not done:
                inner(t)
                done.append(1)

        return TorchKernel(self.name, fn)


def test_check_launches_catches_state_kept_between_launches(no_cuda_sync):
    """``launches=2`` poisons the outputs again before the second launch: a kernel that
    writes only on its first launch passes one launch and fails two; a correct kernel passes
    both ways; the info names the launches; 0 launches is refused."""
    p = FAULT_CASES[1]
    target = Target.resolve("sm_90a")
    ok, res, info = _CpuFirstLaunchOnlyPlan().run_check(p, NoConfig(), target=target, seed=1)
    assert ok and info["launches"] == 1
    ok, res, info = _CpuFirstLaunchOnlyPlan().run_check(
        p, NoConfig(), target=target, seed=1, launches=2
    )
    assert not ok and not any(r.passed for r in res) and info["launches"] == 2
    ok, res, _ = _CpuPlan().run_check(p, NoConfig(), target=target, seed=1, launches=3)
    assert ok, [r.line() for r in res]
    with pytest.raises(ValueError, match="launches must be at least 1"):
        _CpuPlan().run_check(p, NoConfig(), target=target, seed=1, launches=0)


class _CpuStridedOutPlan(_CpuPlan):
    """As _CpuPlan, with O a strided view (b, h, s, d storage seen as (b, s, h, d)), as the
    SDPA peers hand it back."""

    name: ClassVar[str] = "cpu_lowp_strided"

    def prepare_inputs(self, problem, seed, device="cuda"):
        t = super().prepare_inputs(problem, seed, device)
        o = t["o"]
        view = torch.empty(
            (o.shape[0], o.shape[2], o.shape[1], o.shape[3]), dtype=o.dtype
        ).transpose(1, 2)
        view.copy_(o)
        t["o"] = view
        return t


def test_planted_perturb_on_a_strided_output_fails_the_check(no_cuda_sync):
    """``perturb`` moves one element of an output that is not contiguous (it used to call
    ``view(-1)`` and crash): the check fails on that output instead."""
    plan = _CpuStridedOutPlan()
    p = FAULT_CASES[0]
    target = Target.resolve("sm_90a")
    assert not plan.prepare_inputs(p, 1)["o"].is_contiguous()
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1)
    assert ok, [r.line() for r in res]
    ok, res, _ = plan.run_check(p, NoConfig(), target=target, seed=1, fault="perturb")
    assert not ok and [r.name for r in res if not r.passed] == ["o"]
