"""blockwise/contiguous_grouped_gemm: group sizes as a stated, seeded part of the problem, the
per-group reference against the format's definition (CPU), refusals as one line, a compile
for sm_100a with fake tensors (no GPU)."""

from __future__ import annotations

import pytest

from kernelplan.testing import assert_registered, needs_sources, refused_in_one_line, static_report

torch = pytest.importorskip("torch")
fm = pytest.importorskip("cute_blockwise.formats")
adapter = pytest.importorskip("cute_blockwise.contiguous_grouped_gemm.contiguous_grouped_gemm")
P = fm.GroupedBlockwiseGemmProblem


def test_registered():
    from cute_blockwise import KERNELS

    assert_registered(KERNELS, adapter.ContiguousGroupedGemm)


def test_group_sizes_drawn_deterministically_and_stated():
    p = P(m=4096, groups=16, group_seed=3)
    assert p.group_sizes == P(m=4096, groups=16, group_seed=3).group_sizes
    assert sum(p.group_sizes) == 4096 and len(p.group_sizes) == p.groups == 16
    assert all(s % 128 == 0 for s in p.group_sizes)
    assert p.group_sizes != P(m=4096, groups=16, group_seed=4).group_sizes
    # the record states the vector: rebuilding from it gives the same problem
    assert P.from_dict(p.to_dict()) == p
    q = P(m=768, group_sizes=(256, 0, 384, 128))
    assert q.groups == 4


def test_reference_is_per_group_blockwise_gemm():
    p = P(m=512, n=136, k=272, group_sizes=(128, 0, 384))
    plan = adapter.ContiguousGroupedGemm()
    inp = plan.prepare_inputs(p, seed=1, device="cpu")
    assert inp["gidx"].tolist() == [0] * 128 + [2] * 384
    assert inp["b"].shape == (3, 136, 272) and inp["sfb"].shape == (3, 2, 3)
    assert inp["sfa"].shape == (1, 3, 512)
    ref = plan.reference(p, inp)["c"]
    a, b = inp["a"].float(), inp["b"].float()
    for i, j, g in ((5, 7, 0), (300, 135, 2), (511, 129, 2)):
        want = sum(
            float(a[0, i, kk] * inp["sfa"][0, kk // 128, i])
            * float(b[g, j, kk] * inp["sfb"][g, j // 128, kk // 128])
            for kk in range(p.k)
        )
        assert ref[0, i, j].item() == pytest.approx(want, rel=1e-5)


def test_flops_and_bytes_skip_empty_groups():
    p = P(m=256, n=256, k=256, group_sizes=(256, 0))
    flops, nbytes = adapter.ContiguousGroupedGemm().flops_bytes(p)
    assert flops == 2 * 256**3
    # A + C(bf16) + SFA + gidx + one of the two B and SFB
    assert nbytes == 256 * 256 + 256 * 256 * 2 + 256 * 2 * 4 + 256 * 4 + 256 * 256 + 2 * 2 * 4


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"m": 768, "group_sizes": (256, 0, 384)}, "sums to 640, not --m 768"),
        ({"m": 256, "group_sizes": (200, 56)}, "each a multiple of 128 rows"),
        ({"m": 768, "groups": 3, "group_sizes": (256, 0, 384, 128)}, "--groups 3 but"),
        ({"m": 100, "groups": 2}, "--m 100"),
        ({"l": 2}, "--l 2"),
        ({"scale_block": 64}, "--scale_block 64"),
        ({"k": 100}, "--k 100 is not a multiple of 16 bytes"),
    ],
)
def test_bad_input_one_line(kw, needle):
    plan = adapter.ContiguousGroupedGemm()
    base = plan.default_problem().to_dict() | {"groups": None, "group_sizes": None}
    with refused_in_one_line(needle):
        plan.problem(base | kw)


def test_cli_group_size_vector_not_summing_to_m_one_line(capsys):
    from kernelplan.cli import kernel_main

    rc = kernel_main(
        adapter.ContiguousGroupedGemm,
        ["--m", "512", "--group_sizes", "[128,128]", "--prof_type", "static"],
    )
    err = capsys.readouterr()
    text = (err.out + err.err).strip()
    assert rc == 2 and "sums to 256, not --m 512" in text and len(text.splitlines()) == 1


@needs_sources  # plans through the example: needs the CUTLASS sources
def test_group_sizes_outside_the_compile_key():
    plan = adapter.ContiguousGroupedGemm()
    cfg = plan.default_config(plan.default_problem())
    tgt = plan.target("sm_100a", sm_count=148)
    k1 = plan.kernel(P(m=1024, groups=4), cfg, tgt)
    k2 = plan.kernel(P(m=2048, groups=8, group_seed=5), cfg, tgt)
    assert k1.key == k2.key


@needs_sources
def test_static_compile_for_target_sm():
    static_report(adapter.ContiguousGroupedGemm(), "sm_100a")
