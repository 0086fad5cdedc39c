"""mixed-input/grouped_mixed_input_gemm: group sizes along N as a stated, seeded part of the
problem, the per-group dequantising reference against the format's definition (CPU),
refusals as one line, a compile for sm_100a with fake tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
fm = pytest.importorskip("cute_mixed_input.formats")
adapter = pytest.importorskip("cute_mixed_input.grouped_mixed_input_gemm.grouped_mixed_input_gemm")
P = fm.GroupedMixedInputGemmProblem


def test_registered():
    from cute_mixed_input import KERNELS

    assert_registered(KERNELS, adapter.GroupedMixedInputGemm)


def test_group_sizes_drawn_deterministically_and_stated():
    p = P(n=8192, groups=16, group_seed=1)
    assert p.group_sizes == P(n=8192, groups=16, group_seed=1).group_sizes
    assert sum(p.group_sizes) == 8192 and p.groups == 16
    assert all(s % 8 == 0 for s in p.group_sizes)  # 16 bytes of bf16 B
    assert P.from_dict(p.to_dict()) == p
    assert P(n=392, group_sizes=(136, 0, 256)).groups == 3


@pytest.mark.parametrize("a_dtype, gran", [("int4", 128), ("int8", 0)])
def test_reference_is_per_group_dequantised_product(a_dtype, gran):
    p = P(m=16, n=40, k=256, group_sizes=(16, 0, 24), a_dtype=a_dtype, scale_granularity_k=gran)
    plan = adapter.GroupedMixedInputGemm()
    inp = plan.prepare_inputs(p, seed=3, device="cpu")
    assert inp["cumsum"].tolist() == [0, 16, 16, 40]
    assert inp["a"].shape == (3, 16, 256) and inp["b"].shape == (1, 40, 256)
    ref = plan.reference(p, inp)["c"]
    assert ref.shape == (1, 16, 40)
    if p.scaled:
        half = 3 * 16 * 128
        a = fm.unpack_int4(inp["a"].reshape(-1)[:half].view(3, 16, 128), fm.shuffled(p))
        assert int(a.min()) >= -8 and int(a.max()) <= 7
    else:
        a = inp["a"].to(torch.int32)
    b = inp["b"].float()
    for i, j, g in ((0, 3, 0), (15, 16, 2), (7, 39, 2)):
        want = 0.0
        for kk in range(p.k):
            s = float(inp["a_scale"][g, kk // 128, i]) if p.scaled else 1.0
            want += float(a[g, i, kk]) * s * float(b[0, j, kk])
        assert ref[0, i, j].item() == pytest.approx(want, rel=1e-6, abs=1e-6)


def test_check_and_profile_problems_build():
    """What ``analyze`` and gpu-ci take first (check_problems()[0]); they were refused in one
    line (gpu-ci on the H200, 2026-12-01): replace(groups=4) on the default kept its drawn
    one-entry group_sizes."""
    plan = adapter.GroupedMixedInputGemm()
    checks, profiles = plan.check_problems(), plan.profile_problems()
    assert [p.groups for p in checks] == [1, 4, 3, 3]
    assert [p.groups for p in profiles] == [16]
    for p in checks + profiles:
        assert sum(p.group_sizes) == p.n
        plan.tensor_specs(p)


def test_replace_draws_derived_group_sizes_again():
    p = P(groups=1)  # (128,) drawn
    q = p.replace(n=512, groups=4)
    assert q.groups == 4 and q == P(n=512, groups=4)
    assert p.replace(n=256).group_sizes == (256,)
    assert p.replace(group_seed=5) == P(groups=1, group_seed=5)
    # groups derived from a stated vector: derived again from the new vector
    v = P(n=392, group_sizes=(136, 0, 256))
    assert v.replace(n=256, group_sizes=(128, 128)).groups == 2
    # what was stated stays stated: a stated vector that no longer fits is refused
    with refused_in_one_line("sums to 392, not --n 512"):
        v.replace(n=512)
    with refused_in_one_line("--groups 4 but --group_sizes has 3 entries"):
        v.replace(n=512, groups=4)
    with refused_in_one_line("--groups 2 but --group_sizes has 3 entries"):
        P(n=392, groups=3, group_sizes=(136, 0, 256)).replace(groups=2)


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"n": 512, "group_sizes": (256, 128)}, "sums to 384, not --n 512"),
        ({"n": 128, "group_sizes": (100, 28)}, "each a multiple of 8 columns"),
        ({"n": 100, "groups": 2}, "--n 100"),
        ({"l": 2}, "--l 2"),
        ({"k": 129}, "--k 129"),
        ({"groups": 2, "group_sizes": (128,)}, "--groups 2 but"),
    ],
)
def test_bad_input_one_line(kw, needle):
    plan = adapter.GroupedMixedInputGemm()
    base = plan.default_problem().to_dict() | {"groups": None, "group_sizes": None}
    with refused_in_one_line(needle):
        plan.problem(base | kw)


@needs_sources  # plans through the example: needs the CUTLASS sources
def test_group_count_in_the_compile_key_sizes_not():
    plan = adapter.GroupedMixedInputGemm()
    cfg = plan.default_config(plan.default_problem())
    tgt = plan.target("sm_100a", sm_count=148)
    k1 = plan.kernel(P(n=512, groups=4), cfg, tgt).key
    assert k1 == plan.kernel(P(n=1024, groups=4, group_seed=9), cfg, tgt).key
    assert k1 != plan.kernel(P(n=512, groups=2), cfg, tgt).key


@needs_sources
def test_static_compile_for_target_sm():
    static_report(adapter.GroupedMixedInputGemm(), "sm_100a")
