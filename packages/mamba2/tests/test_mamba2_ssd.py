"""mamba2/mamba2_ssd and the SSD workload: the reference against the plain recurrence (CPU),
the chunked views, refusals as one line, and a compile for sm_100a with fake tensors."""

from __future__ import annotations

import pytest

from kernelplan import ShapeError
from kernelplan.testing import needs_sources

torch = pytest.importorskip("torch")
ssd = pytest.importorskip("kernelplan.workloads.ssd")
adapter = pytest.importorskip("cute_mamba2.mamba2_ssd.mamba2_ssd")
SsdProblem = ssd.SsdProblem


def test_registered():
    from cute_mamba2 import KERNELS

    from kernelplan.workloads import get

    assert KERNELS["mamba2_ssd"] == f"{adapter.__name__}:Mamba2Ssd"
    assert get("ssd") is ssd.SSD


def _recurrence(p, inp):
    """One step at a time, the module docstring's definition."""
    x, dt, a = inp["x"].float(), inp["dt"].float(), inp["a"].float()
    rep = p.heads // p.groups
    b = inp["b"].float().repeat_interleave(rep, 1)
    c = inp["c"].float().repeat_interleave(rep, 1)
    h = torch.zeros(p.batch, p.heads, p.head_dim, p.d_state)
    ys = []
    for t in range(p.seqlen):
        decay = torch.exp(dt[..., t] * a).view(p.batch, p.heads, 1, 1)
        xt, bt = x[..., t], b[..., t]  # (B, H, P), (B, H, N)
        h = h * decay + dt[..., t, None, None] * xt[..., :, None] * bt[..., None, :]
        ys.append(torch.einsum("bhpn,bhn->bhp", h, c[..., t]))
    y = torch.stack(ys, -1)
    if p.d_skip != "none":
        y = y + x * inp["d"].float().view(1, p.heads, -1, 1)
    return y, h


@pytest.mark.parametrize("d_skip", ["vector", "scalar", "none"])
def test_reference_is_the_recurrence(d_skip):
    p = SsdProblem(
        batch=2, seqlen=96, heads=4, groups=2, head_dim=8, d_state=16, chunk_len=32, d_skip=d_skip
    )
    inp = ssd.SSD.prepare_inputs(p, ssd.SSD.tensor_specs(p), 0, "cpu")
    assert (inp["dt"].float() > 0).all() and (inp["a"].float() < 0).all()
    y, h = _recurrence(p, inp)
    r = ssd.SSD.reference(p, inp)
    torch.testing.assert_close(r["y"], y, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(r["final_state"], h, atol=1e-5, rtol=1e-5)
    r2 = ssd.ssd_scan(p, inp, block=96)  # the block length does not change the result
    torch.testing.assert_close(r2["y"], r["y"], atol=1e-5, rtol=1e-5)


def test_chunked_views_and_cumsum():
    p = SsdProblem(batch=1, seqlen=256, heads=4, groups=2, head_dim=64, d_state=64, chunk_len=64)
    plan = adapter.Mamba2Ssd()
    inp = plan.prepare_inputs(p, seed=0, device="cpu")
    specs = plan.tensor_specs(p)
    for n, t in inp.items():
        assert tuple(t.shape) == specs[n].shape, n
    assert specs["x"].view_shape() == (64, 64, 4, 4, 1)  # (P, L, C, H, B)
    da = inp["delta"].float() * inp["a"].float().view(1, -1, 1, 1)
    torch.testing.assert_close(inp["cumsum_delta"][..., 5], da[..., :6].sum(-1))
    ref = plan.reference(p, inp)
    w = ssd.SSD.reference(p, plan._workload_view(p, inp))
    assert torch.equal(ref["y"].reshape(w["y"].shape), w["y"])


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"heads": 6, "groups": 4}, "--heads 6 is not a multiple of --groups 4"),
        ({"seqlen": 1000}, "--seqlen 1000 is not a multiple of --chunk_len 128"),
        ({"chunk_len": 32, "seqlen": 4096}, "--chunk_len 32 is an MMA tile M"),
        ({"dtype": "float32"}, "takes --dtype float16 or bfloat16"),
    ],
)
def test_bad_input_one_line(kw, needle):
    plan = adapter.Mamba2Ssd()
    with pytest.raises(ShapeError) as e:
        plan.problem(plan.default_problem().to_dict() | kw)
    assert needle in str(e.value) and "\n" not in str(e.value)


@needs_sources
def test_static_compile_for_target_sm():
    plan = adapter.Mamba2Ssd()
    p = plan.default_problem()
    report = plan.run_static(p, plan.default_config(p), use_cache=False)
    assert report["arch"] == "sm_100a" and report["categories"]["mma"] > 0
